package dap

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	godap "github.com/google/go-dap"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/internal/testsupport/victim"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// client drives a Serve in the same process over pipes, as an editor would.
type client struct {
	t    *testing.T
	w    io.WriteCloser
	r    *bufio.Reader
	out  *io.PipeReader // r's source, closed with an error when the server stays silent
	seq  int
	done chan error
}

func newClient(t *testing.T) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, w: inW, r: bufio.NewReader(outR), out: outR, done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), inR, outW, Config{})
		outW.Close()
		c.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // let a last write finish
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			t.Error("the server did not end when its input closed")
		}
	})
	return c
}

// raw sends bytes as they are.
func (c *client) raw(b string) {
	c.t.Helper()
	_, err := io.WriteString(c.w, b)
	require.NoError(c.t, err)
}

// send sends a request with command and arguments and returns its seq.
func (c *client) send(command string, args any) int {
	c.t.Helper()
	c.seq++
	m := map[string]any{"seq": c.seq, "type": "request", "command": command}
	if args != nil {
		m["arguments"] = args
	}
	b, err := json.Marshal(m)
	require.NoError(c.t, err)
	c.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(b), b))
	return c.seq
}

// silence is how long next waits for a message before the test fails
// (a server that never answers fails its test, not the package's timeout).
const silence = 2 * time.Minute

// next reads the next message.
func (c *client) next() godap.Message {
	c.t.Helper()
	timer := time.AfterFunc(silence, func() {
		c.out.CloseWithError(fmt.Errorf("no message from the server in %v", silence))
	})
	defer timer.Stop()
	m, err := godap.ReadProtocolMessage(c.r)
	require.NoError(c.t, err)
	return m
}

// response reads up to the response to request seq, collecting the
// events before it; it fails the test unless success is as wanted.
func (c *client) response(seq int, success bool) (godap.ResponseMessage, []godap.EventMessage) {
	c.t.Helper()
	var events []godap.EventMessage
	for {
		switch m := c.next().(type) {
		case godap.EventMessage:
			events = append(events, m)
		case godap.ResponseMessage:
			r := m.GetResponse()
			require.Equal(c.t, seq, r.RequestSeq, "a response to another request: %+v", m)
			require.Equal(c.t, success, r.Success, "response %+v", m)
			if !success {
				require.NotEmpty(c.t, r.Message, "an error response must say why")
			}
			return m, events
		}
	}
}

// do sends a request and returns its successful response.
func (c *client) do(command string, args any) godap.ResponseMessage {
	c.t.Helper()
	r, _ := c.response(c.send(command, args), true)
	return r
}

// refuse sends a request and returns the message of its error response.
func (c *client) refuse(command string, args any) string {
	c.t.Helper()
	r, _ := c.response(c.send(command, args), false)
	return r.GetResponse().Message
}

// event reads up to the next event of the given name.
func (c *client) event(name string) godap.EventMessage {
	c.t.Helper()
	for {
		if e, ok := c.next().(godap.EventMessage); ok && e.GetEvent().Event == name {
			return e
		}
	}
}

// stop is where the debugger stopped: the top frame's line and the
// current scope's variables.
type stop struct {
	line   int
	event  string
	locals map[string]string
}

// waitStop reads the stopped event and asks for the top frame's line and
// its locals.
func (c *client) waitStop() stop {
	c.t.Helper()
	ev := c.event("stopped").(*godap.StoppedEvent)
	st := c.do("stackTrace", map[string]any{"threadId": 1}).(*godap.StackTraceResponse)
	require.NotEmpty(c.t, st.Body.StackFrames)
	vars := c.do("variables", map[string]any{"variablesReference": refLocals}).(*godap.VariablesResponse)
	locals := map[string]string{}
	for _, v := range vars.Body.Variables {
		locals[v.Name] = v.Value
	}
	return stop{line: st.Body.StackFrames[0].Line, event: ev.Body.Text, locals: locals}
}

// launchReal initializes and launches program (text) on the real backend.
func (c *client) launch(t *testing.T, text, call, backend string, stopOnEntry bool) string {
	path := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	c.do("initialize", map[string]any{"adapterID": "ndbg"})
	c.do("launch", map[string]any{"program": path, "call": call, "backend": backend, "stopOnEntry": stopOnEntry})
	c.event("initialized")
	return path
}

// meanPy is the shared mean program (testmodel.MeanProgram).
const meanPy = testmodel.MeanProgram

