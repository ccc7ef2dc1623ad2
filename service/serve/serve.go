// Package serve is `ndbg serve`: the ndbg API over HTTP/JSON, for agents
// written in any language. One Service holds the debugging sessions of all
// clients; the neural and CWM backends share one model, opened once by the
// caller. Every route is described in openapi.json, which the service
// serves at /openapi.json (one source of truth: a test checks that the
// routes and the description name the same operations).
//
// Each session is used by one request at a time (an ndbg.Session is not
// safe for concurrent use): a request waits for the session's lock, within
// its deadline. Requests on different sessions run in parallel, and the
// shared model runs their one-token decode steps that coincide as one batch
// (unless it was opened with ndbg.Options.SerialDecode; see ARCHITECTURE.md).
//
// Every refusal is a 4xx, 429 or 503 with a JSON body {"error": "..."}
// saying what was refused and why; a client's mistake is never a 5xx.
//
// The service runs programs with the rights of the user who started it,
// so it serves that user only (docs/security.md): every request but GET
// /openapi.json carries Config.Token as a bearer token, or comes over a
// unix socket from a process of the server's uid (Serve checks the peer's
// credentials); any other is refused with 401 before anything is read or
// done.
package serve

import (
	"bytes"
	"context"
	_ "embed" // openapi.json
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/regfile"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/service/httpd"
	"github.com/ndbg/ndbg/service/sessions"
	"github.com/ndbg/ndbg/trace"
)

// OpenAPI is the OpenAPI 3 description of the service, served at
// /openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// Backend names a client may ask for.
const (
	Neural = "neural"
	CWM    = "cwm"
	Real   = "real"
)

// Limits bound what clients may ask of the service. A zero field takes the
// default named beside it.
type Limits struct {
	MaxSessions     int           // live sessions at once (256)
	MaxBodyBytes    int64         // a request's body (1 MiB)
	MaxProgramBytes int           // a session's program source (256 KiB)
	RequestTimeout  time.Duration // one request, passed to the API as its context's deadline (60 s)
	IdleTimeout     time.Duration // a session unused this long is closed (10 min)
}

func (l Limits) withDefaults() Limits {
	if l.MaxSessions <= 0 {
		l.MaxSessions = 256
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 1 << 20
	}
	if l.MaxProgramBytes <= 0 {
		l.MaxProgramBytes = 256 << 10
	}
	if l.RequestTimeout <= 0 {
		l.RequestTimeout = time.Minute
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 10 * time.Minute
	}
	return l
}

// Config configures a Service.
type Config struct {
	// Model answers the neural and CWM backends; nil offers the real
	// backend only. The caller opens it and closes it after Service.Close.
	Model *ndbg.Model
	// Backends offered to clients (Neural, CWM, Real); empty offers every
	// backend the configuration allows.
	Backends []string
	// Trace limits each real run (the real backend's, and the run that
	// starts a neural session).
	Trace  trace.Limits
	Limits Limits
	// Token is the secret every request must carry (Authorization: Bearer
	// TOKEN), at least owner.MinTokenLen characters; `ndbg serve` writes
	// it to a file only its user can read (owner.TokenFile). Empty, only
	// requests over a unix socket from the server's own uid are served
	// (Serve); every other is refused.
	Token string
}

// Service is the state behind the HTTP handler: the live sessions, kept
// by the session manager the front ends share (package sessions). Create
// it with New, serve it (Serve, or Handler), and Close it after the HTTP
// server has shut down.
type Service struct {
	cfg      Config
	lim      Limits
	backends []string
	mux      *http.ServeMux
	auth     *httpd.Auth
	m        *sessions.Manager
}

