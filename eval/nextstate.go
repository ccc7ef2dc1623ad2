package eval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dataset"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
)

// NextConfig configures the next-state evaluation.
type NextConfig struct {
	Items   []Item
	Backend Backend
	// Workers is the number of items evaluated in parallel, each with its
	// own tracer and sessions (default GOMAXPROCS).
	Workers int
	// Mode chooses the (state, action) pairs: "policy" (default) samples
	// trajectories with the training data's policy (statetree.DefaultParams)
	// and takes each of their steps; "every" takes every state with each
	// line-free action (the three steps and their inverses).
	Mode string
	// Trajectories sampled per item in policy mode (default 4).
	Trajectories int
	// MaxPairs caps the pairs per item (default 32), evenly spread.
	MaxPairs int
	// Limits bound each traced program (defaults as ndbg data: 2 s, 5000
	// events).
	Limits trace.Limits
	// Progress, when set, is called after each item (from one goroutine).
	Progress func(done, total int)
}

// Miss is one wrong prediction, kept as an example for the report.
type Miss struct {
	Item    string `json:"item"`
	Action  string `json:"action"`
	Horizon int    `json:"horizon"`
	From    string `json:"from"`
	Want    string `json:"want"`
	Got     string `json:"got"`
	Error   string `json:"error,omitempty"` // why the backend failed, where it did
}

// NextResult is the next-state evaluation's outcome.
type NextResult struct {
	Backend  string `json:"backend"`
	Setting  string `json:"setting"`
	Mode     string `json:"mode"`
	Items    int    `json:"items"`
	Programs int    `json:"programs"` // items traced and evaluated
	// Skipped counts items that could not be traced, by reason.
	Skipped map[string]int `json:"skipped"`
	// Forward and Inverse total the forward and inverse actions; All both.
	All      Tally             `json:"all"`
	Forward  Tally             `json:"forward"`
	Inverse  Tally             `json:"inverse"`
	ByAction map[string]*Tally `json:"by_action"`
	// ByFamily totals by item family (a progen family, or "items" for
	// CRUXEval-style JSONL): the two are different distributions.
	ByFamily map[string]*Tally `json:"by_family"`
	// ByHorizon is per action kind, per horizon bucket (dataset.Bucket:
	// 0, 1, 2-3, 4-7, ...: the number of states skipped).
	ByHorizon map[string]map[string]*Tally `json:"by_horizon"`
	// Calibration of the whole-state confidence against exact match; nil
	// for a backend whose predictions carry none (real).
	Calibration *Calibration `json:"calibration,omitempty"`
	Misses      []Miss       `json:"misses"`
	ElapsedSec  float64      `json:"elapsed_s"`
}

// Setting describes how the neural backend is prompted in NextState.
const Setting = "one action from a real state: the session starts at the real state (ndbg.StartAt, no earlier history), takes the action, and its state is compared with the real next state (statetree)"

// RealSetting describes how the real backend reaches the state.
const RealSetting = "the real session is brought to the state by step_into actions from the entry's call, takes the action, and its state is compared with the real next state of an independent trace (statetree)"

// maxMisses bounds the examples kept.
const maxMisses = 20

// pair is one (state, action) to predict.
type pair struct {
	pos, next int
	action    dsl.Action
	horizon   int
}

