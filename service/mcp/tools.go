package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/predict"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/service/sessions"
)

// The tools' arguments. Their schemas are inferred from these types (a
// field with omitempty is optional; no other field is accepted), then
// given their enums and bounds (schemas).

// StartInput is debug_start's.
type StartInput struct {
	Program     string  `json:"program,omitempty" jsonschema:"the Python source to debug; give this or path"`
	Path        string  `json:"path,omitempty" jsonschema:"the path of a Python file to debug (read by the server, as its user); give this or program"`
	Call        string  `json:"call,omitempty" jsonschema:"the entry call, e.g. f([3, None, 4]): the session starts at that call; omit it to debug the whole script from its first line (backend real only)"`
	Backend     string  `json:"backend,omitempty" jsonschema:"neural: the model predicts each state without running the program (the default where the server has a model); real: the program runs under the tracer, states are exact; compare: the model predicts and the real run is shown beside; cwm: a CWM checkpoint"`
	VerifyBelow float64 `json:"verify_below,omitempty" jsonschema:"neural and compare: where the model's confidence in a state is below this probability the program runs for real and the real state is shown instead (0: never)"`
	NoExec      bool    `json:"no_exec,omitempty" jsonschema:"neural and cwm: run nothing of the program; the first state is built from its text, so the call's arguments must be literals"`
	Model       string  `json:"model,omitempty" jsonschema:"a model directory for this session (neural, cwm, compare); default: the server's model"`
	Temperature float64 `json:"temperature,omitempty" jsonschema:"the model's sampling temperature (0: greedy, the default)"`
	Seed        uint64  `json:"seed,omitempty" jsonschema:"the sampling seed"`
}

// StepInput is debug_step's.
type StepInput struct {
	Session string `json:"session" jsonschema:"the session's id (debug_start's answer)"`
	Action  string `json:"action" jsonschema:"step_into, step_over, step_return, continue (to the session's breakpoints), continue:L1,L2 (to those lines), breakpoint:N (run to line N), until (step over past the current line: out of a loop), until:N (on to line N in this frame); backwards: inv_step_into, inv_step_over, inv_step_return (back to the current function's call: its inputs), inv_continue, inv_continue:L1,L2, inv_breakpoint:N"`
	Count   int    `json:"count,omitempty" jsonschema:"take the action this many times (default 1), stopping early at the end of the program"`
}

// SessionInput names a session: debug_fork's, debug_history's and
// debug_end's.
type SessionInput struct {
	Session string `json:"session" jsonschema:"the session's id"`
}

// BreakpointsInput is debug_breakpoints'.
type BreakpointsInput struct {
	Session  string       `json:"session" jsonschema:"the session's id"`
	Set      []Breakpoint `json:"set,omitempty" jsonschema:"breakpoints to set (setting one again replaces its condition)"`
	Clear    []int        `json:"clear,omitempty" jsonschema:"lines whose breakpoints to clear"`
	ClearAll bool         `json:"clear_all,omitempty" jsonschema:"clear every breakpoint first"`
}

// EvaluateInput is debug_evaluate's.
type EvaluateInput struct {
	Session    string `json:"session" jsonschema:"the session's id"`
	Expression string `json:"expression" jsonschema:"a Python expression over the current stop's locals (and __return__ at a return), e.g. len(xs) or total / 2"`
	Pretty     bool   `json:"pretty,omitempty" jsonschema:"format the value as pprint does"`
}

// SetInput is debug_set's.
type SetInput struct {
	Session string `json:"session" jsonschema:"the session's id"`
	Name    string `json:"name" jsonschema:"a local variable of the current stop"`
	Repr    string `json:"repr" jsonschema:"its new value as a Python repr, e.g. [3, 1] or 'text'"`
}