// New returns a service and starts its session manager, whose janitor
// closes sessions idle for longer than Limits.IdleTimeout.
func New(cfg Config) (*Service, error) {
	lim := cfg.Limits.withDefaults()
	offered := []string{Real}
	switch {
	case cfg.Model != nil && cfg.Model.ActionTokens(): // trained on the DSL: not a CWM checkpoint
		offered = []string{Neural, Real}
	case cfg.Model != nil:
		offered = []string{Neural, CWM, Real}
	}
	backends := offered
	if len(cfg.Backends) > 0 {
		backends = nil
		for _, b := range cfg.Backends {
			if !slices.Contains(offered, b) {
				why := ""
				if b == CWM && cfg.Model != nil {
					why = ": the model was trained with the DSL's action tokens, and cwm needs a CWM checkpoint, trained on plain traces"
				}
				return nil, fmt.Errorf("serve: backend %q is not available (have %s; neural and cwm need a model)%s", b, strings.Join(offered, ", "), why)
			}
			if !slices.Contains(backends, b) {
				backends = append(backends, b)
			}
		}
	}
	auth, err := httpd.NewAuth("ndbg serve", cfg.Token)
	if err != nil {
		return nil, err
	}
	m, err := sessions.New(sessions.Config{Model: cfg.Model, Backends: backends, Trace: cfg.Trace,
		Limits: sessions.Limits{MaxSessions: lim.MaxSessions, MaxProgramBytes: lim.MaxProgramBytes,
			RequestTimeout: lim.RequestTimeout, IdleTimeout: lim.IdleTimeout}})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s := &Service{cfg: cfg, lim: lim, backends: backends, auth: auth, m: m}
	s.mux = http.NewServeMux()
	for _, rt := range s.routes() {
		s.mux.HandleFunc(rt.method+" "+rt.path, rt.handle)
	}
	return s, nil
}

// route is one operation of the API.
type route struct {
	method, path string
	handle       http.HandlerFunc
}

// routes lists every operation; openapi.json describes exactly these.
func (s *Service) routes() []route {
	return []route{
		{"GET", "/health", s.health},
		{"GET", "/openapi.json", s.openapi},
		{"POST", "/sessions", s.create},
		{"GET", "/sessions/{id}", s.get},
		{"DELETE", "/sessions/{id}", s.remove},
		{"POST", "/sessions/{id}/actions", s.action},
		{"GET", "/sessions/{id}/history", s.history},
		{"POST", "/sessions/{id}/fork", s.fork},
		{"PUT", "/sessions/{id}/locals/{name}", s.setLocal},
		{"PUT", "/sessions/{id}/breakpoints/{line}", s.setBreakpoint},
		{"DELETE", "/sessions/{id}/breakpoints/{line}", s.clearBreakpoint},
	}
}

// Handler returns the HTTP handler. A request that is not the owner's
// (authorized) is answered 401 before anything else; a path or method no
// route matches is answered with the mux's status (404 or 405, with Allow)
// and a JSON error.
func (s *Service) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != publicPath {
			if why := s.auth.Why(r); why != "" {
				s.auth.Refuse(w, why)
				return
			}
		}
		if _, pattern := s.mux.Handler(r); pattern == "" {
			p := &probe{header: http.Header{}, code: http.StatusOK} // the mux's own answer: 404, or 405 with Allow
			s.mux.ServeHTTP(p, r)
			if allow := p.header.Get("Allow"); allow != "" {
				w.Header().Set("Allow", allow)
				writeError(w, p.code, "method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow)
				return
			}
			writeError(w, p.code, "no route %s %s (GET /openapi.json describes the API)", r.Method, r.URL.Path)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.lim.MaxBodyBytes)
		s.mux.ServeHTTP(w, r) // the session manager bounds each operation by --request-timeout
	})
}

// publicPath is the one path served without the token: the API's
// description, which says how to authenticate and is published with the
// source anyway; it does nothing and tells nothing of the sessions.
const publicPath = "/openapi.json"

// probe is a ResponseWriter that keeps only the status and the header.
type probe struct {
	header http.Header
	code   int
}

func (p *probe) Header() http.Header         { return p.header }
func (p *probe) Write(b []byte) (int, error) { return len(b), nil }
func (p *probe) WriteHeader(code int)        { p.code = code }

// Close closes every session (stopping what still runs) and the
// manager's janitor. Call it after the HTTP server has shut down. Closing
// twice does nothing more.
func (s *Service) Close() { s.m.Close() }

