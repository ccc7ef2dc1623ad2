// Grading one prediction against the truth and tallying the grades.

package eval

import (
	"fmt"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
)

// Tally counts exact matches over a set of predictions. A component counts
// only where the real next state has it: locals at call and line states,
// the value at return and exception states; event and line always (the
// end of the program counts as its own event "end" with no line).
type Tally struct {
	N      int `json:"n"`
	State  int `json:"state"` // whole state right
	Event  int `json:"event"`
	Line   int `json:"line"`
	LocalN int `json:"locals_n"`
	Locals int `json:"locals"`
	ValueN int `json:"value_n"`
	Value  int `json:"value"`
	Errors int `json:"errors"` // the backend failed (counted as wrong)
}

func (t *Tally) add(o outcome) {
	t.N++
	t.State += b2i(o.state)
	t.Event += b2i(o.event)
	t.Line += b2i(o.line)
	if o.hasLocals {
		t.LocalN++
		t.Locals += b2i(o.locals)
	}
	if o.hasValue {
		t.ValueN++
		t.Value += b2i(o.value)
	}
	t.Errors += b2i(o.err)
}

func (t *Tally) merge(u *Tally) {
	t.N += u.N
	t.State += u.State
	t.Event += u.Event
	t.Line += u.Line
	t.LocalN += u.LocalN
	t.Locals += u.Locals
	t.ValueN += u.ValueN
	t.Value += u.Value
	t.Errors += u.Errors
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pct is 100*a/b, or NaN when b is 0.
func pct(a, b int) float64 {
	if b == 0 {
		return nan()
	}
	return 100 * float64(a) / float64(b)
}

// outcome is one prediction compared with the truth.
type outcome struct {
	action                      dsl.Action
	horizon                     int
	from                        dsl.State
	want, got                   *dsl.State
	state, event, line          bool
	hasLocals, locals, hasValue bool
	value, err                  bool
	why                         string // the backend's error, where err
	conf                        float64
	hasConf                     bool // the prediction carries a confidence (conf)
}

// compare grades a prediction with ndbg.Compare (locals as a set, memory
// addresses ignored); a failed prediction matches nothing.
func compare(want, got *dsl.State, failed bool) outcome {
	o := outcome{want: want, got: got, err: failed}
	if want != nil {
		o.hasLocals = want.Event == dsl.Call || want.Event == dsl.Line
		o.hasValue = !o.hasLocals
	}
	if failed {
		return o
	}
	m := ndbg.Compare(got, want)
	o.event, o.line, o.state = m.Event, m.Line, m.All
	if want != nil && got != nil {
		o.locals = o.hasLocals && m.Locals
		o.value = o.hasValue && m.Value
	}
	return o
}

// describe writes a state for a reader: "line 5 {x: 1}" or "return 3".
func describe(s *dsl.State) string {
	if s == nil {
		return "end"
	}
	switch s.Event {
	case dsl.Call, dsl.Line:
		txt := fmt.Sprintf("%s %d {", s.Event, s.Line)
		for i, l := range s.Locals {
			if i > 0 {
				txt += ", "
			}
			txt += l.Name + ": " + l.Repr
		}
		return txt + "}"
	default:
		return fmt.Sprintf("%s %d %s", s.Event, s.Line, s.Value)
	}
}
