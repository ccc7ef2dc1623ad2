package kerneltest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// VectorLens are the lengths the vector ops are checked at: empty, below,
// at and around every vector width and unroll, and long.
var VectorLens = []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257, 1000, 4099}

// TestDot checks Σ a·b (NMSE over a batch of dots) and NaN/Inf propagation,
// and that unequal lengths use the common prefix.
func TestDot(t *testing.T, impl Ops) {
	r := newRand(t)
	for _, n := range VectorLens {
		got := make([]float32, 8)
		ref := make([]float64, 8)
		for k := range got {
			a, b := make([]float32, n), make([]float32, n)
			fill(r, a)
			fill(r, b)
			got[k] = impl.Dot(a, b)
			for i := range a {
				ref[k] += float64(a[i]) * float64(b[i])
			}
		}
		expectClose(t, fmt.Sprintf("n=%d", n), got, ref, LimitF32)
		if n == 0 {
			continue
		}
		a, b := make([]float32, n), make([]float32, n)
		fill(r, a)
		fill(r, b)
		j := r.IntN(n)
		a[j] = float32(math.NaN())
		require.True(t, math.IsNaN(float64(impl.Dot(a, b))), "NaN at %d of %d", j, n)
		a[j], b[j] = float32(math.Inf(1)), 1
		require.Equal(t, math.Inf(1), float64(impl.Dot(a, b)), "Inf at %d of %d", j, n)
	}
	require.Equal(t, float32(11), impl.Dot([]float32{1, 2, 3}, []float32{1, 5}))
}

// elementwise runs op on guarded outputs of each length and compares with
// the float64 reference ref(i, inputs...).
func elementwise(t *testing.T, name string, nin int, scale float32, op func(dst []float32, in [][]float32),
	ref func(i int, in [][]float32) float64, limit float64) {
	t.Helper()
	r := newRand(t)
	for _, n := range VectorLens {
		in := make([][]float32, nin)
		for k := range in {
			in[k] = make([]float32, n)
			fill(r, in[k])
			for i := range in[k] {
				in[k][i] *= scale
			}
		}
		dst := newGuarded(n)
		fill(r, dst.s())
		want := make([]float64, n)
		for i := range want {
			want[i] = ref(i, in)
		}
		op(dst.s(), in)
		what := fmt.Sprintf("%s/n=%d", name, n)
		dst.check(t, what)
		expectClose(t, what, dst.s(), want, limit)
		if n == 0 {
			continue
		}
		// NaN and Inf propagation: inputs with a NaN and an Inf.
		j := r.IntN(n)
		for k := range in {
			in[k][j] = float32(math.NaN())
			in[k][(j+1)%n] = float32(math.Inf(-1))
		}
		for i := range want {
			want[i] = ref(i, in)
		}
		dst = newGuarded(n)
		op(dst.s(), in)
		dst.check(t, what+"/nonfinite")
		expectClose(t, what+"/nonfinite", dst.s(), want, limit)
	}
}

// TestAxpy checks dst += a·x.
func TestAxpy(t *testing.T, impl Ops) {
	const a = 0.75
	elementwise(t, "axpy", 2, 1, func(dst []float32, in [][]float32) {
		copy(dst, in[1])
		impl.Axpy(dst, a, in[0])
	}, func(i int, in [][]float32) float64 {
		return float64(in[1][i]) + a*float64(in[0][i])
	}, LimitF32)
	d := []float32{1, 1, 1}
	impl.Axpy(d, 2, []float32{1, 2})
	require.Equal(t, []float32{3, 5, 1}, d, "common prefix")
}

// TestScale checks x *= a.
func TestScale(t *testing.T, impl Ops) {
	const a = -1.5
	elementwise(t, "scale", 1, 1, func(dst []float32, in [][]float32) {
		copy(dst, in[0])
		impl.Scale(dst, a)
	}, func(i int, in [][]float32) float64 { return a * float64(in[0][i]) }, LimitF32)
}

// TestAdd checks dst = a + b, including in place.
func TestAdd(t *testing.T, impl Ops) {
	elementwise(t, "add", 2, 1, func(dst []float32, in [][]float32) {
		impl.Add(dst, in[0], in[1])
	}, func(i int, in [][]float32) float64 { return float64(in[0][i]) + float64(in[1][i]) }, LimitF32)
	elementwise(t, "add/inplace", 2, 1, func(dst []float32, in [][]float32) {
		copy(dst, in[0])
		impl.Add(dst, dst, in[1])
	}, func(i int, in [][]float32) float64 { return float64(in[0][i]) + float64(in[1][i]) }, LimitF32)
	d := []float32{0, 0}
	impl.Add(d, []float32{1, 2, 3}, []float32{1})
	require.Equal(t, []float32{2, 0}, d, "common prefix")
}

