package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

// QuantTypes are the quantized weight types the suite covers.
var QuantTypes = []kernels.DType{kernels.Q8_0, kernels.Q4_0, kernels.Q5_0, kernels.Q4_K, kernels.Q6_K}

// QuantCases are the shapes of the quantized products: n = 1 (decode),
// the small batches (n ≤ 4, one kernel call per weight row; n ≤ 8, one
// call per group of 16 packed rows: two tiles of 4), n past a tile with a
// remainder, prefill-sized n; row counts that are not
// multiples of the kernels' row groups; K of one block, of several, and
// the shapes of the presets (512, 768, 1376, 2048). K is rounded up to the
// type's block length.
var QuantCases = []MatMulCase{
	{1, 1, 256}, {1, 7, 256}, {1, 33, 512}, {1, 130, 768}, {1, 9, 1376}, {1, 64, 2048},
	{2, 5, 256}, {3, 17, 512}, {4, 8, 768}, {5, 11, 256}, {7, 3, 1376}, {9, 20, 512},
	{6, 48, 512}, {7, 17, 768}, {8, 32, 256},
	{16, 13, 256}, {33, 40, 768}, {128, 24, 512}, {1, 1, 32}, {3, 5, 96}, {1, 300, 64},
	{1, 40, 1376}, {8, 17, 96}, {6, 32, 160}, // packed groups of an odd number of Q8_0 blocks
	{2, 32, 512}, {4, 16, 768}, {5, 48, 256}, // every packed kernel (n = 1-8) on whole groups of 16 rows
}

// refQuant returns the float64 product of the dequantized weights of w
// (F32, BF16, quantized, or of quantized parts) with x.
// With it, each output's sum of its terms' magnitudes (expectDotsClose).
func refQuant(t testing.TB, x []float32, n int, w *kernels.Mat) (ref, mag []float64) {
	t.Helper()
	K, R := w.Cols, w.Rows
	row := make([]float32, K)
	ref = make([]float64, n*R)
	mag = make([]float64, n*R)
	for r := range R {
		if w.Row(row, r) == nil {
			t.Fatalf("row %d of the %d×%d matrix cannot be read", r, R, K)
		}
		for i := range n {
			var s, m float64
			for c, v := range row {
				p := float64(x[i*K+c]) * float64(v)
				s += p
				m += math.Abs(p)
			}
			ref[i*R+r], mag[i*R+r] = s, m
		}
	}
	return ref, mag
}

// randQuantMat returns a rows × cols matrix of type dt holding random
// values quantized by kernels.QuantizeRow.
func randQuantMat(t testing.TB, r *rand.Rand, rows, cols int, dt kernels.DType) *kernels.Mat {
	t.Helper()
	f := make([]float32, rows*cols)
	for i := range f {
		f[i] = float32(r.NormFloat64() * 0.05)
	}
	w := &kernels.Mat{Rows: rows, Cols: cols, DType: dt, Q: make([]byte, rows*dt.RowBytes(cols))}
	require.NoError(t, kernels.QuantizeRow(dt, w.Q, f))
	return w
}

// roundRows rounds each row of x as a product with dt weights does.
func roundRows(t testing.TB, dt kernels.DType, x []float32, n, K int) []float32 {
	t.Helper()
	out := make([]float32, len(x))
	for i := range n {
		require.NoError(t, kernels.RoundActivations(dt, out[i*K:(i+1)*K], x[i*K:(i+1)*K]))
	}
	return out
}

