package ndbg

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/trace"
)

// Frame is one frame on the call stack at the current state.
type Frame struct {
	// Func is the function's name ("f", "<listcomp>"); "" when unknown.
	Func string
	// Def is the line of the frame's call event (its def line).
	Def int
	// Line is the frame's current line: the current state's line for the
	// innermost frame, the line of the call in progress for a caller; 0
	// when unknown (a neural session knows only the current frame's).
	Line int
	// Locals are the frame's locals as last seen (for a caller: at its
	// last event before the call in progress, so a value the callee
	// mutated in place shows as it was then); LocalsKnown says whether
	// they are known at all.
	Locals      []dsl.Local
	LocalsKnown bool
	// ID identifies the frame object within the run (the same for every
	// state of one activation); -1 when unknown.
	ID int
}

// framer is an engine that knows every frame on the stack (the real one).
type framer interface {
	frames() []Frame
}

// Frames returns the frames on the call stack, outermost first, the current
// frame last; nil when the program has finished or the stack is unknown (see
// Stack). The real backend knows every frame's line and locals; a neural
// session knows the current frame's (predicted) and, for callers, only
// their def lines (Line 0, LocalsKnown false).
func (s *Session) Frames() []Frame {
	cur := s.current()
	if cur == nil {
		return nil
	}
	if f, ok := s.eng.(framer); ok {
		return f.frames()
	}
	stack := s.eng.Stack()
	if stack == nil {
		return nil
	}
	fs := make([]Frame, len(stack))
	for i, def := range stack {
		name, _ := dsl.DefName(s.UserLine(def))
		fs[i] = Frame{Func: name, Def: def, ID: -1}
	}
	last := &fs[len(fs)-1]
	last.Line, last.Locals = cur.Line, slices.Clone(cur.Locals)
	last.LocalsKnown = cur.Event == dsl.Call || cur.Event == dsl.Line || cur.LocalsKnown
	return fs
}

// frames are the live program's frames at the current stop.
func (e *realEngine) frames() []Frame {
	if e.finished() {
		return nil
	}
	fs, err := e.liveFrames(context.Background())
	if err != nil {
		return nil
	}
	return framesOf(fs)
}

// framesOf converts the tracer's frames.
func framesOf(fs []trace.LiveFrame) []Frame {
	out := make([]Frame, len(fs))
	for i, f := range fs {
		out[i] = Frame{Func: f.Func, Def: f.CallLine, Line: f.Line, Locals: f.Locals, LocalsKnown: true, ID: f.Frame}
	}
	return out
}

// Output is what the program wrote to sys.stdout and sys.stderr.
type Output struct {
	Stdout, Stderr []byte
	// StdoutCut and StderrCut: the program had written more to the stream
	// than the run kept (trace.Limits.MaxStdout, 64 KiB by default): the
	// stream's text stops there.
	StdoutCut, StderrCut bool
	// Truncated is StdoutCut || StderrCut.
	Truncated bool
}

// outputter is an engine that knows the program's output (the real one).
type outputter interface {
	output() Output
}

// Output returns what the program had written before the current state
// (what pdb would have shown by this stop), or all it wrote once the
// session has finished; ok is false when the backend cannot know (a model
// predicts no output).
func (s *Session) Output() (Output, bool) {
	o, ok := s.eng.(outputter)
	if !ok {
		return Output{}, false
	}
	return o.output(), true
}

// OutputCut is the line a front end shows where a stream of the program's
// output was cut: the program wrote more than the kept bytes
// (trace.Limits.MaxStdout), which are all there is to show.
func OutputCut(stream string, kept int) string {
	return fmt.Sprintf("\n[ndbg: %s cut here: the program wrote more than the %d bytes a run keeps of it (trace.Limits.MaxStdout)]\n", stream, kept)
}

// OutputCursor follows a session's output for a front end that shows it
// as the program goes: Next returns what was written since its last call.
// The zero value starts at nothing shown.
type OutputCursor struct {
	shown [2]int
	cut   [2]bool // the stream's OutputCut line was shown
}

// Next returns what s's program wrote to stdout and stderr since the last
// call, followed, where a stream was cut (Output.StdoutCut, StderrCut), by
// the OutputCut line once; nothing after a step back (the cursor goes back
// with it, so the output is new again when the session passes it going
// forward), nor where the backend cannot know the output.
func (c *OutputCursor) Next(s *Session) (stdout, stderr []byte) {
	o, ok := s.Output()
	if !ok {
		return nil, nil
	}
	var out [2][]byte
	cut := [2]bool{o.StdoutCut, o.StderrCut}
	for i, b := range [2][]byte{o.Stdout, o.Stderr} {
		if len(b) > c.shown[i] {
			out[i] = b[c.shown[i]:]
		}
		c.shown[i] = len(b)
		if cut[i] && !c.cut[i] {
			out[i] = append(slices.Clip(out[i]), OutputCut([...]string{"stdout", "stderr"}[i], len(b))...)
		}
		c.cut[i] = cut[i]
	}
	return out[0], out[1]
}

