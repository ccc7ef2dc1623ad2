package kernels

import (
	"fmt"
	"math"
)

// This file holds llama.cpp's block-quantized weight formats (ggml's
// block_q8_0, block_q4_0, block_q5_0, block_q4_K and block_q6_K): the byte
// layout of one block, the reference quantizers that llama.cpp's
// llama-quantize runs without an importance matrix (ggml-quants.c's
// quantize_row_*_ref, which these follow operation by operation in float32,
// so that a tensor quantized here is byte for byte the tensor llama.cpp
// writes), and the dequantizers. A row of a quantized matrix is Cols /
// BlockLen blocks, stored one after the other; rows follow each other.
//
// Block layouts (little-endian; f16 is an IEEE half):
//
//	Q8_0 (32 elements, 34 bytes):  d f16, qs[32] int8;             x = d·q
//	Q4_0 (32 elements, 18 bytes):  d f16, qs[16] nibbles;          x = d·(q − 8),
//	    element j < 16 the low nibble of qs[j], element 16 + j its high nibble
//	Q5_0 (32 elements, 22 bytes):  d f16, qh u32, qs[16] nibbles;  x = d·(q − 16),
//	    the nibbles as Q4_0's, bit j of qh the fifth bit of element j
//	Q4_K (256 elements, 144 bytes): d f16, dmin f16, scales[12], qs[128];
//	    eight sub-blocks of 32 with a 6-bit scale sc and a 6-bit min m each
//	    (packed as llama.cpp's get_scale_min_k4 reads them), x = d·sc·q − dmin·m;
//	    qs[32c + l] holds element 64c + l in its low nibble and 64c + 32 + l in its high one
//	Q6_K (256 elements, 210 bytes): ql[128], qh[64], scales[16] int8, d f16;
//	    sixteen sub-blocks of 16 with an 8-bit signed scale, x = d·sc·(q − 32),
//	    q the low four bits from ql and the high two from qh (see dequantQ6K)

// Block geometry of the quantized dtypes.
const (
	qk0 = 32  // elements of a Q8_0, Q4_0 or Q5_0 block
	qkK = 256 // elements of a K-quant super-block

	bytesQ8_0 = 2 + qk0                    // 34
	bytesQ4_0 = 2 + qk0/2                  // 18
	bytesQ5_0 = 2 + 4 + qk0/2              // 22
	bytesQ4_K = 2 + 2 + 12 + qkK/2         // 144
	bytesQ6_K = qkK/2 + qkK/4 + qkK/16 + 2 // 210
)

// Quantized reports whether d is a block-quantized type.
func (d DType) Quantized() bool { return d >= Q8_0 && d <= Q6_K }

// BlockLen is the number of elements of one block of d: 1 for F32 and BF16,
// 32 for Q8_0, Q4_0 and Q5_0, 256 for Q4_K and Q6_K (0 for an unknown
// DType). A quantized matrix's Cols must be a multiple of it.
func (d DType) BlockLen() int {
	switch d {
	case F32, BF16:
		return 1
	case Q8_0, Q4_0, Q5_0:
		return qk0
	case Q4_K, Q6_K:
		return qkK
	}
	return 0
}

// BlockBytes is the size of one block of d in bytes (Size for F32 and BF16).
func (d DType) BlockBytes() int {
	switch d {
	case F32, BF16:
		return d.Size()
	case Q8_0:
		return bytesQ8_0
	case Q4_0:
		return bytesQ4_0
	case Q5_0:
		return bytesQ5_0
	case Q4_K:
		return bytesQ4_K
	case Q6_K:
		return bytesQ6_K
	}
	return 0
}

// RowBytes is the size in bytes of n elements of d (n a multiple of
// BlockLen; 0 otherwise or for an unknown DType).
func (d DType) RowBytes(n int) int {
	bl := d.BlockLen()
	if bl == 0 || n < 0 || n%bl != 0 {
		return 0
	}
	return n / bl * d.BlockBytes()
}

