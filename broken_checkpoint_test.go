package ndbg_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/sysmem"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/weights"
)

// brokenCheckpoint is one way a model directory can be wrong: break turns
// a valid one (testmodel.WriteDir: BF16, one file) into it, and Open must
// refuse it with an error that contains want, never load it.
type brokenCheckpoint struct {
	name string
	brk  func(t *testing.T, dir string)
	want []string
}

// rewrite reads dir's config and tensors, lets edit change them, and
// writes them back (tensors whose bytes are kept, whatever their labels
// say).
func rewrite(t *testing.T, dir string, edit func(cfg *weights.Config, ts []weights.Tensor) []weights.Tensor) {
	t.Helper()
	ck, err := weights.Open(dir)
	require.NoError(t, err)
	var ts []weights.Tensor
	for _, n := range ck.Names() {
		tn, err := ck.Tensor(n)
		require.NoError(t, err)
		ts = append(ts, weights.Tensor{Name: tn.Name, DType: tn.DType, Shape: tn.Shape, Data: append([]byte(nil), tn.Data...)})
	}
	cfg := *ck.Config
	require.NoError(t, ck.Close())
	ts = edit(&cfg, ts)
	require.NoError(t, weights.WriteCheckpoint(dir, &cfg, ts, 0, nil))
}

// editJSON rewrites a JSON file of dir through edit.
func editJSON(t *testing.T, path string, edit func(m map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	edit(m)
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// relabel changes the dtype label of the tensors keep selects from BF16 to
// F16, keeping their bytes: the same size, other values.
func relabel(keep func(name string) bool) func(cfg *weights.Config, ts []weights.Tensor) []weights.Tensor {
	return func(cfg *weights.Config, ts []weights.Tensor) []weights.Tensor {
		for i := range ts {
			if keep(ts[i].Name) {
				ts[i].DType = weights.F16
			}
		}
		return ts
	}
}

// brokenCheckpoints are the malformed model directories Open must refuse
// beyond weights' own malformed files (weights/malformed_test.go): the
// tokenizer file, the memory a config asks for, and checkpoints whose
// parts pass every check alone but contradict each other.
func brokenCheckpoints() []brokenCheckpoint {
	all := func(string) bool { return true }
	return append(brokenFiles(), []brokenCheckpoint{
		{name: "tokenizer.json over the size limit", brk: func(t *testing.T, dir string) {
			require.NoError(t, os.Truncate(filepath.Join(dir, "tokenizer.json"), tokenizer.MaxFileSize+1)) // sparse
		}, want: []string{"tokenizer.json: 134217729 bytes, more than the 134217728 allowed"}},
		{name: "tokenizer.json missing", brk: func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "tokenizer.json")))
		}, want: []string{"tokenizer.json", "no such file"}},
		{name: "one tensor's dtype label is not its bytes'", brk: func(t *testing.T, dir string) {
			rewrite(t, dir, relabel(func(n string) bool { return n == weights.LayerTensor(1, weights.UpProj) }))
		}, want: []string{"a checkpoint mixes the two 2-byte float formats only when a label is wrong", `"model.layers.1.mlp.up_proj.weight" is F16`}},
		{name: "every dtype label contradicts torch_dtype", brk: func(t *testing.T, dir string) {
			rewrite(t, dir, func(cfg *weights.Config, ts []weights.Tensor) []weights.Tensor {
				cfg.TorchDType = "bfloat16"
				return relabel(all)(cfg, ts)
			})
		}, want: []string{"is labelled F16, but config.json's torch_dtype is \"bfloat16\" (BF16)"}},
		{name: "a stray lm_head beside tied embeddings", brk: func(t *testing.T, dir string) {
			rewrite(t, dir, func(cfg *weights.Config, ts []weights.Tensor) []weights.Tensor {
				cfg.TieWordEmbeddings = true // lm_head.weight, random, stays
				return ts
			})
		}, want: []string{"tie_word_embeddings", "also holds a different lm_head.weight, which would be ignored"}},
		{name: "tokenizer larger than the embedding", brk: func(t *testing.T, dir string) {
			rewrite(t, dir, func(cfg *weights.Config, ts []weights.Tensor) []weights.Tensor {
				cfg.VocabSize -= 8
				ts, err := weights.RandomLlama(cfg, weights.BF16, 1)
				require.NoError(t, err)
				return ts
			})
		}, want: []string{"tokenizer.json has 4106 tokens, but the model's embedding has 4098 rows (vocab_size)"}},
		{name: "tokenizer without the action tokens", brk: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "tokenizer.json"), func(m map[string]any) {
				var keep []any
				for _, a := range m["added_tokens"].([]any) {
					if c := a.(map[string]any)["content"].(string); c != "<|step_into|>" && c != "<|inv_continue|>" {
						keep = append(keep, a)
					}
				}
				m["added_tokens"] = keep
			})
		}, want: []string{"tokenizer.json lacks the special token(s) <|step_into|> <|inv_continue|>"}},
		{name: "config's bos_token_id is ordinary text in the tokenizer", brk: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { m["bos_token_id"] = 300 })
		}, want: []string{"config.json's bos_token_id is 300, which in tokenizer.json is the ordinary token"}},
		{name: "config's bos_token_id is another special token", brk: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { m["bos_token_id"] = 2 })
		}, want: []string{"config.json's bos_token_id is 2, but tokenizer.json's <|begin_of_text|> is 0"}},
		{name: "config's eos_token_id is not end of text", brk: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { m["eos_token_id"] = []int{2} })
		}, want: []string{"config.json's eos_token_id is [2], which does not hold tokenizer.json's <|end_of_text|> (1)"}},
		{name: "another architecture with LLaMA's tensor names", brk: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
				m["model_type"], m["architectures"] = "mistral", []string{"MistralForCausalLM"}
			})
		}, want: []string{`model_type "mistral" is not an architecture this engine computes`}},
		{name: "architectures names another model", brk: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { m["architectures"] = []string{"GemmaForCausalLM"} })
		}, want: []string{`architectures names "GemmaForCausalLM"`}},
		{name: "a RoPE table larger than the machine", brk: func(t *testing.T, dir string) {
			// 4106 × 8 BF16 weights, about 100 KB, that ask for a 256 GiB RoPE table.
			if sysmem.Total() > 300<<30 {
				t.Skip("this machine has the memory")
			}
			rewrite(t, dir, func(cfg *weights.Config, _ []weights.Tensor) []weights.Tensor {
				cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = 8, 8, 1
				cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim = 1, 1, 4096
				cfg.MaxPositionEmbeddings = 1 << 24
				cfg.LayerTypes = nil
				ts, err := weights.RandomLlama(cfg, weights.BF16, 1)
				require.NoError(t, err)
				return ts
			})
		}, want: []string{"a RoPE table of 256.0 GiB (max_position_embeddings 16777216 × head_dim 4096)", "more than the"}},
	}...)
}

