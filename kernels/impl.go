package kernels

// isa is an instruction-set level of the kernels.
type isa uint8

const (
	isaGeneric    isa = iota // pure Go
	isaAVX2                  // AVX2 + FMA3
	isaAVX512                // AVX-512F
	isaAVX512BF16            // AVX-512F, and AVX-512 BF16 for BF16 matrix products
)

// Impl is one implementation of the kernels (one instruction-set level). Its zero value is the pure-Go
// implementation. Impls are plain values, safe for concurrent use.
type Impl struct {
	isa isa
}

// Generic returns the pure-Go implementation.
func Generic() Impl { return Impl{isaGeneric} }

// Native returns the fastest implementation this CPU supports (Generic under the
// noasm build tag or on other architectures).
func Native() Impl { return native }

// Impls returns every implementation this CPU can run, slowest first: Generic,
// then the assembly levels the CPU supports.
func Impls() []Impl {
	bs := []Impl{Generic()}
	for _, l := range supportedISAs() {
		bs = append(bs, Impl{l})
	}
	return bs
}

// Name returns "go", "avx2" or "avx512".
func (b Impl) Name() string {
	switch b.isa {
	case isaAVX2:
		return "avx2"
	case isaAVX512:
		return "avx512"
	case isaAVX512BF16:
		return "avx512bf16"
	}
	return "go"
}

// MatMulNMSE returns the bound on the normalised mean squared error of
// b.MatMul against a float64 reference on the same weights (of dtype dt):
// 1e-7 (float32 rounding) for every implementation except avx512bf16 on BF16
// weights, which rounds x to BF16 as well (VDPBF16PS): 1e-5 there; and
// QuantNMSE for quantized weights, whose products round x to 8 bits per
// value (see RoundActivations).
func (b Impl) MatMulNMSE(dt DType) float64 {
	if dt.Quantized() {
		return QuantNMSE
	}
	if b.isa == isaAVX512BF16 && dt == BF16 {
		return 1e-5
	}
	return 1e-7
}

// Fast returns the fastest implementation this CPU supports when BF16 matrix
// products may round the activations to BF16 too: avx512bf16 (about twice
// the FLOP rate of Native on BF16 prefill, NMSE ≤ 1e-5 instead of 1e-7) on
// CPUs with AVX-512 BF16, Native elsewhere. Everything other than BF16
// products with n > 4 is the same as Native.
func Fast() Impl { return fast }

// String returns Name.
func (b Impl) String() string { return b.Name() }

// MatMul computes dst = x · Wᵀ, that is
//
//	dst[i*w.Rows+r] = Σ_c x[i*w.Cols+c] · W[r, c]   for i < n, r < w.Rows,
//
// with float32 accumulation (BF16 weights are widened to float32 exactly).
// x is n × w.Cols and dst n × w.Rows, both row-major; only their first
// n*Cols and n*Rows elements are used. dst must not overlap x or the
// weights. n = 1 is decode (a memory-bound matrix-vector product); n > 1 is
// prefill (a compute-bound blocked matrix product). Work is spread over p's
// threads (p may be nil). Bad sizes are reported as an error wrapping
// ErrShape and leave dst untouched.
func (b Impl) MatMul(p *Pool, dst, x []float32, n int, w *Mat) error {
	if done, err := PrepareMatMul(dst, x, n, w); done || err != nil {
		return err
	}
	if w.Parts != nil || w.DType.Quantized() {
		b.matMulQuant(p, dst, x, n, w)
		return nil
	}
	b.matMul(p, dst, x, n, w)
	return nil
}

// Dot returns Σ a[i]·b[i] over i < min(len(a), len(b)), accumulated in float32.
func (b Impl) Dot(x, y []float32) float32 {
	n := min(len(x), len(y))
	return b.dot(x[:n], y[:n])
}

// Axpy computes dst[i] += a·x[i] for i < min(len(dst), len(x)).
func (b Impl) Axpy(dst []float32, a float32, x []float32) {
	n := min(len(dst), len(x))
	b.axpy(dst[:n], a, x[:n])
}

