package dap

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/device"
	"github.com/ndbg/ndbg/internal/pyeval"
	"github.com/ndbg/ndbg/internal/regfile"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// Backends a launch may name.
const (
	backendNeural  = "neural"  // the model predicts
	backendReal    = "real"    // the program runs under sys.settrace
	backendCompare = "compare" // the model predicts; the real run is shown beside
)

// launchArgs are the launch request's arguments ndbg reads; a client's
// others (type, name, request, ...) are ignored.
type launchArgs struct {
	// Program is the Python file's path (absolute, or relative to the
	// adapter's working directory).
	Program string `json:"program"`
	// Call is the entry call expression, e.g. "f([3, None, 4])"; absent or
	// empty, the whole script is debugged (run as __main__, from its first
	// line), on the real backend only.
	Call string `json:"call"`
	// Backend is neural (the default), real or compare.
	Backend string `json:"backend"`
	// Model is a model directory; empty means the embedded default model.
	Model string `json:"model"`
	// Device is where the model runs: "cpu", "cuda" or "auto", as
	// --device (ndbg.Options.Device); empty means the server's --device.
	Device string `json:"device"`
	// StopOnEntry stops at the entry's call (a script's first line)
	// instead of running to the first breakpoint.
	StopOnEntry bool `json:"stopOnEntry"`
	// Temperature samples predictions (0: greedy).
	Temperature float64 `json:"temperature"`
	// VerifyBelow checks every prediction whose whole-state confidence is
	// below it against the program run for real and shows the real state
	// instead (ndbg.Verify, as --verify-below on the commands); 0 checks
	// none. Neural and compare backends.
	VerifyBelow float64 `json:"verifyBelow"`
	// TerminateAtEnd ends the session (exited, terminated) when the program
	// finishes; by default the session stops there (reason "end", and the
	// frames an escaping exception passed through), so that the user can
	// still step back, and the next step forward ends it.
	TerminateAtEnd bool `json:"terminateAtEnd"`
	// NoExec runs nothing of the program: the first state is built from its
	// text (ndbg.NoExec, as --no-exec on the commands), so the call's
	// arguments must be literals. Neural backend only, without verifyBelow.
	NoExec bool `json:"noExec"`
	// Stdin is the program's standard input (real and compare backends):
	// what input() and sys.stdin read, line by line, then its end
	// (EOFError). A DAP client has no channel to type into a running
	// program, so the input is given at launch, as a file redirected to a
	// program's stdin; a step back feeds the program the same lines at the
	// same reads (ndbg.RealWithInput). Absent: an empty input.
	Stdin string `json:"stdin"`
}

// parseLaunch decodes and checks a launch request's arguments.
func parseLaunch(raw json.RawMessage) (launchArgs, error) {
	var a launchArgs
	if len(raw) == 0 {
		return a, errors.New("launch needs arguments: program, and call unless the whole script is debugged")
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("launch arguments: %w", err)
	}
	switch {
	case a.Program == "":
		return a, errors.New("launch: program is required: the path of a Python file")
	case a.Temperature < 0:
		return a, fmt.Errorf("launch: temperature %v is negative", a.Temperature)
	case a.VerifyBelow < 0 || a.VerifyBelow > 1:
		return a, fmt.Errorf("launch: verifyBelow %v: want a probability from 0 to 1", a.VerifyBelow)
	}
	if a.Backend == "" {
		a.Backend = backendNeural
	}
	if !slices.Contains([]string{backendNeural, backendReal, backendCompare}, a.Backend) {
		return a, fmt.Errorf("launch: backend %q: want neural, real or compare", a.Backend)
	}
	if a.VerifyBelow > 0 && a.Backend == backendReal {
		return a, errors.New("launch: verifyBelow checks the model's predictions (backend neural or compare), not the real backend's states")
	}
	if a.NoExec && (a.Backend != backendNeural || a.VerifyBelow > 0) {
		return a, errors.New("launch: noExec runs nothing of the program; the real and compare backends and verifyBelow run it")
	}
	if a.Stdin != "" && a.Backend == backendNeural {
		return a, errors.New("launch: stdin is the input of the program run for real (backend real or compare); the neural backend runs nothing past the call")
	}
	if err := device.Check(a.Device); err != nil {
		return a, fmt.Errorf("launch: %w", err)
	}
	return a, nil
}

