// Package dsl is the language in which ndbg writes programs, debugger states
// and debugger actions as text: CWM's trace frames, byte for byte, extended
// with action tokens. docs/dsl.md is the specification; this package is its
// one implementation (types, encoder, strict parser).
package dsl

import "fmt"

// Event is the runtime event a debugger state stops at: one of CPython's
// sys.settrace events.
type Event uint8

// The events, in CWM's order.
const (
	Call Event = iota + 1
	Line
	Return
	Exception
)

var eventNames = [...]string{Call: "call", Line: "line", Return: "return", Exception: "exception"}

// String returns the sys.settrace name of the event ("call", "line", ...).
func (e Event) String() string {
	if e >= Call && e <= Exception {
		return eventNames[e]
	}
	return fmt.Sprintf("Event(%d)", uint8(e))
}

// ParseEvent is the inverse of Event.String.
func ParseEvent(s string) (Event, error) {
	for e := Call; e <= Exception; e++ {
		if eventNames[e] == s {
			return e, nil
		}
	}
	return 0, fmt.Errorf("dsl: unknown event %q", s)
}

// Local is one local variable: its name and the repr() of its value, as
// bounded by the tracer (see MaxRepr).
type Local struct {
	Name string
	Repr string
}

// State is one stop of the debugger: a snapshot of the program.
type State struct {
	Event Event
	// Line is the 1-based line number in Program.Source.
	Line int
	// Source is the text of that line as frames write it, Program.Text(Line)
	// (no newline, no StartMarker). It is derived from Line: Parse sets it,
	// Encode accepts it empty.
	Source string
	// Locals are the local variables in the order CPython lists them
	// (f_locals). At a call they are the arguments; at a line, the values
	// before the line runs. At a return or exception state they are the
	// frame's locals then, when LocalsKnown; return and exception frames
	// carry none in text, so a parsed or predicted one has nil Locals.
	Locals []Local
	// LocalsKnown marks a return or exception state whose Locals are the
	// frame's (the real backend reports them). Without it such a state's
	// locals are unknown, not empty: the DSL text never writes them (Encode
	// leaves them out, Parse never sets it, docs/dsl.md section 4) and a
	// model does not predict them. Call and line states always carry their
	// locals (see HasLocals).
	LocalsKnown bool
	// Value is the repr of the returned value (Return) or of the exception
	// (Exception); empty for Call and Line.
	Value string
	// Depth is the call depth, 0 for the entry function. It is not part of
	// CWM's frame layout, so it is not serialized (see docs/dsl.md).
	Depth int
}

// HasLocals reports whether the state says what its locals are: always at a
// call or line, at a return or exception only when LocalsKnown.
func (s *State) HasLocals() bool {
	return s.Event == Call || s.Event == Line || s.LocalsKnown
}

// ActionKind is a debugger command. Forward ones follow pdb; inverse ones
// walk execution backwards.
type ActionKind uint8

// The actions.
const (
	StepInto ActionKind = iota + 1
	StepOver
	StepReturn
	Breakpoint // run to the next stop at Action.Lines[0]
	Continue   // run to the next stop at any of Action.Lines, or to the end
	InvStepInto
	InvStepOver
	InvStepReturn // back to the call frame of the current function
	InvBreakpoint // back to the previous stop at Action.Lines[0]
	InvContinue   // back to the previous stop at any of Action.Lines, or to the start
)

var actionNames = [...]string{
	StepInto: "step_into", StepOver: "step_over", StepReturn: "step_return",
	Breakpoint: "breakpoint", Continue: "continue",
	InvStepInto: "inv_step_into", InvStepOver: "inv_step_over", InvStepReturn: "inv_step_return",
	InvBreakpoint: "inv_breakpoint", InvContinue: "inv_continue",
}

// String returns the action's name as used on the command line and in the
// DSL token (<|step_into|>, ...).
func (k ActionKind) String() string {
	if k >= StepInto && k <= InvContinue {
		return actionNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// ParseActionKind is the inverse of ActionKind.String.
func ParseActionKind(s string) (ActionKind, error) {
	for k := StepInto; k <= InvContinue; k++ {
		if actionNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("dsl: unknown action %q", s)
}

// Inverse reports whether the action walks execution backwards.
func (k ActionKind) Inverse() bool { return k >= InvStepInto && k <= InvContinue }

// Action is a debugger command with its arguments.
type Action struct {
	Kind ActionKind
	// Lines are the 1-based breakpoint lines: exactly one for Breakpoint and
	// InvBreakpoint, any number (the active breakpoints) for Continue and
	// InvContinue, none otherwise.
	Lines []int
}

// String renders the action as "step_over" or "breakpoint:12" or
// "continue:3,7".
func (a Action) String() string {
	s := a.Kind.String()
	for i, l := range a.Lines {
		if i == 0 {
			s += ":"
		} else {
			s += ","
		}
		s += fmt.Sprint(l)
	}
	return s
}

// Step is one action and the state it leads to. State is nil when the action
// runs past the end of the program (the text writes <|end_of_text|>).
type Step struct {
	Action Action
	State  *State
}

// Trajectory is a debugging session written as one training or prompting
// sequence: the program, the state it starts from, then actions and the
// states they lead to.
type Trajectory struct {
	Program *Program
	Start   State
	Steps   []Step
}
