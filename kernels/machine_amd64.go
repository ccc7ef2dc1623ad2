//go:build !noasm

package kernels

//go:noescape
func readAVX2(x *float32, n int) float32

func fmaLoopAVX2(iters int)
func fmaLoopAVX512(iters int)

// readSum sums x with the widest read kernel available.
func readSum(x []float32) float32 {
	if !hasAVX2FMA {
		return readSumGo(x)
	}
	nv := len(x) &^ 63
	var s float32
	if nv > 0 {
		s = readAVX2(&x[0], nv)
	}
	return s + readSumGo(x[nv:])
}

// fmaLoop runs iters iterations of independent FMAs and returns the FLOPs
// done (0 when the CPU has no FMA kernel).
func fmaLoop(iters int) float64 {
	switch {
	case hasAVX512F:
		fmaLoopAVX512(iters)
		return float64(iters) * 384
	case hasAVX2FMA:
		fmaLoopAVX2(iters)
		return float64(iters) * 192
	}
	return fmaLoopGo(iters)
}
