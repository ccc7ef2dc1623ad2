// Package dataset makes ndbg's training data: it generates programs
// (progen), traces them with real CPython (trace), builds their state trees
// and samples debugger trajectories over them (statetree), and writes the
// trajectories as DSL text (dsl) in JSONL shards with a stats.json. Output
// depends only on the configuration (seed, count, families, ...), never on
// parallelism; a cancelled run leaves only complete shards.
package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/progen"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
)

// TokenCounter counts tokens of a text (*tokenizer.Tokenizer is one).
type TokenCounter interface {
	Encode(text string) []int
}

// Config is one dataset run.
type Config struct {
	N        int      // programs to generate
	Seed     uint64   // master seed: program i's seed derives from it and i
	Families []string // progen families; empty means all
	OutDir   string
	// ShardPrograms is the number of programs per shard (default 256).
	ShardPrograms int
	// Trajectories is the number of trajectories sampled per program
	// (default 4).
	Trajectories int
	// Workers is the number of parallel tracers (default GOMAXPROCS).
	Workers int
	// Tokenizer, when set, counts tokens; otherwise only bytes are counted.
	Tokenizer TokenCounter
	// Sampler draws trajectories (default: statetree's policy with
	// statetree.DefaultParams).
	Sampler Sampler
	// Limits bound each traced program; zero values take trace's defaults
	// except Timeout (2 s) and MaxEvents (5000): generated programs are short.
	Limits trace.Limits
	// Progress, when set, is called after each program with the programs
	// done so far and the running totals (from one goroutine).
	Progress func(done int, s *Stats)
}

// Record is one JSONL line: a trajectory and where it came from.
type Record struct {
	Text     string   `json:"text"`
	Program  string   `json:"program"`
	Family   string   `json:"family"`
	Actions  []string `json:"actions"`
	Horizons []int    `json:"horizons"`
}

// Stats summarise a run; stats.json holds them for the shards written.
type Stats struct {
	N             int            `json:"n"`
	Seed          uint64         `json:"seed"`
	Families      []string       `json:"families"`
	Python        string         `json:"python"`
	Programs      int            `json:"programs"` // programs that produced trajectories
	Trajectories  int            `json:"trajectories"`
	Bytes         int64          `json:"bytes"` // DSL text bytes
	Tokens        int64          `json:"tokens"`
	TokensCounted bool           `json:"tokens_counted"` // false: Tokens is 0, no tokenizer given
	Shards        int            `json:"shards"`
	Actions       map[string]int `json:"actions"`
	Horizons      map[string]int `json:"horizons"` // bucketed: "0", "1", "2-3", "4-7", ...
	Failures      map[string]int `json:"failures"` // programs dropped, by reason
	ByFamily      map[string]int `json:"by_family"`
	Raised        int            `json:"raised"`     // programs whose call raised (as intended)
	Unintended    int            `json:"unintended"` // raised what the generator did not declare (kept; a progen bug)
	// AddressReprs counts trajectories whose text holds a memory address
	// (" at 0x", e.g. a comprehension's hidden ".0" iterator): such reprs
	// vary from run to run and cannot be learned.
	AddressReprs int               `json:"address_reprs"`
	TraceEvents  map[string]int    `json:"trace_events"` // programs by trace length, bucketed
	Constructs   map[string]int    `json:"constructs"`   // programs using each progen construct
	ElapsedSec   float64           `json:"elapsed_s"`
	Extra        map[string]string `json:"extra,omitempty"`
}

func newStats(cfg *Config) *Stats {
	return &Stats{
		N: cfg.N, Seed: cfg.Seed, Families: cfg.Families, TokensCounted: cfg.Tokenizer != nil,
		Actions: map[string]int{}, Horizons: map[string]int{}, Failures: map[string]int{},
		ByFamily: map[string]int{}, TraceEvents: map[string]int{}, Constructs: map[string]int{},
	}
}

// Bucket names a power-of-two histogram bucket: 0, 1, 2-3, 4-7, ...
func Bucket(h int) string {
	if h <= 1 {
		return fmt.Sprint(max(h, 0))
	}
	lo := 1
	for lo*2 <= h {
		lo *= 2
	}
	return fmt.Sprintf("%d-%d", lo, 2*lo-1)
}

// result is one program's output: its JSONL lines and its share of the
// stats.
type result struct {
	i       int
	lines   []byte
	fail    string // reason the program was dropped, "" if it was not
	family  string
	python  string
	traj    int
	bytes   int64
	tokens  int64
	actions map[string]int
	hor     map[string]int
	events  int
	cons    []string
	raised  bool
	unint   bool
	addr    int
}

