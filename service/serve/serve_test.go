package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/service/sessions"
	"github.com/ndbg/ndbg/trace"
)

// prog is the shared mean program.
const prog = testmodel.MeanProgram

const sleepy = `import time

def f(s):
    time.sleep(s)
    return s
`

// testToken is the tests' bearer token.
const testToken = "0123456789abcdef0123456789abcdef-test"

// bearer is a transport that sends a token with every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// start serves a new service on loopback for the test, with testToken
// (unless cfg has a token); ts.Client() sends it.
func start(t *testing.T, cfg Config) (*httptest.Server, *Service) {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	svc, err := New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(svc.Handler())
	t.Cleanup(func() { ts.Close(); svc.Close() })
	c := ts.Client()
	c.Transport = bearer{cfg.Token, c.Transport}
	return ts, svc
}

// call sends a request with a JSON body (a string is sent as is) and
// returns the status and the decoded answer.
func call(t *testing.T, ts *httptest.Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	require.NoError(t, err)
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, nil
	}
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "%s %s: %s", method, path, data)
	var v map[string]any
	require.NoError(t, json.Unmarshal(data, &v), "%s %s: %s", method, path, data)
	return resp.StatusCode, v
}

// create starts a session and returns its id.
func create(t *testing.T, ts *httptest.Server, backend, src, callExpr string) string {
	t.Helper()
	code, v := call(t, ts, "POST", "/sessions", map[string]any{"program": src, "call": callExpr, "backend": backend})
	require.Equal(t, http.StatusCreated, code, "%v", v)
	return v["id"].(string)
}

// stateJSON re-encodes a state from an answer for comparison.
func stateJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// apiJSON is what the Go API's state encodes to, through the same path.
func apiJSON(t *testing.T, st ndbg.State) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(ndbg.MarshalState(st), &v))
	return stateJSON(t, v)
}

// TestRoutesMatchOpenAPI: openapi.json describes every route the service
// answers, and nothing else.
func TestRoutesMatchOpenAPI(t *testing.T) {
	var spec struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(OpenAPI, &spec))
	require.True(t, strings.HasPrefix(spec.OpenAPI, "3."))
	var described []string
	for path, ops := range spec.Paths {
		for m := range ops {
			if m != "parameters" {
				described = append(described, strings.ToUpper(m)+" "+path)
			}
		}
	}
	svc, err := New(Config{})
	require.NoError(t, err)
	defer svc.Close()
	var routed []string
	for _, r := range svc.routes() {
		routed = append(routed, r.method+" "+r.path)
	}
	slices.Sort(described)
	slices.Sort(routed)
	require.Equal(t, routed, described)
}

