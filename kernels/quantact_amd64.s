//go:build !noasm

#include "textflag.h"

// Activation quantizer of the Q8_0 products (hand-written): one row of x,
// as quantizeActQ8_0 (quantmm.go) computes it, which is llama.cpp's x86
// quantize_row_q8_0: per block of 32, amax = max |x|, d = amax/127 rounded
// to F16, quants round(x·127/amax) to nearest even, and the blocks' sums.

DATA qa_abs<>+0(SB)/4, $0x7fffffff
GLOBL qa_abs<>(SB), RODATA|NOPTR, $4
DATA qa_exp<>+0(SB)/4, $0x7f800000
GLOBL qa_exp<>(SB), RODATA|NOPTR, $4
DATA qa_127<>+0(SB)/4, $0x42fe0000
GLOBL qa_127<>(SB), RODATA|NOPTR, $4
DATA qa_perm<>+0(SB)/4, $0
DATA qa_perm<>+4(SB)/4, $4
DATA qa_perm<>+8(SB)/4, $1
DATA qa_perm<>+12(SB)/4, $5
DATA qa_perm<>+16(SB)/4, $2
DATA qa_perm<>+20(SB)/4, $6
DATA qa_perm<>+24(SB)/4, $3
DATA qa_perm<>+28(SB)/4, $7
GLOBL qa_perm<>(SB), RODATA|NOPTR, $32

// func quantRowQ8_0AVX2(x *float32, nb int, q *int8, qstride int, d, s *float32, dstride int) (finite bool)
//
// Block b of x (32 floats at x + 128·b) goes to q + (b/2)·qstride + (b%2)·32
// (bytes) and its scale and scaled sum to d and s + (b/2)·dstride + (b%2)·4
// (bytes): qact's block pairs. finite is false when a block holds a NaN or
// an Inf (what it wrote is then garbage: the caller quantizes the row in Go).
TEXT ·quantRowQ8_0AVX2(SB), NOSPLIT, $0-57
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ qstride+24(FP), R10
	MOVQ d+32(FP), R8
	MOVQ s+40(FP), R9
	MOVQ dstride+48(FP), R11
	VBROADCASTSS qa_abs<>(SB), Y15
	VBROADCASTSS qa_exp<>(SB), Y14
	VMOVSS qa_127<>(SB), X12
	VMOVDQU qa_perm<>(SB), Y10
	VPXOR Y13, Y13, Y13
	XORQ BX, BX // the block's half of its pair: 0 or 32 (bytes of q), 0 or 4 (of d and s) at BX/8
qa_block:
	TESTQ CX, CX
	JZ qa_done
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	// A NaN or an Inf: all exponent bits set.
	VPAND Y14, Y0, Y4
	VPCMPEQD Y14, Y4, Y4
	VPOR Y4, Y13, Y13
	VPAND Y14, Y1, Y4
	VPCMPEQD Y14, Y4, Y4
	VPOR Y4, Y13, Y13
	VPAND Y14, Y2, Y4
	VPCMPEQD Y14, Y4, Y4
	VPOR Y4, Y13, Y13
	VPAND Y14, Y3, Y4
	VPCMPEQD Y14, Y4, Y4
	VPOR Y4, Y13, Y13
	// amax in every lane of X4.
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0x4e, X4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0xb1, X4, X5
	VMAXPS X5, X4, X4
	// d = amax/127 as an F16; id = 127/amax, or 0 for a zero block.
	VDIVSS X12, X4, X5
	VCVTPS2PH $0, X5, X6
	VCVTPH2PS X6, X6
	VDIVSS X4, X12, X7
	VXORPS X8, X8, X8
	VCMPSS $4, X8, X4, X8 // amax != 0
	VANDPS X8, X7, X7
	VBROADCASTSS X7, Y7
	VMULPS Y7, Y0, Y0
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y2, Y2
	VMULPS Y7, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	// The sum of the quants.
	VPADDD Y1, Y0, Y8
	VPADDD Y3, Y2, Y9
	VPADDD Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0x4e, X8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0xb1, X8, X9
	VPADDD X9, X8, X8
	VCVTDQ2PS X8, X8
	VMULSS X6, X8, X8
	// The quants as bytes, in order.
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y10, Y0
	MOVQ BX, AX
	SHRQ $3, AX
	VMOVDQU Y0, (DI)(BX*1)
	VMOVSS X6, (R8)(AX*1)
	VMOVSS X8, (R9)(AX*1)
	ADDQ $128, SI
	DECQ CX
	TESTQ BX, BX
	JNZ qa_next_pair
	MOVQ $32, BX
	JMP qa_block
qa_next_pair:
	XORQ BX, BX
	ADDQ R10, DI
	ADDQ R11, R8
	ADDQ R11, R9
	JMP qa_block
qa_done:
	VPTEST Y13, Y13
	SETEQ finite+56(FP)
	VZEROUPPER
	RET

