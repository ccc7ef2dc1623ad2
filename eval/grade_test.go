package eval

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
)

// TestCompareGradesEachComponent pins how one prediction is graded: locals
// as a set with memory addresses ignored, locals counted only at call and
// line states, the value only at return and exception states, a failed
// prediction right in nothing.
func TestCompareGradesEachComponent(t *testing.T) {
	want := &dsl.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "1"}, {Name: "f", Repr: "<function f at 0x7f01>"}}}
	got := &dsl.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "f", Repr: "<function f at 0x5501>"}, {Name: "x", Repr: "1"}}}
	o := compare(want, got, false)
	require.True(t, o.state && o.event && o.line && o.hasLocals && o.locals)
	require.False(t, o.hasValue || o.value || o.err)

	got = &dsl.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "2"}}}
	o = compare(want, got, false)
	require.True(t, o.event && o.line)
	require.False(t, o.state || o.locals)

	ret := &dsl.State{Event: dsl.Return, Line: 4, Value: "3"}
	o = compare(ret, &dsl.State{Event: dsl.Return, Line: 4, Value: "4"}, false)
	require.True(t, o.event && o.line && o.hasValue)
	require.False(t, o.state || o.value || o.hasLocals)

	o = compare(ret, nil, true)
	require.True(t, o.err && o.hasValue)
	require.False(t, o.state || o.event || o.line || o.value)

	o = compare(nil, nil, false) // both at the end of the program
	require.True(t, o.state && o.event && o.line)
}

// TestTallyCountsAndMerges pins the tally's denominators: N for state,
// event and line, LocalN and ValueN for the components a state has.
func TestTallyCountsAndMerges(t *testing.T) {
	line := &dsl.State{Event: dsl.Line, Line: 1, Locals: []dsl.Local{{Name: "a", Repr: "1"}}}
	ret := &dsl.State{Event: dsl.Return, Line: 2, Value: "None"}
	var a Tally
	a.add(compare(line, line, false))
	a.add(compare(ret, &dsl.State{Event: dsl.Return, Line: 2, Value: "1"}, false))
	a.add(compare(ret, nil, true))
	require.Equal(t, Tally{N: 3, State: 1, Event: 2, Line: 2, LocalN: 1, Locals: 1, ValueN: 2, Value: 0, Errors: 1}, a)
	var b Tally
	b.merge(&a)
	b.merge(&a)
	require.Equal(t, Tally{N: 6, State: 2, Event: 4, Line: 4, LocalN: 2, Locals: 2, ValueN: 4, Value: 0, Errors: 2}, b)
	require.Equal(t, 50.0, pct(1, 2))
	require.True(t, math.IsNaN(pct(1, 0)))
}

// TestDescribe pins how a miss's states read in the report.
func TestDescribe(t *testing.T) {
	require.Equal(t, "end", describe(nil))
	require.Equal(t, "line 5 {x: 1, y: 'a'}", describe(&dsl.State{Event: dsl.Line, Line: 5, Locals: []dsl.Local{{Name: "x", Repr: "1"}, {Name: "y", Repr: "'a'"}}}))
	require.Equal(t, "return 7 3", describe(&dsl.State{Event: dsl.Return, Line: 7, Value: "3"}))
}