// TestOpenRefusesBrokenCheckpoints opens each broken checkpoint from its
// directory and as a file system: both refuse it, saying what is wrong,
// where each used to load and compute garbage, block or run out of memory.
func TestOpenRefusesBrokenCheckpoints(t *testing.T) {
	ctx := context.Background()
	for _, tc := range brokenCheckpoints() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			testmodel.WriteDir(t, dir, 0)
			tc.brk(t, dir)
			m, err := ndbg.Open(ctx, ndbg.Options{Dir: dir, Threads: 1})
			if err == nil {
				m.Close()
			}
			require.Error(t, err, "Open loaded it")
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w, "directory")
			}
			m, err = ndbg.OpenFS(ctx, os.DirFS(dir), dir, ndbg.Options{Threads: 1})
			if err == nil {
				m.Close()
			}
			require.Error(t, err, "OpenFS loaded it")
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w, "file system")
			}
		})
	}
}

// The checks refuse only what is wrong: a tied checkpoint with an lm_head
// equal to the embedding (as some exporters write) and a torch_dtype that
// agrees with the labels load and predict as before.
func TestOpenAcceptsConsistentCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	testmodel.WriteDir(t, dir, 0)
	rewrite(t, dir, func(cfg *weights.Config, ts []weights.Tensor) []weights.Tensor {
		cfg.TieWordEmbeddings, cfg.TorchDType = true, "bfloat16"
		bos, eos := 0, 1
		cfg.BOSTokenID, cfg.EOSTokenIDs = &bos, []int{eos}
		var embed []byte
		for _, t := range ts {
			if t.Name == weights.EmbedTokens {
				embed = t.Data
			}
		}
		for i := range ts {
			if ts[i].Name == weights.LMHead {
				ts[i].Data = append([]byte(nil), embed...)
			}
		}
		return ts
	})
	m, err := ndbg.Open(ctx, ndbg.Options{Dir: dir, Threads: 1})
	require.NoError(t, err)
	require.NoError(t, m.Close())
	eng, err := model.NewRandom(ctx, model.Config{HiddenSize: 8, IntermediateSize: 8, NumHiddenLayers: 1, NumAttentionHeads: 1,
		NumKeyValueHeads: 1, HeadDim: 8, VocabSize: 16, MaxPositionEmbeddings: 16, RMSNormEps: 1e-5, RopeTheta: 10000},
		kernels.F32, 1, model.Options{Threads: 1})
	require.NoError(t, err)
	_, err = ndbg.OpenModel(eng, testmodel.Tokenizer(t), "", "mismatched")
	assert.ErrorContains(t, err, "tokenizer.json has 4106 tokens, but the model's embedding has 16 rows", "OpenModel checks as Open does")
	eng.Close()
}
