// Package bench measures the inference engine's throughput on random-weight
// models and relates it to what the machine can do: decode tokens/s as GB/s
// of weights read per token against the measured memory bandwidth, prefill
// as GFLOP/s against the measured float32 FMA peak (both from package
// kernels, measured in the same run with the same thread count).
package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
)

// Options choose what Run measures.
type Options struct {
	Models  []string        // model presets ("34m", "134m", "1.8b")
	DTypes  []kernels.DType // weight types
	Threads []int           // thread counts
	Prefill int             // prompt tokens per prefill measurement
	Decode  int             // decode steps per decode measurement
	Reps    int             // repetitions; the best is kept
	// LargePrefill and LargeDecode, when > 0, replace Prefill and Decode
	// for models over a billion parameters, whose every pass takes seconds.
	LargePrefill, LargeDecode int
	// Fast also measures BF16 models with kernels.Fast (BF16 activations
	// in BF16 products, model.NewCPUFast), as extra rows.
	Fast bool
	// Progress, when set, receives a line per finished measurement.
	Progress io.Writer
}

// DefaultOptions are the settings of `ndbg bench`.
func DefaultOptions() Options {
	return Options{Models: []string{"34m", "134m", "1.8b"}, DTypes: []kernels.DType{kernels.F32, kernels.BF16},
		Threads: []int{1, 2}, Prefill: 128, Decode: 32, Reps: 2, LargePrefill: 64, LargeDecode: 8}
}

// Machine is the measured capacity of the machine at one thread count.
type Machine struct {
	Threads   int
	Bandwidth float64 // memory read GB/s
	FMAPeak   float64 // float32 GFLOP/s
}

// MeasureMachine measures bandwidth and FMA peak at each thread count.
func MeasureMachine(threads []int) []Machine {
	out := make([]Machine, len(threads))
	for i, t := range threads {
		out[i] = Machine{Threads: t, Bandwidth: kernels.MeasureBandwidth(t), FMAPeak: kernels.MeasureFMAPeak(t)}
	}
	debug.FreeOSMemory()
	return out
}

// Result is one model × dtype × threads measurement.
type Result struct {
	Model       string
	Params      int64
	DType       kernels.DType
	Threads     int
	Backend     string
	WeightBytes int64   // bytes of weights read per decoded token
	PrefillTokS float64 // prompt tokens per second
	DecodeTokS  float64 // generated tokens per second
	PrefillGF   float64 // GFLOP/s of the prefill matrix products
	DecodeGBs   float64 // GB/s of weights read while decoding
	// CPUShare is the process's CPU time over wall time × threads during
	// the measurements: well below 1 when other processes took the cores
	// (the figures then understate the engine). Idle pool threads block
	// rather than spin, so serial stretches lower it a little even on an
	// idle machine.
	CPUShare float64
	Machine  Machine
}

// BandwidthFraction is decode GB/s over the measured bandwidth.
func (r Result) BandwidthFraction() float64 { return r.DecodeGBs / r.Machine.Bandwidth }

// PeakFraction is prefill GFLOP/s over the measured FMA peak.
func (r Result) PeakFraction() float64 { return r.PrefillGF / r.Machine.FMAPeak }

// Run measures every combination in o. Models are built once per dtype and
// measured at each thread count with a CPU backend of that many threads.
func Run(ctx context.Context, o Options, machines []Machine) ([]Result, error) {
	var out []Result
	for _, name := range o.Models {
		cfg, err := model.Preset(name)
		if err != nil {
			return out, err
		}
		mo := o
		if cfg.Params() > 1e9 {
			if o.LargePrefill > 0 {
				mo.Prefill = o.LargePrefill
			}
			if o.LargeDecode > 0 {
				mo.Decode = o.LargeDecode
			}
			mo.Reps = 1
		}
		type variant struct {
			dt   kernels.DType
			fast bool
		}
		var variants []variant
		for _, dt := range o.DTypes {
			variants = append(variants, variant{dt, false})
			if o.Fast && dt == kernels.BF16 {
				variants = append(variants, variant{dt, true})
			}
		}
		for _, v := range variants {
			dt := v.dt
			backends := make([]*model.CPU, len(o.Threads))
			for i, t := range o.Threads {
				if v.fast {
					backends[i] = model.NewCPUFast(t)
				} else {
					backends[i] = model.NewCPU(t)
				}
			}
			m, err := model.NewRandom(ctx, cfg, dt, 1, model.Options{Backend: backends[0], Context: mo.Prefill + mo.Decode + 1})
			if err != nil {
				return out, fmt.Errorf("bench: %s %v: %w", name, dt, err)
			}
			for i, t := range o.Threads {
				m2 := m.WithBackend(backends[i])
				r, err := measure(ctx, m2, mo)
				if err != nil {
					return out, fmt.Errorf("bench: %s %v threads %d: %w", name, dt, t, err)
				}
				r.Model, r.DType, r.Threads = name, dt, t
				for _, mc := range machines {
					if mc.Threads == t {
						r.Machine = mc
					}
				}
				out = append(out, r)
				if o.Progress != nil {
					fmt.Fprintln(o.Progress, r.line())
				}
			}
			for _, b := range backends {
				b.Close()
			}
			m = nil
			runtime.GC()
			debug.FreeOSMemory()
		}
	}
	return out, nil
}