// PredictInput is predict's.
type PredictInput struct {
	Program     string   `json:"program,omitempty" jsonschema:"the Python source; give this or path"`
	Path        string   `json:"path,omitempty" jsonschema:"the path of a Python file (read by the server, as its user); give this or program"`
	Call        string   `json:"call" jsonschema:"the entry call, e.g. f([3, 4])"`
	Action      string   `json:"action,omitempty" jsonschema:"the action whose state to predict (debug_step's actions, but until; default step_into)"`
	Actions     []string `json:"actions,omitempty" jsonschema:"actions to take first, in order"`
	Backend     string   `json:"backend,omitempty" jsonschema:"neural (the model predicts; the default where the server has a model), cwm, or real (the state the program really reaches)"`
	Real        bool     `json:"real,omitempty" jsonschema:"also run the program for real and answer the real state and how the prediction matches it"`
	VerifyBelow float64  `json:"verify_below,omitempty" jsonschema:"neural: where the model's confidence is below this probability, the real state is answered instead"`
	NoExec      bool     `json:"no_exec,omitempty" jsonschema:"run nothing of the program (the call's arguments must be literals)"`
	Model       string   `json:"model,omitempty" jsonschema:"a model directory (default: the server's model)"`
	Temperature float64  `json:"temperature,omitempty" jsonschema:"the model's sampling temperature (0: greedy)"`
	Seed        uint64   `json:"seed,omitempty" jsonschema:"the sampling seed"`
}

// The tools' results beside SessionView.

// EvaluateResult is debug_evaluate's.
type EvaluateResult struct {
	Session    string `json:"session"`
	Expression string `json:"expression"`
	Value      string `json:"value" jsonschema:"the value's repr"`
	// DerivedFromPrediction: the locals it was computed from are the
	// model's prediction.
	DerivedFromPrediction bool   `json:"derived_from_prediction" jsonschema:"true when the value was computed from a predicted state's locals: it is a guess, not the program's value"`
	Note                  string `json:"note,omitempty"`
	Line                  int    `json:"line" jsonschema:"the stop's line"`
	Event                 string `json:"event" jsonschema:"the stop's event"`
}

// HistoryStep is one action of a session's history and the state it led
// to.
type HistoryStep struct {
	Action string `json:"action"`
	State  Stop   `json:"state" jsonschema:"the state it reached (event end: past the end)"`
}

// HistoryResult is debug_history's.
type HistoryResult struct {
	Session string        `json:"session"`
	Start   Stop          `json:"start" jsonschema:"the first state: the entry's call (a script's first line)"`
	Steps   []HistoryStep `json:"steps" jsonschema:"each action taken, in order, with the state it reached"`
}

// EndResult is debug_end's.
type EndResult struct {
	Session string `json:"session"`
	Ended   bool   `json:"ended"`
}

// PredictResult is predict's.
type PredictResult struct {
	Predicted State  `json:"predicted" jsonschema:"the state after the action (event end: the program ran past its end), with the model's confidence where predicted"`
	Real      *State `json:"real,omitempty" jsonschema:"with real: the real state after the same actions"`
	Match     *Match `json:"match,omitempty" jsonschema:"with real: how the prediction agrees with it"`
	RealError string `json:"real_error,omitempty" jsonschema:"with real: why the real run could not answer"`
}