func (s *Stats) add(r *result) {
	if r.python != "" && s.Python == "" {
		s.Python = r.python
	}
	if r.fail != "" {
		s.Failures[r.fail]++
		return
	}
	s.Programs++
	s.Trajectories += r.traj
	s.Bytes += r.bytes
	s.Tokens += r.tokens
	s.ByFamily[r.family]++
	for k, v := range r.actions {
		s.Actions[k] += v
	}
	for k, v := range r.hor {
		s.Horizons[k] += v
	}
	s.TraceEvents[Bucket(r.events)]++
	for _, c := range r.cons {
		s.Constructs[c]++
	}
	if r.raised {
		s.Raised++
	}
	if r.unint {
		s.Unintended++
	}
	s.AddressReprs += r.addr
}

// ProgramSeed is the seed of program i of a run with master seed seed.
func ProgramSeed(seed uint64, i int) uint64 {
	x := seed*0x9e3779b97f4a7c15 + uint64(i) + 1
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Run makes the dataset described by cfg and returns its stats (also
// written to OutDir/stats.json), replacing the shards of an earlier run in
// OutDir. When ctx is cancelled it stops, keeps the
// shards already complete, writes their stats and returns ctx's error with
// them.
func Run(ctx context.Context, cfg Config) (*Stats, error) {
	if cfg.N <= 0 {
		return nil, errors.New("dataset: N must be positive")
	}
	if cfg.ShardPrograms <= 0 {
		cfg.ShardPrograms = 256
	}
	if cfg.Trajectories <= 0 {
		cfg.Trajectories = 4
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Sampler == nil {
		smp, err := PolicySampler(statetree.DefaultParams())
		if err != nil {
			return nil, err
		}
		cfg.Sampler = smp
	}
	if cfg.Limits.Timeout <= 0 {
		cfg.Limits.Timeout = 2 * time.Second
	}
	if cfg.Limits.MaxEvents <= 0 {
		cfg.Limits.MaxEvents = 5000
	}
	if _, err := progen.Generate(0, cfg.Families); err != nil {
		return nil, err
	}
	if err := checkTracer(ctx, cfg.Limits); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	// Shards of an earlier run in the same directory would mix with these.
	old, err := filepath.Glob(filepath.Join(cfg.OutDir, "shard-*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	for _, f := range append(old, filepath.Join(cfg.OutDir, "stats.json")) {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("dataset: %w", err)
		}
	}
	start := time.Now()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := trace.Parallel(ctx, cfg.N, cfg.Workers, cfg.Limits, func(tw *trace.Worker) func(context.Context, int) *result {
		w := &worker{cfg: &cfg, tracer: tw}
		return w.program
	})

	// Collect in program order; write each shard once all its programs are in.
	total := newStats(&cfg)   // everything seen, for progress
	written := newStats(&cfg) // what the written shards hold
	pending := map[int]*result{}
	nshards := (cfg.N + cfg.ShardPrograms - 1) / cfg.ShardPrograms
	nextShard, done := 0, 0
	var werr error
	for r := range results {
		pending[r.i] = r
		done++
		total.add(r)
		total.ElapsedSec = time.Since(start).Seconds()
		if cfg.Progress != nil {
			cfg.Progress(done, total)
		}
		for werr == nil && nextShard < nshards {
			lo := nextShard * cfg.ShardPrograms
			hi := min(lo+cfg.ShardPrograms, cfg.N)
			complete := true
			for i := lo; i < hi; i++ {
				if pending[i] == nil {
					complete = false
					break
				}
			}
			if !complete {
				break
			}
			var buf bytes.Buffer
			for i := lo; i < hi; i++ {
				buf.Write(pending[i].lines)
				written.add(pending[i])
				delete(pending, i)
			}
			if err := writeFile(filepath.Join(cfg.OutDir, fmt.Sprintf("shard-%05d.jsonl", nextShard)), buf.Bytes()); err != nil {
				werr = err
				cancel()
				break
			}
			nextShard++
			written.Shards = nextShard
		}
	}
	written.ElapsedSec = time.Since(start).Seconds()
	if written.Python == "" {
		written.Python = total.Python
	}
	b, err := json.MarshalIndent(written, "", "  ")
	if err != nil {
		return written, fmt.Errorf("dataset: stats: %w", err)
	}
	if err := writeFile(filepath.Join(cfg.OutDir, "stats.json"), append(b, '\n')); err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		return written, werr
	}
	if nextShard < nshards {
		if err := context.Cause(ctx); err != nil {
			return written, err
		}
		return written, errors.New("dataset: stopped before all shards were complete")
	}
	if written.Programs == 0 {
		// Every program failed: a broken interpreter or sandbox rather than
		// the programs (checkTracer saw it start), and no data is no result.
		return written, fmt.Errorf("dataset: no program of %d produced a trajectory (failures: %v)", cfg.N, written.Failures)
	}
	return written, nil
}

// checkTracer traces one trivial program with lim before any work, so
// that an interpreter that cannot run (a wrong --python, a missing
// python3, a sandbox that cannot start) is one clear error rather than
// every program failing alike.
func checkTracer(ctx context.Context, lim trace.Limits) error {
	prog, err := dsl.NewProgram("def f():\n    return 1\n", "f")
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	b := trace.NewBatch(lim)
	defer b.Close()
	res, err := b.Run(ctx, prog, "f()")
	if err == nil && res.Truncated {
		err = errors.New("the trace was cut short")
	}
	if err != nil {
		who := lim.Python
		if who == "" {
			who = "python3 on PATH"
		}
		return fmt.Errorf("dataset: the tracer cannot run a trivial program with %s: %w", who, err)
	}
	return nil
}

// writeFile writes data atomically: to a temporary file, then renamed.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}

// worker turns program indices into results, with its own tracer.
type worker struct {
	cfg    *Config
	tracer *trace.Worker // progen's programs: RunGenerated
	buf    []byte
}

// program makes program i's trajectories; nil when ctx was cancelled.
func (w *worker) program(ctx context.Context, i int) *result {
	cfg := w.cfg
	seed := ProgramSeed(cfg.Seed, i)
	r := &result{i: i, actions: map[string]int{}, hor: map[string]int{}}
	p, err := progen.Generate(seed, cfg.Families)
	if err != nil {
		r.fail = "generate"
		return r
	}
	r.family = p.Family
	r.cons = p.Constructs
	prog, err := dsl.NewProgram(p.Source, p.Entry)
	if err != nil {
		r.fail = "dsl_program"
		return r
	}
	res, err := w.tracer.RunGenerated(ctx, prog, p.Call)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		r.fail = traceFailure(err)
		return r
	}
	r.python = res.Python
	if res.Truncated {
		r.fail = "trace_truncated"
		return r
	}
	if res.Exception != nil {
		r.raised = true
		r.unint = !slices.Contains(p.Raises, res.Exception.Type)
	}
	r.events = len(res.Events)
	tree, err := statetree.Build(prog, res.Events)
	if err != nil {
		r.fail = "statetree"
		return r
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	id := fmt.Sprintf("%d-%d", cfg.Seed, i)
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for range cfg.Trajectories {
		tr, hs, err := cfg.Sampler(tree, rng)
		if err != nil {
			r.fail = "sample"
			return r
		}
		if len(tr.Steps) == 0 {
			continue
		}
		w.buf, err = tr.AppendEncode(w.buf[:0])
		if err != nil {
			r.fail = "encode"
			return r
		}
		rec := Record{Text: string(w.buf), Program: id, Family: p.Family, Horizons: hs}
		if bytes.Contains(w.buf, []byte(" at 0x")) {
			r.addr++
		}
		for _, st := range tr.Steps {
			rec.Actions = append(rec.Actions, st.Action.String())
			r.actions[st.Action.Kind.String()]++
		}
		for _, h := range hs {
			r.hor[Bucket(h)]++
		}
		if err := enc.Encode(&rec); err != nil {
			r.fail = "json"
			return r
		}
		r.traj++
		r.bytes += int64(len(rec.Text))
		if cfg.Tokenizer != nil {
			r.tokens += int64(len(cfg.Tokenizer.Encode(rec.Text)))
		}
	}
	if r.traj == 0 {
		r.fail = "no_trajectory"
		return r
	}
	if err := bw.Flush(); err != nil {
		r.fail = "json"
		return r
	}
	r.lines = out.Bytes()
	return r
}

// traceFailure names a trace error for the failure histogram.
func traceFailure(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{trace.ErrTimeout, "trace_timeout"}, {trace.ErrMemory, "trace_memory"}, {trace.ErrSyntax, "trace_syntax"},
		{trace.ErrSetup, "trace_setup"}, {trace.ErrForbidden, "trace_forbidden"}, {trace.ErrTracer, "trace_tracer"},
		{trace.ErrCrash, "trace_crash"}, {trace.ErrProtocol, "trace_protocol"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "trace_other"
}
