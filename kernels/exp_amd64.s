//go:build !noasm

#include "textflag.h"

// Vectorized exp (Cephes expf: x = n·ln2 + r, |r| ≤ ln2/2, degree-7
// polynomial for e^r, 2^n built in the exponent bits), relative error about
// 1e-7 over the float32 range. Inputs below -88.38 give 0, above +88.38 give
// +Inf, NaN gives NaN. Each constant is stored as 8 lanes.
DATA expc<>+0(SB)/4, $0x3fb8aa3b
DATA expc<>+4(SB)/4, $0x3fb8aa3b
DATA expc<>+8(SB)/4, $0x3fb8aa3b
DATA expc<>+12(SB)/4, $0x3fb8aa3b
DATA expc<>+16(SB)/4, $0x3fb8aa3b
DATA expc<>+20(SB)/4, $0x3fb8aa3b
DATA expc<>+24(SB)/4, $0x3fb8aa3b
DATA expc<>+28(SB)/4, $0x3fb8aa3b
DATA expc<>+32(SB)/4, $0x3f318000
DATA expc<>+36(SB)/4, $0x3f318000
DATA expc<>+40(SB)/4, $0x3f318000
DATA expc<>+44(SB)/4, $0x3f318000
DATA expc<>+48(SB)/4, $0x3f318000
DATA expc<>+52(SB)/4, $0x3f318000
DATA expc<>+56(SB)/4, $0x3f318000
DATA expc<>+60(SB)/4, $0x3f318000
DATA expc<>+64(SB)/4, $0xb95e8083
DATA expc<>+68(SB)/4, $0xb95e8083
DATA expc<>+72(SB)/4, $0xb95e8083
DATA expc<>+76(SB)/4, $0xb95e8083
DATA expc<>+80(SB)/4, $0xb95e8083
DATA expc<>+84(SB)/4, $0xb95e8083
DATA expc<>+88(SB)/4, $0xb95e8083
DATA expc<>+92(SB)/4, $0xb95e8083
DATA expc<>+96(SB)/4, $0x39506967
DATA expc<>+100(SB)/4, $0x39506967
DATA expc<>+104(SB)/4, $0x39506967
DATA expc<>+108(SB)/4, $0x39506967
DATA expc<>+112(SB)/4, $0x39506967
DATA expc<>+116(SB)/4, $0x39506967
DATA expc<>+120(SB)/4, $0x39506967
DATA expc<>+124(SB)/4, $0x39506967
DATA expc<>+128(SB)/4, $0x3ab743ce
DATA expc<>+132(SB)/4, $0x3ab743ce
DATA expc<>+136(SB)/4, $0x3ab743ce
DATA expc<>+140(SB)/4, $0x3ab743ce
DATA expc<>+144(SB)/4, $0x3ab743ce
DATA expc<>+148(SB)/4, $0x3ab743ce
DATA expc<>+152(SB)/4, $0x3ab743ce
DATA expc<>+156(SB)/4, $0x3ab743ce
DATA expc<>+160(SB)/4, $0x3c088908
DATA expc<>+164(SB)/4, $0x3c088908
DATA expc<>+168(SB)/4, $0x3c088908
DATA expc<>+172(SB)/4, $0x3c088908
DATA expc<>+176(SB)/4, $0x3c088908
DATA expc<>+180(SB)/4, $0x3c088908
DATA expc<>+184(SB)/4, $0x3c088908
DATA expc<>+188(SB)/4, $0x3c088908
DATA expc<>+192(SB)/4, $0x3d2aa9c1
DATA expc<>+196(SB)/4, $0x3d2aa9c1
DATA expc<>+200(SB)/4, $0x3d2aa9c1
DATA expc<>+204(SB)/4, $0x3d2aa9c1
DATA expc<>+208(SB)/4, $0x3d2aa9c1
DATA expc<>+212(SB)/4, $0x3d2aa9c1
DATA expc<>+216(SB)/4, $0x3d2aa9c1
DATA expc<>+220(SB)/4, $0x3d2aa9c1
DATA expc<>+224(SB)/4, $0x3e2aaaaa
DATA expc<>+228(SB)/4, $0x3e2aaaaa
DATA expc<>+232(SB)/4, $0x3e2aaaaa
DATA expc<>+236(SB)/4, $0x3e2aaaaa
DATA expc<>+240(SB)/4, $0x3e2aaaaa
DATA expc<>+244(SB)/4, $0x3e2aaaaa
DATA expc<>+248(SB)/4, $0x3e2aaaaa
DATA expc<>+252(SB)/4, $0x3e2aaaaa
DATA expc<>+256(SB)/4, $0x3f000000
DATA expc<>+260(SB)/4, $0x3f000000
DATA expc<>+264(SB)/4, $0x3f000000
DATA expc<>+268(SB)/4, $0x3f000000
DATA expc<>+272(SB)/4, $0x3f000000
DATA expc<>+276(SB)/4, $0x3f000000
DATA expc<>+280(SB)/4, $0x3f000000
DATA expc<>+284(SB)/4, $0x3f000000
DATA expc<>+288(SB)/4, $0x42b0c0a5
DATA expc<>+292(SB)/4, $0x42b0c0a5
DATA expc<>+296(SB)/4, $0x42b0c0a5
DATA expc<>+300(SB)/4, $0x42b0c0a5
DATA expc<>+304(SB)/4, $0x42b0c0a5
DATA expc<>+308(SB)/4, $0x42b0c0a5
DATA expc<>+312(SB)/4, $0x42b0c0a5
DATA expc<>+316(SB)/4, $0x42b0c0a5
DATA expc<>+320(SB)/4, $0xc2b0c0a5
DATA expc<>+324(SB)/4, $0xc2b0c0a5
DATA expc<>+328(SB)/4, $0xc2b0c0a5
DATA expc<>+332(SB)/4, $0xc2b0c0a5
DATA expc<>+336(SB)/4, $0xc2b0c0a5
DATA expc<>+340(SB)/4, $0xc2b0c0a5
DATA expc<>+344(SB)/4, $0xc2b0c0a5
DATA expc<>+348(SB)/4, $0xc2b0c0a5
DATA expc<>+352(SB)/4, $0x3f800000
DATA expc<>+356(SB)/4, $0x3f800000
DATA expc<>+360(SB)/4, $0x3f800000
DATA expc<>+364(SB)/4, $0x3f800000
DATA expc<>+368(SB)/4, $0x3f800000
DATA expc<>+372(SB)/4, $0x3f800000
DATA expc<>+376(SB)/4, $0x3f800000
DATA expc<>+380(SB)/4, $0x3f800000
DATA expc<>+384(SB)/4, $0x7f800000
DATA expc<>+388(SB)/4, $0x7f800000
DATA expc<>+392(SB)/4, $0x7f800000
DATA expc<>+396(SB)/4, $0x7f800000
DATA expc<>+400(SB)/4, $0x7f800000
DATA expc<>+404(SB)/4, $0x7f800000
DATA expc<>+408(SB)/4, $0x7f800000
DATA expc<>+412(SB)/4, $0x7f800000
DATA expc<>+416(SB)/4, $0x0000007f
DATA expc<>+420(SB)/4, $0x0000007f
DATA expc<>+424(SB)/4, $0x0000007f
DATA expc<>+428(SB)/4, $0x0000007f
DATA expc<>+432(SB)/4, $0x0000007f
DATA expc<>+436(SB)/4, $0x0000007f
DATA expc<>+440(SB)/4, $0x0000007f
DATA expc<>+444(SB)/4, $0x0000007f
DATA expc<>+448(SB)/4, $0x80000000
DATA expc<>+452(SB)/4, $0x80000000
DATA expc<>+456(SB)/4, $0x80000000
DATA expc<>+460(SB)/4, $0x80000000
DATA expc<>+464(SB)/4, $0x80000000
DATA expc<>+468(SB)/4, $0x80000000
DATA expc<>+472(SB)/4, $0x80000000
DATA expc<>+476(SB)/4, $0x80000000
GLOBL expc<>(SB), RODATA|NOPTR, $480