// session is one launched program: the ndbg session, and for the compare
// backend the real session that takes the same actions beside it.
type session struct {
	s     *ndbg.Session
	real  *ndbg.Session // compare: the real run; nil otherwise, or once it cannot follow
	model *ndbg.Model   // opened for this session; nil for the real backend
	path  string        // the program's absolute path
	args  launchArgs
	sent  ndbg.OutputCursor // the program's output sent as output events
	lim   trace.Limits      // the interpreter and sandbox choice of evaluate (Config.Limits)

	lineBPs, funcBPs []*bp // the client's breakpoints (setBreakpoints, setFunctionBreakpoints)
	hit              *bp   // the breakpoint that made the last stop; nil if none
}

// newOutput returns what the program wrote since the last call (stdout,
// stderr), as text (ndbg.OutputCursor).
func (ss *session) newOutput() (string, string) {
	out, errOut := ss.sent.Next(ss.s)
	return strings.ToValidUTF8(string(out), "\uFFFD"), strings.ToValidUTF8(string(errOut), "\uFFFD")
}

// evaluate evaluates an expression in frame level (0: the current one),
// as pdb's p does: on the real backend in the live program's frame (its
// globals and locals, any object); on a prediction over the current
// state's variables (its locals, and __return__ or __exception__) rebuilt
// from their reprs (package pyeval, in the sandbox unless the server was
// started --unsandboxed); predicted says the value derives from a
// prediction.
func (ss *session) evaluate(ctx context.Context, level int, expr string) (value string, predicted bool, err error) {
	if ss.s.Backend().Name() == "real" {
		res, err := ss.s.Eval(ctx, level, expr, ndbg.EvalRepr)
		switch {
		case err != nil:
			return "", false, err
		case res.Error != "":
			return "", false, errors.New(res.Error)
		}
		return res.Value, false, nil
	}
	if level != 0 {
		return "", false, fmt.Errorf("evaluate in frame %d: a prediction has only the current frame's (0) locals", level)
	}
	st, ok := ss.s.State()
	if !ok {
		return "", false, errors.New("the program has finished: nothing to evaluate")
	}
	if !st.HasLocals() {
		return "", false, fmt.Errorf("a predicted %s state shows no locals to evaluate %q over (its value: %s)", st.Event, expr, st.Value)
	}
	var locals []dsl.Local
	for _, v := range variables(st) {
		locals = append(locals, dsl.Local{Name: v[0], Repr: v[1]})
	}
	res, err := pyeval.Eval(ctx, ss.lim, locals, []string{expr}, false)
	if err != nil {
		return "", false, err
	}
	if res[0].Error != "" {
		return "", false, errors.New(res[0].Error)
	}
	p, ok := ss.s.Prediction()
	return res[0].Value, ok && !p.Verified, nil
}

