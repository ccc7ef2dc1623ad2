package kernels

// AxpyRowsMany is AxpyRows for n rows of weights at once: dst[i·ldd + c] +=
// Σ_j at[j·n + i] · m[j·stride + c] for i < n, c < width and j < len(at)/n,
// the n weights of row j of m side by side in at (the weights transposed).
// Each row of m is read once for all n rows of dst instead of once for
// each: attention over a KV-cache block that the queries of several
// sessions share (forks of one prompt) is two of these, the scores against
// the block's transposed keys and the probabilities' sum of its values.
// Rows of m that do not fit (j·stride + width > len(m)) and rows of dst
// that do not fit are not touched.
func (b Impl) AxpyRowsMany(dst []float32, ldd, width int, at []float32, n int, m []float32, stride int) {
	if rows := b.manyRows(len(dst), ldd, width, len(at), n, len(m), stride); rows > 0 {
		axpyRowsManyOf(b, dst, ldd, width, at[:rows*n], n, m, stride)
	}
}

// AxpyRowsManyBF16 is AxpyRowsMany on rows of BF16 elements, each widened
// to float32 exactly (once for all n rows of dst).
func (b Impl) AxpyRowsManyBF16(dst []float32, ldd, width int, at []float32, n int, m []uint16, stride int) {
	if rows := b.manyRows(len(dst), ldd, width, len(at), n, len(m), stride); rows > 0 {
		axpyRowsManyOf(b, dst, ldd, width, at[:rows*n], n, m, stride)
	}
}

// manyRows returns how many rows of m an AxpyRowsMany call reads: those
// with a weight for every row of dst that also fit in m, none when a row
// of dst does not fit in dst.
func (Impl) manyRows(lenDst, ldd, width, lenAt, n, lenM, stride int) int {
	if n <= 0 || width <= 0 || ldd < width || (n-1)*ldd+width > lenDst {
		return 0
	}
	return rowsFitting(lenAt/n, stride, width, lenM)
}

// axpyRowsManyGoOf is AxpyRowsMany in Go: each row of dst in turn, its
// weights gathered from at.
func axpyRowsManyGoOf[T float32 | uint16](b Impl, dst []float32, ldd, width int, at []float32, n int, m []T, stride int) {
	rows := len(at) / n
	var buf [256]float32
	a := buf[:]
	if rows > len(buf) {
		a = make([]float32, rows)
	}
	a = a[:rows]
	for i := range n {
		for j := range a {
			a[j] = at[j*n+i]
		}
		d := dst[i*ldd : i*ldd+width]
		switch m := any(m).(type) {
		case []float32:
			b.axpyRows(d, a, m, stride)
		case []uint16:
			b.axpyRowsBF16(d, a, m, stride)
		}
	}
}
