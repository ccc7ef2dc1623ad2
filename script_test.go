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

const script = `import sys

def half(x):
    print("half of", x)
    return x / 2

total = 0
if __name__ == "__main__":
    for v in [4, 0]:
        total += half(v)
    print("total", total, file=sys.stderr)
    half(1 / total)
`

// TestRealScript debugs a whole script as python3 -m pdb does: it starts at
// the module's first line, the __main__ block runs, module-level code is
// stepped like a function's, the output so far is known at every state,
// and the exception that escapes the module has a traceback whose frames
// carry their locals (the post-mortem frames).
func TestRealScript(t *testing.T) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), script, "")
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "", s.Call())

	st, ok := s.State()
	require.True(t, ok)
	require.Equal(t, dsl.Line, st.Event)
	require.Equal(t, 1, st.Line)
	require.Empty(t, st.Locals)
	_, err = s.StepBackInto(ctx)
	require.ErrorIs(t, err, ndbg.ErrAtStart)

	require.NoError(t, s.SetBreakpoint(11))
	st, err = s.Continue(ctx)
	require.NoError(t, err)
	require.Equal(t, 11, st.Line)
	require.Equal(t, 0, st.Depth)
	require.Equal(t, []dsl.Local{{Name: "sys", Repr: "<module 'sys' (built-in)>"}, {Name: "half", Repr: "<function half at 0x...>"},
		{Name: "total", Repr: "2.0"}, {Name: "v", Repr: "0"}}, st.Locals)
	out, ok := s.Output()
	require.True(t, ok)
	require.Equal(t, ndbg.Output{Stdout: []byte("half of 4\nhalf of 0\n"), Stderr: []byte{}}, out)

	var cur ndbg.OutputCursor
	o, e := cur.Next(s)
	require.Equal(t, "half of 4\nhalf of 0\n", string(o))
	require.Empty(t, e)
	st, err = s.StepOver(ctx)
	require.NoError(t, err)
	require.Equal(t, 12, st.Line)
	out, _ = s.Output()
	require.Equal(t, "total 2.0\n", string(out.Stderr))
	o, e = cur.Next(s)
	require.Equal(t, "", string(o), "only what is new")
	require.Equal(t, "total 2.0\n", string(e))
	_, err = s.StepBackInto(ctx)
	require.NoError(t, err)
	o, e = cur.Next(s)
	require.Empty(t, o)
	require.Empty(t, e, "nothing after a step back")
	_, err = s.StepOver(ctx)
	require.NoError(t, err)
	_, e = cur.Next(s)
	require.Equal(t, "total 2.0\n", string(e), "new again going forward")

	st, err = s.StepInto(ctx)
	require.NoError(t, err)
	require.Equal(t, dsl.Call, st.Event)
	require.Equal(t, 3, st.Line)
	require.Equal(t, []int{1, 3}, s.Stack(), "the module frame, then half's")

	_, err = s.Continue(ctx)
	require.ErrorIs(t, err, ndbg.ErrFinished, "1 / total is fine; half(0.5) returns; the script ends")
	require.Nil(t, s.Escaped())
	out, _ = s.Output()
	require.Equal(t, "half of 4\nhalf of 0\nhalf of 0.5\n", string(out.Stdout))
}

// TestRealScriptRaises: the exception that escapes a script, with the
// frames it passed through and their locals where it was raised.
func TestRealScriptRaises(t *testing.T) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), "def inv(x):\n    y = x * 2\n    return 1 / (y - 4)\n\nr = inv(2)\n", "")
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Continue(ctx)
	require.ErrorIs(t, err, ndbg.ErrFinished)
	x := s.Escaped()
	require.NotNil(t, x)
	require.Equal(t, "ZeroDivisionError", x.Type)
	require.Equal(t, 3, x.Line)
	require.Len(t, x.Traceback, 2)
	require.Equal(t, "<module>", x.Traceback[0].Func)
	require.Equal(t, 5, x.Traceback[0].Line)
	require.Equal(t, "inv", x.Traceback[1].Func)
	require.Equal(t, 3, x.Traceback[1].Line)
	require.True(t, x.Traceback[1].LocalsKnown)
	require.Equal(t, []dsl.Local{{Name: "x", Repr: "2"}, {Name: "y", Repr: "4"}}, x.Traceback[1].Locals)
}

// TestScriptNeedsReal: a model cannot debug a whole script (its trace
// format has no module-level frames): a clear error, not a wrong state.
func TestScriptNeedsReal(t *testing.T) {
	for _, b := range []ndbg.Backend{ndbg.Neural(nil, sample.Params{}), ndbg.CWM(nil, sample.Params{})} {
		_, err := ndbg.Start(context.Background(), b, script, "")
		require.ErrorIs(t, err, ndbg.ErrScript)
		require.ErrorIs(t, err, ndbg.ErrUnsupported)
		require.Contains(t, err.Error(), "needs the real backend")
	}
	_, err := ndbg.Start(context.Background(), ndbg.Real(trace.Limits{}), "  \n", "")
	require.Error(t, err)
	require.False(t, errors.Is(err, ndbg.ErrScript))
}
