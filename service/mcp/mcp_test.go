package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/service/httpd"
	"github.com/ndbg/ndbg/service/sessions"
	"github.com/ndbg/ndbg/trace"
)

// prog is the shared mean program: f([None]) raises ZeroDivisionError at
// line 5 (mean's return) through f's line 9.
const prog = testmodel.MeanProgram

// sleepy sleeps before it returns; sleepyFor(n) calls it with n in its
// module code, which a real start runs: a debug_start that takes n seconds
// (the live real backend stops at the entry's call, before f's body).
const sleepy = "import time\n\ndef f(s):\n    time.sleep(s)\n    return s\n"

func sleepyFor(secs int) string { return sleepy + fmt.Sprintf("\nf(%d)\n", secs) }

// testToken is the HTTP tests' bearer token.
const testToken = "0123456789abcdef0123456789abcdef-mcp-test"

// toolNames are the tools the server must offer.
var toolNames = []string{"debug_start", "debug_step", "debug_breakpoints", "debug_evaluate", "debug_set",
	"debug_fork", "debug_history", "debug_end", "predict"}

// newManager is a session manager for a test (closed at its end).
func newManager(t testing.TB, cfg sessions.Config) *sessions.Manager {
	t.Helper()
	if cfg.Trace.Timeout == 0 {
		cfg.Trace.Timeout = time.Minute // two busy cores
	}
	m, err := sessions.New(cfg)
	require.NoError(t, err)
	t.Cleanup(m.Close)
	return m
}

// connect serves m's MCP server over an in-memory transport and returns
// the SDK's client session to it.
func connect(t *testing.T, m *sessions.Manager) *sdk.ClientSession {
	t.Helper()
	srv, err := NewServer(m, "test")
	require.NoError(t, err)
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// result is a tool's answer: its structured content as JSON and, for a
// tool error, its text.
type result struct {
	raw     json.RawMessage
	isError bool
	text    string
}

func (r result) decode(t *testing.T, v any) {
	t.Helper()
	require.False(t, r.isError, "tool error: %s", r.text)
	require.NoError(t, json.Unmarshal(r.raw, v), "%s", r.raw)
}

// tool calls a tool; a protocol error fails the test (a tool's own error
// is in the result).
func tool(t *testing.T, cs *sdk.ClientSession, name string, args any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s %v", name, args)
	return resultOf(t, res)
}

func resultOf(t *testing.T, res *sdk.CallToolResult) result {
	t.Helper()
	r := result{isError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			r.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		data, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		r.raw = data
	}
	return r
}

// view calls a tool that answers a SessionView.
func view(t *testing.T, cs *sdk.ClientSession, name string, args any) SessionView {
	t.Helper()
	var v SessionView
	tool(t, cs, name, args).decode(t, &v)
	return v
}

// sameStop checks that a tool's stop is the API's state st (nil: the
// end), its source the user's line.
func sameStop(t *testing.T, ref *ndbg.Session, st *ndbg.State, got Stop, msgs ...any) {
	t.Helper()
	want := stop(st, ref.UserLine)
	require.Equal(t, want, got, msgs...)
}

// TestToolsListed: every tool is offered with a description, an input
// schema and an output schema, and the backend's schema lists the
// backends.
func TestToolsListed(t *testing.T) {
	cs := connect(t, newManager(t, sessions.Config{}))
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		require.NotEmpty(t, tl.Description, tl.Name)
		require.NotNil(t, tl.InputSchema, tl.Name)
		require.NotNil(t, tl.OutputSchema, tl.Name)
		in, err := json.Marshal(tl.InputSchema)
		require.NoError(t, err)
		require.Contains(t, string(in), `"additionalProperties":false`, "%s takes no argument it does not know", tl.Name)
		if tl.Name == "debug_start" {
			require.Contains(t, string(in), `"enum":["neural","real","compare","cwm"]`)
		}
	}
	slices.Sort(names)
	want := slices.Clone(toolNames)
	slices.Sort(want)
	require.Equal(t, want, names)
}

