package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/weights"
)

// TestQuantizeCommand: ndbg quantize writes the default model's Q8_0 file
// (readable as a checkpoint with the mix's types; `ndbg logits --model`
// runs it) and a random preset's Q4_K_M file; bad flags are usage errors
// that leave no file behind.
func TestQuantizeCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "d.gguf")
	var stdout bytes.Buffer
	require.NoError(t, runQuantize(context.Background(), []string{"--type", "q8_0", "--out", out, "--threads", "1"}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "wrote "+out)
	ck, err := weights.Open(out)
	require.NoError(t, err)
	q, err := ck.Tensor(weights.LayerTensor(0, weights.QProj))
	require.NoError(t, err)
	require.Equal(t, weights.Q8_0, q.DType)
	require.NoError(t, ck.Close())
	st, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())

	var logits bytes.Buffer
	require.NoError(t, runLogits(context.Background(), []string{"--model", out, "--threads", "1", "--tokens", "0,5,9"}, &logits, io.Discard))
	var got struct{ Logits [][]float64 }
	require.NoError(t, json.Unmarshal(logits.Bytes(), &got))
	require.Len(t, got.Logits, 3)

	rnd := filepath.Join(dir, "r.gguf")
	require.NoError(t, runQuantize(context.Background(), []string{"--random", "34m", "--type", "q4_k_m", "--out", rnd}, io.Discard, io.Discard))
	ck, err = weights.Open(rnd)
	require.NoError(t, err)
	require.Equal(t, 512, ck.Config.HiddenSize)
	down, err := ck.Tensor(weights.LayerTensor(0, weights.DownProj))
	require.NoError(t, err)
	require.Equal(t, weights.Q8_0, down.DType) // layer 0 gets more bits; 1376 columns are not Q6_K blocks
	require.NoError(t, ck.Close())

	for _, args := range [][]string{
		{"--out", out},
		{"--type", "q3_k", "--out", out},
		{"--type", "q8_0"},
		{"--type", "q8_0", "--out", out, "--random", "tiny", "--model", dir},
		{"--type", "q8_0", "--out", out, "--random", "99b"},
	} {
		err := runQuantize(context.Background(), args, io.Discard, io.Discard)
		var ue *cli.UsageError
		require.ErrorAs(t, err, &ue, "%v", args)
	}
	err = runQuantize(context.Background(), []string{"--type", "q8_0", "--model", filepath.Join(dir, "missing"), "--out", filepath.Join(dir, "x.gguf")}, io.Discard, io.Discard)
	require.Error(t, err)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		require.Contains(t, []string{"d.gguf", "r.gguf"}, e.Name(), "a failed run left %s", e.Name())
	}
}

// TestQuantizeSafetensors: --format safetensors writes the default model
// as a checkpoint directory whose quantized matrices are the bytes of the
// GGUF file of the same type (itself checked against llama-quantize in
// internal/quantize), so the two give the same logits; an existing
// directory is refused and --random is GGUF only.
func TestQuantizeSafetensors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gguf, st := filepath.Join(dir, "m.gguf"), filepath.Join(dir, "m")
	require.NoError(t, runQuantize(ctx, []string{"--type", "q4_k_m", "--out", gguf, "--threads", "1"}, io.Discard, io.Discard))
	var stdout bytes.Buffer
	require.NoError(t, runQuantize(ctx, []string{"--type", "q4_k_m", "--format", "safetensors", "--out", st, "--threads", "1"}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "wrote "+st)
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
		require.FileExists(t, filepath.Join(st, f))
	}

	a, err := weights.Open(gguf)
	require.NoError(t, err)
	defer a.Close()
	b, err := weights.Open(st)
	require.NoError(t, err)
	defer b.Close()
	kinds := map[weights.DType]bool{}
	for _, name := range a.Names() {
		ta, err := a.Tensor(name)
		require.NoError(t, err)
		tb, err := b.Tensor(name)
		require.NoError(t, err, name)
		require.Equal(t, ta.DType, tb.DType, name)
		require.Equal(t, ta.Shape, tb.Shape, name)
		require.True(t, bytes.Equal(ta.Data, tb.Data), name)
		kinds[ta.DType] = true
	}
	require.True(t, kinds[weights.Q4_K] && kinds[weights.Q6_K], "the mix has Q4_K and Q6_K: %v", kinds)
	fi, err := os.Stat(filepath.Join(st, "model.safetensors"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	logits := func(m string) string {
		var out bytes.Buffer
		require.NoError(t, runLogits(ctx, []string{"--model", m, "--threads", "1", "--tokens", "0,5,9"}, &out, io.Discard))
		return out.String()
	}
	require.Equal(t, logits(gguf), logits(st))

	require.ErrorContains(t, runQuantize(ctx, []string{"--type", "q8_0", "--format", "safetensors", "--out", st}, io.Discard, io.Discard), "exists")
	var ue *cli.UsageError
	require.ErrorAs(t, runQuantize(ctx, []string{"--type", "q8_0", "--format", "safetensors", "--random", "tiny", "--out", filepath.Join(dir, "r")}, io.Discard, io.Discard), &ue)
	require.ErrorAs(t, runQuantize(ctx, []string{"--type", "q8_0", "--format", "onnx", "--out", filepath.Join(dir, "o")}, io.Discard, io.Discard), &ue)
	require.ErrorContains(t, runQuantize(ctx, []string{"--type", "q8_0", "--format", "safetensors", "--model", gguf, "--out", filepath.Join(dir, "g")}, io.Discard, io.Discard), "GGUF file")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		require.Contains(t, []string{"m.gguf", "m"}, e.Name(), "a failed run left %s", e.Name())
	}
}