// launch starts a session as the arguments say.
func launch(ctx context.Context, cfg Config, a launchArgs) (*session, error) {
	path, err := filepath.Abs(a.Program)
	if err != nil {
		return nil, fmt.Errorf("launch: program %q: %w", a.Program, err)
	}
	src, err := readProgram(path) // before what it is for: a missing file says so first
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	if strings.TrimSpace(a.Call) == "" && a.Backend != backendReal {
		return nil, fmt.Errorf(`launch: debugging a whole script (no call) needs backend "real": the model's trace format has no module-level frames; give a call, e.g. "f([3, None, 4])", to debug a function on the %s backend`, a.Backend)
	}
	ss := &session{path: path, args: a, lim: cfg.Limits}
	var b ndbg.Backend
	if a.Backend == backendReal {
		b = ndbg.RealWithInput(cfg.Limits, textInput(a.Stdin))
	} else {
		if ss.model, err = ndbg.Open(ctx, ndbg.Options{Dir: a.Model, Threads: cfg.Threads, Device: cmp.Or(a.Device, cfg.Device)}); err != nil {
			return nil, fmt.Errorf("launch: opening the model: %w", unquoteJSON(err))
		}
		b = ndbg.Neural(ss.model, sample.Params{Temperature: a.Temperature})
		if a.VerifyBelow > 0 {
			if b, err = ndbg.Verify(b, cfg.Limits, a.VerifyBelow); err != nil {
				ss.close()
				return nil, fmt.Errorf("launch: verifyBelow: %w", err)
			}
		}
		if a.NoExec {
			if b, err = ndbg.NoExec(b); err != nil {
				ss.close()
				return nil, fmt.Errorf("launch: noExec: %w", err)
			}
		}
	}
	if ss.s, err = ndbg.Start(ctx, b, src, a.Call); err != nil {
		ss.close()
		return nil, fmt.Errorf("launch: %w", unquoteSyntax(path, err))
	}
	if a.Backend == backendCompare {
		if ss.real, err = ndbg.Start(ctx, ndbg.RealWithInput(cfg.Limits, textInput(a.Stdin)), src, a.Call); err != nil {
			ss.close()
			return nil, fmt.Errorf("launch: the real run beside the prediction: %w", unquoteSyntax(path, err))
		}
	}
	return ss, nil
}

// textInput is a program's standard input of text: its lines, one per
// read past what the program was given before, then the end.
func textInput(text string) trace.Input {
	r := bufio.NewReader(strings.NewReader(text))
	return func(context.Context) (string, bool, error) {
		line, _ := r.ReadString('\n') // the only error is the end, with what is left
		return line, line != "", nil
	}
}

// maxProgramFile bounds a launched program's file: a program ndbg can
// debug is far smaller (the model's context is 2048 tokens), and a path
// to something endless (/dev/zero) must not be read forever.
const maxProgramFile = 8 << 20

// readProgram reads the launched program at path: a regular file (not a
// FIFO or a device, whose read could block or never end) of at most
// maxProgramFile bytes, of UTF-8 text without NUL bytes. The path is the
// client's, read with the server's rights, which are the client's own:
// ServeListener serves only the server's user, and stdio serves the editor
// that started the server. An error says what is wrong and where (line and
// column), never quoting the file: its text reaches the client only as a
// program ndbg debugs.
func readProgram(path string) (string, error) {
	// O_NONBLOCK: opening a FIFO does not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("reading the program: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the program: %w", err)
	}
	if !fi.Mode().IsRegular() {
		kind := "not a regular file"
		switch t := fi.Mode().Type(); {
		case t&os.ModeDir != 0:
			kind = "a directory"
		case t&os.ModeNamedPipe != 0:
			kind = "a FIFO"
		case t&os.ModeDevice != 0:
			kind = "a device"
		case t&os.ModeSocket != 0:
			kind = "a socket"
		}
		return "", fmt.Errorf("program %s is %s: want a Python file", path, kind)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxProgramFile+1))
	if err != nil {
		return "", fmt.Errorf("reading the program %s: %w", path, err)
	}
	if len(data) > maxProgramFile {
		return "", fmt.Errorf("program %s is larger than %d bytes: not a program ndbg can debug", path, maxProgramFile)
	}
	if where, bad := regfile.NotText(data); bad {
		return "", fmt.Errorf("program %s is not a Python source file: %s (ndbg reads UTF-8 sources; the file's text is not quoted)", path, where)
	}
	return string(data), nil
}

