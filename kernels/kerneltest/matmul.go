package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

// MatMulCase is one shape of dst (n × rows) = x (n × cols) · Wᵀ.
type MatMulCase struct{ N, Rows, Cols int }

// MatMulCases covers n = 1 (decode) and n > 1 (prefill), every size
// residue against vector widths 8 and 16 and tile sizes 6, 12, 16 and 32,
// and a large K. The n = 1 cases take the eight-row GEMV kernels with and
// without their remainders: rows not a multiple of 8 (then 4, then 1 left),
// K below 8 (no kernel), K = 8 (only the 8-column tail), K a multiple of 16
// or 32 with and without an 8-column step and a Go tail after it, rows of
// at most 2 KiB (the kernels that prefetch the next eight rows) and longer.
// Also every n = 2…8 of the small-batch kernels (batched decode) with odd
// row counts (against groups of 2, 3 and 4 rows), K below one vector and K
// tails, serial and split over threads; for n = 4…8 also the AVX2 kernels
// that take three weight rows at a time (rows a multiple of 3, or 1-2 rows
// left to the one-row kernels; K of one vector, an odd or even number of
// vectors, with a Go tail; x up to 48 KiB for F32, 64 KiB for BF16); past that,
// one panel of x (n ≤ 16) against weight groups taken as mr streams (a
// zero-padded group of the last rows, several K blocks). The prefill shapes take the AVX2
// tiles stored straight into dst (whole groups of 6 weight rows by whole
// panels of 16 or 8 x rows, in one K block or several) beside those that
// go through a scratch tile (the last group, a panel's padding rows), and
// an odd K (the AVX2 BF16 tiles' last column on its own), as short as 1.
var MatMulCases = []MatMulCase{
	{1, 1, 1}, {1, 1, 16}, {1, 7, 13}, {1, 4, 32}, {1, 5, 33}, {1, 9, 47}, {1, 64, 256},
	{1, 33, 4099}, {1, 130, 1024},
	{2, 9, 8}, {3, 7, 24}, {4, 5, 7}, {5, 11, 40}, {6, 9, 9}, {7, 13, 65}, {8, 1, 8}, {8, 15, 103},
	{2, 131, 515}, {3, 97, 1031}, {4, 99, 520}, {5, 97, 1031}, {6, 67, 777}, {7, 70, 520}, {8, 130, 520},
	{8, 29, 1029}, {7, 3, 4}, {8, 6, 31},
	{8, 3, 8}, {8, 4, 16}, {7, 5, 24}, {6, 7, 40}, {5, 8, 1032}, {4, 9, 776}, {8, 13, 896}, {5, 3, 15}, {7, 11, 1000}, {8, 7, 1376}, {6, 8, 2048}, {4, 10, 2056},
	{8, 13, 2056}, {7, 20, 1800}, {5, 13, 8200}, {8, 14, 2048}, {7, 19, 2328}, {8, 11, 2045}, {12, 25, 300}, {16, 18, 40},
	{1, 8, 7}, {1, 8, 8}, {1, 15, 24}, {1, 16, 40}, {1, 23, 63}, {1, 31, 520}, {1, 24, 515},
	{1, 41, 1376}, {1, 45, 1032}, {1, 17, 2056},
	{2, 3, 5}, {2, 17, 48}, {3, 11, 31}, {4, 1, 1}, {4, 12, 64}, {4, 37, 1000}, {2, 64, 4099}, {3, 130, 333}, {5, 13, 17},
	{6, 25, 7}, {7, 6, 16}, {15, 37, 100}, {16, 12, 32}, {17, 23, 33},
	{31, 25, 64}, {32, 12, 64}, {33, 37, 129}, {48, 50, 2}, {64, 96, 256},
	{100, 50, 300}, {129, 61, 77}, {129, 61, 777}, {40, 24, 4100}, {20, 13, 4099},
	{24, 18, 600}, {128, 62, 1100}, {56, 12, 40}, {17, 12, 1}, {32, 13, 3},
}

// refMatMul returns the float64 product x · Wᵀ and each output's sum of
// its terms' magnitudes (expectDotsClose).
func refMatMul(x []float32, n int, w *kernels.Mat) (ref, mag []float64) {
	K, R := w.Cols, w.Rows
	wf := make([]float64, R*K)
	for i := range wf {
		if w.DType == kernels.BF16 {
			wf[i] = float64(kernels.BF16ToF32(w.BF16[i]))
		} else {
			wf[i] = float64(w.F32[i])
		}
	}
	ref = make([]float64, n*R)
	mag = make([]float64, n*R)
	for i := range n {
		for r := range R {
			var s, m float64
			for c := range K {
				p := float64(x[i*K+c]) * wf[r*K+c]
				s += p
				m += math.Abs(p)
			}
			ref[i*R+r], mag[i*R+r] = s, m
		}
	}
	return ref, mag
}

