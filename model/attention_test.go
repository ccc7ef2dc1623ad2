package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/kernels/kerneltest"
)

// Attention over many cache blocks, with GQA and sliding windows, against
// the float64 reference; also through a forked cache after copy-on-write.
// F32 and BF16 caches (the reference reads the rows as cached, BF16 ones
// widened), full blocks' keys as rows and transposed.
func TestAttentionAgainstNaive(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		for _, transposed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/transposed=%v", dt, transposed), func(t *testing.T) { testAttentionAgainstNaive(t, dt, transposed) })
		}
	}
}

// transposeFull transposes layer l's keys in every block of c that
// holds all its positions up to positions, frozen ones too (as they were
// before a Fork froze them).
func transposeFull(c *Cache, l, positions int) {
	for b := range positions / blockLen {
		if !c.blocks[b].keysT[l] {
			c.transposeKeys(c.blocks[b], l, true)
		}
	}
}

// fillCache writes random rows (normal, standard deviation sd) into
// positions [0, positions) of layer l of c, and returns the keys and values
// as cached (BF16 ones widened), positions × kvDim each.
func fillCache(r *rand.Rand, c *Cache, l, positions int, sd float64) (keys, vals []float32) {
	row := make([]float32, c.kvDim)
	for p := range positions {
		for _, kv := range []int{0, 1} {
			for i := range row {
				row[i] = float32(sd * r.NormFloat64())
			}
			c.setRow(l, kv, p, row)
		}
		keys, vals = append(keys, c.Key(l, p)...), append(vals, c.Value(l, p)...)
	}
	return keys, vals
}

func testAttentionAgainstNaive(t *testing.T, dt kernels.DType, transposed bool) {
	r := rand.New(rand.NewPCG(1, 1))
	const heads, kvHeads, hd, positions = 6, 2, 16, 150
	kvDim := kvHeads * hd
	c := newCache(2, kvDim, hd, dt, nil)
	c.grow(positions - 10)
	c = c.Fork()
	c.grow(10)
	keys, vals := fillCache(r, c, 1, positions, 1)
	if transposed {
		transposeFull(c, 1, positions)
	}
	be := NewCPUWith(kernels.Native(), 2)
	defer be.Close()
	for _, window := range []int{0, 1, 37, 1000} {
		for _, n := range []int{1, 40} {
			a := AttentionSpec{Layer: 1, N: n, Pos0: positions - n, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Window: window}
			q := make([]float32, n*heads*hd)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			got := make([]float32, len(q))
			be.attention(got, q, a, func(t int) (*Cache, int) { return c, a.Pos0 + t })
			want := kerneltest.RefAttention(q, keys, vals, n, heads, kvHeads, hd, a.Pos0, 0, window)
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-4, "window %d n %d element %d", window, n, i)
			}
		}
	}
}

// Decode attention (one query row) split into position chunks on 1 to 3
// threads, merged across chunks, against the float64 reference: GQA, rows
// ending on and beside block boundaries, windows starting inside a block.
// F32 and BF16 caches, every block's keys as rows, and two blocks of three
// transposed (the rows read inside a transposed block too).
func TestDecodeAttentionChunks(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		for _, mixed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/mixed=%v", dt, mixed), func(t *testing.T) { testDecodeAttentionChunks(t, dt, mixed) })
		}
	}
}

func testDecodeAttentionChunks(t *testing.T, dt kernels.DType, mixed bool) {
	r := rand.New(rand.NewPCG(2, 3))
	const heads, kvHeads, hd, positions = 8, 2, 32, 800
	kvDim := kvHeads * hd
	c := newCache(2, kvDim, hd, dt, nil)
	c.grow(positions)
	keys, vals := fillCache(r, c, 0, positions, 3) // wide scores: chunk maxima differ
	for b := range positions / blockLen {
		if mixed && b%3 != 0 {
			c.transposeKeys(c.blocks[b], 0, true)
		}
	}
	for _, threads := range []int{1, 2, 3} {
		be := NewCPUWith(kernels.Native(), threads)
		for _, pos := range []int{0, 31, 32, 63, 64, 200, 299, 520, 799} {
			for _, window := range []int{0, 1, 33, 130, 300, 1000} {
				a := AttentionSpec{Layer: 0, N: 1, Pos0: pos, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Window: window}
				q := make([]float32, heads*hd)
				for i := range q {
					q[i] = float32(r.NormFloat64())
				}
				got := make([]float32, len(q))
				be.attention(got, q, a, func(int) (*Cache, int) { return c, pos })
				want := kerneltest.RefAttention(q, keys, vals, 1, heads, kvHeads, hd, pos, 0, window)
				for i := range want {
					require.InDelta(t, want[i], got[i], 1e-4, "threads %d pos %d window %d element %d", threads, pos, window, i)
				}
			}
		}
		be.Close()
	}
}