// unquoteSyntax replaces a syntax error from the program at path, whose
// message may quote the file (CPython writes "invalid character '€'",
// "duplicate argument 'x'"), by one that says where only; other errors
// pass unchanged.
func unquoteSyntax(path string, err error) error {
	var te *trace.Error
	if !errors.As(err, &te) || !errors.Is(te.Kind, trace.ErrSyntax) {
		return err
	}
	where := ""
	if te.Line > 0 {
		where = fmt.Sprintf(" at line %d", te.Line)
	}
	return fmt.Errorf("%w: program %s is not valid Python%s (CPython's message is not shown, as it may quote the file)", trace.ErrSyntax, path, where)
}

// unquoteJSON rewrites a JSON syntax error in err (a model file that is
// not JSON: encoding/json quotes the offending character) to say only
// where it is.
func unquoteJSON(err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	return errors.New(strings.Replace(err.Error(), se.Error(), fmt.Sprintf("not JSON at byte %d", se.Offset), 1))
}

func (ss *session) close() {
	if ss.s != nil {
		ss.s.Close()
	}
	ss.detach()
	if ss.model != nil {
		ss.model.Close()
	}
}

// detach ends the compare backend's real run.
func (ss *session) detach() {
	if ss.real != nil {
		ss.real.Close()
		ss.real = nil
	}
}

// syncBreakpoints gives both sessions the lines of every breakpoint.
func (ss *session) syncBreakpoints() {
	for _, s := range []*ndbg.Session{ss.s, ss.real} {
		if s == nil {
			continue
		}
		s.ClearBreakpoint(0)
		for _, l := range ss.bpLines() {
			_ = s.SetBreakpoint(l) // checked when it was set
		}
	}
}

// do applies a to the session (a stop that only breakpoints made is taken
// where one of them fires: its hit condition and condition hold; stepIn,
// next and stepOut stop where pdb and debugpy do, also in generators, on
// the real backend: Session.DoLikePdb) and, for
// compare, to the real run when the session took it, so both histories
// stay step for step. The note says why the real run stopped following, if
// it did.
func (ss *session) do(ctx context.Context, a ndbg.Action) (note string, err error) {
	n := len(ss.s.Trajectory().Steps)
	ss.hit = nil
	_, err = ss.s.DoLikePdb(ctx, a, 0, func(st ndbg.State) bool {
		ss.hit = ss.fires(ctx, ss.s, st, true)
		return ss.hit != nil
	})
	if ss.real == nil || len(ss.s.Trajectory().Steps) == n {
		return "", err
	}
	m := len(ss.real.Trajectory().Steps)
	_, rerr := ss.real.DoIf(ctx, a, func(st ndbg.State) bool { return ss.fires(ctx, ss.real, st, false) != nil })
	if len(ss.real.Trajectory().Steps) == m {
		ss.detach()
		return fmt.Sprintf("the real run cannot take %s from where it is (%v); the Real scope is gone from here", a.Kind, rerr), err
	}
	return "", err
}

// set edits a local (on the real backend, in the live program); for
// compare, in the real run too.
func (ss *session) set(ctx context.Context, name, repr string) (note string, err error) {
	if err := ss.s.Set(ctx, name, repr); err != nil {
		return "", err
	}
	if ss.real != nil {
		if err := ss.real.Set(ctx, name, repr); err != nil {
			ss.detach()
			return fmt.Sprintf("the real run cannot follow the edit (%v); the Real scope is gone from here", err), nil
		}
	}
	return "", nil
}

// describe is one line for a state: event, line and source, and the value
// of a return or exception.
func (ss *session) describe(st ndbg.State) string {
	d := fmt.Sprintf("line %d (%s): %s", st.Line, st.Event, strings.TrimSpace(ss.s.UserLine(st.Line)))
	if st.Event == dsl.Return || st.Event == dsl.Exception {
		d += " -> " + st.Value
	}
	return d
}