// ParseQuantDType maps a quantized type's name ("Q8_0", "Q4_0", "Q5_0",
// "Q4_K", "Q6_K", case-insensitive) to its DType.
func ParseQuantDType(s string) (DType, error) {
	for _, d := range []DType{Q8_0, Q4_0, Q5_0, Q4_K, Q6_K} {
		if equalFold(s, d.String()) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("kernels: unknown quantized type %q (have Q8_0, Q4_0, Q5_0, Q4_K, Q6_K)", s)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		ca, cb := a[i], b[i]
		if 'a' <= ca && ca <= 'z' {
			ca -= 'a' - 'A'
		}
		if 'a' <= cb && cb <= 'z' {
			cb -= 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}

// F16ToF32 widens an IEEE half-precision value to float32 (exact).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN (payload kept)
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	v := float32(mant) * (1.0 / (1 << 24)) // subnormal: mant · 2⁻²⁴, exact
	if sign != 0 {
		v = -v
	}
	return v
}

// F32ToF16 rounds f to the nearest IEEE half, ties to even, as ggml's
// GGML_FP32_TO_FP16 does: values beyond the half range become ±Inf, NaN
// stays NaN (quiet).
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return sign | 0x7e00
	case a >= 0x477ff000: // ≥ 65520: rounds to Inf
		return sign | 0x7c00
	case a >= 0x38800000: // normal half: exponent ≥ -14
		// Rebias the exponent and round the 13 dropped mantissa bits.
		v := a - (112 << 23)
		r := v >> 13
		rem := v & 0x1fff
		if rem > 0x1000 || rem == 0x1000 && r&1 != 0 {
			r++
		}
		return sign | uint16(r)
	case a < 0x33000000: // < 2^-25: rounds to zero (2^-25 itself is a tie to 0)
		return sign
	}
	// Subnormal half: the value in units of 2^-24, rounded to nearest even.
	exp := a >> 23
	mant := a&0x7fffff | 0x800000 // 24 bits, value = mant · 2^(exp-150)
	shift := 126 - exp            // value / 2^-24 = mant >> shift (shift 14…24)
	r := mant >> shift
	rem := mant & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && r&1 != 0 {
		r++
	}
	return sign | uint16(r)
}

// nearestInt is ggml's nearest_int: float32 to the nearest integer, ties to
// even, by adding 1.5·2²³ (valid for |f| ≤ 4194303).
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x7fffff) - 0x400000
}

// roundf is C's roundf: to the nearest integer, ties away from zero.
func roundf(f float32) float32 { return float32(math.Round(float64(f))) }

// QuantizeRow quantizes src into dst as llama.cpp's reference quantizer for
// dt does (quantize_row_*_ref, what llama-quantize runs without an
// importance matrix): len(src) must be a multiple of dt.BlockLen() and dst
// exactly dt.RowBytes(len(src)) long. It quantizes whole blocks, so a
// matrix is quantized by calling it on all of it or row by row alike.
func QuantizeRow(dt DType, dst []byte, src []float32) error {
	if !dt.Quantized() {
		return fmt.Errorf("%w: %v is not a quantized type", ErrShape, dt)
	}
	if len(src)%dt.BlockLen() != 0 || len(dst) != dt.RowBytes(len(src)) {
		return fmt.Errorf("%w: %v: %d values into %d bytes (blocks of %d values, %d bytes)",
			ErrShape, dt, len(src), len(dst), dt.BlockLen(), dt.BlockBytes())
	}
	bl, bb := dt.BlockLen(), dt.BlockBytes()
	for i := 0; i < len(src)/bl; i++ {
		x, y := src[i*bl:(i+1)*bl], dst[i*bb:(i+1)*bb]
		switch dt {
		case Q8_0:
			quantQ8_0(y, x)
		case Q4_0:
			quantQ4_0(y, x)
		case Q5_0:
			quantQ5_0(y, x)
		case Q4_K:
			quantQ4K(y, x)
		case Q6_K:
			quantQ6K(y, x)
		}
	}
	return nil
}

