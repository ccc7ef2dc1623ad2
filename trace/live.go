package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/ndbg/ndbg/dsl"
)

// CallModule is the __name__ of the program's module when a call is traced
// (Run, Batch, StartLive with a call): the module is imported as a test
// harness imports the module it tests, so an `if __name__ == "__main__":`
// block does not run at setup. A whole script (no call) runs as __main__.
const CallModule = "program"

// Live is one program running for real under the tracer, in the sandbox,
// stopped at one of its events as a debugger is (StartLive): it answers
// Resume (run to the next event that meets a Criteria), Eval (an expression
// or statement in a frame of the stopped program, with pdb's semantics),
// Frames, Back (an inverse action's target) and Interrupt. Its events are
// numbered as Run numbers them, with the same depths, frames and locals: a
// live stop at event i is Run's Events[i].
//
// Nothing caps the number of events, and no wall clock runs while it waits
// at a stop. Each resume has Limits.Timeout of CPU time: past it the
// program stops at its next event, as if interrupted (Stop.Why "cpu"); the
// whole session has Limits.SessionCPU of CPU time (the interpreter's hard
// limit), memory Limits.MaxMemory. Every reply is signed (as Run's result)
// and bounded (4 MiB; an expression's value 1M characters; 10 s of wall
// clock for an expression, then its process is killed if it does not
// stop).
//
// A Live is safe for one goroutine, except Interrupt, which any goroutine
// may call while a Resume runs.
type Live struct {
	p     *proc
	lim   Limits
	input Input

	mu       sync.Mutex // serializes writes to the request pipe (Interrupt) and guards the two below
	resuming bool       // a resume's request is written and its stop not yet read
	pending  bool       // an Interrupt at a stop, for the next resume
	stdout   []byte     // what the program wrote, as far as the tracer kept it
	stderr   []byte
	outCut   bool  // the program wrote more to stdout than was kept
	errCut   bool  // the same for stderr
	end      *Stop // the end, once the program finished
}

// Criteria says where a resume stops: at the first event that meets any of
// the fields set (an unset int field is -1, as NoCriteria has them).
type Criteria struct {
	Any   bool  // any event (a step into)
	Index int   // the event numbered Index (a replay)
	LE    int   // an event at depth <= LE (a step over)
	Ret   int   // a return event at depth Ret (a step return's own stop)
	LT    int   // an event at depth < LT
	Lines []int // a line event at one of Lines (breakpoints)
	// Digest asks for the stop's Digest: a hash of the kind, depth and
	// line of every event up to it, which a replay compares.
	Digest bool
	// Pdb, "step", "next", "until" or "return", is pdb's step, next, until
	// or return from the current stop in the frame Level up from it
	// (pdb's current frame, which up and down move), by bdb's rules
	// (CPython's Lib/bdb.py), instead of the fields above but Lines: step
	// stops at every event but the StopIteration without a traceback that
	// a generator's frame sees when a subiterator yield from runs ends;
	// next, until and return follow the frame object, so in a generator a
	// next at a yield goes on to the generator's next line at its next
	// resumption (bdb ignores a generator's call and return events while
	// stepping over it), and a return there runs to a StopIteration or
	// GeneratorExit in another frame, a breakpoint or the end; until stops
	// in that frame only at a line, or an exception, on line Line or
	// later, or at its return. A stop that only a breakpoint made answers
	// Why "break".
	Pdb   string
	Level int
	Line  int
	// Again, with Pdb, resumes with the previous resume's pdb rule (its
	// stop frame, as bdb keeps it) after a stop the caller did not take (a
	// breakpoint whose condition is false, or one in another function's
	// frame): computed again from that stop, the rule would be a next in
	// the frame where the breakpoint was, and stop at its next line.
	Again bool
}

// NoCriteria is a Criteria that stops nowhere, to set fields on.
func NoCriteria() Criteria { return Criteria{Index: -1, LE: -1, Ret: -1, LT: -1} }

