package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// TestF16 checks the half conversions against x448/float16 (an independent
// IEEE implementation): every half widened, and float32s of every exponent
// (normal, subnormal and overflowing halves, ties) rounded to nearest even.
func TestF16(t *testing.T) {
	for h := range 1 << 16 {
		got, want := F16ToF32(uint16(h)), float16.Frombits(uint16(h)).Float32()
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	check := func(f float32) {
		got, want := F32ToF16(f), float16.Fromfloat32(f).Bits()
		if f != f {
			require.True(t, got&0x7c00 == 0x7c00 && got&0x3ff != 0, "F32ToF16(NaN) = %#04x", got)
			return
		}
		if got != want {
			t.Fatalf("F32ToF16(%v = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for _, f := range []float32{0, -0, 1, -1, 65504, 65519.99, 65520, 65536, 1e10, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), 6.1035156e-05, 6.097555e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 1e-30} {
		check(f)
		check(-f)
	}
	for range 1 << 20 {
		check(math.Float32frombits(r.Uint32()))
		// Around the half range, where the interesting roundings are.
		e := uint32(100 + r.IntN(45))
		check(math.Float32frombits(e<<23 | r.Uint32()&0x807fffff))
		// Ties: exactly half-way between two halves.
		check(math.Float32frombits(e<<23 | r.Uint32()&0x807fe000 | 0x1000))
	}
}

// TestNearestInt: ggml's nearest_int rounds to nearest, ties to even.
func TestNearestInt(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want int32
	}{{0, 0}, {0.5, 0}, {1.5, 2}, {2.5, 2}, {-0.5, 0}, {-1.5, -2}, {-2.5, -2}, {3.49, 3}, {-3.51, -4}, {4194303, 4194303}, {-4194303, -4194303}} {
		require.Equal(t, c.want, nearestInt(c.f), "nearestInt(%v)", c.f)
	}
}

// TestQuantizeRoundTrip: each type's dequantized values are within its
// step of the originals (Q8_0: max/127 per 32; Q4_0: max/8; Q5_0: max/16;
// Q4_K: the 4-bit step of its sub-block; Q6_K: the 6-bit step), a zero
// block stays zero, and the reconstruction error decreases with the bits.
func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 256 * 64
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	clear(x[256 : 2*256]) // a zero super-block
	nmse := map[DType]float64{}
	for _, dt := range []DType{Q8_0, Q4_0, Q5_0, Q4_K, Q6_K} {
		q := make([]byte, dt.RowBytes(n))
		require.NoError(t, QuantizeRow(dt, q, x))
		y := make([]float32, n)
		require.NoError(t, DequantizeRow(dt, y, q))
		var num, den float64
		for i := range x {
			num += float64(y[i]-x[i]) * float64(y[i]-x[i])
			den += float64(x[i]) * float64(x[i])
		}
		nmse[dt] = num / den
		for i := 256; i < 512; i++ {
			require.Zero(t, y[i], "%v: zero block dequantized to %v", dt, y[i])
		}
		// Per block: |y - x| ≤ the step (plus the F16 rounding of the scale).
		bl := dt.BlockLen()
		for b := 0; b < n; b += bl {
			_, amax := absMax(x[b : b+bl])
			var step float32
			switch dt {
			case Q8_0:
				step = amax / 127
			case Q4_0:
				step = amax / 8
			case Q5_0:
				step = amax / 16
			case Q4_K:
				step = 2 * amax / 15
			case Q6_K:
				step = amax / 31
			}
			for i := b; i < b+bl; i++ {
				if e := abs32(y[i] - x[i]); e > step*1.01+1e-6 {
					t.Fatalf("%v: element %d: %v → %v, error %v > step %v", dt, i, x[i], y[i], e, step)
				}
			}
		}
	}
	t.Logf("NMSE: %v", nmse)
	require.Less(t, nmse[Q8_0], 1e-4)
	require.Less(t, nmse[Q6_K], nmse[Q5_0])
	require.Less(t, nmse[Q5_0], nmse[Q4_0])
	require.Less(t, nmse[Q4_K], nmse[Q4_0])
	require.Less(t, nmse[Q8_0], nmse[Q6_K])
}

// TestQuantizeLayout pins each block's layout on values whose quants are
// known: the ramp -max … max in one block of each type.
func TestQuantizeLayout(t *testing.T) {
	// Q8_0 of 0, 1, ..., 31 scaled so that max = 127: quants are the values.
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i) * 127 / 31
	}
	q := make([]byte, bytesQ8_0)
	require.NoError(t, QuantizeRow(Q8_0, q, x))
	require.Equal(t, F32ToF16(1), le16(q))
	for i := range 32 {
		require.Equal(t, int8(roundf(x[i])), int8(q[2+i]))
	}
	// Q4_0: max = -8 at element 0 gives d = 1; element j holds round(x)+8.
	for i := range x {
		x[i] = float32(i%16) - 8
	}
	q = make([]byte, bytesQ4_0)
	require.NoError(t, QuantizeRow(Q4_0, q, x))
	require.Equal(t, F32ToF16(1), le16(q))
	for j := range 16 {
		require.Equal(t, byte(j)|byte(j)<<4, q[2+j], "qs[%d]", j) // elements j and j+16 are both j-8
	}
	// Q5_0: max = -16, d = 1; the fifth bits in qh.
	for i := range x {
		x[i] = float32(i) - 16
	}
	q = make([]byte, bytesQ5_0)
	require.NoError(t, QuantizeRow(Q5_0, q, x))
	require.Equal(t, F32ToF16(1), le16(q))
	require.Equal(t, uint32(0xffff0000), le32(q[2:])) // elements 16..31 are ≥ 16
	for j := range 16 {
		require.Equal(t, byte(j)|byte(j)<<4, q[6+j])
	}
	// Q6_K and Q4_K: dequantizing reproduces values on their grid exactly.
	y := make([]float32, 256)
	for i := range y {
		y[i] = float32(i%64) - 32
	}
	q = make([]byte, bytesQ6_K)
	require.NoError(t, QuantizeRow(Q6_K, q, y))
	back := make([]float32, 256)
	require.NoError(t, DequantizeRow(Q6_K, back, q))
	for i := range y {
		require.InDelta(t, y[i], back[i], 0.02*32, "Q6_K element %d", i)
	}
	for i := range y {
		y[i] = float32(i % 16)
	}
	q = make([]byte, bytesQ4_K)
	require.NoError(t, QuantizeRow(Q4_K, q, y))
	require.NoError(t, DequantizeRow(Q4_K, back, q))
	for i := range y {
		require.InDelta(t, y[i], back[i], 0.1, "Q4_K element %d", i)
	}
}