// TestRealSession steps through mean.py on the real backend, forwards and
// backwards, with the stops pdb makes (the real backend is checked against
// bdb in statetree; here the DAP translation is).
func TestRealSession(t *testing.T) {
	c := newClient(t)
	path := c.launch(t, meanPy, "f([3, None, 4])", "real", true)
	bp := c.do("setBreakpoints", map[string]any{"source": map[string]any{"path": path},
		"breakpoints": []map[string]any{{"line": 4}, {"line": 6}, {"line": 2, "condition": "len(xs) > 5"}}}).(*godap.SetBreakpointsResponse)
	require.Len(t, bp.Body.Breakpoints, 3)
	require.True(t, bp.Body.Breakpoints[0].Verified)
	require.False(t, bp.Body.Breakpoints[1].Verified, "line 6 is blank")
	require.Contains(t, bp.Body.Breakpoints[1].Message, "not a code line")
	require.True(t, bp.Body.Breakpoints[2].Verified, "a condition, never true here")
	c.do("configurationDone", nil)

	want := func(line int, event string, locals map[string]string) {
		t.Helper()
		got := c.waitStop()
		require.Equal(t, stop{line, event, locals}, got)
	}
	data := "[3, None, 4]"
	want(7, "call", map[string]string{"data": data})
	c.do("next", map[string]any{"threadId": 1})
	want(8, "line", map[string]string{"data": data})
	c.do("next", map[string]any{"threadId": 1})
	want(9, "line", map[string]string{"data": data, "clean": "[3, 4]"})
	c.do("stepIn", map[string]any{"threadId": 1})
	want(1, "call", map[string]string{"xs": "[3, 4]"})
	st := c.do("stackTrace", map[string]any{"threadId": 1}).(*godap.StackTraceResponse)
	require.Equal(t, []string{"mean", "f"}, []string{st.Body.StackFrames[0].Name, st.Body.StackFrames[1].Name})
	require.Equal(t, []int{1, 9}, []int{st.Body.StackFrames[0].Line, st.Body.StackFrames[1].Line}, "the caller at its call's line")
	c.do("continue", map[string]any{"threadId": 1})
	want(4, "line", map[string]string{"xs": "[3, 4]", "total": "0", "x": "3"})
	c.do("continue", map[string]any{"threadId": 1})
	want(4, "line", map[string]string{"xs": "[3, 4]", "total": "3", "x": "4"})
	c.do("stepBack", map[string]any{"threadId": 1})
	want(3, "line", map[string]string{"xs": "[3, 4]", "total": "3", "x": "3"})
	c.do("reverseContinue", map[string]any{"threadId": 1})
	want(4, "line", map[string]string{"xs": "[3, 4]", "total": "0", "x": "3"})
	c.do("setBreakpoints", map[string]any{"source": map[string]any{"path": path}, "breakpoints": []any{}})
	c.do("stepOut", map[string]any{"threadId": 1})
	want(5, "return", map[string]string{"xs": "[3, 4]", "total": "7", "x": "4", "__return__": "3.5"})
	c.do("next", map[string]any{"threadId": 1})
	want(10, "line", map[string]string{"data": data, "clean": "[3, 4]", "m": "3.5"})

	ev := c.do("evaluate", map[string]any{"expression": "m"}).(*godap.EvaluateResponse)
	require.Equal(t, "3.5", ev.Body.Result)
	ev = c.do("evaluate", map[string]any{"expression": "m + clean[0] * 2"}).(*godap.EvaluateResponse)
	require.Equal(t, "9.5", ev.Body.Result, "evaluated in the frame, as pdb's p")
	require.Empty(t, ev.Body.Type, "a real value, not derived from a prediction")
	require.Equal(t, "NameError: name 'nope' is not defined", c.refuse("evaluate", map[string]any{"expression": "nope"}))
	require.Equal(t, "ZeroDivisionError: float division by zero", c.refuse("evaluate", map[string]any{"expression": "m / 0"}))
	require.Contains(t, c.refuse("evaluate", map[string]any{"expression": "m", "frameId": 1}), "no frame 1")
	sv := c.do("setVariable", map[string]any{"variablesReference": refLocals, "name": "m", "value": "1"}).(*godap.SetVariableResponse)
	require.Equal(t, "1", sv.Body.Value)
	ev = c.do("evaluate", map[string]any{"expression": "m * 10"}).(*godap.EvaluateResponse)
	require.Equal(t, "10", ev.Body.Result, "the live program's m changed")

	c.do("continue", map[string]any{"threadId": 1})
	end := c.event("stopped").(*godap.StoppedEvent) // at the end: stopped, not terminated, so it can step back
	require.Equal(t, "end", end.Body.Reason)
	c.do("stepBack", map[string]any{"threadId": 1}) // the real backend steps back from the end
	want(10, "return", map[string]string{"data": data, "clean": "[3, 4]", "m": "1", "__return__": "1"})
	c.do("continue", map[string]any{"threadId": 1})
	c.event("stopped")
	c.do("next", map[string]any{"threadId": 1}) // going on from the end ends the session
	exited := c.event("exited").(*godap.ExitedEvent)
	require.Equal(t, 0, exited.Body.ExitCode)
	c.event("terminated")
	c.do("disconnect", nil)
	require.NoError(t, <-c.done)
	c.done <- nil // for the cleanup
}