// TestRealSessionMatchesAPI drives a real session through every endpoint
// and checks each answer against the Go API doing the same.
func TestRealSessionMatchesAPI(t *testing.T) {
	ctx := context.Background()
	ts, _ := start(t, Config{})
	ref, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), prog, "f([1, None, 4])")
	require.NoError(t, err)
	defer ref.Close()

	id := create(t, ts, "real", prog, "f([1, None, 4])")
	code, v := call(t, ts, "GET", "/sessions/"+id, nil)
	require.Equal(t, http.StatusOK, code)
	first, _ := ref.State()
	require.JSONEq(t, apiJSON(t, first), stateJSON(t, v["state"]))
	require.Equal(t, "real", v["backend"])
	require.Equal(t, []any{7.0}, v["stack"])

	code, v = call(t, ts, "PUT", "/sessions/"+id+"/breakpoints/4", nil)
	require.Equal(t, http.StatusOK, code, "%v", v)
	require.Equal(t, []any{4.0}, v["breakpoints"])
	require.NoError(t, ref.SetBreakpoint(4))

	steps := []struct {
		action string
		do     func() (ndbg.State, error)
	}{
		{"step_over", func() (ndbg.State, error) { return ref.StepOver(ctx) }},
		{"step_into", func() (ndbg.State, error) { return ref.StepInto(ctx) }},
		{"continue", func() (ndbg.State, error) { return ref.Continue(ctx) }},
		{"step_return", func() (ndbg.State, error) { return ref.StepReturn(ctx) }},
		{"inv_step_over", func() (ndbg.State, error) { return ref.StepBackOver(ctx) }},
		{"inv_continue", func() (ndbg.State, error) { return ref.ContinueBack(ctx) }},
		{"breakpoint:9", func() (ndbg.State, error) { return ref.RunTo(ctx, 9) }},
		{"inv_breakpoint:8", func() (ndbg.State, error) { return ref.BackTo(ctx, 8) }},
		{"continue:5", func() (ndbg.State, error) { return ref.Do(ctx, ndbg.Action{Kind: dsl.Continue, Lines: []int{5}}) }},
		{"inv_step_return", func() (ndbg.State, error) { return ref.StepBackReturn(ctx) }},
	}
	for _, s := range steps {
		want, err := s.do()
		require.NoError(t, err, s.action)
		code, v := call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": s.action})
		require.Equal(t, http.StatusOK, code, "%s: %v", s.action, v)
		require.JSONEq(t, apiJSON(t, want), stateJSON(t, v["state"]), s.action)
		require.Equal(t, stateJSON(t, ref.Stack()), stateJSON(t, v["stack"]), s.action)
	}

	// A fork goes its own way.
	code, v = call(t, ts, "POST", "/sessions/"+id+"/fork", nil)
	require.Equal(t, http.StatusCreated, code, "%v", v)
	forkID := v["id"].(string)
	require.NotEqual(t, id, forkID)
	_, v = call(t, ts, "POST", "/sessions/"+forkID+"/actions", map[string]string{"action": "step_into"})
	require.Equal(t, 11.0, v["steps"])
	_, v = call(t, ts, "GET", "/sessions/"+id, nil)
	require.Equal(t, 10.0, v["steps"])

	code, v = call(t, ts, "DELETE", "/sessions/"+id+"/breakpoints/4", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []any{}, v["breakpoints"])
	ref.ClearBreakpoint(4)

	// To the end: finished, a null state; then a forward action is refused.
	for {
		_, err := ref.StepOver(ctx)
		code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "step_over"})
		require.Equal(t, http.StatusOK, code, "%v", v)
		if err != nil {
			require.ErrorIs(t, err, ndbg.ErrFinished)
			break
		}
	}
	require.Equal(t, true, v["finished"])
	require.Nil(t, v["state"])
	code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "step_over"})
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, v["error"], "finished")

	// The history is the Go API's trajectory.
	code, v = call(t, ts, "GET", "/sessions/"+id+"/history", nil)
	require.Equal(t, http.StatusOK, code)
	tr := ref.Trajectory()
	require.JSONEq(t, apiJSON(t, tr.Start), stateJSON(t, v["start"]))
	hs := v["steps"].([]any)
	require.Len(t, hs, len(tr.Steps))
	for i, st := range tr.Steps {
		h := hs[i].(map[string]any)
		require.Equal(t, st.Action.String(), h["action"])
		if st.State == nil {
			require.Nil(t, h["state"])
		} else {
			require.JSONEq(t, apiJSON(t, *st.State), stateJSON(t, h["state"]))
		}
	}

	// A real run's locals are the live program's: an edit changes it.
	code, v = call(t, ts, "PUT", "/sessions/"+forkID+"/locals/xs", map[string]string{"repr": "[2]"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	code, v = call(t, ts, "PUT", "/sessions/"+forkID+"/locals/xs", map[string]string{"repr": "[2"})
	require.Equal(t, http.StatusUnprocessableEntity, code, "%v", v)

	code, _ = call(t, ts, "DELETE", "/sessions/"+id, nil)
	require.Equal(t, http.StatusNoContent, code)
	code, v = call(t, ts, "GET", "/sessions/"+id, nil)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, v["error"], id)

	code, v = call(t, ts, "GET", "/health", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1.0, v["sessions"]) // the fork
	require.Equal(t, []any{"real"}, v["backends"])

	resp, err := ts.Client().Get(ts.URL + "/openapi.json")
	require.NoError(t, err)
	served, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, OpenAPI, served)
}