// errorBody is every refusal's body.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorBody{fmt.Sprintf(format, args...)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil { // our own types always marshal; say so rather than panic
		code, data = http.StatusInternalServerError, []byte(`{"error":"serve: encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(data, '\n'))
}

// decode reads the request's JSON body into v: one object, no unknown
// fields, nothing after it. A refusal has been written when it returns
// false.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := decodeErr(r, v); err != nil {
		code := http.StatusBadRequest
		if sessions.KindOf(err) == sessions.TooLarge {
			code = http.StatusRequestEntityTooLarge
		}
		writeError(w, code, "%v", err)
		return false
	}
	return true
}

// decodeErr is decode's reading, its refusal a *sessions.Error (Invalid,
// or TooLarge), for a handler that reads the body under a session's lock
// (so that an unknown session is a 404 whatever the body).
//
// The body must be UTF-8 without lone surrogate escapes: encoding/json
// would turn either into U+FFFD, and the program run would not be the one
// sent.
func decodeErr(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		if where, bad := notUTF8(body); bad {
			return sessions.Errorf(sessions.Invalid, "the request body is not UTF-8 text: %s", where)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err == nil {
		err = dec.Decode(v)
	}
	if err == nil && dec.More() {
		err = errors.New("more data after the JSON object")
	} else if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("more data after the JSON object")
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return sessions.Errorf(sessions.TooLarge, "the request body is larger than the limit of %d bytes (--max-body)", tooBig.Limit)
	case errors.Is(err, io.EOF):
		return sessions.Errorf(sessions.Invalid, "the request body is empty: want a JSON object")
	case err != nil:
		return sessions.Errorf(sessions.Invalid, "the request body is not the JSON this operation takes: %v", err)
	}
	return nil
}

// notUTF8 says where body stops being UTF-8 text a JSON decoder keeps as
// it is: a byte that is not UTF-8 (regfile.NotText), or a \uD800-\uDFFF
// escape that is not half of a surrogate pair (both of which it would
// replace by U+FFFD).
func notUTF8(body []byte) (where string, bad bool) {
	if !utf8.Valid(body) {
		return regfile.NotText(body) // says where, not quoting it
	}
	hex4 := func(i int) (rune, bool) { // the \uXXXX escape at body[i:]
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' || i+1 >= len(body) {
			continue
		}
		r, ok := hex4(i)
		switch {
		case !ok: // another escape (\\, \n, ...): past its second byte
		case utf16.IsSurrogate(r) && r < 0xDC00:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 6
				break
			}
			return fmt.Sprintf("byte %d: a \\u%04X escape without its low surrogate", i+1, r), true
		case utf16.IsSurrogate(r):
			return fmt.Sprintf("byte %d: a \\u%04X escape without its high surrogate", i+1, r), true
		}
		i++
	}
	return "", false
}

// status is the HTTP status of a refusal of kind k.
var status = map[sessions.Kind]int{
	sessions.Invalid:       http.StatusBadRequest,
	sessions.NotFound:      http.StatusNotFound,
	sessions.Conflict:      http.StatusConflict,
	sessions.TooLarge:      http.StatusRequestEntityTooLarge,
	sessions.Unprocessable: http.StatusUnprocessableEntity,
	sessions.TooMany:       http.StatusTooManyRequests,
	sessions.Unavailable:   http.StatusServiceUnavailable,
}

// fail answers an error of the session manager (a *sessions.Error, or what
// the API returned, which is Unprocessable) with its status.
func (s *Service) fail(w http.ResponseWriter, err error) {
	code, ok := status[sessions.KindOf(err)]
	if !ok {
		code = http.StatusUnprocessableEntity
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, code, "%v", err)
}

// sessionView is the answer of most operations: where a session stands.
type sessionView struct {
	ID          string          `json:"id"`
	Backend     string          `json:"backend"`
	Call        string          `json:"call"`
	Finished    bool            `json:"finished"`
	State       json.RawMessage `json:"state"` // ndbg.MarshalOutcome; null when finished
	Steps       int             `json:"steps"`
	Breakpoints []int           `json:"breakpoints"`
	Stack       []int           `json:"stack"`
	VerifyBelow float64         `json:"verify_below,omitempty"`
	Output      *outputView     `json:"output,omitempty"`    // real backend only
	Exception   *exceptionView  `json:"exception,omitempty"` // real backend, once finished
	// Interrupted says why state is not the last action's own stop: "cpu"
	// (it ran past the CPU time of an action and stopped where it was) or
	// "interrupt" (real backend: ndbg.Session.Interrupted); absent otherwise.
	Interrupted string `json:"interrupted,omitempty"`
}

// outputView is ndbg.Output as text (invalid UTF-8 replaced by JSON).
type outputView struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
}

// exceptionView is the exception that escaped the program.
type exceptionView struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Line    int    `json:"line"`
}

func view(ss *sessions.Session) sessionView {
	sess := ss.Debug()
	v := sessionView{ID: ss.ID(), Backend: ss.Spec().Backend, Call: sess.Call(), State: json.RawMessage("null"),
		Steps: len(sess.Trajectory().Steps), Breakpoints: sess.Breakpoints(), Stack: sess.Stack(), VerifyBelow: ss.Spec().VerifyBelow}
	if v.Breakpoints == nil {
		v.Breakpoints = []int{}
	}
	if o, ok := sess.Output(); ok {
		v.Output = &outputView{Stdout: string(o.Stdout), Stderr: string(o.Stderr), Truncated: o.Truncated}
	}
	if x := sess.Escaped(); x != nil {
		v.Exception = &exceptionView{Type: x.Type, Message: x.Message, Line: x.Line}
	}
	v.Interrupted = sess.Interrupted()
	if st, ok := sess.State(); ok {
		// A predicted state says how sure the model was (and whether
		// verify_below replaced it by the real one), as ndbg-infer does.
		var pred *ndbg.Prediction
		if p, ok := sess.Prediction(); ok {
			pred = &p
		}
		v.State = ndbg.MarshalOutcome(&st, pred)
	} else {
		v.Finished = true
	}
	return v
}

func (s *Service) health(w http.ResponseWriter, _ *http.Request) {
	n := s.m.Len()
	h := struct {
		Status      string   `json:"status"`
		Sessions    int      `json:"sessions"`
		MaxSessions int      `json:"max_sessions"`
		Backends    []string `json:"backends"`
		Model       string   `json:"model,omitempty"`
	}{"ok", n, s.lim.MaxSessions, s.backends, ""}
	if s.cfg.Model != nil {
		h.Model = s.cfg.Model.Name()
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *Service) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(OpenAPI)
}

// createRequest starts a session.
type createRequest struct {
	Program  string    `json:"program"`
	Call     string    `json:"call"`
	Backend  string    `json:"backend"`
	Sampling *sampling `json:"sampling"`
	// VerifyBelow checks neural predictions whose confidence is below it
	// against the real run (ndbg.Verify); 0 checks none.
	VerifyBelow float64 `json:"verify_below"`
	// NoExec runs nothing of the program: the first state is built from its
	// text (ndbg.NoExec), so the call's arguments must be literals.
	NoExec bool `json:"no_exec"`
}

// sampling is sample.Params in JSON (neural and cwm backends).
type sampling struct {
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float64 `json:"top_p"`
	Seed        uint64  `json:"seed"`
}

func (s *Service) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if !decode(w, r, &req) {
		return
	}
	spec := sessions.Spec{Program: req.Program, Call: req.Call, Backend: req.Backend, VerifyBelow: req.VerifyBelow, NoExec: req.NoExec}
	if sp := req.Sampling; sp != nil {
		spec.Sampling = &sample.Params{Temperature: sp.Temperature, TopK: sp.TopK, TopP: sp.TopP, Seed: sp.Seed}
	}
	var v sessionView
	if err := s.m.Start(r.Context(), spec, func(ss *sessions.Session) { v = view(ss) }); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Location", "/sessions/"+v.ID)
	writeJSON(w, http.StatusCreated, v)
}

// use runs h on the session {id} (sessions.Manager.Use under what),
// answering its error, or h's answer.
func (s *Service) use(w http.ResponseWriter, r *http.Request, what string, h func(ctx context.Context, ss *sessions.Session) (any, error)) {
	var v any
	err := s.m.Use(r.Context(), r.PathValue("id"), what, func(ctx context.Context, ss *sessions.Session) error {
		var err error
		v, err = h(ctx, ss)
		return err
	})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Service) get(w http.ResponseWriter, r *http.Request) {
	s.use(w, r, "", func(_ context.Context, ss *sessions.Session) (any, error) { return view(ss), nil })
}

func (s *Service) remove(w http.ResponseWriter, r *http.Request) {
	if err := s.m.End(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// actionRequest runs one action: "step_into", "step_over", "step_return",
// "breakpoint:N", "continue" (to the session's breakpoints) or
// "continue:L,...", and their inv_ forms.
type actionRequest struct {
	Action string `json:"action"`
}

func (s *Service) action(w http.ResponseWriter, r *http.Request) {
	// An action that runs past the end is taken (the answer says
	// "finished"); a forward action on a session already finished is
	// refused (409).
	s.use(w, r, "", func(ctx context.Context, ss *sessions.Session) (any, error) {
		var req actionRequest
		if err := decodeErr(r, &req); err != nil {
			return nil, err
		}
		a, err := ndbg.ParseAction(req.Action)
		if err != nil {
			return nil, sessions.Errorf(sessions.Invalid, "action %q: %v", req.Action, err)
		}
		if err := ss.Act(ctx, a); err != nil {
			if sessions.KindOf(err) == sessions.Unprocessable || errors.Is(err, ndbg.ErrFinished) || errors.Is(err, ndbg.ErrAtStart) {
				err = fmt.Errorf("action %s: %w", req.Action, err)
			}
			return nil, err
		}
		return view(ss), nil
	})
}

// historyView is the states so far: the first, then each action and the
// state it led to (null past the end).
type historyView struct {
	Start json.RawMessage `json:"start"`
	Steps []stepView      `json:"steps"`
}

type stepView struct {
	Action string          `json:"action"`
	State  json.RawMessage `json:"state"`
}

func (s *Service) history(w http.ResponseWriter, r *http.Request) {
	s.use(w, r, "", func(_ context.Context, ss *sessions.Session) (any, error) { return historyOf(ss.Debug()), nil })
}

func historyOf(sess *ndbg.Session) historyView {
	t := sess.Trajectory()
	h := historyView{Start: ndbg.MarshalState(t.Start), Steps: make([]stepView, len(t.Steps))}
	for i, st := range t.Steps {
		h.Steps[i] = stepView{Action: st.Action.String(), State: json.RawMessage("null")}
		if st.State != nil {
			h.Steps[i].State = ndbg.MarshalState(*st.State)
		}
	}
	return h
}

func (s *Service) fork(w http.ResponseWriter, r *http.Request) {
	var v sessionView
	if err := s.m.Fork(r.Context(), r.PathValue("id"), func(ss *sessions.Session) { v = view(ss) }); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Location", "/sessions/"+v.ID)
	writeJSON(w, http.StatusCreated, v)
}

// setLocalRequest edits a local of the current state.
type setLocalRequest struct {
	Repr *string `json:"repr"`
}

func (s *Service) setLocal(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.use(w, r, "", func(ctx context.Context, ss *sessions.Session) (any, error) {
		var req setLocalRequest
		if err := decodeErr(r, &req); err != nil {
			return nil, err
		}
		if req.Repr == nil {
			return nil, sessions.Errorf(sessions.Invalid, `"repr" (the new value as a Python repr, e.g. "[3, 1]") is required`)
		}
		if err := ss.Set(ctx, name, *req.Repr); err != nil {
			if sessions.KindOf(err) == sessions.Unprocessable {
				err = fmt.Errorf("setting %s: %w", name, err)
			}
			return nil, err
		}
		return view(ss), nil
	})
}

// line reads the {line} path value; a refusal has been written when ok is
// false.
func line(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("line"))
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, "breakpoint line %q: want a line number, 1 or more", r.PathValue("line"))
		return 0, false
	}
	return n, true
}

func (s *Service) setBreakpoint(w http.ResponseWriter, r *http.Request) {
	n, ok := line(w, r)
	if !ok {
		return
	}
	s.use(w, r, "setting a breakpoint", func(_ context.Context, ss *sessions.Session) (any, error) {
		if err := ss.SetBreakpoint(n, ""); err != nil {
			return nil, err
		}
		return view(ss), nil
	})
}

func (s *Service) clearBreakpoint(w http.ResponseWriter, r *http.Request) {
	n, ok := line(w, r)
	if !ok {
		return
	}
	s.use(w, r, "", func(_ context.Context, ss *sessions.Session) (any, error) {
		ss.ClearBreakpoint(n)
		return view(ss), nil
	})
}
