package ndbg_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/trace"
)

// buggy is the shared mean program (testmodel.MeanProgram).
const buggy = testmodel.MeanProgram

func TestRealSession(t *testing.T) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), buggy, "f([1, None, 4])")
	require.NoError(t, err)
	defer s.Close()

	st, ok := s.State()
	require.True(t, ok)
	require.Equal(t, dsl.Call, st.Event)
	require.Equal(t, 7, st.Line)
	require.Equal(t, "def f(data):", st.Source)
	require.Equal(t, []dsl.Local{{Name: "data", Repr: "[1, None, 4]"}}, st.Locals)

	st, err = s.StepOver(ctx)
	require.NoError(t, err)
	require.Equal(t, dsl.Line, st.Event)
	require.Equal(t, 8, st.Line)

	st, err = s.StepOver(ctx) // over the list comprehension's frame
	require.NoError(t, err)
	require.Equal(t, 9, st.Line)
	require.Equal(t, dsl.Local{Name: "clean", Repr: "[1, 4]"}, st.Locals[1])

	require.NoError(t, s.SetBreakpoint(4))
	st, err = s.Continue(ctx) // into mean, at the loop body
	require.NoError(t, err)
	require.Equal(t, 4, st.Line)
	require.Equal(t, 1, st.Depth)

	fork := s.Fork()
	st, err = s.StepReturn(ctx) // stops at the breakpoint on the way, as pdb's return
	require.NoError(t, err)
	require.Equal(t, 4, st.Line)
	require.Equal(t, []dsl.Local{{Name: "xs", Repr: "[1, 4]"}, {Name: "total", Repr: "1"}, {Name: "x", Repr: "4"}}, st.Locals)
	s.ClearBreakpoint(4)
	st, err = s.StepReturn(ctx)
	require.NoError(t, err)
	require.Equal(t, dsl.Return, st.Event)
	require.Equal(t, "2.5", st.Value)

	st, err = s.StepBackReturn(ctx) // back to mean's call: its inputs
	require.NoError(t, err)
	require.Equal(t, dsl.Call, st.Event)
	require.Equal(t, []dsl.Local{{Name: "xs", Repr: "[1, 4]"}}, st.Locals)

	fst, _ := fork.State()
	require.Equal(t, 4, fst.Line, "the fork did not move")

	// The live program's local changes, as pdb's !xs = [2] changes it.
	require.NoError(t, s.Set(ctx, "xs", "[2]"))
	st, _ = s.State()
	require.Equal(t, []dsl.Local{{Name: "xs", Repr: "[2]"}}, st.Locals)
	st, err = s.StepReturn(ctx)
	require.NoError(t, err)
	require.Equal(t, "2.0", st.Value, "mean([2])")
	st, err = s.StepBackReturn(ctx) // run again: the edit is made again at the same event
	require.NoError(t, err)
	require.Equal(t, []dsl.Local{{Name: "xs", Repr: "[2]"}}, st.Locals)

	// The history so far is a trajectory the DSL encodes and parses back.
	text, err := s.Trajectory().Encode()
	require.NoError(t, err)
	back, err := dsl.Parse(text)
	require.NoError(t, err)
	require.Len(t, back.Steps, len(s.Trajectory().Steps))

	s.ClearBreakpoint(0)
	_, err = s.Continue(ctx)
	require.ErrorIs(t, err, ndbg.ErrFinished)
	require.True(t, s.Finished())
	_, err = s.StepInto(ctx)
	require.ErrorIs(t, err, ndbg.ErrFinished)
	st, err = s.StepBackInto(ctx) // the real backend steps back from the end
	require.NoError(t, err)
	require.Equal(t, dsl.Return, st.Event)
	require.Equal(t, "2.0", st.Value, "f's return, with mean's xs edited to [2]")
}

