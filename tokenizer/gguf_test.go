package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGGUFVocabRoundTrip: a tokenizer written as a GGUF vocabulary and read
// back encodes the corpus to the same ids and decodes them to the same
// text, for the GPT-2 and Llama-3 pre-tokenizers and the default model's
// tokenizer (special tokens included); the types say which tokens are
// special.
func TestGGUFVocabRoundTrip(t *testing.T) {
	var corpus []string
	data, err := os.ReadFile("testdata/corpus.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &corpus))
	files := []string{"testdata/code-gpt2.tokenizer.json", "testdata/code-llama3.tokenizer.json", filepath.Join("..", "weights", "default", "tokenizer.json")}
	for _, f := range files {
		orig, err := Load(f)
		require.NoError(t, err, f)
		v, err := orig.GGUFVocab()
		require.NoError(t, err, f)
		require.Len(t, v.Tokens, orig.VocabSize())
		back, err := FromGGUFVocab(v)
		require.NoError(t, err, f)
		require.Equal(t, orig.VocabSize(), back.VocabSize(), f)
		for id := range orig.VocabSize() {
			require.Equal(t, orig.IsSpecial(id), back.IsSpecial(id), "%s: token %d", f, id)
			require.Equal(t, orig.IsSpecial(id), v.Types[id] == GGUFControl, "%s: token %d", f, id)
		}
		texts := append([]string{"<|begin_of_text|>def f(x):\n    return x<|end_of_text|>"}, corpus...)
		for _, s := range texts {
			ids := orig.Encode(s)
			require.Equal(t, ids, back.Encode(s), "%s: %q", f, s)
			require.Equal(t, orig.Decode(ids), back.Decode(ids))
		}
	}
}

// TestGGUFVocabErrors: vocabularies FromGGUFVocab refuses, with the reason.
func TestGGUFVocabErrors(t *testing.T) {
	for _, c := range []struct {
		v    GGUFVocab
		want string
	}{
		{GGUFVocab{Tokens: []string{"a"}, Pre: "qwen2"}, `"qwen2" is not supported`},
		{GGUFVocab{Tokens: []string{"a", "a"}, Pre: "gpt-2"}, "both"},
		{GGUFVocab{Tokens: []string{"a"}, Types: []int32{6}, Pre: "gpt-2"}, "type 6"},
		{GGUFVocab{Tokens: []string{"a"}, Types: []int32{1, 1}, Pre: "gpt-2"}, "token types"},
		{GGUFVocab{Tokens: []string{"a", "b", "ab"}, Merges: []string{"ab"}, Pre: "gpt-2"}, "not two tokens"},
		{GGUFVocab{Tokens: []string{"a", "b"}, Merges: []string{"a b"}, Pre: "gpt-2"}, "missing from vocab"},
	} {
		_, err := FromGGUFVocab(&c.v)
		require.Error(t, err, c.want)
		require.Contains(t, err.Error(), c.want)
	}
}