// comparison says how the real run's current state differs from the
// prediction's (compare backend); "" without a real run.
func (ss *session) comparison() string {
	if ss.real == nil {
		return ""
	}
	pred, pok := ss.s.State()
	real, rok := ss.real.State()
	var pp, rp *ndbg.State
	if pok {
		pp = &pred
	}
	if rok {
		rp = &real
	}
	if ndbg.Compare(pp, rp).All {
		return "real: the same"
	}
	if !rok {
		return "real: the program finished"
	}
	d := "real: " + ss.describe(real)
	if pok && pred.HasLocals() && real.HasLocals() && !ndbg.Compare(pp, rp).Locals {
		predicted := map[string]string{}
		for _, l := range pred.Locals {
			predicted[l.Name] = l.Repr
		}
		for _, l := range real.Locals {
			if v, ok := predicted[l.Name]; !ok || v != l.Repr {
				d += fmt.Sprintf("; %s = %s (predicted %s)", l.Name, l.Repr, orNothing(v, ok))
			}
		}
	}
	return d
}

func orNothing(v string, ok bool) string {
	if !ok {
		return "nothing"
	}
	return v
}

// prediction says how the current state was predicted, in a few words
// for the stop's description and the console: how sure the model was, the
// values it cut, and whether verifyBelow showed the real state instead.
// news is false for a plain prediction (the console need not hear of it);
// ok is false where the state was not predicted.
func (ss *session) prediction() (text string, news, ok bool) {
	p, ok := ss.s.Prediction()
	if !ok {
		return "", false, false
	}
	if p.Verified {
		model := "the end of the program"
		if p.Model != nil {
			model = ss.describe(*p.Model)
		}
		return fmt.Sprintf("verified: the model was %s sure, so this is the real state (it predicted %s)", ndbg.Percent(p.State), model), true, true
	}
	text = fmt.Sprintf("predicted, %s sure", ndbg.Percent(p.State))
	if p.Uncertain() {
		text += "; uncertain: the model ran past any real value in " + strings.Join(p.Cut, ", ") + ", cut there"
	}
	if p.Unverified != "" {
		text += "; not verified: " + p.Unverified
	}
	return text, p.Uncertain() || p.Unverified != "", true
}

// varTypes says, for each of variables(st) of the current state, how the
// model was sure of it: the DAP variable's type, which editors show beside
// the value or on hover (VS Code: the tooltip, and inline with
// debug.showVariableTypes) while the value stays the repr, to copy or edit
// as it is. Empty strings where the state was not predicted.
func (ss *session) varTypes(st ndbg.State) []string {
	vs := variables(st)
	types := make([]string, len(vs))
	p, ok := ss.s.Prediction()
	switch {
	case !ok:
	case p.Verified:
		for i := range types {
			types[i] = "real (verified)"
		}
	default:
		for i, v := range vs {
			c, field := p.Value, "value"
			if i < len(st.Locals) {
				if len(p.Locals) != len(st.Locals) {
					continue
				}
				c, field = p.Locals[i], "locals."+v[0]
			}
			types[i] = "predicted, " + ndbg.Percent(c) + " sure"
			if slices.Contains(p.Cut, field) {
				types[i] = "predicted, uncertain: cut where the model ran past any real value"
			}
		}
	}
	return types
}

// variables lists a state's locals, then its return value or exception
// under pdb's names __return__ and __exception__.
func variables(st ndbg.State) [][2]string {
	var vs [][2]string
	for _, l := range st.Locals {
		vs = append(vs, [2]string{l.Name, l.Repr})
	}
	switch st.Event {
	case dsl.Return:
		vs = append(vs, [2]string{"__return__", st.Value})
	case dsl.Exception:
		vs = append(vs, [2]string{"__exception__", st.Value})
	}
	return vs
}

// funcName names the function whose def (call-event) line is l: "mean"
// for "def mean(xs):"; a lambda or comprehension, which has no def, by its
// line.
func (ss *session) funcName(l int) string {
	if name, ok := dsl.DefName(ss.s.UserLine(l)); ok {
		return name
	}
	return fmt.Sprintf("<lambda or comprehension at line %d>", l)
}
