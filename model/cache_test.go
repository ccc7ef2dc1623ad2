package model

import (
	"context"
	"math"
	"math/rand/v2"
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

// A block's keys are transposed once it holds all its positions and
// attention is about to read them (keysToColumns, private blocks only),
// back to rows when it fills again (Truncate into it; grow copying a
// frozen one to write into it), and read and written the same either way:
// Key gives every cached row back unchanged through all of it, in F32 and
// BF16 caches.
func TestCacheKeysTransposeWhenFull(t *testing.T) {
	const layers, hd, kvDim = 2, 8, 16
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		r := rand.New(rand.NewPCG(5, 6))
		c := newCache(layers, kvDim, hd, dt, nil)
		c.grow(70)
		want := make([][][]float32, layers)
		for l := range layers {
			keys, _ := fillCache(r, c, l, 70, 1)
			for p := range 70 {
				want[l] = append(want[l], keys[p*kvDim:(p+1)*kvDim])
			}
		}
		check := func(what string, c *Cache) {
			t.Helper()
			for l := range layers {
				for p := range c.Len() {
					require.Equal(t, want[l][p], c.Key(l, p), "%v %s: layer %d position %d", dt, what, l, p)
				}
			}
		}
		c.keysToColumns(1, 60, 70) // block 1 filled (its last position, 63, among them); block 2 not
		require.Equal(t, []bool{false, true}, c.blocks[1].keysT, dt)
		require.Equal(t, []bool{false, false}, c.blocks[0].keysT, dt)
		require.Equal(t, []bool{false, false}, c.blocks[2].keysT, dt)
		c.keysToColumns(0, 0, 70)
		c.keysToColumns(1, 0, 70)
		require.Equal(t, []bool{true, true}, c.blocks[0].keysT, dt)
		check("transposed", c)

		// A write into a transposed block lands where Key reads it.
		row := make([]float32, kvDim)
		for i := range row {
			row[i] = float32(r.NormFloat64())
		}
		c.setRow(0, 0, 5, row)
		want[0][5] = c.Key(0, 5)
		require.InDeltaSlice(t, row, want[0][5], 0.01, dt)
		check("written", c)

		f := c.Fork() // every block frozen, shared
		require.NoError(t, f.Truncate(40))
		require.True(t, f.blocks[1].keysT[0], "%v: a frozen block stays as it is", dt)
		f.grow(1) // copies block 1 to write position 40: rows again
		require.Equal(t, []bool{false, false}, f.blocks[1].keysT, dt)
		require.Equal(t, []bool{true, true}, c.blocks[1].keysT, "%v: the parent's block", dt)
		check("fork", f)
		check("parent", c)

		require.NoError(t, c.Truncate(0))
		c.grow(64)
		for l := range layers {
			fillCache(r, c, l, 64, 1)
		}
		c.keysToColumns(0, 0, 64)
		c.keysToColumns(1, 0, 64)
		require.Equal(t, []bool{true, true}, c.blocks[1].keysT, dt)
		want = make([][][]float32, layers)
		for l := range layers {
			for p := range 64 {
				want[l] = append(want[l], c.Key(l, p))
			}
		}
		require.NoError(t, c.Truncate(50)) // private, partly filled again: rows
		require.Equal(t, []bool{false, false}, c.blocks[1].keysT, dt)
		require.Equal(t, []bool{true, true}, c.blocks[0].keysT, dt)
		check("truncated", c)
	}
}
