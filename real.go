package ndbg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
	"github.com/ndbg/ndbg/trace"
)

// Real returns the backend that runs the program for real, as a debugger
// does: the program runs sandboxed under the tracer (trace.StartLive) and
// stops where each action says, with pdb's rules (the state tree's,
// package statetree, which are checked against CPython's bdb). Nothing caps
// the run's length and no wall clock runs while it waits at a stop; each
// resume has lim.Timeout of CPU time, past which the program stops where it
// is (Session.Interrupted says "cpu"), and Session.Interrupt stops it at
// once. Expressions run in its live frames (Session.Eval). A step backwards
// runs the program again to the earlier event (the history of every
// event's kind, depth and line says which), from the start or from a run
// parked ahead just before the current stop (realpark.go); a run that
// takes another path the second time is ErrNotReproducible. It is the ground
// truth the neural debugger is graded against.
//
// The program's standard input is empty (input() raises EOFError); see
// RealWithInput for one that reads the user's.
func Real(lim trace.Limits) Backend { return realBackend{lim: lim} }

// RealWithInput is Real with the program's standard input read from in
// when the program reads it (input(), sys.stdin), as pdb lets the program
// read the terminal. Each session keeps what in gave, in order, and feeds
// it back when it runs the program again (a step back), so a replay reads
// the same input at the same reads and in is asked only for input no run
// of the session has read yet.
func RealWithInput(lim trace.Limits, in trace.Input) Backend {
	return realBackend{lim: lim, in: in}
}

// ErrLimit: the real run passed one of its trace.Limits (time, events or
// the trace's size) and has no outcome to answer from; the error says which.
var ErrLimit = errors.New("ndbg: the real run passed its limits")

// ErrNotReproducible: a step backwards ran the program again and it took
// another path to the earlier event (it depends on the clock, an unseeded
// random number, a thread's timing, ...), so that event's state cannot be
// shown; the session stays where it was.
var ErrNotReproducible = errors.New("ndbg: the program does not run the same way again")

type realBackend struct {
	lim trace.Limits
	in  trace.Input
}

// inputLog is what a session's program read from its standard input, in
// order (ok false: the end), shared by its runs: a run reads it from the
// start, and asks the user's source past its end.
type inputLog struct {
	mu    sync.Mutex
	parts []inputPart
	src   trace.Input
}

type inputPart struct {
	text string
	ok   bool
}

// reader is one run's standard input: the log's parts in order, then the
// source's (logged as they come).
func (g *inputLog) reader() trace.Input { return g.readerOf(true) }

// replayReader is a run's standard input that is only the log: past it,
// the end (a run started ahead, which must not ask the user; one that
// reads past the log took another path, which its digest shows).
func (g *inputLog) replayReader() trace.Input { return g.readerOf(false) }

// readerOf is reader (ask: the source past the log) and replayReader.
func (g *inputLog) readerOf(ask bool) trace.Input {
	next := 0
	return func(ctx context.Context) (string, bool, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if next < len(g.parts) {
			p := g.parts[next]
			next++
			return p.text, p.ok, nil
		}
		if !ask || g.src == nil {
			return "", false, nil
		}
		text, ok, err := g.src(ctx)
		if err != nil {
			return "", false, err
		}
		g.parts = append(g.parts, inputPart{text, ok})
		next++
		return text, ok, nil
	}
}

func (realBackend) Name() string { return "real" }

func (realBackend) script() {}

func (b realBackend) start(ctx context.Context, prog *dsl.Program, call string) (engine.Engine, dsl.State, error) {
	e := &realEngine{prog: prog, call: call, lim: b.lim, end: -1, intr: &interrupter{}, closing: &sync.WaitGroup{}, spares: &spares{},
		input: &inputLog{src: b.in}}
	// Once for the session's runs: a step back starts the program again.
	lim, err := e.lim.WithPython(ctx)
	if err != nil {
		return nil, dsl.State{}, fmt.Errorf("ndbg: %w", err)
	}
	e.lim = lim
	// A script starts at its module's first line, where pdb first stops,
	// not at the module frame's call event.
	first := 0
	if call == "" {
		first = 1
	}
	if err := e.replay(ctx, first, ""); err != nil {
		return nil, dsl.State{}, err
	}
	if first == 1 && (e.stop.End || e.stop.Event.Kind != dsl.Line || e.stop.Event.Depth != 0) {
		if err := e.replay(ctx, 0, ""); err != nil { // a script with no line of its own
			return nil, dsl.State{}, err
		}
	}
	if e.stop.End {
		return nil, dsl.State{}, fmt.Errorf("ndbg: the program ended before its first event")
	}
	return e, e.state(), nil
}

