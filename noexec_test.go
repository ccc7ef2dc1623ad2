package ndbg_test

import (
	"context"
	"testing"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoExecRunsNothing: a no-exec session starts at the same state as the
// real run's first, from the program's text alone: module code that raises
// stops the ordinary neural start (it runs) but not the no-exec one, and an
// argument that is code is refused, named, never run.
func TestNoExecRunsNothing(t *testing.T) {
	ctx := context.Background()
	m := openDefault(t)
	b, err := ndbg.NoExec(ndbg.Neural(m, sample.Params{}))
	require.NoError(t, err)

	const prog = "def f(xs, k=2):\n    return xs[:k]\n"
	real, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), prog, "f([3, None, 4])")
	require.NoError(t, err)
	defer real.Close()
	s, err := ndbg.Start(ctx, b, prog, "f([3, None, 4])")
	require.NoError(t, err)
	defer s.Close()
	want, _ := real.State()
	got, _ := s.State()
	assert.Equal(t, want, got)
	_, err = s.StepReturn(ctx) // the model predicts on from there
	require.NoError(t, err)

	// Module code that raises: it runs for the ordinary start, not here.
	const raising = "import os\nif os.getpid():\n    raise SystemExit('module code ran')\n\ndef f(x):\n    return x\n"
	_, err = ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), raising, "f(1)")
	require.ErrorContains(t, err, "module code ran")
	s2, err := ndbg.Start(ctx, b, raising, "f(1)")
	require.NoError(t, err)
	defer s2.Close()
	st, _ := s2.State()
	assert.Equal(t, 5, st.Line)
	assert.Equal(t, []dsl.Local{{Name: "x", Repr: "1"}}, st.Locals)

	_, err = ndbg.Start(ctx, b, prog, "f(__import__('os').getcwd())")
	require.ErrorIs(t, err, trace.ErrSetup)
	require.ErrorContains(t, err, "argument 1, __import__('os').getcwd(), is not a literal")

	// What runs the program cannot be made not to.
	_, err = ndbg.NoExec(ndbg.Real(trace.Limits{}))
	require.Error(t, err)
	_, err = ndbg.Verify(b, trace.Limits{}, 0.5)
	require.Error(t, err)
	cb, err := ndbg.NoExec(ndbg.CWM(m, sample.Params{}))
	require.NoError(t, err)
	assert.Equal(t, "cwm", cb.Name())
}