// tools registers every tool on srv.
func (h *handlers) tools(srv *sdk.Server) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	add(addTool(srv, "debug_start", "Start a debugging session on a Python program at an entry call (or a whole script), stopped at its first state: the call with its arguments. "+
		"The neural backend predicts every state with a language model instead of running the program (fast, safe, but a guess: each state says predicted and how confident the model was per field); "+
		"real runs it under a sandboxed tracer (exact); compare shows both. Answers the session's id and where it stands.", h.start, enum("backend", sessions.Neural, sessions.Real, sessions.Compare, sessions.CWM), prob("verify_below")))
	add(addTool(srv, "debug_step", "Take a debugger action, forwards or backwards, and answer the new stop: event, line and its source, locals, return value or exception, stack, confidence. "+
		"Step back (inv_step_return) from a failure to the inputs of the function that failed; continue runs to the session's breakpoints (debug_breakpoints).", h.step, min1("count")))
	add(addTool(srv, "debug_breakpoints", "Set or clear a session's breakpoints, each on a code line, optionally with a condition (a Python expression over the locals; continue stops there only where it is true). Answers where the session stands, with its breakpoints.", h.breakpoints))
	add(addTool(srv, "debug_evaluate", "Evaluate a Python expression over the current stop's locals (as pdb's p), in a sandbox: nothing of it reaches the program. On a predicted state the value derives from the model's prediction and says so.", h.evaluate))
	add(addTool(srv, "debug_set", "Set a local variable of the current stop to a new value (a Python repr); the session goes on from the edited state.", h.set))
	add(addTool(srv, "debug_fork", "Copy a session (its history, breakpoints, the real run beside it) into a new one, to explore another path from the same stop.", h.fork))
	add(addTool(srv, "debug_history", "List the session's history: its first state, then each action and the state it reached.", h.history))
	add(addTool(srv, "debug_end", "End a session and free what it holds.", h.end))
	add(addTool(srv, "predict", "Predict, in one call, the state a Python function reaches after an action (and optional actions before it) from its call: the model's answer with its confidence per field and, with real, the real state and the match.", h.predict,
		enum("backend", sessions.Neural, sessions.Real, sessions.CWM), prob("verify_below")))
	return errors.Join(errs...)
}

// fix adjusts a tool's inferred input schema (an enum, a bound).
type fix func(*jsonschema.Schema)

func enum(field string, values ...string) fix {
	return func(s *jsonschema.Schema) {
		for _, v := range values {
			s.Properties[field].Enum = append(s.Properties[field].Enum, v)
		}
	}
}

func prob(field string) fix {
	return func(s *jsonschema.Schema) {
		s.Properties[field].Minimum, s.Properties[field].Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(1.0)
	}
}

func min1(field string) fix {
	return func(s *jsonschema.Schema) { s.Properties[field].Minimum = jsonschema.Ptr(1.0) }
}

// addTool adds a tool whose input schema is In's, adjusted by fixes, and
// whose output schema is Out's.
func addTool[In, Out any](srv *sdk.Server, name, desc string, h sdk.ToolHandlerFor[In, Out], fixes ...fix) error {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		return fmt.Errorf("mcp: %s's input schema: %w", name, err)
	}
	for _, f := range fixes {
		f(in)
	}
	sdk.AddTool(srv, &sdk.Tool{Name: name, Description: desc, InputSchema: in}, h)
	return nil
}

// handlers are the tools, over one session manager.
type handlers struct {
	m *sessions.Manager
}

// program is the source a tool's program or path names.
func (h *handlers) program(program, path string) (string, error) {
	switch {
	case program != "" && path != "":
		return "", errors.New(`give "program" (the source) or "path" (a file), not both`)
	case path != "":
		return sessions.ReadProgram(path, h.m.Limits().MaxProgramBytes)
	case program == "":
		return "", errors.New(`"program" (the Python source) or "path" (a Python file) is required`)
	}
	return program, nil
}

// sampling is the sample.Params of temperature and seed (nil: greedy, the
// default).
func sampling(temperature float64, seed uint64) *sample.Params {
	if temperature == 0 && seed == 0 {
		return nil
	}
	return &sample.Params{Temperature: temperature, TopP: 1, Seed: seed}
}

func (h *handlers) start(ctx context.Context, _ *sdk.CallToolRequest, in StartInput) (*sdk.CallToolResult, SessionView, error) {
	src, err := h.program(in.Program, in.Path)
	if err != nil {
		return nil, SessionView{}, err
	}
	spec := sessions.Spec{Program: src, Call: in.Call, Backend: in.Backend, Sampling: sampling(in.Temperature, in.Seed),
		VerifyBelow: in.VerifyBelow, NoExec: in.NoExec, Model: in.Model}
	var v SessionView
	err = h.m.Start(ctx, spec, func(s *sessions.Session) { v = sessionView(s) })
	return nil, v, err
}

