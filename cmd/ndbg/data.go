package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ndbg/ndbg/dataset"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/progen"
	"github.com/ndbg/ndbg/tokenizer"
)

// bytesPerToken estimates tokens from bytes when no tokenizer is given.
const bytesPerToken = 3.5

// runData is `ndbg data`: the training-data pipeline (package dataset).
func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("data", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 1000, "number of programs")
	seed := fs.Uint64("seed", 1, "master seed")
	out := fs.String("out", "", "output directory (required)")
	var famDoc strings.Builder
	for _, f := range progen.Families() {
		fmt.Fprintf(&famDoc, "\n  %-10s %s", f, progen.FamilyDoc(f))
	}
	fams := fs.String("families", "", "comma-separated program families, one named twice drawn twice as often (default: all but long):"+famDoc.String())
	tok := fs.String("tokenizer", "", "tokenizer.json to count tokens with")
	workers := fs.Int("workers", 0, "parallel tracers (default GOMAXPROCS)")
	traj := fs.Int("traj", 4, "trajectories per program")
	shard := fs.Int("shard", 256, "programs per shard")
	cli.SetUsage(fs, "ndbg data --out DIR [--n N] [--seed S] [--families F,...] [flags]",
		"Generates --n programs, traces them and writes DSL trajectory shards and stats.json to DIR.")
	// The GPU machine (train/gpu) has no bubblewrap, and traces must come
	// from the Python version the model is meant for, not the one on PATH.
	python := fs.String("python", "", "the interpreter that traces the programs (default: python3 on PATH); its version is recorded in stats.json")
	unsandboxed := fs.Bool("unsandboxed", false,
		"trace WITHOUT the operating-system sandbox (docs/security.md), where it cannot start: acceptable only because the programs are progen's own")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *out == "" {
		return cli.Usagef("need --out DIR, where the shards are written")
	}
	if err := cli.AtLeast(cli.Bound{Flag: "n", Value: *n, Min: 1}, cli.Bound{Flag: "workers", Value: *workers},
		cli.Bound{Flag: "traj", Value: *traj, Min: 1}, cli.Bound{Flag: "shard", Value: *shard, Min: 1}); err != nil {
		return err
	}
	families, err := cli.List("families", *fams, progen.Families())
	if err != nil {
		return err
	}
	cfg := dataset.Config{N: *n, Seed: *seed, OutDir: *out, Workers: *workers, Trajectories: *traj, ShardPrograms: *shard,
		Families: families}
	cfg.Limits.Python, cfg.Limits.Unsandboxed = *python, *unsandboxed
	if *tok != "" {
		t, err := tokenizer.Load(*tok)
		if err != nil {
			return fmt.Errorf("tokenizer: %w", err)
		}
		cfg.Tokenizer = t
	}
	cfg.Progress = progress(stderr, *n)
	st, err := dataset.Run(ctx, cfg)
	if st != nil {
		if isTerminal(stderr) {
			fmt.Fprintln(stderr)
		}
		summary(stdout, st)
	}
	return err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress reports on stderr: a bar redrawn in place on a terminal, a plain
// line every ten seconds otherwise.
func progress(w io.Writer, total int) func(int, *dataset.Stats) {
	tty := isTerminal(w)
	var last time.Time
	return func(done int, s *dataset.Stats) {
		now := time.Now()
		every := 10 * time.Second
		if tty {
			every = 200 * time.Millisecond
		}
		if done < total && now.Sub(last) < every {
			return
		}
		last = now
		tok, approx := float64(s.Tokens), ""
		if !s.TokensCounted {
			tok, approx = float64(s.Bytes)/bytesPerToken, "~"
		}
		rate := tok / max(s.ElapsedSec, 1e-3) * 60
		fails := 0
		for _, v := range s.Failures {
			fails += v
		}
		msg := fmt.Sprintf("%d/%d programs, %d trajectories, %.1f MB, %s%.2fM tok/min, %d failed, %.0fs",
			done, total, s.Trajectories, float64(s.Bytes)/1e6, approx, rate/1e6, fails, s.ElapsedSec)
		if tty {
			const width = 30
			k := width * done / max(total, 1)
			fmt.Fprintf(w, "\r[%s%s] %s", strings.Repeat("#", k), strings.Repeat(".", width-k), msg)
		} else {
			fmt.Fprintln(w, "ndbg data:", msg)
		}
	}
}

// summary prints the run's statistics.
func summary(w io.Writer, s *dataset.Stats) {
	fmt.Fprintf(w, "programs      %d (of %d), %d shards, python %s\n", s.Programs, s.N, s.Shards, strings.Fields(s.Python + " ?")[0])
	fmt.Fprintf(w, "trajectories  %d\n", s.Trajectories)
	fmt.Fprintf(w, "bytes         %d\n", s.Bytes)
	est := float64(s.Bytes) / bytesPerToken
	if s.TokensCounted {
		fmt.Fprintf(w, "tokens        %d (%.2fM/min)\n", s.Tokens, float64(s.Tokens)/max(s.ElapsedSec, 1e-3)*60/1e6)
	} else {
		fmt.Fprintf(w, "tokens        not counted (no --tokenizer); estimate bytes/%.1f = %.0f (%.2fM/min)\n", bytesPerToken, est, est/max(s.ElapsedSec, 1e-3)*60/1e6)
	}
	fmt.Fprintf(w, "elapsed       %.1fs\n", s.ElapsedSec)
	fmt.Fprintf(w, "families      %s\n", counts(s.ByFamily, nil))
	fmt.Fprintf(w, "actions       %s\n", counts(s.Actions, nil))
	fmt.Fprintf(w, "horizons      %s\n", counts(s.Horizons, bucketOrder))
	fmt.Fprintf(w, "trace events  %s\n", counts(s.TraceEvents, bucketOrder))
	fmt.Fprintf(w, "constructs    %d distinct\n", len(s.Constructs))
	fmt.Fprintf(w, "raised        %d (undeclared: %d)\n", s.Raised, s.Unintended)
	fmt.Fprintf(w, "address reprs %d trajectories (unlearnable \" at 0x\" values)\n", s.AddressReprs)
	if len(s.Failures) == 0 {
		fmt.Fprintln(w, "failures      none")
	} else {
		fmt.Fprintf(w, "failures      %s\n", counts(s.Failures, nil))
	}
}

// bucketOrder sorts histogram buckets "0", "1", "2-3", ... numerically.
func bucketOrder(a, b string) int {
	lo := func(s string) int {
		var v int
		fmt.Sscanf(s, "%d", &v)
		return v
	}
	return lo(a) - lo(b)
}

func counts(m map[string]int, cmp func(a, b string) int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	if cmp == nil {
		cmp = strings.Compare
	}
	slices.SortFunc(keys, cmp)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
