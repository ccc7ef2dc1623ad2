package tokenizer

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
)

func TestTrain(t *testing.T) {
	var corpus []string
	readJSON(t, "testdata/corpus.json", &corpus)
	special := []string{"<|begin_of_text|>", "<|end_of_text|>"}
	for id := 128100; id <= 128107; id++ {
		special = append(special, cwmTokens[id])
	}
	for _, pattern := range []string{"llama3", "gpt2"} {
		data, err := Train(corpus, TrainOptions{VocabSize: 1000, Special: special, Pattern: pattern})
		require.NoError(t, err)
		tk, err := Parse(data)
		require.NoError(t, err)
		assert.Equal(t, 1000, tk.VocabSize())
		for i, s := range special {
			id, ok := tk.TokenID(s)
			require.True(t, ok)
			assert.Equal(t, i, id)
			assert.True(t, tk.IsSpecial(id))
		}
		for b := 0; b < 256; b++ {
			id, ok := tk.BytesID([]byte{byte(b)})
			require.True(t, ok)
			assert.Equal(t, len(special)+b, id)
		}
		seen := map[string]bool{}
		for id := len(special); id < tk.VocabSize(); id++ {
			raw := string(tk.TokenBytes(id))
			require.False(t, seen[raw], "token %q twice", raw)
			seen[raw] = true
			assert.NotContains(t, raw, "_sep|>")
		}
		// The text compresses, and round-trips.
		total, n := 0, 0
		for _, text := range corpus {
			ids := tk.Encode(text)
			assert.Equal(t, text, tk.Decode(ids))
			total += len(text)
			n += len(ids)
		}
		assert.Less(t, float64(n), 0.5*float64(total), pattern)
		t.Logf("%s: %.2f bytes per token on the corpus", pattern, float64(total)/float64(n))

		// Deterministic.
		again, err := Train(corpus, TrainOptions{VocabSize: 1000, Special: special, Pattern: pattern})
		require.NoError(t, err)
		assert.Equal(t, data, again)
	}

	_, err := Train(corpus, TrainOptions{VocabSize: 200})
	assert.ErrorContains(t, err, "vocab size")
	_, err = Train(corpus, TrainOptions{VocabSize: 2000, Pattern: "bert"})
	assert.ErrorContains(t, err, "pattern")
	_, err = Train(corpus, TrainOptions{VocabSize: 2000, Special: []string{"a", "a"}})
	assert.ErrorContains(t, err, "repeated")
}

// TestTrainOracle checks that the Hugging Face library reads a trained
// tokenizer.json and encodes exactly as this package does.
func TestTrainOracle(t *testing.T) {
	if err := nodeOracle(); err != nil {
		oracle.Missing(t, "%v", err)
	}
	if testing.Short() {
		t.Skip("short")
	}
	var corpus []string
	readJSON(t, "testdata/corpus.json", &corpus)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	data, err := os.ReadFile("testdata/corpus.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	for _, pattern := range []string{"llama3", "gpt2"} {
		tj, err := Train(corpus, TrainOptions{VocabSize: 1500, Special: []string{"<|frame_sep|>", "<|x|>"}, Pattern: pattern})
		require.NoError(t, err)
		file := filepath.Join(dir, pattern+".json")
		require.NoError(t, os.WriteFile(file, tj, 0o644))
		out := filepath.Join(dir, pattern+".out.json")
		msg, err := exec.Command("node", "oracle/oracle.js", "encode", file, in, out).CombinedOutput()
		require.NoError(t, err, "%s", msg)
		var want struct {
			IDs [][]int `json:"ids"`
		}
		readJSON(t, out, &want)
		tk, err := Parse(tj)
		require.NoError(t, err)
		for i, text := range corpus {
			require.Equal(t, want.IDs[i], nonNil(tk.Encode(text)), "%q", text)
		}
	}
}

// TestTrainReusesTokens trains on words over a tiny alphabet, where one
// string may be reached by two merge paths: it must stay one token.
func TestTrainReusesTokens(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 20; round++ {
		var texts []string
		for i := 0; i < 400; i++ {
			var sb strings.Builder
			for j := 0; j < 2+r.Intn(12); j++ {
				sb.WriteByte("abcd"[r.Intn(4)])
			}
			texts = append(texts, sb.String())
		}
		data, err := Train(texts, TrainOptions{VocabSize: 256 + 200, MinFrequency: 1})
		require.NoError(t, err)
		tk, err := Parse(data)
		require.NoError(t, err)
		seen := map[string]bool{}
		for id := 0; id < tk.VocabSize(); id++ {
			raw := string(tk.TokenBytes(id))
			require.False(t, seen[raw], "token %q twice", raw)
			seen[raw] = true
		}
		for _, text := range texts {
			require.Equal(t, text, tk.Decode(tk.Encode(text)))
		}
	}
}

// TestTrainerReuse drives the trainer by hand: "ab"+"c" and "a"+"bc" are
// both merged, and the second result must reuse the first one's id.
func TestTrainerReuse(t *testing.T) {
	tr := newTrainer(0, map[string]int64{"abx": 30, "ybc": 20, "abc": 1})
	// Merges (a,b) 31, (ab,x) 30, (b,c) 20; "abc" is now [ab c].
	merges := tr.run(256+3, 1)
	require.Len(t, merges, 3)
	bc, ok := tr.ids["bc"]
	require.True(t, ok)
	// A word [a bc] that no real merge sequence would give, made frequent.
	tr.words = append(tr.words, []int32{'a', bc})
	tr.freq = append(tr.freq, 100)
	p := pairKey('a', bc)
	tr.pairs[p] += 100
	tr.where[p] = append(tr.where[p], int32(len(tr.words)-1))
	tr.heap.push(trainItem{count: tr.pairs[p], pair: p})
	// Then (a,bc) 100 makes "abc", (y,bc) 20 "ybc", (ab,c) 1 "abc" again.
	merges = tr.run(256+10, 1)
	assert.Equal(t, [][2]int32{{'a', bc}, {'y', bc}, {tr.ids["ab"], 'c'}}, merges)
	assert.Len(t, tr.tokens, 256+5, "abc must be one token")
	abc := tr.ids["abc"]
	n := 0
	for _, w := range tr.words {
		for _, s := range w {
			if string(tr.token(s)) == "abc" {
				assert.Equal(t, abc, s)
				n++
			}
		}
	}
	assert.Equal(t, 2, n)
}

func FuzzTrain(f *testing.F) {
	f.Add("def f(x):\n    return x\n\n<|frame_sep|>x = 1", "<|frame_sep|>")
	f.Add("aaaa bbbb aaaa\r\n\r\n", "")
	f.Fuzz(func(t *testing.T, text, special string) {
		if len(text) > 1<<12 {
			t.Skip()
		}
		var sp []string
		if special != "" {
			sp = []string{special}
		}
		data, err := Train([]string{text, text}, TrainOptions{VocabSize: 300, Special: sp, MinFrequency: 1})
		require.NoError(t, err)
		tk, err := Parse(data)
		require.NoError(t, err)
		require.Equal(t, string(appendLossy(nil, []byte(text))), tk.Decode(tk.Encode(text)))
	})
}