// TestMatMulQuantExtremes checks the quantized products where their
// integer sums are largest: every quant of the weights at an extreme
// (bytes all 0xFF: Q4_K's nibbles 15 with scales 63, Q5_0's 31, Q6_K's
// 63; 0x80: Q8_0's -128; 0x7F: 127; 0x00) and every activation of one
// magnitude (quants ±127, all of one sign in a row, so nothing cancels),
// on the row kernels and packed (kernels.Pack), against the float64
// reference on x rounded as the kernels round it. A kernel that sums more
// products in int16 than fit, or saturates one, fails here (random
// weights and activations stay far from those sums).
func TestMatMulQuantExtremes(t *testing.T, impl Ops) {
	pool := kernels.NewPool(2)
	defer pool.Close()
	const n, rows = 8, 32
	for _, dt := range QuantTypes {
		for _, cols := range []int{512, 2048} {
			for _, fill := range []byte{0xFF, 0x80, 0x7F, 0x00} {
				w := &kernels.Mat{Rows: rows, Cols: cols, DType: dt, Q: make([]byte, rows*dt.RowBytes(cols))}
				for i := range w.Q {
					w.Q[i] = fill
				}
				// The float16 scales (d, and Q4_K's dmin) 2^-7: finite.
				bb := dt.BlockBytes()
				for b := 0; b < len(w.Q); b += bb {
					at := []int{0}
					switch dt {
					case kernels.Q4_K:
						at = []int{0, 2}
					case kernels.Q6_K:
						at = []int{208}
					}
					for _, o := range at {
						w.Q[b+o], w.Q[b+o+1] = 0x00, 0x20
					}
				}
				x := make([]float32, n*cols)
				for i := range n {
					v := float32(1 - 2*(i%2)) // rows of +1, rows of -1
					if i >= n/2 {
						v *= 1000
					}
					for c := range cols {
						x[i*cols+c] = v
					}
				}
				xr := roundRows(t, dt, x, n, cols)
				ref, mag := refQuant(t, xr, n, w)
				for _, packed := range []bool{false, true} {
					name := fmt.Sprintf("%s/%dx%d/fill %#x", dt, rows, cols, fill)
					if packed {
						kernels.Pack(w)
						name += "/packed"
					}
					dst := make([]float32, n*rows)
					require.NoError(t, impl.MatMul(pool, dst, x, n, w), name)
					expectDotsClose(t, name, dst, ref, mag, cols, LimitF32)
				}
			}
		}
	}
}

