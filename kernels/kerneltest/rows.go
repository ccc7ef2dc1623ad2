package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// RowsCases are (rows, width, stride - width) shapes for DotRows and
// AxpyRows: head dimensions around the vector widths, keys packed (extra 0)
// or interleaved with other heads (extra > 0).
var RowsCases = []struct{ Rows, Width, Extra int }{
	{1, 1, 0}, {3, 7, 0}, {5, 8, 3}, {17, 16, 16}, {33, 31, 1}, {64, 32, 0},
	{7, 33, 31}, {100, 64, 192}, {129, 100, 0}, {300, 128, 384}, {2, 4099, 5},
	{8, 8, 0}, {9, 40, 3}, {16, 7, 1}, {23, 72, 8}, {40, 520, 0},
}

// TestDotRows checks dst[j] = x · m[j·stride:], guard regions, NaN
// propagation by row, and the rows-that-fit rule.
func TestDotRows(t *testing.T, impl Ops) {
	r := newRand(t)
	for _, c := range RowsCases {
		stride := c.Width + c.Extra
		name := fmt.Sprintf("rows=%d/width=%d/stride=%d", c.Rows, c.Width, stride)
		m := make([]float32, (c.Rows-1)*stride+c.Width)
		fill(r, m)
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
		impl.DotRows(dst.s(), x, m, stride)
		dst.check(t, name)
		expectClose(t, name, dst.s(), ref(), LimitF32)

		j := r.IntN(c.Rows)
		m[j*stride+r.IntN(c.Width)] = float32(math.NaN())
		dst = newGuarded(c.Rows)
		impl.DotRows(dst.s(), x, m, stride)
		dst.check(t, name+"/nan")
		expectClose(t, name+"/nan", dst.s(), ref(), LimitF32)
	}
	// Only rows that fit in m are computed.
	x := []float32{1, 2}
	m := []float32{1, 1, 2, 2, 3}
	dst := []float32{9, 9, 9}
	impl.DotRows(dst, x, m, 2)
	require.Equal(t, []float32{3, 6, 9}, dst, "third row does not fit")
	impl.DotRows(dst, x, m, -1)
	require.Equal(t, []float32{3, 6, 9}, dst, "negative stride")
	impl.DotRows(dst, x, m, 0)
	require.Equal(t, []float32{3, 3, 3}, dst, "stride 0")
}

// TestAxpyRows checks dst += Σ_j a[j]·m[j·stride:], guard regions, NaN
// propagation by column, and the rows-that-fit rule.
func TestAxpyRows(t *testing.T, impl Ops) {
	r := newRand(t)
	for _, c := range RowsCases {
		stride := c.Width + c.Extra
		name := fmt.Sprintf("rows=%d/width=%d/stride=%d", c.Rows, c.Width, stride)
		m := make([]float32, (c.Rows-1)*stride+c.Width)
		fill(r, m)
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
		impl.AxpyRows(dst.s(), a, m, stride)
		dst.check(t, name)
		expectClose(t, name, dst.s(), ref(), LimitF32)

		m[r.IntN(c.Rows)*stride+r.IntN(c.Width)] = float32(math.Inf(1))
		m[r.IntN(c.Rows)*stride+r.IntN(c.Width)] = float32(math.NaN())
		dst = newGuarded(c.Width)
		copy(dst.s(), init)
		impl.AxpyRows(dst.s(), a, m, stride)
		dst.check(t, name+"/nonfinite")
		expectClose(t, name+"/nonfinite", dst.s(), ref(), LimitF32)
	}
	dst := []float32{1, 1}
	impl.AxpyRows(dst, []float32{1, 10, 100}, []float32{1, 2, 3, 4, 5}, 2)
	require.Equal(t, []float32{1 + 1 + 30, 1 + 2 + 40}, dst, "third row does not fit")
}
