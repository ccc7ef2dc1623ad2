package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
)

const traceProg = `def g(x):
    y = x * 2
    return y

def f(n):
    s = 0
    for i in range(n):
        s += g(i)
    return s
`

func writeProg(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

func TestTraceCommandJSON(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	path := writeProg(t, traceProg)
	var out bytes.Buffer
	require.NoError(t, runTrace(context.Background(), []string{path, "--call", "f(2)"}, &out, io.Discard))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	// call f, line 6, line 7, [line 8, call g, line 2, line 3, return g, line 7] x2, line 9, return f
	require.Len(t, lines, 1+2+2*6+2+1)
	end := lines[len(lines)-1]
	lines = lines[:len(lines)-1]
	require.JSONEq(t, `{"end":"finished","states":17,"value":"2"}`, end, "the last record says the entry returned")
	type state struct {
		Index  int             `json:"index"`
		Event  string          `json:"event"`
		Line   int             `json:"line"`
		Source string          `json:"source"`
		Depth  int             `json:"depth"`
		Func   string          `json:"func"`
		Locals json.RawMessage `json:"locals"`
		Value  *string         `json:"value"`
	}
	var states []state
	for _, l := range lines {
		var s state
		require.NoError(t, json.Unmarshal([]byte(l), &s), l)
		states = append(states, s)
	}
	assert.Equal(t, state{0, "call", 5, "def f(n):", 0, "f", json.RawMessage(`{"n":"2"}`), nil}, states[0])
	assert.Equal(t, "line", states[3].Event)
	assert.Equal(t, `{"n":"2","s":"0","i":"0"}`, string(states[3].Locals), "locals in Python's order")
	assert.Equal(t, "call", states[4].Event)
	assert.Equal(t, 1, states[4].Depth)
	assert.Equal(t, "g", states[4].Func)
	g := states[7]
	assert.Equal(t, "return", g.Event)
	require.NotNil(t, g.Value)
	assert.Equal(t, "0", *g.Value)
	last := states[len(states)-1]
	assert.Equal(t, "return", last.Event)
	assert.Equal(t, 0, last.Depth)
	require.NotNil(t, last.Value)
	assert.Equal(t, "2", *last.Value) // g(0) + g(1)
	for i, s := range states {
		assert.Equal(t, i, s.Index)
	}
}

func TestTraceCommandDSL(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	path := writeProg(t, traceProg)
	var out bytes.Buffer
	require.NoError(t, runTrace(context.Background(), []string{"--format", "dsl", path, "--call", "f(1)"}, &out, io.Discard))
	text := out.String()
	require.True(t, strings.HasPrefix(text, dsl.BeginOfText+dsl.TraceContextStart+"def g(x):\n"), text)
	require.True(t, strings.HasSuffix(text, "<|step_into|>"+dsl.EndOfText), text)
	traj, err := dsl.Parse(text)
	require.NoError(t, err)
	require.Equal(t, dsl.Call, traj.Start.Event)
	// call f, line 6, line 7, line 8, call g, line 2, line 3, return g, line 7, line 9, return f, end.
	require.Len(t, traj.Steps, 11)
	for _, st := range traj.Steps {
		require.Equal(t, dsl.StepInto, st.Action.Kind)
	}
	require.Nil(t, traj.Steps[10].State)
	ret := traj.Steps[9].State
	require.Equal(t, dsl.Return, ret.Event)
	require.Equal(t, "0", ret.Value)
}

func TestTraceCommandErrors(t *testing.T) {
	path := writeProg(t, traceProg)
	cases := map[string][]string{
		"no file":       {"--call", "f(1)"},
		"two files":     {path, path, "--call", "f(1)"},
		"no call":       {path},
		"not a call":    {path, "--call", "f"},
		"bad format":    {path, "--call", "f(1)", "--format", "xml"},
		"missing file":  {filepath.Join(t.TempDir(), "none.py"), "--call", "f(1)"},
		"unknown entry": {path, "--call", "h(1)"},
		"unknown flag":  {path, "--call", "f(1)", "--bogus"},
	}
	for name, args := range cases {
		err := runTrace(context.Background(), args, io.Discard, io.Discard)
		require.Error(t, err, name)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		return
	}
	err := runTrace(context.Background(), []string{path, "--call", "f(1/0)"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "ZeroDivisionError")
	bad := writeProg(t, "def f(:\n    pass\n")
	err = runTrace(context.Background(), []string{bad, "--call", "f()"}, io.Discard, io.Discard)
	require.Error(t, err)
}

// traceLines runs `ndbg trace` and returns its exit status, its JSON
// records and its stderr.
func traceLines(t *testing.T, args ...string) (int, []map[string]any, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"trace"}, args...), &out, &errb)
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
		recs = append(recs, r)
	}
	return code, recs, errb.String()
}

