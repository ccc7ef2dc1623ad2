package mcp

import (
	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/service/sessions"
)

// The tools' results: what an agent reads of a debugger's stop, in JSON
// it can use without ndbg's DSL. Each type's schema is the tools' output
// schema (inferred from these types, descriptions from the jsonschema
// tags).

// Local is one local variable.
type Local struct {
	Name string `json:"name" jsonschema:"the variable's name"`
	Repr string `json:"repr" jsonschema:"its value as Python's repr writes it (cut to 240 characters and ...[+N] past 256)"`
	// Confidence is the model's probability of this local (name and
	// value), where a model predicted it.
	Confidence *float64 `json:"confidence,omitempty" jsonschema:"the model's probability (0-1) of this local, name and value; absent where the state was not predicted"`
}

// Confidence is how sure the model was of a predicted state, per field.
type Confidence struct {
	State float64 `json:"state" jsonschema:"the model's probability of the whole state (every field together)"`
	Event float64 `json:"event" jsonschema:"of its event"`
	Line  float64 `json:"line" jsonschema:"of its line"`
	Value float64 `json:"value" jsonschema:"of the return or exception value (1 at call and line states)"`
}

// Stop is a stop of the program without how it was predicted: a state of
// the history, or what the model had predicted where the real state
// replaced it.
type Stop struct {
	Event       string  `json:"event" jsonschema:"call, line, return, exception, or end (the program ran past its end)"`
	Line        int     `json:"line,omitempty" jsonschema:"the 1-based line of the program"`
	Source      string  `json:"source,omitempty" jsonschema:"that line's text"`
	Locals      []Local `json:"locals,omitempty" jsonschema:"the frame's locals in Python's order (at a call: the arguments; at a line: before it runs); absent where unknown"`
	LocalsKnown bool    `json:"locals_known" jsonschema:"whether locals is the frame's (false: unknown, e.g. a predicted return shows none)"`
	ReturnValue *string `json:"return_value,omitempty" jsonschema:"at a return: the returned value's repr"`
	Exception   *string `json:"exception,omitempty" jsonschema:"at an exception: the exception's repr"`
	Depth       int     `json:"depth" jsonschema:"the call depth, 0 in the entry function; -1 where a prediction cannot know it"`
}

// State is the current stop and how it came about.
type State struct {
	Stop
	// Predicted: the state is the model's prediction, not the program's
	// real state; every value derived from it is a guess.
	Predicted  bool        `json:"predicted" jsonschema:"true when the model predicted this state (nothing ran): treat it as a guess; false for a real state"`
	Confidence *Confidence `json:"confidence,omitempty" jsonschema:"how sure the model was, per field (per local: in locals); absent for real states"`
	Uncertain  bool        `json:"uncertain,omitempty" jsonschema:"the model kept writing a value past any real one: the fields in cut were cut, their confidence 0"`
	Cut        []string    `json:"cut,omitempty" jsonschema:"the fields cut (value, locals.NAME, locals)"`
	Verified   bool        `json:"verified,omitempty" jsonschema:"the model was unsure (below verify_below), so the program ran for real and this is the real state; model_state is what the model had predicted"`
	ModelState *Stop       `json:"model_state,omitempty" jsonschema:"where verified: the model's own prediction"`
	Unverified string      `json:"unverified,omitempty" jsonschema:"why a state below verify_below could not be checked for real"`
}

// Frame is one frame on the call stack.
type Frame struct {
	Function    string  `json:"function,omitempty" jsonschema:"the function's name; absent where unknown"`
	DefLine     int     `json:"def_line" jsonschema:"the line of its def"`
	Line        int     `json:"line,omitempty" jsonschema:"its current line (a caller's: the call in progress); absent where unknown"`
	Locals      []Local `json:"locals,omitempty" jsonschema:"its locals as last seen, where known"`
	LocalsKnown bool    `json:"locals_known" jsonschema:"whether its locals are known (a prediction knows only the current frame's)"`
}

// Breakpoint is a breakpoint and its condition.
type Breakpoint struct {
	Line      int    `json:"line" jsonschema:"the breakpoint's line"`
	Condition string `json:"condition,omitempty" jsonschema:"a Python expression over the stop's locals: a continue stops there only where it is true"`
}

// Output is what the program wrote (real runs).
type Output struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated" jsonschema:"a stream passed its 64 KiB limit and was cut"`
}

// Escaped is the exception that escaped the program (real runs).
type Escaped struct {
	Type    string `json:"type" jsonschema:"its class, e.g. ZeroDivisionError"`
	Message string `json:"message"`
	Line    int    `json:"line" jsonschema:"the innermost line of its traceback, where it was raised"`
}

// Match says which parts of a predicted state the real one agrees with.
type Match struct {
	All      bool     `json:"all" jsonschema:"every compared part agrees"`
	Differ   []string `json:"differ" jsonschema:"the parts that differ (event, line, locals, value, depth)"`
	Compared []string `json:"compared" jsonschema:"the parts both states state, which were compared"`
}