// Stop is where a live program stopped: at an event (End false), or at
// its end.
type Stop struct {
	End bool
	// Index numbers the event (Run's Events index); at the end, the number
	// of events.
	Index int
	// Event is the stop's event: its locals are the frame's as they are
	// now (also at a return or exception event), Value the returned value
	// or the exception's repr.
	Event Event
	// CallLine is the line of the frame's latest call event (its def line;
	// for a generator, the line it was last resumed at).
	CallLine int
	// Why is "stop" (the criteria), "break" (only a breakpoint line of a
	// Criteria.Pdb resume), "interrupt" (Interrupt) or "cpu" (the resume's
	// CPU time, Limits.Timeout, ran out).
	Why string
	// Digest is the hash Criteria.Digest asked for.
	Digest string
	// CPU is the CPU time the interpreter had used by the stop (its start,
	// the program, the tracer): what a run costs, on a machine whose
	// cores other work shares.
	CPU time.Duration

	// At the end: Return is the entry's returned value's repr, Exception
	// the exception that escaped it, with Traceback the frames it passed
	// through (the entry's first, each with its locals as it left them).
	Return    string
	Exception *Exception
	Traceback []LiveFrame
}

// LiveFrame is one frame of the program's stack at a stop.
type LiveFrame struct {
	Func     string
	Line     int // its current line (a caller's: the line of the call in progress)
	CallLine int // the line of its latest call event
	Frame    int // its number (Event.Frame)
	Depth    int
	Locals   []dsl.Local
}

// EvalResult is what Eval answered: Value (a repr, pprint's form, ...) or
// Error (pdb's one line, "NameError: name 'x' is not defined"), and Output,
// what the code wrote to sys.stdout (a statement's expression values too, as
// pdb's ! prints them).
type EvalResult struct {
	Value, Error, Output string
	HasValue             bool
}

// Eval modes.
const (
	EvalRepr   = "p"      // repr of an expression (pdb's p)
	EvalPretty = "pp"     // pprint.pformat of it (pp)
	EvalExec   = "exec"   // a statement, as pdb runs a line that is not a command (or !stmt)
	EvalBool   = "bool"   // "True" or "False" (a breakpoint's condition)
	EvalWhatis = "whatis" // pdb's whatis
	EvalArgs   = "args"   // the frame's arguments, "name = repr" lines (pdb's args; expr unused)
)

const (
	liveLineCap   = 5 << 20          // a reply's line: the tracer's 4 MiB cap, signature and escapes
	evalWait      = 15 * time.Second // an expression's 10 s, then the grace before its process is killed
	backWait      = 2 * time.Minute  // scanning a long history backwards
	defaultCPUCap = 10 * time.Minute // Limits.SessionCPU's default
)

// wire forms of the live replies (see live in tracer.py)
type liveReply struct {
	T      string          `json:"t"`
	I      int             `json:"i"`
	E      int             `json:"e"`
	L      int             `json:"l"`
	D      int             `json:"d"`
	F      int             `json:"f"`
	N      json.RawMessage `json:"n"` // a name (stop), or the number of events (end)
	C      int             `json:"c"`
	A      []string        `json:"a"`
	R      *string         `json:"r"`
	Why    string          `json:"why"`
	H      string          `json:"h"`
	O      int             `json:"o"`
	X      int             `json:"x"`
	So     []byte          `json:"so"`
	Se     []byte          `json:"se"`
	Ot     bool            `json:"ot"`
	Xt     bool            `json:"xt"`
	Status string          `json:"status"`
	Msg    string          `json:"msg"`
	Line   int             `json:"line"`
	Ret    *string         `json:"ret"`
	Exc    *wireExc        `json:"exc"`
	Tb     []liveFrameWire `json:"tb"`
	Frames []liveFrameWire `json:"frames"`
	Value  *string         `json:"value"`
	Error  *string         `json:"error"`
	Output string          `json:"output"`
	CPU    float64         `json:"cpu"`
}

type liveFrameWire struct {
	N string   `json:"n"`
	L int      `json:"l"`
	C int      `json:"c"`
	F int      `json:"f"`
	D int      `json:"d"`
	A []string `json:"a"`
}

func (w liveFrameWire) frame() (LiveFrame, error) {
	locals, err := pairs(w.A)
	return LiveFrame{Func: w.N, Line: w.L, CallLine: w.C, Frame: w.F, Depth: w.D, Locals: locals}, err
}

