package ndbg_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/model"
)

// referenceLogits is train/reference_logits.py's output: PyTorch's logits
// for fixed token sequences at a few positions.
type referenceLogits struct {
	Torch     string        `json:"torch"`
	Sequences [][]int       `json:"sequences"`
	Positions [][]int       `json:"positions"`
	Logits    [][][]float64 `json:"logits"`
}

// checkAgainstTorch runs eng on every reference sequence and requires the
// logits to match PyTorch's with NMSE = mse(go, torch)/mse(torch, 0) <= limit.
func checkAgainstTorch(t *testing.T, eng *model.Model, path string, limit float64) {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var ref referenceLogits
	require.NoError(t, json.Unmarshal(data, &ref))
	require.NotEmpty(t, ref.Sequences)
	vocab := eng.Config().VocabSize
	for i, seq := range ref.Sequences {
		s := eng.NewSession()
		all, err := s.Forward(context.Background(), seq, true)
		require.NoError(t, err)
		for j, pos := range ref.Positions[i] {
			got := all[pos*vocab : (pos+1)*vocab]
			var num, den float64
			for k, want := range ref.Logits[i][j] {
				d := float64(got[k]) - want
				num += d * d
				den += want * want
			}
			nmse := num / den
			require.LessOrEqual(t, nmse, limit, "sequence %d position %d: NMSE %.3g against torch %s", i, pos, nmse, ref.Torch)
		}
	}
}

// TestDefaultModelMatchesTorch: the embedded default model's logits equal
// PyTorch's (the training framework's) on fixed held-out token sequences.
func TestDefaultModelMatchesTorch(t *testing.T) {
	m, err := ndbg.Open(context.Background(), ndbg.Options{})
	if errors.Is(err, ndbg.ErrNoDefaultModel) {
		t.Skip("this build embeds no default model")
	}
	require.NoError(t, err)
	defer m.Close()
	checkAgainstTorch(t, m.Engine(), "weights/default/reference_logits.json", 1e-3)
}