// TestNeuralStepBack: on the neural backend stepBack returns to the stop
// shown before (the session's history, not a new prediction: a random
// model sampling hot would predict another), next after it to the stop
// shown after, and after the program finished stepBack goes back into it
// as on the real backend.
func TestNeuralStepBack(t *testing.T) {
	random := t.TempDir()
	testmodel.WriteDir(t, random, 0)
	c := newClient(t)
	path := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(path, []byte(meanPy), 0o644))
	c.do("initialize", map[string]any{"adapterID": "ndbg"})
	c.do("launch", map[string]any{"program": path, "call": "f([3, None, 4])", "model": random, "temperature": 1.5, "stopOnEntry": true})
	c.event("initialized")
	c.do("configurationDone", nil)
	entry := c.waitStop()
	c.do("next", map[string]any{"threadId": 1})
	first := c.waitStop()
	c.do("stepBack", map[string]any{"threadId": 1})
	require.Equal(t, entry, c.waitStop(), "back to the entry")
	require.Contains(t, c.refuse("stepBack", map[string]any{"threadId": 1}), "first state")
	c.do("next", map[string]any{"threadId": 1})
	require.Equal(t, first, c.waitStop(), "the stop shown before")
	c.do("stepIn", map[string]any{"threadId": 1})
	into := c.waitStop()
	if into.event != "return" {
		c.do("stepBack", map[string]any{"threadId": 1})
		require.Equal(t, first, c.waitStop())
	}
	c.do("continue", map[string]any{"threadId": 1}) // no breakpoint: to the end
	end := c.event("stopped").(*godap.StoppedEvent) // stopped there, so it can step back
	require.Equal(t, "end", end.Body.Reason)
	c.do("stepBack", map[string]any{"threadId": 1})
	back := c.waitStop()
	require.Contains(t, []string{"return", "exception"}, back.event, "the entry's last stop")
}

// TestEvaluateSandboxed: evaluate runs in the sandbox every program runs
// in (docs/security.md, package pyeval): an expression that runs a shell
// or writes outside the scratch space does nothing to the host.
func TestEvaluateSandboxed(t *testing.T) {
	dir, file := victim.Dir(t)
	c := newClient(t)
	c.launch(t, meanPy, "f([3, None, 4])", "real", true)
	c.do("configurationDone", nil)
	c.waitStop()
	ev := c.do("evaluate", map[string]any{"expression": fmt.Sprintf("__import__('os').system('touch %s/system; rm -f %s')", dir, file)}).(*godap.EvaluateResponse)
	require.NotEqual(t, "0", ev.Body.Result, "no shell starts")
	require.Contains(t, c.refuse("evaluate", map[string]any{"expression": fmt.Sprintf("open(%q, 'w').write('pwned')", file)}), "No such file or directory")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "keep", string(data))
	require.NoFileExists(t, filepath.Join(dir, "system"))
}

// TestBadRequests: malformed and out-of-order requests get error responses
// and the session goes on.
func TestBadRequests(t *testing.T) {
	c := newClient(t)
	require.Contains(t, c.refuse("launch", map[string]any{"program": "x.py", "call": "f()"}), "before initialize")
	c.raw("Content-Length: 9\r\n\r\n{not json")
	r, _ := c.response(0, false)
	require.Contains(t, r.GetResponse().Message, "malformed")
	c.raw("Content-Length: 46\r\n\r\n{\"seq\":5,\"type\":\"event\",\"event\":\"stopped\"}    ")
	r, _ = c.response(5, false)
	require.Contains(t, r.GetResponse().Message, "only requests")
	c.do("initialize", nil)
	require.Contains(t, c.refuse("initialize", nil), "already")
	require.Contains(t, c.refuse("frobnicate", nil), `unknown request "frobnicate"`)
	require.Contains(t, c.refuse("next", map[string]any{"threadId": 1}), "before launch")
	require.Contains(t, c.refuse("stackTrace", map[string]any{"threadId": 1}), "before launch")
	require.Contains(t, c.refuse("launch", nil), "needs arguments")
	require.Contains(t, c.refuse("launch", map[string]any{"program": 3}), "launch arguments")
	require.Contains(t, c.refuse("launch", map[string]any{"call": "f()"}), "program is required")
	require.Contains(t, c.refuse("launch", map[string]any{"program": "/nonexistent/x.py"}), "reading the program: open /nonexistent/x.py: no such file",
		"a missing file says so before what it is for")
	require.Contains(t, c.refuse("launch", map[string]any{"program": "x.py", "call": "f()", "backend": "gdb"}), `backend "gdb"`)
	require.Contains(t, c.refuse("launch", map[string]any{"program": "x.py", "call": "f()", "device": "tpu"}), `device "tpu": want cpu, cuda, auto`)
	require.Contains(t, c.refuse("launch", map[string]any{"program": "/nonexistent/x.py", "call": "f()", "backend": "real"}), "reading the program")
	path := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(path, []byte(meanPy), 0o644))
	require.Contains(t, c.refuse("launch", map[string]any{"program": path}), `a whole script (no call) needs backend "real"`)
	require.Contains(t, c.refuse("launch", map[string]any{"program": path, "call": "nope(", "backend": "real"}), "not a call")
	require.Contains(t, c.refuse("launch", map[string]any{"program": path, "call": "g(1)", "backend": "real"}), "g")

	c.do("launch", map[string]any{"program": path, "call": "f([1])", "backend": "real"})
	c.event("initialized")
	require.Contains(t, c.refuse("launch", map[string]any{"program": path, "call": "f([1])"}), "already launched")
	require.Contains(t, c.refuse("next", map[string]any{"threadId": 1}), "before configurationDone")
	other := c.do("setBreakpoints", map[string]any{"source": map[string]any{"path": "/elsewhere.py"}, "lines": []int{2}}).(*godap.SetBreakpointsResponse)
	require.False(t, other.Body.Breakpoints[0].Verified)
	c.do("configurationDone", nil)
	c.event("stopped") // no breakpoints: it runs to the end, and stops there
	require.Contains(t, c.refuse("configurationDone", nil), "already")
	st := c.do("stackTrace", map[string]any{"threadId": 1}).(*godap.StackTraceResponse)
	require.Equal(t, "(the program finished)", st.Body.StackFrames[0].Name)
	c.do("pause", map[string]any{"threadId": 1}) // nothing runs: nothing to stop
	c.do("reverseContinue", map[string]any{"threadId": 1})
	c.event("stopped")
	require.Contains(t, c.refuse("stepBack", map[string]any{"threadId": 1}), "first state")
	require.Contains(t, c.refuse("scopes", map[string]any{"frameId": 7}), "no frame 7")
	require.Contains(t, c.refuse("variables", map[string]any{"variablesReference": 99}), "reference 99")
	require.Contains(t, c.refuse("setVariable", map[string]any{"variablesReference": refReal, "name": "data", "value": "1"}), "current frame's locals")
	c.do("threads", nil)
}

