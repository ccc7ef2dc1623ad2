// Package testmodel builds small random-weight models over a real
// tokenizer with the DSL's special tokens, for the tests of the packages
// above the engine (the debugger, the evaluation, the commands). Their
// logits are arbitrary, which is what the constrained decoder must survive.
package testmodel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/weights"
)

// TokenizerJSON is the GPT-2-style code tokenizer of the tokenizer tests
// (4096 tokens, CWM's trace tokens) with every DSL special token added.
func TokenizerJSON(t testing.TB) []byte { return tokenizerJSON(t, true) }

// CWMTokenizerJSON is TokenizerJSON without the DSL's action tokens: a
// vocabulary like CWM's, for models trained on plain traces (ndbg.CWM).
func CWMTokenizerJSON(t testing.TB) []byte { return tokenizerJSON(t, false) }

// tokenizerJSON adds the DSL's special tokens to the code tokenizer, the
// action tokens only with actions.
func tokenizerJSON(t testing.TB, actions bool) []byte {
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "tokenizer", "testdata", "code-gpt2.tokenizer.json"))
	require.NoError(t, err)
	var j map[string]any
	require.NoError(t, json.Unmarshal(data, &j))
	added := j["added_tokens"].([]any)
	have := map[string]bool{}
	for _, a := range added {
		have[a.(map[string]any)["content"].(string)] = true
	}
	next := len(j["model"].(map[string]any)["vocab"].(map[string]any))
	for _, s := range dsl.SpecialTokens() {
		if !have[s.Text] && (actions || !isAction(s.Text)) {
			added = append(added, map[string]any{"id": next, "content": s.Text, "single_word": false,
				"lstrip": false, "rstrip": false, "normalized": false, "special": true})
			next++
		}
	}
	j["added_tokens"] = added
	data, err = json.Marshal(j)
	require.NoError(t, err)
	return data
}

// isAction reports whether a special token's text is an action's.
func isAction(text string) bool {
	for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
		if k.Token() == text {
			return true
		}
	}
	return false
}

// Tokenizer parses TokenizerJSON.
func Tokenizer(t testing.TB) *tokenizer.Tokenizer {
	tok, err := tokenizer.Parse(TokenizerJSON(t))
	require.NoError(t, err)
	return tok
}

// Model is a random tiny model (the "tiny" preset, context 2048, F32) over
// Tokenizer, closed when the test ends.
func Model(t testing.TB, seed uint64) *ndbg.Model { return ModelContext(t, seed, 2048) }

// CWMModel is Model over CWMTokenizerJSON: a model without the DSL's
// action tokens, as CWM's checkpoints are, for ndbg.CWM.
func CWMModel(t testing.TB, seed uint64) *ndbg.Model {
	tok, err := tokenizer.Parse(CWMTokenizerJSON(t))
	require.NoError(t, err)
	return modelOf(t, tok, seed, 2048)
}

// ModelContext is Model with a context of n tokens.
func ModelContext(t testing.TB, seed uint64, n int) *ndbg.Model {
	return modelOf(t, Tokenizer(t), seed, n)
}

// modelOf is a random tiny model over tok with a context of n tokens.
func modelOf(t testing.TB, tok *tokenizer.Tokenizer, seed uint64, n int) *ndbg.Model {
	cfg, err := model.Preset("tiny")
	require.NoError(t, err)
	cfg.VocabSize = tok.VocabSize()
	cfg.MaxPositionEmbeddings = n
	cfg.LayerTypes = nil // every layer global
	eng, err := model.NewRandom(context.Background(), cfg, kernels.F32, seed, model.Options{Threads: 1})
	require.NoError(t, err)
	m, err := ndbg.OpenModel(eng, tok, "", "random")
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// WriteDir writes a model directory as train/train.py exports one:
// config.json, random BF16 weights in shards of at most maxShard bytes (0:
// one file) and tokenizer.json.
func WriteDir(t testing.TB, dir string, maxShard int64) { writeDir(t, dir, maxShard, TokenizerJSON(t)) }

// WriteCWMDir is WriteDir with CWMTokenizerJSON: the directory of a model
// trained on plain traces, which the cwm backend takes.
func WriteCWMDir(t testing.TB, dir string) { writeDir(t, dir, 0, CWMTokenizerJSON(t)) }

// writeDir writes a model directory whose tokenizer.json is tokJSON.
func writeDir(t testing.TB, dir string, maxShard int64, tokJSON []byte) {
	tok, err := tokenizer.Parse(tokJSON)
	require.NoError(t, err)
	cfg := &weights.Config{Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama", HiddenSize: 64,
		IntermediateSize: 128, NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16,
		VocabSize: tok.VocabSize(), MaxPositionEmbeddings: 2048, RMSNormEps: 1e-5, RopeTheta: 10000}
	tensors, err := weights.RandomLlama(cfg, weights.BF16, 5)
	require.NoError(t, err)
	require.NoError(t, weights.WriteCheckpoint(dir, cfg, tensors, maxShard, nil))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokJSON, 0o644))
}
