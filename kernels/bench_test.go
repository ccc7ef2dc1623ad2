package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ndbg/ndbg/internal/cputime"
	"github.com/ndbg/ndbg/kernels"
)

// Machine references, measured once per benchmark process.
var (
	refBW = [3]func() float64{nil,
		sync.OnceValue(func() float64 { return kernels.MeasureBandwidth(1) }),
		sync.OnceValue(func() float64 { return kernels.MeasureBandwidth(2) })}
	refPeak = [3]func() float64{nil,
		sync.OnceValue(func() float64 { return kernels.MeasureFMAPeak(1) }),
		sync.OnceValue(func() float64 { return kernels.MeasureFMAPeak(2) })}

	// refPeakCPU is the FMA peak per CPU-second of one thread: unlike the
	// wall-clock figures it holds when other processes share the cores.
	refPeakCPU = sync.OnceValue(func() float64 {
		best := 0.0
		for range 3 {
			c0 := cputime.Process()
			f := kernels.FMALoop(4 << 20)
			if d := (cputime.Process() - c0).Seconds(); d > 0 && f/d/1e9 > best {
				best = f / d / 1e9
			}
		}
		return best
	})
)

func BenchmarkMeasureBandwidth(b *testing.B) {
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", th), func(b *testing.B) {
			var ms []kernels.BandwidthMeasurement
			for b.Loop() {
				ms = kernels.MeasureBandwidths(th)
			}
			best := 0.0
			for _, m := range ms {
				b.Logf("%s: %.1f GB/s", m.Pattern.Name, m.GBs)
				best = max(best, m.GBs)
			}
			b.ReportMetric(best, "GB/s")
		})
	}
}

func BenchmarkMeasureFMAPeak(b *testing.B) {
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", th), func(b *testing.B) {
			var g float64
			for b.Loop() {
				g = kernels.MeasureFMAPeak(th)
			}
			b.ReportMetric(g, "GFLOP/s")
		})
	}
}

func benchMat(rows, cols int, dt kernels.DType) *kernels.Mat {
	r := rand.New(rand.NewPCG(1, 2))
	f := make([]float32, rows*cols)
	for i := range f {
		f[i] = float32(r.NormFloat64() * 0.02)
	}
	w := &kernels.Mat{Rows: rows, Cols: cols, DType: dt}
	if dt == kernels.BF16 {
		w.BF16 = make([]uint16, len(f))
		kernels.F32ToBF16Slice(w.BF16, f)
	} else {
		w.F32 = f
	}
	return w
}

// Shapes of a 1.8B-parameter LLaMA MLP (hidden 2048, intermediate 5632),
// and the short rows of the small presets: 34m (hidden 512, intermediate
// 1376, vocabulary 8192) and 134m (hidden 768, intermediate 2048).
var benchShapes = []struct{ rows, cols int }{
	{5632, 2048}, {2048, 5632},
	{512, 512}, {1376, 512}, {512, 1376}, {8192, 512}, {2048, 768}, {768, 2048},
}

// BenchmarkMatMulGEMV is decode: dst (1 × Rows) = x · Wᵀ. Several copies of
// W (at least 128 MiB together) are used in turn so that W comes from
// memory, not from the 32 MiB L3. Reports GB/s of weights read and the
// percentage of the read bandwidth measured in the same process.
func BenchmarkMatMulGEMV(b *testing.B) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		for _, sh := range benchShapes {
			wbytes := sh.rows * sh.cols * dt.Size()
			copies := (128<<20 + wbytes - 1) / wbytes
			ws := make([]*kernels.Mat, copies)
			for i := range ws {
				ws[i] = benchMat(sh.rows, sh.cols, dt)
			}
			x := make([]float32, sh.cols)
			for i := range x {
				x[i] = 0.01 * float32(i%7)
			}
			dst := make([]float32, sh.rows)
			for _, th := range []int{1, 2} {
				b.Run(fmt.Sprintf("%v/%dx%d/threads=%d", dt, sh.rows, sh.cols, th), func(b *testing.B) {
					bw := refBW[th]()
					p := kernels.NewPool(th)
					defer p.Close()
					b.SetBytes(int64(wbytes))
					i := 0
					fastest := time.Duration(1 << 62)
					start := time.Now()
					for b.Loop() {
						t0 := time.Now()
						if err := kernels.MatMul(p, dst, x, 1, ws[i%copies]); err != nil {
							b.Fatal(err)
						}
						fastest = min(fastest, time.Since(t0))
						i++
					}
					gbs := float64(wbytes) * float64(i) / time.Since(start).Seconds() / 1e9
					b.ReportMetric(gbs, "GB/s")
					b.ReportMetric(100*gbs/bw, "%bw")
					// The fastest product, against the fastest segment of
					// MeasureBandwidth: stable when the cores are shared.
					best := float64(wbytes) / fastest.Seconds() / 1e9
					b.ReportMetric(100*best/bw, "%bw-best")
				})
			}
		}
	}
}

