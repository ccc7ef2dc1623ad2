// Package kerneltest is an implementation-agnostic conformance suite for the
// kernels of the inference engine, in the manner of gonum's blas/testblas and
// llama.cpp's test-backend-ops.
//
// Each op is run over a table of cases (odd sizes, n = 1, sizes that are not
// a multiple of any vector width, large K; F32 and BF16 weights; 1 and
// several threads) on fresh random inputs (the seed is logged; set
// KERNELTEST_SEED to replay) and compared with a float64 reference by the
// normalised mean squared error
//
//	NMSE = Σ (got - ref)² / Σ ref²
//
// (limit 1e-7; for BF16 weights the reference uses the same BF16-rounded
// weights, so the limit is the same up to a small factor). NaN and Inf must
// propagate as in the reference, and guard regions around every output must
// keep their sentinel values.
//
// An implementation's test file calls it with one line per op:
//
//	func TestMatMul(t *testing.T) { kerneltest.TestMatMul(t, impl) }
package kerneltest

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/ndbg/ndbg/kernels"
)

// Ops is the set of kernels under test. kernels.Impl implements it.
type Ops interface {
	MatMul(p *kernels.Pool, dst, x []float32, n int, w *kernels.Mat) error
	Dot(a, b []float32) float32
	Axpy(dst []float32, a float32, x []float32)
	Scale(x []float32, a float32)
	Add(dst, a, b []float32)
	RMSNorm(dst, x, weight []float32, eps float32)
	Softmax(x []float32)
	SwiGLU(dst, gate, up []float32)
	DotRows(dst, x, m []float32, stride int)
	AxpyRows(dst, a, m []float32, stride int)
}

// Limits of the normalised mean squared error.
const (
	LimitF32  = 1e-7
	LimitBF16 = 1e-7
)

// guard is the number of sentinel elements on each side of an output.
const guard = 17

// sentinel is a NaN with a recognisable payload, written around outputs.
const sentinelBits uint32 = 0x7fa5a5a5

// DefaultSeed seeds the suite's random cases unless KERNELTEST_SEED says
// otherwise: fixed, so that a run of the tests is the same run on every
// machine and a rare draw cannot fail someone else's build.
// KERNELTEST_SEED=random draws a new seed per test (logged), which is how
// the suite explores (kernels/README.md: many seeds in a loop).
const DefaultSeed = 20261129

// newRand returns a generator seeded from KERNELTEST_SEED (a number, or
// "random" for a fresh seed) or DefaultSeed, and logs the seed.
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(DefaultSeed)
	switch s := os.Getenv("KERNELTEST_SEED"); s {
	case "":
	case "random":
		seed = uint64(rand.Int64())
	default:
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KERNELTEST_SEED=%q: not a number or \"random\": %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with KERNELTEST_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x6b65726e656c73))
}

// guarded is a float32 slice with sentinel regions before and after it.
type guarded struct {
	buf []float32
	n   int
}

func newGuarded(n int) *guarded {
	g := &guarded{buf: make([]float32, n+2*guard), n: n}
	for i := range g.buf {
		g.buf[i] = math.Float32frombits(sentinelBits)
	}
	return g
}

// s returns the usable slice (len = cap = n, so appends cannot hide writes).
func (g *guarded) s() []float32 { return g.buf[guard : guard+g.n : guard+g.n] }

// check reports writes into the guard regions.
func (g *guarded) check(t testing.TB, what string) {
	t.Helper()
	for i := range guard {
		if b := math.Float32bits(g.buf[i]); b != sentinelBits {
			t.Fatalf("%s: wrote before the output: element %d = %v", what, i-guard, g.buf[i])
		}
		if b := math.Float32bits(g.buf[guard+g.n+i]); b != sentinelBits {
			t.Fatalf("%s: wrote after the output: element %d = %v", what, g.n+i, g.buf[guard+g.n+i])
		}
	}
}

func fill(r *rand.Rand, x []float32) {
	for i := range x {
		x[i] = float32(2*r.Float64() - 1)
	}
}

// NMSE returns Σ (got-ref)² / Σ ref² over the finite reference values, and
// whether the non-finite values match: NaN where ref is NaN, and the same
// infinity where ref is infinite.
func NMSE(got []float32, ref []float64) (nmse float64, specialsMatch bool, first int) {
	var num, den float64
	first = -1
	for i, r := range ref {
		g := float64(got[i])
		switch {
		case math.IsNaN(r):
			if !math.IsNaN(g) && first < 0 {
				first = i
			}
		case math.IsInf(r, 0):
			if g != r && first < 0 {
				first = i
			}
		default:
			if math.IsNaN(g) || math.IsInf(g, 0) {
				if first < 0 {
					first = i
				}
				continue
			}
			num += (g - r) * (g - r)
			den += r * r
		}
	}
	if den == 0 {
		if num == 0 {
			return 0, first < 0, first
		}
		return math.Inf(1), first < 0, first
	}
	return num / den, first < 0, first
}

// expectDotsClose is expectClose for outputs that are dot products of k
// terms, mag holding each output's sum of its terms' magnitudes Σ|x·w|.
// An output's share of the NMSE denominator is its reference squared,
// but at least mag²/k, about what a sum of k terms of random signs
// squares to. Float32 rounding is proportional to mag, not to the sum,
// so where a product cancels (an integer block sum of 0 makes a
// quantized product's reference exactly 0; a float one comes near 0 now
// and then) NMSE over a handful of outputs would be 0/0 or huge,
// whatever the kernel's precision: seen on a 1×32 Q4_0 product, whose
// AVX2 kernel's offset left 1.5e-8 against a reference of 0. On outputs
// that do not cancel the floor changes nothing.
func expectDotsClose(t testing.TB, what string, got []float32, ref, mag []float64, k int, limit float64) {
	t.Helper()
	if _, ok, first := NMSE(got, ref); !ok {
		t.Fatalf("%s: element %d = %v, reference %v (NaN/Inf mismatch)", what, first, got[first], ref[first])
	}
	var num, den float64
	for i, r := range ref {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			continue
		}
		d := float64(got[i]) - r
		num += d * d
		den += max(r*r, mag[i]*mag[i]/float64(max(k, 1)))
	}
	if nmse := num / den; !(num == 0 || nmse <= limit) {
		t.Fatalf("%s: NMSE %.3g > %.3g (each output's energy at least its terms' magnitude²/%d)", what, nmse, limit, k)
	}
}

// expectClose fails t when got differs from ref beyond limit or in its
// non-finite values.
func expectClose(t testing.TB, what string, got []float32, ref []float64, limit float64) {
	t.Helper()
	nmse, ok, first := NMSE(got, ref)
	if !ok {
		t.Fatalf("%s: element %d = %v, reference %v (NaN/Inf mismatch)", what, first, got[first], ref[first])
	}
	if !(nmse <= limit) {
		t.Fatalf("%s: NMSE %.3g > %.3g", what, nmse, limit)
	}
}