func pairs(a []string) ([]dsl.Local, error) {
	if len(a)%2 != 0 {
		return nil, fmt.Errorf("odd locals list (%d strings)", len(a))
	}
	var ls []dsl.Local
	for i := 0; i < len(a); i += 2 {
		if a[i] == "" {
			return nil, errors.New("empty local name")
		}
		ls = append(ls, dsl.Local{Name: a[i], Repr: a[i+1]})
	}
	return ls, nil
}

// Input gives a live program the next part of its standard input when it
// reads past what it was given (input(), sys.stdin.readline()): text (whole
// lines, as a user types them; at most MaxInputLine bytes), or ok false at
// its end (input() then raises EOFError). It runs while the program waits
// in its read; an error kills the program, and the resume returns it.
type Input func(ctx context.Context) (text string, ok bool, err error)

// MaxInputLine is the most bytes one Input answer may give.
const MaxInputLine = 1 << 20

// StartLive starts prog in a fresh sandboxed interpreter under the live
// tracer and runs it to the first event that first meets (an empty call:
// the whole script, as __main__, as Run). in is its standard input (nil:
// an empty one, as Run's). Setup failures are *Error values as Run's
// (ErrSyntax, ErrSetup, ...); a program that ends before the first stop
// answers a Stop with End set. Close ends it.
func StartLive(ctx context.Context, prog *dsl.Program, call string, lim Limits, first Criteria, in Input) (*Live, *Stop, error) {
	li, err := NewLiveInterpreter(ctx, lim)
	if err != nil {
		return nil, nil, err
	}
	return li.Start(ctx, prog, call, first, in)
}

// LiveInterpreter is a sandboxed interpreter started for one live program
// that has run nothing yet: starting one (bubblewrap, Python, the tracer)
// is most of a short run's time, so a debugger that will run its program
// again (a step back) keeps one started ahead. It serves one Start, as
// StartLive's own does (one interpreter per program); Close kills one that
// was not used.
type LiveInterpreter struct {
	p   *proc
	lim Limits
}

// NewLiveInterpreter starts an interpreter for a live program under lim.
func NewLiveInterpreter(ctx context.Context, lim Limits) (*LiveInterpreter, error) {
	lim, err := lim.resolved(ctx)
	if err != nil {
		return nil, err
	}
	p, err := startProc(ctx, lim, "live")
	if err != nil {
		return nil, err
	}
	return &LiveInterpreter{p: p, lim: lim}, nil
}

// Close kills the interpreter (a no-op once Start took it).
func (li *LiveInterpreter) Close() { li.p.kill() }

// Start is StartLive on this interpreter; it takes it (Close is then the
// Live's).
func (li *LiveInterpreter) Start(ctx context.Context, prog *dsl.Program, call string, first Criteria, in Input) (*Live, *Stop, error) {
	if prog == nil {
		li.Close()
		return nil, nil, &Error{Kind: ErrSetup, Msg: "nil program"}
	}
	lim := li.lim
	l := &Live{p: li.p, lim: lim, input: in}
	cpu := int(math.Ceil(lim.Timeout.Seconds()))
	req := map[string]any{"cmd": "start", "source": prog.Source, "entry": prog.Entry, "call": call,
		"max_stdout": lim.MaxStdout, "cpu": cpu, "stop": first.wire()}
	// The start runs the module code and the call's arguments untraced,
	// which the tracer stops at the step's CPU time (SIGXCPU raises there:
	// "timeout"), then on to the first stop. A C call that holds the
	// interpreter (10**10**8) sees no signal until it returns: the start
	// has a wall clock too, startWall, past which the program is killed
	// (ErrTimeout).
	st, err := l.resume(ctx, req, startWall(lim))
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, st, nil
}

func (c Criteria) wire() map[string]any {
	m := map[string]any{"index": c.Index, "le": c.LE, "ret": c.Ret, "lt": c.LT, "lines": c.Lines}
	if c.Any {
		m["any"] = true
	}
	if c.Digest {
		m["digest"] = true
	}
	if c.Pdb != "" {
		m["pdb"], m["level"], m["line"] = c.Pdb, c.Level, c.Line
		if c.Again {
			m["again"] = true
		}
	}
	return m
}

// Resume runs the program on to the next event that meets c, or to its
// end. There is no wall-clock limit: the resume's CPU time is (see Live),
// and Interrupt stops it; ctx's end kills the program (the Live is then
// closed).
func (l *Live) Resume(ctx context.Context, c Criteria) (*Stop, error) {
	if l.end != nil {
		return nil, &Error{Kind: ErrSetup, Msg: "the program has finished"}
	}
	return l.resume(ctx, map[string]any{"cmd": "run", "stop": c.wire()}, 0)
}