// DequantizeRow writes the values of the blocks in src into dst:
// len(dst) must be a multiple of dt.BlockLen() and src exactly
// dt.RowBytes(len(dst)) long.
func DequantizeRow(dt DType, dst []float32, src []byte) error {
	if !dt.Quantized() {
		return fmt.Errorf("%w: %v is not a quantized type", ErrShape, dt)
	}
	if len(dst)%dt.BlockLen() != 0 || len(src) != dt.RowBytes(len(dst)) {
		return fmt.Errorf("%w: %v: %d bytes into %d values (blocks of %d values, %d bytes)",
			ErrShape, dt, len(src), len(dst), dt.BlockLen(), dt.BlockBytes())
	}
	dequantRow(dt, dst, src)
	return nil
}

// dequantRow is DequantizeRow without the checks.
func dequantRow(dt DType, dst []float32, src []byte) {
	bl, bb := dt.BlockLen(), dt.BlockBytes()
	for i := 0; i < len(dst)/bl; i++ {
		y, x := dst[i*bl:(i+1)*bl], src[i*bb:(i+1)*bb]
		switch dt {
		case Q8_0:
			d := F16ToF32(le16(x))
			for j, q := range x[2:34] {
				y[j] = float32(int8(q)) * d
			}
		case Q4_0:
			d := F16ToF32(le16(x))
			for j, q := range x[2:18] {
				y[j] = float32(int(q&15)-8) * d
				y[j+16] = float32(int(q>>4)-8) * d
			}
		case Q5_0:
			d := F16ToF32(le16(x))
			qh := le32(x[2:])
			for j, q := range x[6:22] {
				h0 := int(qh>>j&1) << 4
				h1 := int(qh>>(j+16)&1) << 4
				y[j] = float32(int(q&15)|h0-16) * d
				y[j+16] = float32(int(q>>4)|h1-16) * d
			}
		case Q4_K:
			dequantQ4K(y, x)
		case Q6_K:
			dequantQ6K(y, x)
		}
	}
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func put16(b []byte, v uint16) { b[0], b[1] = byte(v), byte(v>>8) }

// quantQ8_0 is quantize_row_q8_0_ref on one block.
func quantQ8_0(y []byte, x []float32) {
	var amax float32
	for _, v := range x[:qk0] {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	put16(y, F32ToF16(d))
	for j, v := range x[:qk0] {
		y[2+j] = byte(int8(roundf(float32(v * id))))
	}
}

// absMax returns the element of x with the largest magnitude (the first of
// equal ones) and that magnitude, as ggml's quantizers find it.
func absMax(x []float32) (mx, amax float32) {
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax, mx = a, v
		}
	}
	return mx, amax
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// quantQ4_0 is quantize_row_q4_0_ref on one block.
func quantQ4_0(y []byte, x []float32) {
	mx, _ := absMax(x[:qk0])
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	put16(y, F32ToF16(d))
	for j := range qk0 / 2 {
		x0 := float32(x[j] * id)
		x1 := float32(x[j+16] * id)
		y[2+j] = min(15, truncU8(x0+8.5)) | min(15, truncU8(x1+8.5))<<4
	}
}

// truncU8 is C's (uint8_t)(int8_t)f for the small non-negative values the
// quantizers convert (truncation toward zero).
func truncU8(f float32) uint8 { return uint8(int8(int32(f))) }

// quantQ5_0 is quantize_row_q5_0_ref on one block.
func quantQ5_0(y []byte, x []float32) {
	mx, _ := absMax(x[:qk0])
	d := mx / -16
	var id float32
	if d != 0 {
		id = 1 / d
	}
	put16(y, F32ToF16(d))
	var qh uint32
	for j := range qk0 / 2 {
		x0 := float32(x[j] * id)
		x1 := float32(x[j+16] * id)
		q0 := min(31, truncU8(x0+16.5))
		q1 := min(31, truncU8(x1+16.5))
		y[6+j] = q0&15 | (q1&15)<<4
		qh |= uint32(q0>>4) << j
		qh |= uint32(q1>>4) << (j + 16)
	}
	y[2], y[3], y[4], y[5] = byte(qh), byte(qh>>8), byte(qh>>16), byte(qh>>24)
}

// scaleMinK4 is ggml's get_scale_min_k4: sub-block j's 6-bit scale and
// min from a Q4_K block's 12 packed bytes.
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// makeQKX2 is ggml's make_qkx2_quants: the scale and (negated) min of n
// values quantized to 0…nmax with a weighted least-squares search over
// nstep+1 candidate scales; L receives the levels.
func makeQKX2(n, nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		for i := range n {
			L[i] = 0
		}
		return 0, -mn
	}
	fnmax := float32(nmax)
	iscale := fnmax / (mx - mn)
	scale = 1 / iscale
	var bestErr float32
	for i := range n {
		l := nearestInt(float32(iscale * (x[i] - mn)))
		L[i] = uint8(max(0, min(int32(nmax), l)))
		diff := float32(float32(scale*float32(L[i]))+mn) - x[i]
		diff = float32(diff * diff)
		bestErr += float32(weights[i] * diff)
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+fnmax) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := nearestInt(float32(iscale * (x[i] - mn)))
			l = max(0, min(int32(nmax), l))
			Laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curErr float32
			for i := range n {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				diff = float32(diff * diff)
				curErr += float32(weights[i] * diff)
			}
			if curErr < bestErr {
				copy(L[:n], Laux[:n])
				bestErr = curErr
				scale = thisScale
				mn = thisMin
			}
		}
	}
	return scale, -mn
}

