package model

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

// A model's sessions cache K and V in BF16 when its weights are BF16, in
// F32 otherwise, and forks keep the dtype.
func TestCacheDTypeFollowsWeights(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		m := tinyModel(t, dt, 0)
		s := m.NewSession()
		_, err := s.Forward(context.Background(), []int{1, 2, 3}, false)
		require.NoError(t, err)
		for _, q := range []*Session{s, s.Fork()} {
			cs, ok := q.seq.(*cpuSeq)
			require.True(t, ok, "a CPU session")
			require.Equal(t, dt, cs.cache.DType(), "weights %v", dt)
		}
	}
}

// A BF16 cache rounds each written row to nearest even (NaN stays NaN) and
// gives it back widened exactly; an F32 cache keeps it bit for bit.
func TestCacheRowRounding(t *testing.T) {
	row := []float32{1, 1 + 1.0/256, 1 + 3.0/256, 1 + 1.0/512, -3.14159, 1e-20, float32(math.Inf(-1)), float32(math.NaN())}
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		c := newCache(2, len(row), 4, dt)
		c.grow(40)
		c.setRow(1, 0, 37, row)
		c.setRow(1, 1, 37, row)
		for _, got := range [][]float32{c.Key(1, 37), c.Value(1, 37)} {
			for i, v := range row {
				want := v
				if dt == kernels.BF16 {
					want = kernels.BF16ToF32(kernels.F32ToBF16(v))
				}
				if math.IsNaN(float64(v)) {
					require.True(t, math.IsNaN(float64(got[i])), "%v element %d", dt, i)
					continue
				}
				require.Equal(t, math.Float32bits(want), math.Float32bits(got[i]), "%v element %d", dt, i)
			}
		}
	}
	// BF16's step at 1 is 1/128: 1 + 1/256 and 1 + 3/256 are ties, which go
	// to the even neighbour.
	c := newCache(1, 2, 2, kernels.BF16)
	c.grow(1)
	c.setRow(0, 0, 0, []float32{1 + 1.0/256, 1 + 3.0/256})
	require.Equal(t, []float32{1, 1 + 1.0/64}, c.Key(0, 0))
}
