//go:build !noasm

#include "textflag.h"

// Vector helpers (AVX2 + FMA, used by both assembly levels: they are
// memory-bound, and 256-bit operations run at the same rate on the target
// CPUs). Lengths must be multiples of the unroll noted; the caller does the
// tail in Go.

// func dotAVX2(x, y *float32, n int) float32
// Σ x[i]·y[i], n a multiple of 32, 4 accumulators.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), SI
	MOVQ   y+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	TESTQ  CX, CX
	JEQ    dot_reduce

dot_loop:
	VMOVUPS     (SI)(AX*4), Y4
	VMOVUPS     32(SI)(AX*4), Y5
	VMOVUPS     64(SI)(AX*4), Y6
	VMOVUPS     96(SI)(AX*4), Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ        $32, AX
	CMPQ        AX, CX
	JLT         dot_loop

dot_reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func sumSquaresAVX2(x *float32, n int) float32
// Σ x[i]², n a multiple of 32, 4 accumulators.
TEXT ·sumSquaresAVX2(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	TESTQ  CX, CX
	JEQ    ss_reduce

ss_loop:
	VMOVUPS     (SI)(AX*4), Y4
	VMOVUPS     32(SI)(AX*4), Y5
	VMOVUPS     64(SI)(AX*4), Y6
	VMOVUPS     96(SI)(AX*4), Y7
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ        $32, AX
	CMPQ        AX, CX
	JLT         ss_loop

ss_reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func axpyAVX2(dst, x *float32, a float32, n int)
// dst[i] += a·x[i], n a multiple of 8.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS a+16(FP), Y0
	MOVQ         n+24(FP), CX
	XORQ         AX, AX
	TESTQ        CX, CX
	JEQ          axpy_done

axpy_loop:
	VMOVUPS     (DI)(AX*4), Y1
	VFMADD231PS (SI)(AX*4), Y0, Y1
	VMOVUPS     Y1, (DI)(AX*4)
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         axpy_loop

axpy_done:
	VZEROUPPER
	RET

// func scaleAVX2(x *float32, a float32, n int)
// x[i] *= a, n a multiple of 8.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), DI
	VBROADCASTSS a+8(FP), Y0
	MOVQ         n+16(FP), CX
	XORQ         AX, AX
	TESTQ        CX, CX
	JEQ          scale_done

scale_loop:
	VMULPS  (DI)(AX*4), Y0, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     scale_loop

scale_done:
	VZEROUPPER
	RET

// func addAVX2(dst, a, b *float32, n int)
// dst[i] = a[i] + b[i], n a multiple of 8.
TEXT ·addAVX2(SB), NOSPLIT, $0-32
	MOVQ  dst+0(FP), DI
	MOVQ  a+8(FP), SI
	MOVQ  b+16(FP), DX
	MOVQ  n+24(FP), CX
	XORQ  AX, AX
	TESTQ CX, CX
	JEQ   add_done

add_loop:
	VMOVUPS (SI)(AX*4), Y1
	VADDPS  (DX)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     add_loop

add_done:
	VZEROUPPER
	RET

// func mulScaledAVX2(dst, x, w *float32, s float32, n int)
// dst[i] = x[i]·s·w[i], n a multiple of 8.
TEXT ·mulScaledAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	VBROADCASTSS s+24(FP), Y0
	MOVQ         n+32(FP), CX
	XORQ         AX, AX
	TESTQ        CX, CX
	JEQ          ms_done

ms_loop:
	VMULPS  (SI)(AX*4), Y0, Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     ms_loop

ms_done:
	VZEROUPPER
	RET

// func axpyRowsAVX2(dst, a, m *float32, rows, stride, k int)
// dst[c] += Σ_{j<rows} a[j]·m[j*stride+c] for c < k, k a multiple of 32:
// column blocks of 32 held in registers while the rows stream by, two rows
// at a time into two sets of accumulators.
TEXT ·axpyRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ stride+32(FP), BX
	SHLQ $2, BX
	MOVQ k+40(FP), R9
	XORQ R10, R10

ar_col:
	CMPQ    R10, R9
	JGE     ar_done
	VMOVUPS (DI)(R10*4), Y0
	VMOVUPS 32(DI)(R10*4), Y1
	VMOVUPS 64(DI)(R10*4), Y2
	VMOVUPS 96(DI)(R10*4), Y3
	VXORPS  Y4, Y4, Y4
	VXORPS  Y5, Y5, Y5
	VXORPS  Y6, Y6, Y6
	VXORPS  Y7, Y7, Y7
	LEAQ    (DX)(R10*4), R11
	XORQ    CX, CX

ar_row2:
	LEAQ         2(CX), AX
	CMPQ         AX, R8
	JGT          ar_row1
	VBROADCASTSS (SI)(CX*4), Y8
	VBROADCASTSS 4(SI)(CX*4), Y9
	VFMADD231PS  (R11), Y8, Y0
	VFMADD231PS  32(R11), Y8, Y1
	VFMADD231PS  64(R11), Y8, Y2
	VFMADD231PS  96(R11), Y8, Y3
	VFMADD231PS  (R11)(BX*1), Y9, Y4
	VFMADD231PS  32(R11)(BX*1), Y9, Y5
	VFMADD231PS  64(R11)(BX*1), Y9, Y6
	VFMADD231PS  96(R11)(BX*1), Y9, Y7
	LEAQ         (R11)(BX*2), R11
	MOVQ         AX, CX
	JMP          ar_row2

ar_row1:
	CMPQ         CX, R8
	JGE          ar_store
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS  (R11), Y8, Y0
	VFMADD231PS  32(R11), Y8, Y1
	VFMADD231PS  64(R11), Y8, Y2
	VFMADD231PS  96(R11), Y8, Y3

ar_store:
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	VMOVUPS Y0, (DI)(R10*4)
	VMOVUPS Y1, 32(DI)(R10*4)
	VMOVUPS Y2, 64(DI)(R10*4)
	VMOVUPS Y3, 96(DI)(R10*4)
	ADDQ    $32, R10
	JMP     ar_col

ar_done:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) (m float32, nan bool)
// m = the largest element of x[0:n] that is not NaN (-Inf when none is),
// nan = whether any element is NaN; n a multiple of 8. VMAXPS returns its
// second source when either is NaN: the accumulators are that source, so
// a NaN element leaves them as they were.
TEXT ·maxAVX2(SB), NOSPLIT, $0-21
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVL         $0xff800000, AX
	MOVL         AX, X0
	VBROADCASTSS X0, Y0
	VMOVAPS      Y0, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	MOVQ         CX, DX
	ANDQ         $-16, DX
	XORQ         AX, AX
	TESTQ        DX, DX
	JEQ          max_tail