// Exception is an exception that escaped the entry function (or a script's
// module code).
type Exception struct {
	Type    string // the class name, e.g. "ValueError"
	Message string // str() of the exception
	Line    int    // the innermost program line of its traceback, where it was raised
	// Traceback is the frames it passed through, the entry's first, each
	// with its function, line and locals as the exception left it (the
	// frames a post-mortem debugger shows), as Python's traceback lists
	// them; nil when the run's events do not show them.
	Traceback []Frame
}

// ExitStatus is the status python3 exits with after x escaped the
// program, and what it writes to stderr for it besides a traceback:
// SystemExit's code (none: 0; an integer: that, of which the system keeps
// the low 8 bits; anything else: that text, and 1), and 1 for any other
// exception (whose traceback says the rest).
func (x *Exception) ExitStatus() (status int, message string) {
	if x.Type != "SystemExit" {
		return 1, ""
	}
	if x.Message == "" || x.Message == "None" {
		return 0, ""
	}
	if n, err := strconv.Atoi(x.Message); err == nil {
		return n & 0xff, ""
	}
	return 1, x.Message
}

// excepter is an engine that knows how the run ended (the real one).
type excepter interface {
	exception() *Exception
}

// Escaped returns the exception that escaped the entry function, once the
// session has finished; nil when the entry returned, when it has not
// finished, or when the backend cannot know (a neural session: its last
// predicted state before the end is then an exception state).
func (s *Session) Escaped() *Exception {
	if !s.Finished() {
		return nil
	}
	if x, ok := s.eng.(excepter); ok {
		return x.exception()
	}
	return nil
}

func (e *realEngine) exception() *Exception {
	if !e.finished() || e.stop.Exception == nil {
		return nil
	}
	x := e.stop.Exception
	return &Exception{Type: x.Type, Message: x.Message, Line: x.Line, Traceback: framesOf(e.stop.Traceback)}
}

// conditioner is an engine that can pass over a breakpoint's stop within
// one action (the real one).
type conditioner interface {
	applyIf(ctx context.Context, a dsl.Action, breakpoints []int, keep func(dsl.State) bool) (*dsl.State, error)
}

// DoIf is Do with conditional breakpoints, as pdb has them: a stop that only
// a breakpoint made (a line state at one of the session's breakpoints that
// the action itself would have run past) is taken only when keep accepts
// it; otherwise the action goes on to its own stop or the next breakpoint.
// keep is called once per such stop, in order, until it accepts one: the
// caller can count hits or drop a temporary breakpoint there. On the real
// backend this is one action, exactly as pdb; the neural backend's steps do
// not know breakpoints, so there a continue (or a run to a line) whose stop
// keep refuses is taken again from that stop, each stop a step of the
// history, at most maxSkips times.
func (s *Session) DoIf(ctx context.Context, a Action, keep func(State) bool) (State, error) {
	if err := s.check(a); err != nil {
		return State{}, err
	}
	c, ok := s.eng.(conditioner)
	if !ok {
		return s.skipRefused(ctx, a, keep)
	}
	next, err := c.applyIf(ctx, a, s.breakpoints, keep)
	if err != nil {
		return State{}, err
	}
	return s.took(a, next)
}

// maxSkips bounds how many refused breakpoint stops DoIf takes again on a
// backend that predicts each stop.
const maxSkips = 1000

func (s *Session) skipRefused(ctx context.Context, a Action, keep func(State) bool) (State, error) {
	switch a.Kind {
	case dsl.Continue, dsl.InvContinue, dsl.Breakpoint, dsl.InvBreakpoint:
	default:
		return s.Do(ctx, a)
	}
	for range maxSkips {
		st, err := s.Do(ctx, a)
		if err != nil || st.Event != dsl.Line || !slices.Contains(s.breakpoints, st.Line) || keep(st) {
			return st, err
		}
	}
	return State{}, fmt.Errorf("ndbg: %s: %d breakpoint stops in a row refused by their conditions; stopped here", a.Kind, maxSkips)
}

// applyIf takes the action, asking keep at each stop that only a
// breakpoint made, in order, until it takes one.
func (e *realEngine) applyIf(ctx context.Context, a dsl.Action, breakpoints []int, keep func(dsl.State) bool) (*dsl.State, error) {
	return e.apply(ctx, a, breakpoints, keep, nil)
}

// className returns NAME for a line "class NAME:" or "class NAME(...):".
func className(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "class ")
	if !ok {
		return "", false
	}
	f := strings.FieldsFunc(rest, func(r rune) bool { return r == '(' || r == ':' })
	if len(f) == 0 { // "class :", a line of a string
		return "", false
	}
	name := strings.TrimSpace(f[0])
	return name, name != "" && !strings.ContainsAny(name, " \t#)")
}

// pdbStepper is an engine that runs the program, so it can take pdb's own
// step, next, until and return, which follow bdb's rules (DoLikePdb,
// UntilLikePdb).
type pdbStepper interface {
	applyPdb(ctx context.Context, a dsl.Action, c trace.Criteria, breakpoints []int, keep func(dsl.State) bool) (*dsl.State, error)
}

