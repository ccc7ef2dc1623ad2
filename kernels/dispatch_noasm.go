//go:build noasm || !amd64

package kernels

func supportedISAs() []isa { return nil }

func (b Impl) matMul(p *Pool, dst, x []float32, n int, w *Mat) {
	matMulGeneric(p, dst, x, n, w)
}

func (b Impl) qdot(dt DType, d []float32, ldd int, w []byte, rb, rows int, a *qact, K, i0, nx int) {
	qdotGo(dt, d, ldd, w, rb, rows, a, K, i0, nx)
}

func (b Impl) dot(x, y []float32) float32                 { return dotGo(x, y) }
func (b Impl) axpy(dst []float32, a float32, x []float32) { axpyGo(dst, a, x) }
func (b Impl) scale(x []float32, a float32)               { scaleGo(x, a) }
func (b Impl) add(dst, x, y []float32)                    { addGo(dst, x, y) }
func (b Impl) sumSquares(x []float32) float32             { return sumSquaresGo(x) }
func (b Impl) mulScaled(dst, x, w []float32, s float32)   { mulScaledGo(dst, x, w, s) }

var native, fast = Generic(), Generic()

func (b Impl) dotRows(dst, x, m []float32, stride int)  { dotRowsGo(dst, x, m, stride) }
func (b Impl) axpyRows(dst, a, m []float32, stride int) { axpyRowsGo(dst, a, m, stride) }
func (b Impl) dotRowsBF16(dst, x []float32, m []uint16, stride int) {
	dotRowsBF16Go(dst, x, m, stride)
}
func (b Impl) axpyRowsBF16(dst, a []float32, m []uint16, stride int) {
	axpyRowsBF16Go(dst, a, m, stride)
}
func (b Impl) swiglu(dst, gate, up []float32) { swigluGo(dst, gate, up) }
func (b Impl) softmax(x []float32)            { softmaxGo(x) }

func (b Impl) maxScan(x []float32) (float32, bool) { return maxScanGo(x) }

func (b Impl) expShifted(dst, x []float32) float64 { return expShiftedGo(dst, x) }

func (b Impl) expShiftedBy(dst, x []float32, m float32) float64 { return expShiftedByGo(dst, x, m) }

// quantRowQ8_0 has no assembly here: the caller quantizes in Go.
func quantRowQ8_0(x []float32, q []int8, qstride int, d, s []float32, dstride int) bool { return false }

// quantRowQ8K has no assembly here: the caller quantizes in Go.
func quantRowQ8K(x []float32, q []int8, qstride int, d []float32, dstride int, bs []int16, bstride int) bool {
	return false
}

func packs(DType) bool { return false }

func packsForAVX2() bool { return false }

func (b Impl) qdotPacked(m *Mat, d []float32, ldd, lo, hi int, a *qact, K, i0, nx int) int {
	return lo
}

func axpyRowsManyOf[T float32 | uint16](b Impl, dst []float32, ldd, width int, a []float32, lda, n int, m []T, stride, rows int) {
	axpyRowsManyGoOf(b, dst, ldd, width, a, lda, n, m, stride, rows)
}