// TestRealSessionMatchesAPI: a session on the real backend answers, tool
// by tool, exactly the states the Go API's real session takes for the same
// actions: steps forward and back, a conditional breakpoint, until,
// evaluate, set, fork, history and end.
func TestRealSessionMatchesAPI(t *testing.T) {
	ctx := context.Background()
	cs := connect(t, newManager(t, sessions.Config{}))
	ref, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Minute}), prog, "f([1, None, 4])")
	require.NoError(t, err)
	defer ref.Close()
	cur := func() *ndbg.State {
		if st, ok := ref.State(); ok {
			return &st
		}
		return nil
	}

	v := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1, None, 4])", "backend": "real"})
	id := v.Session
	require.Equal(t, "real", v.Backend)
	require.False(t, v.State.Predicted)
	require.Nil(t, v.State.Confidence, "a real state carries no confidence")
	sameStop(t, ref, cur(), v.State.Stop)
	require.Equal(t, []Local{{Name: "data", Repr: "[1, None, 4]"}}, v.State.Locals)
	require.Equal(t, "def f(data):", v.State.Source)

	step := func(action string, do func() error) SessionView {
		t.Helper()
		v := view(t, cs, "debug_step", map[string]any{"session": id, "action": action})
		require.NoError(t, do())
		sameStop(t, ref, cur(), v.State.Stop, action)
		return v
	}
	do := func(a ndbg.Action) func() error { return func() error { _, err := ref.Do(ctx, a); return err } }
	for range 3 {
		step("step_into", do(ndbg.Action{Kind: dsl.StepInto}))
	}
	step("step_over", do(ndbg.Action{Kind: dsl.StepOver}))

	// A breakpoint at the loop's body that stops only where x == 4.
	v = view(t, cs, "debug_breakpoints", map[string]any{"session": id, "set": []map[string]any{{"line": 4, "condition": "x == 4"}}})
	require.Equal(t, []Breakpoint{{Line: 4, Condition: "x == 4"}}, v.Breakpoints)
	v = view(t, cs, "debug_step", map[string]any{"session": id, "action": "continue"})
	// The reference: step until line 4 with x == 4 (the condition's meaning).
	for {
		_, err := ref.StepInto(ctx)
		require.NoError(t, err)
		if st := cur(); st.Event == dsl.Line && st.Line == 4 && slices.Contains(st.Locals, dsl.Local{Name: "x", Repr: "4"}) {
			break
		}
	}
	sameStop(t, ref, cur(), v.State.Stop, "continue to the conditional breakpoint")

	var ev EvaluateResult
	tool(t, cs, "debug_evaluate", map[string]any{"session": id, "expression": "total + x * 10"}).decode(t, &ev)
	require.Equal(t, "41", ev.Value)
	require.False(t, ev.DerivedFromPrediction)
	require.Empty(t, ev.Note)

	// Back to mean's call: its inputs.
	step("inv_step_return", do(ndbg.Action{Kind: dsl.InvStepReturn}))
	require.Equal(t, 1, cur().Line)

	// until from the loop's header runs past the loop.
	view(t, cs, "debug_breakpoints", map[string]any{"session": id, "clear_all": true})
	for range 2 {
		step("step_over", do(ndbg.Action{Kind: dsl.StepOver}))
	}
	require.Equal(t, 3, cur().Line)
	v = view(t, cs, "debug_step", map[string]any{"session": id, "action": "until:5"})
	require.Equal(t, 5, v.State.Line)
	require.Equal(t, "line", v.State.Event)
	for cur().Line != 5 {
		_, err := ref.StepOver(ctx)
		require.NoError(t, err)
	}
	sameStop(t, ref, cur(), v.State.Stop, "until:5")

	// fork: a copy that goes its own way.
	f := view(t, cs, "debug_fork", map[string]any{"session": id})
	require.NotEqual(t, id, f.Session)
	require.Equal(t, v.State, f.State)
	fv := view(t, cs, "debug_step", map[string]any{"session": f.Session, "action": "step_return"})
	require.Equal(t, "return", fv.State.Event)
	require.Equal(t, "2.5", *fv.State.ReturnValue)

	// The live real backend edits the running program: a second fork, its
	// total set to 100, returns 100 / 2 (mean of [1, 4] counts 2).
	g := view(t, cs, "debug_fork", map[string]any{"session": id})
	gv := view(t, cs, "debug_set", map[string]any{"session": g.Session, "name": "total", "repr": "100"})
	require.Contains(t, gv.State.Locals, Local{Name: "total", Repr: "100"})
	gv = view(t, cs, "debug_step", map[string]any{"session": g.Session, "action": "step_return"})
	require.Equal(t, "50.0", *gv.State.ReturnValue)
	r := tool(t, cs, "debug_set", map[string]any{"session": g.Session, "name": "total", "repr": "[2"})
	require.True(t, r.isError, "a repr that is no Python value")

	// The original did not move with the fork. Its history, replayed
	// action by action on a fresh session of the API, gives the same
	// states and ends where the session stands.
	var h HistoryResult
	tool(t, cs, "debug_history", map[string]any{"session": id}).decode(t, &h)
	replay, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Minute}), prog, "f([1, None, 4])")
	require.NoError(t, err)
	defer replay.Close()
	start, _ := replay.State()
	sameStop(t, replay, &start, h.Start)
	for i, hs := range h.Steps {
		a, err := ndbg.ParseAction(hs.Action)
		require.NoError(t, err, "step %d", i)
		// The continue ran with the breakpoint at line 4 set, stopping only
		// where its condition held; it was cleared after.
		if a.Kind == dsl.Continue {
			require.NoError(t, replay.SetBreakpoint(4))
		}
		st, err := replay.DoIf(ctx, a, func(st ndbg.State) bool {
			return slices.Contains(st.Locals, dsl.Local{Name: "x", Repr: "4"})
		})
		replay.ClearBreakpoint(0)
		require.NoError(t, err, "step %d: %s", i, hs.Action)
		sameStop(t, replay, &st, hs.State, "step %d: %s", i, hs.Action)
	}
	sameStop(t, ref, cur(), h.Steps[len(h.Steps)-1].State)

	var end EndResult
	tool(t, cs, "debug_end", map[string]any{"session": id}).decode(t, &end)
	require.True(t, end.Ended)
	r = tool(t, cs, "debug_step", map[string]any{"session": id, "action": "step_into"})
	require.True(t, r.isError)
	require.Contains(t, r.text, "no session")
}

