package kernels

// AxpyRowsMany is AxpyRows for n rows of weights at once, a small matrix
// product: dst[i·ldd + c] += Σ_j a[i·lda + j] · m[j·stride + c] for i < n,
// c < width and j < rows, where rows counts the rows of m that fit (j·stride
// + width ≤ len(m)) and that the last row of a has a weight for ((n−1)·lda
// + j < len(a)). Each row of m is read once for all n rows of dst instead of
// once for each: attention over a KV-cache block that the queries of
// several sessions share (forks of one prompt) is two of these, the
// queries times the block's transposed keys, and the probabilities times
// its values, each read where it lies (rows of a lda apart). Rows of dst
// that do not fit leave dst untouched.
func (b Impl) AxpyRowsMany(dst []float32, ldd, width int, a []float32, lda, n int, m []float32, stride int) {
	if rows := b.manyRows(len(dst), ldd, width, len(a), lda, n, len(m), stride); rows > 0 {
		axpyRowsManyOf(b, dst, ldd, width, a, lda, n, m, stride, rows)
	}
}

// AxpyRowsManyBF16 is AxpyRowsMany on rows of BF16 elements, each widened
// to float32 exactly (once for all n rows of dst).
func (b Impl) AxpyRowsManyBF16(dst []float32, ldd, width int, a []float32, lda, n int, m []uint16, stride int) {
	if rows := b.manyRows(len(dst), ldd, width, len(a), lda, n, len(m), stride); rows > 0 {
		axpyRowsManyOf(b, dst, ldd, width, a, lda, n, m, stride, rows)
	}
}

// manyRows returns how many rows of m an AxpyRowsMany call reads: those
// that fit in m and that every row of a has a weight for; none when a row
// of dst does not fit in dst.
func (Impl) manyRows(lenDst, ldd, width, lenA, lda, n, lenM, stride int) int {
	if n <= 0 || width <= 0 || ldd < width || lda < 0 || (n-1)*ldd+width > lenDst {
		return 0
	}
	return rowsFitting(lenA-(n-1)*lda, stride, width, lenM)
}

// axpyRowsManyGoOf is AxpyRowsMany in Go over rows rows of m: each row of
// dst in turn (axpyRows with its row of a).
func axpyRowsManyGoOf[T float32 | uint16](b Impl, dst []float32, ldd, width int, a []float32, lda, n int, m []T, stride, rows int) {
	for i := range n {
		d, w := dst[i*ldd:i*ldd+width], a[i*lda:i*lda+rows]
		switch m := any(m).(type) {
		case []float32:
			b.axpyRows(d, w, m, stride)
		case []uint16:
			b.axpyRowsBF16(d, w, m, stride)
		}
	}
}
