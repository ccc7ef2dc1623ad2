//go:build !noasm

package kernels

// Assembly kernels; see the .s files for their exact contracts.

//go:noescape
func gemvF32AVX512(dst, x, w *float32, rows, k, ldw int)

//go:noescape
func gemvBF16AVX512(dst, x *float32, w *uint16, rows, k, ldw int)

//go:noescape
func gemvF32AVX2(dst, x, w *float32, rows, k, ldw int)

//go:noescape
func gemvBF16AVX2(dst, x *float32, w *uint16, rows, k, ldw int)

//go:noescape
func gemmF32AVX512(k int, xp *float32, w *float32, ldw int, out *float32, acc int)

//go:noescape
func gemmBF16AVX512(k int, xp *float32, w *uint16, ldw int, out *float32, acc int)

//go:noescape
func gemmF32AVX2(k int, xp *float32, w *float32, ldw int, out *float32, ldo, acc int)

//go:noescape
func gemmBF16AVX2(k int, xp *float32, w *uint16, ldw int, out *float32, ldo, acc int)

//go:noescape
func dotAVX2(x, y *float32, n int) float32

//go:noescape
func sumSquaresAVX2(x *float32, n int) float32

//go:noescape
func axpyAVX2(dst, x *float32, a float32, n int)

//go:noescape
func scaleAVX2(x *float32, a float32, n int)

//go:noescape
func addAVX2(dst, a, b *float32, n int)

//go:noescape
func mulScaledAVX2(dst, x, w *float32, s float32, n int)

//go:noescape
func axpyRowsAVX2(dst, a, m *float32, rows, stride, k int)

//go:noescape
func axpyRowsBF16AVX2(dst, a *float32, m *uint16, rows, stride, k int)

//go:noescape
func axpyRowsBF16WideAVX2(dst, a *float32, m *uint16, rows, stride, k int)

//go:noescape
func axpyRowsBF16AVX512(dst, a *float32, m *uint16, rows, stride, k int)

//go:noescape
func swigluAVX2(dst, gate, up *float32, n int)

//go:noescape
func maxAVX2(x *float32, n int) (m float32, nan bool)

//go:noescape
func expSumAVX2(dst, x *float32, m float32, n int) float32

//go:noescape
func gemmF32AVX512Half(k int, xp *float32, w *float32, ldw int, out *float32, acc int)

//go:noescape
func gemmBF16AVX512Half(k int, xp *float32, w *uint16, ldw int, out *float32, acc int)

//go:noescape
func gemmF32AVX2Half(k int, xp *float32, w *float32, ldw int, out *float32, ldo, acc int)

//go:noescape
func gemmBF16AVX2Half(k int, xp *float32, w *uint16, ldw int, out *float32, ldo, acc int)

//go:noescape
func gemv4F32AVX512(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemv4BF16AVX512(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch2F32AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch3F32AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch4F32AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch5F32AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch6F32AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch7F32AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch8F32AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch4F32Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch5F32Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch6F32Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch7F32Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch8F32Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch4BF16Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch5BF16Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch6BF16Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch7BF16Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch8BF16Rows3AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch5F32Rows3AVX512(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch6F32Rows3AVX512(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch7F32Rows3AVX512(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch8F32Rows3AVX512(dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int)

//go:noescape
func gemvBatch5BF16Rows3AVX512(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch6BF16Rows3AVX512(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch7BF16Rows3AVX512(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch8BF16Rows3AVX512(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch2BF16AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch3BF16AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch4BF16AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch5BF16AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch6BF16AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch7BF16AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemvBatch8BF16AVX2(dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int)

//go:noescape
func gemmBF16DotAVX512(k2 int, xp *uint16, w *uint16, ldw int, out *float32, acc int)

//go:noescape
func gemmBF16DotAVX512Half(k2 int, xp *uint16, w *uint16, ldw int, out *float32, acc int)

//go:noescape
func gemv8F32AVX512(dst, x, w *float32, rows, k, ldw int)

//go:noescape
func gemv8BF16AVX512(dst, x *float32, w *uint16, rows, k, ldw int)

//go:noescape
func gemv8F32AVX2(dst, x, w *float32, rows, k, ldw int)

//go:noescape
func gemv8BF16AVX2(dst, x *float32, w *uint16, rows, k, ldw int)

//go:noescape
func gemv8F32AVX2Next(dst, x, w *float32, rows, k, ldw int)

//go:noescape
func gemv8BF16AVX2Next(dst, x *float32, w *uint16, rows, k, ldw int)

//go:noescape
func quantRowQ8_0AVX2(x *float32, nb int, q *int8, qstride int, d, s *float32, dstride int) (finite bool)

//go:noescape
func quantRowQ8KAVX2(x *float32, nb int, q *int8, qstride int, d *float32, dstride int, bs *int16, bstride int) (ok bool)

//go:noescape
func axpyRowsMany8F32AVX512(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int)

//go:noescape
func axpyRowsMany4F32AVX512(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int)

//go:noescape
func axpyRowsMany2F32AVX512(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int)

//go:noescape
func axpyRowsMany1F32AVX512(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int)

//go:noescape
func axpyRowsMany8BF16AVX512(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int)

//go:noescape
func axpyRowsMany4BF16AVX512(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int)

//go:noescape
func axpyRowsMany2BF16AVX512(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int)

//go:noescape
func axpyRowsMany1BF16AVX512(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int)

//go:noescape
func axpyRowsMany4F32AVX2(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int)

//go:noescape
func axpyRowsMany2F32AVX2(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int)

//go:noescape
func axpyRowsMany1F32AVX2(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int)

//go:noescape
func axpyRowsMany4BF16AVX2(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int)

//go:noescape
func axpyRowsMany2BF16AVX2(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int)

//go:noescape
func axpyRowsMany1BF16AVX2(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int)
