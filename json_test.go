package ndbg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/trace"
)

func TestCompare(t *testing.T) {
	real := &ndbg.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "it", Repr: "<list_iterator object at 0x7f01>"}, {Name: "x", Repr: "1"}}}
	reordered := &ndbg.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "1"}, {Name: "it", Repr: "<list_iterator object at 0x...>"}}}
	require.True(t, ndbg.Compare(reordered, real).All, "order and addresses are not part of the state")

	wrong := &ndbg.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "2"}, {Name: "it", Repr: "<list_iterator object at 0x...>"}}}
	m := ndbg.Compare(wrong, real)
	require.False(t, m.All)
	require.False(t, m.Locals)
	require.True(t, m.Event && m.Line)

	missing := &ndbg.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "1"}}}
	require.False(t, ndbg.Compare(missing, real).Locals)

	ret := &ndbg.State{Event: dsl.Return, Line: 5, Value: "3"}
	require.False(t, ndbg.Compare(&ndbg.State{Event: dsl.Return, Line: 5, Value: "4"}, ret).Value)
	require.True(t, ndbg.Compare(nil, nil).All, "two ends match")
	require.False(t, ndbg.Compare(nil, ret).All)
}

// TestCompareDepth: a known depth is graded; an unknown one (-1, a neural
// session after a jump) is not compared, never reported as a match.
func TestCompareDepth(t *testing.T) {
	real := &ndbg.State{Event: dsl.Line, Line: 9, Locals: []dsl.Local{{Name: "x", Repr: "1"}}, Depth: 1}
	deeper := *real
	deeper.Depth = 2
	m := ndbg.Compare(&deeper, real)
	require.False(t, m.All, "depth 2 against 1")
	require.False(t, m.Depth)
	require.True(t, m.Compared.Has(ndbg.CompareDepth))

	unknown := *real
	unknown.Depth = -1
	m = ndbg.Compare(&unknown, real)
	require.False(t, m.Depth, "an unknown depth is no match")
	require.False(t, m.Compared.Has(ndbg.CompareDepth))
	require.True(t, m.All, "everything compared matches")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	require.JSONEq(t, `{"all":true,"event":true,"line":true,"locals":true,"value":true,"compared":["event","line","locals","value"]}`, string(out))

	same := ndbg.Compare(real, real)
	require.True(t, same.All && same.Depth)
	require.Equal(t, []string{"event", "line", "locals", "value", "depth"}, same.Compared.Names())
}

// TestReturnLocalsUnknown: a predicted return state does not state its
// locals (the DSL leaves them out): its JSON has no "locals", and Compare
// does not grade them against the real frame's.
func TestReturnLocalsUnknown(t *testing.T) {
	pred := ndbg.State{Event: dsl.Return, Line: 11, Source: "    return round(m, 2)", Value: "3.5"}
	real := pred
	real.Locals, real.LocalsKnown = []dsl.Local{{Name: "m", Repr: "3.5"}}, true
	require.JSONEq(t, `{"event":"return","line":11,"source":"    return round(m, 2)","value":"3.5","depth":0}`, string(ndbg.MarshalState(pred)))
	require.JSONEq(t, `{"event":"return","line":11,"source":"    return round(m, 2)","locals":{"m":"3.5"},"value":"3.5","depth":0}`, string(ndbg.MarshalState(real)))
	m := ndbg.Compare(&pred, &real)
	require.False(t, m.Locals, "unknown locals are no match")
	require.False(t, m.Compared.Has(ndbg.CompareLocals))
	require.True(t, m.All)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	require.NotContains(t, string(out), `"locals"`)

	// The JSON reads back: locals given at a return make them known.
	for _, st := range []ndbg.State{pred, real} {
		back, err := ndbg.UnmarshalState(ndbg.MarshalState(st))
		require.NoError(t, err)
		require.Equal(t, st, back)
	}
	// Known locals against known locals are graded.
	other := real
	other.Locals = []dsl.Local{{Name: "m", Repr: "2"}}
	m = ndbg.Compare(&other, &real)
	require.True(t, m.Compared.Has(ndbg.CompareLocals))
	require.False(t, m.All)
}