// TestFailureToInputs is the agent's errand of the done-when on
// the real backend: from a failing call, run to the failure, see the
// exception escape, step back to where it was raised, then back to the
// failing function's inputs: mean was called with an empty list.
func TestFailureToInputs(t *testing.T) {
	cs := connect(t, newManager(t, sessions.Config{}))
	v := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([None])", "backend": "real"})
	id := v.Session
	v = view(t, cs, "debug_step", map[string]any{"session": id, "action": "continue"})
	require.True(t, v.Finished)
	require.Equal(t, &Escaped{Type: "ZeroDivisionError", Message: "division by zero", Line: 5}, v.Escaped)
	require.Equal(t, "end", v.State.Event)
	for i := 0; !(v.State.Event == "exception" && v.State.Line == 5); i++ {
		require.Less(t, i, 10, "no exception at line 5 stepping back")
		v = view(t, cs, "debug_step", map[string]any{"session": id, "action": "inv_step_into"})
	}
	require.Equal(t, "ZeroDivisionError('division by zero')", *v.State.Exception)
	v = view(t, cs, "debug_step", map[string]any{"session": id, "action": "inv_step_return"})
	require.Equal(t, "call", v.State.Event)
	require.Equal(t, 1, v.State.Line)
	require.Equal(t, []Local{{Name: "xs", Repr: "[]"}}, v.State.Locals)
	require.Len(t, v.Stack, 2, "f, then mean")
}