// TestNeuralSession: a neural session on the shared model predicts, is
// edited, forked and stepped back.
func TestNeuralSession(t *testing.T) {
	m := testmodel.Model(t, 3)
	ts, _ := start(t, Config{Model: m})
	code, v := call(t, ts, "POST", "/sessions", map[string]any{"program": prog, "call": "f([1, None, 4])",
		"sampling": map[string]any{"temperature": 0.7, "seed": 5}})
	require.Equal(t, http.StatusCreated, code, "%v", v)
	require.Equal(t, "neural", v["backend"])
	id := v["id"].(string)

	code, v = call(t, ts, "PUT", "/sessions/"+id+"/locals/data", map[string]string{"repr": "[2, 2]"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	require.Equal(t, "[2, 2]", v["state"].(map[string]any)["locals"].(map[string]any)["data"])
	code, v = call(t, ts, "PUT", "/sessions/"+id+"/locals/nope", map[string]string{"repr": "1"})
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Contains(t, v["error"], `no local "nope"`)
	code, v = call(t, ts, "PUT", "/sessions/"+id+"/locals/data", map[string]string{"repr": "(1]"})
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Contains(t, v["error"], "repr")

	code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "step_into"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	code, v = call(t, ts, "POST", "/sessions/"+id+"/fork", nil)
	require.Equal(t, http.StatusCreated, code, "%v", v)
	require.Equal(t, "neural", v["backend"])
	code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "inv_step_into"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	require.Equal(t, 2.0, v["steps"]) // a random model's state: any, but one
	require.Nil(t, v["output"], "a prediction has no output")

	code, v = call(t, ts, "POST", "/sessions", map[string]any{"program": prog})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, v["error"], `debugging a whole script needs backend "real"`)
}

// TestScript: without a call, a real session debugs the whole script from
// its first line, its __main__ block run; each answer carries the output
// so far and, at the end, the exception that escaped.
func TestScript(t *testing.T) {
	ts, _ := start(t, Config{})
	src := "import sys\n\ndef inv(x):\n    print('inv', x)\n    return 1 / x\n\nif __name__ == '__main__':\n    a = inv(2)\n    print('a', a, file=sys.stderr)\n    inv(0)\n"
	code, v := call(t, ts, "POST", "/sessions", map[string]any{"program": src, "backend": "real"})
	require.Equal(t, http.StatusCreated, code, "%v", v)
	require.Equal(t, "", v["call"])
	require.Equal(t, 1.0, v["state"].(map[string]any)["line"])
	require.Equal(t, map[string]any{"stdout": "", "stderr": "", "truncated": false}, v["output"])
	id := v["id"].(string)

	code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "breakpoint:10"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	require.Equal(t, map[string]any{"stdout": "inv 2\n", "stderr": "a 0.5\n", "truncated": false}, v["output"])
	require.Equal(t, "0.5", v["state"].(map[string]any)["locals"].(map[string]any)["a"])
	require.Nil(t, v["exception"])

	code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "continue"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	require.Equal(t, true, v["finished"])
	require.Equal(t, "inv 2\ninv 0\n", v["output"].(map[string]any)["stdout"])
	require.Equal(t, map[string]any{"type": "ZeroDivisionError", "message": "division by zero", "line": 5.0}, v["exception"])
}

// TestNoExecSession: with no_exec, a session starts from the call built
// from the program's text: module code that raises does not stop it (it
// does without), an argument that is code is refused by name, and no_exec
// beside what runs the program is a bad request.
func TestNoExecSession(t *testing.T) {
	m := testmodel.Model(t, 3)
	ts, _ := start(t, Config{Model: m})
	raising := "import os\nif os.getpid():\n    raise SystemExit('module code ran')\n\n" + prog
	code, v := call(t, ts, "POST", "/sessions", map[string]any{"program": raising, "call": "f([1, None, 4])"})
	require.Equal(t, http.StatusUnprocessableEntity, code, "%v", v)
	require.Contains(t, v["error"], "module code ran")
	code, v = call(t, ts, "POST", "/sessions", map[string]any{"program": raising, "call": "f([1, None, 4])", "no_exec": true})
	require.Equal(t, http.StatusCreated, code, "%v", v)
	require.Equal(t, "[1, None, 4]", v["state"].(map[string]any)["locals"].(map[string]any)["data"])
	code, v = call(t, ts, "POST", "/sessions/"+v["id"].(string)+"/actions", map[string]string{"action": "step_into"})
	require.Equal(t, http.StatusOK, code, "%v", v)

	code, v = call(t, ts, "POST", "/sessions", map[string]any{"program": prog, "call": "f(list(range(3)))", "no_exec": true})
	require.Equal(t, http.StatusUnprocessableEntity, code, "%v", v)
	require.Contains(t, v["error"], "argument 1, list(range(3)), is not a literal")
	for _, bad := range []map[string]any{
		{"program": prog, "call": "f([1])", "no_exec": true, "backend": "real"},
		{"program": prog, "call": "f([1])", "no_exec": true, "verify_below": 0.5},
	} {
		code, v = call(t, ts, "POST", "/sessions", bad)
		require.Equal(t, http.StatusBadRequest, code, "%v", v)
		require.Contains(t, v["error"], "no_exec")
	}
}

// TestNeuralConfidence: a neural session's state says how sure the model
// was, field by field, as the Go API's Prediction gives it for the same
// model and actions; a real state says nothing of the kind. With
// verify_below 1 every unsure prediction is replaced by the real state (the
// real backend's after the same actions), which says so and keeps the
// model's; forks keep verify_below. A bad verify_below is refused.
func TestNeuralConfidence(t *testing.T) {
	ctx := context.Background()
	m := testmodel.Model(t, 8) // its step_into and step_over predict line states
	ts, _ := start(t, Config{Model: m})
	const entry = "f([1, None, 4])"
	ref, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), prog, entry)
	require.NoError(t, err)
	defer ref.Close()
	real, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), prog, entry)
	require.NoError(t, err)
	defer real.Close()

	id := create(t, ts, "neural", prog, entry)
	vid := ""
	{
		code, v := call(t, ts, "POST", "/sessions", map[string]any{"program": prog, "call": entry, "verify_below": 1})
		require.Equal(t, http.StatusCreated, code, "%v", v)
		require.Equal(t, 1.0, v["verify_below"])
		vid = v["id"].(string)
	}
	for _, a := range []string{"step_into", "step_over"} {
		action, err := ndbg.ParseAction(a)
		require.NoError(t, err)
		st, err := ref.Do(ctx, action)
		require.NoError(t, err, a)
		p, ok := ref.Prediction()
		require.True(t, ok)
		code, v := call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": a})
		require.Equal(t, http.StatusOK, code, "%s: %v", a, v)
		got := v["state"].(map[string]any)
		require.Equal(t, apiJSON(t, st), stateJSON(t, withoutPrediction(got)), a)
		conf := got["confidence"].(map[string]any)
		require.InDelta(t, p.State, conf["state"], 1e-4, a)
		require.InDelta(t, p.Line, conf["line"], 1e-4, a)
		if len(st.Locals) > 0 {
			require.Len(t, conf["locals"], len(st.Locals), a)
			for i, l := range st.Locals {
				require.InDelta(t, p.Locals[i], conf["locals"].(map[string]any)[l.Name], 1e-4, "%s: %s", a, l.Name)
			}
		}
		require.Equal(t, p.Uncertain(), got["uncertain"], a)
		require.NotContains(t, v, "verify_below")

		want, err := real.Do(ctx, action)
		require.NoError(t, err, a)
		code, v = call(t, ts, "POST", "/sessions/"+vid+"/actions", map[string]string{"action": a})
		require.Equal(t, http.StatusOK, code, "%s: %v", a, v)
		got = v["state"].(map[string]any)
		require.Equal(t, true, got["verified"], "%s: a random model is never sure: %v", a, got)
		require.Contains(t, got, "model")
		require.Equal(t, apiJSON(t, want), stateJSON(t, withoutPrediction(got)), "%s: the real state", a)
	}
	code, v := call(t, ts, "POST", "/sessions/"+vid+"/fork", nil)
	require.Equal(t, http.StatusCreated, code, "%v", v)
	require.Equal(t, 1.0, v["verify_below"])

	rid := create(t, ts, "real", prog, entry)
	code, v = call(t, ts, "POST", "/sessions/"+rid+"/actions", map[string]string{"action": "step_into"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	require.NotContains(t, v["state"], "confidence", "a real state is not a prediction")

	for _, bad := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"program": prog, "call": entry, "verify_below": 1.5}, "want a probability"},
		{map[string]any{"program": prog, "call": entry, "verify_below": -0.1}, "want a probability"},
		{map[string]any{"program": prog, "call": entry, "backend": "real", "verify_below": 0.5}, "neural backend"},
		{map[string]any{"program": prog, "call": entry, "verify_below": "high"}, "not the JSON"},
	} {
		code, v := call(t, ts, "POST", "/sessions", bad.body)
		require.Equal(t, http.StatusBadRequest, code, "%v: %v", bad.body, v)
		require.Contains(t, v["error"], bad.msg)
	}
}