// SessionView is where a debugging session stands: most tools answer it.
type SessionView struct {
	Session     string       `json:"session" jsonschema:"the session's id: pass it to the other debug_ tools"`
	Backend     string       `json:"backend" jsonschema:"neural, cwm, real or compare"`
	Call        string       `json:"call" jsonschema:"the entry call; empty for a whole script"`
	Finished    bool         `json:"finished" jsonschema:"the program ran past its end (step back to go on)"`
	State       State        `json:"state" jsonschema:"the current stop (event end once finished)"`
	Stack       []Frame      `json:"stack,omitempty" jsonschema:"the call stack, outermost first, the current frame last; absent where unknown"`
	Steps       int          `json:"steps" jsonschema:"actions taken so far (debug_history lists them)"`
	Breakpoints []Breakpoint `json:"breakpoints" jsonschema:"the session's breakpoints"`
	VerifyBelow float64      `json:"verify_below,omitempty"`
	Output      *Output      `json:"output,omitempty" jsonschema:"what the program wrote before this stop (real runs)"`
	Escaped     *Escaped     `json:"escaped,omitempty" jsonschema:"the exception that escaped the program, once finished (real runs)"`
	Interrupted string       `json:"interrupted,omitempty" jsonschema:"real runs: why state is not the last action's own stop: cpu (it ran past the CPU time of an action and stopped where it was) or interrupt; absent when it reached its stop"`
	Real        *State       `json:"real,omitempty" jsonschema:"compare backend: the real state after the same actions"`
	Match       *Match       `json:"match,omitempty" jsonschema:"compare backend: how the prediction agrees with the real state"`
	RealNote    string       `json:"real_note,omitempty" jsonschema:"compare backend: why the real run no longer follows"`
}

// stop is the view of a state (nil: the end); line gives the text of a
// line to show (the session's UserLine), nil to show st.Source.
func stop(st *ndbg.State, line func(int) string) Stop {
	if st == nil {
		return Stop{Event: "end", Depth: -1}
	}
	v := Stop{Event: st.Event.String(), Line: st.Line, Source: st.Source, Depth: st.Depth}
	if line != nil {
		v.Source = line(st.Line)
	}
	if st.HasLocals() {
		v.LocalsKnown = true
		v.Locals = locals(st.Locals)
	}
	switch st.Event {
	case dsl.Return:
		v.ReturnValue = &st.Value
	case dsl.Exception:
		v.Exception = &st.Value
	}
	return v
}

func locals(ls []dsl.Local) []Local {
	out := make([]Local, len(ls))
	for i, l := range ls {
		out[i] = Local{Name: l.Name, Repr: l.Repr}
	}
	return out
}

// state is the view of the state an action reached (nil: the end) and,
// where a model predicted it (p not nil), how: the confidence per field,
// each local's beside it.
func state(st *ndbg.State, p *ndbg.Prediction, line func(int) string) State {
	v := State{Stop: stop(st, line)}
	if p == nil {
		return v
	}
	v.Predicted = !p.Verified
	v.Confidence = &Confidence{State: p.State, Event: p.Event, Line: p.Line, Value: p.Value}
	v.Uncertain, v.Cut, v.Verified, v.Unverified = p.Uncertain(), p.Cut, p.Verified, p.Unverified
	ls := v.Locals
	if p.Verified { // the confidence is of the model's own state
		ms := stop(p.Model, line)
		v.ModelState = &ms
		ls = ms.Locals
	}
	if len(p.Locals) == len(ls) {
		for i := range ls {
			c := p.Locals[i]
			ls[i].Confidence = &c
		}
	}
	return v
}

// current is the view of s's current state.
func current(s *ndbg.Session) State {
	var pred *ndbg.Prediction
	if p, ok := s.Prediction(); ok {
		pred = &p
	}
	if st, ok := s.State(); ok {
		return state(&st, pred, s.UserLine)
	}
	return state(nil, pred, s.UserLine)
}

// sessionView is where the session stands.
func sessionView(ss *sessions.Session) SessionView {
	s := ss.Debug()
	v := SessionView{Session: ss.ID(), Backend: ss.Spec().Backend, Call: s.Call(), Finished: s.Finished(),
		State: current(s), Steps: len(s.Trajectory().Steps), Breakpoints: []Breakpoint{}, VerifyBelow: ss.Spec().VerifyBelow}
	for _, b := range ss.Breakpoints() {
		v.Breakpoints = append(v.Breakpoints, Breakpoint{Line: b.Line, Condition: b.Condition})
	}
	for _, f := range s.Frames() {
		fv := Frame{Function: f.Func, DefLine: f.Def, Line: f.Line, LocalsKnown: f.LocalsKnown}
		if f.LocalsKnown {
			fv.Locals = locals(f.Locals)
		}
		v.Stack = append(v.Stack, fv)
	}
	if o, ok := s.Output(); ok {
		v.Output = &Output{Stdout: string(o.Stdout), Stderr: string(o.Stderr), Truncated: o.Truncated}
	}
	if x := s.Escaped(); x != nil {
		v.Escaped = &Escaped{Type: x.Type, Message: x.Message, Line: x.Line}
	}
	v.Interrupted = s.Interrupted()
	real, note := ss.Real()
	v.RealNote = note
	if real != nil {
		rv := current(real)
		v.Real = &rv
		var pst, rst *ndbg.State
		if st, ok := s.State(); ok {
			pst = &st
		}
		if st, ok := real.State(); ok {
			rst = &st
		}
		m := matchOf(ndbg.Compare(pst, rst))
		v.Match = &m
	}
	return v
}

// matchOf is the view of a comparison.
func matchOf(m ndbg.Match) Match {
	v := Match{All: m.All, Differ: []string{}, Compared: m.Compared.Names()}
	for i, ok := range []bool{m.Event, m.Line, m.Locals, m.Value, m.Depth} {
		c := ndbg.Components(1 << i)
		if m.Compared.Has(c) && !ok {
			v.Differ = append(v.Differ, c.Names()...)
		}
	}
	if v.Compared == nil {
		v.Compared = []string{}
	}
	return v
}
