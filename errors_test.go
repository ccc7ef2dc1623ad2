package ndbg_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// A call that does not match the entry's signature is Python's TypeError,
// in its words, on every backend that starts from a call (it used to be
// "statetree: empty trace" on the real one, "did not call a function of
// the program" on the neural one, and a message of ndbg's own with
// NoExec): the reference is what a plain python3 prints for the call.
func TestSignatureMismatchIsPythonsTypeError(t *testing.T) {
	ctx := context.Background()
	const src = "def f(x):\n    return x\n"
	py, err := trace.FindPython(ctx)
	if err != nil {
		t.Skip(err)
	}
	m := testmodel.Model(t, 1)
	cwm := testmodel.CWMModel(t, 1) // the cwm backend takes only a CWM vocabulary
	noExec, err := ndbg.NoExec(ndbg.Neural(m, sample.Params{}))
	require.NoError(t, err)
	for _, call := range []string{"f(1, 2)", "f()", "f(y=3)"} {
		out, err := exec.Command(py, "-c", src+"try:\n    "+call+"\nexcept TypeError as e:\n    print(e, end='')\n").Output()
		require.NoError(t, err)
		python := "TypeError: " + string(out)
		require.Contains(t, python, "f()")
		for _, b := range []ndbg.Backend{ndbg.Real(trace.Limits{}), ndbg.Neural(m, sample.Params{}), noExec, ndbg.CWM(cwm, sample.Params{})} {
			_, err := ndbg.Start(ctx, b, src, call)
			require.Error(t, err, "%s on %s", call, b.Name())
			assert.Contains(t, err.Error(), python, "%s on %s", call, b.Name())
			assert.ErrorIs(t, err, trace.ErrSetup)
		}
	}
}

// A start cancelled before or while its real run goes is
// context.Canceled, on the real and the neural backend (the real one said
// "signal: killed" when the cancellation came while python3's shim was
// asked for the interpreter).
func TestCancelledStartIsContextCanceled(t *testing.T) {
	m := testmodel.Model(t, 1)
	const loops = "import itertools\nfor _ in itertools.count():\n    pass\n\ndef f(x):\n    return x\n"
	for _, b := range []ndbg.Backend{ndbg.Real(trace.Limits{}), ndbg.Neural(m, sample.Params{})} {
		for _, after := range []time.Duration{0, 30 * time.Millisecond, 300 * time.Millisecond} {
			ctx, cancel := context.WithCancel(context.Background())
			if after == 0 {
				cancel()
			} else {
				time.AfterFunc(after, cancel) // the module code never ends: the cancellation ends the start
			}
			_, err := ndbg.Start(ctx, b, loops, "f(1)")
			cancel()
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled, "%s, cancelled after %v: %v", b.Name(), after, err)
		}
	}
}

// Output cut at trace.Limits.MaxStdout says so: Output's StdoutCut from
// the state where the program had written more than was kept, and
// OutputCursor's text ends with the OutputCut line, once, and again after
// a step back passes it anew.
func TestCutOutputIsMarked(t *testing.T) {
	ctx := context.Background()
	const src = "import sys\n\ndef f(n):\n    for i in range(n):\n        print('x' * 99)\n    sys.stderr.write('done')\n    return n\n"
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{MaxStdout: 1000}), src, "f(30)")
	require.NoError(t, err)
	var cur ndbg.OutputCursor
	var shown, errShown strings.Builder
	marks := 0
	for !s.Finished() {
		o, ok := s.Output()
		require.True(t, ok)
		assert.Equal(t, len(o.Stdout) == 1000 && o.StdoutCut, o.Truncated, "Truncated is StdoutCut here")
		out, errOut := cur.Next(s)
		shown.Write(out)
		errShown.Write(errOut)
		if strings.Contains(string(out), "cut here") {
			marks++
			assert.True(t, o.StdoutCut)
			assert.Len(t, o.Stdout, 1000)
		}
		_, err := s.StepInto(ctx)
		if err != nil {
			require.ErrorIs(t, err, ndbg.ErrFinished)
		}
	}
	out, errOut := cur.Next(s)
	shown.Write(out)
	errShown.Write(errOut)
	assert.Equal(t, 1, marks+strings.Count(string(out), "cut here"), "one mark")
	want := strings.Repeat(strings.Repeat("x", 99)+"\n", 10)[:1000] + ndbg.OutputCut("stdout", 1000)
	assert.Equal(t, want, shown.String())
	assert.Equal(t, "done", errShown.String(), "stderr, within its limit, is not marked")
	o, _ := s.Output()
	assert.True(t, o.StdoutCut && !o.StderrCut && o.Truncated)

	// Back to the start and forward again: the output, and its mark, are
	// new again as the session passes them.
	_, err = s.StepBackReturn(ctx)
	require.NoError(t, err)
	for {
		_, err = s.StepBackInto(ctx)
		if err != nil {
			require.ErrorIs(t, err, ndbg.ErrAtStart)
			break
		}
	}
	out, _ = cur.Next(s)
	assert.Empty(t, out)
	_, err = s.StepReturn(ctx)
	require.NoError(t, err)
	out, _ = cur.Next(s)
	assert.Equal(t, want, string(out))
}