// TestBrokenFrame: a header that is not DAP's ends the session with an
// error (the next message's start is unknown), without a panic.
func TestBrokenFrame(t *testing.T) {
	for _, in := range []string{"hello\r\n\r\n", "Content-Length: x\r\n\r\n", "Content-Length: 99\r\n\r\n{}", "Content-Length: 3\r\n\n\n"} {
		var out strings.Builder
		err := Serve(context.Background(), strings.NewReader(in), &out, Config{})
		require.Error(t, err, "%q", in)
	}
	require.NoError(t, Serve(context.Background(), strings.NewReader(""), io.Discard, Config{}))
}

// FuzzServe feeds arbitrary bytes to the message reader and the request
// handlers: whatever comes, Serve returns (no panic, no hang), and all it
// writes is well-framed DAP.
func FuzzServe(f *testing.F) {
	frame := func(s string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(s), s) }
	f.Add(frame(`{"seq":1,"type":"request","command":"initialize"}`) + frame(`{"seq":2,"type":"request","command":"next","arguments":{"threadId":1}}`))
	f.Add(frame(`{"seq":1,"type":"request","command":"initialize"}`) + frame(`{"seq":2,"type":"request","command":"launch","arguments":{"program":"/nonexistent.py","call":"f()","backend":"real"}}`))
	f.Add(frame(`{"seq":1,"type":"request","command":"setBreakpoints","arguments":{"source":{"path":3}}}`))
	f.Add(frame(`{"seq":"x"}`) + frame(`[]`) + frame(`null`))
	f.Add("Content-Length: 5\r\n\r\n{}")
	f.Fuzz(func(t *testing.T, in string) {
		if strings.Contains(in, `"launch"`) && !strings.Contains(in, "/nonexistent") {
			t.Skip("a launch could run an arbitrary file") // the seeds cover launch's checks
		}
		var out strings.Builder
		_ = Serve(context.Background(), strings.NewReader(in), &out, Config{})
		r := bufio.NewReader(strings.NewReader(out.String()))
		for {
			_, err := godap.ReadProtocolMessage(r)
			if err == io.EOF {
				break
			}
			require.NoError(t, err, "the server wrote a message a client cannot read")
		}
	})
}

// untilStopped reads up to the next stopped event and returns it with the
// console output before it.
func (c *client) untilStopped() (*godap.StoppedEvent, string) {
	c.t.Helper()
	var out strings.Builder
	for {
		switch m := c.next().(type) {
		case *godap.OutputEvent:
			out.WriteString(m.Body.Output)
		case *godap.StoppedEvent:
			return m, out.String()
		case *godap.TerminatedEvent:
			c.t.Fatalf("the program ended; console: %s", out.String())
		}
	}
}

