package dap

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	godap "github.com/google/go-dap"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
)

// The one thread, and the variables references of the current frame's
// scopes. The values are reprs, which do not expand: no other reference
// is ever handed out.
const (
	threadID  = 1
	refLocals = 1   // the current state's locals (predicted, or real)
	refReal   = 2   // compare: the real run's state
	refFrame  = 100 // refFrame+k: the locals of frame k (a caller), where they are known
)

// handle answers one request; it reports whether the session is over
// (disconnect).
func (s *server) handle(ctx context.Context, m godap.RequestMessage) bool {
	req := m.GetRequest()
	_, isInit := m.(*godap.InitializeRequest)
	_, isDisconnect := m.(*godap.DisconnectRequest)
	if !isInit && !isDisconnect && !s.initialized {
		s.fail(req.Seq, req.Command, fmt.Sprintf("%s before initialize: send initialize first", req.Command))
		return false
	}
	switch r := m.(type) {
	case *godap.InitializeRequest:
		s.initialize(r)
	case *godap.LaunchRequest:
		s.launch(ctx, r)
	case *godap.DisconnectRequest:
		s.closeSession()
		s.send(&godap.DisconnectResponse{Response: response(req)})
		return true
	case *godap.ThreadsRequest:
		s.send(&godap.ThreadsResponse{Response: response(req),
			Body: godap.ThreadsResponseBody{Threads: []godap.Thread{{Id: threadID, Name: "main"}}}})
	default:
		if s.sess == nil {
			s.fail(req.Seq, req.Command, fmt.Sprintf("%s before launch: no program is being debugged", req.Command))
			return false
		}
		s.sessionRequest(ctx, m)
	}
	return false
}

// sessionRequest answers a request that needs a launched program.
func (s *server) sessionRequest(ctx context.Context, m godap.RequestMessage) {
	req := m.GetRequest()
	switch r := m.(type) {
	case *godap.SetBreakpointsRequest:
		s.setBreakpoints(r)
	case *godap.SetFunctionBreakpointsRequest:
		s.setFunctionBreakpoints(r)
	case *godap.PauseRequest:
		// The interrupt itself was sent when the request was read (Serve),
		// while the action it stops was running.
		s.send(&godap.PauseResponse{Response: response(req)})
	case *godap.SetExceptionBreakpointsRequest:
		// ndbg advertises no exception filters (a client sends the request
		// anyway, empty): each one asked for is answered not verified, with
		// why, rather than accepted and never hit.
		resp := &godap.SetExceptionBreakpointsResponse{Response: response(req)}
		a := r.Arguments
		for range len(a.Filters) + len(a.FilterOptions) + len(a.ExceptionOptions) {
			resp.Body.Breakpoints = append(resp.Body.Breakpoints, godap.Breakpoint{Verified: false,
				Message: "ndbg has no exception breakpoints: a step stops at the line that raises; an exception that escapes stops at the end"})
		}
		s.send(resp)
	case *godap.ConfigurationDoneRequest:
		s.configurationDone(ctx, r)
	case *godap.StackTraceRequest:
		s.stackTrace(r)
	case *godap.ScopesRequest:
		s.scopes(r)
	case *godap.VariablesRequest:
		s.variables(r)
	case *godap.SetVariableRequest:
		s.setVariable(ctx, r)
	case *godap.EvaluateRequest:
		s.evaluate(ctx, r)
	case *godap.NextRequest:
		if s.endIfFinished(req, &godap.NextResponse{Response: response(req)}) {
			return
		}
		s.step(ctx, req, ndbg.Action{Kind: dsl.StepOver}, &godap.NextResponse{Response: response(req)})
	case *godap.StepInRequest:
		if s.endIfFinished(req, &godap.StepInResponse{Response: response(req)}) {
			return
		}
		s.step(ctx, req, ndbg.Action{Kind: dsl.StepInto}, &godap.StepInResponse{Response: response(req)})
	case *godap.StepOutRequest:
		if s.endIfFinished(req, &godap.StepOutResponse{Response: response(req)}) {
			return
		}
		s.step(ctx, req, ndbg.Action{Kind: dsl.StepReturn}, &godap.StepOutResponse{Response: response(req)})
	case *godap.StepBackRequest:
		s.step(ctx, req, ndbg.Action{Kind: dsl.InvStepOver}, &godap.StepBackResponse{Response: response(req)})
	case *godap.ContinueRequest:
		if s.endIfFinished(req, &godap.ContinueResponse{Response: response(req), Body: godap.ContinueResponseBody{AllThreadsContinued: true}}) {
			return
		}
		s.step(ctx, req, ndbg.Action{Kind: dsl.Continue, Lines: s.sess.s.Breakpoints()},
			&godap.ContinueResponse{Response: response(req), Body: godap.ContinueResponseBody{AllThreadsContinued: true}})
	case *godap.ReverseContinueRequest:
		s.step(ctx, req, ndbg.Action{Kind: dsl.InvContinue, Lines: s.sess.s.Breakpoints()}, &godap.ReverseContinueResponse{Response: response(req)})
	default:
		s.fail(req.Seq, req.Command, fmt.Sprintf("ndbg does not support the %s request", req.Command))
	}
}

