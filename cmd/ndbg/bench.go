package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg/bench"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/kernels"
)

// runBench measures prefill and decode throughput of random-weight models
// against the machine's measured bandwidth and FMA peak.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := bench.DefaultOptions()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	models := fs.String("models", strings.Join(o.Models, ","), "model presets, comma-separated (34m, 134m, 1.8b, tiny)")
	dtypes := fs.String("dtypes", "f32,bf16", "weight types, comma-separated (f32, bf16)")
	threads := fs.String("threads", "1,2", "thread counts, comma-separated")
	fs.IntVar(&o.Prefill, "prefill", o.Prefill, "prompt tokens per prefill measurement")
	fs.IntVar(&o.Decode, "decode", o.Decode, "decode steps per measurement")
	fs.IntVar(&o.LargePrefill, "large-prefill", o.LargePrefill, "prompt tokens for models over 1B parameters")
	fs.IntVar(&o.LargeDecode, "large-decode", o.LargeDecode, "decode steps for models over 1B parameters")
	fs.IntVar(&o.Reps, "reps", o.Reps, "repetitions (best kept)")
	fs.BoolVar(&o.Fast, "fast", false, "also measure BF16 models with BF16 activations in the products (kernels.Fast)")
	machineOnly := fs.Bool("machine", false, "measure only the machine (read bandwidth, F32 FMA peak) at each thread count")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	o.Models = strings.Split(*models, ",")
	o.DTypes = nil
	for _, d := range strings.Split(*dtypes, ",") {
		switch strings.ToLower(strings.TrimSpace(d)) {
		case "f32":
			o.DTypes = append(o.DTypes, kernels.F32)
		case "bf16":
			o.DTypes = append(o.DTypes, kernels.BF16)
		default:
			return fmt.Errorf("unknown dtype %q", d)
		}
	}
	o.Threads = nil
	for _, t := range strings.Split(*threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad thread count %q", t)
		}
		o.Threads = append(o.Threads, n)
	}
	o.Progress = stderr
	fmt.Fprintln(stderr, "measuring memory bandwidth and FMA peak...")
	machines := bench.MeasureMachine(o.Threads)
	if *machineOnly {
		return bench.WriteTable(stdout, machines, nil)
	}
	rs, err := bench.Run(ctx, o, machines)
	if werr := bench.WriteTable(stdout, machines, rs); werr != nil && err == nil {
		err = werr
	}
	return err
}