// TestMarshalOutcome: a state, or the end, with how it was predicted in
// the same object, each part as MarshalState and MarshalPrediction write
// it; a state not predicted is MarshalState's alone.
func TestMarshalOutcome(t *testing.T) {
	st := ndbg.State{Event: dsl.Line, Line: 3, Source: "x = 1", Locals: []dsl.Local{{Name: "xs", Repr: "[1, 2]"}}, Depth: -1}
	require.JSONEq(t, string(ndbg.MarshalState(st)), string(ndbg.MarshalOutcome(&st, nil)))
	require.JSONEq(t, `{"event":"end"}`, string(ndbg.MarshalOutcome(nil, nil)))

	p := ndbg.Prediction{Confidence: ndbg.Confidence{State: 0.5, Event: 1, Line: 0.75, Locals: []float64{0}, Value: 1, Cut: []string{"locals.xs"}}}
	require.JSONEq(t, `{"event":"line","line":3,"source":"x = 1","locals":{"xs":"[1, 2]"},"depth":-1,
		"confidence":{"state":0.5,"event":1,"line":0.75,"locals":{"xs":0}},"uncertain":true,"cut":["locals.xs"]}`,
		string(ndbg.MarshalOutcome(&st, &p)))
	end := ndbg.Prediction{Confidence: ndbg.Confidence{State: 0.25, Event: 0.25, Line: 1, Value: 1}}
	require.JSONEq(t, `{"event":"end","confidence":{"state":0.25,"event":0.25},"uncertain":false}`,
		string(ndbg.MarshalOutcome(nil, &end)))
}

// TestGivenStateRefused: a state given from outside (ndbg-infer --state,
// ndbg.StartAt) that no frame could have is an error that says what is
// wrong: JSON that is not an object, no event, a local that is not a
// Python name or comes twice, a value that is not a whole repr.
func TestGivenStateRefused(t *testing.T) {
	for in, want := range map[string]string{
		`[]`:                            "want an object such as",
		`null`:                          "want an object such as",
		`{}`:                            "no event",
		`{"event":"lines"}`:             "unknown event",
		`{"event":"line","locals":[1]}`: "locals must be an object",
	} {
		_, err := ndbg.UnmarshalState([]byte(in))
		require.ErrorContains(t, err, want, in)
	}
	src := "def f(x):\n    y = x + 1\n    return y\n"
	for _, c := range []struct {
		locals []dsl.Local
		want   string
	}{
		{[]dsl.Local{{Name: "x y", Repr: "1"}}, `"x y": not a Python name`},
		{[]dsl.Local{{Name: "1bad", Repr: "1"}}, `"1bad": not a Python name`},
		{[]dsl.Local{{Name: "x", Repr: "1"}, {Name: "x", Repr: "2"}}, `"x" comes twice`},
		{[]dsl.Local{{Name: "x", Repr: "[1,"}}, `is not complete`},
		{[]dsl.Local{{Name: "x", Repr: ""}}, `the value must be a Python repr`},
		{[]dsl.Local{{Name: ".", Repr: "1"}}, `".": not a Python name`},
		{[]dsl.Local{{Name: ".x", Repr: "1"}}, `".x": not a Python name`},
	} {
		_, err := ndbg.StartAt(context.Background(), ndbg.Real(trace.Limits{}), src, "f", ndbg.State{Event: dsl.Line, Line: 2, Locals: c.locals})
		require.ErrorContains(t, err, c.want, "%v", c.locals)
	}
	// A comprehension's frame has CPython's implicit ".0", its iterator:
	// a state the real debugger shows is one it can start from.
	comp := "def f(xs):\n    return [x * 2 for x in xs]\n"
	_, err := ndbg.StartAt(context.Background(), ndbg.Real(trace.Limits{}), comp, "f",
		ndbg.State{Event: dsl.Line, Line: 2, Locals: []dsl.Local{{Name: ".0", Repr: "<list_iterator object at 0x...>"}}})
	require.NotContains(t, fmt.Sprint(err), "Python name")
}

// FuzzUnmarshalState: any text is a state or an error, never a panic, and
// a state it reads writes back to JSON that reads as the same state.
func FuzzUnmarshalState(f *testing.F) {
	for _, s := range []string{`{"event":"line","line":3,"locals":{"x":"1"}}`, `{"event":"return","value":"None","locals":{}}`, `[]`, `null`, `{"locals":{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ndbg.UnmarshalState(data)
		if err != nil {
			return
		}
		back, err := ndbg.UnmarshalState(ndbg.MarshalState(st))
		require.NoError(t, err)
		require.Equal(t, st.Event, back.Event)
		require.Equal(t, st.Line, back.Line)
		require.Equal(t, len(st.Locals), len(back.Locals))
	})
}