func (s *server) initialize(r *godap.InitializeRequest) {
	if s.initialized {
		s.fail(r.Seq, r.Command, "initialize was already sent")
		return
	}
	s.initialized = true
	s.send(&godap.InitializeResponse{Response: response(&r.Request), Body: godap.Capabilities{
		SupportsConfigurationDoneRequest:  true,
		SupportsStepBack:                  true, // every backend steps backwards
		SupportsSetVariable:               true, // a prediction's, or the live program's (real)
		SupportsConditionalBreakpoints:    true,
		SupportsHitConditionalBreakpoints: true,
		SupportsFunctionBreakpoints:       true,
		SupportsEvaluateForHovers:         true,
	}})
}

func (s *server) launch(ctx context.Context, r *godap.LaunchRequest) {
	if s.sess != nil {
		s.fail(r.Seq, r.Command, "a program was already launched in this session")
		return
	}
	a, err := parseLaunch(r.Arguments)
	if err != nil {
		s.fail(r.Seq, r.Command, err.Error())
		return
	}
	ss, err := launch(ctx, s.cfg, a)
	if err != nil {
		s.fail(r.Seq, r.Command, err.Error())
		return
	}
	s.setSession(ss)
	s.send(&godap.LaunchResponse{Response: response(&r.Request)})
	what := a.Call
	if what == "" {
		what = filepath.Base(ss.path) // a whole script
	}
	s.output("console", fmt.Sprintf("ndbg: debugging %s with the %s backend\n", what, a.Backend))
	s.event("initialized", &godap.InitializedEvent{})
}

func (s *server) setBreakpoints(r *godap.SetBreakpointsRequest) {
	args := r.Arguments
	lines := slices.Clone(args.Lines)
	if len(args.Breakpoints) > 0 {
		lines = lines[:0]
		for _, b := range args.Breakpoints {
			lines = append(lines, b.Line)
		}
	}
	bps := make([]godap.Breakpoint, len(lines))
	if !s.isProgram(args.Source.Path) {
		for i, l := range lines {
			bps[i] = godap.Breakpoint{Line: l, Message: fmt.Sprintf("ndbg debugs only %s", s.sess.path)}
		}
		s.send(&godap.SetBreakpointsResponse{Response: response(&r.Request), Body: godap.SetBreakpointsResponseBody{Breakpoints: bps}})
		return
	}
	// A log message ndbg cannot honour (a log point would stop every
	// time), or a hit condition it cannot read: the breakpoint is not set,
	// and says why.
	s.sess.lineBPs = nil
	for i, l := range lines {
		bps[i] = godap.Breakpoint{Id: i + 1, Line: l, Source: s.source()}
		var sb godap.SourceBreakpoint
		if i < len(args.Breakpoints) {
			sb = args.Breakpoints[i]
		}
		hit, err := parseHit(sb.HitCondition)
		switch {
		case sb.LogMessage != "":
			err = errors.New("ndbg has no log points (logMessage)")
		case err == nil && !s.sess.s.Program().Nameable(l):
			err = fmt.Errorf("ndbg: line %d is not a code line of the program", l)
		}
		if err != nil {
			bps[i].Message = err.Error()
			continue
		}
		s.sess.lineBPs = append(s.sess.lineBPs, &bp{line: l, cond: sb.Condition, hitCond: hit})
		bps[i].Verified = true
	}
	s.sess.syncBreakpoints()
	s.send(&godap.SetBreakpointsResponse{Response: response(&r.Request), Body: godap.SetBreakpointsResponseBody{Breakpoints: bps}})
}