// BenchmarkMatMulGEMM is prefill: dst (n × Rows) = x (n × Cols) · Wᵀ.
// Reports GFLOP/s (2·n·Rows·Cols per product) and the percentage of the FMA
// peak measured in the same process.
//
// BF16dot is BF16 weights on kernels.Fast() (x rounded to BF16, VDPBF16PS)
// where the CPU has AVX-512 BF16; the others use kernels.MatMul (Native).
func BenchmarkMatMulGEMM(b *testing.B) {
	type variant struct {
		name string
		dt   kernels.DType
		be   kernels.Impl
	}
	vs := []variant{{"F32", kernels.F32, kernels.Native()}, {"BF16", kernels.BF16, kernels.Native()}}
	if f := kernels.Fast(); f != kernels.Native() {
		vs = append(vs, variant{"BF16dot", kernels.BF16, f})
	}
	for _, v := range vs {
		dt, be := v.dt, v.be
		sh := benchShapes[0]
		w := benchMat(sh.rows, sh.cols, dt)
		for _, n := range []int{4, 64, 128, 256, 512} {
			x := make([]float32, n*sh.cols)
			for i := range x {
				x[i] = 0.01 * float32(i%7)
			}
			dst := make([]float32, n*sh.rows)
			for _, th := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/n=%d/%dx%d/threads=%d", v.name, n, sh.rows, sh.cols, th), func(b *testing.B) {
					peak := refPeak[th]()
					peakCPU := refPeakCPU()
					p := kernels.NewPool(th)
					defer p.Close()
					i := 0
					fastest := time.Duration(1 << 62)
					start, c0 := time.Now(), cputime.Process()
					for b.Loop() {
						t0 := time.Now()
						if err := be.MatMul(p, dst, x, n, w); err != nil {
							b.Fatal(err)
						}
						fastest = min(fastest, time.Since(t0))
						i++
					}
					flop := 2 * float64(n) * float64(sh.rows*sh.cols) * float64(i)
					gf := flop / time.Since(start).Seconds() / 1e9
					b.ReportMetric(gf, "GFLOP/s")
					b.ReportMetric(100*gf/peak, "%peak")
					b.ReportMetric(100*flop/float64(i)/fastest.Seconds()/1e9/peak, "%peak-best")
					// Per CPU-second of all threads, against one thread's
					// peak per CPU-second: the kernel's efficiency whatever
					// else runs on the machine.
					if d := (cputime.Process() - c0).Seconds(); d > 0 && peakCPU > 0 {
						b.ReportMetric(100*flop/d/1e9/peakCPU, "%peak/cpu")
					}
				})
			}
		}
	}
}