#define K_LOG2E expc<>+0(SB)
#define K_C1 expc<>+32(SB)
#define K_C2 expc<>+64(SB)
#define K_P0 expc<>+96(SB)
#define K_P1 expc<>+128(SB)
#define K_P2 expc<>+160(SB)
#define K_P3 expc<>+192(SB)
#define K_P4 expc<>+224(SB)
#define K_P5 expc<>+256(SB)
#define K_HI expc<>+288(SB)
#define K_LO expc<>+320(SB)
#define K_ONE expc<>+352(SB)
#define K_INF expc<>+384(SB)
#define K_BIAS expc<>+416(SB)
#define K_NEG expc<>+448(SB)

// EXP sets Y0 = e^Y0, using Y1, Y2, Y3, Y5.
#define EXP \
	VCMPPS       $0x1e, K_HI, Y0, Y3; \
	VMOVUPS      K_HI, Y1; \
	VMINPS       Y0, Y1, Y0; \
	VMOVUPS      K_LO, Y1; \
	VMAXPS       Y0, Y1, Y0; \
	VMULPS       K_LOG2E, Y0, Y1; \
	VROUNDPS     $0, Y1, Y1; \
	VFNMADD231PS K_C1, Y1, Y0; \
	VFNMADD231PS K_C2, Y1, Y0; \
	VMOVUPS      K_P0, Y2; \
	VFMADD213PS  K_P1, Y0, Y2; \
	VFMADD213PS  K_P2, Y0, Y2; \
	VFMADD213PS  K_P3, Y0, Y2; \
	VFMADD213PS  K_P4, Y0, Y2; \
	VFMADD213PS  K_P5, Y0, Y2; \
	VMULPS       Y0, Y0, Y5; \
	VFMADD213PS  Y0, Y5, Y2; \
	VADDPS       K_ONE, Y2, Y2; \
	VCVTPS2DQ    Y1, Y1; \
	VPADDD       K_BIAS, Y1, Y1; \
	VPSLLD       $23, Y1, Y1; \
	VMULPS       Y1, Y2, Y0; \
	VBLENDVPS    Y3, K_INF, Y0, Y0

