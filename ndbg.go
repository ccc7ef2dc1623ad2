// Package ndbg is a neural debugger for Python: a language model that
// predicts what a debugger would show next (the event, line, locals and
// return value after step into, step over, step return, a breakpoint,
// continue, or a step backwards) without running the program.
//
// A Session debugs one call of one program with a Backend: Neural (a model,
// constrained to frames consistent with the program) or Real (the program
// run under sys.settrace, the ground truth). Both answer the same actions,
// so an agent can switch between them and grade every prediction:
//
//	m, err := ndbg.Open(ctx, ndbg.Options{}) // the embedded default model
//	s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), src, "f([3, None, 4])") // greedy
//	st, err := s.StepOver(ctx) // predicted, not run
//	err = s.SetBreakpoint(5)
//	st, err = s.Continue(ctx)
//	st, err = s.StepBackReturn(ctx) // back to the call: the inputs
//
// ExampleNeural is this code in full, with its errors handled; go test runs
// it and checks its output. Example debugs a failing call with the Real
// backend.
package ndbg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
)

// State is one stop of the debugger (see dsl.State).
type State = dsl.State

// Action is a debugger command (see dsl.Action).
type Action = dsl.Action

// Errors a session returns; test with errors.Is.
var (
	// ErrFinished: a forward action after the program has finished.
	ErrFinished = errors.New("ndbg: the program has finished")
	// ErrAtStart: an inverse action at the run's first state (a session's
	// first state, the entry's call, or that state again after stepping
	// back to it): nothing of the run comes before it.
	ErrAtStart = engine.ErrAtStart
	// ErrUnsupported: the backend cannot do this (e.g. editing a local of a
	// real run).
	ErrUnsupported = engine.ErrUnsupported
	// ErrContextFull: the code the session is in (the current function's
	// top-level statement) and the current state leave no room for the
	// next frame in the model's context, or the model wrote a frame longer
	// than the room left. (A long history or a long program alone is not
	// this error: the neural backend then drops the history, or shows the
	// model only the functions the session needs, and goes on.)
	ErrContextFull = engine.ErrContextFull
)

// Backend makes the engines that answer a session's actions.
type Backend interface {
	// Name is "neural" or "real".
	Name() string
	start(ctx context.Context, prog *dsl.Program, call string) (engine.Engine, dsl.State, error)
}

// Session is one debugging session: a program, an entry call, the states
// seen so far and the breakpoints. A Session is not safe for concurrent use;
// Fork gives each goroutine its own. Sessions of one Model run concurrently.
type Session struct {
	backend     Backend
	prog        *dsl.Program
	call        string
	eng         engine.Engine
	traj        dsl.Trajectory // Start, then every action taken and its state
	preds       []*Prediction  // how each step's state was predicted (nil: not by a model)
	breakpoints []int
	midway      bool     // started at a given state (StartAt), not at the entry's call
	user        []string // the source's lines as the user wrote them (dsl.UserLines)
}

// Start begins debugging call (an expression like "f(3, [1, 2])" calling a
// top-level function of source) at the entry's call event, where the locals
// are the arguments. An empty call debugs the whole script, as
// `python3 -m pdb script.py` does: its module code runs as __main__ (an
// `if __name__ == "__main__":` block runs) and the session starts at its
// first line, where pdb first stops. Only the real backend debugs a whole
// script (ErrScript).
func Start(ctx context.Context, b Backend, source, call string) (*Session, error) {
	prog, err := program(b, source, call)
	if err != nil {
		return nil, err
	}
	eng, first, err := b.start(ctx, prog, call)
	if err != nil {
		return nil, err
	}
	return &Session{backend: b, prog: prog, call: call, eng: eng, traj: dsl.Trajectory{Program: prog, Start: first},
		user: dsl.UserLines(source)}, nil
}

// StartAt begins debugging from a given state of entry instead of a call:
// the neural backend predicts onwards (and backwards) from there, e.g. from
// a return state with a known value back to the call that produced it
// (CRUXEval-I). The state's Source is filled in from its Line. The real
// backend cannot start from an arbitrary state (ErrUnsupported).
func StartAt(ctx context.Context, b Backend, source, entry string, st State) (*Session, error) {
	prog, err := dsl.NewProgram(source, entry)
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	if !prog.Nameable(st.Line) {
		return nil, fmt.Errorf("ndbg: line %d is not a code line of the program", st.Line)
	}
	if err := checkLocals(st.Locals); err != nil {
		return nil, err
	}
	st.Source = prog.Text(st.Line)
	at, ok := b.(startAter)
	if !ok {
		return nil, fmt.Errorf("%w: starting the %s backend from a given state", ErrUnsupported, b.Name())
	}
	eng, err := at.startAt(ctx, prog, st)
	if err != nil {
		return nil, err
	}
	return &Session{backend: b, prog: prog, eng: eng, traj: dsl.Trajectory{Program: prog, Start: st}, midway: true,
		user: dsl.UserLines(source)}, nil
}

