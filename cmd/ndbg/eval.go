package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/eval"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/progen"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// runEval is `ndbg eval`: next-state exact match on held-out generated
// programs and/or CRUXEval-style items, and CRUXEval-O/-I pass@1 (package
// eval), with a JSON summary and an optional Markdown report with charts.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The real runs' limits: the programs are small (--backend real is the
	// harness's sanity check: it must score 100%).
	bf := cli.BackendFlags{Limits: trace.Limits{Timeout: 2 * time.Second, MaxEvents: 5000}}
	bf.Register(fs, cli.Neural, cli.Real)
	n := fs.Int("n", 50, "held-out generated programs for next-state evaluation (0: none)")
	seed := fs.Uint64("seed", 99, "progen master seed of the generated programs (use one never used for training)")
	fams := fs.String("families", "", "comma-separated progen families (default: all but long; have "+strings.Join(progen.Families(), ",")+")")
	items := fs.String("items", "", "CRUXEval-style JSONL (code, input, output, id; entry f(<input>)); 'dev': CRUXEval's development split, built in")
	limit := fs.Int("limit", 0, "use only the first N items of --items (0: all)")
	tasks := fs.String("tasks", "next,cruxeval", "what to run: next (next-state exact match), cruxeval (on --items with outputs)")
	mode := fs.String("pairs", "policy", "next-state pairs: policy (the training policy's trajectories) or every (every state, six step actions)")
	traj := fs.Int("traj", 4, "trajectories sampled per program (policy pairs)")
	maxPairs := fs.Int("max-pairs", 32, "cap on next-state pairs per program")
	strategies := fs.String("strategies", strings.Join(eval.Strategies(), ","), "CRUXEval strategies")
	samples := fs.Int("samples", 1, "CRUXEval samples per item and strategy (1: greedy pass@1; more: sampled, unbiased pass@1)")
	temp := fs.Float64("temperature", 0.2, "sampling temperature when --samples > 1")
	topP := fs.Float64("top-p", 0.95, "nucleus sampling when --samples > 1")
	sampleSeed := fs.Uint64("sample-seed", 1, "seed of sample 0 (sample k uses seed+k)")
	maxSteps := fs.Int("max-steps", 200, "cap on step_over actions of the steps strategy")
	workers := fs.Int("workers", 2, "programs evaluated in parallel (sessions over one model)")
	reportDir := fs.String("report", "", "write DIR/report.md and PNG charts")
	jsonFile := fs.String("json", "", "write the JSON summary to FILE instead of stdout")
	cli.SetUsage(fs, "ndbg eval [--n N] [--items FILE|dev] [--tasks next,cruxeval] [--report DIR] [--model DIR | --backend real] [flags]",
		"Prints a JSON summary (or writes it to --json FILE); --report DIR also writes DIR/report.md and its charts.")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	taskList, err := cli.List("tasks", *tasks, []string{"next", "cruxeval"})
	if err != nil {
		return err
	}
	doNext, doCrux := slices.Contains(taskList, "next"), slices.Contains(taskList, "cruxeval")
	if !doNext && !doCrux {
		return cli.Usagef("--tasks names no task (want next, cruxeval)")
	}
	if doCrux && *items == "" && !doNext {
		return cli.Usagef("the cruxeval task needs --items FILE (or --items dev)")
	}
	if _, err := cli.List("pairs", *mode, []string{"policy", "every"}); err != nil {
		return err
	}
	families, err := cli.List("families", *fams, progen.Families())
	if err != nil {
		return err
	}
	strategyList, err := cli.List("strategies", *strategies, eval.Strategies())
	if err != nil {
		return err
	}
	if err := cli.AtLeast(cli.Bound{Flag: "n", Value: *n}, cli.Bound{Flag: "limit", Value: *limit},
		cli.Bound{Flag: "traj", Value: *traj, Min: 1}, cli.Bound{Flag: "max-pairs", Value: *maxPairs, Min: 1},
		cli.Bound{Flag: "samples", Value: *samples, Min: 1}, cli.Bound{Flag: "max-steps", Value: *maxSteps, Min: 1},
		cli.Bound{Flag: "workers", Value: *workers, Min: 1}); err != nil {
		return err
	}
	if !(*temp >= 0) || !(*topP > 0 && *topP <= 1) {
		return cli.Usagef("--temperature %g and --top-p %g: want a temperature of at least 0 and a top-p in (0, 1]", *temp, *topP)
	}

	lim := bf.Limits
	m, err := bf.OpenModel(ctx)
	if errors.Is(err, ndbg.ErrNoDefaultModel) {
		return fmt.Errorf("%w\n(the default model is not trained yet: give --model DIR, or run --backend real for the harness's sanity check)", err)
	}
	if err != nil {
		return err
	}
	be := eval.Real(lim)
	modelName := "real debugger"
	if m != nil {
		defer m.Close()
		modelName = m.Name()
		if modelName == "" {
			modelName = bf.Model
		}
		p := sample.Params{Seed: *sampleSeed}
		if *samples > 1 {
			p.Temperature, p.TopP = *temp, *topP
		}
		be = eval.Neural(m, p)
	}

	var gen, crux []eval.Item
	if doNext && *n > 0 {
		var err error
		if gen, err = eval.Generated(*seed, *n, families); err != nil {
			return err
		}
	}
	if *items != "" {
		var err error
		if *items == "dev" {
			crux, err = eval.DevItems()
		} else {
			crux, err = eval.LoadItems(*items)
		}
		if err != nil {
			return err
		}
		if *limit > 0 && *limit < len(crux) {
			crux = crux[:*limit]
		}
	}

	sum := &eval.Summary{Model: modelName, Backend: be.Name(), Args: args}
	if py, err := trace.FindPython(ctx); err == nil {
		sum.Python = py
	}
	if doNext && len(gen)+len(crux) > 0 {
		res, err := eval.NextState(ctx, eval.NextConfig{Items: append(gen, crux...), Backend: be, Workers: *workers,
			Mode: *mode, Trajectories: *traj, MaxPairs: *maxPairs, Limits: lim, Progress: evalProgress(stderr, "next-state")})
		if err != nil {
			return err
		}
		sum.Next = res
		fmt.Fprintf(stderr, "next-state exact match: %.1f%% forward (%d), %.1f%% inverse (%d), %.1f%% all, %.0fs\n",
			pctOf(res.Forward.State, res.Forward.N), res.Forward.N, pctOf(res.Inverse.State, res.Inverse.N), res.Inverse.N,
			pctOf(res.All.State, res.All.N), res.ElapsedSec)
	}
	if doCrux && len(crux) > 0 {
		withOut := crux[:0:0]
		for _, it := range crux {
			if it.Output != "" {
				withOut = append(withOut, it)
			}
		}
		res, err := eval.CRUXEval(ctx, eval.CruxConfig{Items: withOut, Backend: be, Scorer: &eval.Scorer{Python: sum.Python, Unsandboxed: lim.Unsandboxed},
			Strategies: strategyList, Samples: *samples, MaxSteps: *maxSteps, Workers: *workers,
			Progress: evalProgress(stderr, "cruxeval")})
		if err != nil {
			return err
		}
		sum.Crux = res
		for _, s := range eval.Strategies() {
			if p := res.Scores[s]; p != nil {
				fmt.Fprintf(stderr, "cruxeval %-11s pass@1 %5.1f%% (%d/%d predictions)\n", s, p.Pass1, p.Correct, p.Samples)
			}
		}
	}
	if *reportDir != "" {
		if err := sum.WriteReport(*reportDir); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report: %s/report.md\n", *reportDir)
	}
	js, err := sum.JSON()
	if err != nil {
		return err
	}
	if *jsonFile != "" {
		if err := os.WriteFile(*jsonFile, js, 0o644); err != nil {
			return fmt.Errorf("write summary: %w", err)
		}
		return nil
	}
	_, err = stdout.Write(js)
	return err
}

func pctOf(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// evalProgress reports progress on stderr at most every five seconds.
func evalProgress(w io.Writer, what string) func(done, total int) {
	var last time.Time
	return func(done, total int) {
		if done < total && time.Since(last) < 5*time.Second {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "ndbg eval: %s %d/%d\n", what, done, total)
	}
}
