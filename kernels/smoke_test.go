package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSmokeMatMul(t *testing.T) {
	w := &Mat{Rows: 2, Cols: 3, F32: []float32{1, 2, 3, 4, 5, 6}}
	dst := make([]float32, 4)
	p := NewPool(2)
	defer p.Close()
	require.NoError(t, MatMul(p, dst, []float32{1, 0, 0, 0, 1, 1}, 2, w))
	require.Equal(t, []float32{1, 4, 5, 11}, dst)
	require.ErrorIs(t, MatMul(p, dst[:3], []float32{1, 0, 0, 0, 1, 1}, 2, w), ErrShape)
}