func randMat(r *rand.Rand, rows, cols int, dt kernels.DType) *kernels.Mat {
	w := &kernels.Mat{Rows: rows, Cols: cols, DType: dt}
	f := make([]float32, rows*cols)
	fill(r, f)
	if dt == kernels.BF16 {
		w.BF16 = make([]uint16, rows*cols)
		kernels.F32ToBF16Slice(w.BF16, f)
	} else {
		w.F32 = f
	}
	return w
}

// MatMulTolerance is implemented by implementations whose MatMul is less precise
// than float32 arithmetic (BF16 activations, TF32 on a GPU): MatMulNMSE
// gives the NMSE bound for weights of dtype dt, used instead of the limits
// above. kernels.Impl implements it.
type MatMulTolerance interface {
	MatMulNMSE(dt kernels.DType) float64
}

// TestMatMul checks dst = x · Wᵀ over MatMulCases, F32 and BF16 weights, on
// 1 and 3 threads, with guard regions, overwriting garbage in dst, and
// NaN/Inf propagation; and that bad sizes are errors that leave dst alone.
func TestMatMul(t *testing.T, impl Ops) {
	r := newRand(t)
	pools := []*kernels.Pool{nil, kernels.NewPool(3)}
	defer pools[1].Close()
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		limit := LimitF32
		if dt == kernels.BF16 {
			limit = LimitBF16
		}
		if tol, ok := impl.(MatMulTolerance); ok {
			limit = tol.MatMulNMSE(dt)
		}
		for _, c := range MatMulCases {
			for pi, p := range pools {
				name := fmt.Sprintf("%v/n=%d/%dx%d/threads=%d", dt, c.N, c.Rows, c.Cols, p.Threads())
				w := randMat(r, c.Rows, c.Cols, dt)
				x := make([]float32, c.N*c.Cols)
				fill(r, x)
				ref, mag := refMatMul(x, c.N, w)
				dst := newGuarded(c.N * c.Rows)
				fill(r, dst.s()) // garbage: must be overwritten, not accumulated
				require.NoError(t, impl.MatMul(p, dst.s(), x, c.N, w), name)
				dst.check(t, name)
				expectDotsClose(t, name, dst.s(), ref, mag, c.Cols, limit)

				if pi == 1 || c.N*c.Rows*c.Cols == 0 {
					continue
				}
				// Non-finite values: a NaN in x poisons its output row; an
				// Inf in W poisons its output column (NaN where it meets
				// the NaN, ±Inf elsewhere).
				i0, c0, r0 := r.IntN(c.N), r.IntN(c.Cols), r.IntN(c.Rows)
				x[i0*c.Cols+c0] = float32(math.NaN())
				c1 := r.IntN(c.Cols)
				if dt == kernels.BF16 {
					w.BF16[r0*c.Cols+c1] = 0x7f80 // +Inf
				} else {
					w.F32[r0*c.Cols+c1] = float32(math.Inf(1))
				}
				for i := range c.N { // keep the Inf × x finite-signed, never 0
					if x[i*c.Cols+c1] == 0 {
						x[i*c.Cols+c1] = 0.5
					}
				}
				ref, mag = refMatMul(x, c.N, w)
				dst = newGuarded(c.N * c.Rows)
				require.NoError(t, impl.MatMul(p, dst.s(), x, c.N, w), name)
				dst.check(t, name+"/nonfinite")
				expectDotsClose(t, name+"/nonfinite", dst.s(), ref, mag, c.Cols, limit)
			}
		}
	}

	// Bad sizes: an error wrapping ErrShape, dst untouched.
	w := randMat(r, 4, 8, kernels.F32)
	x := make([]float32, 2*8)
	dst := make([]float32, 2*4)
	for _, bad := range []struct {
		name string
		dst  []float32
		x    []float32
		n    int
		w    *kernels.Mat
	}{
		{"short dst", dst[:7], x, 2, w},
		{"short x", dst, x[:15], 2, w},
		{"negative n", dst, x, -1, w},
		{"nil W", dst, x, 2, nil},
		{"short W", dst, x, 2, &kernels.Mat{Rows: 4, Cols: 8, F32: w.F32[:31]}},
		{"short BF16 W", dst, x, 2, &kernels.Mat{Rows: 4, Cols: 8, DType: kernels.BF16, BF16: make([]uint16, 31)}},
		{"unknown dtype", dst, x, 2, &kernels.Mat{Rows: 4, Cols: 8, DType: 9, F32: w.F32}},
		{"negative rows", dst, x, 2, &kernels.Mat{Rows: -4, Cols: 8, F32: w.F32}},
	} {
		for i := range dst {
			dst[i] = 42
		}
		err := impl.MatMul(nil, bad.dst, bad.x, bad.n, bad.w)
		require.ErrorIs(t, err, kernels.ErrShape, bad.name)
		for _, v := range dst {
			require.Equal(t, float32(42), v, bad.name)
		}
	}
	// Empty products are fine; K = 0 gives zeros.
	require.NoError(t, impl.MatMul(nil, nil, nil, 0, w))
	z := []float32{1, 2, 3}
	require.NoError(t, impl.MatMul(nil, z, nil, 1, &kernels.Mat{Rows: 3, Cols: 0}))
	require.Equal(t, []float32{0, 0, 0}, z)
}
