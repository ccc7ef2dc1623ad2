package ndbg_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// TestRealFramesAndDoIf: the real backend knows every frame's line and
// locals; DoIf passes over breakpoint stops its keep refuses, within one
// action, and stops at the action's own stop when it refuses them all;
// Escaped says which exception left the entry.
func TestRealFramesAndDoIf(t *testing.T) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), buggy, "f([1, None, 4])")
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.SetBreakpoint(4))

	var seen []string
	keep := func(st ndbg.State) bool {
		seen = append(seen, st.Locals[2].Repr)
		return st.Locals[2].Repr == "4" // x == 4
	}
	st, err := s.DoIf(ctx, ndbg.Action{Kind: dsl.Continue, Lines: s.Breakpoints()}, keep)
	require.NoError(t, err)
	require.Equal(t, 4, st.Line)
	require.Equal(t, []string{"1", "4"}, seen, "keep saw each hit in order")
	require.Len(t, s.Trajectory().Steps, 1, "one action")

	fs := s.Frames()
	require.Len(t, fs, 2)
	require.Equal(t, ndbg.Frame{Func: "f", Def: 7, Line: 9, LocalsKnown: true, ID: fs[0].ID,
		Locals: []dsl.Local{{Name: "data", Repr: "[1, None, 4]"}, {Name: "clean", Repr: "[1, 4]"}}}, fs[0])
	require.Equal(t, "mean", fs[1].Func)
	require.Equal(t, 4, fs[1].Line)
	require.NotEqual(t, fs[0].ID, fs[1].ID)

	st, err = s.DoIf(ctx, ndbg.Action{Kind: dsl.StepReturn}, func(ndbg.State) bool { return false })
	require.NoError(t, err)
	require.Equal(t, dsl.Return, st.Event, "no breakpoint taken: the action's own stop")
	require.Nil(t, s.Escaped())

	s, err = ndbg.Start(ctx, ndbg.Real(trace.Limits{}), buggy, "f([None])")
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Continue(ctx)
	require.ErrorIs(t, err, ndbg.ErrFinished)
	x := s.Escaped()
	require.NotNil(t, x)
	require.Equal(t, ndbg.Exception{Type: "ZeroDivisionError", Message: "division by zero", Line: 5}, ndbg.Exception{Type: x.Type, Message: x.Message, Line: x.Line})
	require.Len(t, x.Traceback, 2)
	require.Equal(t, []string{"f", "mean"}, []string{x.Traceback[0].Func, x.Traceback[1].Func})
	require.Equal(t, []int{9, 5}, []int{x.Traceback[0].Line, x.Traceback[1].Line}, "as Python's traceback")
	require.Nil(t, s.Frames())
}

// TestNeuralDoIfTakesContinueAgain: a prediction's continue whose
// breakpoint stop keep refuses is predicted again from that stop, each
// stop a step of the history.
func TestNeuralDoIfTakesContinueAgain(t *testing.T) {
	ctx := context.Background()
	m, err := ndbg.Open(ctx, ndbg.Options{Threads: 1})
	require.NoError(t, err)
	defer m.Close()
	s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), buggy, "f([1, None, 4])")
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.SetBreakpoint(4))
	calls := 0
	st, err := s.DoIf(ctx, ndbg.Action{Kind: dsl.Continue, Lines: s.Breakpoints()}, func(st ndbg.State) bool {
		require.Equal(t, 4, st.Line)
		calls++
		return calls > 1
	})
	steps := len(s.Trajectory().Steps)
	t.Logf("%d stops refused or kept, %d steps, %v", calls, steps, err)
	if errors.Is(err, ndbg.ErrFinished) {
		require.Equal(t, calls+1, steps, "every refused stop, then the end")
		return
	}
	require.NoError(t, err)
	require.Equal(t, 4, st.Line)
	require.Equal(t, 2, calls)
	require.Equal(t, 2, steps, "the refused stop, then the kept one")
}

// TestFunctionLineMethods: b Class.method finds the method in a top-level
// class's body, past a docstring; text that only looks like a class (a
// string's line "class (", a nested class) is not one, and never a panic.
func TestFunctionLineMethods(t *testing.T) {
	src := "\"\"\"\nclass (\nclass :\n\"\"\"\n\nclass A(object):\n    \"\"\"doc\"\"\"\n\n    def get(self):\n        return 1\n\n    class B:\n        def get(self):\n            return 2\n\ndef f():\n    return A().get()\n"
	s, err := ndbg.Start(context.Background(), ndbg.Real(trace.Limits{}), src, "f()")
	require.NoError(t, err)
	defer s.Close()
	def, body, ok := s.FunctionLine("A.get")
	require.True(t, ok)
	require.Equal(t, []int{9, 10}, []int{def, body})
	for _, name := range []string{"B.get", "A.nope", "(.get", ":.get", "f.x"} {
		_, _, ok := s.FunctionLine(name)
		require.False(t, ok, name)
	}
}
