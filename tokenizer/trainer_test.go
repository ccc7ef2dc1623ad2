package tokenizer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
)

// TestTrainer trains a small tokenizer on trace text with oracle.js and
// checks the layout it promises: special tokens first, then the 256 bytes,
// no merges learnt from special tokens, the requested size.
func TestTrainer(t *testing.T) {
	if err := nodeOracle(); err != nil {
		oracle.Missing(t, "%v", err)
	}
	if testing.Short() {
		t.Skip("short")
	}
	var corpus []string
	readJSON(t, "testdata/corpus.json", &corpus)
	var traces []string
	for _, s := range corpus {
		if strings.HasPrefix(s, "<|begin_of_text|><|trace_context_start|>") {
			traces = append(traces, s)
		}
	}
	require.NotEmpty(t, traces)
	dir := t.TempDir()
	train := filepath.Join(dir, "train.txt")
	require.NoError(t, os.WriteFile(train, []byte(strings.Join(traces, "\n")), 0o644))
	special := []string{"<|begin_of_text|>", "<|end_of_text|>"}
	for id := 128100; id <= 128107; id++ {
		special = append(special, cwmTokens[id])
	}
	out := filepath.Join(dir, "tok.json")
	for _, pattern := range []string{"gpt2", "llama3"} {
		msg, err := exec.Command("node", "oracle/oracle.js", "train", "--vocab-size", "700",
			"--special", strings.Join(special, ","), "--pattern", pattern, "--out", out, train).CombinedOutput()
		require.NoError(t, err, "%s", msg)
		tk, err := Load(out)
		require.NoError(t, err)
		assert.Equal(t, 700, tk.VocabSize())
		for i, s := range special {
			id, ok := tk.TokenID(s)
			require.True(t, ok)
			assert.Equal(t, i, id)
			assert.True(t, tk.IsSpecial(id))
		}
		for b := 0; b < 256; b++ {
			id, ok := tk.BytesID([]byte{byte(b)})
			require.True(t, ok)
			assert.Equal(t, len(special)+b, id, "byte %d", b)
		}
		for id := len(special) + 256; id < tk.VocabSize(); id++ {
			assert.NotContains(t, string(tk.TokenBytes(id)), "|>", "token %d %q", id, tk.TokenBytes(id))
		}
		for _, text := range append(traces, corpus[:50]...) {
			assert.Equal(t, text, tk.Decode(tk.Encode(text)))
		}
	}
}