// setFunctionBreakpoints sets a breakpoint on the first body line of each
// named top-level function or Class.method (as pdb's break FUNCTION stops at the first line
// each call runs).
func (s *server) setFunctionBreakpoints(r *godap.SetFunctionBreakpointsRequest) {
	s.sess.funcBPs = nil
	bps := make([]godap.Breakpoint, len(r.Arguments.Breakpoints))
	for i, fb := range r.Arguments.Breakpoints {
		name := strings.TrimSpace(fb.Name)
		_, body, ok := s.sess.s.FunctionLine(name)
		hit, err := parseHit(fb.HitCondition)
		switch {
		case !ok:
			bps[i].Message = fmt.Sprintf("%q is not a top-level function or Class.method of %s", fb.Name, filepath.Base(s.sess.path))
			continue
		case err != nil:
			bps[i].Message = err.Error()
			continue
		}
		s.sess.funcBPs = append(s.sess.funcBPs, &bp{line: body, function: name, cond: fb.Condition, hitCond: hit})
		bps[i] = godap.Breakpoint{Id: 1000 + i, Verified: true, Line: body, Source: s.source()}
	}
	s.sess.syncBreakpoints()
	s.send(&godap.SetFunctionBreakpointsResponse{Response: response(&r.Request), Body: godap.SetFunctionBreakpointsResponseBody{Breakpoints: bps}})
}

// isProgram reports whether path names the launched program.
func (s *server) isProgram(path string) bool {
	abs, err := filepath.Abs(path)
	return err == nil && path != "" && filepath.Clean(abs) == filepath.Clean(s.sess.path)
}

func (s *server) source() *godap.Source {
	return &godap.Source{Name: filepath.Base(s.sess.path), Path: s.sess.path}
}

func (s *server) configurationDone(ctx context.Context, r *godap.ConfigurationDoneRequest) {
	if s.configured {
		s.fail(r.Seq, r.Command, "configurationDone was already sent")
		return
	}
	s.configured = true
	s.send(&godap.ConfigurationDoneResponse{Response: response(&r.Request)})
	if s.sess.args.StopOnEntry {
		s.stopped("entry")
		return
	}
	note, err := s.sess.do(ctx, ndbg.Action{Kind: dsl.Continue, Lines: s.sess.s.Breakpoints()})
	s.after(err, note, "breakpoint")
}

// step applies an action: an error response when it cannot be taken (at
// the start, or the model failed), else the response and then a stopped
// event, or terminated when the program ran past its end.
func (s *server) step(ctx context.Context, req *godap.Request, a ndbg.Action, resp godap.ResponseMessage) {
	if !s.configured {
		s.fail(req.Seq, req.Command, fmt.Sprintf("%s before configurationDone", req.Command))
		return
	}
	n := len(s.sess.s.Trajectory().Steps)
	note, err := s.sess.do(ctx, a)
	if err != nil && len(s.sess.s.Trajectory().Steps) == n {
		s.fail(req.Seq, req.Command, ndbgError(err))
		return
	}
	s.send(resp)
	reason := "step"
	if a.Kind == dsl.Continue || a.Kind == dsl.InvContinue {
		reason = "breakpoint"
	}
	s.after(err, note, reason)
}

