package quantize

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/weights"
)

// defaultModel is the repository's default model (a Hugging Face
// checkpoint in BF16).
const defaultModel = "../../weights/default"

// writeDefault writes the default model as a GGUF file of type typ.
func writeDefault(t *testing.T, typ string) string {
	t.Helper()
	ck, err := weights.Open(defaultModel)
	require.NoError(t, err)
	defer ck.Close()
	tok, err := tokenizer.Load(filepath.Join(defaultModel, "tokenizer.json"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "default-"+typ+".gguf")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, Checkpoint(context.Background(), ck, tok, "default", typ, 2, f))
	require.NoError(t, f.Close())
	return path
}

// TestCheckpointRoundTrip: the default model written as GGUF opens with
// the same config and tokenizer, its F32 file holds the checkpoint's
// values exactly, and its Q8_0 file matches QuantMix's types.
func TestCheckpointRoundTrip(t *testing.T) {
	ck, err := weights.Open(defaultModel)
	require.NoError(t, err)
	defer ck.Close()
	for _, typ := range []string{"f32", "q8_0", "q4_k_m"} {
		path := writeDefault(t, typ)
		g, err := weights.Open(path)
		require.NoError(t, err)
		cfg := *ck.Config
		cfg.RMSNormEps = float64(float32(cfg.RMSNormEps))
		cfg.TorchDType = ""
		require.Equal(t, &cfg, g.Config, typ)
		tok, err := tokenizer.FromGGUF(g.GGUF())
		require.NoError(t, err)
		orig, err := tokenizer.Load(filepath.Join(defaultModel, "tokenizer.json"))
		require.NoError(t, err)
		src := "<|begin_of_text|>def f(x):\n    return [x, 'y', 3.5]"
		require.Equal(t, orig.Encode(src), tok.Encode(src))
		typeOf, _, _ := typeOf(ck.Config, typ)
		for _, s := range weights.LlamaTensors(ck.Config) {
			a, err := ck.Tensor(s.Name)
			require.NoError(t, err)
			b, err := g.Tensor(s.Name)
			require.NoError(t, err)
			require.Equal(t, typeOf(s.Name, s.Shape), b.DType, "%s %s", typ, s.Name)
			if typ == "f32" {
				av, _ := a.F32()
				bv, _ := b.F32()
				require.Equal(t, av, bv, s.Name)
			}
		}
		require.NoError(t, g.Close())
	}
}

// TestRandomFile: a random preset written as GGUF loads as a model of the
// preset's shape, with the mix's types.
func TestRandomFile(t *testing.T) {
	cfg, err := model.Preset("tiny")
	require.NoError(t, err)
	cfg.SlidingWindow, cfg.LayerTypes = 0, nil
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, Random(context.Background(), &cfg, "tiny", "q4_k_m", 1, 2, f))
	require.NoError(t, f.Close())
	m, err := model.Load(context.Background(), path, model.Options{Threads: 1})
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, cfg.HiddenSize, m.Config().HiddenSize)
	logits, err := m.NewSession().Forward(context.Background(), []int{1, 2, 3}, false)
	require.NoError(t, err)
	require.Len(t, logits, cfg.VocabSize)
}

// TestMatchesLlamaQuantize: llama.cpp's own llama-quantize, run on the F32
// GGUF file ndbg wrote of the default model, writes every tensor with the
// type and the bytes ndbg's quantize writes for q8_0, q4_0 and q4_k_m: the
// mix's rules (with the fallbacks of rows that are not whole Q4_K
// blocks) and the quantizers are llama.cpp's. (llama-quantize reading the
// file is itself the check that llama.cpp reads what ndbg writes.)
func TestMatchesLlamaQuantize(t *testing.T) {
	bin := oracle.LlamaCppDir(t, "llama-quantize")
	f32 := writeDefault(t, "f32")
	for typ, ftype := range map[string]string{"q8_0": "Q8_0", "q4_0": "Q4_0", "q4_k_m": "Q4_K_M"} {
		theirs := filepath.Join(t.TempDir(), "llama-"+typ+".gguf")
		out, err := exec.Command(filepath.Join(bin, "llama-quantize"), f32, theirs, ftype, "2").CombinedOutput()
		require.NoError(t, err, "llama-quantize %s: %s", ftype, out)
		lc, err := weights.OpenGGUF(theirs)
		require.NoError(t, err)
		ours, err := weights.OpenGGUF(writeDefault(t, typ))
		require.NoError(t, err)
		require.ElementsMatch(t, lc.Names(), ours.Names(), typ)
		for _, n := range ours.Names() {
			a, err := ours.Tensor(n)
			require.NoError(t, err)
			b, err := lc.Tensor(n)
			require.NoError(t, err)
			require.Equal(t, b.DType, a.DType, "%s %s: llama-quantize chose %v", typ, n, b.DType)
			require.True(t, bytes.Equal(a.Data, b.Data), "%s %s (%v): bytes differ from llama-quantize's", typ, n, a.DType)
		}
		v, _ := lc.Value("general.file_type")
		want, _ := v.Int()
		v, _ = ours.Value("general.file_type")
		got, _ := v.Int()
		require.Equal(t, want, got, typ)
		lc.Close()
		ours.Close()
	}
}