// checkLocals refuses a given state's locals that no frame could have: a
// name that is neither a Python name nor one of CPython's implicit ones
// (".0", a comprehension's iterator) or that comes twice, a value that is
// not a whole repr (dsl.CheckRepr), as Set refuses them.
func checkLocals(locals []dsl.Local) error {
	implicit := func(name string) bool {
		n, ok := strings.CutPrefix(name, ".")
		return ok && n != "" && strings.Trim(n, "0123456789") == ""
	}
	seen := map[string]bool{}
	for _, l := range locals {
		switch {
		case !isIdentifier(l.Name) && !implicit(l.Name):
			return fmt.Errorf("ndbg: the state's local %q: not a Python name", l.Name)
		case seen[l.Name]:
			return fmt.Errorf("ndbg: the state's local %q comes twice", l.Name)
		}
		seen[l.Name] = true
		if err := dsl.CheckRepr(l.Repr); err != nil {
			return fmt.Errorf("ndbg: the state's local %s: the value must be a Python repr such as 3, 'abc' or [1, 2]: %w", l.Name, err)
		}
	}
	return nil
}

// ErrScript: a whole script (Start with an empty call) was given to a
// backend other than the real one.
var ErrScript = fmt.Errorf("%w: debugging a whole script needs the real backend (or an entry call): "+
	"the model's trace format has no module-level frames", ErrUnsupported)

// scripter is a backend that can debug a whole script (the real one).
type scripter interface{ script() }

// program prepares source for call, or for the whole script when call is
// empty.
func program(b Backend, source, call string) (*dsl.Program, error) {
	if strings.TrimSpace(call) == "" {
		if _, ok := b.(scripter); !ok {
			return nil, fmt.Errorf("%w (the %s backend)", ErrScript, b.Name())
		}
		prog, err := dsl.NewScript(source)
		if err != nil {
			return nil, fmt.Errorf("ndbg: %w", err)
		}
		return prog, nil
	}
	entry, err := EntryOf(call)
	if err != nil {
		return nil, err
	}
	prog, err := dsl.NewProgram(source, entry)
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	return prog, nil
}

// startAter is a backend that can start from a given state.
type startAter interface {
	startAt(ctx context.Context, prog *dsl.Program, st dsl.State) (engine.Engine, error)
}

// EntryOf returns the function a call expression calls: "f" for
// "f(3, [1, 2])". The callee must be a plain name (a top-level function).
func EntryOf(call string) (string, error) {
	call = strings.TrimSpace(call)
	name, _, ok := strings.Cut(call, "(")
	name = strings.TrimSpace(name)
	if !ok || !isIdentifier(name) || !strings.HasSuffix(call, ")") {
		return "", fmt.Errorf("ndbg: call %q is not a call of a top-level function, like f(1, 'a')", call)
	}
	return name, nil
}