// after reports where an action led: stopped, or at the end of the
// program stopped there too (reason "end": the user can still step back,
// and the next step forward ends the session), unless the launch asked to
// terminate at the end.
func (s *server) after(err error, note, reason string) {
	if note != "" {
		s.output("console", "ndbg: "+note+"\n")
	}
	if errors.Is(err, ndbg.ErrFinished) {
		s.sendOutput()
		if x := s.sess.s.Escaped(); x != nil {
			switch _, msg := x.ExitStatus(); {
			case x.Type != "SystemExit":
				s.output("stderr", fmt.Sprintf("%s: %s (raised at line %d)\n", x.Type, x.Message, x.Line))
			case msg != "": // sys.exit("text"), as python3 writes it
				s.output("stderr", msg+"\n")
			}
		}
		if c := s.sess.comparison(); c != "" {
			s.output("console", "ndbg: "+c+"\n")
		}
		end := "ndbg: the program finished"
		if p, _, ok := s.sess.prediction(); ok {
			end += " (" + p + ")"
		}
		if s.sess.args.TerminateAtEnd {
			s.output("console", end+"\n")
			s.terminate()
			return
		}
		s.output("console", fmt.Sprintf("%s, exit code %d: step back to look at it again, or continue to end the session\n", end, s.exitCode()))
		s.stopped("end")
		return
	}
	s.stopped(reason)
}

// exitCode is the program's, as python3's (ndbg.Exception.ExitStatus: 1
// when an exception escaped it, SystemExit's code, on the real backend),
// else 0.
func (s *server) exitCode() int {
	if x := s.sess.s.Escaped(); x != nil {
		status, _ := x.ExitStatus()
		return status
	}
	return 0
}

// terminate ends the debugging session: the program's exit code, then
// terminated.
func (s *server) terminate() {
	s.event("exited", &godap.ExitedEvent{Body: godap.ExitedEventBody{ExitCode: s.exitCode()}})
	s.event("terminated", &godap.TerminatedEvent{})
	s.terminated = true
}

// endIfFinished answers a step forward at the end of the program (where
// the session stopped rather than terminated): the user asked to go on, so
// the session ends; after that (terminated), a step is refused.
func (s *server) endIfFinished(req *godap.Request, resp godap.ResponseMessage) bool {
	if s.terminated { // once, not exited and terminated again at each step
		s.fail(req.Seq, req.Command, "the debugging session has ended (terminated): disconnect")
		return true
	}
	if !s.configured || !s.sess.s.Finished() {
		return false
	}
	s.send(resp)
	s.terminate()
	return true
}

// stopped sends the stopped event for the current state. A breakpoint
// stop is one at a breakpoint's line; the description says the event
// (call, line, return, exception) and, for compare, the real state.
func (s *server) stopped(reason string) {
	s.sendOutput()
	st, ok := s.sess.s.State()
	if !ok { // the end
		body := godap.StoppedEventBody{Reason: "end", Description: "the program finished: step back, or continue to end the session",
			Text: "end", ThreadId: threadID, AllThreadsStopped: true}
		if x := s.sess.s.Escaped(); x != nil {
			body.Description = fmt.Sprintf("the program finished: %s: %s escaped (post-mortem: its frames); step back, or continue to end the session", x.Type, x.Message)
		}
		s.event("stopped", &godap.StoppedEvent{Body: body})
		return
	}
	switch {
	case st.Event == dsl.Exception:
		reason = "exception"
	case s.sess.s.Interrupted() == "interrupt":
		reason = "pause"
	case reason == "breakpoint" && s.sess.hit != nil && s.sess.hit.function != "":
		reason = "function breakpoint"
	case reason == "breakpoint" && !slices.Contains(s.sess.s.Breakpoints(), st.Line):
		reason = "step" // a continue that ended elsewhere (the start, or a prediction off the breakpoints)
	}
	desc := s.sess.describe(st)
	if s.sess.s.Interrupted() == "cpu" {
		desc += " | stopped where it was: the action ran its CPU time (--timeout)"
	}
	if p, news, ok := s.sess.prediction(); ok {
		desc += " | " + p
		if news {
			s.output("console", "ndbg: "+p+"\n")
		}
	}
	if c := s.sess.comparison(); c != "" {
		desc += " | " + c
		s.output("console", "ndbg: "+c+"\n")
	}
	body := godap.StoppedEventBody{Reason: reason, Description: desc, Text: st.Event.String(), ThreadId: threadID, AllThreadsStopped: true}
	s.event("stopped", &godap.StoppedEvent{Body: body})
}

