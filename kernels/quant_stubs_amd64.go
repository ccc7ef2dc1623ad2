//go:build !noasm

package kernels

// Stubs of the generated quantized-product kernels (quant_amd64.s,
// gen_quant.py): qdot<T>x<nx>AVX2 sets d[i*ldd+j] = W[j]·x[i] for j < rows,
// i < nx, on rows consecutive weight rows of nb blocks and a tile of nx
// rows of quantized activations (qact's tile layout).

//go:noescape
func qdotQ8_0x1AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ8_0x2AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ8_0x3AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ8_0x4AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_0x1AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_0x2AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_0x3AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_0x4AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ5_0x1AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ5_0x2AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ5_0x3AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ5_0x4AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_Kx1AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_Kx2AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_Kx3AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_Kx4AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ6_Kx1AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ6_Kx2AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ6_Kx3AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ6_Kx4AVX2(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_Kx1AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_Kx2AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_Kx3AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ4_Kx4AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ6_Kx1AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ6_Kx2AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ6_Kx3AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ6_Kx4AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ8_0x1AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ8_0x2AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ8_0x3AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ8_0x4AVX512(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

//go:noescape
func qdotQ8_0P16x1AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ8_0P16x2AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ8_0P16x3AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ8_0P16x4AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ8_0P16x5AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ8_0P16x6AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ8_0P16x7AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ8_0P16x8AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ5_0P16x1AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ5_0P16x2AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ5_0P16x3AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ5_0P16x4AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ5_0P16x5AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ5_0P16x6AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ5_0P16x7AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ5_0P16x8AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)

//go:noescape
func qdotQ4_KP16x1AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ4_KP16x2AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ4_KP16x3AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ4_KP16x4AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ4_KP16x5AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ4_KP16x6AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ4_KP16x7AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ4_KP16x8AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ6_KP16x1AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ6_KP16x2AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ6_KP16x3AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ6_KP16x4AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ6_KP16x5AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ6_KP16x6AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ6_KP16x7AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ6_KP16x8AVX512(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)

//go:noescape
func qdotQ8_0P16x1AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32)

//go:noescape
func qdotQ8_0P16x2AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32)

//go:noescape
func qdotQ8_0P16x3AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32)

//go:noescape
func qdotQ8_0P16x4AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32)

//go:noescape
func qdotQ5_0P16x1AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32)

//go:noescape
func qdotQ5_0P16x2AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32)

//go:noescape
func qdotQ5_0P16x3AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32)

//go:noescape
func qdotQ5_0P16x4AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32)

//go:noescape
func qdotQ6_KP16x1AVX2(d *float32, ldd int, pk *byte, nb int, xu *uint8, xd *float32)

//go:noescape
func qdotQ6_KP16x2AVX2(d *float32, ldd int, pk *byte, nb int, xu *uint8, xd *float32)

//go:noescape
func qdotQ6_KP16x3AVX2(d *float32, ldd int, pk *byte, nb int, xu *uint8, xd *float32)

//go:noescape
func qdotQ6_KP16x4AVX2(d *float32, ldd int, pk *byte, nb int, xu *uint8, xd *float32)

//go:noescape
func qdotQ4_KP16x1AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32)

//go:noescape
func qdotQ4_KP16x2AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32)

//go:noescape
func qdotQ4_KP16x3AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32)

//go:noescape
func qdotQ4_KP16x4AVX2(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32)

// qdotKernel is the signature of the kernels above.
type qdotKernel func(d *float32, ldd int, w *byte, rows, nb int, xq *int8, xd *float32, xs *byte)

// qdotAVX2 holds the kernels by weight type and nx-1.
var qdotAVX2 = map[DType][qTile]qdotKernel{
	Q8_0: {qdotQ8_0x1AVX2, qdotQ8_0x2AVX2, qdotQ8_0x3AVX2, qdotQ8_0x4AVX2},
	Q4_0: {qdotQ4_0x1AVX2, qdotQ4_0x2AVX2, qdotQ4_0x3AVX2, qdotQ4_0x4AVX2},
	Q5_0: {qdotQ5_0x1AVX2, qdotQ5_0x2AVX2, qdotQ5_0x3AVX2, qdotQ5_0x4AVX2},
	Q4_K: {qdotQ4_Kx1AVX2, qdotQ4_Kx2AVX2, qdotQ4_Kx3AVX2, qdotQ4_Kx4AVX2},
	Q6_K: {qdotQ6_Kx1AVX2, qdotQ6_Kx2AVX2, qdotQ6_Kx3AVX2, qdotQ6_Kx4AVX2},
}