// TestNeuralSession: on the neural backend (a random model), every state
// after the first is marked predicted with the model's confidence per
// field and per local; an evaluation over it says it derives from a
// prediction.
func TestNeuralSession(t *testing.T) {
	m := testmodel.Model(t, 1)
	cs := connect(t, newManager(t, sessions.Config{Model: m}))
	v := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1, None, 4])"})
	require.Equal(t, "neural", v.Backend, "neural is the default where there is a model")
	require.False(t, v.State.Predicted, "the first state comes from a real run")
	id := v.Session
	// An edit of the first state: the state shows it, and an expression
	// reads it.
	v = view(t, cs, "debug_set", map[string]any{"session": id, "name": "data", "repr": "[7, None]"})
	require.Equal(t, []Local{{Name: "data", Repr: "[7, None]"}}, v.State.Locals)
	var ev EvaluateResult
	tool(t, cs, "debug_evaluate", map[string]any{"session": id, "expression": "data[0] * 6"}).decode(t, &ev)
	require.Equal(t, "42", ev.Value)
	for range 3 {
		r := tool(t, cs, "debug_step", map[string]any{"session": id, "action": "step_into"})
		if r.isError {
			break // a random model may predict the end, or an action it cannot take
		}
		v = SessionView{}
		r.decode(t, &v)
		if v.Finished {
			break
		}
		require.True(t, v.State.Predicted)
		require.NotNil(t, v.State.Confidence)
		require.InDelta(t, 0.5, v.State.Confidence.State, 0.5)
		for _, l := range v.State.Locals {
			require.NotNil(t, l.Confidence, "local %s of %+v", l.Name, v.State)
		}
		if len(v.State.Locals) > 0 {
			var ev EvaluateResult
			tool(t, cs, "debug_evaluate", map[string]any{"session": id, "expression": v.State.Locals[0].Name}).decode(t, &ev)
			require.True(t, ev.DerivedFromPrediction)
			require.Contains(t, ev.Note, "derived from a prediction")
			require.Equal(t, v.State.Locals[0].Repr, ev.Value)
		}
	}
}

// TestCompareSession: the compare backend shows the real state beside the
// prediction after the same actions, and the match.
func TestCompareSession(t *testing.T) {
	ctx := context.Background()
	m := testmodel.Model(t, 2)
	cs := connect(t, newManager(t, sessions.Config{Model: m}))
	v := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1, None, 4])", "backend": "compare"})
	require.NotNil(t, v.Real)
	require.True(t, v.Match.All)
	ref, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Minute}), prog, "f([1, None, 4])")
	require.NoError(t, err)
	defer ref.Close()
	r := tool(t, cs, "debug_step", map[string]any{"session": v.Session, "action": "step_into"})
	if r.isError {
		t.Skipf("the random model's step failed: %s", r.text)
	}
	r.decode(t, &v)
	_, err = ref.StepInto(ctx)
	require.NoError(t, err)
	st, _ := ref.State()
	if v.Real != nil {
		sameStop(t, ref, &st, v.Real.Stop)
		require.NotNil(t, v.Match)
	} else {
		require.NotEmpty(t, v.RealNote)
	}
}

// TestPredictTool: predict answers what ndbg predict answers: on the real
// backend the real state exactly; with real, the real state beside the
// prediction and the match.
func TestPredictTool(t *testing.T) {
	ctx := context.Background()
	cs := connect(t, newManager(t, sessions.Config{Model: testmodel.Model(t, 3)}))
	ref, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Minute}), prog, "f([1, None, 4])")
	require.NoError(t, err)
	defer ref.Close()
	_, err = ref.StepOver(ctx)
	require.NoError(t, err)
	want, err := ref.StepReturn(ctx)
	require.NoError(t, err)

	var r PredictResult
	tool(t, cs, "predict", map[string]any{"program": prog, "call": "f([1, None, 4])", "backend": "real",
		"actions": []string{"step_over"}, "action": "step_return"}).decode(t, &r)
	sameStop(t, ref, &want, r.Predicted.Stop)
	require.Equal(t, "2.5", *r.Predicted.ReturnValue)

	tool(t, cs, "predict", map[string]any{"program": prog, "call": "f([1, None, 4])", "real": true}).decode(t, &r)
	require.True(t, r.Predicted.Predicted)
	require.NotNil(t, r.Predicted.Confidence)
	ref2, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Minute}), prog, "f([1, None, 4])")
	require.NoError(t, err)
	defer ref2.Close()
	want, err = ref2.StepInto(ctx)
	require.NoError(t, err)
	require.NotNil(t, r.Real)
	sameStop(t, ref2, &want, r.Real.Stop)
	require.NotNil(t, r.Match)
}