// Interrupt stops a running Resume at the program's next event (Why
// "interrupt"), within microseconds for Python code; a long call into C
// code (time.sleep, a huge sum) stops when it returns. At a stop it stops
// the next Resume at its first event, unless ClearInterrupt takes it back
// first: an interrupt meant for an action whose resume is not written yet
// (a DAP pause read while the continue before it was being set up) is not
// lost. Safe for concurrent use.
func (l *Live) Interrupt() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.resuming {
		l.pending = true
		return
	}
	_ = l.write(interruptRequest)
}

// ClearInterrupt takes back an Interrupt that no Resume has used.
func (l *Live) ClearInterrupt() {
	l.mu.Lock()
	l.pending = false
	l.mu.Unlock()
}

// interruptRequest is the interrupt's line on the request pipe.
var interruptRequest = []byte(`{"cmd":"interrupt"}` + "\n")

// Ended is the program's end once it finished; nil before.
func (l *Live) Ended() *Stop { return l.end }

// Output returns what the program wrote to stdout and stderr so far, each
// up to Limits.MaxStdout bytes; stdoutCut and stderrCut say whether more
// was written to the stream.
func (l *Live) Output() (stdout, stderr []byte, stdoutCut, stderrCut bool) {
	return l.stdout, l.stderr, l.outCut, l.errCut
}

// Eval runs expr in the frame level levels up from the stopped frame (0:
// the stopped frame; at the end, after an exception: the frames it passed
// through, 0 the innermost) with pdb's semantics: the frame's globals and
// locals, any object, the program's functions; mode is one of the Eval*
// constants. A statement (EvalExec) that assigns a local of the stopped
// frame changes it when the program resumes, as pdb's !. The error
// returned is the failure to answer; the expression's own error is the
// result's Error. An expression still running after 10 s gets an error; one
// that will not stop (a long call into C) is killed with its program, and
// the Live is closed.
func (l *Live) Eval(ctx context.Context, level int, expr, mode string) (EvalResult, error) {
	w, err := l.ask(ctx, map[string]any{"cmd": "eval", "level": level, "expr": expr, "mode": mode}, evalWait)
	if err != nil {
		return EvalResult{}, err
	}
	if w.T != "eval" {
		return EvalResult{}, l.protocol("eval: reply %q", w.T)
	}
	r := EvalResult{Output: w.Output}
	if w.Error != nil {
		r.Error = *w.Error
	}
	if w.Value != nil {
		r.Value, r.HasValue = *w.Value, true
	}
	return r, nil
}

// Frames returns the program's frames on the stack at the stop, outermost
// first, each with its current line and locals; at the end, the frames an
// escaping exception passed through (as Stop.Traceback).
func (l *Live) Frames(ctx context.Context) ([]LiveFrame, error) {
	if l.end != nil {
		return l.end.Traceback, nil
	}
	w, err := l.ask(ctx, map[string]any{"cmd": "frames"}, backWait)
	if err != nil {
		return nil, err
	}
	if w.T != "frames" {
		return nil, l.protocol("frames: reply %q", w.T)
	}
	fs := make([]LiveFrame, len(w.Frames))
	for i, f := range w.Frames {
		if fs[i], err = f.frame(); err != nil {
			return nil, l.protocol("frames: %v", err)
		}
	}
	return fs, nil
}

// Back returns the target of the inverse action kind (dsl's name, e.g.
// "inv_step_over") from event pos (the number of events: the end) by
// statetree's rules, with lines (inv_breakpoint, inv_continue) and
// breakpoints kept set, found in the history of every event's kind, depth
// and line that the tracer keeps (its first 50 million events), and the
// Digest of the events up to it, which a replay to it must match.
func (l *Live) Back(ctx context.Context, kind dsl.ActionKind, pos int, lines, bps []int) (int, string, error) {
	w, err := l.ask(ctx, map[string]any{"cmd": "back", "kind": kind.String(), "pos": pos, "lines": lines, "bps": bps}, backWait)
	if err != nil {
		return 0, "", err
	}
	if w.T != "back" || w.I < 0 || w.I >= max(pos, 1) {
		return 0, "", l.protocol("back: reply %q to event %d from %d", w.T, w.I, pos)
	}
	return w.I, w.H, nil
}