// TestRMSNorm checks dst = x / sqrt(mean(x²) + eps) · weight.
func TestRMSNorm(t *testing.T, impl Ops) {
	const eps = 1e-5
	rms := func(x []float32) float64 {
		var s float64
		for _, v := range x {
			s += float64(v) * float64(v)
		}
		return math.Sqrt(s/float64(len(x)) + eps)
	}
	elementwise(t, "rmsnorm", 2, 1, func(dst []float32, in [][]float32) {
		impl.RMSNorm(dst, in[0], in[1], eps)
	}, func(i int, in [][]float32) float64 {
		return float64(in[0][i]) / rms(in[0]) * float64(in[1][i])
	}, LimitF32)
	elementwise(t, "rmsnorm/inplace", 2, 1, func(dst []float32, in [][]float32) {
		copy(dst, in[0])
		impl.RMSNorm(dst, dst, in[1], eps)
	}, func(i int, in [][]float32) float64 {
		return float64(in[0][i]) / rms(in[0]) * float64(in[1][i])
	}, LimitF32)
}

// refSoftmax returns x's softmax in float64, its shift m (the largest
// element, NaN where there is a NaN) and Σ exp(x[i] − m).
func refSoftmax(x []float32) (out []float64, m, sum float64) {
	m = math.Inf(-1)
	for _, v := range x {
		if float64(v) > m || v != v {
			m = float64(v)
		}
	}
	out = make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Exp(float64(v) - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out, m, sum
}

// TestSoftmax checks the softmax, masked (-Inf) entries and NaN.
func TestSoftmax(t *testing.T, impl Ops) {
	softmax := func(x []float32) []float64 { out, _, _ := refSoftmax(x); return out }
	r := newRand(t)
	for _, n := range VectorLens {
		x := newGuarded(n)
		for i := range x.s() {
			x.s()[i] = float32(20 * (2*r.Float64() - 1)) // wide range: stability
		}
		want := softmax(x.s())
		impl.Softmax(x.s())
		x.check(t, fmt.Sprintf("softmax/n=%d", n))
		expectClose(t, fmt.Sprintf("softmax/n=%d", n), x.s(), want, LimitF32)
		if n < 2 {
			continue
		}
		fill(r, x.s())
		x.s()[r.IntN(n)] = float32(math.Inf(-1)) // a masked position
		want = softmax(x.s())
		impl.Softmax(x.s())
		expectClose(t, fmt.Sprintf("softmax/masked/n=%d", n), x.s(), want, LimitF32)
		fill(r, x.s())
		x.s()[r.IntN(n)] = float32(math.NaN())
		impl.Softmax(x.s())
		for i, v := range x.s() {
			require.True(t, math.IsNaN(float64(v)), "softmax/nan/n=%d: element %d = %v", n, i, v)
		}
	}
	big := []float32{1000, 1000, -1000}
	impl.Softmax(big)
	require.InDeltaSlice(t, []float32{0.5, 0.5, 0}, big, 1e-7, "large logits")
}

// TestExpShifted checks dst = exp(x - max x) and its sum, into another
// slice (x unchanged) and in place, with masked (-Inf) entries and NaN. A
// CPU op, as Argmax.
func TestExpShifted(t *testing.T, impl interface {
	ExpShifted(dst, x []float32) float64
}) {
	ref := func(x []float32) ([]float64, float64) {
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		out := make([]float64, len(x))
		var s float64
		for i, v := range x {
			out[i] = math.Exp(float64(v) - m)
			s += out[i]
		}
		return out, s
	}
	r := newRand(t)
	for _, n := range VectorLens {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(20 * (2*r.Float64() - 1))
		}
		if n > 1 {
			x[r.IntN(n)] = float32(math.Inf(-1))
		}
		orig := slices.Clone(x)
		want, wantSum := ref(x)
		dst := newGuarded(n)
		sum := impl.ExpShifted(dst.s(), x)
		dst.check(t, fmt.Sprintf("expshifted/n=%d", n))
		require.Equal(t, orig, x, "expshifted/n=%d: x changed", n)
		expectClose(t, fmt.Sprintf("expshifted/n=%d", n), dst.s(), want, LimitF32)
		require.InEpsilon(t, wantSum+1e-300, sum+1e-300, 1e-6, "expshifted/n=%d: sum", n)
		sum = impl.ExpShifted(x, x) // in place
		expectClose(t, fmt.Sprintf("expshifted/in-place/n=%d", n), x, want, LimitF32)
		require.InEpsilon(t, wantSum+1e-300, sum+1e-300, 1e-6, "expshifted/in-place/n=%d: sum", n)
		if n == 0 {
			continue
		}
		fill(r, x)
		x[r.IntN(n)] = float32(math.NaN())
		sum = impl.ExpShifted(dst.s(), x)
		require.True(t, math.IsNaN(sum), "expshifted/nan/n=%d: sum %v", n, sum)
		for i, v := range dst.s() {
			require.True(t, math.IsNaN(float64(v)), "expshifted/nan/n=%d: element %d = %v", n, i, v)
		}
	}
}