// frames are the frames the client sees, innermost first: the call stack
// (the real backend knows each caller's line and locals; a prediction only
// the current frame's and each caller's def line), or at the end the
// frames an escaping exception passed through (post-mortem), or none.
func (s *server) frames() []ndbg.Frame {
	fs := s.sess.s.Frames()
	if fs == nil && s.sess.s.Finished() {
		if x := s.sess.s.Escaped(); x != nil {
			fs = x.Traceback
		}
	}
	fs = slices.Clone(fs)
	slices.Reverse(fs)
	return fs
}

func (s *server) stackTrace(r *godap.StackTraceRequest) {
	st, ok := s.sess.s.State()
	var frames []godap.StackFrame
	fs := s.frames()
	switch {
	case !ok && len(fs) == 0:
		line := 1
		t := s.sess.s.Trajectory()
		for i := len(t.Steps) - 1; i >= -1; i-- {
			if i < 0 {
				line = t.Start.Line
				break
			}
			if t.Steps[i].State != nil {
				line = t.Steps[i].State.Line
				break
			}
		}
		frames = append(frames, godap.StackFrame{Id: 0, Name: "(the program finished)", Source: s.source(), Line: line, Column: 1})
	case len(fs) == 0:
		frames = append(frames, godap.StackFrame{Id: 0, Name: "(call stack unknown after a jump)", Source: s.source(), Line: st.Line, Column: 1})
	}
	for k, f := range fs {
		name := f.Func
		if name == "" {
			name = s.sess.funcName(f.Def)
		}
		fr := godap.StackFrame{Id: k, Name: name, Source: s.source(), Line: f.Line, Column: 1}
		if f.Line == 0 {
			// A prediction knows a caller's def line, not the line it is at.
			fr.Name += " (a caller: shown at its def line)"
			fr.Line, fr.PresentationHint = f.Def, "subtle"
		}
		frames = append(frames, fr)
	}
	total := len(frames)
	start := min(max(r.Arguments.StartFrame, 0), total)
	frames = frames[start:]
	if lv := r.Arguments.Levels; lv > 0 && lv < len(frames) {
		frames = frames[:lv]
	}
	s.send(&godap.StackTraceResponse{Response: response(&r.Request), Body: godap.StackTraceResponseBody{StackFrames: frames, TotalFrames: total}})
}

func (s *server) scopes(r *godap.ScopesRequest) {
	fs := s.frames()
	id := r.Arguments.FrameId
	if id < 0 || id >= max(len(fs), 1) {
		s.fail(r.Seq, r.Command, fmt.Sprintf("no frame %d", id))
		return
	}
	scopes := []godap.Scope{}
	switch {
	case id == 0 && !s.sess.s.Finished():
		name := "Locals"
		if p, ok := s.sess.s.Prediction(); ok {
			// The scope's header, in view without a hover: how sure the
			// model was of the whole state.
			switch {
			case p.Verified:
				name = "Locals (real: verified)"
			case p.Uncertain():
				name = "Locals (predicted, uncertain)"
			default:
				name = "Locals (predicted, " + ndbg.Percent(p.State) + " sure)"
			}
		}
		scopes = append(scopes, godap.Scope{Name: name, PresentationHint: "locals", VariablesReference: refLocals})
		if s.sess.real != nil {
			scopes = append(scopes, godap.Scope{Name: "Real", VariablesReference: refReal})
		}
	case id < len(fs) && fs[id].LocalsKnown: // a caller's, or a post-mortem frame's
		scopes = append(scopes, godap.Scope{Name: "Locals", PresentationHint: "locals", VariablesReference: refFrame + id})
	}
	s.send(&godap.ScopesResponse{Response: response(&r.Request), Body: godap.ScopesResponseBody{Scopes: scopes}})
}

