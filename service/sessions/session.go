package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/pyeval"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// Spec says what session to start.
type Spec struct {
	// Program is the Python source.
	Program string
	// Call is the entry call, e.g. "f(3, [1, 2])"; empty debugs the whole
	// script (the real backend only: the model's trace format has no
	// module-level frames).
	Call string
	// Backend is one of the manager's backends; empty is its default.
	Backend string
	// Sampling is how the model samples (neural, cwm, compare); nil is
	// greedy decoding.
	Sampling *sample.Params
	// VerifyBelow checks predictions whose whole-state confidence is below
	// it against the program run for real (ndbg.Verify; neural and
	// compare); 0 checks none.
	VerifyBelow float64
	// NoExec runs nothing of the program: the first state is built from
	// its text (ndbg.NoExec; neural and cwm), so the call's arguments must
	// be literals.
	NoExec bool
	// Model is a model directory for this session (neural, cwm, compare),
	// opened once and shared by every session naming it; empty is the
	// manager's model.
	Model string
}

// check fills in spec's default backend and refuses what the manager
// cannot start, saying why (the fields are named as clients send them).
func (m *Manager) check(spec Spec) (Spec, error) {
	switch {
	case spec.Program == "":
		return spec, errorf(Invalid, `"program" (the Python source) is required`)
	case len(spec.Program) > m.lim.MaxProgramBytes:
		return spec, errorf(TooLarge, "the program is %d bytes, more than the limit of %d (--max-program)", len(spec.Program), m.lim.MaxProgramBytes)
	}
	if spec.Backend == "" {
		spec.Backend = m.backends[0]
	}
	if strings.TrimSpace(spec.Call) == "" && spec.Backend != Real {
		return spec, errorf(Invalid, `no "call": debugging a whole script needs backend "real" (the model's trace format has no module-level frames); give "call", e.g. "f(3, [1, 2])", to debug a function on the %s backend`, spec.Backend)
	}
	if !slices.Contains(m.backends, spec.Backend) {
		return spec, errorf(Invalid, "backend %q is not offered here (have %s)", spec.Backend, strings.Join(m.backends, ", "))
	}
	if spec.Sampling != nil {
		if spec.Backend == Real {
			return spec, errorf(Invalid, `"sampling" applies to the neural, cwm and compare backends, not to the real one`)
		}
		if _, err := sample.New(*spec.Sampling); err != nil {
			return spec, errorf(Invalid, "sampling: temperature and top_k cannot be negative, top_p is in [0, 1] (%v)", err)
		}
	}
	switch {
	case !(spec.VerifyBelow >= 0 && spec.VerifyBelow <= 1):
		return spec, errorf(Invalid, "verify_below %g: want a probability from 0 to 1", spec.VerifyBelow)
	case spec.VerifyBelow > 0 && spec.Backend != Neural && spec.Backend != Compare:
		return spec, errorf(Invalid, "verify_below checks the neural backend's predictions, not the %s backend's", spec.Backend)
	case spec.NoExec && (spec.Backend == Real || spec.Backend == Compare || spec.VerifyBelow > 0):
		return spec, errorf(Invalid, "no_exec runs nothing of the program; the real and compare backends and verify_below run it")
	case spec.Model != "" && spec.Backend == Real:
		return spec, errorf(Invalid, `"model" names the model of the neural, cwm and compare backends, not of the real one`)
	case spec.Model != "" && m.cfg.OpenModel == nil:
		return spec, errorf(Invalid, `"model": this server opens no model a session names; it has its own (%s)`, m.modelName())
	}
	return spec, nil
}

func (m *Manager) modelName() string {
	if m.cfg.Model == nil {
		return "none: the real backend only"
	}
	return m.cfg.Model.Name()
}

// start starts the ndbg session spec asks for (checked).
func (m *Manager) start(ctx context.Context, spec Spec) (*Session, error) {
	s := &Session{spec: spec, lim: m.cfg.Trace}
	model := m.cfg.Model
	if spec.Model != "" {
		pm, err := m.models.acquire(ctx, spec.Model)
		if err != nil {
			return nil, err
		}
		s.pooled, s.models, model = pm, m.models, pm.m
	}
	b, err := backendFor(spec, model, m.cfg.Trace)
	if err != nil {
		s.close()
		return nil, &Error{Kind: Invalid, Err: err}
	}
	if s.s, err = ndbg.Start(ctx, b, spec.Program, spec.Call); err != nil {
		s.close()
		return nil, err
	}
	if spec.Backend == Compare {
		if s.real, err = ndbg.Start(ctx, ndbg.Real(m.cfg.Trace), spec.Program, spec.Call); err != nil {
			s.close()
			return nil, fmt.Errorf("the real run beside the prediction: %w", err)
		}
	}
	return s, nil
}