DATA qa_one<>+0(SB)/4, $0x3f800000
GLOBL qa_one<>(SB), RODATA|NOPTR, $4
DATA qa_m127<>+0(SB)/4, $0xc2fe0000
GLOBL qa_m127<>(SB), RODATA|NOPTR, $4
DATA qa_i127<>+0(SB)/4, $127
GLOBL qa_i127<>(SB), RODATA|NOPTR, $4

// func quantRowQ8KAVX2(x *float32, nb int, q *int8, qstride int, d *float32, dstride int, bs *int16, bstride int) (ok bool)
//
// One row of x in Q8_K, as quantizeActQ8K (quantize_row_q8_K_ref) does it:
// per block of 256, mx the element of largest magnitude (the first of
// equal ones), iscale = -127/mx, quants min(127, nearest(iscale·x)), their
// sums by 16, d = 1/iscale. Block b (x + 1024·b) goes to q + b·qstride,
// d + b·dstride, bs + b·bstride (bytes). ok is false when a block is all
// zeros or holds a NaN or an Inf: the caller quantizes the row in Go.
TEXT ·quantRowQ8KAVX2(SB), NOSPLIT, $0-65
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ d+32(FP), R8
	MOVQ bs+48(FP), R9
	VBROADCASTSS qa_abs<>(SB), Y15
	VBROADCASTSS qa_exp<>(SB), Y14
	VPBROADCASTD qa_i127<>(SB), Y12
	VMOVDQU qa_perm<>(SB), Y10
	VPXOR Y13, Y13, Y13
qk_block:
	TESTQ CX, CX
	JZ qk_done
	// Pass 1: amax, and NaN or Inf.
	VXORPS Y4, Y4, Y4
	XORQ AX, AX
qk_max:
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	VPAND Y14, Y0, Y2
	VPCMPEQD Y14, Y2, Y2
	VPOR Y2, Y13, Y13
	VPAND Y14, Y1, Y2
	VPCMPEQD Y14, Y2, Y2
	VPOR Y2, Y13, Y13
	VANDPS Y15, Y0, Y0
	VANDPS Y15, Y1, Y1
	VMAXPS Y0, Y4, Y4
	VMAXPS Y1, Y4, Y4
	ADDQ $64, AX
	CMPQ AX, $1024
	JLT qk_max
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0x4e, X4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0xb1, X4, X5
	VMAXPS X5, X4, X4
	VXORPS X5, X5, X5
	VUCOMISS X5, X4
	JEQ qk_fail // a zero block
	VBROADCASTSS X4, Y4
	// The first element whose magnitude is amax.
	XORQ AX, AX
qk_find:
	VANDPS (SI)(AX*1), Y15, Y0
	VCMPPS $0, Y4, Y0, Y0
	VMOVMSKPS Y0, DX
	TESTL DX, DX
	JNZ qk_found
	ADDQ $32, AX
	CMPQ AX, $1024
	JLT qk_find
	JMP qk_fail // not found: NaN (reported by the flag)
qk_found:
	TZCNTL DX, DX
	LEAQ (AX)(DX*4), AX
	VMOVSS (SI)(AX*1), X5 // mx
	VMOVSS qa_m127<>(SB), X6
	VDIVSS X5, X6, X6 // iscale = -127/mx
	VMOVSS qa_one<>(SB), X7
	VDIVSS X6, X7, X7 // d = 1/iscale
	VMOVSS X7, (R8)
	VBROADCASTSS X6, Y6
	// Pass 2: the quants and their sums, 16 at a time.
	XORQ AX, AX // x bytes
	XORQ DX, DX // group
qk_group:
	VMULPS (SI)(AX*1), Y6, Y0
	VMULPS 32(SI)(AX*1), Y6, Y1
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VPMINSD Y12, Y0, Y0
	VPMINSD Y12, Y1, Y1
	VPADDD Y1, Y0, Y2
	VEXTRACTI128 $1, Y2, X3
	VPADDD X3, X2, X2
	VPSHUFD $0x4e, X2, X3
	VPADDD X3, X2, X2
	VPSHUFD $0xb1, X2, X3
	VPADDD X3, X2, X2
	VMOVD X2, BX
	MOVW BX, (R9)(DX*2)
	VPACKSSDW Y1, Y0, Y0
	VPACKSSWB Y0, Y0, Y0
	VPERMD Y0, Y10, Y0
	MOVQ DX, BX
	SHLQ $4, BX
	VMOVDQU X0, (DI)(BX*1)
	ADDQ $64, AX
	INCQ DX
	CMPQ DX, $16
	JLT qk_group
	ADDQ $1024, SI
	ADDQ qstride+24(FP), DI
	ADDQ dstride+40(FP), R8
	ADDQ bstride+56(FP), R9
	DECQ CX
	JMP qk_block
qk_done:
	VPTEST Y13, Y13
	SETEQ ok+64(FP)
	VZEROUPPER
	RET
qk_fail:
	MOVB $0, ok+64(FP)
	VZEROUPPER
	RET