// TestRealReturnLocals: the real backend reports the frame's locals at a
// return (README's first example), which the DSL text leaves out.
func TestRealReturnLocals(t *testing.T) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), buggy, "f([3, None, 4])")
	require.NoError(t, err)
	defer s.Close()
	st, err := s.StepReturn(ctx)
	require.NoError(t, err)
	require.Equal(t, ndbg.State{Event: dsl.Return, Line: 10, Source: "    return round(m, 2)", Value: "3.5",
		Locals:      []dsl.Local{{Name: "data", Repr: "[3, None, 4]"}, {Name: "clean", Repr: "[3, 4]"}, {Name: "m", Repr: "3.5"}},
		LocalsKnown: true}, st)
	require.Contains(t, string(ndbg.MarshalState(st)), `"locals":{"data":"[3, None, 4]","clean":"[3, 4]","m":"3.5"}`)

	// An exception state carries them too.
	s2, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), buggy, "f([None])")
	require.NoError(t, err)
	defer s2.Close()
	require.NoError(t, s2.SetBreakpoint(5))
	_, err = s2.Continue(ctx)
	require.NoError(t, err)
	st, err = s2.StepInto(ctx)
	require.NoError(t, err)
	require.Equal(t, dsl.Exception, st.Event)
	require.True(t, st.LocalsKnown)
	require.Equal(t, []dsl.Local{{Name: "xs", Repr: "[]"}, {Name: "total", Repr: "0"}}, st.Locals)

	// They stay out of the DSL text.
	text, err := s.Trajectory().Encode()
	require.NoError(t, err)
	back, err := dsl.Parse(text)
	require.NoError(t, err)
	require.Nil(t, back.Steps[0].State.Locals)
	require.False(t, back.Steps[0].State.LocalsKnown)
	require.NotContains(t, string(text), `"clean": `)
}

// TestRealBreakpointsStopSteps: the real backend's step_over and
// step_return stop at the session's breakpoints, as pdb's next and return
// do (issue 17: fact(3), b 4, c, n stops at line 4 in fact(2)), and a step
// backwards stops at a breakpoint it passes.
func TestRealBreakpointsStopSteps(t *testing.T) {
	ctx := context.Background()
	fact := "def fact(n):\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n"
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), fact, "fact(3)")
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.SetBreakpoint(4))
	line4 := func(n string, depth int) ndbg.State {
		return ndbg.State{Event: dsl.Line, Line: 4, Source: "    return n * fact(n - 1)", Locals: []dsl.Local{{Name: "n", Repr: n}}, Depth: depth}
	}
	st, err := s.Continue(ctx)
	require.NoError(t, err)
	require.Equal(t, line4("3", 0), st)
	st, err = s.StepOver(ctx)
	require.NoError(t, err)
	require.Equal(t, line4("2", 1), st)
	st, err = s.StepReturn(ctx) // fact(1) returns at line 3: no breakpoint on the way
	require.NoError(t, err)
	require.Equal(t, dsl.Return, st.Event)
	require.Equal(t, "2", st.Value)
	st, err = s.StepReturn(ctx)
	require.NoError(t, err)
	require.Equal(t, "6", st.Value)
	st, err = s.StepBackOver(ctx) // back past fact(2)'s line 4, the last breakpoint hit
	require.NoError(t, err)
	require.Equal(t, line4("2", 1), st)
}

func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	for _, call := range []string{"f", "f(1", "1+1", "os.system('x')"} { // "" is the whole script
		_, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), buggy, call)
		require.Error(t, err, call)
	}
	_, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), "def f(:\n", "f()")
	require.Error(t, err)
	_, err = ndbg.Start(ctx, ndbg.Real(trace.Limits{}), buggy, "f([])")
	require.NoError(t, err, "a program that raises is a truthful trace")
	// An endless loop starts (nothing caps a live run); a continue stops
	// where it is when its CPU time (Limits.Timeout) runs out, and says so.
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Second}), "def f():\n    while True:\n        pass\n", "f()")
	require.NoError(t, err)
	defer s.Close()
	st, err := s.Continue(ctx)
	require.NoError(t, err)
	require.Contains(t, []int{2, 3}, st.Line)
	require.Equal(t, "cpu", s.Interrupted())
}

// TestSetOnForkLeavesOriginal: an edit of a fork's local is the fork's
// alone: the session it was forked from keeps its state, its history and
// its program's values (a fork shared its states with the original, and
// Set wrote through them, so the original's history showed the edit).
func TestSetOnForkLeavesOriginal(t *testing.T) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), buggy, "f([1, 4])")
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Do(ctx, ndbg.Action{Kind: dsl.Breakpoint, Lines: []int{5}})
	require.NoError(t, err)
	before, _ := s.State()
	require.Contains(t, before.Locals, dsl.Local{Name: "total", Repr: "5"})

	f := s.Fork()
	defer f.Close()
	require.NoError(t, f.Set(ctx, "total", "100"))
	st, _ := f.State()
	require.Contains(t, st.Locals, dsl.Local{Name: "total", Repr: "100"})

	after, _ := s.State()
	require.Equal(t, before, after, "the original's state")
	last := s.Trajectory().Steps
	require.Equal(t, before, *last[len(last)-1].State, "the original's history")
	st, err = s.StepReturn(ctx)
	require.NoError(t, err)
	require.Equal(t, "2.5", st.Value, "the original's program")
	st, err = f.StepReturn(ctx)
	require.NoError(t, err)
	require.Equal(t, "50.0", st.Value, "the fork's program")
}

