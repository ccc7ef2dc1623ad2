// Package bench measures the inference engine's throughput on random-weight
// models and relates it to what the machine can do: decode tokens/s as GB/s
// of weights read per token against the measured memory bandwidth, prefill
// as GFLOP/s against the measured float32 FMA peak (both from package
// kernels, measured in the same run with the same thread count).
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/ndbg/ndbg/internal/cputime"
	"github.com/ndbg/ndbg/internal/quantize"
	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
)

// Options choose what Run measures.
type Options struct {
	Models []string // model presets ("34m", "134m", "1.8b")
	// DTypes are the weight types: "f32" and "bf16" (random weights in
	// memory), and llama.cpp's quantizations "q8_0", "q4_0", "q4_k_m",
	// read from the GGUF files in GGUFDir (written there first if absent:
	// the files llama.cpp runs too, bench/llamacpp.sh).
	DTypes  []string
	Threads []int // thread counts
	// GGUFDir holds the quantized models as <preset>-<dtype>.gguf (empty:
	// ndbg-bench-gguf in the temporary directory).
	GGUFDir string
	Prefill int // prompt tokens per prefill measurement
	Decode  int // decode steps per decode measurement
	Reps    int // repetitions; the best is kept
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
	return Options{Models: []string{"34m", "134m", "1.8b"}, DTypes: []string{"f32", "bf16"},
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
	DType       string // "F32", "BF16", "Q8_0", "Q4_K_M", ...
	Threads     int
	Device      string  // model.Device.Name(): "cpu/avx512"
	WeightBytes int64   // bytes of weights read per decoded token
	PrefillTokS float64 // prompt tokens per second
	DecodeTokS  float64 // generated tokens per second
	PrefillGF   float64 // GFLOP/s of the prefill matrix products
	DecodeGBs   float64 // GB/s of weights read while decoding
	// CPUShare is the process's CPU time over wall time × threads during
	// the measurements: well below 1 when other processes took the cores
	// (the figures then understate the engine). Idle pool threads spin
	// at most 50 µs before they block, so long serial stretches lower it
	// a little even on an idle machine.
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
			dt   string
			fast bool
		}
		var variants []variant
		for _, dt := range o.DTypes {
			variants = append(variants, variant{dt, false})
			if o.Fast && strings.EqualFold(dt, "bf16") {
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
			m, err := o.load(ctx, name, cfg, dt, model.Options{Device: backends[0], Context: mo.Prefill + mo.Decode + 1})
			if err != nil {
				return out, fmt.Errorf("bench: %s %v: %w", name, dt, err)
			}
			for i, t := range o.Threads {
				m2, err := m.WithDevice(backends[i])
				if err != nil {
					return out, fmt.Errorf("bench: %s %v threads %d: %w", name, dt, t, err)
				}
				r, err := measure(ctx, m2, mo)
				m2.Close()
				if err != nil {
					return out, fmt.Errorf("bench: %s %v threads %d: %w", name, dt, t, err)
				}
				r.Model, r.DType, r.Threads = name, label(dt), t
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

// measure times prefill of o.Prefill tokens and o.Decode single-token
// steps, after an untimed warm-up of both, as llama-bench warms up before
// it measures: the first run touches the activations' and the KV cache's
// memory for the first time, which costs a page fault per 4 KiB (19 µs
// each on the 2-core guests of bench/RESULTS.md, 20 ms for the 34m
// preset's 4 MB of prompt logits alone), a cost of the process's first
// prompt, not of the engine's prefill.
func measure(ctx context.Context, m *model.Model, o Options) (Result, error) {
	cfg := m.Config()
	prompt := benchPrompt(cfg, o.Prefill)
	r := Result{Params: cfg.Params(), Device: m.Device().Name(), WeightBytes: m.WeightBytes()}
	var bestPrefill, bestDecode time.Duration
	warm := m.NewSession()
	logits, err := warm.Forward(ctx, prompt, false)
	for i := 0; i < o.Decode && err == nil; i++ {
		logits, err = warm.Forward(ctx, []int{sample.Argmax(logits)}, false)
	}
	warm.Close()
	if err != nil {
		return r, err
	}
	cpu0, wall0 := cputime.Process(), time.Now()
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
		tok := sample.Argmax(logits)
		t0 = time.Now()
		for i := 0; i < o.Decode; i++ {
			if logits, err = s.Forward(ctx, []int{tok}, false); err != nil {
				return r, err
			}
			tok = sample.Argmax(logits)
		}
		d = time.Since(t0)
		if rep == 0 || d < bestDecode {
			bestDecode = d
		}
		s.Close() // its cache's blocks go to the next repetition's session, as a serving process reuses them
	}
	if threads, ok := deviceThreads(m); ok { // a CPU backend
		r.CPUShare = (cputime.Process() - cpu0).Seconds() / time.Since(wall0).Seconds() / float64(threads)
	}
	r.PrefillTokS = float64(o.Prefill) / bestPrefill.Seconds()
	r.DecodeTokS = float64(o.Decode) / bestDecode.Seconds()
	// Prefill FLOPs: every layer matrix for every prompt token, the head for
	// the last token only (attention's O(n²) work is left out: under 2% at
	// these lengths).
	H, Q, KV, F := cfg.HiddenSize, cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize
	layerElems := int64(cfg.NumHiddenLayers) * int64(H*(Q+2*KV)+Q*H+3*F*H)
	flops := 2 * (float64(layerElems)*float64(o.Prefill) + float64(cfg.VocabSize)*float64(cfg.HiddenSize))
	r.PrefillGF = flops / bestPrefill.Seconds() / 1e9
	r.DecodeGBs = float64(r.WeightBytes) * r.DecodeTokS / 1e9
	return r, nil
}

func (r Result) line() string {
	return fmt.Sprintf("%s %v %s t%d: prefill %.1f tok/s (%.1f GFLOP/s, %.0f%% of %.0f), decode %.1f tok/s (%.1f GB/s, %.0f%% of %.1f), CPU share %.0f%%",
		r.Model, r.DType, r.Device, r.Threads, r.PrefillTokS, r.PrefillGF, 100*r.PeakFraction(), r.Machine.FMAPeak,
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
			r.Model, float64(r.Params)/1e6, r.DType, float64(r.WeightBytes)/1e6, r.Device, r.Threads,
			r.PrefillTokS, r.PrefillGF, 100*r.PeakFraction(), r.DecodeTokS, r.DecodeGBs, 100*r.BandwidthFraction(),
			100*r.CPUShare)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonResult is one Result as a JSON line (WriteJSON): the figures a script
// needs, in units named by the keys.
type jsonResult struct {
	Model         string  `json:"model"`
	DType         string  `json:"dtype"`
	Kernels       string  `json:"kernels"`
	Threads       int     `json:"threads"`
	Params        int64   `json:"params"`
	WeightBytes   int64   `json:"weight_bytes"`
	PrefillTokS   float64 `json:"prefill_tok_s"`
	DecodeTokS    float64 `json:"decode_tok_s"`
	PrefillGFLOPs float64 `json:"prefill_gflop_s"`
	DecodeGBs     float64 `json:"decode_gb_s"`
	BandwidthGBs  float64 `json:"bandwidth_gb_s"`
	FMAPeakGFLOPs float64 `json:"fma_peak_gflop_s"`
	CPUShare      float64 `json:"cpu_share"`
}

// WriteJSON prints each result as a JSON line, with the machine references
// of its thread count.
func WriteJSON(w io.Writer, _ []Machine, rs []Result) error {
	enc := json.NewEncoder(w)
	for _, r := range rs {
		if err := enc.Encode(jsonResult{Model: r.Model, DType: r.DType, Kernels: r.Device, Threads: r.Threads,
			Params: r.Params, WeightBytes: r.WeightBytes, PrefillTokS: r.PrefillTokS, DecodeTokS: r.DecodeTokS,
			PrefillGFLOPs: r.PrefillGF, DecodeGBs: r.DecodeGBs, BandwidthGBs: r.Machine.Bandwidth,
			FMAPeakGFLOPs: r.Machine.FMAPeak, CPUShare: r.CPUShare}); err != nil {
			return err
		}
	}
	return nil
}

// SessionResult is the aggregate decode throughput of concurrent sessions
// of one model: Sessions goroutines, each decoding its own fork of one
// prompt.
type SessionResult struct {
	Model    string
	DType    string
	Threads  int
	Device   string
	Sessions int
	// BatchedTokS is the tokens/s of all sessions together when each calls
	// a shared model.Batcher (their steps run as model.DecodeBatch).
	BatchedTokS float64
	// SeparateTokS is the same with each session calling its own
	// Session.Forward (one matrix-vector pass per session and step).
	SeparateTokS float64
	// MeanBatch is the mean batch size the Batcher formed (best run).
	MeanBatch float64
	// BatchedTokCPU and SeparateTokCPU are the same tokens per second of
	// the process's CPU time (best run): what the work costs, whatever
	// share of the cores other processes took during the run.
	BatchedTokCPU, SeparateTokCPU float64
	// RoundsTokCPU are the batched and the separate tokens per CPU-second
	// of each round, in order ([round][0] batched, [round][1] separate):
	// a round measures the counts one right after the other, so a ratio
	// of two counts within one round leaves out the minutes-long swings
	// of a shared machine that the best runs of each count, taken from
	// different rounds, keep (PairedRatioCPU).
	RoundsTokCPU [][2]float64
}

// PairedRatioCPU is r's batched tokens per CPU-second over one's (the same
// model, dtype and threads with one session, the better of its batched and
// separate figures), round by round; the median of the rounds' ratios, and
// false when they were not measured in the same rounds.
func PairedRatioCPU(r, one SessionResult) (float64, bool) {
	if len(r.RoundsTokCPU) == 0 || len(r.RoundsTokCPU) != len(one.RoundsTokCPU) {
		return 0, false
	}
	ratios := make([]float64, len(r.RoundsTokCPU))
	for i, rr := range r.RoundsTokCPU {
		base := max(one.RoundsTokCPU[i][0], one.RoundsTokCPU[i][1])
		if base <= 0 || rr[0] <= 0 {
			return 0, false // no CPU time on this platform
		}
		ratios[i] = rr[0] / base
	}
	slices.Sort(ratios)
	n := len(ratios)
	if n%2 == 1 {
		return ratios[n/2], true
	}
	return (ratios[n/2-1] + ratios[n/2]) / 2, true
}

// batchWindow is how long the benchmark's Batcher waits for the sessions
// of the last batch to come back.
const batchWindow = 2 * time.Millisecond

// RunSessions measures, for every model, dtype and thread count of o, the
// aggregate decode tokens/s of each number of concurrent sessions in
// counts, batched and separate. The counts are measured interleaved,
// round after round (o.Reps rounds, the best kept), so that a busy
// machine's load falls on all of them alike.
func RunSessions(ctx context.Context, o Options, counts []int) ([]SessionResult, error) {
	if len(counts) == 0 {
		return nil, fmt.Errorf("bench: no session counts")
	}
	for _, n := range counts {
		if n <= 0 {
			return nil, fmt.Errorf("bench: %d sessions", n)
		}
	}
	var out []SessionResult
	err := eachModel(ctx, o, func(name, dt string, t int, m *model.Model) error {
		rs, err := measureSessions(ctx, m, o, counts)
		if err != nil {
			return err
		}
		for i := range rs {
			rs[i].Model, rs[i].DType, rs[i].Threads = name, dt, t
			if o.Progress != nil {
				fmt.Fprintln(o.Progress, rs[i].line())
			}
		}
		out = append(out, rs...)
		return nil
	})
	return out, err
}

// eachModel builds a model with random weights for every model preset,
// dtype and thread count of o (a CPU backend of that many threads) and
// calls fn with it, one at a time, freeing each before the next (the 1.8b
// preset's F32 weights alone are 7 GB). An error names the combination.
func eachModel(ctx context.Context, o Options, fn func(name, dt string, threads int, m *model.Model) error) error {
	for _, name := range o.Models {
		cfg, err := model.Preset(name)
		if err != nil {
			return err
		}
		for _, dt := range o.DTypes {
			for _, t := range o.Threads {
				m, err := o.load(ctx, name, cfg, dt, model.Options{Threads: t, Context: o.Prefill + o.Decode + 1})
				if err != nil {
					return fmt.Errorf("bench: %s %v: %w", name, dt, err)
				}
				err = fn(name, label(dt), t, m)
				m.Close()
				if err != nil {
					return fmt.Errorf("bench: %s %v threads %d: %w", name, dt, t, err)
				}
				runtime.GC()
				debug.FreeOSMemory()
			}
		}
	}
	return nil
}

// label is a weight type's name in results: "F32", "Q4_K_M".
func label(dt string) string { return strings.ToUpper(dt) }

// load builds the model of preset name (config cfg) with weights of type
// dt: random ones in memory for f32 and bf16, the GGUF file of
// o.GGUFDir for a quantization (written there with random weights,
// seed 1, when absent).
func (o Options) load(ctx context.Context, name string, cfg model.Config, dt string, mo model.Options) (*model.Model, error) {
	switch strings.ToLower(dt) {
	case "f32":
		return model.NewRandom(ctx, cfg, kernels.F32, 1, mo)
	case "bf16":
		return model.NewRandom(ctx, cfg, kernels.BF16, 1, mo)
	}
	path, err := o.GGUFFile(ctx, name, dt)
	if err != nil {
		return nil, err
	}
	return model.Load(ctx, path, mo)
}

// GGUFFile returns the GGUF file of preset name's random model in
// quantization dt (GGUFDir/<name>-<dt>.gguf), writing it first when absent
// (quantize.Random, seed 1; atomically, beside it).
func (o Options) GGUFFile(ctx context.Context, name, dt string) (string, error) {
	dir := o.GGUFDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "ndbg-bench-gguf")
	}
	path := filepath.Join(dir, name+"-"+strings.ToLower(dt)+".gguf")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	cfg, err := model.Preset(name)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	defer os.Remove(tmp.Name())
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "writing %s\n", path)
	}
	err = quantize.Random(ctx, &cfg, "ndbg bench "+name, dt, 1, 0, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("bench: writing %s: %w", path, err)
	}
	return path, nil
}