// Scale computes x[i] *= a for every i.
func (b Impl) Scale(x []float32, a float32) { b.scale(x, a) }

// Add computes dst[i] = a[i] + b[i] for i < min(len(dst), len(a), len(b)).
// dst may be a or b.
func (b Impl) Add(dst, x, y []float32) {
	n := min(len(dst), len(x), len(y))
	b.add(dst[:n], x[:n], y[:n])
}

// RMSNorm computes dst[i] = x[i] / sqrt(Σ_j x[j]²/n + eps) · weight[i] for
// i < n = min(len(dst), len(x), len(weight)). dst may be x.
func (b Impl) RMSNorm(dst, x, weight []float32, eps float32) {
	n := min(len(dst), len(x), len(weight))
	if n == 0 {
		return
	}
	dst, x, weight = dst[:n], x[:n], weight[:n]
	s := rmsScale(b.sumSquares(x), n, eps)
	b.mulScaled(dst, x, weight, s)
}

// Softmax computes, in place, x[i] = exp(x[i] - m) / Σ_j exp(x[j] - m) with
// m = max_j x[j] (numerically stable). A NaN anywhere makes every output
// NaN; -Inf entries (masked positions) give 0.
func (b Impl) Softmax(x []float32) { b.softmax(x) }

// ExpShifted sets dst[i] = exp(x[i] - m) for i < len(x), m the largest
// element of x, and returns their sum: softmax(x) times that sum (a
// probability from it needs one division, not a pass over x). A NaN
// anywhere makes every output NaN; -Inf entries give 0. dst must hold
// len(x) elements and may be x.
func (b Impl) ExpShifted(dst, x []float32) float64 {
	if len(x) == 0 {
		return 0
	}
	return b.expShifted(dst[:len(x)], x)
}

// SoftmaxParts is Softmax that also returns what merging the softmaxes of
// the parts of one row takes (split-K attention): the part's shift m, its
// largest element (NaN where it holds a NaN), and the sum of exp(x[i] − m).
// An empty x gives (-Inf, 0).
func (b Impl) SoftmaxParts(x []float32) (m float32, sum float64) {
	m = shiftOf(b.maxScan(x))
	if len(x) == 0 {
		return m, 0
	}
	sum = b.expShiftedBy(x, x, m)
	b.scale(x, float32(1/sum))
	return m, sum
}

// Argmax returns the index of the largest element of x, the lowest among
// equal ones; NaNs are passed over, and -1 means x has nothing else (the
// greedy choice of a token from its logits).
func (b Impl) Argmax(x []float32) int {
	m, _ := b.maxScan(x)
	for i, v := range x {
		if v == m {
			return i
		}
	}
	return -1
}

// SwiGLU computes dst[i] = silu(gate[i]) · up[i], silu(g) = g / (1 + e^-g),
// for i < min(len(dst), len(gate), len(up)). dst may be gate or up.
func (b Impl) SwiGLU(dst, gate, up []float32) {
	n := min(len(dst), len(gate), len(up))
	b.swiglu(dst[:n], gate[:n], up[:n])
}

// DotRows computes dst[j] = Σ_c x[c] · m[j·stride + c] for c < len(x): the
// dot products of x with rows of m that start stride elements apart (the
// scores of a query against keys in a KV cache). It computes the first
// min(len(dst), rows of m that fit) outputs, a row fitting when
// j·stride + len(x) ≤ len(m); a negative stride computes nothing.
func (b Impl) DotRows(dst, x, m []float32, stride int) {
	rows := rowsFitting(len(dst), stride, len(x), len(m))
	if rows == 0 {
		return
	}
	if len(x) == 0 {
		clear(dst[:rows])
		return
	}
	b.dotRows(dst[:rows], x, m, stride)
}