// edit is code the user ran in the program at a stop (a statement, Set):
// a step backwards runs it again at the same event, so the history the
// user made stays, and a step back before it undoes it.
type edit struct {
	at    int // the event it ran at
	level int // the frame: 0 the stopped one
	code  string
}

// realEngine is a live program at one of its events.
type realEngine struct {
	prog  *dsl.Program
	call  string
	lim   trace.Limits
	live  *trace.Live // nil in a fork that has not run yet (see ensure)
	stop  *trace.Stop // where it is: an event, or the end
	pos   int         // the event it is at; the number of events at the end
	end   int         // the number of events, once known; -1 before
	edits []edit
	fs    []trace.LiveFrame // the frames at pos, once asked for
	intr  *interrupter      // where Interrupt reaches the run (another goroutine's)
	// closing counts the runs a step back replaced, still being reaped
	// (Close waits for them).
	closing *sync.WaitGroup
	spares  *spares // an interpreter started ahead for the next run
	input   *inputLog
	park    *parked // a run started ahead to the event before pos (realpark.go)
	parkHit int     // replays that resumed a parked run
}

// spares keeps one interpreter started ahead (trace.LiveInterpreter), so
// that a step back, which runs the program again, does not wait for an
// interpreter to start: on a loaded machine that is most of its time.
type spares struct {
	mu     sync.Mutex
	spare  *trace.LiveInterpreter
	busy   bool // one is starting
	closed bool
	wg     sync.WaitGroup
}

// take returns the spare, nil when there is none ready.
func (s *spares) take() *trace.LiveInterpreter {
	s.mu.Lock()
	defer s.mu.Unlock()
	li := s.spare
	s.spare = nil
	return li
}

// refill starts a spare in the background unless one is there or coming.
func (s *spares) refill(lim trace.Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spare != nil || s.busy || s.closed {
		return
	}
	s.busy = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		li, err := trace.NewLiveInterpreter(context.Background(), lim)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.busy = false
		switch {
		case err != nil: // the next run starts its own, and says why if it cannot
		case s.closed:
			li.Close()
		default:
			s.spare = li
		}
	}()
}

// close kills the spare and waits for one being started.
func (s *spares) close() {
	s.mu.Lock()
	s.closed = true
	li := s.spare
	s.spare = nil
	s.mu.Unlock()
	if li != nil {
		li.Close()
	}
	s.wg.Wait()
}

// interrupter holds the run an Interrupt from another goroutine stops.
type interrupter struct {
	mu   sync.Mutex
	live *trace.Live
}

func (i *interrupter) set(l *trace.Live) {
	i.mu.Lock()
	i.live = l
	i.mu.Unlock()
}

func (i *interrupter) interrupt() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.live != nil {
		i.live.Interrupt()
	}
}

// clear takes back an interrupt that no resume used (trace.Live.ClearInterrupt).
func (i *interrupter) clear() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.live != nil {
		i.live.ClearInterrupt()
	}
}

func (e *realEngine) finished() bool { return e.stop != nil && e.stop.End }

// state is the current event as a state: the frame's locals at every
// event (marked LocalsKnown at a return or exception).
func (e *realEngine) state() dsl.State {
	ev := e.stop.Event
	s := dsl.State{Event: ev.Kind, Line: ev.Line, Source: e.prog.Text(ev.Line), Depth: ev.Depth}
	switch ev.Kind {
	case dsl.Call, dsl.Line:
		s.Locals = ev.Locals
	default:
		s.Value = ev.Value
		s.Locals, s.LocalsKnown = ev.Locals, true
	}
	return s
}

// start runs the program afresh in a new interpreter to event at (-1: to
// its end).
func (e *realEngine) start(ctx context.Context, c trace.Criteria) (*trace.Live, *trace.Stop, error) {
	what := e.call
	if what == "" {
		what = "the script"
	}
	var l *trace.Live
	var st *trace.Stop
	var err error
	if li := e.spares.take(); li != nil {
		l, st, err = li.Start(ctx, e.prog, e.call, c, e.input.reader())
	} else {
		l, st, err = trace.StartLive(ctx, e.prog, e.call, e.lim, c, e.input.reader())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("ndbg: running %s: %w", what, err)
	}
	if e.live != nil { // a run again: the next one will likely come too
		e.spares.refill(e.lim)
	}
	return l, st, nil
}