// withoutPrediction is a state object without the fields that say how it
// was predicted.
func withoutPrediction(st map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range st {
		switch k {
		case "confidence", "uncertain", "cut", "verified", "model", "unverified":
		default:
			out[k] = v
		}
	}
	return out
}

// TestRefusals: each limit and each kind of bad request gets its status
// and a JSON error saying what and why.
func TestRefusals(t *testing.T) {
	ts, _ := start(t, Config{Limits: Limits{MaxSessions: 2, MaxBodyBytes: 4096, MaxProgramBytes: 1024}})
	id := create(t, ts, "real", prog, "f([1, 4])")
	huge := strings.Repeat("x", 8000)
	for _, c := range []struct {
		method, path string
		body         any
		code         int
		msg          string
	}{
		{"POST", "/sessions", "{", 400, "not the JSON"},
		{"POST", "/sessions", "", 400, "empty"},
		{"POST", "/sessions", "[1]", 400, "not the JSON"},
		{"POST", "/sessions", `{"program": "x"} {}`, 400, "more data"},
		{"POST", "/sessions", `{"program": "x", "cal": "f()"}`, 400, `unknown field "cal"`},
		{"POST", "/sessions", `{"program": 3}`, 400, "not the JSON"},
		{"POST", "/sessions", `{"program": "` + huge + `"}`, 413, "4096 bytes"},
		{"POST", "/sessions", map[string]any{"program": strings.Repeat("#\n", 600), "call": "f()"}, 413, "1024"},
		{"POST", "/sessions", map[string]any{"call": "f()"}, 400, `"program"`},
		{"POST", "/sessions", map[string]any{"program": prog, "call": "f()", "backend": "neural"}, 400, `backend "neural" is not offered here (have real)`},
		{"POST", "/sessions", map[string]any{"program": prog, "call": "f()", "sampling": map[string]any{}}, 400, "sampling"},
		{"POST", "/sessions", map[string]any{"program": prog, "call": "os.system('x')"}, 422, "not a call of a top-level function"},
		{"POST", "/sessions", map[string]any{"program": "def f(:\n", "call": "f()"}, 422, "starting the session"},
		{"POST", "/sessions", map[string]any{"program": prog, "call": "g()"}, 422, "starting the session"},
		{"POST", "/sessions/" + id + "/actions", map[string]string{"action": "jump"}, 400, `unknown action "jump"`},
		{"POST", "/sessions/" + id + "/actions", map[string]string{"action": "breakpoint:x"}, 400, "bad line"},
		{"POST", "/sessions/" + id + "/actions", map[string]string{"action": "breakpoint"}, 422, "exactly one line"},
		{"POST", "/sessions/" + id + "/actions", map[string]string{"action": "breakpoint:6"}, 422, "not a code line"},
		{"POST", "/sessions/" + id + "/actions", map[string]string{"action": "inv_step_into"}, 409, "first state"},
		{"POST", "/sessions/" + id + "/actions", "{}", 400, "unknown action"},
		{"PUT", "/sessions/" + id + "/breakpoints/0", nil, 400, "1 or more"},
		{"PUT", "/sessions/" + id + "/breakpoints/six", nil, 400, "line number"},
		{"PUT", "/sessions/" + id + "/breakpoints/6", nil, 422, "not a code line"},
		{"PUT", "/sessions/" + id + "/locals/data", "{}", 400, `"repr"`},
		{"PATCH", "/sessions/" + id, nil, 405, "not allowed"},
		{"GET", "/nowhere", nil, 404, "no route"},
	} {
		code, v := call(t, ts, c.method, c.path, c.body)
		require.Equal(t, c.code, code, "%s %s %v: %v", c.method, c.path, c.body, v)
		require.Contains(t, v["error"], c.msg, "%s %s", c.method, c.path)
	}
	// Unknown sessions, on every route that takes one.
	svc, _ := New(Config{})
	defer svc.Close()
	for _, r := range svc.routes() {
		if !strings.Contains(r.path, "{id}") {
			continue
		}
		path := strings.NewReplacer("{id}", "0123456789abcdef", "{name}", "x", "{line}", "3").Replace(r.path)
		code, v := call(t, ts, r.method, path, `{"action": "step_into", "repr": "1"}`)
		require.Equal(t, http.StatusNotFound, code, "%s %s", r.method, path)
		require.Contains(t, v["error"], `no session "0123456789abcdef"`)
	}
	// The session limit, and a slot freed by a delete.
	create(t, ts, "real", prog, "f([1, 4])")
	code, v := call(t, ts, "POST", "/sessions", map[string]any{"program": prog, "call": "f([1])"})
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Contains(t, v["error"], "2 live sessions")
	code, v = call(t, ts, "POST", "/sessions/"+id+"/fork", nil)
	require.Equal(t, http.StatusTooManyRequests, code, "%v", v)
	code, _ = call(t, ts, "DELETE", "/sessions/"+id, nil)
	require.Equal(t, http.StatusNoContent, code)
	create(t, ts, "real", prog, "f([1, 4])")
}