// stepAction is one debug_step action: an ndbg action, or until (to line,
// 0 for the next).
type stepAction struct {
	a     ndbg.Action
	until bool
	line  int
}

// parseStep reads debug_step's action.
func parseStep(text string) (stepAction, error) {
	text = strings.TrimSpace(text)
	if name, arg, ok := strings.Cut(text, ":"); name == "until" {
		if !ok {
			return stepAction{until: true}, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(arg))
		if err != nil || n < 1 {
			return stepAction{}, fmt.Errorf("action %q: until:N takes a line number, 1 or more", text)
		}
		return stepAction{until: true, line: n}, nil
	}
	a, err := ndbg.ParseAction(text)
	if err != nil {
		return stepAction{}, fmt.Errorf("action %q: %v; or until, until:N", text, err)
	}
	return stepAction{a: a}, nil
}

func (h *handlers) step(ctx context.Context, _ *sdk.CallToolRequest, in StepInput) (*sdk.CallToolResult, SessionView, error) {
	act, err := parseStep(in.Action)
	if err != nil {
		return nil, SessionView{}, err
	}
	count := max(in.Count, 1)
	var v SessionView
	err = h.m.Use(ctx, in.Session, "action "+in.Action, func(ctx context.Context, s *sessions.Session) error {
		for i := range count {
			if i > 0 && s.Debug().Finished() {
				break
			}
			var err error
			if act.until {
				err = s.Until(ctx, act.line)
			} else {
				err = s.Act(ctx, act.a)
			}
			if err != nil {
				if i > 0 {
					return fmt.Errorf("after %d of %d: %w", i, count, err)
				}
				return err
			}
		}
		v = sessionView(s)
		return nil
	})
	return nil, v, err
}

func (h *handlers) breakpoints(ctx context.Context, _ *sdk.CallToolRequest, in BreakpointsInput) (*sdk.CallToolResult, SessionView, error) {
	var v SessionView
	err := h.m.Use(ctx, in.Session, "breakpoints", func(ctx context.Context, s *sessions.Session) error {
		if in.ClearAll {
			s.ClearBreakpoint(0)
		}
		for _, l := range in.Clear {
			if l < 1 {
				return fmt.Errorf("clear: line %d: want a line number, 1 or more", l)
			}
			s.ClearBreakpoint(l)
		}
		for _, b := range in.Set {
			if err := s.SetBreakpoint(b.Line, b.Condition); err != nil {
				return fmt.Errorf("set line %d: %w", b.Line, err)
			}
		}
		v = sessionView(s)
		return nil
	})
	return nil, v, err
}

// predictionNote is what an evaluation over a predicted state says.
const predictionNote = "derived from a prediction: the locals are the model's guess, not the program's values (backend real, or verify_below, gives real ones)"

func (h *handlers) evaluate(ctx context.Context, _ *sdk.CallToolRequest, in EvaluateInput) (*sdk.CallToolResult, EvaluateResult, error) {
	var r EvaluateResult
	err := h.m.Use(ctx, in.Session, "evaluate", func(ctx context.Context, s *sessions.Session) error {
		ev, err := s.Evaluate(ctx, in.Expression, in.Pretty)
		if err != nil {
			return err
		}
		st, _ := s.Debug().State()
		r = EvaluateResult{Session: s.ID(), Expression: in.Expression, Value: ev.Value, DerivedFromPrediction: ev.Predicted,
			Line: st.Line, Event: st.Event.String()}
		if ev.Predicted {
			r.Note = predictionNote
		}
		return nil
	})
	return nil, r, err
}

func (h *handlers) set(ctx context.Context, _ *sdk.CallToolRequest, in SetInput) (*sdk.CallToolResult, SessionView, error) {
	var v SessionView
	err := h.m.Use(ctx, in.Session, "setting "+in.Name, func(ctx context.Context, s *sessions.Session) error {
		if err := s.Set(ctx, in.Name, in.Repr); err != nil {
			return err
		}
		v = sessionView(s)
		return nil
	})
	return nil, v, err
}

