package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

// RowsCases are (rows, width, stride - width) shapes for DotRows and
// AxpyRows: head dimensions around the vector widths, keys packed (extra 0)
// or interleaved with other heads (extra > 0).
var RowsCases = []struct{ Rows, Width, Extra int }{
	{1, 1, 0}, {3, 7, 0}, {5, 8, 3}, {17, 16, 16}, {33, 31, 1}, {64, 32, 0},
	{7, 33, 31}, {100, 64, 192}, {129, 100, 0}, {300, 128, 384}, {2, 4099, 5},
	{8, 8, 0}, {9, 40, 3}, {16, 7, 1}, {23, 72, 8}, {40, 520, 0},
	{37, 32, 224}, {31, 64, 448}, {5, 16, 0}, {13, 48, 16}, {3, 24, 0},
}

// RowsBF16Ops are DotRows and AxpyRows on rows of BF16 elements (a KV cache
// kept in BF16); kernels.Impl implements them.
type RowsBF16Ops interface {
	DotRowsBF16(dst, x []float32, m []uint16, stride int)
	AxpyRowsBF16(dst, a []float32, m []uint16, stride int)
}

// rowsOp is DotRows or AxpyRows on float32 rows, or an adapter that hands
// the rows (already BF16 values) to the BF16 variant.
type rowsOp func(dst, x, m []float32, stride int)

func bf16Rows(op func(dst, x []float32, m []uint16, stride int)) rowsOp {
	return func(dst, x, m []float32, stride int) {
		h := make([]uint16, len(m))
		kernels.F32ToBF16Slice(h, m)
		op(dst, x, h, stride)
	}
}

// roundBF16 rounds every element of x to the nearest BF16 value, so that
// the float64 reference sees exactly what a BF16 kernel reads.
func roundBF16(x []float32) {
	for i, v := range x {
		x[i] = kernels.BF16ToF32(kernels.F32ToBF16(v))
	}
}

// TestDotRows checks dst[j] = x · m[j·stride:], guard regions, NaN
// propagation by row, and the rows-that-fit rule.
func TestDotRows(t *testing.T, impl Ops) { testDotRows(t, impl.DotRows, false) }

// TestDotRowsBF16 is TestDotRows for DotRowsBF16 (the reference reads the
// same BF16 values widened).
func TestDotRowsBF16(t *testing.T, impl RowsBF16Ops) {
	testDotRows(t, bf16Rows(impl.DotRowsBF16), true)
}

func testDotRows(t *testing.T, dotRows rowsOp, bf16 bool) {
	r := newRand(t)
	for _, c := range RowsCases {
		stride := c.Width + c.Extra
		name := fmt.Sprintf("rows=%d/width=%d/stride=%d", c.Rows, c.Width, stride)
		m := make([]float32, (c.Rows-1)*stride+c.Width)
		fill(r, m)
		if bf16 {
			roundBF16(m)
		}
		x := make([]float32, c.Width)
		fill(r, x)
		ref := func() []float64 {
			out := make([]float64, c.Rows)
			for j := range out {
				for k, v := range x {
					out[j] += float64(v) * float64(m[j*stride+k])
				}
			}
			return out
		}
		dst := newGuarded(c.Rows)
		fill(r, dst.s())
		dotRows(dst.s(), x, m, stride)
		dst.check(t, name)
		expectClose(t, name, dst.s(), ref(), LimitF32)

		j := r.IntN(c.Rows)
		m[j*stride+r.IntN(c.Width)] = float32(math.NaN())
		dst = newGuarded(c.Rows)
		dotRows(dst.s(), x, m, stride)
		dst.check(t, name+"/nan")
		expectClose(t, name+"/nan", dst.s(), ref(), LimitF32)
	}
	// Only rows that fit in m are computed.
	x := []float32{1, 2}
	m := []float32{1, 1, 2, 2, 3}
	dst := []float32{9, 9, 9}
	dotRows(dst, x, m, 2)
	require.Equal(t, []float32{3, 6, 9}, dst, "third row does not fit")
	dotRows(dst, x, m, -1)
	require.Equal(t, []float32{3, 6, 9}, dst, "negative stride")
	dotRows(dst, x, m, 0)
	require.Equal(t, []float32{3, 3, 3}, dst, "stride 0")
}

// TestAxpyRows checks dst += Σ_j a[j]·m[j·stride:], guard regions, NaN
// propagation by column, and the rows-that-fit rule.
func TestAxpyRows(t *testing.T, impl Ops) { testAxpyRows(t, impl.AxpyRows, false) }

// TestAxpyRowsBF16 is TestAxpyRows for AxpyRowsBF16 (the reference reads
// the same BF16 values widened).
func TestAxpyRowsBF16(t *testing.T, impl RowsBF16Ops) {
	testAxpyRows(t, bf16Rows(impl.AxpyRowsBF16), true)
}