// TestRealInput: RealWithInput gives the program the lines its source
// gives, as it reads them; a step back runs the program again and feeds
// it the same lines at the same reads without asking the source again,
// and a step forward past them asks it for more; the source's end is
// EOFError, also on a replay; with Real, stdin is empty.
func TestRealInput(t *testing.T) {
	ctx := context.Background()
	const src = `def f():
    a = input("a? ")
    b = input()
    try:
        c = input()
    except EOFError:
        c = "eof"
    return a + b + c
`
	lines := []string{"x1\n", "y2\n"}
	asked := 0
	in := func(context.Context) (string, bool, error) {
		asked++
		if len(lines) == 0 {
			return "", false, nil
		}
		l := lines[0]
		lines = lines[1:]
		return l, true, nil
	}
	s, err := ndbg.Start(ctx, ndbg.RealWithInput(trace.Limits{}, in), src, "f()")
	require.NoError(t, err)
	defer s.Close()
	local := func(st ndbg.State, name string) string {
		for _, l := range st.Locals {
			if l.Name == name {
				return l.Repr
			}
		}
		return ""
	}
	st, err := s.StepInto(ctx) // line 2
	require.NoError(t, err)
	st, err = s.StepOver(ctx) // line 3: a read
	require.NoError(t, err)
	require.Equal(t, 3, st.Line)
	require.Equal(t, "'x1'", local(st, "a"))
	require.Equal(t, 1, asked)
	st, err = s.StepOver(ctx) // line 4
	require.NoError(t, err)
	require.Equal(t, "'y2'", local(st, "b"))
	require.Equal(t, 2, asked)

	st, err = s.StepBackOver(ctx) // run again to line 3: fed x1 again
	require.NoError(t, err)
	require.Equal(t, 3, st.Line)
	require.Equal(t, "'x1'", local(st, "a"))
	st, err = s.StepOver(ctx) // fed y2 again
	require.NoError(t, err)
	require.Equal(t, "'y2'", local(st, "b"))
	require.Equal(t, 2, asked, "a replay asks the source for nothing it gave")

	st, err = s.StepReturn(ctx) // the third read: the source's end
	require.NoError(t, err)
	require.Equal(t, "'x1y2eof'", st.Value)
	require.Equal(t, 3, asked)
	st, err = s.StepBackInto(ctx)
	require.NoError(t, err)
	st, err = s.StepInto(ctx)
	require.NoError(t, err)
	require.Equal(t, "'x1y2eof'", st.Value)
	require.Equal(t, 3, asked, "the end is fed back too")

	plain, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), src, "f()")
	require.NoError(t, err)
	defer plain.Close()
	_, err = plain.StepInto(ctx)
	require.NoError(t, err)
	st, err = plain.StepOver(ctx) // input() at an empty stdin
	require.NoError(t, err)
	require.Equal(t, dsl.Exception, st.Event)
	require.Contains(t, st.Value, "EOFError")
}

// TestStepBackAfterCPUCut: a step back runs the program again to the
// earlier event, which may take more than one action's CPU time (each
// action has its own): it goes on past each resume's limit, as the first
// run did over its actions, instead of calling the program
// irreproducible.
func TestStepBackAfterCPUCut(t *testing.T) {
	ctx := context.Background()
	src := "def f(n):\n    while True:\n        n += 1\n    return n\n"
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Second}), src, "f(1)")
	require.NoError(t, err)
	defer s.Close()
	st, err := s.StepReturn(ctx)
	require.NoError(t, err)
	require.Equal(t, "cpu", s.Interrupted())
	st2, err := s.StepReturn(ctx) // a second second: the step back must cover both
	require.NoError(t, err)
	require.Equal(t, "cpu", s.Interrupted())
	require.NotEqual(t, st, st2)
	back, err := s.Do(ctx, ndbg.Action{Kind: dsl.InvStepInto})
	require.NoError(t, err)
	require.Equal(t, dsl.Line, back.Event)
}