// TestConfidence: on the neural backend a predicted stop says how sure the
// model was, in the stopped event's description, the scope's name and each
// variable's type (the value stays the repr), as the Go API's Prediction
// gives it for the same model and action; the entry (run for real) says
// nothing of the kind. A value the model cut marks the stop uncertain; the
// predicted end says how sure it was. With verifyBelow 1 an unsure
// prediction is replaced by the real state (the real backend's after the
// same action), and the stop says so. A bad verifyBelow is refused.
func TestConfidence(t *testing.T) {
	ctx := context.Background()
	// A random model: from the entry, stepIn predicts an exception whose
	// value it writes without end (cut: uncertain); continue, with no
	// breakpoint, the end.
	random := t.TempDir()
	testmodel.WriteDir(t, random, 0)
	launch := func(c *client, model string, args map[string]any) {
		path := filepath.Join(t.TempDir(), "prog.py")
		require.NoError(t, os.WriteFile(path, []byte(meanPy), 0o644))
		c.do("initialize", map[string]any{"adapterID": "ndbg"})
		args["program"], args["call"], args["model"], args["stopOnEntry"] = path, "f([3, None, 4])", model, true
		c.do("launch", args)
		c.event("initialized")
		c.do("configurationDone", nil)
		ev, _ := c.untilStopped()
		require.NotContains(t, ev.Body.Description, "sure", "the entry is the real call")
	}
	vars := func(c *client) []godap.Variable {
		return c.do("variables", map[string]any{"variablesReference": refLocals}).(*godap.VariablesResponse).Body.Variables
	}
	scope := func(c *client) string {
		return c.do("scopes", map[string]any{"frameId": 0}).(*godap.ScopesResponse).Body.Scopes[0].Name
	}
	// predict is what the Go API predicts for action k from the entry.
	predict := func(model string, k dsl.ActionKind) (*ndbg.State, ndbg.Prediction) {
		m, err := ndbg.Open(ctx, ndbg.Options{Dir: model})
		if model == "" && errors.Is(err, ndbg.ErrNoDefaultModel) {
			t.Skip("no embedded default model")
		}
		require.NoError(t, err)
		defer m.Close()
		ref, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), meanPy, "f([3, None, 4])")
		require.NoError(t, err)
		defer ref.Close()
		st, err := ref.Do(ctx, ndbg.Action{Kind: k})
		p, ok := ref.Prediction()
		require.True(t, ok)
		if errors.Is(err, ndbg.ErrFinished) {
			return nil, p
		}
		require.NoError(t, err)
		return &st, p
	}

	st, p := predict(random, dsl.StepInto)
	require.True(t, st != nil && st.Event == dsl.Exception && p.Uncertain(), "the random model changed: %+v %+v", st, p)
	raisedAt := st.Line
	c := newClient(t)
	launch(c, random, map[string]any{"backend": "neural"})
	require.Equal(t, "Locals", scope(c))
	for _, v := range vars(c) {
		require.Empty(t, v.Type, v.Name)
	}
	c.do("stepIn", map[string]any{"threadId": 1})
	ev, out := c.untilStopped()
	require.Equal(t, "exception", ev.Body.Reason)
	require.Contains(t, ev.Body.Description, "predicted, 0% sure; uncertain: the model ran past any real value in value, cut there")
	require.Contains(t, out, "uncertain")
	require.Equal(t, "Locals (predicted, uncertain)", scope(c))
	got := vars(c)
	require.Equal(t, "__exception__", got[len(got)-1].Name)
	require.Equal(t, st.Value, got[len(got)-1].Value)
	require.Equal(t, "predicted, uncertain: cut where the model ran past any real value", got[len(got)-1].Type)

	st, p = predict(random, dsl.Continue) // no breakpoint: the end
	require.Nil(t, st)
	c = newClient(t)
	launch(c, random, map[string]any{"backend": "neural"})
	c.do("continue", map[string]any{"threadId": 1})
	var console strings.Builder
	for {
		m := c.next()
		if o, ok := m.(*godap.OutputEvent); ok {
			console.WriteString(o.Body.Output)
		}
		if st, ok := m.(*godap.StoppedEvent); ok && st.Body.Reason == "end" {
			break // the end: stopped there, to step back from
		}
	}
	require.Contains(t, console.String(), fmt.Sprintf("the program finished (predicted, %s sure)", ndbg.Percent(p.State)))

	real, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), meanPy, "f([3, None, 4])")
	require.NoError(t, err)
	defer real.Close()
	want, err := real.StepInto(ctx)
	require.NoError(t, err)
	v := newClient(t)
	launch(v, random, map[string]any{"backend": "neural", "verifyBelow": 1})
	v.do("stepIn", map[string]any{"threadId": 1})
	ev, out = v.untilStopped()
	require.Contains(t, ev.Body.Description, fmt.Sprintf("verified: the model was 0%% sure, so this is the real state (it predicted line %d (exception)", raisedAt))
	require.Contains(t, out, "verified")
	require.Equal(t, "Locals (real: verified)", scope(v))
	got = vars(v)
	require.Len(t, got, len(want.Locals))
	for i, l := range want.Locals {
		require.Equal(t, [3]string{l.Name, l.Repr, "real (verified)"}, [3]string{got[i].Name, got[i].Value, got[i].Type})
	}
	require.Equal(t, want.Line, v.do("stackTrace", map[string]any{"threadId": 1}).(*godap.StackTraceResponse).Body.StackFrames[0].Line)

	b := newClient(t)
	b.do("initialize", nil)
	require.Contains(t, b.refuse("launch", map[string]any{"program": "x.py", "call": "f()", "verifyBelow": 1.5}), "want a probability")
	require.Contains(t, b.refuse("launch", map[string]any{"program": "x.py", "call": "f()", "verifyBelow": -1}), "want a probability")
	require.Contains(t, b.refuse("launch", map[string]any{"program": "x.py", "call": "f()", "backend": "real", "verifyBelow": 0.5}), "not the real backend")
	require.Contains(t, b.refuse("launch", map[string]any{"program": "x.py", "call": "f()", "backend": "real", "noExec": true}), "noExec runs nothing")
	require.Contains(t, b.refuse("launch", map[string]any{"program": "x.py", "call": "f()", "backend": "compare", "noExec": true}), "noExec runs nothing")

	// noExec: the entry's call is built from the program's text, as the
	// real run shows it.
	n := newClient(t)
	launch(n, random, map[string]any{"backend": "neural", "noExec": true})
	got = vars(n)
	require.Len(t, got, 1)
	require.Equal(t, [2]string{"data", "[3, None, 4]"}, [2]string{got[0].Name, got[0].Value})

	// The default model predicts locals: each says how sure it was.
	st, p = predict("", dsl.StepOver)
	require.NotNil(t, st)
	require.NotEmpty(t, st.Locals)
	c = newClient(t)
	launch(c, "", map[string]any{"backend": "neural"})
	c.do("next", map[string]any{"threadId": 1})
	ev, _ = c.untilStopped()
	require.Contains(t, ev.Body.Description, fmt.Sprintf("predicted, %s sure", ndbg.Percent(p.State)))
	require.Equal(t, fmt.Sprintf("Locals (predicted, %s sure)", ndbg.Percent(p.State)), scope(c))
	got = vars(c)
	require.Len(t, got, len(variables(*st)))
	for i, l := range st.Locals {
		require.Equal(t, [3]string{l.Name, l.Repr, fmt.Sprintf("predicted, %s sure", ndbg.Percent(p.Locals[i]))},
			[3]string{got[i].Name, got[i].Value, got[i].Type})
	}
	// An expression over the predicted locals: Python's value of it, marked
	// as derived from the prediction. A local's repr in parentheses is
	// that repr again, where the model wrote a canonical one.
	l := st.Locals[0]
	e := c.do("evaluate", map[string]any{"expression": "(" + l.Name + ")"}).(*godap.EvaluateResponse)
	require.Equal(t, l.Repr, e.Body.Result)
	require.Equal(t, derived, e.Body.Type)
}