func testAxpyRows(t *testing.T, axpyRows rowsOp, bf16 bool) {
	r := newRand(t)
	for _, c := range RowsCases {
		stride := c.Width + c.Extra
		name := fmt.Sprintf("rows=%d/width=%d/stride=%d", c.Rows, c.Width, stride)
		m := make([]float32, (c.Rows-1)*stride+c.Width)
		fill(r, m)
		if bf16 {
			roundBF16(m)
		}
		a := make([]float32, c.Rows)
		fill(r, a)
		init := make([]float32, c.Width)
		fill(r, init)
		ref := func() []float64 {
			out := make([]float64, c.Width)
			for k := range out {
				out[k] = float64(init[k])
				for j, v := range a {
					out[k] += float64(v) * float64(m[j*stride+k])
				}
			}
			return out
		}
		dst := newGuarded(c.Width)
		copy(dst.s(), init)
		axpyRows(dst.s(), a, m, stride)
		dst.check(t, name)
		expectClose(t, name, dst.s(), ref(), LimitF32)

		m[r.IntN(c.Rows)*stride+r.IntN(c.Width)] = float32(math.Inf(1))
		m[r.IntN(c.Rows)*stride+r.IntN(c.Width)] = float32(math.NaN())
		dst = newGuarded(c.Width)
		copy(dst.s(), init)
		axpyRows(dst.s(), a, m, stride)
		dst.check(t, name+"/nonfinite")
		expectClose(t, name+"/nonfinite", dst.s(), ref(), LimitF32)
	}
	dst := []float32{1, 1}
	axpyRows(dst, []float32{1, 10, 100}, []float32{1, 2, 3, 4, 5}, 2)
	require.Equal(t, []float32{1 + 1 + 30, 1 + 2 + 40}, dst, "third row does not fit")
}

// RowsManyOps are AxpyRowsMany and AxpyRowsManyBF16; kernels.Impl
// implements them.
type RowsManyOps interface {
	AxpyRowsMany(dst []float32, ldd, width int, a []float32, lda, n int, m []float32, stride int)
	AxpyRowsManyBF16(dst []float32, ldd, width int, a []float32, lda, n int, m []uint16, stride int)
}

// TestAxpyRowsMany checks dst[i·ldd + c] += Σ_j a[i·lda + j] · m[j·stride +
// c] against the float64 reference for numbers of rows of dst around the
// kernels' groups (8, 4, 2, 1) and every RowsCases shape, F32 and BF16
// rows, rows of a packed (lda = rows), apart and overlapping: the gaps
// between rows of dst and the guard regions untouched, NaN and Inf in m
// reaching the columns they are in, and rows of m that the last row of a
// has no weight for left out.
func TestAxpyRowsMany(t *testing.T, impl RowsManyOps) {
	r := newRand(t)
	for _, bf16 := range []bool{false, true} {
		for _, n := range []int{1, 2, 3, 5, 8, 11, 15, 16} {
			for ci, c := range RowsCases {
				stride, ldd := c.Width+c.Extra, c.Width+c.Extra%5
				lda := []int{c.Rows, c.Rows + 3 + c.Extra, max(1, c.Rows/2)}[ci%3]
				name := fmt.Sprintf("bf16=%v/n=%d/rows=%d/width=%d/stride=%d/lda=%d", bf16, n, c.Rows, c.Width, stride, lda)
				m := make([]float32, (c.Rows-1)*stride+c.Width)
				fill(r, m)
				if bf16 {
					roundBF16(m)
				}
				// One row of m more than a's last row has a weight for: left out.
				a := make([]float32, (n-1)*lda+c.Rows)
				fill(r, a)
				m = append(m, make([]float32, stride)...)
				fill(r, m[len(m)-stride:])
				if bf16 {
					roundBF16(m)
				}
				init := make([]float32, (n-1)*ldd+c.Width)
				fill(r, init)
				run := func(what string) {
					ref := make([]float64, len(init))
					for k := range ref {
						ref[k] = float64(init[k])
						if i, col := k/ldd, k%ldd; col < c.Width {
							for j := range c.Rows {
								ref[k] += float64(a[i*lda+j]) * float64(m[j*stride+col])
							}
						}
					}
					dst := newGuarded(len(init))
					copy(dst.s(), init)
					if bf16 {
						h := make([]uint16, len(m))
						kernels.F32ToBF16Slice(h, m)
						impl.AxpyRowsManyBF16(dst.s(), ldd, c.Width, a, lda, n, h, stride)
					} else {
						impl.AxpyRowsMany(dst.s(), ldd, c.Width, a, lda, n, m, stride)
					}
					dst.check(t, what)
					for k, v := range dst.s() {
						if k%ldd >= c.Width && math.Float32bits(v) != math.Float32bits(init[k]) {
							t.Fatalf("%s: wrote between rows of dst: element %d", what, k)
						}
					}
					expectClose(t, what, dst.s(), ref, LimitF32)
				}
				run(name)
				m[r.IntN(c.Rows)*stride+r.IntN(c.Width)] = float32(math.Inf(1))
				m[r.IntN(c.Rows)*stride+r.IntN(c.Width)] = float32(math.NaN())
				run(name + "/nonfinite")
			}
		}
	}
}