// onTo resumes l toward c while its stop st fell short only because a
// resume ran its CPU time (trace.Limits.Timeout, each resume's own): a run
// again to an event takes as long as the actions that first reached it,
// however many (the interpreter's SessionCPU bounds them all). An
// interrupt (Session.Interrupt) ends it with an error.
func onTo(ctx context.Context, l *trace.Live, st *trace.Stop, c trace.Criteria) (*trace.Stop, error) {
	for !st.End && st.Why == "cpu" {
		var err error
		if st, err = l.Resume(ctx, c); err != nil {
			return nil, err
		}
	}
	if !st.End && st.Why == "interrupt" {
		return nil, errors.New("interrupted on the way back; the session stays where it was")
	}
	return st, nil
}

// replay runs the program again from its start to event at (-1: its end),
// running the edits made before it on the way, and makes that the current
// position; digest, when not empty, is the path the first run took to it,
// which the new run must take too. The old run stays current on failure.
func (e *realEngine) replay(ctx context.Context, at int, digest string) error {
	keep := slices.DeleteFunc(slices.Clone(e.edits), func(x edit) bool { return at >= 0 && x.at > at })
	target := func(i int) trace.Criteria {
		c := trace.NoCriteria()
		c.Index, c.Digest = i, digest != ""
		return c
	}
	next := at
	if len(keep) > 0 {
		next = keep[0].at
	}
	var l *trace.Live
	var st *trace.Stop
	var err error
	if len(keep) == 0 {
		l, st = e.takeParked(ctx, at)
	}
	if l != nil {
		e.parkHit++
		if st.Index < at { // on from the checkpoint, the path checked to the target
			if st, err = l.Resume(ctx, target(at)); err == nil {
				st, err = onTo(ctx, l, st, target(at))
			}
			if err != nil {
				l.Close()
				return fmt.Errorf("ndbg: running the program again: %w", err)
			}
		}
	} else if l, st, err = e.start(ctx, target(next)); err != nil {
		return err
	} else if st, err = onTo(ctx, l, st, target(next)); err != nil {
		l.Close()
		return fmt.Errorf("ndbg: running the program again: %w", err)
	}
	for i := 0; i < len(keep); {
		if st.End || st.Index != keep[i].at {
			break
		}
		for ; i < len(keep) && keep[i].at == st.Index; i++ {
			if _, err := l.Eval(ctx, keep[i].level, keep[i].code, trace.EvalExec); err != nil {
				l.Close()
				return fmt.Errorf("ndbg: running again what was run at event %d: %w", keep[i].at, err)
			}
		}
		if st.Index == at {
			break
		}
		next = at
		if i < len(keep) {
			next = keep[i].at
		}
		if st, err = l.Resume(ctx, target(next)); err == nil {
			st, err = onTo(ctx, l, st, target(next))
		}
		if err != nil {
			l.Close()
			return fmt.Errorf("ndbg: running the program again: %w", err)
		}
	}
	reached := (at < 0 && st.End) || (!st.End && st.Index == at)
	if !reached || (digest != "" && !st.End && st.Digest != digest) {
		l.Close()
		return fmt.Errorf("%w: run again to step back to its event %d, it took another path (it depends on the clock, "+
			"an unseeded random number, a thread's timing or the like; input is fed back as it was read); the session stays where it was", ErrNotReproducible, at)
	}
	if !st.End && len(keep) > 0 && keep[len(keep)-1].at == st.Index { // made here: the frame as they left it
		fs, err := l.Frames(ctx)
		if err != nil {
			l.Close()
			return fmt.Errorf("ndbg: the stack: %w", err)
		}
		st.Event.Locals = fs[len(fs)-1].Locals
	}
	if old := e.live; old != nil {
		// Killed at once; the kernel's teardown of its sandbox (a second
		// or two on a loaded machine) is waited for apart.
		e.closing.Add(1)
		go func() {
			defer e.closing.Done()
			old.Close()
		}()
	}
	e.live, e.stop, e.edits, e.fs = l, st, keep, nil
	e.intr.set(l)
	e.pos = st.Index
	if st.End {
		e.end = st.Index
	}
	return nil
}

