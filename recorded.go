package ndbg

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
)

// Recorded returns the real backend that runs the program once, whole,
// under the tracer (trace.Run: within lim's Timeout and MaxEvents, else
// ErrLimit) before its first state, and answers every action, forward or
// backward, from the state tree of that recording (package statetree):
// what grading needs (ndbg eval, ndbg-infer --compare, Verify), where a
// run is answered many times from many states and a run that does not end
// is an error, not a session. It runs no code at a stop: Session.Eval and
// Set are ErrUnsupported. Real is the live debugger.
func Recorded(lim trace.Limits) Backend { return recordedBackend{lim} }

type recordedBackend struct{ lim trace.Limits }

func (recordedBackend) Name() string { return "real" }

func (recordedBackend) script() {}

func (b recordedBackend) start(ctx context.Context, prog *dsl.Program, call string) (engine.Engine, dsl.State, error) {
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
	e := &recordedEngine{tree: tree, result: res}
	// A script starts at its module's first line, where pdb first stops,
	// not at the module frame's call event.
	if call == "" && tree.End() > 1 && tree.Event(1).Kind == dsl.Line && tree.Event(1).Depth == 0 {
		e.pos = 1
	}
	return e, e.state(e.pos), nil
}

// recordedEngine walks the state tree of one run.
type recordedEngine struct {
	tree   *statetree.Tree
	result *trace.Result
	pos    int // index of the current state; tree.End() when finished
}

// state is tree state i with what the run knows beyond the DSL's frame:
// the locals of a return or exception state (the frame's, as it ended or
// raised), marked LocalsKnown.
func (e *recordedEngine) state(i int) dsl.State {
	s := e.tree.State(i)
	s.Source = e.tree.Program().Text(s.Line)
	if s.Event == dsl.Return || s.Event == dsl.Exception {
		s.Locals, s.LocalsKnown = e.tree.Event(i).Locals, true
	}
	return s
}

func (e *recordedEngine) Apply(_ context.Context, _ *dsl.Trajectory, a dsl.Action, breakpoints []int) (*dsl.State, error) {
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

// Edited: a recorded run cannot be changed half-way.
func (e *recordedEngine) Edited(context.Context, *dsl.Trajectory) error {
	return fmt.Errorf("%w: editing a local of a recorded run (the live real backend, Real, or the neural backend can)", ErrUnsupported)
}

func (e *recordedEngine) Fork() engine.Engine { f := *e; return &f }

// output is what the run wrote before the current state (all of it at the
// end).
func (e *recordedEngine) output() Output {
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
func (e *recordedEngine) Stack() []int { return e.tree.Stack(e.pos) }

func (e *recordedEngine) Close() {}

// frames walks back from the current state to the latest event of each
// enclosing frame.
func (e *recordedEngine) frames() []Frame {
	if e.pos >= e.tree.End() {
		return nil
	}
	var fs []Frame
	d := e.tree.Depth(e.pos)
	for j := e.pos; j >= 0 && d >= 0; j-- {
		ev := e.tree.Event(j)
		if ev.Depth != d {
			continue
		}
		if len(fs) == 0 || fs[len(fs)-1].ID != ev.Frame {
			fs = append(fs, Frame{Func: ev.Func, Line: ev.Line, Locals: ev.Locals, LocalsKnown: true, ID: ev.Frame})
		}
		if ev.Kind == dsl.Call {
			fs[len(fs)-1].Def = ev.Line
			d--
		}
	}
	slices.Reverse(fs)
	return fs
}

func (e *recordedEngine) exception() *Exception {
	x := e.result.Exception
	if x == nil {
		return nil
	}
	return &Exception{Type: x.Type, Message: x.Message, Line: x.Line, Traceback: e.traceback()}
}

// traceback walks back from the end through the exception events of the
// escaping exception (the same value), one frame deeper each, until the
// frame found last ran a line before it: the frame that raised it.
func (e *recordedEngine) traceback() []Frame {
	var tb []Frame
	value := ""
	for j := e.tree.End() - 1; j >= 0; j-- {
		ev := e.tree.Event(j)
		switch {
		case ev.Kind == dsl.Exception && ev.Depth == len(tb) && (value == "" || ev.Value == value):
			value = ev.Value
			tb = append(tb, Frame{Func: ev.Func, Line: ev.Line, ID: ev.Frame, Locals: ev.Locals, LocalsKnown: true})
		case ev.Kind == dsl.Line && len(tb) > 0 && ev.Depth == len(tb)-1:
			return tb
		}
	}
	return tb
}

// applyIf finds the action's own stop and then walks the breakpoint hits
// before it, in order, taking the first that keep accepts.
func (e *recordedEngine) applyIf(ctx context.Context, a dsl.Action, breakpoints []int, keep func(dsl.State) bool) (*dsl.State, error) {
	ownAct := a // the action without the breakpoints: a continue's lines are theirs
	if a.Kind == dsl.Continue || a.Kind == dsl.InvContinue {
		ownAct.Lines = slices.DeleteFunc(slices.Clone(a.Lines), func(l int) bool { return slices.Contains(breakpoints, l) })
	}
	own, err := e.tree.Apply(e.pos, ownAct)
	if err != nil {
		return e.Apply(ctx, nil, a, breakpoints) // the same error, wrapped as apply does
	}
	stop, err := e.tree.ApplyBreakpoints(e.pos, a, breakpoints)
	if err != nil {
		return e.Apply(ctx, nil, a, breakpoints)
	}
	hop := dsl.Action{Kind: dsl.Continue, Lines: breakpoints}
	before := func(i int) bool { return i < own }
	if a.Kind.Inverse() {
		hop.Kind = dsl.InvContinue
		before = func(i int) bool { return i > own }
	}
	for len(breakpoints) > 0 && before(stop) && !keep(e.state(stop)) {
		if stop, err = e.tree.Apply(stop, hop); err != nil {
			return nil, fmt.Errorf("ndbg: passing a breakpoint at state %d: %w", stop, err)
		}
		if !before(stop) {
			stop = own
		}
	}
	e.pos = stop
	if stop >= e.tree.End() {
		return nil, nil
	}
	st := e.state(stop)
	return &st, nil
}
