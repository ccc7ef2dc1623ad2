package kernels

import "math"

// This file holds the pure-Go kernels: the whole Generic implementation, and the
// tails and edge cases of the assembly implementations.

// dotGo returns Σ a[i]·b[i] over len(a) elements (b at least as long),
// with four float32 partial sums.
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotBF16Go returns Σ a[i]·bf16(w[i]) over len(a) elements.
func dotBF16Go(a []float32, w []uint16) float32 {
	w = w[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * math.Float32frombits(uint32(w[i])<<16)
		s1 += a[i+1] * math.Float32frombits(uint32(w[i+1])<<16)
		s2 += a[i+2] * math.Float32frombits(uint32(w[i+2])<<16)
		s3 += a[i+3] * math.Float32frombits(uint32(w[i+3])<<16)
	}
	for ; i < len(a); i++ {
		s0 += a[i] * math.Float32frombits(uint32(w[i])<<16)
	}
	return (s0 + s1) + (s2 + s3)
}

// matMulGoRows computes dst[i*R+r] for all i < n and rows r in [r0, r1).
// Rows are taken in blocks of 4 so each x row loaded is used 4 times, and
// each W block is reused across all n rows of x while it sits in cache.
func matMulGoRows(dst, x []float32, n int, w *Mat, r0, r1 int) {
	K, R := w.Cols, w.Rows
	for r := r0; r < r1; r++ {
		if w.DType == BF16 {
			wr := w.BF16[r*K : r*K+K]
			for i := range n {
				dst[i*R+r] = dotBF16Go(x[i*K:i*K+K], wr)
			}
		} else {
			wr := w.F32[r*K : r*K+K]
			for i := range n {
				dst[i*R+r] = dotGo(x[i*K:i*K+K], wr)
			}
		}
	}
}

func axpyGo(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] += a * v
	}
}

func scaleGo(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}

func addGo(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func sumSquaresGo(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * x[i]
		s1 += x[i+1] * x[i+1]
		s2 += x[i+2] * x[i+2]
		s3 += x[i+3] * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// rmsScale returns 1/sqrt(ss/n + eps).
func rmsScale(ss float32, n int, eps float32) float32 {
	return float32(1 / math.Sqrt(float64(ss)/float64(n)+float64(eps)))
}

func mulScaledGo(dst, x, weight []float32, s float32) {
	x, weight = x[:len(dst)], weight[:len(dst)]
	for i := range dst {
		dst[i] = x[i] * s * weight[i]
	}
}

// maxScanGo returns the largest element of x that is not NaN (-Inf when
// none is) and whether x holds a NaN.
func maxScanGo(x []float32) (m float32, nan bool) {
	m = float32(math.Inf(-1))
	for _, v := range x {
		switch {
		case v != v:
			nan = true
		case v > m:
			m = v
		}
	}
	return m, nan
}

// expShiftedGo sets dst[i] = exp(x[i] - m), m the largest element of x
// (NaN where x has a NaN), and returns their sum; len(dst) ≥ len(x).
func expShiftedGo(dst, x []float32) float64 {
	return expShiftedByGo(dst, x, shiftOf(maxScanGo(x)))
}

// shiftOf is a softmax's shift from maxScan's result: the largest element,
// NaN where there is a NaN (which then spreads to every output).
func shiftOf(m float32, nan bool) float32 {
	if nan {
		return float32(math.NaN())
	}
	return m
}

// expShiftedByGo sets dst[i] = exp(x[i] - m) and returns their sum;
// len(dst) ≥ len(x).
func expShiftedByGo(dst, x []float32, m float32) float64 {
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v - m))
		dst[i] = float32(e)
		sum += e
	}
	return sum
}

func softmaxGo(x []float32) {
	if len(x) == 0 {
		return
	}
	inv := float32(1 / expShiftedGo(x, x))
	for i := range x {
		x[i] *= inv
	}
}

func siluGo(g float32) float32 {
	return g / (1 + float32(math.Exp(float64(-g))))
}

func swigluGo(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	for i := range dst {
		dst[i] = siluGo(gate[i]) * up[i]
	}
}

// rowsFitting returns how many rows j < want satisfy j*stride + k ≤ size.
func rowsFitting(want, stride, k, size int) int {
	if want <= 0 || stride < 0 || k > size {
		return 0
	}
	if stride == 0 {
		return want
	}
	return min(want, (size-k)/stride+1)
}

func dotRowsGo(dst, x, m []float32, stride int) {
	k := len(x)
	for j := range dst {
		dst[j] = dotGo(x, m[j*stride:j*stride+k])
	}
}

func axpyRowsGo(dst, a, m []float32, stride int) {
	k := len(dst)
	for j, v := range a {
		axpyGo(dst, v, m[j*stride:j*stride+k])
	}
}

func dotRowsBF16Go(dst, x []float32, m []uint16, stride int) {
	k := len(x)
	for j := range dst {
		dst[j] = dotBF16Go(x, m[j*stride:j*stride+k])
	}
}

func axpyRowsBF16Go(dst, a []float32, m []uint16, stride int) {
	k := len(dst)
	for j, v := range a {
		axpyBF16Go(dst, v, m[j*stride:j*stride+k])
	}
}

// axpyBF16Go computes dst[i] += a·bf16(x[i]) for i < len(dst).
func axpyBF16Go(dst []float32, a float32, x []uint16) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] += a * math.Float32frombits(uint32(v)<<16)
	}
}