// BenchmarkMatMulGEMVCached is decode on the small matrices of the 134M
// reference model (hidden 768, intermediate 2048), which sit in L2/L3: it
// measures the kernel's speed and per-call overhead rather than memory.
func BenchmarkMatMulGEMVCached(b *testing.B) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		for _, sh := range []struct{ rows, cols int }{{768, 768}, {2048, 768}, {768, 2048}} {
			w := benchMat(sh.rows, sh.cols, dt)
			x := make([]float32, sh.cols)
			dst := make([]float32, sh.rows)
			for _, th := range []int{1, 2} {
				b.Run(fmt.Sprintf("%v/%dx%d/threads=%d", dt, sh.rows, sh.cols, th), func(b *testing.B) {
					p := kernels.NewPool(th)
					defer p.Close()
					b.SetBytes(int64(sh.rows * sh.cols * dt.Size()))
					for b.Loop() {
						if err := kernels.MatMul(p, dst, x, 1, w); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkMatMulBatch is batched decode: dst (n × Rows) = x (n × Cols) · Wᵀ
// for n = 1…9 on the feed-forward shapes of the 34m and 134m presets, one thread,
// with W from memory (copies of at least 64 MiB together, used in turn).
// Reports the fastest product's time and GFLOP/s, and GFLOP per CPU-second
// (robust when other processes share the cores); n sessions decoding
// together gain over one as long as the time grows less than n-fold.
func BenchmarkMatMulBatch(b *testing.B) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		for _, sh := range []struct{ rows, cols int }{{1376, 512}, {512, 1376}, {2048, 768}, {768, 2048}} {
			wbytes := sh.rows * sh.cols * dt.Size()
			copies := (64<<20 + wbytes - 1) / wbytes
			ws := make([]*kernels.Mat, copies)
			for i := range ws {
				ws[i] = benchMat(sh.rows, sh.cols, dt)
			}
			for n := 1; n <= 9; n++ {
				x := make([]float32, n*sh.cols)
				for i := range x {
					x[i] = 0.01 * float32(i%7)
				}
				dst := make([]float32, n*sh.rows)
				b.Run(fmt.Sprintf("%v/%dx%d/n=%d", dt, sh.rows, sh.cols, n), func(b *testing.B) {
					i := 0
					fastest := time.Duration(1 << 62)
					c0 := cputime.Process()
					for b.Loop() {
						t0 := time.Now()
						if err := kernels.MatMul(nil, dst, x, n, ws[i%copies]); err != nil {
							b.Fatal(err)
						}
						fastest = min(fastest, time.Since(t0))
						i++
					}
					flop := 2 * float64(n) * float64(sh.rows*sh.cols)
					b.ReportMetric(fastest.Seconds()*1e6, "µs-best")
					b.ReportMetric(flop/fastest.Seconds()/1e9, "GFLOP/s-best")
					if d := (cputime.Process() - c0).Seconds(); d > 0 {
						b.ReportMetric(flop*float64(i)/d/1e9, "GFLOP/cpu-s")
					}
				})
			}
		}
	}
}

// BenchmarkDotRows is attention's score step in decode: one query head
// against the keys of every position (head dimension 64, keys of the 8 KV
// heads interleaved, stride 512) for each of 8 layers × 8 heads, as in the
// 34m preset. At 512 positions the keys (8 MiB) stay in L3; at 4096 (64 MiB)
// they come from memory. Reports GB/s of keys read.
func BenchmarkDotRows(b *testing.B) {
	const hd, kvDim, layers = 64, 512, 8
	impl := kernels.Native()
	for _, pos := range []int{512, 4096} {
		keys := make([]float32, layers*pos*kvDim)
		for i := range keys {
			keys[i] = 0.01 * float32(i%13)
		}
		q := make([]float32, hd)
		dst := make([]float32, pos)
		b.Run(fmt.Sprintf("positions=%d", pos), func(b *testing.B) {
			b.SetBytes(int64(layers * kvDim / hd * pos * hd * 4))
			start := time.Now()
			for b.Loop() {
				for l := range layers {
					for g := range kvDim / hd {
						impl.DotRows(dst, q, keys[l*pos*kvDim+g*hd:], kvDim)
					}
				}
			}
			b.ReportMetric(float64(b.N*layers*kvDim*pos*4)/time.Since(start).Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkMatMulQuant: the quantized products against BF16 on the same
// shape, one thread: decode (n = 1, GB/s of weights read) and prefill
// (n = 64, GFLOP/s) and batched decode (n = 8: 8 sessions, GFLOP/s), per CPU-second of the process (figures that hold on a
// machine whose cores others share), with each implementation.
//
//	go test -run '^$' -bench MatMulQuant -benchtime 20x ./kernels/
func BenchmarkMatMulQuant(b *testing.B) {
	const rows, cols = 8192, 2048
	r := rand.New(rand.NewPCG(1, 2))
	f := make([]float32, rows*cols)
	for i := range f {
		f[i] = float32(r.NormFloat64() * 0.02)
	}
	for v, dt := range []kernels.DType{kernels.BF16, kernels.Q8_0, kernels.Q8_0, kernels.Q4_0, kernels.Q5_0, kernels.Q4_K, kernels.Q4_K, kernels.Q6_K, kernels.Q6_K} {
		w := benchMat(rows, cols, kernels.BF16)
		name := dt.String()
		if dt.Quantized() {
			w = &kernels.Mat{Rows: rows, Cols: cols, DType: dt, Q: make([]byte, dt.Bytes(rows, cols))}
			if err := kernels.QuantizeRow(dt, w.Q, f); err != nil {
				b.Fatal(err)
			}
		}
		if v == 2 || v == 6 || v == 8 { // Q8_0, Q4_K and Q6_K again, packed (kernels.Pack)
			kernels.Pack(w)
			name += "-packed"
		}
		for _, impl := range kernels.Impls()[1:] {
			if impl.Name() == "avx512bf16" {
				continue
			}
			for _, n := range []int{1, 8, 64} {
				b.Run(fmt.Sprintf("%s/%s/n=%d", name, impl.Name(), n), func(b *testing.B) {
					x := make([]float32, n*cols)
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
					dst := make([]float32, n*rows)
					c0 := cputime.Process()
					for b.Loop() {
						if err := impl.MatMul(nil, dst, x, n, w); err != nil {
							b.Fatal(err)
						}
					}
					cpu := (cputime.Process() - c0).Seconds() / float64(b.N)
					if n == 1 {
						b.ReportMetric(float64(w.Bytes())/cpu/1e9, "GB/s/cpu")
					} else {
						b.ReportMetric(2*float64(n*rows*cols)/cpu/1e9, "GFLOP/s/cpu")
					}
				})
			}
		}
	}
}

// BenchmarkMatMulQuantDecode is decode's product (one row of x) and
// batched decode's (8 rows: 8 sessions) with quantized weights too large
// for any cache (96 MiB of Q8_0, 54 of Q4_K, 80 of Q6_K: rows of 2048
// values), packed as a model packs them (kernels.Pack), on a pool of 1
// and 2 threads, in GB/s of weights read (wall clock, so run it on a quiet
// machine): how the threads share the reads (decode's contiguous shares,
// see matMulQuant), and whether the kernels keep up with memory.
//
//	go test -run '^$' -bench MatMulQuantDecode -benchtime 20x ./kernels/
func BenchmarkMatMulQuantDecode(b *testing.B) {
	const rows, cols = 49152, 2048
	f := benchMat(rows, cols, kernels.F32).F32
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 8*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	dst := make([]float32, 8*rows)
	for _, dt := range []kernels.DType{kernels.Q8_0, kernels.Q4_K, kernels.Q6_K} {
		w := &kernels.Mat{Rows: rows, Cols: cols, DType: dt, Q: make([]byte, dt.Bytes(rows, cols))}
		kernels.AdviseHugePages(w.Q)
		if err := kernels.QuantizeRow(dt, w.Q, f); err != nil {
			b.Fatal(err)
		}
		kernels.Pack(w)
		for _, n := range []int{1, 8} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/n=%d/t%d", dt, n, threads), func(b *testing.B) {
					p := kernels.NewPool(threads)
					defer p.Close()
					for b.Loop() {
						if err := kernels.Native().MatMul(p, dst[:n*rows], x[:n*cols], n, w); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(w.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}