func (h *handlers) fork(ctx context.Context, _ *sdk.CallToolRequest, in SessionInput) (*sdk.CallToolResult, SessionView, error) {
	var v SessionView
	err := h.m.Fork(ctx, in.Session, func(s *sessions.Session) { v = sessionView(s) })
	return nil, v, err
}

func (h *handlers) history(ctx context.Context, _ *sdk.CallToolRequest, in SessionInput) (*sdk.CallToolResult, HistoryResult, error) {
	var r HistoryResult
	err := h.m.Use(ctx, in.Session, "history", func(ctx context.Context, s *sessions.Session) error {
		d := s.Debug()
		t := d.Trajectory()
		r = HistoryResult{Session: s.ID(), Start: stop(&t.Start, d.UserLine), Steps: make([]HistoryStep, len(t.Steps))}
		for i, st := range t.Steps {
			r.Steps[i] = HistoryStep{Action: st.Action.String(), State: stop(st.State, d.UserLine)}
		}
		return nil
	})
	return nil, r, err
}

func (h *handlers) end(ctx context.Context, _ *sdk.CallToolRequest, in SessionInput) (*sdk.CallToolResult, EndResult, error) {
	if err := h.m.End(ctx, in.Session); err != nil {
		return nil, EndResult{}, err
	}
	return nil, EndResult{Session: in.Session, Ended: true}, nil
}

func (h *handlers) predict(ctx context.Context, _ *sdk.CallToolRequest, in PredictInput) (*sdk.CallToolResult, PredictResult, error) {
	var r PredictResult
	src, err := h.program(in.Program, in.Path)
	if err != nil {
		return nil, r, err
	}
	if strings.TrimSpace(in.Call) == "" {
		return nil, r, errors.New(`"call" is required: the entry call, e.g. "f([3, 4])"`)
	}
	if in.Action == "" {
		in.Action = "step_into"
	}
	act, err := ndbg.ParseAction(in.Action)
	if err != nil {
		return nil, r, fmt.Errorf("action %q: %v", in.Action, err)
	}
	pre := make([]ndbg.Action, len(in.Actions))
	for i, t := range in.Actions {
		if pre[i], err = ndbg.ParseAction(t); err != nil {
			return nil, r, fmt.Errorf("actions %d, %q: %v", i+1, t, err)
		}
	}
	if in.Real && in.NoExec {
		return nil, r, errors.New("real runs the program; no_exec runs nothing of it")
	}
	spec := sessions.Spec{Program: src, Call: in.Call, Backend: in.Backend, Sampling: sampling(in.Temperature, in.Seed),
		VerifyBelow: in.VerifyBelow, NoExec: in.NoExec, Model: in.Model}
	err = h.m.Run(ctx, "predicting", func(ctx context.Context) error {
		b, release, err := h.m.Backend(ctx, spec)
		if err != nil {
			return err
		}
		defer release()
		start := func(b ndbg.Backend) (*ndbg.Session, error) { return ndbg.Start(ctx, b, src, in.Call) }
		o, err := predict.Apply(ctx, start, b, pre, act)
		if err != nil {
			return err
		}
		r.Predicted = outcomeState(o)
		if !in.Real {
			return nil
		}
		ro, err := predict.Apply(ctx, start, ndbg.Recorded(h.m.Trace()), pre, act)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.RealError = err.Error()
			return nil
		}
		rv := outcomeState(ro)
		m := matchOf(ndbg.Compare(o.State, ro.State))
		r.Real, r.Match = &rv, &m
		return nil
	})
	return nil, r, err
}

// outcomeState is the view of a one-shot prediction's outcome, whose
// states show the user's lines already (predict.Apply).
func outcomeState(o predict.Outcome) State { return state(o.State, o.Pred, nil) }