func (s *server) variables(r *godap.VariablesRequest) {
	var st ndbg.State
	var ok bool
	ref := r.Arguments.VariablesReference
	switch {
	case ref == refLocals:
		st, ok = s.sess.s.State()
	case ref == refReal:
		if s.sess.real != nil {
			st, ok = s.sess.real.State()
		}
	case ref >= refFrame:
		if fs := s.frames(); ref-refFrame < len(fs) && fs[ref-refFrame].LocalsKnown {
			st, ok = ndbg.State{Event: dsl.Line, Locals: fs[ref-refFrame].Locals}, true
		}
	}
	if !ok {
		s.fail(r.Seq, r.Command, fmt.Sprintf("no variables under reference %d here", ref))
		return
	}
	vars := []godap.Variable{}
	if ref == refReal {
		vars = append(vars, godap.Variable{Name: "(stop)", Value: s.sess.describe(st)})
	}
	var types []string
	if ref == refLocals {
		types = s.sess.varTypes(st)
	}
	for i, v := range variables(st) {
		vars = append(vars, godap.Variable{Name: v[0], Value: v[1], EvaluateName: v[0]})
		if types != nil {
			vars[len(vars)-1].Type = types[i]
		}
	}
	s.send(&godap.VariablesResponse{Response: response(&r.Request), Body: godap.VariablesResponseBody{Variables: vars}})
}

func (s *server) setVariable(ctx context.Context, r *godap.SetVariableRequest) {
	a := r.Arguments
	if a.VariablesReference != refLocals {
		s.fail(r.Seq, r.Command, "only the current frame's locals can be set")
		return
	}
	note, err := s.sess.set(ctx, a.Name, strings.TrimSpace(a.Value))
	if err != nil {
		s.fail(r.Seq, r.Command, ndbgError(err))
		return
	}
	s.send(&godap.SetVariableResponse{Response: response(&r.Request), Body: godap.SetVariableResponseBody{Value: strings.TrimSpace(a.Value)}})
	if note != "" {
		s.output("console", "ndbg: "+note+"\n")
	}
}

// evaluate answers a local's name (or __return__, __exception__) with its
// repr as the state shows it, and any other expression with its value in
// the current frame, as pdb's p (session.evaluate): on a prediction, over
// the predicted locals, and its type says the value derives from one.
func (s *server) evaluate(ctx context.Context, r *godap.EvaluateRequest) {
	expr := strings.TrimSpace(r.Arguments.Expression)
	st, ok := s.sess.s.State()
	switch {
	case !ok && s.sess.s.Escaped() == nil:
		s.fail(r.Seq, r.Command, "the program has finished: nothing to evaluate")
		return
	case expr == "":
		s.fail(r.Seq, r.Command, "evaluate: no expression")
		return
	}
	if isName(expr) && r.Arguments.FrameId == 0 {
		for i, v := range variables(st) {
			if v[0] == expr {
				s.send(&godap.EvaluateResponse{Response: response(&r.Request), Body: godap.EvaluateResponseBody{Result: v[1], Type: s.sess.varTypes(st)[i]}})
				return
			}
		}
	}
	v, predicted, err := s.sess.evaluate(ctx, r.Arguments.FrameId, expr)
	if err != nil {
		s.fail(r.Seq, r.Command, err.Error())
		return
	}
	body := godap.EvaluateResponseBody{Result: v}
	if predicted {
		body.Type = derived
	}
	s.send(&godap.EvaluateResponse{Response: response(&r.Request), Body: body})
}

// derived is the type of a value evaluated over predicted locals.
const derived = "derived from a prediction: evaluated on the predicted locals"

// sendOutput sends what the program wrote since the last stop as output
// events (real backend).
func (s *server) sendOutput() {
	out, errOut := s.sess.newOutput()
	if out != "" {
		s.output("stdout", out)
	}
	if errOut != "" {
		s.output("stderr", errOut)
	}
}

// isName reports whether s is a Python identifier.
func isName(s string) bool {
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}