// TestScript debugs a whole script (no call) on the real backend: it
// starts at the module's first line, the __main__ block runs, the
// program's output comes as output events at the stop after it was
// written, and expressions are evaluated at module level.
func TestScript(t *testing.T) {
	c := newClient(t)
	path := c.launch(t, "import sys\n\ndef half(x):\n    print('half of', x)\n    return x / 2\n\nif __name__ == '__main__':\n    h = half(8)\n    print('h', h, file=sys.stderr)\n    print('done')\n", "", "real", true)
	c.do("setBreakpoints", map[string]any{"source": map[string]any{"path": path}, "breakpoints": []map[string]any{{"line": 10}}})
	c.do("configurationDone", nil)
	got := c.waitStop()
	require.Equal(t, stop{1, "line", map[string]string{}}, got)
	st := c.do("stackTrace", map[string]any{"threadId": 1}).(*godap.StackTraceResponse)
	require.Equal(t, "<module>", st.Body.StackFrames[0].Name)

	seq := c.send("continue", map[string]any{"threadId": 1})
	_, events := c.response(seq, true)
	var outs []string
	for {
		m := c.next()
		if o, ok := m.(*godap.OutputEvent); ok {
			outs = append(outs, o.Body.Category+": "+o.Body.Output)
		}
		if _, ok := m.(*godap.StoppedEvent); ok {
			break
		}
	}
	require.Empty(t, events)
	require.Equal(t, []string{"stdout: half of 8\n", "stderr: h 4.0\n"}, outs)
	ev := c.do("evaluate", map[string]any{"expression": "h * 2"}).(*godap.EvaluateResponse)
	require.Equal(t, "8.0", ev.Body.Result)
	st = c.do("stackTrace", map[string]any{"threadId": 1}).(*godap.StackTraceResponse)
	require.Equal(t, 10, st.Body.StackFrames[0].Line)

	c.do("continue", map[string]any{"threadId": 1})
	outs = nil
	for {
		m := c.next()
		if o, ok := m.(*godap.OutputEvent); ok && o.Body.Category != "console" {
			outs = append(outs, o.Body.Category+": "+o.Body.Output)
		}
		if st, ok := m.(*godap.StoppedEvent); ok && st.Body.Reason == "end" {
			break
		}
	}
	require.Equal(t, []string{"stdout: done\n"}, outs)

	n := newClient(t)
	n.do("initialize", nil)
	require.Contains(t, n.refuse("launch", map[string]any{"program": path, "backend": "neural"}), "no module-level frames")
}

// TestCutOutputIsMarked: output past trace.Limits.MaxStdout (64 KiB) ends
// its output events with ndbg.OutputCut's line, where it used to stop
// without a word.
func TestCutOutputIsMarked(t *testing.T) {
	c := newClient(t)
	path := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(path, []byte("for i in range(700):\n    print('x' * 99)\n"), 0o644))
	c.do("initialize", map[string]any{"adapterID": "ndbg"})
	c.do("launch", map[string]any{"program": path, "backend": "real"})
	var out, console strings.Builder
	for {
		m := c.next()
		if o, ok := m.(*godap.OutputEvent); ok && o.Body.Category == "console" {
			console.WriteString(o.Body.Output)
		}
		if e, ok := m.(godap.EventMessage); ok && e.GetEvent().Event == "initialized" {
			break
		}
	}
	c.do("configurationDone", nil)
	for {
		m := c.next()
		if o, ok := m.(*godap.OutputEvent); ok {
			switch o.Body.Category {
			case "stdout":
				out.WriteString(o.Body.Output)
			case "console":
				console.WriteString(o.Body.Output)
			}
		}
		if _, ok := m.(*godap.TerminatedEvent); ok {
			break
		}
		if _, ok := m.(*godap.StoppedEvent); ok { // the end, where a step back is still possible
			break
		}
	}
	kept := 64 << 10
	require.Equal(t, strings.Repeat(strings.Repeat("x", 99)+"\n", 700)[:kept]+ndbg.OutputCut("stdout", kept), out.String())
	require.NotContains(t, console.String(), "not shown", "the console said output was not shown (it is)")
}

