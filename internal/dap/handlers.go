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
	refLocals = 1 // the current state's locals (predicted, or real)
	refReal   = 2 // compare: the real run's state
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
		// Not advertised; answered so that a client that sends it anyway
		// sees why nothing stops there.
		bps := make([]godap.Breakpoint, len(r.Arguments.Breakpoints))
		for i := range bps {
			bps[i].Message = "ndbg has no function breakpoints: set one on the function's first line"
		}
		s.send(&godap.SetFunctionBreakpointsResponse{Response: response(req), Body: godap.SetFunctionBreakpointsResponseBody{Breakpoints: bps}})
	case *godap.SetExceptionBreakpointsRequest:
		s.send(&godap.SetExceptionBreakpointsResponse{Response: response(req)})
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
		s.step(ctx, req, ndbg.Action{Kind: dsl.StepOver}, &godap.NextResponse{Response: response(req)})
	case *godap.StepInRequest:
		s.step(ctx, req, ndbg.Action{Kind: dsl.StepInto}, &godap.StepInResponse{Response: response(req)})
	case *godap.StepOutRequest:
		s.step(ctx, req, ndbg.Action{Kind: dsl.StepReturn}, &godap.StepOutResponse{Response: response(req)})
	case *godap.StepBackRequest:
		s.step(ctx, req, ndbg.Action{Kind: dsl.InvStepOver}, &godap.StepBackResponse{Response: response(req)})
	case *godap.ContinueRequest:
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
		SupportsConfigurationDoneRequest: true,
		SupportsStepBack:                 true, // every backend steps backwards
		SupportsSetVariable:              true, // the neural backend; the real one answers why not
		SupportsConditionalBreakpoints:   false,
		SupportsEvaluateForHovers:        true,
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
	s.sess = ss
	s.send(&godap.LaunchResponse{Response: response(&r.Request)})
	s.output("console", fmt.Sprintf("ndbg: debugging %s with the %s backend\n", a.Call, a.Backend))
	if a.Backend == backendReal {
		// initialize could not know the backend: a real run cannot be edited.
		s.event("capabilities", &capabilitiesEvent{Body: capabilitiesBody{Capabilities: map[string]bool{"supportsSetVariable": false}}})
	}
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
	// A condition or hit count ndbg cannot honour: the breakpoint is not
	// set (stopping every time would be wrong), and says why.
	set := make([]int, 0, len(lines))
	unset := map[int]string{}
	for i, l := range lines {
		if i < len(args.Breakpoints) && (args.Breakpoints[i].Condition != "" || args.Breakpoints[i].HitCondition != "" || args.Breakpoints[i].LogMessage != "") {
			unset[i] = "ndbg breakpoints have no conditions, hit counts or log messages"
			continue
		}
		set = append(set, l)
	}
	errs := s.sess.setBreakpoints(set)
	j := 0
	for i, l := range lines {
		bps[i] = godap.Breakpoint{Id: i + 1, Line: l, Source: s.source()}
		if why, ok := unset[i]; ok {
			bps[i].Message = why
			continue
		}
		if errs[j] != nil {
			bps[i].Message = errs[j].Error()
		} else {
			bps[i].Verified = true
		}
		j++
	}
	s.send(&godap.SetBreakpointsResponse{Response: response(&r.Request), Body: godap.SetBreakpointsResponseBody{Breakpoints: bps}})
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

// after reports where an action led: terminated at the end, else stopped.
func (s *server) after(err error, note, reason string) {
	if note != "" {
		s.output("console", "ndbg: "+note+"\n")
	}
	if errors.Is(err, ndbg.ErrFinished) {
		s.sendOutput()
		if x := s.sess.s.Escaped(); x != nil {
			s.output("stderr", fmt.Sprintf("%s: %s (raised at line %d)\n", x.Type, x.Message, x.Line))
		}
		if c := s.sess.comparison(); c != "" {
			s.output("console", "ndbg: "+c+"\n")
		}
		end := "ndbg: the program finished"
		if p, _, ok := s.sess.prediction(); ok {
			end += " (" + p + ")"
		}
		s.output("console", end+"\n")
		s.event("exited", &godap.ExitedEvent{Body: godap.ExitedEventBody{ExitCode: 0}})
		s.event("terminated", &godap.TerminatedEvent{})
		return
	}
	s.stopped(reason)
}