func isIdentifier(s string) bool {
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

// Backend returns the session's backend.
func (s *Session) Backend() Backend { return s.backend }

// Program returns the prepared program (dsl.Program): its Source is what
// runs and what the model reads.
func (s *Session) Program() *dsl.Program { return s.prog }

// UserLine returns line n of the program as the user wrote it, without
// the marker and the "  # (k)" comments that preparing it added (dsl.Program):
// the line to show. States and the DSL quote Program().Text(n). It returns
// "" for a line out of range.
func (s *Session) UserLine(n int) string {
	if n < 1 || n > len(s.user) {
		return ""
	}
	return s.user[n-1]
}

// Call returns the entry call expression; "" for a whole script.
func (s *Session) Call() string { return s.call }

// Trajectory returns the session's history: the first state, then each
// action and the state it led to. The result is a copy. A history that
// steps back after the program finished (the real backend allows it) has no
// DSL text: nothing follows <|end_of_text|>.
func (s *Session) Trajectory() *dsl.Trajectory {
	t := s.traj
	t.Steps = slices.Clone(t.Steps)
	return &t
}

// State returns the current state; ok is false when the program has
// finished.
func (s *Session) State() (st State, ok bool) {
	cur := s.current()
	if cur == nil {
		return State{}, false
	}
	return *cur, true
}

func (s *Session) current() *dsl.State {
	if n := len(s.traj.Steps); n > 0 {
		return s.traj.Steps[n-1].State
	}
	return &s.traj.Start
}

// Stack returns the def lines (call-event lines) of the frames on the call
// stack, outermost first, the current frame last; nil when the backend
// cannot know (a neural session after a jump: the text does not say how
// deep a breakpoint hit is; or after stepping back into the return of a
// lambda or comprehension that shares its line with the enclosing code).
// A neural session follows the stack through single steps, forward and
// backward.
func (s *Session) Stack() []int {
	if s.Finished() {
		return nil
	}
	return slices.Clone(s.eng.Stack())
}

// InFunction reports whether the current frame runs the function named
// name, as pdb's break FUNCTION checks the frame's code before it stops: a
// lambda or comprehension on the function's first body line runs in a
// frame of its own, where that breakpoint does not stop, and a generator
// resumed is still its function. A method is named "Class.method"
// (FunctionLine), its frame by the method's name. True when the frame's
// function is not known (Frames).
func (s *Session) InFunction(name string) bool {
	name = name[strings.LastIndex(name, ".")+1:]
	fs := s.Frames()
	return len(fs) == 0 || fs[len(fs)-1].Func == "" || fs[len(fs)-1].Func == name
}

// Finished reports whether the program has run past its end.
func (s *Session) Finished() bool { return s.current() == nil }

// Do applies one action and returns the new state. At the end of the
// program it returns ErrFinished (and the session stays finished: step
// back to continue from an earlier state). On the neural backend an
// action the session's history decides (a step back right after a step,
// a step taken again from a stop) returns the state shown then, with its
// Prediction, not a new prediction.
func (s *Session) Do(ctx context.Context, a Action) (State, error) {
	if err := s.check(a); err != nil {
		return State{}, err
	}
	next, err := s.eng.Apply(ctx, &s.traj, a, s.breakpoints)
	if err != nil {
		return State{}, err
	}
	s.preds = append(s.preds[:len(s.traj.Steps)], predictionOf(s.eng))
	return s.took(a, next)
}

// took records action a, which led to next (nil: the end), in the
// session's trajectory and returns next, or ErrFinished at the end.
func (s *Session) took(a Action, next *dsl.State) (State, error) {
	s.traj.Steps = append(s.traj.Steps, dsl.Step{Action: a, State: next})
	if next == nil {
		return State{}, ErrFinished
	}
	return *next, nil
}

// check rejects actions that cannot be applied where the session is.
func (s *Session) check(a Action) error {
	switch a.Kind {
	case dsl.Breakpoint, dsl.InvBreakpoint:
		if len(a.Lines) != 1 {
			return fmt.Errorf("ndbg: %s needs exactly one line", a.Kind)
		}
	case dsl.Continue, dsl.InvContinue:
	default:
		if len(a.Lines) != 0 {
			return fmt.Errorf("ndbg: %s takes no line", a.Kind)
		}
	}
	for _, l := range a.Lines {
		if !s.prog.Nameable(l) {
			return fmt.Errorf("ndbg: line %d is not a code line of the program", l)
		}
	}
	if s.Finished() && !a.Kind.Inverse() {
		return ErrFinished
	}
	if !a.Kind.Inverse() || len(s.traj.Steps) > 0 || s.midway {
		return nil
	}
	return ErrAtStart // nothing of the run comes before its first state
}

// StepInto stops at the next event, entering calls (pdb's step).
func (s *Session) StepInto(ctx context.Context) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.StepInto})
}

// StepOver stops at the next line of the current function, or its return
// (pdb's next). The real backend, like pdb, stops earlier at a breakpoint
// hit on the way (in a callee too); a model's step_over does not know the
// breakpoints.
func (s *Session) StepOver(ctx context.Context) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.StepOver})
}

// StepReturn runs to the current function's return (pdb's return), or, on
// the real backend, to a breakpoint hit on the way, as pdb.
func (s *Session) StepReturn(ctx context.Context) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.StepReturn})
}

// RunTo runs to the next stop at line (a one-shot breakpoint; on the real
// backend, as in pdb, the session's breakpoints stop it too).
func (s *Session) RunTo(ctx context.Context, line int) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.Breakpoint, Lines: []int{line}})
}

// Continue runs to the next breakpoint, or to the end.
func (s *Session) Continue(ctx context.Context) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.Continue, Lines: slices.Clone(s.breakpoints)})
}