// TestBreakpointsPauseAndEnd: on the real backend, conditional,
// hit-count and function breakpoints stop where pdb's conditional
// breakpoints and ignore counts would; pause stops an endless loop where
// it is; an escaping exception stops at the end with its frames
// (post-mortem, evaluate in them), then exits with code 1; the launch
// message names a whole script.
func TestBreakpointsPauseAndEnd(t *testing.T) {
	c := newClient(t)
	prog := "def g(n):\n    return 10 // n\n\ndef f(k):\n    acc = 0\n    for i in range(k):\n        acc += g(k - i - 1)\n    return acc\n"
	path := c.launch(t, prog, "f(4)", "real", false)
	bp := c.do("setBreakpoints", map[string]any{"source": map[string]any{"path": path},
		"breakpoints": []map[string]any{{"line": 7, "condition": "i >= 1", "hitCondition": "2"}, {"line": 5, "hitCondition": "x"}}}).(*godap.SetBreakpointsResponse)
	require.True(t, bp.Body.Breakpoints[0].Verified)
	require.False(t, bp.Body.Breakpoints[1].Verified, "a hit condition that is no count")
	fb := c.do("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "g", "condition": "n == 1"}, {"name": "nope"}}}).(*godap.SetFunctionBreakpointsResponse)
	require.True(t, fb.Body.Breakpoints[0].Verified)
	require.Equal(t, 2, fb.Body.Breakpoints[0].Line, "g's first body line")
	require.False(t, fb.Body.Breakpoints[1].Verified)
	c.do("configurationDone", nil)
	// Line 7's condition holds from i = 1 on, and its second hit that does
	// is i = 2 (hits count where the condition holds, as pdb's ignore
	// counts); then g's breakpoint at g(1).
	ev := c.event("stopped").(*godap.StoppedEvent)
	require.Equal(t, "breakpoint", ev.Body.Reason)
	e := c.do("evaluate", map[string]any{"expression": "i"}).(*godap.EvaluateResponse)
	require.Equal(t, "2", e.Body.Result, "the 2nd hit with i >= 1")
	c.do("continue", map[string]any{"threadId": 1})
	ev = c.event("stopped").(*godap.StoppedEvent)
	require.Equal(t, "function breakpoint", ev.Body.Reason)
	e = c.do("evaluate", map[string]any{"expression": "n"}).(*godap.EvaluateResponse)
	require.Equal(t, "1", e.Body.Result)
	e = c.do("evaluate", map[string]any{"expression": "acc + i", "frameId": 1}).(*godap.EvaluateResponse)
	require.Equal(t, "10", e.Body.Result, "in the caller's frame: acc = 10 // 3 + 10 // 2, i = 2")
	sc := c.do("scopes", map[string]any{"frameId": 1}).(*godap.ScopesResponse)
	require.Len(t, sc.Body.Scopes, 1, "a caller's locals")
	c.do("continue", map[string]any{"threadId": 1}) // on to g(0): ZeroDivisionError escapes
	ev = c.event("stopped").(*godap.StoppedEvent)
	require.Equal(t, "end", ev.Body.Reason)
	require.Contains(t, ev.Body.Description, "ZeroDivisionError")
	st := c.do("stackTrace", map[string]any{"threadId": 1}).(*godap.StackTraceResponse)
	require.Equal(t, []string{"g", "f"}, []string{st.Body.StackFrames[0].Name, st.Body.StackFrames[1].Name}, "post-mortem: the frames it passed")
	e = c.do("evaluate", map[string]any{"expression": "n, 10", "frameId": 0}).(*godap.EvaluateResponse)
	require.Equal(t, "(0, 10)", e.Body.Result)
	c.do("continue", map[string]any{"threadId": 1})
	require.Equal(t, 1, c.event("exited").(*godap.ExitedEvent).Body.ExitCode, "an exception escaped")
	c.do("disconnect", nil)
	require.NoError(t, <-c.done)
	c.done <- nil

	c = newClient(t)
	path = filepath.Join(t.TempDir(), "loop.py")
	require.NoError(t, os.WriteFile(path, []byte("i = 0\nwhile True:\n    i += 1\n"), 0o644))
	c.do("initialize", map[string]any{"adapterID": "ndbg"})
	c.do("launch", map[string]any{"program": path, "backend": "real"})
	out := c.event("output").(*godap.OutputEvent)
	require.Equal(t, "ndbg: debugging loop.py with the real backend\n", out.Body.Output)
	c.event("initialized")
	// The pause is sent before configurationDone's answer, while the run
	// it starts is being set up (where a pause used to be lost, and the
	// loop ran its CPU time): it stops the run at its first event.
	done := c.send("configurationDone", nil)
	pause := c.send("pause", map[string]any{"threadId": 1})
	_, events := c.response(done, true)
	_, more := c.response(pause, true)
	events = append(events, more...)
	var paused *godap.StoppedEvent
	for _, e := range events {
		if st, ok := e.(*godap.StoppedEvent); ok {
			paused = st
		}
	}
	if paused == nil {
		paused = c.event("stopped").(*godap.StoppedEvent)
	}
	require.Equal(t, "pause", paused.Body.Reason)
	e = c.do("evaluate", map[string]any{"expression": "i >= 0"}).(*godap.EvaluateResponse)
	require.Equal(t, "True", e.Body.Result)
	// A pause while the program is stopped does nothing: the next step is
	// a step, not a pause at its first event.
	c.do("pause", map[string]any{"threadId": 1})
	c.do("next", map[string]any{"threadId": 1})
	require.Equal(t, "step", c.event("stopped").(*godap.StoppedEvent).Body.Reason)
	c.do("disconnect", nil)
	require.NoError(t, <-c.done)
	c.done <- nil
}

// TestStdin: launch's stdin is the program's standard input on the real
// backend (and the compare backend's real run), line by line, then its
// end (EOFError, as a file redirected to it); a step back that runs the
// program again reads the same lines at the same reads. The neural backend
// refuses it.
func TestStdin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(path, []byte("def f():\n    a = input('a? ')\n    b = input()\n    try:\n        c = input()\n    except EOFError:\n        c = 'end'\n    return a + b + c\n"), 0o644))
	c := newClient(t)
	c.do("initialize", map[string]any{"adapterID": "ndbg"})
	c.do("launch", map[string]any{"program": path, "call": "f()", "backend": "real", "stopOnEntry": true, "stdin": "3\n4\n"})
	c.event("initialized")
	c.do("setBreakpoints", map[string]any{"source": map[string]any{"path": path}, "breakpoints": []map[string]any{{"line": 8}}})
	c.do("configurationDone", nil)
	c.waitStop()
	c.do("continue", map[string]any{"threadId": 1})
	got := c.waitStop()
	require.Equal(t, 8, got.line)
	require.Equal(t, map[string]string{"a": "'3'", "b": "'4'", "c": "'end'"}, got.locals)
	c.do("stepBack", map[string]any{"threadId": 1}) // runs the program again: the same lines
	require.Equal(t, 7, c.waitStop().line)
	c.do("continue", map[string]any{"threadId": 1})
	got = c.waitStop()
	require.Equal(t, 8, got.line)
	require.Equal(t, map[string]string{"a": "'3'", "b": "'4'", "c": "'end'"}, got.locals, "the same input again")

	cmp := newClient(t) // the compare backend's real run reads it too
	cmp.do("initialize", map[string]any{"adapterID": "ndbg"})
	cmp.do("launch", map[string]any{"program": path, "call": "f()", "backend": "compare", "stopOnEntry": true, "stdin": "3\n4\n"})
	cmp.event("initialized")
	cmp.do("configurationDone", nil)
	cmp.waitStop()

	n := newClient(t)
	n.do("initialize", nil)
	require.Contains(t, n.refuse("launch", map[string]any{"program": path, "call": "f()", "stdin": "1\n"}), "backend real or compare")
}