// Close kills the program and its sandbox.
func (l *Live) Close() { l.p.kill() }

func (l *Live) send(req map[string]any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("trace: encode a live request: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(append(data, '\n'))
}

// write writes a request line; l.mu is held.
func (l *Live) write(line []byte) error {
	return l.p.send(line, time.Now().Add(startTimeout))
}

// sendResume writes a resume's request, carrying an interrupt made at the
// stop before (Interrupt) as its "interrupt" field: the tracer's main
// thread takes both at once, so the resume stops at its first event (an
// interrupt line after the request would be read by the tracer's reader
// thread, which may not run before the program has run on a while).
func (l *Live) sendResume(req map[string]any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending {
		l.pending = false
		req["interrupt"] = true
	}
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("trace: encode a live request: %w", err)
	}
	if err := l.write(append(data, '\n')); err != nil {
		return err
	}
	l.resuming = true
	return nil
}

// resumed marks the resume's stop read.
func (l *Live) resumed() {
	l.mu.Lock()
	l.resuming = false
	l.mu.Unlock()
}

// ask sends a request that the stopped program answers at once, within
// wait (else it is killed).
func (l *Live) ask(ctx context.Context, req map[string]any, wait time.Duration) (*liveReply, error) {
	if l.p.dead() {
		return nil, &Error{Kind: ErrCrash, Msg: "the live program has ended"}
	}
	if err := l.send(req); err != nil {
		return nil, err
	}
	w, err := l.reply(ctx, time.Now().Add(wait))
	if err != nil {
		return nil, err
	}
	if w.T == "error" {
		return nil, &Error{Kind: ErrSetup, Msg: w.Msg}
	}
	return w, nil
}

// far is a deadline that does not come: a resume waits for its stop with
// no wall-clock limit (its CPU time is limited).
var far = time.Now().Add(100 * 365 * 24 * time.Hour)

// startWall is the wall-clock limit of a live program's start: three
// times the CPU time of a step, and the grace a one-shot run gets, so that
// a start that stays within its CPU time on a busy machine is not cut.
func startWall(lim Limits) time.Duration { return 3*lim.Timeout + killGrace }

// resume sends a start or run request and waits for its stop: with wall
// > 0 at most that long from the request or the last input the program
// read (then the program is killed: ErrTimeout), else without a limit.
func (l *Live) resume(ctx context.Context, req map[string]any, wall time.Duration) (*Stop, error) {
	if l.p.dead() {
		return nil, &Error{Kind: ErrCrash, Msg: "the live program has ended"}
	}
	defer l.resumed()
	if err := l.sendResume(req); err != nil {
		return nil, err
	}
	var w *liveReply
	for {
		var err error
		deadline := far
		if wall > 0 {
			deadline = time.Now().Add(wall)
		}
		if w, err = l.reply(ctx, deadline); err != nil {
			return nil, err
		}
		l.stdout = appendCapped(l.stdout, w.So, l.lim.MaxStdout)
		l.stderr = appendCapped(l.stderr, w.Se, l.lim.MaxStdout)
		l.outCut = l.outCut || w.Ot
		l.errCut = l.errCut || w.Xt
		if w.T != "input" {
			break
		}
		if err := l.feed(ctx); err != nil {
			return nil, err
		}
	}
	switch w.T {
	case "stop":
		return l.stop(w)
	case "end":
		return l.ended(w)
	case "error":
		return nil, &Error{Kind: ErrSetup, Msg: w.Msg}
	}
	return nil, l.protocol("reply %q to a resume", w.T)
}

// feed answers the program's read of its standard input with the next
// part from l.input.
func (l *Live) feed(ctx context.Context) error {
	text, ok := "", false
	if l.input != nil {
		var err error
		if text, ok, err = l.input(ctx); err != nil {
			l.p.kill()
			return fmt.Errorf("trace: the program's input: %w", err)
		}
		if len(text) > MaxInputLine {
			l.p.kill()
			return &Error{Kind: ErrSetup, Msg: fmt.Sprintf("an input of %d bytes is over the limit of %d", len(text), MaxInputLine)}
		}
	}
	req := map[string]any{"cmd": "input", "data": nil}
	if ok && text != "" {
		req["data"] = text
	}
	return l.send(req)
}