max_loop:
	VMOVUPS (SI)(AX*4), Y4
	VMOVUPS 32(SI)(AX*4), Y5
	VCMPPS  $3, Y4, Y4, Y6
	VCMPPS  $3, Y5, Y5, Y7
	VORPS   Y6, Y2, Y2
	VORPS   Y7, Y3, Y3
	VMAXPS  Y0, Y4, Y0
	VMAXPS  Y1, Y5, Y1
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     max_loop

max_tail:
	CMPQ    AX, CX
	JGE     max_reduce
	VMOVUPS (SI)(AX*4), Y4
	VCMPPS  $3, Y4, Y4, Y6
	VORPS   Y6, Y2, Y2
	VMAXPS  Y0, Y4, Y0

max_reduce:
	VMAXPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, m+16(FP)
	VORPS        Y3, Y2, Y2
	VPTEST       Y2, Y2
	SETNE        nan+20(FP)
	VZEROUPPER
	RET

// func axpyRowsBF16AVX2(dst, a *float32, m *uint16, rows, stride, k int)
// dst[c] += Σ_{j<rows} a[j]·bf16(m[j*stride+c]) for c < k, k a multiple of
// 16 (BF16 rows widened exactly by a zero extension and a shift): column
// blocks of 16 held in registers while the rows stream by, four rows at a
// time into four sets of accumulators.
TEXT ·axpyRowsBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ stride+32(FP), BX
	SHLQ $1, BX
	LEAQ (BX)(BX*2), R12
	MOVQ k+40(FP), R9
	XORQ R10, R10

abr_col:
	CMPQ    R10, R9
	JGE     abr_done
	VMOVUPS (DI)(R10*4), Y0
	VMOVUPS 32(DI)(R10*4), Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	VXORPS  Y4, Y4, Y4
	VXORPS  Y5, Y5, Y5
	VXORPS  Y6, Y6, Y6
	VXORPS  Y7, Y7, Y7
	LEAQ    (DX)(R10*2), R11
	XORQ    CX, CX