// TestExitCodeOfSysExit: a script that calls sys.exit ends with the exit
// code python3 would give (SystemExit's code; its text on stderr and 1
// for a text; 0 for none), as debugpy reports it, and no exception on
// stderr; another exception is 1.
func TestExitCodeOfSysExit(t *testing.T) {
	for _, c := range []struct {
		exit   string
		code   int
		stderr string
	}{{"sys.exit(4)", 4, ""}, {"sys.exit()", 0, ""}, {"sys.exit('bye')", 1, "bye\n"}, {"sys.exit(256 + 3)", 3, ""}, {"1 / 0", 1, "ZeroDivisionError"}} {
		cl := newClient(t)
		cl.launch(t, "import sys\nprint('x')\n"+c.exit+"\n", "", "real", true)
		cl.do("configurationDone", nil)
		cl.event("stopped")
		var stderr string
		var exited *godap.ExitedEvent
		cl.do("continue", map[string]any{"threadId": 1}) // to the end, then on: the session ends
		for ended := false; exited == nil; {
			switch e := cl.next().(type) {
			case *godap.OutputEvent:
				if e.Body.Category == "stderr" {
					stderr += e.Body.Output
				}
			case *godap.StoppedEvent:
				if !ended {
					ended = true
					cl.do("continue", map[string]any{"threadId": 1})
				}
			case *godap.ExitedEvent:
				exited = e
			}
		}
		require.Equal(t, c.code, exited.Body.ExitCode, c.exit)
		if c.stderr == "" {
			require.Empty(t, stderr, c.exit)
		} else {
			require.Contains(t, stderr, c.stderr, c.exit)
		}
		cl.do("disconnect", nil)
		require.NoError(t, <-cl.done)
		cl.done <- nil
	}
}

// TestStepAfterTerminatedRefused: once the session has ended (exited,
// terminated), a step is an error that says so, not exited and terminated
// again.
func TestStepAfterTerminatedRefused(t *testing.T) {
	c := newClient(t)
	c.launch(t, "x = 1\n", "", "real", true)
	c.do("configurationDone", nil)
	c.event("stopped")
	c.do("continue", map[string]any{"threadId": 1})
	c.event("stopped") // the end
	c.do("continue", map[string]any{"threadId": 1})
	c.event("terminated")
	for _, cmd := range []string{"next", "continue", "stepIn"} {
		require.Contains(t, c.refuse(cmd, map[string]any{"threadId": 1}), "has ended", cmd)
	}
	c.do("disconnect", nil)
	require.NoError(t, <-c.done)
	c.done <- nil
}