// TestTraceEndException: an exception that escapes the entry fails the
// command and is reported at the lines CPython's traceback gives: the
// entry's line where it left and the innermost line that raised it.
func TestTraceEndException(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	src := "def g(x):\n    return 1 / x\n\ndef f(n):\n    s = 0\n    t = g(n) + s\n    return t\n"
	path := writeProg(t, src)
	tb, err := exec.Command("python3", "-c", `import sys, traceback
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"))
try:
    f(0)
except ZeroDivisionError as e:
    frames = [fr for fr in traceback.extract_tb(e.__traceback__) if fr.filename == sys.argv[1]]
    print(frames[0].lineno, frames[-1].lineno, str(e))
`, path).Output()
	require.NoError(t, err)
	var entryLine, raisedAt int
	var msg string
	_, err = fmt.Sscanf(string(tb), "%d %d", &entryLine, &raisedAt)
	require.NoError(t, err)
	msg = strings.TrimSpace(strings.SplitN(string(tb), " ", 3)[2])
	require.Equal(t, 6, entryLine)
	require.Equal(t, 2, raisedAt)

	code, recs, errOut := traceLines(t, path, "--call", "f(0)")
	require.Equal(t, 1, code, "the program failed")
	end := recs[len(recs)-1]
	require.Equal(t, map[string]any{"end": "exception", "states": float64(len(recs) - 1), "type": "ZeroDivisionError",
		"message": msg, "line": float64(entryLine), "raised_at": float64(raisedAt)}, end)
	require.Contains(t, errOut, "ZeroDivisionError (raised at line 2) escaped f(0) at line 6: division by zero")
}

// TestTraceEndLimit: a trace cut by a limit fails the command, and its last
// record says which limit.
func TestTraceEndLimit(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	path := writeProg(t, "def f():\n    while True:\n        pass\n")
	code, recs, errOut := traceLines(t, path, "--call", "f()", "--max-events", "50")
	require.Equal(t, 1, code)
	require.Len(t, recs, 51)
	require.Equal(t, map[string]any{"end": "limit", "states": float64(50), "limit": "max-events"}, recs[50])
	require.Contains(t, errOut, "cut at 50 states (raise --max-events")

	// --format dsl has no end record (the text would not parse): the exit
	// status and stderr say it.
	var out, errb bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"trace", path, "--call", "f()", "--max-events", "50", "--format", "dsl"}, &out, &errb))
	_, err := dsl.Parse(out.String())
	require.NoError(t, err)
	require.Contains(t, errb.String(), "cut at 50 states")
}

// TestTraceCommandShowsUserLine: "source" is the user's line, without the
// comment that makes a repeated line unique in the prepared program.
func TestTraceCommandShowsUserLine(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	path := writeProg(t, "def f(xs):\n    x = xs[0]\n    x = xs[0]\n    return x\n")
	var out bytes.Buffer
	require.NoError(t, runTrace(context.Background(), []string{path, "--call", "f([1])"}, &out, io.Discard))
	seen := 0
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var s struct {
			Line   int    `json:"line"`
			Source string `json:"source"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &s), l)
		if s.Line == 3 {
			assert.Equal(t, "    x = xs[0]", s.Source)
			seen++
		}
	}
	require.Positive(t, seen)
}

// TestTraceEndOutput: the end record holds what the program wrote, and
// says which stream was cut at trace.Limits.MaxStdout (64 KiB), where it
// used to leave the output out, cut or not.
func TestTraceEndOutput(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	path := writeProg(t, "import sys\n\ndef f(n):\n    for i in range(n):\n        print('x' * 99)\n    print('e', file=sys.stderr)\n    return n\n")
	code, recs, _ := traceLines(t, path, "--call", "f(2)")
	require.Equal(t, 0, code)
	line := strings.Repeat("x", 99) + "\n"
	end := recs[len(recs)-1]
	require.Equal(t, line+line, end["stdout"])
	require.Equal(t, "e\n", end["stderr"])
	require.NotContains(t, end, "output_cut")

	code, recs, _ = traceLines(t, path, "--call", "f(700)")
	require.Equal(t, 0, code)
	end = recs[len(recs)-1]
	require.Equal(t, strings.Repeat(line, 700)[:64<<10], end["stdout"])
	require.Equal(t, []any{"stdout"}, end["output_cut"])
}