// AxpyRows computes dst[c] += Σ_j a[j] · m[j·stride + c] for c < len(dst):
// dst plus a weighted sum of rows of m that start stride elements apart (the
// attention-weighted sum of values in a KV cache). It uses the first
// min(len(a), rows of m that fit) weights, a row fitting when
// j·stride + len(dst) ≤ len(m); a negative stride adds nothing.
func (b Impl) AxpyRows(dst, a, m []float32, stride int) {
	rows := rowsFitting(len(a), stride, len(dst), len(m))
	if rows == 0 || len(dst) == 0 {
		return
	}
	b.axpyRows(dst, a[:rows], m, stride)
}

// DotRowsBF16 is DotRows on rows of BF16 elements (a KV cache kept in
// BF16): dst[j] = Σ_c x[c] · m[j·stride + c], each element of m widened to
// float32 exactly, accumulated in float32.
func (b Impl) DotRowsBF16(dst, x []float32, m []uint16, stride int) {
	rows := rowsFitting(len(dst), stride, len(x), len(m))
	if rows == 0 {
		return
	}
	if len(x) == 0 {
		clear(dst[:rows])
		return
	}
	b.dotRowsBF16(dst[:rows], x, m, stride)
}

// AxpyRowsBF16 is AxpyRows on rows of BF16 elements: dst[c] += Σ_j a[j] ·
// m[j·stride + c], each element of m widened to float32 exactly.
func (b Impl) AxpyRowsBF16(dst, a []float32, m []uint16, stride int) {
	rows := rowsFitting(len(a), stride, len(dst), len(m))
	if rows == 0 || len(dst) == 0 {
		return
	}
	b.axpyRowsBF16(dst, a[:rows], m, stride)
}

// DotRows computes dst[j] = x · m[j·stride:] with the Native implementation; see
// Impl.DotRows.
func DotRows(dst, x, m []float32, stride int) { native.DotRows(dst, x, m, stride) }

// AxpyRows computes dst += Σ_j a[j]·m[j·stride:] with the Native implementation;
// see Impl.AxpyRows.
func AxpyRows(dst, a, m []float32, stride int) { native.AxpyRows(dst, a, m, stride) }

// MatMul computes dst = x · Wᵀ with the Native implementation; see Impl.MatMul.
func MatMul(p *Pool, dst, x []float32, n int, w *Mat) error {
	return native.MatMul(p, dst, x, n, w)
}

// Dot returns Σ a[i]·b[i] with the Native implementation; see Impl.Dot.
func Dot(a, b []float32) float32 { return native.Dot(a, b) }

// Axpy computes dst += a·x with the Native implementation; see Impl.Axpy.
func Axpy(dst []float32, a float32, x []float32) { native.Axpy(dst, a, x) }

// Scale computes x *= a with the Native implementation; see Impl.Scale.
func Scale(x []float32, a float32) { native.Scale(x, a) }

// Add computes dst = a + b with the Native implementation; see Impl.Add.
func Add(dst, a, b []float32) { native.Add(dst, a, b) }

// RMSNorm computes dst = x / rms(x) · weight with the Native implementation; see
// Impl.RMSNorm.
func RMSNorm(dst, x, weight []float32, eps float32) { native.RMSNorm(dst, x, weight, eps) }

// Softmax computes a numerically stable softmax in place; see Impl.Softmax.
func Softmax(x []float32) { native.Softmax(x) }

// ExpShifted sets dst = exp(x - max x) and returns its sum with the Native
// implementation; see Impl.ExpShifted.
func ExpShifted(dst, x []float32) float64 { return native.ExpShifted(dst, x) }

// Argmax returns the index of x's largest element with the Native
// implementation; see Impl.Argmax.
func Argmax(x []float32) int { return native.Argmax(x) }

// SwiGLU computes dst = silu(gate) · up with the Native implementation; see
// Impl.SwiGLU.
func SwiGLU(dst, gate, up []float32) { native.SwiGLU(dst, gate, up) }

// Silu returns g / (1 + e^-g).
func Silu(g float32) float32 { return siluGo(g) }
