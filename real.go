package ndbg

import (
	"context"
	"errors"
	"fmt"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
)

// Real returns the backend that runs the program for real: once, sandboxed,
// under sys.settrace (package trace), then answers every action, forward or
// backward, exactly from the state tree (package statetree). It is the
// ground truth the neural debugger is graded against.
func Real(lim trace.Limits) Backend { return realBackend{lim} }

// ErrLimit: the real run passed one of its trace.Limits (time, events or
// the trace's size) and has no outcome to answer from; the error says which.
var ErrLimit = errors.New("ndbg: the real run passed its limits")

type realBackend struct{ lim trace.Limits }

func (realBackend) Name() string { return "real" }

func (realBackend) script() {}

func (b realBackend) start(ctx context.Context, prog *dsl.Program, call string) (engine.Engine, dsl.State, error) {
	what := call
	if call == "" {
		what = "the script"
	}
	res, err := trace.Run(ctx, prog, call, b.lim)
	if errors.Is(err, trace.ErrTimeout) {
		return nil, dsl.State{}, fmt.Errorf("%w: tracing %s: %w", ErrLimit, what, err)
	}
	if err != nil {
		return nil, dsl.State{}, fmt.Errorf("ndbg: tracing %s: %w", what, err)
	}
	if res.Truncated {
		return nil, dsl.State{}, fmt.Errorf("%w: tracing %s: the trace was cut at %d events (a limit on its events or its size)", ErrLimit, what, len(res.Events))
	}
	tree, err := statetree.Build(prog, res.Events)
	if err != nil {
		return nil, dsl.State{}, fmt.Errorf("ndbg: %w", err)
	}
	e := &realEngine{tree: tree, result: res}
	// A script starts at its module's first line, where pdb first stops,
	// not at the module frame's call event.
	if call == "" && tree.End() > 1 && tree.Event(1).Kind == dsl.Line && tree.Event(1).Depth == 0 {
		e.pos = 1
	}
	return e, e.state(e.pos), nil
}

// realEngine walks the state tree of one run.
type realEngine struct {
	tree   *statetree.Tree
	result *trace.Result
	pos    int // index of the current state; tree.End() when finished
}

// state is tree state i with what the run knows beyond the DSL's frame:
// the locals of a return or exception state (the frame's, as it ended or
// raised), marked LocalsKnown.
func (e *realEngine) state(i int) dsl.State {
	s := e.tree.State(i)
	s.Source = e.tree.Program().Text(s.Line)
	if s.Event == dsl.Return || s.Event == dsl.Exception {
		s.Locals, s.LocalsKnown = e.tree.Event(i).Locals, true
	}
	return s
}

func (e *realEngine) Apply(_ context.Context, _ *dsl.Trajectory, a dsl.Action, breakpoints []int) (*dsl.State, error) {
	next, err := e.tree.ApplyBreakpoints(e.pos, a, breakpoints)
	switch {
	case errors.Is(err, statetree.ErrAtStart):
		return nil, ErrAtStart
	case errors.Is(err, statetree.ErrFinished):
		return nil, ErrFinished
	case err != nil:
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	e.pos = next
	if next >= e.tree.End() {
		return nil, nil
	}
	s := e.state(next)
	return &s, nil
}

// edited: a real run cannot be changed half-way.
func (e *realEngine) Edited(context.Context, *dsl.Trajectory) error {
	return fmt.Errorf("%w: editing a local of a real run (use the neural backend, or change the call)", ErrUnsupported)
}

func (e *realEngine) Fork() engine.Engine { f := *e; return &f }

// output is what the run wrote before the current state (all of it at the
// end).
func (e *realEngine) output() Output {
	r := e.result
	o := Output{Stdout: r.Stdout, Stderr: r.Stderr, StdoutCut: r.StdoutTruncated, StderrCut: r.StderrTruncated}
	if e.pos < e.tree.End() {
		ev := e.tree.Event(e.pos)
		o = Output{Stdout: r.Stdout[:min(ev.Stdout, len(r.Stdout))], Stderr: r.Stderr[:min(ev.Stderr, len(r.Stderr))],
			StdoutCut: ev.Stdout > len(r.Stdout), StderrCut: ev.Stderr > len(r.Stderr)}
	}
	o.Truncated = o.StdoutCut || o.StderrCut
	return o
}

// Stack returns the call lines of the frames on the stack (Tree.Stack).
func (e *realEngine) Stack() []int { return e.tree.Stack(e.pos) }

func (e *realEngine) Close() {}
