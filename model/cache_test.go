package model

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

// A model's sessions cache K and V in BF16 when its weights are BF16 (or
// quantized: KVCacheDType), in F32 for F32 weights, and forks keep the
// dtype.
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
		c := newCache(2, len(row), 4, dt, nil)
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
	c := newCache(1, 2, 2, kernels.BF16, nil)
	c.grow(1)
	c.setRow(0, 0, 0, []float32{1 + 1.0/256, 1 + 3.0/256})
	require.Equal(t, []float32{1, 1 + 1.0/64}, c.Key(0, 0))
}

func TestKVCacheDType(t *testing.T) {
	for qkv, want := range map[kernels.DType]kernels.DType{
		kernels.F32: kernels.F32, kernels.BF16: kernels.BF16,
		kernels.Q8_0: kernels.BF16, kernels.Q4_K: kernels.BF16, kernels.Q6_K: kernels.BF16,
	} {
		require.Equal(t, want, KVCacheDType(qkv), "%v projections", qkv)
	}
}

// Blocks that Truncate drops and that a closed sequence frees go to the
// model's pool and come back for the next block any of its caches needs;
// blocks shared with a fork never do, so a fork's rows stay as they were
// whatever its parent drops, frees or rewrites.
func TestCacheBlockPool(t *testing.T) {
	pool := newBlockPool(1 << 20)
	c := newCache(2, 4, 2, kernels.F32, pool)
	row := func(v float32) []float32 { return []float32{v, v, v, v} }
	c.grow(3 * blockLen)
	for p := range c.Len() {
		c.setRow(0, 0, p, row(float32(p)))
	}
	third := c.blocks[2]
	require.NoError(t, c.Truncate(2*blockLen))
	require.Equal(t, 1, pool.blocks.Len())
	c.grow(1)
	require.Same(t, third, c.blocks[2], "the dropped block comes back")
	require.Zero(t, pool.blocks.Len())

	fork := c.Fork() // every block of c is now shared
	require.NoError(t, c.Truncate(blockLen))
	require.Zero(t, pool.blocks.Len(), "shared blocks are not pooled")
	c.grow(blockLen + 1)
	c.setRow(0, 0, blockLen, row(-1))
	require.Equal(t, row(blockLen), fork.Key(0, blockLen), "the fork keeps its rows")
	c.release()
	require.Equal(t, 2, pool.blocks.Len(), "the parent's private blocks (rewritten block 1, new block 2)")
	require.Zero(t, c.Len())
	other := newCache(2, 4, 2, kernels.F32, pool)
	other.grow(1)
	require.Equal(t, 1, pool.blocks.Len(), "another cache takes one")
	for p := range 2*blockLen + 1 {
		require.Equal(t, row(float32(p)), fork.Key(0, p), "position %d of the fork", p)
	}

	// A full pool drops what does not fit.
	small := newBlockPool(int64(c.blockSize()*4) + 1)
	d := newCache(2, 4, 2, kernels.F32, small)
	d.grow(2 * blockLen)
	d.release()
	require.Equal(t, 1, small.blocks.Len())
}