// TestQuantizeErrors: sizes that are not whole blocks, and non-quantized
// types, are ErrShape errors.
func TestQuantizeErrors(t *testing.T) {
	require.ErrorIs(t, QuantizeRow(Q8_0, make([]byte, 34), make([]float32, 31)), ErrShape)
	require.ErrorIs(t, QuantizeRow(Q8_0, make([]byte, 33), make([]float32, 32)), ErrShape)
	require.ErrorIs(t, QuantizeRow(F32, make([]byte, 128), make([]float32, 32)), ErrShape)
	require.ErrorIs(t, DequantizeRow(Q4_K, make([]float32, 256), make([]byte, 143)), ErrShape)
	require.ErrorIs(t, RoundActivations(Q4_K, make([]float32, 100), make([]float32, 100)), ErrShape)
	_, err := ParseQuantDType("q3_k")
	require.Error(t, err)
	d, err := ParseQuantDType("q4_k")
	require.NoError(t, err)
	require.Equal(t, Q4_K, d)
}

// TestQuantizeActQ8_0Assembly: the assembly row quantizer writes the bytes
// of the Go one in qact's pair layout (tiles of 1-4 rows, odd and even
// block counts), and leaves a row with a NaN or an Inf to Go, which makes
// its block's scale NaN.
func TestQuantizeActQ8_0Assembly(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, K := range []int{32, 64, 96, 512, 1376} {
		for _, n := range []int{1, 3, 4, 7} {
			x := make([]float32, n*K)
			for i := range x {
				x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()))
			}
			clear(x[:32]) // a zero block
			if n > 2 {
				x[K+5] = float32(math.Inf(1))
				x[2*K+K/2] = float32(math.NaN())
			}
			np := pairsOf(K)
			mk := func() *qact {
				return &qact{q: make([]int8, n*np*64), d: make([]float32, n*np*2+qactPad), s: make([]float32, n*np*2+qactPad)}
			}
			slow, fast := mk(), mk()
			quantizeActQ8_0(slow, x, n, K, 0, n, false)
			quantizeActQ8_0(fast, x, n, K, 0, n, true)
			require.Equal(t, slow.q, fast.q, "K=%d n=%d", K, n)
			for i := range slow.d {
				require.Equal(t, math.Float32bits(slow.d[i]), math.Float32bits(fast.d[i]), "K=%d n=%d d[%d]", K, n, i)
				require.Equal(t, math.Float32bits(slow.s[i]), math.Float32bits(fast.s[i]), "K=%d n=%d s[%d]", K, n, i)
			}
		}
	}
}

// TestQuantizeActQ8KAssembly is TestQuantizeActQ8_0Assembly for Q8_K: the
// same bytes from the assembly (ties of magnitude between signs included:
// the first wins), a zero block or a NaN or Inf left to Go.
func TestQuantizeActQ8KAssembly(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, K := range []int{256, 512, 2048} {
		for _, n := range []int{1, 3, 4, 7} {
			x := make([]float32, n*K)
			for i := range x {
				x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()))
			}
			x[3], x[7] = -100, 100 // equal magnitudes: -100 comes first
			if n > 1 {
				x[K+300%K], x[K+10] = 50, -50
			}
			if n > 2 {
				clear(x[2*K : 2*K+256])
				x[3*K-1] = float32(math.NaN())
			}
			nb := K / qkK
			mk := func() *qact {
				return &qact{q: make([]int8, n*K), d: make([]float32, n*nb), bs: make([]int16, n*K/16)}
			}
			slow, fast := mk(), mk()
			quantizeActQ8K(slow, x, n, K, 0, n, false)
			quantizeActQ8K(fast, x, n, K, 0, n, true)
			require.Equal(t, slow.q, fast.q, "K=%d n=%d", K, n)
			require.Equal(t, slow.bs, fast.bs, "K=%d n=%d", K, n)
			for i := range slow.d {
				require.Equal(t, math.Float32bits(slow.d[i]), math.Float32bits(fast.d[i]), "K=%d n=%d d[%d]", K, n, i)
			}
		}
	}
}