// TestRequestTimeout: a request past its deadline is answered 503 and
// leaves no session behind; a request waiting for a busy session gives up
// at its deadline too.
func TestRequestTimeout(t *testing.T) {
	ts, _ := start(t, Config{Limits: Limits{RequestTimeout: 300 * time.Millisecond}})
	// The module code sleeps: a real start runs it.
	code, v := call(t, ts, "POST", "/sessions", map[string]any{"program": sleepy + "\nf(3)\n", "call": "f(3)", "backend": "real"})
	require.Equal(t, http.StatusServiceUnavailable, code, "%v", v)
	require.Contains(t, v["error"], "300ms per request")
	_, v = call(t, ts, "GET", "/health", nil)
	require.Equal(t, 0.0, v["sessions"])

	ts, svc := start(t, Config{Limits: Limits{RequestTimeout: 2 * time.Second}})
	id := create(t, ts, "real", prog, "f([1])")
	release, held := make(chan struct{}), make(chan error, 1)
	go func() { // another request holds the session
		held <- svc.m.Use(context.Background(), id, "", func(context.Context, *sessions.Session) error { <-release; return nil })
	}()
	require.Eventually(t, func() bool { return svc.m.InFlight() == 1 }, 10*time.Second, 5*time.Millisecond)
	code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "step_into"})
	close(release)
	require.NoError(t, <-held)
	require.Equal(t, http.StatusServiceUnavailable, code, "%v", v)
	require.Contains(t, v["error"], "another request is using it")
}