abr_row4:
	LEAQ         4(CX), AX
	CMPQ         AX, R8
	JGT          abr_row1
	VBROADCASTSS (SI)(CX*4), Y8
	VBROADCASTSS 4(SI)(CX*4), Y9
	VBROADCASTSS 8(SI)(CX*4), Y10
	VBROADCASTSS 12(SI)(CX*4), Y11
	VPMOVZXWD    (R11), Y12
	VPMOVZXWD    16(R11), Y13
	VPSLLD       $16, Y12, Y12
	VPSLLD       $16, Y13, Y13
	VFMADD231PS  Y12, Y8, Y0
	VFMADD231PS  Y13, Y8, Y1
	VPMOVZXWD    (R11)(BX*1), Y12
	VPMOVZXWD    16(R11)(BX*1), Y13
	VPSLLD       $16, Y12, Y12
	VPSLLD       $16, Y13, Y13
	VFMADD231PS  Y12, Y9, Y2
	VFMADD231PS  Y13, Y9, Y3
	VPMOVZXWD    (R11)(BX*2), Y12
	VPMOVZXWD    16(R11)(BX*2), Y13
	VPSLLD       $16, Y12, Y12
	VPSLLD       $16, Y13, Y13
	VFMADD231PS  Y12, Y10, Y4
	VFMADD231PS  Y13, Y10, Y5
	VPMOVZXWD    (R11)(R12*1), Y12
	VPMOVZXWD    16(R11)(R12*1), Y13
	VPSLLD       $16, Y12, Y12
	VPSLLD       $16, Y13, Y13
	VFMADD231PS  Y12, Y11, Y6
	VFMADD231PS  Y13, Y11, Y7
	LEAQ         (R11)(BX*4), R11
	MOVQ         AX, CX
	JMP          abr_row4

abr_row1:
	CMPQ         CX, R8
	JGE          abr_store
	VBROADCASTSS (SI)(CX*4), Y8
	VPMOVZXWD    (R11), Y12
	VPMOVZXWD    16(R11), Y13
	VPSLLD       $16, Y12, Y12
	VPSLLD       $16, Y13, Y13
	VFMADD231PS  Y12, Y8, Y0
	VFMADD231PS  Y13, Y8, Y1
	ADDQ         BX, R11
	INCQ         CX
	JMP          abr_row1

abr_store:
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VADDPS  Y6, Y4, Y4
	VADDPS  Y7, Y5, Y5
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VMOVUPS Y0, (DI)(R10*4)
	VMOVUPS Y1, 32(DI)(R10*4)
	ADDQ    $16, R10
	JMP     abr_col

abr_done:
	VZEROUPPER
	RET

// func axpyRowsBF16WideAVX2(dst, a *float32, m *uint16, rows, stride, k int)
// is axpyRowsBF16AVX2 for exactly k = 64 columns (a KV head's row of
// values: all 64 in registers, the rows one at a time) or k = 32 (a block's
// transposed keys of one head, a row per element of the head and a column
// per position: two rows at a time into two sets of accumulators), each
// row's bytes read once and in order. Decode attention reads each head's
// rows of a block once, from memory; the 16-column blocks of
// axpyRowsBF16AVX2 went over a 64-wide row four times, the first pass
// touching every other line.
TEXT ·axpyRowsBF16WideAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ rows+24(FP), CX
	MOVQ stride+32(FP), BX
	SHLQ $1, BX
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	CMPQ k+40(FP), $64
	JNE w32
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	TESTQ CX, CX
	JZ w64_store