func appendCapped(b, more []byte, limit int) []byte {
	room := limit - len(b)
	return append(b, more[:max(0, min(room, len(more)))]...)
}

func (l *Live) stop(w *liveReply) (*Stop, error) {
	var name string
	if err := json.Unmarshal(w.N, &name); err != nil || name == "" {
		return nil, l.protocol("stop: function name %s", w.N)
	}
	k := dsl.Event(w.E)
	if k < dsl.Call || k > dsl.Exception || w.L < 1 || w.D < 0 || w.F < 1 || w.I < 0 {
		return nil, l.protocol("stop: event %d line %d depth %d frame %d index %d", w.E, w.L, w.D, w.F, w.I)
	}
	if (k == dsl.Return || k == dsl.Exception) != (w.R != nil) {
		return nil, l.protocol("stop: %v event with value present=%v", k, w.R != nil)
	}
	locals, err := pairs(w.A)
	if err != nil {
		return nil, l.protocol("stop: %v", err)
	}
	ev := Event{Kind: k, Line: w.L, Depth: w.D, Frame: w.F, Func: name, Locals: locals, Stdout: w.O, Stderr: w.X}
	if w.R != nil {
		ev.Value = *w.R
	}
	return &Stop{Index: w.I, Event: ev, CallLine: w.C, Why: w.Why, Digest: w.H, CPU: time.Duration(w.CPU * float64(time.Second))}, nil
}

func (l *Live) ended(w *liveReply) (*Stop, error) {
	switch w.Status {
	case "returned", "raised":
	case "syntax":
		return nil, &Error{Kind: ErrSyntax, Msg: w.Msg, Line: w.Line}
	case "setup":
		return nil, &Error{Kind: ErrSetup, Msg: w.Msg}
	case "timeout":
		return nil, &Error{Kind: ErrTimeout, Msg: w.Msg}
	case "memory":
		return nil, &Error{Kind: ErrMemory, Msg: w.Msg}
	case "forbidden":
		return nil, &Error{Kind: ErrForbidden, Msg: w.Msg}
	case "tracer":
		return nil, &Error{Kind: ErrTracer, Msg: w.Msg}
	default:
		return nil, l.protocol("end: status %q", w.Status)
	}
	var n int
	if err := json.Unmarshal(w.N, &n); err != nil || n < 0 {
		return nil, l.protocol("end: event count %s", w.N)
	}
	st := &Stop{End: true, Index: n}
	if w.Status == "returned" {
		if w.Ret == nil {
			return nil, l.protocol("end: returned without a value")
		}
		st.Return = *w.Ret
	} else {
		if w.Exc == nil {
			return nil, l.protocol("end: raised without an exception")
		}
		st.Exception = &Exception{Type: w.Exc.Type, Message: w.Exc.Msg, Line: w.Exc.Line}
		for _, f := range w.Tb {
			fr, err := f.frame()
			if err != nil {
				return nil, l.protocol("end: traceback: %v", err)
			}
			st.Traceback = append(st.Traceback, fr)
		}
	}
	l.end = st
	return st, nil
}

// reply reads and decodes the next reply within deadline (or ctx).
func (l *Live) reply(ctx context.Context, deadline time.Time) (*liveReply, error) {
	data, err := l.p.next(ctx, deadline)
	if err != nil {
		return nil, err
	}
	var w liveReply
	if err := decodeStrict(data, &w); err != nil {
		return nil, l.protocol("%v", err)
	}
	return &w, nil
}

func (l *Live) protocol(format string, args ...any) error {
	l.p.kill()
	return &Error{Kind: ErrProtocol, Msg: "live: " + fmt.Sprintf(format, args...)}
}

// interpreterCPU is the hard CPU limit of an interpreter started in mode.
func interpreterCPU(lim Limits, mode string) string {
	switch mode {
	case "single":
		return strconv.Itoa(int(math.Ceil((lim.Timeout + killGrace).Seconds())))
	case "live":
		return strconv.Itoa(int(math.Ceil(lim.SessionCPU.Seconds())))
	}
	return "0" // a batch interpreter serves many programs, bounded by the Go side's deadlines
}