// quantQ4K is quantize_row_q4_K_ref on one super-block.
func quantQ4K(y []byte, x []float32) {
	var L [qkK]uint8
	var Laux [32]uint8
	var weights [32]float32
	var mins, scales [qkK / 32]float32
	var maxScale, maxMin float32
	for j := range qkK / 32 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2(32, 15, xs, weights[:], L[32*j:32*j+32], Laux[:], -1, 0.1, 20)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := y[4:16]
	clear(sc)
	for j := range qkK / 32 {
		ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	put16(y, F32ToF16(maxScale/63))
	put16(y[2:], F32ToF16(maxMin/63))
	dAll, mAll := F16ToF32(le16(y)), F16ToF32(le16(y[2:]))
	for j := range qkK / 32 {
		s, m := scaleMinK4(j, sc)
		d := float32(dAll * float32(s))
		if d == 0 {
			continue
		}
		dm := float32(mAll * float32(m))
		for ii := range 32 {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(max(0, min(15, l)))
		}
	}
	q := y[16:]
	for j := 0; j < qkK; j += 64 {
		for l := range 32 {
			q[l] = L[j+l] | L[j+l+32]<<4
		}
		q = q[32:]
	}
}

// dequantQ4K is dequantize_row_q4_K on one super-block.
func dequantQ4K(y []float32, x []byte) {
	d, mn := F16ToF32(le16(x)), F16ToF32(le16(x[2:]))
	sc, q := x[4:16], x[16:144]
	for c := range 4 {
		s0, m0 := scaleMinK4(2*c, sc)
		s1, m1 := scaleMinK4(2*c+1, sc)
		d1, mm1 := float32(d*float32(s0)), float32(mn*float32(m0))
		d2, mm2 := float32(d*float32(s1)), float32(mn*float32(m1))
		qs := q[32*c : 32*c+32]
		for l, b := range qs {
			y[64*c+l] = float32(d1*float32(b&15)) - mm1
			y[64*c+32+l] = float32(d2*float32(b>>4)) - mm2
		}
	}
}

// makeQX is ggml's make_qx_quants with rmse_type 1 and no importance
// weights (the weights are x²), as Q6_K's reference quantizer calls it:
// levels in L (biased by nmax) and the scale.
func makeQX(n, nmax int, x []float32, L []int8) float32 {
	mx, amax := absMax(x[:n])
	if amax < 1e-15 {
		for i := range n {
			L[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / mx
	var sumLX, sumL2 float32
	for i := range n {
		l := nearestInt(float32(iscale * x[i]))
		l = max(-int32(nmax), min(int32(nmax)-1, l))
		L[i] = int8(l + int32(nmax))
		w := float32(x[i] * x[i])
		fl := float32(l)
		sumLX += float32(float32(w*x[i]) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / mx
		sumLX, sumL2 = 0, 0
		for i := range n {
			l := nearestInt(float32(iscale * x[i]))
			l = max(-int32(nmax), min(int32(nmax)-1, l))
			w := float32(x[i] * x[i])
			fl := float32(l)
			sumLX += float32(float32(w*x[i]) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i := range n {
				l := nearestInt(float32(iscale * x[i]))
				L[i] = int8(int32(nmax) + max(-int32(nmax), min(int32(nmax)-1, l)))
			}
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}

// quantQ6K is quantize_row_q6_K_ref on one super-block.
func quantQ6K(y []byte, x []float32) {
	var L [qkK]int8
	var scales [qkK / 16]float32
	var maxScale, maxAbsScale float32
	for ib := range qkK / 16 {
		s := makeQX(16, 32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
		scales[ib] = s
		if a := abs32(s); a > maxAbsScale {
			maxAbsScale, maxScale = a, s
		}
	}
	ql, qh, sc := y[0:128], y[128:192], y[192:208]
	if maxAbsScale < 1e-15 {
		clear(y[:bytesQ6_K])
		return
	}
	iscale := -128 / maxScale
	put16(y[208:], F32ToF16(1/iscale))
	for ib := range qkK / 16 {
		sc[ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	dAll := F16ToF32(le16(y[208:]))
	for j := range qkK / 16 {
		d := float32(dAll * float32(int8(sc[j])))
		if d == 0 {
			continue
		}
		for ii := range 16 {
			l := nearestInt(x[16*j+ii] / d)
			L[16*j+ii] = int8(max(-32, min(31, l)) + 32)
		}
	}
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			q1 := uint8(L[j+l]) & 0xf
			q2 := uint8(L[j+l+32]) & 0xf
			q3 := uint8(L[j+l+64]) & 0xf
			q4 := uint8(L[j+l+96]) & 0xf
			ql[l] = q1 | q3<<4
			ql[l+32] = q2 | q4<<4
			qh[l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 | (uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
		}
		ql, qh = ql[64:], qh[32:]
	}
}

// dequantQ6K is dequantize_row_q6_K on one super-block.
func dequantQ6K(y []float32, x []byte) {
	d := F16ToF32(le16(x[208:]))
	var q [qkK]uint8
	q6Values(x, &q)
	for v, qv := range q {
		y[v] = float32(d*float32(int8(x[192+v/16]))) * float32(int(qv)-32)
	}
}

// q6Values sets q to the 6-bit quants (0…63, before the offset of 32) of
// the Q6_K block blk, in the order of the values: per half h of 128, the
// low four bits of values l and l+32 (l < 32) in the low nibbles of ql
// bytes 64h+l and 64h+l+32 and those of l+64 and l+96 in their high
// nibbles, the high two bits of all four in qh byte 32h+l.
func q6Values(blk []byte, q *[qkK]uint8) {
	ql, qh := blk[0:128], blk[128:192]
	for h := range 2 {
		for l := range 32 {
			o, hb := 128*h+l, qh[32*h+l]
			q[o] = ql[64*h+l]&15 | (hb&3)<<4
			q[o+32] = ql[64*h+l+32]&15 | (hb>>2&3)<<4
			q[o+64] = ql[64*h+l]>>4 | (hb>>4&3)<<4
			q[o+96] = ql[64*h+l+32]>>4 | (hb>>6&3)<<4
		}
	}
}