// TestBadArguments: each bad argument is a tool error saying what is
// wrong, and the server goes on answering.
func TestBadArguments(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	binary := filepath.Join(dir, "bin.py")
	require.NoError(t, os.WriteFile(binary, []byte("x = 1\x00\n"), 0o600))
	cs := connect(t, newManager(t, sessions.Config{Limits: sessions.Limits{MaxProgramBytes: 4096}}))
	id := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1])", "backend": "real"}).Session
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"debug_start", map[string]any{}, `"program" (the Python source) or "path"`},
		{"debug_start", map[string]any{"program": prog, "path": "x.py"}, "not both"},
		{"debug_start", map[string]any{"program": prog, "call": "f()", "backend": "pdb"}, "backend"},
		{"debug_start", map[string]any{"program": prog, "call": "f()", "backend": "neural"}, `backend "neural" is not offered here (have real)`},
		{"debug_start", map[string]any{"program": prog, "call": "f()", "cal": "g()"}, "cal"},
		{"debug_start", map[string]any{"program": 3}, "program"},
		{"debug_start", map[string]any{"program": strings.Repeat("#\n", 3000), "call": "f()"}, "limit of 4096"},
		{"debug_start", map[string]any{"program": prog, "call": "os.system('x')", "backend": "real"}, "not a call of a top-level function"},
		{"debug_start", map[string]any{"program": "def f(:\n", "call": "f()", "backend": "real"}, "starting the session"},
		{"debug_start", map[string]any{"program": prog, "call": "f()", "verify_below": 2}, "verify_below"},
		{"debug_start", map[string]any{"program": prog, "backend": "neural"}, "whole script"},
		{"debug_start", map[string]any{"path": dir, "call": "f()"}, "a directory"},
		{"debug_start", map[string]any{"path": fifo, "call": "f()"}, "a FIFO"},
		{"debug_start", map[string]any{"path": binary, "call": "f()"}, "a NUL byte"},
		{"debug_start", map[string]any{"path": filepath.Join(dir, "none.py"), "call": "f()"}, "no such file"},
		{"debug_start", map[string]any{"program": prog, "call": "f()", "backend": "real", "model": dir}, `"model"`},
		{"debug_step", map[string]any{"session": id}, "action"},
		{"debug_step", map[string]any{"session": id, "action": "jump"}, `unknown action "jump"`},
		{"debug_step", map[string]any{"session": id, "action": "breakpoint:x"}, "bad line"},
		{"debug_step", map[string]any{"session": id, "action": "breakpoint:6"}, "not a code line"},
		{"debug_step", map[string]any{"session": id, "action": "until:0"}, "until:N"},
		{"debug_step", map[string]any{"session": id, "action": "inv_step_into"}, "first state"},
		{"debug_step", map[string]any{"session": id, "action": "step_into", "count": 0}, "count"},
		{"debug_step", map[string]any{"session": "0123456789abcdef", "action": "step_into"}, `no session "0123456789abcdef"`},
		{"debug_breakpoints", map[string]any{"session": id, "set": []map[string]any{{"line": 6}}}, "not a code line"},
		{"debug_breakpoints", map[string]any{"session": id, "set": []map[string]any{{"line": 0}}}, "1 or more"},
		{"debug_breakpoints", map[string]any{"session": id, "clear": []int{-1}}, "1 or more"},
		{"debug_evaluate", map[string]any{"session": id, "expression": "nope + 1"}, "NameError"},
		{"debug_evaluate", map[string]any{"session": id, "expression": " "}, "empty"},
		{"debug_set", map[string]any{"session": id, "name": "nope", "repr": "1"}, `no local "nope"`},
		{"debug_set", map[string]any{"session": id, "name": "data", "repr": "[1,"}, "repr"},
		{"debug_fork", map[string]any{"session": "x"}, "no session"},
		{"debug_history", map[string]any{}, "session"},
		{"debug_end", map[string]any{"session": "x"}, "no session"},
		{"predict", map[string]any{"program": prog}, "call"},
		{"predict", map[string]any{"program": prog, "call": "f([1])", "backend": "real", "action": "fly"}, "fly"},
		{"predict", map[string]any{"program": prog, "call": "f([1])", "backend": "real", "actions": []string{"step_over", "x"}}, "actions 2"},
		{"predict", map[string]any{"program": prog, "call": "f([1])", "backend": "compare"}, "backend"},
		{"predict", map[string]any{"program": prog, "call": "f([1])", "real": true, "no_exec": true}, "no_exec"},
	} {
		r := tool(t, cs, c.tool, c.args)
		require.True(t, r.isError, "%s %v answered %s", c.tool, c.args, r.raw)
		require.Contains(t, r.text, c.want, "%s %v", c.tool, c.args)
	}
	// An unknown tool is a protocol error, not a crash.
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "debug_jump", Arguments: map[string]any{}})
	require.ErrorContains(t, err, "debug_jump")
	// And the server still answers, the session where it was.
	v := view(t, cs, "debug_step", map[string]any{"session": id, "action": "step_into"})
	require.Equal(t, 1, v.Steps)
}

