package ndbg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/ndbg/ndbg/dsl"
)

// MarshalState writes a state as a JSON object: event, line, source (as
// st.Source has it: Session.UserLine gives the user's line to show),
// locals (an object from name to repr, in Python's order), value (return
// and exception) and depth (-1 where a neural session cannot know it).
func MarshalState(st State) []byte {
	var b bytes.Buffer
	b.WriteString(`{"event":`)
	writeJSON(&b, st.Event.String())
	fmt.Fprintf(&b, `,"line":%d,"source":`, st.Line)
	writeJSON(&b, st.Source)
	b.WriteString(`,"locals":{`)
	for i, l := range st.Locals {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, l.Name)
		b.WriteByte(':')
		writeJSON(&b, l.Repr)
	}
	b.WriteByte('}')
	if st.Event == dsl.Return || st.Event == dsl.Exception {
		b.WriteString(`,"value":`)
		writeJSON(&b, st.Value)
	}
	fmt.Fprintf(&b, `,"depth":%d}`, st.Depth)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string always marshals
	b.Write(q)
}

// UnmarshalState reads MarshalState's form (source and depth optional),
// keeping the order of the locals.
func UnmarshalState(data []byte) (State, error) {
	var raw struct {
		Event  string          `json:"event"`
		Line   int             `json:"line"`
		Source string          `json:"source"`
		Locals json.RawMessage `json:"locals"`
		Value  string          `json:"value"`
		Depth  int             `json:"depth"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return State{}, fmt.Errorf("ndbg: state JSON: %w", err)
	}
	ev, err := dsl.ParseEvent(raw.Event)
	if err != nil {
		return State{}, fmt.Errorf("ndbg: state JSON: %w", err)
	}
	st := State{Event: ev, Line: raw.Line, Source: raw.Source, Value: raw.Value, Depth: raw.Depth}
	if len(raw.Locals) > 0 && string(raw.Locals) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw.Locals))
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return State{}, fmt.Errorf("ndbg: state JSON: locals must be an object of name to repr")
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return State{}, fmt.Errorf("ndbg: state JSON locals: %w", err)
			}
			var v string
			if err := dec.Decode(&v); err != nil {
				return State{}, fmt.Errorf("ndbg: state JSON local %v: the repr must be a string: %w", k, err)
			}
			st.Locals = append(st.Locals, dsl.Local{Name: k.(string), Repr: v})
		}
	}
	return st, nil
}

// ParseAction reads an action as the command line writes it: "step_over",
// "breakpoint:12", "continue:3,7", "inv_breakpoint:5".
func ParseAction(s string) (Action, error) {
	name, lines, hasLines := bytes.Cut([]byte(s), []byte(":"))
	k, err := dsl.ParseActionKind(string(name))
	if err != nil {
		return Action{}, fmt.Errorf("ndbg: %w (want step_into, step_over, step_return, continue[:L,...], breakpoint:L or inv_...)", err)
	}
	a := Action{Kind: k}
	if hasLines {
		for _, f := range bytes.Split(lines, []byte(",")) {
			var l int
			if _, err := fmt.Sscanf(string(f), "%d", &l); err != nil || l < 1 {
				return Action{}, fmt.Errorf("ndbg: action %q: bad line %q", s, f)
			}
			a.Lines = append(a.Lines, l)
		}
	}
	return a, nil
}

// Match compares a predicted state with the real one, component by
// component, as the evaluation counts them.
type Match struct {
	Event, Line, Locals, Value, All bool
}

// Compare grades a prediction against the truth. A nil state is the end of
// the program; two ends match. Locals are compared as a set of (name, repr):
// CPython 3.11 lists f_locals in an order that depends on when they were
// read, so the order is not part of the state. Memory addresses in reprs
// (" at 0x7f...") differ from run to run and are not compared.
func Compare(pred, real *State) Match {
	if pred == nil || real == nil {
		m := pred == nil && real == nil
		return Match{m, m, m, m, m}
	}
	m := Match{Event: pred.Event == real.Event, Line: pred.Line == real.Line,
		Locals: sameLocals(pred.Locals, real.Locals), Value: maskAddress(pred.Value) == maskAddress(real.Value)}
	m.All = m.Event && m.Line && m.Locals && m.Value
	return m
}

func sameLocals(a, b []dsl.Local) bool {
	if len(a) != len(b) {
		return false
	}
	reprs := make(map[string]string, len(a))
	for _, l := range a {
		reprs[l.Name] = maskAddress(l.Repr)
	}
	for _, l := range b {
		r, ok := reprs[l.Name]
		if !ok || r != maskAddress(l.Repr) {
			return false
		}
		delete(reprs, l.Name)
	}
	return len(reprs) == 0
}

// address matches a memory address in a repr.
var address = regexp.MustCompile(` at 0x[0-9a-fA-F.]+`)

func maskAddress(s string) string {
	if !strings.Contains(s, " at 0x") {
		return s
	}
	return address.ReplaceAllString(s, " at 0x...")
}
