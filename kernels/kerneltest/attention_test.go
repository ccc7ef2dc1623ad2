package kerneltest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRefAttentionSingleKey(t *testing.T) {
	// One visible key: the output is its value row, whatever the scores.
	q := []float32{1, 2, 3, 4}
	k := []float32{9, 9, 0.5, -1}
	v := []float32{7, 8, 1, 2}
	out := RefAttention(q, k, v, 1, 1, 1, 4, 0, 0, 0)
	require.Equal(t, []float64{7, 8, 1, 2}, out)
	// Two keys, window 1: only the last one.
	k2 := append(append([]float32{}, k...), 1, 1, 1, 1)
	v2 := append(append([]float32{}, v...), 3, 3, 3, 3)
	out = RefAttention(q, k2, v2, 1, 1, 1, 4, 1, 0, 1)
	require.Equal(t, []float64{3, 3, 3, 3}, out)
}