// StepBackInto goes back to the previous event.
func (s *Session) StepBackInto(ctx context.Context) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.InvStepInto})
}

// StepBackOver goes back to the previous stop in the current function or a
// caller. The real backend, as a reverse debugger, stops at the last
// breakpoint hit on the way back; so do StepBackReturn and BackTo.
func (s *Session) StepBackOver(ctx context.Context) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.InvStepOver})
}

// StepBackReturn goes back to the call of the current function: its inputs.
func (s *Session) StepBackReturn(ctx context.Context) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.InvStepReturn})
}

// BackTo goes back to the previous stop at line, or to the start.
func (s *Session) BackTo(ctx context.Context, line int) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.InvBreakpoint, Lines: []int{line}})
}

// ContinueBack goes back to the previous breakpoint hit, or to the start.
func (s *Session) ContinueBack(ctx context.Context) (State, error) {
	return s.Do(ctx, Action{Kind: dsl.InvContinue, Lines: slices.Clone(s.breakpoints)})
}

// SetBreakpoint adds a breakpoint at a code line, used by Continue and
// ContinueBack.
func (s *Session) SetBreakpoint(line int) error {
	if !s.prog.Nameable(line) {
		return fmt.Errorf("ndbg: line %d is not a code line of the program", line)
	}
	if !slices.Contains(s.breakpoints, line) {
		s.breakpoints = append(s.breakpoints, line)
		slices.Sort(s.breakpoints)
	}
	return nil
}

// ClearBreakpoint removes a breakpoint (line 0: all of them).
func (s *Session) ClearBreakpoint(line int) {
	if line == 0 {
		s.breakpoints = nil
		return
	}
	s.breakpoints = slices.DeleteFunc(s.breakpoints, func(l int) bool { return l == line })
}

// Breakpoints returns the breakpoint lines, ascending.
func (s *Session) Breakpoints() []int { return slices.Clone(s.breakpoints) }

// Set edits a local variable of the current state (repr is the new value's
// repr, e.g. "[3, 1]"); prediction continues from the edited state. Only
// states that show locals (call and line events) can be edited, only a
// local the state already has, and only to a value that is a repr
// (dsl.CheckRepr): anything else is an error and the state is unchanged.
func (s *Session) Set(ctx context.Context, name, repr string) error {
	cur := s.current()
	if cur == nil {
		return ErrFinished
	}
	if cur.Event != dsl.Call && cur.Event != dsl.Line {
		return fmt.Errorf("ndbg: a %s state has no locals to edit", cur.Event)
	}
	if !isIdentifier(name) {
		return fmt.Errorf("ndbg: set: %q is not a Python name", name)
	}
	i := slices.IndexFunc(cur.Locals, func(l dsl.Local) bool { return l.Name == name })
	if i < 0 {
		return fmt.Errorf("ndbg: set: no local %q in %s at line %d (it has %s)", name, cur.Event, cur.Line, localNames(cur.Locals))
	}
	if err := dsl.CheckRepr(repr); err != nil {
		return fmt.Errorf("ndbg: set %s: the value must be a Python repr such as 3, 'abc' or [1, 2]: %w", name, err)
	}
	// The edit is a new state in place of the current one, never a write
	// through it: a fork shares its states with the session it came from.
	edited := *cur
	edited.Locals = slices.Clone(cur.Locals)
	edited.Locals[i].Repr = repr
	n := len(s.traj.Steps)
	old, oldStart := cur, s.traj.Start
	if n > 0 {
		s.traj.Steps[n-1].State = &edited
	} else {
		s.traj.Start = edited
	}
	if err := s.eng.Edited(ctx, &s.traj); err != nil {
		if n > 0 {
			s.traj.Steps[n-1].State = old
		} else {
			s.traj.Start = oldStart
		}
		return err
	}
	if n := len(s.traj.Steps); n > 0 && n <= len(s.preds) {
		s.preds[n-1] = nil // the state is the user's now, not a prediction
	}
	return nil
}

// localNames lists the names of locals for an error message.
func localNames(ls []dsl.Local) string {
	if len(ls) == 0 {
		return "none"
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}

// Fork returns an independent copy of the session, sharing what can be
// shared (the model's cached program prefix).
func (s *Session) Fork() *Session {
	f := *s
	f.traj.Steps = slices.Clone(s.traj.Steps)
	f.preds = slices.Clone(s.preds)
	f.breakpoints = slices.Clone(s.breakpoints)
	f.eng = s.eng.Fork()
	return &f
}

// Close releases the session's resources.
func (s *Session) Close() { s.eng.Close() }