// TestConcurrentSessions: clients stepping their own sessions at once each
// get their own states, exactly the API's.
func TestConcurrentSessions(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, sessions.Config{})
	const clients = 6
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		cs := connect(t, m)
		wg.Go(func() {
			call := fmt.Sprintf("f([%d, None, %d])", c, c+1)
			ref, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Minute}), prog, call)
			if err != nil {
				errs <- err
				return
			}
			defer ref.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "debug_start", Arguments: map[string]any{"program": prog, "call": call, "backend": "real"}})
			if err != nil || res.IsError {
				errs <- fmt.Errorf("client %d: start: %v %v", c, err, res)
				return
			}
			var v SessionView
			data, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(data, &v)
			for i := range 8 {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "debug_step", Arguments: map[string]any{"session": v.Session, "action": "step_into"}})
				if err != nil || res.IsError {
					errs <- fmt.Errorf("client %d step %d: %v %v", c, i, err, res)
					return
				}
				var got SessionView
				data, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(data, &got)
				st, err := ref.StepInto(ctx)
				if err != nil {
					errs <- err
					return
				}
				if want := stop(&st, ref.UserLine); !jsonEqual(want, got.State.Stop) {
					errs <- fmt.Errorf("client %d step %d: got %+v, want %+v", c, i, got.State.Stop, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, clients, m.Len())
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestCancellation: a client that cancels a tool call in flight (MCP's
// notifications/cancelled) stops it: the program's run is killed, no
// session is left behind, and the server answers the next call.
func TestCancellation(t *testing.T) {
	m := newManager(t, sessions.Config{})
	cs := connect(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "debug_start", Arguments: map[string]any{"program": sleepyFor(50), "call": "f(50)", "backend": "real"}})
		done <- err
	}()
	require.Eventually(t, func() bool { return m.InFlight() == 1 }, 30*time.Second, 5*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { return m.InFlight() == 0 }, 30*time.Second, 5*time.Millisecond, "the call was stopped on the server")
	require.Equal(t, 0, m.Len())
	v := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1])", "backend": "real"})
	require.Equal(t, "call", v.State.Event)
}

// serveHTTP serves m's MCP server over streamable HTTP on loopback with
// testToken; cancel begins its shutdown; wait returns Serve's result.
func serveHTTP(t testing.TB, m *sessions.Manager, grace time.Duration) (url string, cancel context.CancelFunc, wait func() error) {
	t.Helper()
	srv, err := NewServer(m, "test")
	require.NoError(t, err)
	auth, err := httpd.NewAuth(Name, testToken)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	var serveErr error
	go func() {
		serveErr = httpd.Serve(ctx, ln, HTTPHandler(srv, auth, time.Minute), httpd.Options{Name: Name, Grace: grace,
			Drain: m.Shutdown, Streams: IsStream, Close: func() { CloseSessions(srv) }})
		close(served)
	}()
	wait = func() error { <-served; return serveErr }
	t.Cleanup(func() {
		cancel()
		select {
		case <-served:
		case <-time.After(time.Minute):
			var b strings.Builder
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Errorf("the HTTP server did not shut down:\n%s", b.String())
		}
	})
	return "http://" + ln.Addr().String(), cancel, wait
}

// bearer sends a token with every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// httpClient connects the SDK's client over streamable HTTP with token.
func httpClient(t testing.TB, url, token string) (*sdk.ClientSession, error) {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestHTTP: over streamable HTTP the owner's token is required (none, or
// another, is refused with 401 before anything is done), and a session
// runs there as over any transport.
func TestHTTP(t *testing.T) {
	url, _, _ := serveHTTP(t, newManager(t, sessions.Config{}), 10*time.Second)
	for _, token := range []string{"", "not-the-token-not-the-token-not-the-token"} {
		_, err := httpClient(t, url, token)
		require.ErrorContains(t, err, "Unauthorized", "token %q", token)
		req, err := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: bearer{token, http.DefaultTransport}}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
	}
	cs, err := httpClient(t, url, testToken)
	require.NoError(t, err)
	v := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([None])", "backend": "real"})
	v = view(t, cs, "debug_step", map[string]any{"session": v.Session, "action": "continue"})
	require.Equal(t, "ZeroDivisionError", v.Escaped.Type)
}

