//go:build !noasm

package kernels

import (
	"testing"
	"time"
)

// BenchmarkMicrokernel times each GEMM microkernel on cache-resident
// operands (K = 256) and reports the fastest batch of calls as a percentage
// of the FMA loop's fastest rate measured in the same run: the kernels'
// ceiling, free of memory effects and of other processes on the machine.
// The calls are timed in batches (callsPerTiming): one call of the AVX2
// tiles takes about 0.5 µs, and a clock read on a virtual machine is a
// sizeable part of that.
func BenchmarkMicrokernel(b *testing.B) {
	const K = 256
	xp := make([]float32, 32*K)
	wf := make([]float32, 12*K)
	wb := make([]uint16, 32*K)
	var out [12 * 32]float32
	// Written with values, not left as allocated: on the untouched zero
	// operands the AVX2 tiles measured 80-85% of the peak (Zen 3, 2026-11-25;
	// untouched pages may all map one zero page), 97-98% on these.
	for i := range xp {
		xp[i] = float32(i%7) * 0.1
	}
	for i := range wb {
		wb[i] = 0x3f80 + uint16(i%5)
	}
	for i := range wf {
		wf[i] = 1
	}
	peak := 0.0
	for range 50 {
		t0 := time.Now()
		f := fmaLoop(20000)
		peak = max(peak, f/time.Since(t0).Seconds())
	}
	type kernel struct {
		name string
		isa  bool
		flop float64
		run  func()
	}
	full, half := 2.0*12*32*K, 2.0*12*16*K
	for _, k := range []kernel{
		{"F32/avx512/12x32", hasAVX512F, full, func() { gemmF32AVX512(K, &xp[0], &wf[0], K, &out[0], 0) }},
		{"F32/avx512/12x16", hasAVX512F, half, func() { gemmF32AVX512Half(K, &xp[0], &wf[0], K, &out[0], 0) }},
		{"BF16/avx512/12x32", hasAVX512F, full, func() { gemmBF16AVX512(K, &xp[0], &wb[0], K, &out[0], 0) }},
		{"BF16/avx512/12x16", hasAVX512F, half, func() { gemmBF16AVX512Half(K, &xp[0], &wb[0], K, &out[0], 0) }},
		{"BF16dot/avx512bf16/12x32", hasAVX512BF, full, func() { gemmBF16DotAVX512(K/2, &wb[0], &wb[0], K, &out[0], 0) }},
		{"BF16dot/avx512bf16/12x16", hasAVX512BF, half, func() { gemmBF16DotAVX512Half(K/2, &wb[0], &wb[0], K, &out[0], 0) }},
		{"F32/avx2/6x16", hasAVX2FMA, 2.0 * 6 * 16 * K, func() { gemmF32AVX2(K, &xp[0], &wf[0], K, &out[0], 6, 0) }},
		{"F32/avx2/6x8", hasAVX2FMA, 2.0 * 6 * 8 * K, func() { gemmF32AVX2Half(K, &xp[0], &wf[0], K, &out[0], 6, 0) }},
		{"BF16/avx2/6x16", hasAVX2FMA, 2.0 * 6 * 16 * K, func() { gemmBF16AVX2(K, &xp[0], &wb[0], K, &out[0], 6, 0) }},
		{"BF16/avx2/6x8", hasAVX2FMA, 2.0 * 6 * 8 * K, func() { gemmBF16AVX2Half(K, &xp[0], &wb[0], K, &out[0], 6, 0) }},
	} {
		if !k.isa {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			const callsPerTiming = 32
			fastest := time.Duration(1 << 62)
			for b.Loop() {
				t0 := time.Now()
				for range callsPerTiming {
					k.run()
				}
				fastest = min(fastest, time.Since(t0)/callsPerTiming)
			}
			b.ReportMetric(k.flop/fastest.Seconds()/1e9, "GFLOP/s-best")
			b.ReportMetric(100*k.flop/fastest.Seconds()/peak, "%peak-best")
		})
	}
}
