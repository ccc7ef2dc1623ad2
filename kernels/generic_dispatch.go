package kernels

// matMulGeneric spreads the pure-Go product over p by blocks of W rows.
func matMulGeneric(p *Pool, dst, x []float32, n int, w *Mat) {
	grain := max(4, 65536/max(1, w.Cols*max(1, n)))
	p.For(w.Rows, grain, func(lo, hi int) { matMulGoRows(dst, x, n, w, lo, hi) })
}
