//go:build !noasm

package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ndbg/ndbg/internal/cputime"
)

// BenchmarkGemvBatchPaths times the paths an F32 product of n = 8 rows of x
// can take on AVX2, alternating round by round (one round per b.N, each
// path called on every copy of W, so that the weights come from memory) so
// that a busy machine's drifts hit all alike: "gemv1" one row of x (the
// one-session step, for reference), "onerow" the one-weight-row-at-a-time
// small-batch kernel, "rows3" gemvBatch as dispatched (three weight rows
// at a time, the rest one by one), "gemm" the blocked product. Shapes: the
// 134m preset's projections (q/k/v/o, gate/up, down) and LM head. Reports
// each path's fastest and median CPU-µs per call; run with -benchtime 10x
// or more.
func BenchmarkGemvBatchPaths(b *testing.B) {
	impl := Native()
	if impl.isa != isaAVX2 {
		b.Skip("the AVX2 small-batch kernels need AVX2 without AVX-512")
	}
	const n = 8
	for _, sh := range []struct{ rows, cols int }{{768, 768}, {2048, 768}, {768, 2048}, {32000, 768}} {
		b.Run(fmt.Sprintf("%dx%d", sh.rows, sh.cols), func(b *testing.B) {
			wbytes := sh.rows * sh.cols * 4
			copies := (128<<20 + wbytes - 1) / wbytes
			r := rand.New(rand.NewPCG(1, 2))
			ws := make([]*Mat, copies)
			for i := range ws {
				f := make([]float32, sh.rows*sh.cols)
				for j := range f {
					f[j] = float32(r.NormFloat64() * 0.02)
				}
				ws[i] = &Mat{Rows: sh.rows, Cols: sh.cols, DType: F32, F32: f}
			}
			x := make([]float32, n*sh.cols)
			for i := range x {
				x[i] = 0.01 * float32(i%7)
			}
			dst := make([]float32, n*sh.rows)
			paths := []struct {
				name string
				f    func(w *Mat)
			}{
				{"gemv1", func(w *Mat) { impl.gemv(nil, dst, x, 1, w) }},
				{"onerow", func(w *Mat) {
					gemvBatchF32AVX2(n, &dst[0], sh.rows, &x[0], sh.cols, &w.F32[0], sh.rows, sh.cols&^7, sh.cols)
				}},
				{"rows3", func(w *Mat) { impl.gemvBatch(nil, dst, x, n, w) }},
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
		})
	}
}