// TestSoftmaxParts checks that SoftmaxParts leaves x's softmax and returns
// x's largest element and Σ exp(x[i] − max), with masked (-Inf) entries,
// NaN (every output and the shift NaN) and an empty x (-Inf, 0).
func TestSoftmaxParts(t *testing.T, impl interface {
	SoftmaxParts(x []float32) (float32, float64)
}) {
	r := newRand(t)
	for _, n := range VectorLens {
		what := fmt.Sprintf("softmaxparts/n=%d", n)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(20 * (2*r.Float64() - 1))
		}
		if n > 1 {
			x[r.IntN(n)] = float32(math.Inf(-1))
		}
		want, top, wantSum := refSoftmax(x)
		m, sum := impl.SoftmaxParts(x)
		require.Equal(t, top, float64(m), "%s: shift", what)
		if n == 0 {
			require.Zero(t, sum, what)
			continue
		}
		require.InEpsilon(t, wantSum, sum, 1e-6, "%s: sum", what)
		expectClose(t, what, x, want, LimitF32)
		fill(r, x)
		x[r.IntN(n)] = float32(math.NaN())
		m, sum = impl.SoftmaxParts(x)
		require.True(t, math.IsNaN(float64(m)) && math.IsNaN(sum), "%s/nan: shift %v, sum %v", what, m, sum)
		for i, v := range x {
			require.True(t, math.IsNaN(float64(v)), "%s/nan: element %d = %v", what, i, v)
		}
	}
}

// TestArgmax checks the index of the largest element: the lowest among
// ties, NaNs passed over (-1 when there is nothing else), at every
// position of the vectors (the kernel's blocks and its tail). Argmax is a
// CPU op (sampling reads logits on the host), not one of every device's Ops.
func TestArgmax(t *testing.T, impl interface{ Argmax(x []float32) int }) {
	argmax := func(x []float32) int {
		best := -1
		for i, v := range x {
			if v == v && (best < 0 || float64(v) > float64(x[best])) {
				best = i
			}
		}
		return best
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	r := newRand(t)
	for _, n := range VectorLens {
		x := make([]float32, n)
		fill(r, x)
		require.Equal(t, argmax(x), impl.Argmax(x), "argmax/n=%d", n)
		for i := range n { // the largest at every position, NaNs before and after it, a tie after it
			fill(r, x)
			x[i] = 2
			if i+1 < n {
				x[i+1+r.IntN(n-i-1)] = nan
				x[i+1+r.IntN(n-i-1)] = 2
			}
			if i > 0 {
				x[r.IntN(i)] = nan
			}
			require.Equal(t, i, impl.Argmax(x), "argmax/n=%d: largest at %d", n, i)
		}
		for i := range x {
			x[i] = -inf
		}
		require.Equal(t, min(0, n-1), impl.Argmax(x), "argmax/n=%d: all -Inf", n)
		for i := range x {
			x[i] = nan
		}
		require.Equal(t, -1, impl.Argmax(x), "argmax/n=%d: all NaN", n)
		if n > 1 {
			x[n-1] = -inf
			require.Equal(t, n-1, impl.Argmax(x), "argmax/n=%d: NaNs and one -Inf", n)
		}
	}
}

// TestSwiGLU checks dst = silu(gate) · up.
func TestSwiGLU(t *testing.T, impl Ops) {
	// Inputs in [-12, 12] exercise the tails of the sigmoid.
	elementwise(t, "swiglu", 2, 12, func(dst []float32, in [][]float32) {
		impl.SwiGLU(dst, in[0], in[1])
	}, func(i int, in [][]float32) float64 {
		g := float64(in[0][i])
		return g / (1 + math.Exp(-g)) * float64(in[1][i])
	}, LimitF32)
}

// TestAll runs every test of the suite as subtests.
func TestAll(t *testing.T, impl Ops) {
	t.Run("MatMul", func(t *testing.T) { TestMatMul(t, impl) })
	t.Run("Dot", func(t *testing.T) { TestDot(t, impl) })
	t.Run("Axpy", func(t *testing.T) { TestAxpy(t, impl) })
	t.Run("Scale", func(t *testing.T) { TestScale(t, impl) })
	t.Run("Add", func(t *testing.T) { TestAdd(t, impl) })
	t.Run("RMSNorm", func(t *testing.T) { TestRMSNorm(t, impl) })
	t.Run("Softmax", func(t *testing.T) { TestSoftmax(t, impl) })
	t.Run("SwiGLU", func(t *testing.T) { TestSwiGLU(t, impl) })
	t.Run("DotRows", func(t *testing.T) { TestDotRows(t, impl) })
	t.Run("AxpyRows", func(t *testing.T) { TestAxpyRows(t, impl) })
	if bf, ok := impl.(RowsBF16Ops); ok {
		t.Run("DotRowsBF16", func(t *testing.T) { TestDotRowsBF16(t, bf) })
		t.Run("AxpyRowsBF16", func(t *testing.T) { TestAxpyRowsBF16(t, bf) })
	}
}