// TestIdleExpiry: a session unused for the idle timeout is closed.
func TestIdleExpiry(t *testing.T) {
	ts, _ := start(t, Config{Limits: Limits{IdleTimeout: 100 * time.Millisecond}})
	id := create(t, ts, "real", prog, "f([1])")
	require.Eventually(t, func() bool {
		_, v := call(t, ts, "GET", "/health", nil)
		return v["sessions"] == 0.0
	}, 5*time.Second, 50*time.Millisecond)
	code, v := call(t, ts, "GET", "/sessions/"+id, nil)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, v["error"], "expired after 100ms idle")
}

// shutdownServer serves a new service on loopback for a shutdown test;
// cancel begins the shutdown, now ends its grace, served receives what
// Serve returned.
type shutdownServer struct {
	svc         *Service
	url         string
	client      *http.Client
	transport   *http.Transport
	cancel, now context.CancelFunc
	served      chan error
}

func serveForShutdown(t *testing.T, grace time.Duration) *shutdownServer {
	t.Helper()
	svc, err := New(Config{Token: testToken, Trace: trace.Limits{Timeout: time.Minute}})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	now, stopNow := context.WithCancel(context.Background())
	s := &shutdownServer{svc: svc, url: "http://" + ln.Addr().String(), transport: &http.Transport{},
		cancel: cancel, now: stopNow, served: make(chan error, 1)}
	s.client = &http.Client{Transport: bearer{testToken, s.transport}}
	go func() { s.served <- svc.Serve(ctx, ln, grace, now, nil) }()
	t.Cleanup(func() { cancel(); stopNow(); s.transport.CloseIdleConnections(); svc.Close() })
	return s
}