// backendFor is the ndbg backend of a checked spec on model.
func backendFor(spec Spec, model *ndbg.Model, lim trace.Limits) (ndbg.Backend, error) {
	var p sample.Params
	if spec.Sampling != nil {
		p = *spec.Sampling
	}
	var b ndbg.Backend
	var err error
	switch spec.Backend {
	case Real:
		return ndbg.Real(lim), nil
	case CWM:
		b = ndbg.CWM(model, p)
	default: // neural, compare
		b = ndbg.Neural(model, p)
		if spec.VerifyBelow > 0 {
			if b, err = ndbg.Verify(b, lim, spec.VerifyBelow); err != nil {
				return nil, fmt.Errorf("verify_below: %w", err)
			}
		}
	}
	if spec.NoExec {
		if b, err = ndbg.NoExec(b); err != nil {
			return nil, fmt.Errorf("no_exec: %w", err)
		}
	}
	return b, nil
}

// Session is one live debugging session of a Manager: the ndbg session,
// for the compare backend the real run beside it, and its breakpoints with
// their conditions. Its methods are for the function Use (or Start, Fork)
// gives it to; nothing else holds it then.
type Session struct {
	id       string
	spec     Spec
	s        *ndbg.Session
	real     *ndbg.Session // compare: the real run; nil otherwise, or once it could not follow
	realNote string        // why the real run stopped following (compare)
	conds    map[int]string
	lim      trace.Limits
	pooled   *pooled // the model Spec.Model named; nil for the manager's
	models   *pool

	sem      chan struct{} // held by whoever uses the session
	closed   bool
	lastUsed time.Time
}

func (s *Session) unlock() { s.lastUsed = time.Now(); <-s.sem }

// close releases the session (and its model's reference).
func (s *Session) close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.s != nil {
		s.s.Close()
	}
	if s.real != nil {
		s.real.Close()
	}
	if s.pooled != nil {
		s.models.release(s.pooled)
	}
}

// fork copies the session.
func (s *Session) fork() *Session {
	f := &Session{spec: s.spec, s: s.s.Fork(), realNote: s.realNote, conds: cloneMap(s.conds), lim: s.lim, pooled: s.pooled, models: s.models}
	if s.real != nil {
		f.real = s.real.Fork()
	}
	if f.pooled != nil {
		f.models.retain(f.pooled)
	}
	return f
}