// TestMatMulQuant checks dst = x · Wᵀ with quantized weights (every type of
// QuantTypes, and a matrix of parts of mixed types as a fused projection of
// a Q4_K_M file) over QuantCases on 1 and 3 threads (with 3, Q8_0, Q5_0,
// Q4_K and Q6_K weights packed by kernels.Pack), with guard regions
// and garbage in dst, against two references: the float64 product of the
// dequantized weights with x rounded as the kernels round activations
// (kernels.RoundActivations: float32 rounding apart, LimitF32), and, for
// products of at least 64 outputs, with x as given (QuantNMSE: what
// quantizing the activations costs). A NaN in
// a row of x makes every output of that row NaN; a matrix whose Cols is
// not a whole number of blocks, or whose bytes are short, is an error.
func TestMatMulQuant(t *testing.T, impl Ops) {
	r := newRand(t)
	pools := []*kernels.Pool{nil, kernels.NewPool(3)}
	defer pools[1].Close()
	mixed := func(rows, cols int) *kernels.Mat {
		// q, k, v as llama.cpp's Q4_K_M writes them: Q4_K, Q4_K, Q6_K
		// (Q5_0 and Q8_0 where the rows are not whole Q4_K blocks).
		a, b := kernels.Q4_K, kernels.Q6_K
		if cols%256 != 0 {
			a, b = kernels.Q5_0, kernels.Q8_0
		}
		r1 := max(1, rows/2)
		r2 := max(0, (rows-r1)/2)
		parts := []*kernels.Mat{randQuantMat(t, r, r1, cols, a)}
		if r2 > 0 {
			parts = append(parts, randQuantMat(t, r, r2, cols, a))
		}
		if r3 := rows - r1 - r2; r3 > 0 {
			parts = append(parts, randQuantMat(t, r, r3, cols, b))
		}
		return &kernels.Mat{Rows: rows, Cols: cols, Parts: parts}
	}
	const mixedType = kernels.DType(255) // stands for a matrix of parts
	for _, dt := range append(QuantTypes, mixedType) {
		for _, c := range QuantCases {
			bl := 32
			if dt != mixedType {
				bl = dt.BlockLen()
			}
			if c.Cols%bl != 0 {
				continue
			}
			for _, p := range pools {
				var w *kernels.Mat
				kind := "mixed"
				if dt == mixedType {
					w = mixed(c.Rows, c.Cols)
				} else {
					kind = dt.String()
					w = randQuantMat(t, r, c.Rows, c.Cols, dt)
				}
				name := fmt.Sprintf("%s/n=%d/%dx%d/threads=%d", kind, c.N, c.Rows, c.Cols, p.Threads())
				if p != nil { // the threaded runs take the packed Q8_0 kernel where the CPU has it
					kernels.Pack(w)
					name += "/packed"
				}
				x := make([]float32, c.N*c.Cols)
				fill(r, x)
				dst := newGuarded(c.N * c.Rows)
				fill(r, dst.s())
				require.NoError(t, impl.MatMul(p, dst.s(), x, c.N, w), name)
				dst.check(t, name)
				if c.N*c.Rows >= 64 {
					// (QuantNMSE is what quantizing activations costs on
					// average; a few outputs scatter about it.)
					ref, mag := refQuant(t, x, c.N, w)
					expectDotsClose(t, name+"/unrounded x", dst.s(), ref, mag, c.Cols, kernels.QuantNMSE)
				}
				if dt != mixedType {
					xr := roundRows(t, dt, x, c.N, c.Cols)
					ref, mag := refQuant(t, xr, c.N, w)
					expectDotsClose(t, name+"/rounded x", dst.s(), ref, mag, c.Cols, LimitF32)
				} else {
					// Each part against its own rounding of x.
					r0 := 0
					for _, pt := range w.Parts {
						xr := roundRows(t, pt.DType, x, c.N, c.Cols)
						ref, mag := refQuant(t, xr, c.N, pt)
						got := make([]float32, c.N*pt.Rows)
						for i := range c.N {
							copy(got[i*pt.Rows:(i+1)*pt.Rows], dst.s()[i*c.Rows+r0:i*c.Rows+r0+pt.Rows])
						}
						expectDotsClose(t, name+"/rounded x/part "+pt.DType.String(), got, ref, mag, c.Cols, LimitF32)
						r0 += pt.Rows
					}
				}
				// A NaN in x poisons its output row, and only it.
				i0 := r.IntN(c.N)
				x[i0*c.Cols+r.IntN(c.Cols)] = float32(math.NaN())
				require.NoError(t, impl.MatMul(p, dst.s(), x, c.N, w), name)
				for i := range c.N {
					for j, v := range dst.s()[i*c.Rows : (i+1)*c.Rows] {
						if (i == i0) != math.IsNaN(float64(v)) {
							t.Fatalf("%s/NaN in row %d: output (%d, %d) = %v", name, i0, i, j, v)
						}
					}
				}
			}
		}
	}

	// Malformed quantized matrices: an error wrapping ErrShape, dst untouched.
	good := randQuantMat(t, r, 4, 256, kernels.Q4_K)
	x := make([]float32, 2*256)
	dst := make([]float32, 2*4)
	for _, bad := range []struct {
		name string
		w    *kernels.Mat
	}{
		{"short Q4_K bytes", &kernels.Mat{Rows: 4, Cols: 256, DType: kernels.Q4_K, Q: good.Q[:len(good.Q)-1]}},
		{"columns not whole blocks", &kernels.Mat{Rows: 4, Cols: 256, DType: kernels.Q4_K, Q: good.Q, Parts: []*kernels.Mat{{Rows: 4, Cols: 128, DType: kernels.Q4_K, Q: good.Q}}}},
		{"Q8_0 of 33 columns", &kernels.Mat{Rows: 4, Cols: 33, DType: kernels.Q8_0, Q: make([]byte, 1000)}},
		{"parts short of rows", &kernels.Mat{Rows: 5, Cols: 256, Parts: []*kernels.Mat{good}}},
		{"nil part", &kernels.Mat{Rows: 4, Cols: 256, Parts: []*kernels.Mat{nil}}},
		{"F32 part", &kernels.Mat{Rows: 4, Cols: 256, Parts: []*kernels.Mat{{Rows: 4, Cols: 256, F32: make([]float32, 1024)}}}},
	} {
		for i := range dst {
			dst[i] = 42
		}
		err := impl.MatMul(nil, dst, x, 2, bad.w)
		require.ErrorIs(t, err, kernels.ErrShape, bad.name)
		for _, v := range dst {
			require.Equal(t, float32(42), v, bad.name)
		}
	}
}