// ensure gives a fork its own run, at the position it was forked at.
func (e *realEngine) ensure(ctx context.Context) error {
	if e.live != nil {
		return nil
	}
	at := e.pos
	if e.finished() {
		at = -1
	}
	return e.replay(ctx, at, "")
}

func (e *realEngine) Apply(ctx context.Context, _ *dsl.Trajectory, a dsl.Action, breakpoints []int) (*dsl.State, error) {
	return e.apply(ctx, a, breakpoints, nil, nil)
}

// criteria are a forward action's own stops from the current state
// (statetree's rules), breakpoints left out.
func (e *realEngine) criteria(a dsl.Action) trace.Criteria {
	c := trace.NoCriteria()
	ev := e.stop.Event
	switch a.Kind {
	case dsl.StepInto:
		c.Any = true
	case dsl.StepOver:
		c.LE = ev.Depth
	case dsl.StepReturn:
		if ev.Kind == dsl.Return {
			c.LT = ev.Depth
		} else {
			c.Ret = ev.Depth
		}
	case dsl.Breakpoint, dsl.Continue:
		c.Lines = slices.Clone(a.Lines)
	}
	return c
}

// meets reports whether event st (number i) is one of c's stops.
func meets(c trace.Criteria, i int, ev trace.Event) bool {
	return c.Any || i == c.Index || ev.Depth <= c.LE || (ev.Kind == dsl.Return && ev.Depth == c.Ret) ||
		ev.Depth < c.LT || (ev.Kind == dsl.Line && slices.Contains(c.Lines, ev.Line))
}

// apply takes a with breakpoints kept set; keep, when not nil, is asked at
// each stop that only a breakpoint made whether to take it (DoIf).
//
// pdb, when not nil, is pdb's own step, next, until or return (recorded
// as a) from the frame pdb.Level up from the stop, by bdb's rules
// (trace.Criteria.Pdb), instead of the state tree's.
func (e *realEngine) apply(ctx context.Context, a dsl.Action, breakpoints []int, keep func(dsl.State) bool, pdb *trace.Criteria) (*dsl.State, error) {
	defer e.repark()     // a checkpoint for the next step back, while the user looks
	defer e.intr.clear() // an interrupt no resume of this action used is not for the next one
	if err := e.ensure(ctx); err != nil {
		return nil, err
	}
	if a.Kind.Inverse() {
		return e.back(ctx, a, breakpoints, keep)
	}
	if e.finished() {
		return nil, ErrFinished
	}
	own := a
	if a.Kind == dsl.Continue {
		own.Lines = slices.DeleteFunc(slices.Clone(a.Lines), func(l int) bool { return slices.Contains(breakpoints, l) })
	}
	mine := e.criteria(own)
	if pdb != nil {
		mine = *pdb
	}
	c := mine
	c.Lines = append(slices.Clone(c.Lines), breakpoints...)
	for {
		st, err := e.live.Resume(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("ndbg: %s: %w", a.Kind, err)
		}
		e.stop, e.pos, e.fs = st, st.Index, nil
		if st.End {
			e.end = st.Index
			return nil, nil
		}
		s := e.state()
		own := st.Why == "stop" && (pdb != nil || meets(mine, st.Index, st.Event))
		if keep == nil || (st.Why != "stop" && st.Why != "break") || own || keep(s) {
			return &s, nil
		}
		c.Again = true // pdb's rule still from where the action started
	}
}

// back takes an inverse action: its target is found in the run's history
// (trace.Live.Back), and the program is run again to it.
func (e *realEngine) back(ctx context.Context, a dsl.Action, breakpoints []int, keep func(dsl.State) bool) (*dsl.State, error) {
	if e.pos == 0 {
		return nil, ErrAtStart
	}
	own := a
	if a.Kind == dsl.InvContinue {
		own.Lines = slices.DeleteFunc(slices.Clone(a.Lines), func(l int) bool { return slices.Contains(breakpoints, l) })
	}
	target, digest, err := e.live.Back(ctx, a.Kind, e.pos, own.Lines, nil)
	if err != nil {
		return nil, fmt.Errorf("ndbg: %s: %w", a.Kind, err)
	}
	// The breakpoint hits between the target and here, latest first: the
	// first that keep takes (all, without keep) stops the action.
	from := e.pos
	for len(breakpoints) > 0 {
		hit, hitDigest, err := e.live.Back(ctx, dsl.InvContinue, from, breakpoints, nil)
		if err != nil {
			return nil, fmt.Errorf("ndbg: %s: %w", a.Kind, err)
		}
		if hit <= target {
			break
		}
		if err := e.replay(ctx, hit, hitDigest); err != nil {
			return nil, err
		}
		s := e.state()
		if keep == nil || keep(s) {
			return &s, nil
		}
		from = hit
	}
	if err := e.replay(ctx, target, digest); err != nil {
		return nil, err
	}
	s := e.state()
	return &s, nil
}