// stopped sends the stopped event for the current state. A breakpoint
// stop is one at a breakpoint's line; the description says the event
// (call, line, return, exception) and, for compare, the real state.
func (s *server) stopped(reason string) {
	s.sendOutput()
	st, _ := s.sess.s.State()
	switch {
	case st.Event == dsl.Exception:
		reason = "exception"
	case reason == "breakpoint" && !slices.Contains(s.sess.s.Breakpoints(), st.Line):
		reason = "step" // a continue that ended elsewhere (the start, or a prediction off the breakpoints)
	}
	desc := s.sess.describe(st)
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

func (s *server) stackTrace(r *godap.StackTraceRequest) {
	st, ok := s.sess.s.State()
	if !ok {
		s.fail(r.Seq, r.Command, "the program has finished: no stack")
		return
	}
	stack := s.sess.s.Stack()
	var frames []godap.StackFrame
	if len(stack) == 0 {
		frames = append(frames, godap.StackFrame{Id: 0, Name: "(call stack unknown after a jump)", Source: s.source(), Line: st.Line, Column: 1})
	}
	for i := len(stack) - 1; i >= 0; i-- {
		f := godap.StackFrame{Id: len(stack) - 1 - i, Name: s.sess.funcName(stack[i]), Source: s.source(), Line: st.Line, Column: 1}
		if i == 0 && s.sess.s.Call() == "" {
			f.Name = "<module>" // a script's module frame
		}
		if i < len(stack)-1 {
			// The API knows a caller's def line, not the line it is at.
			f.Name += " (a caller: shown at its def line)"
			f.Line, f.PresentationHint = stack[i], "subtle"
		}
		frames = append(frames, f)
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
	if s.sess.s.Finished() {
		s.fail(r.Seq, r.Command, "the program has finished: no frames")
		return
	}
	if r.Arguments.FrameId < 0 || r.Arguments.FrameId >= max(len(s.sess.s.Stack()), 1) {
		s.fail(r.Seq, r.Command, fmt.Sprintf("no frame %d", r.Arguments.FrameId))
		return
	}
	scopes := []godap.Scope{}
	if r.Arguments.FrameId == 0 { // a caller's locals are not in the state
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
	}
	s.send(&godap.ScopesResponse{Response: response(&r.Request), Body: godap.ScopesResponseBody{Scopes: scopes}})
}

func (s *server) variables(r *godap.VariablesRequest) {
	var st ndbg.State
	var ok bool
	switch r.Arguments.VariablesReference {
	case refLocals:
		st, ok = s.sess.s.State()
	case refReal:
		if s.sess.real != nil {
			st, ok = s.sess.real.State()
		}
	}
	if !ok {
		s.fail(r.Seq, r.Command, fmt.Sprintf("no variables under reference %d here", r.Arguments.VariablesReference))
		return
	}
	vars := []godap.Variable{}
	if r.Arguments.VariablesReference == refReal {
		vars = append(vars, godap.Variable{Name: "(stop)", Value: s.sess.describe(st)})
	}
	var types []string
	if r.Arguments.VariablesReference == refLocals {
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
	case !ok:
		s.fail(r.Seq, r.Command, "the program has finished: nothing to evaluate")
		return
	case expr == "":
		s.fail(r.Seq, r.Command, "evaluate: no expression")
		return
	case r.Arguments.FrameId != 0:
		s.fail(r.Seq, r.Command, fmt.Sprintf("evaluate in frame %d: ndbg evaluates in the current frame (0) only, whose locals the state has", r.Arguments.FrameId))
		return
	}
	if isName(expr) {
		for i, v := range variables(st) {
			if v[0] == expr {
				s.send(&godap.EvaluateResponse{Response: response(&r.Request), Body: godap.EvaluateResponseBody{Result: v[1], Type: s.sess.varTypes(st)[i]}})
				return
			}
		}
	}
	v, predicted, err := s.sess.evaluate(ctx, expr)
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

// capabilitiesEvent changes capabilities after initialize. go-dap's
// Capabilities leaves out false fields, so it cannot turn one off.
type capabilitiesEvent struct {
	godap.Event
	Body capabilitiesBody `json:"body"`
}

type capabilitiesBody struct {
	Capabilities map[string]bool `json:"capabilities"`
}
