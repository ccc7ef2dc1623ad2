package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/bench"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/model"
)

// runBench measures prefill and decode throughput of random-weight models
// against the machine's measured bandwidth and FMA peak.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := bench.DefaultOptions()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	models := fs.String("models", strings.Join(o.Models, ","), "model presets, comma-separated (34m, 134m, 1.8b, tiny)")
	dtypes := fs.String("dtypes", "f32,bf16", "weight types, comma-separated (f32, bf16, and q8_0, q4_0, q4_k_m: llama.cpp's quantizations, from GGUF files in --gguf)")
	fs.StringVar(&o.GGUFDir, "gguf", "", "folder of the quantized models' GGUF files, <preset>-<dtype>.gguf, written there (random weights, seed 1) when absent (default: ndbg-bench-gguf in the temporary folder)")
	threads := fs.String("threads", "1,2", "thread counts, comma-separated")
	fs.IntVar(&o.Prefill, "prefill", o.Prefill, "prompt tokens per prefill measurement")
	fs.IntVar(&o.Decode, "decode", o.Decode, "decode steps per measurement")
	fs.IntVar(&o.LargePrefill, "large-prefill", o.LargePrefill, "prompt tokens for models over 1B parameters")
	fs.IntVar(&o.LargeDecode, "large-decode", o.LargeDecode, "decode steps for models over 1B parameters")
	fs.IntVar(&o.Reps, "reps", o.Reps, "repetitions (best kept)")
	fs.BoolVar(&o.Fast, "fast", false, "also measure BF16 models with BF16 activations in the products (kernels.Fast)")
	shapes := fs.Bool("shapes", false, "print each model's shape as a JSON line and measure nothing (bench/llamacpp.sh writes the same shapes for llama.cpp)")
	asJSON := fs.Bool("json", false, "print the results as JSON lines instead of a Markdown table")
	sessions := fs.String("sessions", "", "instead, measure aggregate decode tokens/s of this many concurrent sessions, comma-separated (e.g. 1,4,8), batched (model.Batcher) and separate, interleaved round by round (the last column: the median of the rounds' own ratios to one session, per CPU-second); --prefill is each session's shared prompt")
	busy := fs.Bool("busy", false, "instead, measure decode tokens/s on the machine as it is and beside a child process that keeps one core busy (a shell loop pinned to the last CPU), interleaved, and their ratio")
	machineOnly := fs.Bool("machine", false, "measure only the machine (read bandwidth, F32 FMA peak) at each thread count")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it): where the time of a row goes")
	cli.SetUsage(fs, "ndbg bench [--models M,...] [--dtypes f32,bf16] [--threads N,...] [--sessions N,... | --busy | --machine | --shapes] [flags]")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	var err error
	if o.Models, err = cli.List("models", *models, model.PresetNames()); err != nil {
		return err
	}
	if err := cli.AtLeast(cli.Bound{Flag: "prefill", Value: o.Prefill, Min: 1}, cli.Bound{Flag: "decode", Value: o.Decode, Min: 1},
		cli.Bound{Flag: "large-prefill", Value: o.LargePrefill, Min: 1}, cli.Bound{Flag: "large-decode", Value: o.LargeDecode, Min: 1},
		cli.Bound{Flag: "reps", Value: o.Reps, Min: 1}); err != nil {
		return err
	}
	if *shapes {
		return writeShapes(stdout, o.Models)
	}
	o.DTypes = nil
	for _, d := range strings.Split(*dtypes, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		if !slices.Contains(ndbg.QuantizeTypes, d) {
			return cli.Usagef("--dtypes: unknown %q (have %s)", d, strings.Join(ndbg.QuantizeTypes, ", "))
		}
		o.DTypes = append(o.DTypes, d)
	}
	o.Threads = nil
	for _, t := range strings.Split(*threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n <= 0 {
			return cli.Usagef("--threads: %q is not a thread count (a positive integer)", t)
		}
		o.Threads = append(o.Threads, n)
	}
	o.Progress = stderr
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if *busy {
		if *asJSON || *sessions != "" {
			return cli.Usagef("--busy goes with neither --json nor --sessions")
		}
		rs, err := bench.RunBusy(ctx, o)
		if werr := bench.WriteBusyTable(stdout, rs); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	if *sessions != "" {
		if *asJSON {
			return cli.Usagef("--json is not supported with --sessions")
		}
		var counts []int
		for _, c := range strings.Split(*sessions, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil || n <= 0 {
				return cli.Usagef("--sessions: %q is not a session count (a positive integer)", c)
			}
			counts = append(counts, n)
		}
		rs, err := bench.RunSessions(ctx, o, counts)
		if werr := bench.WriteSessionsTable(stdout, rs); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	fmt.Fprintln(stderr, "measuring memory bandwidth and FMA peak...")
	machines := bench.MeasureMachine(o.Threads)
	if *machineOnly {
		return bench.WriteTable(stdout, machines, nil)
	}
	rs, err := bench.Run(ctx, o, machines)
	write := bench.WriteTable
	if *asJSON {
		write = bench.WriteJSON
	}
	if werr := write(stdout, machines, rs); werr != nil && err == nil {
		err = werr
	}
	return err
}

// modelShape is a preset's shape as bench/llamacpp.sh needs it to write a
// GGUF file of the same architecture for llama.cpp.
type modelShape struct {
	Model     string  `json:"model"`
	Hidden    int     `json:"hidden"`
	Layers    int     `json:"layers"`
	Heads     int     `json:"heads"`
	KVHeads   int     `json:"kv_heads"`
	HeadDim   int     `json:"head_dim"`
	FFN       int     `json:"ffn"`
	Vocab     int     `json:"vocab"`
	NormEps   float32 `json:"norm_eps"`
	RopeTheta float64 `json:"rope_theta"`
	Context   int     `json:"context"`
}

// writeShapes prints one JSON line per named preset. Presets with features
// a plain llama GGUF cannot state (sliding windows, RoPE scaling) are errors
// rather than a silently different peer model.
func writeShapes(w io.Writer, names []string) error {
	enc := json.NewEncoder(w)
	for _, name := range names {
		c, err := model.Preset(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		if c.SlidingWindow > 0 || c.RopeScaling != nil {
			return fmt.Errorf("bench --shapes: preset %s has sliding windows or RoPE scaling, which the llama.cpp peer model would not share", name)
		}
		if err := enc.Encode(modelShape{Model: strings.TrimSpace(name), Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads,
			KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim, FFN: c.IntermediateSize, Vocab: c.VocabSize, NormEps: float32(c.RMSNormEps),
			RopeTheta: c.RopeTheta, Context: c.MaxPositionEmbeddings}); err != nil {
			return err
		}
	}
	return nil
}
