package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	require.Len(t, lines, 1+2+2*6+2)
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
