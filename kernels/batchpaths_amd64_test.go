//go:build !noasm

package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ndbg/ndbg/internal/cputime"
)

// BenchmarkGemvBatchPaths times the paths a product of n rows of x (F32 or
// BF16 weights) can take on AVX2 and AVX-512, alternating round by round
// (one round per b.N, each path called on every copy of W, so that the
// weights come from memory) so that a busy machine's drifts hit all alike:
// "gemv1" one row of x (the one-session step, for reference), "onerow" the
// AVX2 one-weight-row-at-a-time small-batch kernel, "rows3" gemvBatch on
// this CPU (three weight rows at a time at n ≥ 4, the rest one by one; on
// AVX-512 the AVX-512 Rows3 kernels at n ≥ 5), "rows3avx2" gemvBatch
// limited to AVX2, "gemm" the blocked product. Shapes at n = 8: the 134m preset's
// projections (q/k/v/o, gate/up, down) and LM head; and the products near
// useGemvBatch's x-size limits: 134m's down projection at n = 4…7 and
// 34m's (512×1376) at n = 8, and the 1.8b preset's down and up
// projections at n = 8. Reports each path's fastest and median CPU-µs
// per call; run with -benchtime 10x or more.
func BenchmarkGemvBatchPaths(b *testing.B) {
	impl := Native()
	if impl.isa < isaAVX2 {
		b.Skip("the small-batch kernels need AVX2")
	}
	type shape struct{ n, rows, cols int }
	shapes := []shape{{8, 768, 768}, {8, 2048, 768}, {8, 768, 2048}, {8, 32000, 768},
		{4, 768, 2048}, {5, 768, 2048}, {6, 768, 2048}, {7, 768, 2048}, {8, 512, 1376},
		{8, 2048, 5632}, {8, 5632, 2048}}
	for _, dt := range []DType{F32, BF16} {
		for _, sh := range shapes {
			b.Run(fmt.Sprintf("%v/n=%d/%dx%d", dt, sh.n, sh.rows, sh.cols), func(b *testing.B) {
				benchGemvBatchPaths(b, impl, dt, sh.n, sh.rows, sh.cols)
			})
		}
	}
}

func benchGemvBatchPaths(b *testing.B, impl Impl, dt DType, n, rows, cols int) {
	wbytes := rows * cols * dt.Size()
	copies := (128<<20 + wbytes - 1) / wbytes
	r := rand.New(rand.NewPCG(1, 2))
	ws := make([]*Mat, copies)
	for i := range ws {
		f := make([]float32, rows*cols)
		for j := range f {
			f[j] = float32(r.NormFloat64() * 0.02)
		}
		ws[i] = &Mat{Rows: rows, Cols: cols, DType: dt}
		if dt == BF16 {
			ws[i].BF16 = make([]uint16, len(f))
			F32ToBF16Slice(ws[i].BF16, f)
		} else {
			ws[i].F32 = f
		}
	}
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = 0.01 * float32(i%7)
	}
	dst := make([]float32, n*rows)
	kv := cols &^ 7
	paths := []struct {
		name string
		f    func(w *Mat)
	}{
		{"gemv1", func(w *Mat) { impl.gemv(nil, dst, x, 1, w) }},
		{"onerow", func(w *Mat) {
			if dt == BF16 {
				gemvBatchBF16AVX2(n, &dst[0], rows, &x[0], cols, &w.BF16[0], rows, kv, cols)
			} else {
				gemvBatchF32AVX2(n, &dst[0], rows, &x[0], cols, &w.F32[0], rows, kv, cols)
			}
		}},
		{"rows3", func(w *Mat) { impl.gemvBatch(nil, dst, x, n, w) }},
		{"rows3avx2", func(w *Mat) { Impl{isaAVX2}.gemvBatch(nil, dst, x, n, w) }},
		{"gemm", func(w *Mat) { impl.gemm(nil, dst, x, n, w) }},
	}
	times := make([][]float64, len(paths))
	for b.Loop() {
		for p, path := range paths {
			c0 := cputime.Process()
			for _, w := range ws {
				path.f(w)
			}
			times[p] = append(times[p], (cputime.Process()-c0).Seconds()/float64(copies)*1e6)
		}
	}
	for p, path := range paths {
		t := slices.Sorted(slices.Values(times[p]))
		b.ReportMetric(t[0], path.name+"-µs-min")
		b.ReportMetric(t[len(t)/2], path.name+"-µs-median")
	}
}