// benchPrompt is the benchmarks' prompt of n tokens: fixed, spread over
// the vocabulary.
func benchPrompt(cfg model.Config, n int) []int {
	prompt := make([]int, n)
	for i := range prompt {
		prompt[i] = (i*7919 + 1) % cfg.VocabSize
	}
	return prompt
}

// deviceThreads is the number of threads of m's device, and whether it has
// that notion (a CPU backend does; 1, false otherwise).
func deviceThreads(m *model.Model) (int, bool) {
	if d, ok := m.Device().(interface{ Threads() int }); ok {
		return d.Threads(), true
	}
	return 1, false
}

// measureSessions prefills one prompt and times, for each count, that many
// forks of it decoding o.Decode tokens each on their own goroutines.
func measureSessions(ctx context.Context, m *model.Model, o Options, counts []int) ([]SessionResult, error) {
	prompt := benchPrompt(m.Config(), max(1, o.Prefill))
	base := m.NewSession()
	if _, err := base.Forward(ctx, prompt, false); err != nil {
		return nil, err
	}
	rs := make([]SessionResult, len(counts))
	for i, n := range counts {
		rs[i] = SessionResult{Device: m.Device().Name(), Sessions: n}
	}
	for rep := 0; rep < max(1, o.Reps); rep++ {
		for i, n := range counts {
			var round [2]float64
			for k, batched := range []bool{true, false} {
				var b *model.Batcher
				if batched {
					b = model.NewBatcher(m, n, batchWindow)
				}
				cpu0 := cputime.Process()
				d, err := decodeConcurrently(ctx, base, n, o.Decode, b)
				if err != nil {
					return nil, err
				}
				tokens := float64(n * o.Decode)
				tokS, tokCPU := tokens/d.Seconds(), 0.0
				if cpu := cputime.Process() - cpu0; cpu > 0 { // 0 where the platform has no CPU time
					tokCPU = tokens / cpu.Seconds()
				}
				round[k] = tokCPU
				if batched {
					if tokS > rs[i].BatchedTokS {
						batches, steps := b.Stats()
						rs[i].BatchedTokS, rs[i].MeanBatch = tokS, float64(steps)/float64(max(1, batches))
					}
					rs[i].BatchedTokCPU = max(rs[i].BatchedTokCPU, tokCPU)
				} else {
					rs[i].SeparateTokS = max(rs[i].SeparateTokS, tokS)
					rs[i].SeparateTokCPU = max(rs[i].SeparateTokCPU, tokCPU)
				}
			}
			rs[i].RoundsTokCPU = append(rs[i].RoundsTokCPU, round)
		}
	}
	return rs, nil
}