func cloneMap(m map[int]string) map[int]string {
	if m == nil {
		return nil
	}
	c := make(map[int]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// ID is the session's id, which clients name it by.
func (s *Session) ID() string { return s.id }

// Spec is what the session was started with (its backend filled in).
func (s *Session) Spec() Spec { return s.spec }

// Debug is the ndbg session: its state, history, prediction, output.
func (s *Session) Debug() *ndbg.Session { return s.s }

// Real is the compare backend's real run beside the prediction, nil when
// there is none; note says why it stopped following where it did.
func (s *Session) Real() (real *ndbg.Session, note string) { return s.real, s.realNote }

// Predicted reports whether the session's states are predictions (any
// backend but the real one), which every value derived from them must say.
func (s *Session) Predicted() bool { return s.spec.Backend != Real }

// Breakpoint is a breakpoint line and its condition ("" for none).
type Breakpoint struct {
	Line      int
	Condition string
}

// Breakpoints returns the session's breakpoints in line order.
func (s *Session) Breakpoints() []Breakpoint {
	var out []Breakpoint
	for _, l := range s.s.Breakpoints() {
		out = append(out, Breakpoint{Line: l, Condition: s.conds[l]})
	}
	return out
}

// SetBreakpoint sets a breakpoint at a code line, with a condition (a
// Python expression over the stop's locals; "" for none) that must be true
// for a continue to stop there. Setting one again replaces its condition.
func (s *Session) SetBreakpoint(line int, cond string) error {
	if line < 1 {
		return errorf(Invalid, "breakpoint line %d: want a line number, 1 or more", line)
	}
	if err := s.s.SetBreakpoint(line); err != nil {
		return &Error{Kind: Unprocessable, Err: err}
	}
	if s.real != nil {
		s.real.SetBreakpoint(line) // the same program: the same code lines
	}
	cond = strings.TrimSpace(cond)
	if cond == "" {
		delete(s.conds, line)
		return nil
	}
	if s.conds == nil {
		s.conds = map[int]string{}
	}
	s.conds[line] = cond
	return nil
}

// ClearBreakpoint removes the breakpoint at line (0: every one).
func (s *Session) ClearBreakpoint(line int) {
	s.s.ClearBreakpoint(line)
	if s.real != nil {
		s.real.ClearBreakpoint(line)
	}
	if line == 0 {
		s.conds = nil
	}
	delete(s.conds, line)
}

// Act applies one action (ndbg.ParseAction's: step_into, step_over,
// step_return, breakpoint:N, continue, continue:L,..., and each one's
// inv_ form). A plain continue (or inv_continue) runs to the session's
// breakpoints, stopping at a conditional one only where its condition holds
// (as pdb: a condition that cannot be evaluated stops). For the compare
// backend the real run takes the same action, when the session took it.
// An action that runs past the end of the program is taken: it returns
// nil, and the session is finished.
func (s *Session) Act(ctx context.Context, a ndbg.Action) error {
	if (a.Kind == dsl.Continue || a.Kind == dsl.InvContinue) && a.Lines == nil {
		a.Lines = s.s.Breakpoints()
	}
	n := len(s.s.Trajectory().Steps)
	_, err := s.s.DoIf(ctx, a, func(st ndbg.State) bool { return s.fires(ctx, st) })
	took := len(s.s.Trajectory().Steps) > n
	if s.real != nil && took {
		s.follow(ctx, a)
	}
	if err != nil && !(took && errors.Is(err, ndbg.ErrFinished)) {
		return err
	}
	return nil
}

// fires reports whether a breakpoint at st's line stops there: it has no
// condition, or its condition is true on st's locals or cannot be
// evaluated (pdb stops then too).
func (s *Session) fires(ctx context.Context, st ndbg.State) bool {
	cond, ok := s.conds[st.Line]
	if !ok || st.Event != dsl.Line {
		return true
	}
	res, err := pyeval.Eval(ctx, s.lim, st.Locals, []string{"bool(" + cond + ")"}, false)
	return err != nil || res[0].Error != "" || res[0].Value != "False"
}

// follow applies to the real run an action the session took; when the
// real run cannot take it, it stops following and says why.
func (s *Session) follow(ctx context.Context, a ndbg.Action) {
	n := len(s.real.Trajectory().Steps)
	_, err := s.real.DoIf(ctx, a, func(st ndbg.State) bool { return s.fires(ctx, st) })
	if len(s.real.Trajectory().Steps) > n {
		return // taken (ErrFinished: it ran past the end)
	}
	s.detach(fmt.Sprintf("the real run could not take %s from where it was (%v)", a, err))
}

// detach stops the compare backend's real run, saying why.
func (s *Session) detach(why string) {
	if s.real == nil {
		return
	}
	s.real.Close()
	s.real, s.realNote = nil, why
}

// Until is pdb's until: step over, on past the lines of the current frame
// before line (0: after the current line, so out of a loop), stopping at
// the frame's return, in a caller, or at a breakpoint that fires on the
// way. Each step is a step of the history.
func (s *Session) Until(ctx context.Context, line int) error {
	st, ok := s.s.State()
	if !ok {
		return fmt.Errorf("until: %w", ndbg.ErrFinished)
	}
	target := st.Line + 1
	if line != 0 {
		if line <= st.Line {
			return errorf(Invalid, "until %d: the line must be after the current line %d", line, st.Line)
		}
		target = line
	}
	depth, id := s.frame()
	over := ndbg.Action{Kind: dsl.StepOver}
	for {
		if err := s.Act(ctx, over); err != nil {
			return err
		}
		next, ok := s.s.State()
		if !ok {
			return nil // ran past the end
		}
		nd, nid := s.frame()
		same := nd == depth && nd > 0 && (id < 0 || nid == id)
		if !same || next.Event != dsl.Line || next.Line >= target || (s.hasBreakpoint(next) && s.fires(ctx, next)) {
			return nil
		}
	}
}

// hasBreakpoint reports whether a breakpoint stops at st.
func (s *Session) hasBreakpoint(st ndbg.State) bool {
	return st.Event == dsl.Line && slices.Contains(s.s.Breakpoints(), st.Line)
}

// frame is the current frame's depth (0 when unknown) and id.
func (s *Session) frame() (depth, id int) {
	fs := s.s.Frames()
	if len(fs) == 0 {
		return 0, -1
	}
	return len(fs), fs[len(fs)-1].ID
}

// Set edits a local of the current state (repr: the new value's repr);
// the compare backend's real run is edited too, or stops following.
func (s *Session) Set(ctx context.Context, name, repr string) error {
	if err := s.s.Set(ctx, name, repr); err != nil {
		return err
	}
	if s.real != nil {
		if err := s.real.Set(ctx, name, repr); err != nil {
			s.detach(fmt.Sprintf("the real run could not set %s (%v)", name, err))
		}
	}
	return nil
}

// Evaluation is an expression's value at the current stop.
type Evaluation struct {
	// Value is the value's repr (pformat's with pretty).
	Value string
	// Predicted: the value derives from a predicted state (the model's
	// locals), not from a real one.
	Predicted bool
}

// Evaluate evaluates a Python expression over the current state's locals
// (and __return__ at a return), as pdb's p does, in the sandbox (package
// pyeval): nothing of it reaches the program. An expression's own error
// (a NameError) is an Unprocessable error with Python's message.
func (s *Session) Evaluate(ctx context.Context, expr string, pretty bool) (Evaluation, error) {
	if strings.TrimSpace(expr) == "" {
		return Evaluation{}, errorf(Invalid, `"expression" is empty: want a Python expression, e.g. "len(xs)"`)
	}
	st, ok := s.s.State()
	if !ok {
		return Evaluation{}, errorf(Conflict, "the program has finished: no state to evaluate %q in", expr)
	}
	locals := st.Locals
	if !st.HasLocals() {
		if st.Event != dsl.Return {
			return Evaluation{}, errorf(Unprocessable, "this %s state shows no locals (a prediction shows none at a return or exception) to evaluate %q over", st.Event, expr)
		}
		locals = nil
	}
	if st.Event == dsl.Return {
		locals = append(slices.Clone(locals), dsl.Local{Name: "__return__", Repr: st.Value})
	}
	res, err := pyeval.Eval(ctx, s.lim, locals, []string{expr}, pretty)
	if err != nil {
		return Evaluation{}, fmt.Errorf("evaluating %q: %w", expr, err)
	}
	if res[0].Error != "" {
		return Evaluation{}, errorf(Unprocessable, "evaluating %q: %s", expr, res[0].Error)
	}
	p, predicted := s.s.Prediction()
	return Evaluation{Value: res[0].Value, Predicted: predicted && !p.Verified}, nil
}

// Backend checks spec as Start does and returns its ndbg backend, for an
// operation on no session (a one-shot prediction, under Run), and release,
// which the caller calls once done with it. The compare backend is two
// sessions, not one backend: it is refused here.
func (m *Manager) Backend(ctx context.Context, spec Spec) (b ndbg.Backend, release func(), err error) {
	if spec, err = m.check(spec); err != nil {
		return nil, nil, err
	}
	if spec.Backend == Compare {
		return nil, nil, errorf(Invalid, "the compare backend is a session's (debug_start); here, ask for the real state beside the prediction instead")
	}
	model, release := m.cfg.Model, func() {}
	if spec.Model != "" {
		pm, err := m.models.acquire(ctx, spec.Model)
		if err != nil {
			return nil, nil, err
		}
		model, release = pm.m, func() { m.models.release(pm) }
	}
	if b, err = backendFor(spec, model, m.cfg.Trace); err != nil {
		release()
		return nil, nil, &Error{Kind: Invalid, Err: err}
	}
	return b, release, nil
}

// Trace returns the limits of real runs (Config.Trace).
func (m *Manager) Trace() trace.Limits { return m.cfg.Trace }
