package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/weights"
)

// The logits subcommand must print PyTorch's reference logits (within
// float32 rounding) for the committed fixture.
func TestLogitsMatchesReference(t *testing.T) {
	dir := "../../model/testdata/gqa_tied_f32"
	f, err := weights.OpenFile(dir + "/reference.safetensors")
	require.NoError(t, err)
	defer f.Close()
	tn, err := f.Tensor("logits")
	require.NoError(t, err)
	ref, err := tn.F32()
	require.NoError(t, err)
	tt, err := f.Tensor("tokens")
	require.NoError(t, err)
	toks, err := tt.F32()
	require.NoError(t, err)

	var out bytes.Buffer
	require.NoError(t, runLogits(context.Background(),
		[]string{"--model", dir, "--threads", "1", "--tokens", itoa(toks[0]) + "," + itoa(toks[1]) + "," + itoa(toks[2])},
		&out, io.Discard))
	var got struct {
		Vocab  int         `json:"vocab"`
		Tokens []int       `json:"tokens"`
		Logits [][]float64 `json:"logits"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, 256, got.Vocab)
	require.Len(t, got.Logits, 3)
	for i, row := range got.Logits {
		require.Len(t, row, 256)
		for j, v := range row {
			assert.InDelta(t, ref[i*256+j], v, 1e-4, "row %d col %d", i, j)
		}
	}
	assert.Error(t, runLogits(context.Background(), []string{"--model", dir, "--tokens", "1,x"}, io.Discard, io.Discard))
	assert.Error(t, runLogits(context.Background(), []string{"--model", dir, "--tokens", "1,999"}, io.Discard, io.Discard))
}

func itoa(f float32) string { return strconv.Itoa(int(f)) }