// decodeConcurrently forks n sessions from base and decodes steps greedy
// tokens in each on its own goroutine, through b when not nil, returning
// the wall time from the start of the first to the end of the last.
func decodeConcurrently(ctx context.Context, base *model.Session, n, steps int, b *model.Batcher) (time.Duration, error) {
	vocab := base.Model().Config().VocabSize
	sessions := make([]*model.Session, n)
	for i := range sessions {
		sessions[i] = base.Fork()
	}
	errs := make(chan error, n)
	t0 := time.Now()
	for i, s := range sessions {
		go func() {
			tok := (i*31 + 5) % vocab // each session its own continuation
			for range steps {
				var logits []float32
				var err error
				if b != nil {
					logits, err = b.Forward(ctx, s, tok)
				} else {
					logits, err = s.Forward(ctx, []int{tok}, false)
				}
				if err != nil {
					errs <- err
					return
				}
				tok = sample.Argmax(logits)
			}
			errs <- nil
		}()
	}
	var err error
	for range sessions {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	d := time.Since(t0)
	for _, s := range sessions {
		s.Close()
	}
	return d, err
}

func (r SessionResult) line() string {
	return fmt.Sprintf("%s %v %s t%d, %d sessions: batched %.1f tok/s, %.1f tok/CPU-s (mean batch %.1f); separate %.1f tok/s, %.1f tok/CPU-s",
		r.Model, r.DType, r.Device, r.Threads, r.Sessions, r.BatchedTokS, r.BatchedTokCPU, r.MeanBatch, r.SeparateTokS, r.SeparateTokCPU)
}

// WriteSessionsTable prints session results as a Markdown table, with
// each row's batched throughput relative to one session's: the best of the
// batched and separate figures of the row of the same model, dtype and
// threads with Sessions 1, when measured (one session runs the same code
// either way); per CPU-second also round by round (PairedRatioCPU, the
// last column: the figure to compare runs by on a shared machine).
func WriteSessionsTable(w io.Writer, rs []SessionResult) error {
	var b strings.Builder
	b.WriteString("| model | weights | kernels | threads | sessions | batched tok/s | × one session | batched tok/CPU-s | × one session | mean batch | separate tok/s | separate tok/CPU-s | × one per CPU-s, median of rounds |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		ratio, ratioCPU, paired := "-", "-", "-"
		for _, one := range rs {
			if one.Sessions == 1 && one.Model == r.Model && one.DType == r.DType && one.Threads == r.Threads {
				ratio = fmt.Sprintf("%.2f", r.BatchedTokS/max(one.BatchedTokS, one.SeparateTokS))
				ratioCPU = fmt.Sprintf("%.2f", r.BatchedTokCPU/max(one.BatchedTokCPU, one.SeparateTokCPU))
				if p, ok := PairedRatioCPU(r, one); ok {
					paired = fmt.Sprintf("%.2f (%d)", p, len(r.RoundsTokCPU))
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %v | %s | %d | %d | %.1f | %s | %.1f | %s | %.1f | %.1f | %.1f | %s |\n", r.Model, r.DType, r.Device, r.Threads,
			r.Sessions, r.BatchedTokS, ratio, r.BatchedTokCPU, ratioCPU, r.MeanBatch, r.SeparateTokS, r.SeparateTokCPU, paired)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