// func swigluAVX2(dst, gate, up *float32, n int)
// dst[i] = gate[i] / (1 + e^-gate[i]) · up[i], n a multiple of 8.
TEXT ·swigluAVX2(SB), NOSPLIT, $0-32
	MOVQ  dst+0(FP), DI
	MOVQ  gate+8(FP), SI
	MOVQ  up+16(FP), DX
	MOVQ  n+24(FP), CX
	XORQ  AX, AX
	TESTQ CX, CX
	JEQ   sw_done

sw_loop:
	VMOVUPS (SI)(AX*4), Y6
	VXORPS  K_NEG, Y6, Y0
	EXP
	VADDPS  K_ONE, Y0, Y0
	VDIVPS  Y0, Y6, Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     sw_loop

sw_done:
	VZEROUPPER
	RET

// func expSumAVX2(dst, x *float32, m float32, n int) float32
// dst[i] = e^(x[i] - m), returns Σ dst[i]; n a multiple of 8; dst may be x.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS m+16(FP), Y7
	MOVQ         n+24(FP), CX
	VXORPS       Y8, Y8, Y8
	XORQ         AX, AX
	TESTQ        CX, CX
	JEQ          es_reduce

es_loop:
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y7, Y0, Y0
	EXP
	VADDPS  Y0, Y8, Y8
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     es_loop

es_reduce:
	VEXTRACTF128 $1, Y8, X1
	VADDPS       X1, X8, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+32(FP)
	VZEROUPPER
	RET
