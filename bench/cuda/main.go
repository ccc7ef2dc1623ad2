//go:build cuda

// Command cuda-bench measures the CUDA device on the GPU machine: each
// kernel's time and achieved GB/s or TFLOP/s against the measured copy
// bandwidth and the nominal BF16 tensor peak, then end-to-end prefill and
// decode tokens/s of random-weight BF16 models (presets 1.8b and 32b by
// default) through model.Session, the engine's one forward pass, on a
// cuda.GPU (weights made on the host, uploaded once; the 32b preset needs
// 64 GB of host memory for that). Build it here with
//
//	go build -tags cuda -o cuda-bench ./bench/cuda
//
// and run it there (see cuda/README.md and run_on_gpu.sh). Results go to
// stdout as a table and, with -json, to a file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/ndbg/ndbg/cuda"
	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
)

type modelResult struct {
	Model          string
	Params         int64
	WeightGB       float64
	LoadSeconds    float64 // random weights + upload on first use
	PrefillTokens  int
	PrefillTokS    float64
	DecodeSteps    int
	DecodeTokS     float64
	DecodeWeightGB float64 // weight GB/s implied by decode tokens/s
}

type report struct {
	Device  cuda.DeviceReport
	Kernels map[string][]cuda.KernelResult
	Models  []modelResult
}

func main() {
	models := flag.String("models", "1.8b,32b", "comma-separated model presets")
	prefill := flag.Int("prefill", 512, "prompt tokens for the prefill measurement and kernel shapes")
	decode := flag.Int("decode", 32, "decode steps")
	ctxLen := flag.Int("ctx", 4096, "context length for the attention kernel benchmark")
	peak := flag.Float64("peak", 0, "BF16 dense tensor peak in TFLOP/s (0: by architecture)")
	kernelsOnly := flag.Bool("kernels-only", false, "skip the end-to-end model runs")
	jsonOut := flag.String("json", "", "write the results as JSON to this file")
	flag.Parse()
	if err := run(strings.Split(*models, ","), *prefill, *decode, *ctxLen, *peak, *kernelsOnly, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "cuda-bench:", err)
		os.Exit(1)
	}
}

func run(names []string, prefill, decode, ctxLen int, peak float64, kernelsOnly bool, jsonOut string) error {
	rep := report{Kernels: map[string][]cuda.KernelResult{}}
	for _, name := range names {
		cfg, err := model.Preset(name)
		if err != nil {
			return err
		}
		b, err := cuda.New(cuda.Options{})
		if err != nil {
			return err
		}
		dev, ks, err := b.BenchKernels(cfg, prefill, ctxLen, peak)
		if err != nil {
			return errorsJoin(err, b.Close())
		}
		rep.Device = dev
		rep.Kernels[name] = ks
		fmt.Printf("device %s (sm_%d, %d SMs, %.0f GiB): copy %.0f GB/s (nominal %.0f), upload %.1f GB/s, bf16 peak %.0f TFLOP/s\n",
			dev.Name, dev.SM, dev.SMs, dev.TotalMemGiB, dev.CopyBWGBs, dev.NominalBWGBs, dev.HostToDeviceGBs, dev.PeakBF16TFLOPs)
		fmt.Printf("\nkernels at %s shapes:\n%-24s %-40s %10s %9s %9s %7s\n", name, "kernel", "shape", "µs", "GB/s", "TFLOP/s", "%peak")
		for _, k := range ks {
			fmt.Printf("%-24s %-40s %10.1f %9.1f %9.2f %6.1f%%\n", k.Kernel, k.Shape, k.Micros, k.GBs, k.TFLOPs, 100*k.OfPeak)
		}
		if !kernelsOnly {
			mr, err := endToEnd(b, name, cfg, prefill, decode)
			if err != nil {
				return errorsJoin(err, b.Close())
			}
			rep.Models = append(rep.Models, mr)
			fmt.Printf("\n%s (%.2fB params, %.1f GB weights, load %.1f s): prefill %d tokens %.0f tokens/s; decode %.1f tokens/s (%.0f GB/s of weights, %.0f%% of copy bandwidth)\n\n",
				name, float64(mr.Params)/1e9, mr.WeightGB, mr.LoadSeconds, mr.PrefillTokens, mr.PrefillTokS,
				mr.DecodeTokS, mr.DecodeWeightGB, 100*mr.DecodeWeightGB/dev.CopyBWGBs)
		}
		if err := b.Close(); err != nil {
			return err
		}
	}
	if jsonOut != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonOut, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", jsonOut, err)
		}
	}
	return nil
}

// endToEnd runs a random BF16 model of cfg on g: one prefill of prefill
// tokens, then greedy decode steps, each timed after a warm-up.
func endToEnd(g *cuda.GPU, name string, cfg model.Config, prefill, decode int) (modelResult, error) {
	ctx := context.Background()
	mr := modelResult{Model: name, Params: cfg.Params(), PrefillTokens: prefill, DecodeSteps: decode}
	start := time.Now()
	m, err := model.NewRandom(ctx, cfg, kernels.BF16, 1, model.Options{Device: g, Context: prefill + decode + 64})
	if err != nil {
		return mr, err
	}
	defer m.Close()
	mr.WeightGB = float64(m.WeightBytes()) / 1e9
	r := rand.New(rand.NewPCG(1, 1))
	prompt := make([]int, prefill)
	for i := range prompt {
		prompt[i] = r.IntN(cfg.VocabSize)
	}
	// Warm-up: the first launches (PTX was JIT-compiled at load).
	warm := m.NewSession()
	_, err = warm.Forward(ctx, prompt[:min(prefill, 32)], false)
	if err = errors.Join(err, warm.Close()); err != nil {
		return mr, fmt.Errorf("%s warm-up: %w", name, err)
	}
	mr.LoadSeconds = time.Since(start).Seconds()

	s := m.NewSession()
	defer s.Close()
	t0 := time.Now()
	logits, err := s.Forward(ctx, prompt, false)
	if err != nil {
		return mr, fmt.Errorf("%s prefill: %w", name, err)
	}
	mr.PrefillTokS = float64(prefill) / time.Since(t0).Seconds()
	tok := sample.Argmax(logits)
	t0 = time.Now()
	for i := 0; i < decode; i++ {
		if logits, err = s.Forward(ctx, []int{tok}, false); err != nil {
			return mr, fmt.Errorf("%s decode step %d: %w", name, i, err)
		}
		tok = sample.Argmax(logits)
	}
	mr.DecodeTokS = float64(decode) / time.Since(t0).Seconds()
	mr.DecodeWeightGB = mr.DecodeTokS * mr.WeightGB
	return mr, nil
}

func errorsJoin(a, b error) error {
	if b == nil {
		return a
	}
	return fmt.Errorf("%w (and on close: %v)", a, b)
}
