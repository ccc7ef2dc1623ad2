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
