//go:build !noasm

package kernels

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
func xgetbv0() (eax, edx uint32)

// CPU features, detected once at start-up and never changed.
var (
	hasAVX2FMA  bool // AVX2 and FMA3 with OS support for YMM state
	hasAVX512F  bool // AVX-512F with OS support for ZMM state
	hasAVX512BF bool // AVX-512 BF16 (reported only; see the package doc)
	hasF16C     bool // F16C (VCVTPH2PS), which the quantized kernels need
	hasQuant512 bool // AVX-512 BW, VL and VNNI: the AVX-512 quantized kernels
)

func init() {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return
	}
	xcr0, _ := xgetbv0()
	hasF16C = ecx1&(1<<29) != 0
	if xcr0&0x6 != 0x6 {
		return
	}
	_, ebx7, _, _ := cpuid(7, 0)
	hasAVX2FMA = ebx7&(1<<5) != 0
	hasAVX512F = hasAVX2FMA && ebx7&(1<<16) != 0 && xcr0&0xe0 == 0xe0
	_, _, ecx7, _ := cpuid(7, 0)
	hasQuant512 = hasAVX512F && hasF16C && ebx7&(1<<30) != 0 && ebx7&(1<<31) != 0 && ecx7&(1<<11) != 0
	if hasAVX512F {
		eax71, _, _, _ := cpuid(7, 1)
		hasAVX512BF = eax71&(1<<5) != 0
	}
	if hasAVX512F {
		native = Impl{isaAVX512}
	} else if hasAVX2FMA {
		native = Impl{isaAVX2}
	}
	fast = native
	if hasAVX512BF {
		fast = Impl{isaAVX512BF16}
	}
}

// native and fast are the best exact and the fastest implementation of this CPU;
// set once by init from the CPU features.
var native, fast = Generic(), Generic()

func supportedISAs() []isa {
	var l []isa
	if hasAVX2FMA {
		l = append(l, isaAVX2)
	}
	if hasAVX512F {
		l = append(l, isaAVX512)
	}
	if hasAVX512BF {
		l = append(l, isaAVX512BF16)
	}
	return l
}

// prefetchRange asks for the 64-byte lines of p[0:n] to be brought into
// the cache (PREFETCHT0); it reads nothing into registers and never faults.
//
//go:noescape
func prefetchRange(p *byte, n int)

//go:noescape
func f32ToBF16AVX2(dst *uint16, src *float32, n int)

// f32ToBF16Vec converts the longest prefix of src that the vector kernel
// takes (a multiple of 16 elements, with AVX2) into dst, len(dst) ≥
// len(src), and returns its length.
func f32ToBF16Vec(dst []uint16, src []float32) int {
	n := len(src) &^ 15
	if !hasAVX2FMA || n == 0 {
		return 0
	}
	f32ToBF16AVX2(&dst[0], &src[0], n)
	return n
}

// spinPause executes one PAUSE: a spin-wait hint that saves power and frees
// the core's other hardware thread while a Pool watches for work.
func spinPause()