// TestHTTPShutdown: a shutdown lets a tool call in flight finish and
// answers a new request 503; a call still running when the grace ends is
// stopped and answered with a tool error saying so, not a dropped
// connection.
func TestHTTPShutdown(t *testing.T) {
	for _, c := range []struct {
		name  string
		grace time.Duration
		secs  int
	}{{"finishes", 30 * time.Second, 1}, {"stopped", 300 * time.Millisecond, 50}} {
		t.Run(c.name, func(t *testing.T) {
			m := newManager(t, sessions.Config{})
			url, cancel, wait := serveHTTP(t, m, c.grace)
			cs, err := httpClient(t, url, testToken)
			require.NoError(t, err)
			got := make(chan result, 1)
			go func() {
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "debug_start",
					Arguments: map[string]any{"program": sleepyFor(c.secs), "call": fmt.Sprintf("f(%d)", c.secs), "backend": "real"}})
				if err != nil {
					got <- result{isError: true, text: "protocol error: " + err.Error()}
					return
				}
				got <- resultOf(t, res)
			}()
			require.Eventually(t, func() bool { return m.InFlight() == 1 }, 30*time.Second, 5*time.Millisecond)
			cancel()
			require.Eventually(t, m.Draining, 30*time.Second, 5*time.Millisecond)
			req, err := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			require.NoError(t, err)
			resp, err := (&http.Client{Transport: bearer{testToken, &http.Transport{DisableKeepAlives: true}}}).Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			r := <-got
			if c.name == "finishes" {
				var v SessionView
				r.decode(t, &v)
				require.Equal(t, "call", v.State.Event)
				require.NoError(t, wait())
			} else {
				require.True(t, r.isError)
				require.Contains(t, r.text, "the server is shutting down")
				require.ErrorContains(t, wait(), "stopped")
			}
		})
	}
}

// TestSessionLimit: the session limit is a tool error, and a slot is freed
// by debug_end.
func TestSessionLimit(t *testing.T) {
	cs := connect(t, newManager(t, sessions.Config{Limits: sessions.Limits{MaxSessions: 1}}))
	id := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1])", "backend": "real"}).Session
	r := tool(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1])", "backend": "real"})
	require.True(t, r.isError)
	require.Contains(t, r.text, "1 live sessions")
	r = tool(t, cs, "debug_fork", map[string]any{"session": id})
	require.True(t, r.isError)
	tool(t, cs, "debug_end", map[string]any{"session": id})
	view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1])", "backend": "real"})
}

// TestModelDirectory: a session may name a model directory; it is opened
// once, shared by the sessions naming it, and closed after the last.
func TestModelDirectory(t *testing.T) {
	dir := t.TempDir()
	testmodel.WriteDir(t, dir, 0)
	opened := 0
	var mu sync.Mutex
	m := newManager(t, sessions.Config{Model: testmodel.Model(t, 4), OpenModel: func(ctx context.Context, d string) (*ndbg.Model, error) {
		mu.Lock()
		opened++
		mu.Unlock()
		return ndbg.Open(ctx, ndbg.Options{Dir: d})
	}})
	cs := connect(t, m)
	a := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1])", "model": dir})
	b := view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([2])", "model": dir})
	require.Equal(t, 1, opened, "one model for both sessions")
	tool(t, cs, "debug_end", map[string]any{"session": a.Session})
	tool(t, cs, "debug_end", map[string]any{"session": b.Session})
	view(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1])", "model": dir})
	require.Equal(t, 2, opened, "closed after its last session, opened again")
	r := tool(t, cs, "debug_start", map[string]any{"program": prog, "call": "f([1])", "model": filepath.Join(dir, "none")})
	require.True(t, r.isError)
	require.Contains(t, r.text, "opening the model")
}