// Edited runs, in the stopped frame, an assignment of each local whose
// repr the user changed in the current state (Session.Set), and shows the
// frame as it is then.
func (e *realEngine) Edited(ctx context.Context, traj *dsl.Trajectory) error {
	cur := &traj.Start
	if n := len(traj.Steps); n > 0 {
		cur = traj.Steps[n-1].State
	}
	if cur == nil || e.finished() {
		return ErrFinished
	}
	if err := e.ensure(ctx); err != nil { // a fork runs its own program from here
		return err
	}
	old := map[string]string{}
	for _, l := range e.stop.Event.Locals {
		old[l.Name] = l.Repr
	}
	for _, l := range cur.Locals {
		if r, ok := old[l.Name]; ok && r == l.Repr {
			continue
		}
		res, err := e.exec(ctx, 0, l.Name+" = "+l.Repr)
		if err != nil {
			return err
		}
		if res.Error != "" {
			return fmt.Errorf("ndbg: set %s = %s: %s", l.Name, l.Repr, res.Error)
		}
	}
	*cur = e.state()
	return nil
}

// exec runs a statement in frame level of the stopped program, keeping it
// in the history (a step back runs it again), and refreshes the state.
func (e *realEngine) exec(ctx context.Context, level int, code string) (trace.EvalResult, error) {
	res, err := e.live.Eval(ctx, level, code, trace.EvalExec)
	if err != nil {
		return res, fmt.Errorf("ndbg: %w", err)
	}
	if !e.finished() {
		e.edits = append(e.edits, edit{at: e.pos, level: level, code: code})
		e.fs = nil
		if fs, err := e.liveFrames(ctx); err == nil && len(fs) > 0 {
			e.stop.Event.Locals = fs[len(fs)-1].Locals
		}
	}
	return res, nil
}

// Fork returns an engine at the same position that runs the program again
// to it when first used.
func (e *realEngine) Fork() engine.Engine {
	f := *e
	f.live, f.fs, f.intr, f.closing, f.spares, f.park = nil, nil, &interrupter{}, &sync.WaitGroup{}, &spares{}, nil
	f.edits = slices.Clone(e.edits)
	st := *e.stop
	f.stop = &st
	return &f
}

// output is what the run wrote before the current state (all of it at the
// end).
func (e *realEngine) output() Output {
	if e.live == nil {
		return Output{}
	}
	out, errOut, outCut, errCut := e.live.Output()
	return Output{Stdout: append([]byte{}, out...), Stderr: append([]byte{}, errOut...),
		StdoutCut: outCut, StderrCut: errCut, Truncated: outCut || errCut}
}

// liveFrames returns the frames at the current stop (cached).
func (e *realEngine) liveFrames(ctx context.Context) ([]trace.LiveFrame, error) {
	if e.fs != nil {
		return e.fs, nil
	}
	if err := e.ensure(ctx); err != nil {
		return nil, err
	}
	fs, err := e.live.Frames(ctx)
	if err != nil {
		return nil, fmt.Errorf("ndbg: the stack: %w", err)
	}
	e.fs = fs
	return fs, nil
}

// Stack returns the call lines of the frames on the stack.
func (e *realEngine) Stack() []int {
	if e.finished() {
		return nil
	}
	fs, err := e.liveFrames(context.Background())
	if err != nil {
		return nil
	}
	lines := make([]int, len(fs))
	for i, f := range fs {
		lines[i] = f.CallLine
	}
	return lines
}

// Close ends the program, and waits until the runs it replaced are gone.
func (e *realEngine) Close() {
	if e.live != nil {
		e.live.Close()
	}
	e.unpark()
	e.spares.close()
	e.closing.Wait()
}

