//go:build !noasm

#include "textflag.h"

// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv0() (eax, edx uint32)
TEXT ·xgetbv0(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// func spinPause()
TEXT ·spinPause(SB), NOSPLIT, $0-0
	PAUSE
	RET

// func prefetchRange(p *byte, n int)
// PREFETCHT0 of every 64-byte line of p[0:n].
TEXT ·prefetchRange(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX

prefetch_loop:
	CMPQ       SI, CX
	JGE        prefetch_done
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	JMP        prefetch_loop

prefetch_done:
	RET

// func f32ToBF16AVX2(dst *uint16, src *float32, n int)
// dst[i] = F32ToBF16(src[i]) for i < n, n a multiple of 16: x + 0x7fff +
// bit 16 of x, shifted down (round to nearest, ties to even), where |x|
// is not NaN; x's high half with the quiet bit set where it is.
TEXT ·f32ToBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VPBROADCASTD bf16One<>(SB), Y10
	VPBROADCASTD bf16Half<>(SB), Y11
	VPBROADCASTD bf16Abs<>(SB), Y12
	VPBROADCASTD bf16Inf<>(SB), Y13
	VPBROADCASTD bf16Quiet<>(SB), Y14

bf16_loop:
	CMPQ      CX, $16
	JLT       bf16_done
	VMOVDQU   (SI), Y0
	VMOVDQU   32(SI), Y1
	VPSRLD    $16, Y0, Y2
	VPSRLD    $16, Y1, Y3
	VPAND     Y10, Y2, Y4
	VPAND     Y10, Y3, Y5
	VPADDD    Y11, Y4, Y4
	VPADDD    Y11, Y5, Y5
	VPADDD    Y0, Y4, Y4
	VPADDD    Y1, Y5, Y5
	VPSRLD    $16, Y4, Y4
	VPSRLD    $16, Y5, Y5
	VPAND     Y12, Y0, Y6
	VPAND     Y12, Y1, Y7
	VPCMPGTD  Y13, Y6, Y6
	VPCMPGTD  Y13, Y7, Y7
	VPOR      Y14, Y2, Y2
	VPOR      Y14, Y3, Y3
	VPBLENDVB Y6, Y2, Y4, Y4
	VPBLENDVB Y7, Y3, Y5, Y5
	VPACKUSDW Y5, Y4, Y4
	VPERMQ    $0xD8, Y4, Y4
	VMOVDQU   Y4, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JMP       bf16_loop

bf16_done:
	VZEROUPPER
	RET

DATA bf16One<>+0(SB)/4, $0x00000001
GLOBL bf16One<>(SB), RODATA|NOPTR, $4
DATA bf16Half<>+0(SB)/4, $0x00007fff
GLOBL bf16Half<>(SB), RODATA|NOPTR, $4
DATA bf16Abs<>+0(SB)/4, $0x7fffffff
GLOBL bf16Abs<>(SB), RODATA|NOPTR, $4
DATA bf16Inf<>+0(SB)/4, $0x7f800000
GLOBL bf16Inf<>(SB), RODATA|NOPTR, $4
DATA bf16Quiet<>+0(SB)/4, $0x00000040
GLOBL bf16Quiet<>(SB), RODATA|NOPTR, $4
