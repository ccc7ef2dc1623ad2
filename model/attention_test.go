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

// A batch's decode attention with rows that share blocks (forks of two
// prompts, of different lengths past them, the prompts themselves, and an
// unrelated cache) against the float64 reference of each row's own keys
// and values: groups of 8 and of 2, GQA, head_dim 64 (the AVX-512 kernels
// of AxpyRowsMany for the values too), 1 and 2 threads, F32 and BF16.
func TestDecodeAttentionSharedBlocks(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		t.Run(dt.String(), func(t *testing.T) { testDecodeAttentionSharedBlocks(t, dt) })
	}
}

func testDecodeAttentionSharedBlocks(t *testing.T, dt kernels.DType) {
	r := rand.New(rand.NewPCG(7, 8))
	const layers, heads, kvHeads, hd = 2, 8, 2, 64
	kvDim := kvHeads * hd
	type rowData struct {
		c          *Cache
		keys, vals [][]float32 // per layer, positions × kvDim
	}
	// prompt returns a cache of n positions, its full blocks transposed as
	// attention leaves them.
	prompt := func(n int) rowData {
		c := newCache(layers, kvDim, hd, dt, nil)
		c.grow(n)
		d := rowData{c: c, keys: make([][]float32, layers), vals: make([][]float32, layers)}
		for l := range layers {
			d.keys[l], d.vals[l] = fillCache(r, c, l, n, 2)
			c.keysToColumns(l, 0, n)
		}
		return d
	}
	// extend forks d and writes k more positions of its own.
	extend := func(d rowData, k int) rowData {
		f := rowData{c: d.c.Fork(), keys: make([][]float32, layers), vals: make([][]float32, layers)}
		n := f.c.Len()
		f.c.grow(k)
		row := make([]float32, kvDim)
		for l := range layers {
			f.keys[l], f.vals[l] = append([]float32(nil), d.keys[l]...), append([]float32(nil), d.vals[l]...)
			for p := n; p < n+k; p++ {
				for kv, dst := range []*[]float32{&f.keys[l], &f.vals[l]} {
					for i := range row {
						row[i] = float32(2 * r.NormFloat64())
					}
					f.c.setRow(l, kv, p, row)
					*dst = append(*dst, f.c.readRow(l, kv, p)...)
				}
			}
			f.c.keysToColumns(l, n, n+k)
		}
		return f
	}
	a, b := prompt(200), prompt(70)
	var rows []rowData
	for i := range 8 {
		rows = append(rows, extend(a, 1+5*i)) // 201 to 236 positions: some past a block boundary
	}
	rows = append(rows, extend(b, 3), extend(b, 40), extend(prompt(90), 1))
	for _, threads := range []int{1, 2} {
		be := NewCPUWith(kernels.Native(), threads)
		for l := range layers {
			q := make([]float32, len(rows)*heads*hd)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			got := make([]float32, len(q))
			spec := AttentionSpec{Layer: l, N: len(rows), Heads: heads, KVHeads: kvHeads, HeadDim: hd}
			row := func(t int) (*Cache, int) { return rows[t].c, rows[t].c.Len() - 1 }
			if groups := sharedGroups(len(rows), l, row); len(groups) != 2 || len(groups[0].rows) != 8 || len(groups[1].rows) != 2 {
				t.Fatalf("threads %d layer %d: groups %+v, want one of 8 rows and one of 2", threads, l, groups)
			}
			be.decodeAttention(got, q, spec, row)
			for i, d := range rows {
				pos := d.c.Len() - 1
				qi := q[i*heads*hd : (i+1)*heads*hd]
				want := kerneltest.RefAttention(qi, d.keys[l], d.vals[l], 1, heads, kvHeads, hd, pos, 0, 0)
				for j := range want {
					require.InDelta(t, want[j], got[i*heads*hd+j], 1e-4, "threads %d layer %d row %d element %d", threads, l, i, j)
				}
			}
		}
		be.Close()
	}
}
