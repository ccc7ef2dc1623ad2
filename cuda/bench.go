//go:build cuda

package cuda

import (
	"fmt"
	"time"

	"gorgonia.org/cu"

	"github.com/ndbg/ndbg/model"
)

// KernelResult is one kernel benchmark: the mean time per launch and the
// rate achieved, as bandwidth (decode-type, memory-bound kernels) or
// arithmetic (the GEMM), with the fraction of the reference (measured copy
// bandwidth or nominal tensor peak).
type KernelResult struct {
	Kernel, Shape string
	Micros        float64 // mean µs per launch
	GBs           float64 // bytes moved per second / 1e9 (0 when not meaningful)
	TFLOPs        float64 // flop per second / 1e12 (0 when not meaningful)
	OfPeak        float64 // GBs / copy bandwidth or TFLOPs / peak
}

// DeviceReport describes the GPU and its measured reference rates.
type DeviceReport struct {
	Name            string
	SM, SMs         int
	TotalMemGiB     float64
	NominalBWGBs    float64 // from memory clock and bus width
	CopyBWGBs       float64 // measured device-to-device copy (read + write bytes / time)
	PeakBF16TFLOPs  float64 // nominal dense bf16 tensor-core peak (given or by architecture)
	HostToDeviceGBs float64 // measured upload bandwidth from pageable memory
}

// nominalBF16 returns the dense BF16 tensor peak in TFLOP/s by compute
// capability (H100 SXM: 989; A100: 312).
func nominalBF16(sm int) float64 {
	if sm >= 90 {
		return 989
	}
	return 312
}