w64_row:
	VBROADCASTSS (SI), Y8
	VPMOVZXWD 0(DX), Y9
	VPSLLD $16, Y9, Y9
	VFMADD231PS Y9, Y8, Y0
	VPMOVZXWD 16(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y1
	VPMOVZXWD 32(DX), Y9
	VPSLLD $16, Y9, Y9
	VFMADD231PS Y9, Y8, Y2
	VPMOVZXWD 48(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y3
	VPMOVZXWD 64(DX), Y9
	VPSLLD $16, Y9, Y9
	VFMADD231PS Y9, Y8, Y4
	VPMOVZXWD 80(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y5
	VPMOVZXWD 96(DX), Y9
	VPSLLD $16, Y9, Y9
	VFMADD231PS Y9, Y8, Y6
	VPMOVZXWD 112(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y7
	ADDQ $4, SI
	ADDQ BX, DX
	DECQ CX
	JNZ w64_row

w64_store:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

w32:
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

w32_row2:
	CMPQ CX, $2
	JLT w32_row1
	VBROADCASTSS (SI), Y8
	VBROADCASTSS 4(SI), Y9
	VPMOVZXWD 0(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y0
	VPMOVZXWD 0(DX)(BX*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y11, Y9, Y4
	VPMOVZXWD 16(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y1
	VPMOVZXWD 16(DX)(BX*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y11, Y9, Y5
	VPMOVZXWD 32(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y2
	VPMOVZXWD 32(DX)(BX*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y11, Y9, Y6
	VPMOVZXWD 48(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y3
	VPMOVZXWD 48(DX)(BX*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y11, Y9, Y7
	ADDQ $8, SI
	LEAQ (DX)(BX*2), DX
	SUBQ $2, CX
	JMP w32_row2

w32_row1:
	TESTQ CX, CX
	JZ w32_store
	VBROADCASTSS (SI), Y8
	VPMOVZXWD 0(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y0
	VPMOVZXWD 16(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y1
	VPMOVZXWD 32(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y2
	VPMOVZXWD 48(DX), Y10
	VPSLLD $16, Y10, Y10
	VFMADD231PS Y10, Y8, Y3

w32_store:
	VADDPS Y4, Y0, Y0
	VMOVUPS Y0, 0(DI)
	VADDPS Y5, Y1, Y1
	VMOVUPS Y1, 32(DI)
	VADDPS Y6, Y2, Y2
	VMOVUPS Y2, 64(DI)
	VADDPS Y7, Y3, Y3
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET

// func axpyRowsBF16AVX512(dst, a *float32, m *uint16, rows, stride, k int)
// is axpyRowsBF16AVX2 with 512-bit vectors, k a multiple of 32: column
// blocks of 32 held in registers while the rows stream by, four rows at a
// time into four sets of accumulators, the rows' weights broadcast from
// memory by the FMAs themselves.
TEXT ·axpyRowsBF16AVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ stride+32(FP), BX
	SHLQ $1, BX
	LEAQ (BX)(BX*2), R12
	MOVQ k+40(FP), R9
	XORQ R10, R10

abz_col:
	CMPQ      R10, R9
	JGE       abz_done
	VMOVUPS   (DI)(R10*4), Z0
	VMOVUPS   64(DI)(R10*4), Z1
	VPXORD    Z2, Z2, Z2
	VPXORD    Z3, Z3, Z3
	VPXORD    Z4, Z4, Z4
	VPXORD    Z5, Z5, Z5
	VPXORD    Z6, Z6, Z6
	VPXORD    Z7, Z7, Z7
	LEAQ      (DX)(R10*2), R11
	XORQ      CX, CX

abz_row4:
	LEAQ            4(CX), AX
	CMPQ            AX, R8
	JGT             abz_row1
	VPMOVZXWD       (R11), Z12
	VPMOVZXWD       32(R11), Z13
	VPMOVZXWD       (R11)(BX*1), Z14
	VPMOVZXWD       32(R11)(BX*1), Z15
	VPSLLD          $16, Z12, Z12
	VPSLLD          $16, Z13, Z13
	VPSLLD          $16, Z14, Z14
	VPSLLD          $16, Z15, Z15
	VFMADD231PS.BCST (SI)(CX*4), Z12, Z0
	VFMADD231PS.BCST (SI)(CX*4), Z13, Z1
	VFMADD231PS.BCST 4(SI)(CX*4), Z14, Z2
	VFMADD231PS.BCST 4(SI)(CX*4), Z15, Z3
	VPMOVZXWD       (R11)(BX*2), Z12
	VPMOVZXWD       32(R11)(BX*2), Z13
	VPMOVZXWD       (R11)(R12*1), Z14
	VPMOVZXWD       32(R11)(R12*1), Z15
	VPSLLD          $16, Z12, Z12
	VPSLLD          $16, Z13, Z13
	VPSLLD          $16, Z14, Z14
	VPSLLD          $16, Z15, Z15
	VFMADD231PS.BCST 8(SI)(CX*4), Z12, Z4
	VFMADD231PS.BCST 8(SI)(CX*4), Z13, Z5
	VFMADD231PS.BCST 12(SI)(CX*4), Z14, Z6
	VFMADD231PS.BCST 12(SI)(CX*4), Z15, Z7
	LEAQ            (R11)(BX*4), R11
	MOVQ            AX, CX
	JMP             abz_row4

abz_row1:
	CMPQ            CX, R8
	JGE             abz_store
	VPMOVZXWD       (R11), Z12
	VPMOVZXWD       32(R11), Z13
	VPSLLD          $16, Z12, Z12
	VPSLLD          $16, Z13, Z13
	VFMADD231PS.BCST (SI)(CX*4), Z12, Z0
	VFMADD231PS.BCST (SI)(CX*4), Z13, Z1
	ADDQ            BX, R11
	INCQ            CX
	JMP             abz_row1

abz_store:
	VADDPS  Z2, Z0, Z0
	VADDPS  Z3, Z1, Z1
	VADDPS  Z6, Z4, Z4
	VADDPS  Z7, Z5, Z5
	VADDPS  Z4, Z0, Z0
	VADDPS  Z5, Z1, Z1
	VMOVUPS Z0, (DI)(R10*4)
	VMOVUPS Z1, 64(DI)(R10*4)
	ADDQ    $32, R10
	JMP     abz_col

abz_done:
	VZEROUPPER
	RET