// qdotAVX512 holds the AVX-512 (BW, VNNI) kernels by weight type and nx-1.
var qdotAVX512 = map[DType][qTile]qdotKernel{
	Q8_0: {qdotQ8_0x1AVX512, qdotQ8_0x2AVX512, qdotQ8_0x3AVX512, qdotQ8_0x4AVX512},
	Q4_K: {qdotQ4_Kx1AVX512, qdotQ4_Kx2AVX512, qdotQ4_Kx3AVX512, qdotQ4_Kx4AVX512},
	Q6_K: {qdotQ6_Kx1AVX512, qdotQ6_Kx2AVX512, qdotQ6_Kx3AVX512, qdotQ6_Kx4AVX512},
}

// packedQ32Kernel and packedKKernel are the signatures of the kernels on
// packed weights (Pack) of Q8_0 and Q5_0, and of Q4_K and Q6_K: up to
// packedTile rows of x in two of qact's tiles (see gen_quant.py).
type (
	packedQ32Kernel func(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32, xq2 *int8, xd2, xs2 *float32)
	packedKKernel   func(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32, xq2 *int8, xd2 *float32, xs2 *int32)
)

// The kernels on packed weights by nx-1.
var (
	qdotQ4_KP16AVX2 = [qTile]func(d *float32, ldd int, pk *byte, nb int, xq *int8, xd *float32, xs *int32){
		qdotQ4_KP16x1AVX2, qdotQ4_KP16x2AVX2, qdotQ4_KP16x3AVX2, qdotQ4_KP16x4AVX2,
	}
	qdotQ6_KP16AVX2 = [qTile]func(d *float32, ldd int, pk *byte, nb int, xu *uint8, xd *float32){
		qdotQ6_KP16x1AVX2, qdotQ6_KP16x2AVX2, qdotQ6_KP16x3AVX2, qdotQ6_KP16x4AVX2,
	}
	qdotQ8_0P16AVX2 = [qTile]func(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32){
		qdotQ8_0P16x1AVX2, qdotQ8_0P16x2AVX2, qdotQ8_0P16x3AVX2, qdotQ8_0P16x4AVX2,
	}
	qdotQ5_0P16AVX2 = [qTile]func(d *float32, ldd int, pk *byte, nb int, xq *int8, xd, xs *float32){
		qdotQ5_0P16x1AVX2, qdotQ5_0P16x2AVX2, qdotQ5_0P16x3AVX2, qdotQ5_0P16x4AVX2,
	}
	qdotQ8_0P16 = [packedTile]packedQ32Kernel{
		qdotQ8_0P16x1AVX512, qdotQ8_0P16x2AVX512, qdotQ8_0P16x3AVX512, qdotQ8_0P16x4AVX512,
		qdotQ8_0P16x5AVX512, qdotQ8_0P16x6AVX512, qdotQ8_0P16x7AVX512, qdotQ8_0P16x8AVX512,
	}
	qdotQ5_0P16 = [packedTile]packedQ32Kernel{
		qdotQ5_0P16x1AVX512, qdotQ5_0P16x2AVX512, qdotQ5_0P16x3AVX512, qdotQ5_0P16x4AVX512,
		qdotQ5_0P16x5AVX512, qdotQ5_0P16x6AVX512, qdotQ5_0P16x7AVX512, qdotQ5_0P16x8AVX512,
	}
	qdotQ4_KP16 = [packedTile]packedKKernel{
		qdotQ4_KP16x1AVX512, qdotQ4_KP16x2AVX512, qdotQ4_KP16x3AVX512, qdotQ4_KP16x4AVX512,
		qdotQ4_KP16x5AVX512, qdotQ4_KP16x6AVX512, qdotQ4_KP16x7AVX512, qdotQ4_KP16x8AVX512,
	}
	qdotQ6_KP16 = [packedTile]packedKKernel{
		qdotQ6_KP16x1AVX512, qdotQ6_KP16x2AVX512, qdotQ6_KP16x3AVX512, qdotQ6_KP16x4AVX512,
		qdotQ6_KP16x5AVX512, qdotQ6_KP16x6AVX512, qdotQ6_KP16x7AVX512, qdotQ6_KP16x8AVX512,
	}
)