// measure times prefill of o.Prefill tokens and o.Decode single-token steps.
func measure(ctx context.Context, m *model.Model, o Options) (Result, error) {
	cfg := m.Config()
	prompt := make([]int, o.Prefill)
	for i := range prompt {
		prompt[i] = (i*7919 + 1) % cfg.Vocab
	}
	r := Result{Params: cfg.Params(), Backend: m.Backend().Name(), WeightBytes: m.WeightBytes()}
	var bestPrefill, bestDecode time.Duration
	cpu0, wall0 := processCPU(), time.Now()
	for rep := 0; rep < max(1, o.Reps); rep++ {
		s := m.NewSession()
		t0 := time.Now()
		logits, err := s.Forward(ctx, prompt, false)
		if err != nil {
			return r, err
		}
		d := time.Since(t0)
		if rep == 0 || d < bestPrefill {
			bestPrefill = d
		}
		tok := argmax(logits)
		t0 = time.Now()
		for i := 0; i < o.Decode; i++ {
			if logits, err = s.Forward(ctx, []int{tok}, false); err != nil {
				return r, err
			}
			tok = argmax(logits)
		}
		d = time.Since(t0)
		if rep == 0 || d < bestDecode {
			bestDecode = d
		}
	}
	if threads, ok := m.Backend().(interface{ Threads() int }); ok {
		r.CPUShare = (processCPU() - cpu0).Seconds() / time.Since(wall0).Seconds() / float64(threads.Threads())
	}
	r.PrefillTokS = float64(o.Prefill) / bestPrefill.Seconds()
	r.DecodeTokS = float64(o.Decode) / bestDecode.Seconds()
	// Prefill FLOPs: every layer matrix for every prompt token, the head for
	// the last token only (attention's O(n²) work is left out: under 2% at
	// these lengths).
	headBytes := int64(cfg.Vocab) * int64(cfg.Hidden) * int64(dtypeSize(m))
	layerElems := (r.WeightBytes - headBytes) / int64(dtypeSize(m))
	flops := 2 * (float64(layerElems)*float64(o.Prefill) + float64(cfg.Vocab)*float64(cfg.Hidden))
	r.PrefillGF = flops / bestPrefill.Seconds() / 1e9
	r.DecodeGBs = float64(r.WeightBytes) * r.DecodeTokS / 1e9
	return r, nil
}

func dtypeSize(m *model.Model) int { return m.WeightDType().Size() }

func argmax(x []float32) int {
	b := 0
	for i, v := range x {
		if v > x[b] {
			b = i
		}
	}
	return b
}

func (r Result) line() string {
	return fmt.Sprintf("%s %v %s t%d: prefill %.1f tok/s (%.1f GFLOP/s, %.0f%% of %.0f), decode %.1f tok/s (%.1f GB/s, %.0f%% of %.1f), CPU share %.0f%%",
		r.Model, r.DType, r.Backend, r.Threads, r.PrefillTokS, r.PrefillGF, 100*r.PeakFraction(), r.Machine.FMAPeak,
		r.DecodeTokS, r.DecodeGBs, 100*r.BandwidthFraction(), r.Machine.Bandwidth, 100*r.CPUShare)
}

// WriteTable prints machines and results as Markdown tables (the machines
// alone when there are no results: `ndbg bench --machine`).
func WriteTable(w io.Writer, machines []Machine, rs []Result) error {
	var b strings.Builder
	b.WriteString("| threads | read bandwidth GB/s | F32 FMA peak GFLOP/s |\n|---|---|---|\n")
	for _, m := range machines {
		fmt.Fprintf(&b, "| %d | %.1f | %.1f |\n", m.Threads, m.Bandwidth, m.FMAPeak)
	}
	if len(rs) == 0 {
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\n| model | params | weights | kernels | threads | prefill tok/s | prefill GFLOP/s | % FMA peak | decode tok/s | decode GB/s | % bandwidth | CPU share |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.0fM | %v %.0f MB | %s | %d | %.1f | %.1f | %.0f%% | %.1f | %.1f | %.0f%% | %.0f%% |\n",
			r.Model, float64(r.Params)/1e6, r.DType, float64(r.WeightBytes)/1e6, r.Backend, r.Threads,
			r.PrefillTokS, r.PrefillGF, 100*r.PeakFraction(), r.DecodeTokS, r.DecodeGBs, 100*r.BandwidthFraction(),
			100*r.CPUShare)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