// answer is what a client got.
type answer struct {
	code int
	body string
	err  error
}

// post sends a request in the background; its answer comes on the
// channel.
func (s *shutdownServer) post(path, body string) chan answer {
	got := make(chan answer, 1)
	go func() {
		resp, err := s.client.Post(s.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			got <- answer{err: err}
			return
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{resp.StatusCode, string(data), err}
	}()
	return got
}

// sleeping starts a session whose program sleeps secs seconds before its
// call, and waits until the request is being served.
func (s *shutdownServer) sleeping(t *testing.T, secs float64) chan answer {
	t.Helper()
	// The sleep is in the module code, which a start runs: the live real
	// backend stops at the entry's call, before f's body.
	got := s.post("/sessions", fmt.Sprintf(`{"program": %q, "call": "f(0)", "backend": "real"}`, sleepy+fmt.Sprintf("\nf(%g)\n", secs)))
	require.Eventually(t, func() bool { return s.svc.m.InFlight() == 1 }, 10*time.Second, 5*time.Millisecond)
	return got
}

// TestShutdownFinishesInFlight: cancelling Serve's context (what SIGTERM
// does in `ndbg serve`) while a request runs lets it finish, answers new
// requests 503 meanwhile, closes the listener, and leaves no goroutine
// behind.
func TestShutdownFinishesInFlight(t *testing.T) {
	before := runtime.NumGoroutine()
	s := serveForShutdown(t, 20*time.Second)
	got := s.sleeping(t, 1)
	s.cancel()
	require.Eventually(t, s.svc.m.Draining, 10*time.Second, 5*time.Millisecond)
	fresh := &http.Client{Transport: bearer{testToken, &http.Transport{DisableKeepAlives: true}}}
	resp, err := fresh.Get(s.url + "/health") // a new request while the first one finishes
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), "shutting down")
	a := <-got
	require.NoError(t, a.err)
	require.Equal(t, http.StatusCreated, a.code, a.body)
	require.NoError(t, <-s.served)
	_, err = s.client.Get(s.url + "/health")
	require.Error(t, err, "the listener is closed")
	s.transport.CloseIdleConnections()
	s.svc.Close()
	for i := 0; runtime.NumGoroutine() > before; i++ { // not require.Eventually: it runs a goroutine of its own
		require.Less(t, i, 500, "goroutines: %d before, %d after", before, runtime.NumGoroutine())
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShutdownStopsAfterGrace: a request still running when the grace ends
// is stopped and answered 503 (the server is shutting down), not cut off
// with its connection (issue 28: the client saw a dropped connection), and
// Serve says that work was stopped.
func TestShutdownStopsAfterGrace(t *testing.T) {
	s := serveForShutdown(t, 200*time.Millisecond)
	got := s.sleeping(t, 50)
	s.cancel()
	a := <-got
	require.NoError(t, a.err, "the client gets an answer, not a dropped connection")
	require.Equal(t, http.StatusServiceUnavailable, a.code, a.body)
	require.Contains(t, a.body, "the server is shutting down")
	require.ErrorContains(t, <-s.served, "stopped")
}

// TestShutdownSecondSignal: a second signal (now) during a long grace stops
// the request in flight at once, answered 503, instead of waiting out the
// grace (issue 28: shutdown waited the full 30 s even on a second Ctrl-C).
func TestShutdownSecondSignal(t *testing.T) {
	s := serveForShutdown(t, time.Hour)
	got := s.sleeping(t, 50)
	s.cancel()
	require.Eventually(t, s.svc.m.Draining, 10*time.Second, 5*time.Millisecond)
	s.now()
	a := <-got // within the test's own timeout, not the hour's grace
	require.NoError(t, a.err)
	require.Equal(t, http.StatusServiceUnavailable, a.code, a.body)
	require.Contains(t, a.body, "the server is shutting down")
	require.Error(t, <-s.served)
}

// TestConfigErrors: a backend the service cannot offer is refused.
func TestConfigErrors(t *testing.T) {
	_, err := New(Config{Backends: []string{"neural"}})
	require.ErrorContains(t, err, `backend "neural" is not available (have real; neural and cwm need a model)`)
	_, err = New(Config{Backends: []string{"pdb"}})
	require.ErrorContains(t, err, `backend "pdb"`)
}

// TestConcurrentRequestsOnOneSession: requests on one session are
// serialised, so 16 clients stepping at once take 16 steps, each answered
// with a state, and the history is the Go API's 16 steps into.
func TestConcurrentRequestsOnOneSession(t *testing.T) {
	ctx := context.Background()
	ts, _ := start(t, Config{})
	id := create(t, ts, "real", prog, "f([1, None, 4])")
	codes := make(chan int, 16)
	for range 16 {
		go func() {
			resp, err := ts.Client().Post(ts.URL+"/sessions/"+id+"/actions", "application/json", strings.NewReader(`{"action": "step_into"}`))
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range 16 {
		require.Equal(t, http.StatusOK, <-codes)
	}
	ref, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), prog, "f([1, None, 4])")
	require.NoError(t, err)
	defer ref.Close()
	_, v := call(t, ts, "GET", "/sessions/"+id+"/history", nil)
	steps := v["steps"].([]any)
	require.Len(t, steps, 16)
	for i, h := range steps {
		want, err := ref.StepInto(ctx)
		require.NoError(t, err)
		require.JSONEq(t, apiJSON(t, want), stateJSON(t, h.(map[string]any)["state"]), "step %d", i+1)
	}
}

// TestActionCutShortSaysSo: a real action that runs past its CPU time
// stops where the program is, and the answer says so ("interrupted":
// "cpu") rather than passing that state off as the action's stop.
func TestActionCutShortSaysSo(t *testing.T) {
	ts, _ := start(t, Config{Trace: trace.Limits{Timeout: time.Second}})
	id := create(t, ts, "real", "def f(n):\n    while True:\n        n += 1\n    return n\n", "f(1)")
	code, v := call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "step_return"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	require.Equal(t, "cpu", v["interrupted"], "%v", v)
	id = create(t, ts, "real", prog, "f([1])")
	code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "step_return"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	require.NotContains(t, v, "interrupted")
}

// TestBodyNotUTF8: a body with a byte that is not UTF-8, or a lone
// surrogate escape, is refused (400, saying where), where encoding/json
// would have run the program with U+FFFD in their place; a surrogate
// pair, U+FFFD itself and an escaped backslash before "u" pass.
func TestBodyNotUTF8(t *testing.T) {
	ts, _ := start(t, Config{})
	for body, want := range map[string]string{
		"{\"program\": \"def f(x):\\n    s = '\xff'\\n    return s\\n\", \"call\": \"f(1)\", \"backend\": \"real\"}": "(byte 34) holds a byte that is not UTF-8",
		`{"program": "def f(x):\n    s = '\ud800'\n    return s\n", "call": "f(1)", "backend": "real"}`:              `a \uD800 escape without its low surrogate`,
		`{"program": "def f(x):\n    s = '\udc00'\n    return s\n", "call": "f(1)", "backend": "real"}`:              `a \uDC00 escape without its high surrogate`,
	} {
		code, v := call(t, ts, "POST", "/sessions", body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %v", body, v)
		require.Contains(t, v["error"], want, body)
	}
	for _, lit := range []string{`\ud83d\ude00`, `\ufffd`, "\uFFFD", `\\ud800`} {
		body := `{"program": "def f(x):\n    s = '` + lit + `'\n    return s\n", "call": "f(1)", "backend": "real"}`
		code, v := call(t, ts, "POST", "/sessions", body)
		require.Equal(t, http.StatusCreated, code, "%s: %v", body, v)
	}
}
