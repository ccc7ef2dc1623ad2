//go:build noasm || !amd64

package kernels

func supportedISAs() []isa { return nil }

func (b Backend) matMul(p *Pool, dst, x []float32, n int, w *Mat) {
	matMulGeneric(p, dst, x, n, w)
}

func (b Backend) dot(x, y []float32) float32                 { return dotGo(x, y) }
func (b Backend) axpy(dst []float32, a float32, x []float32) { axpyGo(dst, a, x) }
func (b Backend) scale(x []float32, a float32)               { scaleGo(x, a) }
func (b Backend) add(dst, x, y []float32)                    { addGo(dst, x, y) }
func (b Backend) sumSquares(x []float32) float32             { return sumSquaresGo(x) }
func (b Backend) mulScaled(dst, x, w []float32, s float32)   { mulScaledGo(dst, x, w, s) }

var native, fast = Generic(), Generic()

func (b Backend) dotRows(dst, x, m []float32, stride int)  { dotRowsGo(dst, x, m, stride) }
func (b Backend) axpyRows(dst, a, m []float32, stride int) { axpyRowsGo(dst, a, m, stride) }
func (b Backend) swiglu(dst, gate, up []float32)           { swigluGo(dst, gate, up) }
func (b Backend) softmax(x []float32)                      { softmaxGo(x) }
