package ndbg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg/dsl"
)

// MarshalState writes a state as a JSON object: event, line, source (as
// st.Source has it: Session.UserLine gives the user's line to show),
// locals (an object from name to repr, in Python's order), value (return
// and exception) and depth (-1 where a neural session cannot know it).
// "locals" is left out where they are unknown: at a return or exception
// state without LocalsKnown (a prediction: the model does not predict
// them), never written as an empty object that would claim the frame had
// none.
func MarshalState(st State) []byte {
	var b bytes.Buffer
	b.WriteString(`{"event":`)
	writeJSON(&b, st.Event.String())
	fmt.Fprintf(&b, `,"line":%d,"source":`, st.Line)
	writeJSON(&b, st.Source)
	if st.HasLocals() {
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
	}
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
// keeping the order of the locals. Locals given at a return or exception
// state make it LocalsKnown; without them its locals are unknown.
func UnmarshalState(data []byte) (State, error) {
	var raw struct {
		Event  string          `json:"event"`
		Line   int             `json:"line"`
		Source string          `json:"source"`
		Locals json.RawMessage `json:"locals"`
		Value  string          `json:"value"`
		Depth  int             `json:"depth"`
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return State{}, errors.New(`ndbg: state JSON: want an object such as {"event": "line", "line": 3, "locals": {"x": "1"}}`)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return State{}, fmt.Errorf("ndbg: state JSON: %w", err)
	}
	if raw.Event == "" {
		return State{}, errors.New("ndbg: state JSON: no event (call, line, return or exception)")
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
		st.LocalsKnown = ev == dsl.Return || ev == dsl.Exception
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

// Components is a set of the parts of a state that Compare grades.
type Components uint8

// The components of a state.
const (
	CompareEvent Components = 1 << iota
	CompareLine
	CompareLocals
	CompareValue
	CompareDepth
)

// componentName names component 1<<i.
func componentName(i int) string {
	return [...]string{"event", "line", "locals", "value", "depth"}[i]
}

// Has reports whether c holds every component of x.
func (c Components) Has(x Components) bool { return c&x == x }

// Names lists the components in c: "event", "line", "locals", "value",
// "depth", in that order.
func (c Components) Names() []string {
	var out []string
	for i := range 5 {
		if c.Has(1 << i) {
			out = append(out, componentName(i))
		}
	}
	return out
}

// Match compares a predicted state with the real one, component by
// component, as the evaluation counts them. Compared says which components
// both sides state and were graded; a component not compared is false
// here, is not a match, and does not count in All.
type Match struct {
	Event, Line, Locals, Value, Depth, All bool
	Compared                               Components
}

// MarshalJSON writes the match as {"all":..., then each compared
// component, then "compared": [names]}: a component not compared is left
// out rather than shown as a match or a mismatch.
func (m Match) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"all":%t`, m.All)
	for i, ok := range []bool{m.Event, m.Line, m.Locals, m.Value, m.Depth} {
		if m.Compared.Has(1 << i) {
			fmt.Fprintf(&b, `,%q:%t`, componentName(i), ok)
		}
	}
	b.WriteString(`,"compared":[`)
	for i, n := range m.Compared.Names() {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, n)
	}
	b.WriteString("]}")
	return b.Bytes(), nil
}

// Compare grades a prediction against the truth, comparing only what both
// sides state. A nil state is the end of the program; two ends match, and
// an end against a state matches in nothing (event, line, locals and value
// compared). Event, line and value (empty at call and line states) are
// always compared. Locals are compared when both states have them
// (State.HasLocals: not at a predicted return or exception, whose locals a
// model does not predict), as a set of (name, repr): CPython 3.11 lists
// f_locals in an order that depends on when they were read, so the order
// is not part of the state. Depth is compared when both know it (>= 0): a
// neural session that cannot know it says -1, which is not graded, never a
// match. Memory addresses in reprs (" at 0x7f...") differ from run to run
// and are not compared.
func Compare(pred, real *State) Match {
	if pred == nil || real == nil {
		m := pred == nil && real == nil
		return Match{Event: m, Line: m, Locals: m, Value: m, All: m,
			Compared: CompareEvent | CompareLine | CompareLocals | CompareValue}
	}
	m := Match{Event: pred.Event == real.Event, Line: pred.Line == real.Line,
		Value: maskAddress(pred.Value) == maskAddress(real.Value), Compared: CompareEvent | CompareLine | CompareValue}
	if pred.HasLocals() && real.HasLocals() {
		m.Locals, m.Compared = sameLocals(pred.Locals, real.Locals), m.Compared|CompareLocals
	}
	if pred.Depth >= 0 && real.Depth >= 0 {
		m.Depth, m.Compared = pred.Depth == real.Depth, m.Compared|CompareDepth
	}
	m.All = m.Event && m.Line && m.Value && (m.Locals || !m.Compared.Has(CompareLocals)) &&
		(m.Depth || !m.Compared.Has(CompareDepth))
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

// MarshalPrediction writes how a state was predicted, as a JSON object:
// "confidence" (state, event, line, locals as an object from name to
// confidence where the state shows locals, value at return and exception
// states; each in [0, 1], rounded to 4 digits), "uncertain" (true when a
// value was cut, listed in "cut"), and, when a Verify backend replaced a
// low-confidence prediction by the real state, "verified": true and
// "model", the state the model had predicted (MarshalState's form, or
// {"event":"end"}). st is the state shown (nil: the end of the program);
// the confidence is the model's, of "model" when verified.
func MarshalPrediction(p Prediction, st *State) []byte {
	if p.Verified {
		st = p.Model
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"confidence":{"state":%s,"event":%s`, conf4(p.State), conf4(p.Event))
	if st != nil {
		fmt.Fprintf(&b, `,"line":%s`, conf4(p.Line))
		if len(p.Locals) > 0 && len(p.Locals) == len(st.Locals) {
			b.WriteString(`,"locals":{`)
			for i, l := range st.Locals {
				if i > 0 {
					b.WriteByte(',')
				}
				writeJSON(&b, l.Name)
				b.WriteString(":" + conf4(p.Locals[i]))
			}
			b.WriteByte('}')
		}
		if st.Event == dsl.Return || st.Event == dsl.Exception {
			fmt.Fprintf(&b, `,"value":%s`, conf4(p.Value))
		}
	}
	fmt.Fprintf(&b, `},"uncertain":%t`, p.Uncertain())
	if p.Uncertain() {
		b.WriteString(`,"cut":[`)
		for i, c := range p.Cut {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(&b, c)
		}
		b.WriteByte(']')
	}
	if p.Verified {
		b.WriteString(`,"verified":true,"model":`)
		if p.Model == nil {
			b.WriteString(`{"event":"end"}`)
		} else {
			b.Write(MarshalState(*p.Model))
		}
	}
	if p.Unverified != "" {
		b.WriteString(`,"unverified":`)
		writeJSON(&b, p.Unverified)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// MarshalOutcome writes the state an action reached as one JSON object:
// MarshalState's, or {"event":"end"} where st is nil (the program ran past
// its end), with MarshalPrediction's fields after them where the state was
// predicted (p not nil). ndbg-infer and ndbg serve write states this way.
func MarshalOutcome(st *State, p *Prediction) []byte {
	s := []byte(`{"event":"end"}`)
	if st != nil {
		s = MarshalState(*st)
	}
	if p == nil {
		return s
	}
	pj := MarshalPrediction(*p, st)
	return append(append(s[:len(s)-1], ','), pj[1:]...)
}

// conf4 writes a confidence with 4 decimals, without trailing zeros.
func conf4(x float64) string {
	s := strings.TrimRight(strconv.FormatFloat(x, 'f', 4, 64), "0")
	return strings.TrimSuffix(s, ".")
}