// NextState measures next-state exact match: each item is traced for real,
// (state, action) pairs are drawn over its state tree, and the backend
// predicts each pair's next state from the real state.
func NextState(ctx context.Context, cfg NextConfig) (*NextResult, error) {
	if cfg.Backend == nil {
		return nil, errors.New("eval: no backend")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Mode == "" {
		cfg.Mode = "policy"
	}
	if cfg.Mode != "policy" && cfg.Mode != "every" {
		return nil, fmt.Errorf("eval: unknown pair mode %q (want policy or every)", cfg.Mode)
	}
	if cfg.Trajectories <= 0 {
		cfg.Trajectories = 4
	}
	if cfg.MaxPairs <= 0 {
		cfg.MaxPairs = 32
	}
	if cfg.Limits.Timeout <= 0 {
		cfg.Limits.Timeout = 2 * time.Second
	}
	if cfg.Limits.MaxEvents <= 0 {
		cfg.Limits.MaxEvents = 5000
	}
	smp, err := statetree.NewSampler(statetree.DefaultParams())
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	start := time.Now()
	setting := Setting
	if cfg.Backend.Name() == "real" {
		setting = RealSetting
	}
	res := &NextResult{Backend: cfg.Backend.Name(), Setting: setting, Mode: cfg.Mode, Items: len(cfg.Items),
		Skipped: map[string]int{}, ByAction: map[string]*Tally{}, ByFamily: map[string]*Tally{}, ByHorizon: map[string]map[string]*Tally{}}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := trace.Parallel(ctx, len(cfg.Items), cfg.Workers, cfg.Limits, func(w *trace.Worker) func(context.Context, int) *itemResult {
		return func(ctx context.Context, i int) *itemResult { return evalItem(ctx, &cfg, smp, w, i) }
	})
	byItem := make([]*itemResult, len(cfg.Items))
	done := 0
	var firstErr error
	for r := range out {
		byItem[r.i] = r
		done++
		if r.err != nil && firstErr == nil {
			firstErr = r.err
			cancel()
		}
		if cfg.Progress != nil {
			cfg.Progress(done, len(cfg.Items))
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Merge in item order, so the result does not depend on scheduling.
	for _, r := range byItem {
		if r.skip != "" {
			res.Skipped[r.skip]++
			continue
		}
		res.Programs++
		for _, o := range r.outcomes {
			kind := o.action.Kind
			name := kind.String()
			tallyOf(res.ByAction, name).add(o)
			tallyOf(res.ByFamily, cfg.Items[r.i].Family).add(o)
			h := res.ByHorizon[name]
			if h == nil {
				h = map[string]*Tally{}
				res.ByHorizon[name] = h
			}
			tallyOf(h, dataset.Bucket(o.horizon)).add(o)
			res.All.add(o)
			if o.hasConf {
				if res.Calibration == nil {
					res.Calibration = &Calibration{}
				}
				res.Calibration.add(o.conf, o.state)
			}
			if kind.Inverse() {
				res.Inverse.add(o)
			} else {
				res.Forward.add(o)
			}
			// Failures are kept past the cap on wrong predictions (up to
			// twice it): they are what a reader needs to see first.
			if !o.state && (len(res.Misses) < maxMisses || o.err && len(res.Misses) < 2*maxMisses) {
				res.Misses = append(res.Misses, Miss{Item: r.id, Action: o.action.String(), Horizon: o.horizon,
					From: describe(&o.from), Want: describe(o.want), Got: describe(o.got), Error: o.why})
			}
		}
	}
	res.ElapsedSec = time.Since(start).Seconds()
	return res, nil
}

func tallyOf(m map[string]*Tally, k string) *Tally {
	t := m[k]
	if t == nil {
		t = &Tally{}
		m[k] = t
	}
	return t
}

// itemResult is one item's predictions.
type itemResult struct {
	i        int
	id       string
	skip     string // why the item was not evaluated
	err      error  // a failure that stops the evaluation (cancellation)
	outcomes []outcome
}

// evalItem traces item i, draws its pairs and predicts each.
func evalItem(ctx context.Context, cfg *NextConfig, smp *statetree.Sampler, w *trace.Worker, i int) *itemResult {
	it := &cfg.Items[i]
	r := &itemResult{i: i, id: it.ID}
	prog, err := dsl.NewProgram(it.Source, it.Entry)
	if err != nil {
		r.skip = "program"
		return r
	}
	traceRun := w.Run // a program from outside: an interpreter of its own
	if it.Generated {
		traceRun = w.RunGenerated
	}
	tr, err := traceRun(ctx, prog, it.Call)
	if ctx.Err() != nil {
		r.err = ctx.Err()
		return r
	}
	switch {
	case err != nil:
		r.skip = "trace"
		return r
	case tr.Truncated:
		r.skip = "trace_truncated"
		return r
	}
	tree, err := statetree.Build(prog, tr.Events)
	if err != nil {
		r.skip = "statetree"
		return r
	}
	pairs, err := drawPairs(cfg, smp, tree, uint64(i))
	if err != nil {
		r.err = err
		return r
	}
	run, err := cfg.Backend.Open(ctx, it)
	if err != nil {
		if ctx.Err() != nil {
			r.err = ctx.Err()
			return r
		}
		r.skip = "backend_open"
		return r
	}
	defer run.Close()
	for _, p := range pairs {
		from := tree.State(p.pos)
		var want *dsl.State
		if p.next < tree.End() {
			s := tree.State(p.next)
			want = &s
		}
		got, conf, err := predict(ctx, run, p, from)
		if ctx.Err() != nil {
			r.err = ctx.Err()
			return r
		}
		o := compare(want, got, err != nil)
		o.action, o.horizon, o.from = p.action, p.horizon, from
		if conf != nil {
			o.conf, o.hasConf = conf.State, true
		}
		if err != nil {
			o.why = err.Error()
		}
		r.outcomes = append(r.outcomes, o)
	}
	return r
}

// predict opens a session at the pair's state and applies its action; nil
// means the program ran past its end. It returns the prediction's
// confidence where it has one.
func predict(ctx context.Context, run Runner, p pair, from dsl.State) (*dsl.State, *ndbg.Confidence, error) {
	s, err := run.At(ctx, p.pos, from)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	st, err := s.Do(ctx, p.action)
	if err != nil && !errors.Is(err, ndbg.ErrFinished) {
		return nil, nil, err
	}
	var conf *ndbg.Confidence
	if pr, ok := s.Prediction(); ok {
		conf = &pr.Confidence
	}
	if err != nil {
		return nil, conf, nil
	}
	return &st, conf, nil
}

// drawPairs picks the item's (state, action) pairs, reproducibly from its
// index.
func drawPairs(cfg *NextConfig, smp *statetree.Sampler, tree *statetree.Tree, i uint64) ([]pair, error) {
	var pairs []pair
	switch cfg.Mode {
	case "every":
		kinds := []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepReturn, dsl.InvStepInto, dsl.InvStepOver, dsl.InvStepReturn}
		for pos := 0; pos < tree.End(); pos++ {
			for _, k := range kinds {
				a := dsl.Action{Kind: k}
				next, err := tree.Apply(pos, a)
				if err != nil {
					continue // an inverse action at the first state
				}
				pairs = append(pairs, pair{pos, next, a, statetree.Horizon(pos, next)})
			}
		}
	default:
		rng := rand.New(rand.NewPCG(i, 0xe7a1))
		for range cfg.Trajectories {
			s, err := smp.Sample(tree, rng)
			if err != nil {
				return nil, fmt.Errorf("eval: %w", err)
			}
			for j, st := range s.Trajectory.Steps {
				pairs = append(pairs, pair{s.Positions[j], s.Positions[j+1], st.Action, s.Horizons[j]})
			}
		}
	}
	if len(pairs) <= cfg.MaxPairs {
		return pairs, nil
	}
	kept := make([]pair, cfg.MaxPairs)
	for j := range kept {
		kept[j] = pairs[j*len(pairs)/cfg.MaxPairs]
	}
	return kept, nil
}

// sortedKeys returns a map's keys in order (bucket order for horizons).
func sortedKeys[V any](m map[string]V, cmp func(a, b string) int) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, cmp)
	return keys
}

func nan() float64 { return math.NaN() }