// Evaluation modes of Session.Eval: how pdb's commands run code.
const (
	EvalRepr   = trace.EvalRepr   // an expression's repr (p)
	EvalPretty = trace.EvalPretty // pprint's form of it (pp)
	EvalExec   = trace.EvalExec   // a statement (!stmt, or a line that is not a command)
	EvalBool   = trace.EvalBool   // "True" or "False" (a breakpoint's condition)
	EvalWhatis = trace.EvalWhatis // whatis
	EvalArgs   = trace.EvalArgs   // the frame's arguments, "name = repr" lines (args; code unused)
)

// EvalResult is Session.Eval's answer: the value, or the code's own error
// as pdb prints it ("NameError: name 'x' is not defined"), and what the
// code wrote to sys.stdout.
type EvalResult = trace.EvalResult

// evaluator is an engine with a live program (the real one).
type evaluator interface {
	eval(ctx context.Context, level int, code, mode string) (EvalResult, error)
}

// Eval runs code in a frame of the live program, as pdb runs p, pp,
// whatis, args, a condition or a statement: in the frame's own globals and
// locals, so attributes, methods, the program's functions and globals and
// any object are there. level counts frames outwards from the current one
// (0); once an exception has escaped, it counts the frames it passed
// through from the innermost (post-mortem). A statement (EvalExec) that
// assigns a local of the current frame changes it for the rest of the run,
// and a step back runs it again at the same event (a step back to before
// it undoes it); an expression's side effects (p xs.pop()) are not run
// again. Only the real backend has a live program: elsewhere Eval is
// ErrUnsupported (package internal/pyeval evaluates over a state's
// reprs instead).
func (s *Session) Eval(ctx context.Context, level int, code, mode string) (EvalResult, error) {
	ev, ok := s.eng.(evaluator)
	if !ok {
		return EvalResult{}, fmt.Errorf("%w: evaluating in the %s backend's frames (it has no live program)", ErrUnsupported, s.backend.Name())
	}
	res, err := ev.eval(ctx, level, code, mode)
	if err != nil {
		return res, err
	}
	if mode == EvalExec {
		if st := s.current(); st != nil && st.HasLocals() {
			if fs := s.Frames(); len(fs) > 0 {
				st.Locals = fs[len(fs)-1].Locals // what the statement changed
			}
		}
	}
	return res, nil
}

func (e *realEngine) eval(ctx context.Context, level int, code, mode string) (EvalResult, error) {
	if err := e.ensure(ctx); err != nil {
		return EvalResult{}, err
	}
	if mode == EvalExec {
		return e.exec(ctx, level, code)
	}
	res, err := e.live.Eval(ctx, level, code, mode)
	if err != nil {
		return res, fmt.Errorf("ndbg: %w", err)
	}
	return res, nil
}

// interruptible is an engine whose running action can be stopped (the real
// one).
type interruptible interface {
	interrupt()
	why() string
}

// Interrupt stops the action in progress on another goroutine where the
// program is (the real backend: at its next event, as Ctrl-C in pdb; a
// long call into C code stops when it returns); the action then returns
// that state and Interrupted says so. Between two actions it makes the
// next action stop at the program's first event (an interrupt meant for an
// action that another goroutine is about to start is not lost); the end of
// an action takes back one it did not use. It does nothing on other
// backends. Safe for concurrent use, unlike the rest of Session: callers
// interrupt only while an action runs or is about to.
func (s *Session) Interrupt() {
	if i, ok := s.eng.(interruptible); ok {
		i.interrupt()
	}
}

// Interrupted says why the current state is not the last action's own
// stop: "interrupt" (Interrupt), "cpu" (the action ran its CPU time,
// trace.Limits.Timeout, and was stopped where it was), or "".
func (s *Session) Interrupted() string {
	if i, ok := s.eng.(interruptible); ok && !s.Finished() {
		return i.why()
	}
	return ""
}

func (e *realEngine) interrupt() { e.intr.interrupt() }

// runCPU is the CPU time the current run's interpreter had used by the
// current stop (trace.Stop.CPU).
func (e *realEngine) runCPU() time.Duration {
	if e.stop == nil {
		return 0
	}
	return e.stop.CPU
}

func (e *realEngine) why() string {
	if e.stop == nil || e.stop.End || e.stop.Why == "stop" || e.stop.Why == "break" {
		return ""
	}
	return e.stop.Why
}