// DoLikePdb is DoIf for pdb's step (a.Kind StepInto), next (StepOver) and
// return (StepReturn) taken in the frame level up from the stop (pdb's
// current frame, which its up and down move), stopping where pdb stops,
// by bdb's rules, on a backend that runs the program (Real). They differ
// from the state tree's step_into, step_over and step_return (statetree,
// "Differences from pdb" 3 and 4), which Do takes and the neural debugger
// learns, only in generators, where pdb follows the frame object across
// resumes: a next at a generator's yield line stops at its next line when
// it is resumed (not at the yield's return and then in the consumer); a
// return in a generator runs on to a StopIteration or GeneratorExit raised
// in another frame, a breakpoint or the end; a next or return whose stop
// would be a generator's yield goes on likewise; and a step passes over
// the StopIteration a generator's frame sees when the subiterator its
// yield from runs returns. Every other action, and every action on
// another backend, is DoIf.
func (s *Session) DoLikePdb(ctx context.Context, a Action, level int, keep func(State) bool) (State, error) {
	p, ok := s.eng.(pdbStepper)
	mode := map[dsl.ActionKind]string{dsl.StepInto: "step", dsl.StepOver: "next", dsl.StepReturn: "return"}[a.Kind]
	if !ok || mode == "" {
		return s.DoIf(ctx, a, keep)
	}
	return s.doPdb(ctx, p, a, mode, level, 0, keep)
}

// UntilLikePdb is pdb's until from the frame level up from the stop: on
// in that frame to a line, or an exception, on line or later (pdb's
// until LINE; plain until is line + 1 of that frame's current line), or
// to its return, or to a breakpoint where keep takes it; on a backend
// that runs the program (Real). It is recorded as a step_over. On any
// other backend it is ErrUnsupported: the caller steps over until the
// line instead.
func (s *Session) UntilLikePdb(ctx context.Context, line, level int, keep func(State) bool) (State, error) {
	p, ok := s.eng.(pdbStepper)
	if !ok {
		return State{}, fmt.Errorf("ndbg: until by pdb's rules: %w", ErrUnsupported)
	}
	return s.doPdb(ctx, p, Action{Kind: dsl.StepOver}, "until", level, line, keep)
}

func (s *Session) doPdb(ctx context.Context, p pdbStepper, a Action, mode string, level, line int, keep func(State) bool) (State, error) {
	if err := s.check(a); err != nil {
		return State{}, err
	}
	c := trace.NoCriteria()
	c.Pdb, c.Level, c.Line = mode, level, line
	next, err := p.applyPdb(ctx, a, c, s.breakpoints, keep)
	if err != nil {
		return State{}, err
	}
	return s.took(a, next)
}

func (e *realEngine) applyPdb(ctx context.Context, a dsl.Action, c trace.Criteria, breakpoints []int, keep func(dsl.State) bool) (*dsl.State, error) {
	return e.apply(ctx, a, breakpoints, keep, &c)
}

// FunctionLine returns the def line of the top-level function called name
// (or, for "Class.method", of the method defined in the top-level class's
// body) and the first line of its body (past a docstring), where a
// breakpoint on the function stops (pdb's break FUNCTION stops at the
// first line each call runs); ok is false when the program has no such
// function.
func (s *Session) FunctionLine(name string) (def, body int, ok bool) {
	p := s.prog
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	cls, meth, isMethod := strings.Cut(name, ".")
	for n := 1; n <= len(p.Lines) && def == 0; n++ {
		l := s.UserLine(n)
		if indent(l) != 0 {
			continue
		}
		if !isMethod {
			if got, isDef := dsl.DefName(l); isDef && got == name {
				def = n
			}
			continue
		}
		if c, ok := className(l); !ok || c != cls {
			continue
		}
		// The class's body: its def lines at the indentation of its first
		// statement.
		in := -1
		for m := n + 1; m <= len(p.Lines); m++ {
			lm := s.UserLine(m)
			if strings.TrimSpace(lm) == "" || strings.HasPrefix(strings.TrimSpace(lm), "#") {
				continue
			}
			if in < 0 {
				in = indent(lm)
			}
			if indent(lm) == 0 {
				break
			}
			if got, isDef := dsl.DefName(lm); isDef && got == meth && indent(lm) == in {
				def = m
				break
			}
		}
	}
	if def == 0 {
		return 0, 0, false
	}
	header := true // the signature may span lines: the body starts after its ':'
	for n := def; n <= len(p.Lines); n++ {
		text := strings.TrimSpace(s.UserLine(n))
		if header {
			header = !strings.HasSuffix(text, ":")
			continue
		}
		// A nested def (its decorators, or its def line) is a statement
		// of this function's body too: its line runs in this frame.
		if f := p.FuncOf(n); f != def && f != n && !strings.HasPrefix(text, "@") {
			return 0, 0, false
		}
		if p.Nameable(n) && !strings.HasPrefix(text, `"`) && !strings.HasPrefix(text, `'`) {
			return def, n, true
		}
	}
	return 0, 0, false
}