// BenchKernels measures each kernel at the shapes of a model preset (decode
// and prefill of n tokens, attention at context ctxLen) on g.
// peakTFLOPs ≤ 0 means the nominal peak of the architecture.
func (g *GPU) BenchKernels(cfg model.Config, n, ctxLen int, peakTFLOPs float64) (DeviceReport, []KernelResult, error) {
	info := g.d.info()
	rep := DeviceReport{Name: info.Name, SM: info.SM, SMs: info.SMs, TotalMemGiB: info.TotalMemGiB,
		NominalBWGBs: info.PeakBWGBs, PeakBF16TFLOPs: peakTFLOPs}
	if rep.PeakBF16TFLOPs <= 0 {
		rep.PeakBF16TFLOPs = nominalBF16(info.SM)
	}
	var results []KernelResult
	err := g.d.do(func() error {
		var bufs []buffer
		part := scratch{what: "attention partials"}
		defer func() {
			for i := range bufs {
				_ = bufs[i].free()
			}
			_ = part.free()
		}()
		get := func(bytes int64) (devPtr, error) {
			bb, err := alloc(bytes, "benchmark")
			if err != nil {
				return 0, err
			}
			bufs = append(bufs, bb)
			// Defined contents (zeros): no NaN slow paths, no garbage.
			if err := cu.MemsetD8(bb.ptr, 0, bytes); err != nil {
				return 0, fmt.Errorf("cuda: cuMemsetD8: %w", err)
			}
			return bb.ptr, nil
		}
		// timeit runs launch reps times after a warm-up and returns µs per run.
		timeit := func(what string, launch func() error) (float64, error) {
			if err := launch(); err != nil {
				return 0, err
			}
			if err := syncDevice(what); err != nil {
				return 0, err
			}
			reps := 0
			start := time.Now()
			for time.Since(start) < 200*time.Millisecond || reps < 5 {
				if err := launch(); err != nil {
					return 0, err
				}
				reps++
				if reps%10 == 0 {
					if err := syncDevice(what); err != nil {
						return 0, err
					}
				}
			}
			if err := syncDevice(what); err != nil {
				return 0, err
			}
			return float64(time.Since(start).Microseconds()) / float64(reps), nil
		}

		// Reference: device-to-device copy of 1 GiB.
		const cp = 1 << 30
		src, err := get(cp)
		if err != nil {
			return err
		}
		dst, err := get(cp)
		if err != nil {
			return err
		}
		us, err := timeit("copy", func() error {
			if err := cu.MemcpyDtoD(dst, src, cp); err != nil {
				return fmt.Errorf("cuda: cuMemcpyDtoD: %w", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		rep.CopyBWGBs = 2 * cp / us / 1e3
		host := make([]byte, 256<<20)
		us, err = timeit("upload", func() error { return upload(src, host, "bench") })
		if err != nil {
			return err
		}
		rep.HostToDeviceGBs = float64(len(host)) / us / 1e3
		for i := range bufs {
			_ = bufs[i].free()
		}
		bufs = bufs[:0]

		H, Q, KV, F, V := cfg.HiddenSize, cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize, cfg.VocabSize
		mats := []struct {
			name       string
			rows, cols int
		}{{"qkv", Q + 2*KV, H}, {"o", H, Q}, {"gate_up", 2 * F, H}, {"down", H, F}, {"lm_head", V, H}}
		for _, m := range mats {
			wp, err := get(int64(2 * m.rows * m.cols))
			if err != nil {
				return err
			}
			xp, err := get(int64(4 * n * m.cols))
			if err != nil {
				return err
			}
			yp, err := get(int64(4 * n * m.rows))
			if err != nil {
				return err
			}
			for _, k := range []string{"gemv_bf16_1", "gemv_bf16_2", "gemm_bf16_1", "gemm_bf16_2"} {
				tokens := n
				if k == "gemv_bf16_1" || k == "gemv_bf16_2" {
					tokens = 1
				}
				us, err := timeit(k, func() error { return g.d.launchMatMul(k, yp, xp, wp, tokens, m.rows, m.cols) })
				if err != nil {
					return err
				}
				r := KernelResult{Kernel: k, Shape: fmt.Sprintf("%s n=%d %dx%d", m.name, tokens, m.rows, m.cols), Micros: us}
				bytes := float64(2*m.rows*m.cols + 4*tokens*(m.rows+m.cols))
				r.GBs = bytes / us / 1e3
				flops := 2 * float64(tokens) * float64(m.rows) * float64(m.cols)
				r.TFLOPs = flops / us / 1e6
				if tokens == 1 {
					r.OfPeak = r.GBs / rep.CopyBWGBs
				} else {
					r.OfPeak = r.TFLOPs / rep.PeakBF16TFLOPs
				}
				results = append(results, r)
			}
			for i := range bufs {
				_ = bufs[i].free()
			}
			bufs = bufs[:0]
		}

		// Row-wise ops at n tokens.
		xp, err := get(int64(4 * n * 2 * F))
		if err != nil {
			return err
		}
		yp, err := get(int64(4 * n * 2 * F))
		if err != nil {
			return err
		}
		wp, err := get(int64(4 * H))
		if err != nil {
			return err
		}
		us, err = timeit("rmsnorm_1", func() error {
			return g.d.launch("rmsnorm_1", grid1(n), [3]int{256, 1, 1}, 0, yp, xp, wp, H, float32(cfg.RMSNormEps))
		})
		if err != nil {
			return err
		}
		results = append(results, bwResult("rmsnorm_1", fmt.Sprintf("n=%d d=%d", n, H), us, float64(8*n*H), rep.CopyBWGBs))
		us, err = timeit("swiglu_rows_1", func() error {
			return g.d.launch("swiglu_rows_1", grid1(ceilDiv(n*F, 256)), [3]int{256, 1, 1}, 0, yp, xp, n, F)
		})
		if err != nil {
			return err
		}
		results = append(results, bwResult("swiglu_rows_1", fmt.Sprintf("n=%d ffn=%d", n, F), us, float64(12*n*F), rep.CopyBWGBs))

		// Attention: decode (1 query) and prefill (n queries) at ctxLen.
		kp, err := get(int64(4 * ctxLen * KV))
		if err != nil {
			return err
		}
		vp, err := get(int64(4 * ctxLen * KV))
		if err != nil {
			return err
		}
		qp, err := get(int64(4 * n * Q))
		if err != nil {
			return err
		}
		op, err := get(int64(4 * n * Q))
		if err != nil {
			return err
		}
		for _, tokens := range []int{1, n} {
			a := model.AttentionSpec{N: tokens, Pos0: ctxLen - tokens, Heads: cfg.NumAttentionHeads, KVHeads: cfg.NumKeyValueHeads, HeadDim: cfg.HeadDim}
			us, err := timeit("attention", func() error { return g.d.attention(&part, op, qp, kp, vp, a, 0) })
			if err != nil {
				return err
			}
			r := bwResult("attn_partial_1+combine", fmt.Sprintf("n=%d ctx=%d h=%d kv=%d hd=%d", tokens, ctxLen, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim),
				us, float64(8*ctxLen*KV+8*tokens*Q), rep.CopyBWGBs)
			r.TFLOPs = 4 * float64(tokens) * float64(ctxLen) * float64(Q) / us / 1e6
			results = append(results, r)
		}
		return nil
	})
	if err != nil {
		return rep, results, fmt.Errorf("cuda: kernel benchmark: %w", err)
	}
	return rep, results, nil
}

func bwResult(kernel, shape string, us, bytes, ref float64) KernelResult {
	gbs := bytes / us / 1e3
	return KernelResult{Kernel: kernel, Shape: shape, Micros: us, GBs: gbs, OfPeak: gbs / ref}
}
