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
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed" // openapi.json
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/owner"
	"github.com/ndbg/ndbg/sample"
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

// Service is the state behind the HTTP handler: the live sessions. Create
// it with New, serve Handler, and Close it after the HTTP server has shut
// down.
type Service struct {
	cfg      Config
	lim      Limits
	backends []string
	mux      *http.ServeMux
	token    [sha256.Size]byte // SHA-256 of Config.Token, compared in constant time

	mu       sync.Mutex
	sessions map[string]*entry
	pending  int // sessions being created, counted against MaxSessions

	done      chan struct{} // closed by Close: the janitor stops
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// entry is one live session. sem (capacity 1) is held by whoever uses the
// session; closed, lastUsed and the session itself are read and written
// only while holding it.
type entry struct {
	id       string
	backend  string
	verify   float64 // the session's verify_below (0: none)
	sem      chan struct{}
	closed   bool
	lastUsed time.Time
	s        *ndbg.Session
}

// lock acquires the session within ctx.
func (e *entry) lock(ctx context.Context) error {
	select {
	case e.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *entry) unlock() { e.lastUsed = time.Now(); <-e.sem }

// New returns a service and starts its janitor, which closes sessions idle
// for longer than Limits.IdleTimeout.
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
	if cfg.Token != "" && len(cfg.Token) < owner.MinTokenLen {
		return nil, fmt.Errorf("serve: the token has %d characters, fewer than %d", len(cfg.Token), owner.MinTokenLen)
	}
	s := &Service{cfg: cfg, lim: lim, backends: backends, sessions: map[string]*entry{}, done: make(chan struct{})}
	if cfg.Token != "" {
		s.token = sha256.Sum256([]byte(cfg.Token))
	}
	s.mux = http.NewServeMux()
	for _, rt := range s.routes() {
		s.mux.HandleFunc(rt.method+" "+rt.path, rt.handle)
	}
	s.wg.Add(1)
	go s.janitor()
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
		{"GET", "/sessions/{id}", s.withSession(s.get)},
		{"DELETE", "/sessions/{id}", s.remove},
		{"POST", "/sessions/{id}/actions", s.withSession(s.action)},
		{"GET", "/sessions/{id}/history", s.withSession(s.history)},
		{"POST", "/sessions/{id}/fork", s.withSession(s.fork)},
		{"PUT", "/sessions/{id}/locals/{name}", s.withSession(s.setLocal)},
		{"PUT", "/sessions/{id}/breakpoints/{line}", s.withSession(s.setBreakpoint)},
		{"DELETE", "/sessions/{id}/breakpoints/{line}", s.withSession(s.clearBreakpoint)},
	}
}

// Handler returns the HTTP handler. A request that is not the owner's
// (authorized) is answered 401 before anything else; a path or method no
// route matches is answered with the mux's status (404 or 405, with Allow)
// and a JSON error.
func (s *Service) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := s.authorized(r); why != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ndbg serve"`)
			writeError(w, http.StatusUnauthorized, "%s", why)
			return
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
		ctx, cancel := context.WithTimeout(r.Context(), s.lim.RequestTimeout)
		defer cancel()
		s.mux.ServeHTTP(w, r.WithContext(ctx))
	})
}

// publicPath is the one path served without the token: the API's
// description, which says how to authenticate and is published with the
// source anyway; it does nothing and tells nothing of the sessions.
const publicPath = "/openapi.json"

// ownerConn marks, in a request's context, a connection Serve accepted
// from a process of the server's own uid (owner.Verified).
type ownerConn struct{}

// authorized returns "" when r may be served, else why not: r comes over
// a connection from the server's own user (a unix socket; Serve), carries
// the token, or asks for publicPath.
func (s *Service) authorized(r *http.Request) string {
	if r.URL.Path == publicPath || r.Context().Value(ownerConn{}) != nil {
		return ""
	}
	if s.cfg.Token == "" {
		return "this server takes requests only over its unix socket, from its own user"
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return `no "Authorization: Bearer <token>" header: ndbg serve runs programs as the user who started it, so it serves only that user; the token is in the file it named when it started (--token-file)`
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], s.token[:]) != 1 {
		return "the bearer token is not this server's (it is the content of the file the server named when it started: a restarted server writes a new one)"
	}
	return ""
}

// probe is a ResponseWriter that keeps only the status and the header.
type probe struct {
	header http.Header
	code   int
}

func (p *probe) Header() http.Header         { return p.header }
func (p *probe) Write(b []byte) (int, error) { return len(b), nil }
func (p *probe) WriteHeader(code int)        { p.code = code }

// Close closes every session and stops the janitor. Call it after the HTTP
// server has shut down; it waits for requests still using a session.
// Closing twice does nothing more.
func (s *Service) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	s.wg.Wait()
	s.mu.Lock()
	all := s.sessions
	s.sessions = map[string]*entry{}
	s.mu.Unlock()
	for _, e := range all {
		e.sem <- struct{}{}
		e.closed = true
		e.s.Close()
		<-e.sem
	}
}

// janitor closes idle sessions until the service closes.
func (s *Service) janitor() {
	defer s.wg.Done()
	every := max(s.lim.IdleTimeout/4, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.expire(now)
		}
	}
}

// expire closes the sessions idle since before now-IdleTimeout. A session
// in use is not idle.
func (s *Service) expire(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.sessions {
		select {
		case e.sem <- struct{}{}:
		default:
			continue // in use
		}
		if now.Sub(e.lastUsed) > s.lim.IdleTimeout {
			delete(s.sessions, id)
			e.closed = true
			e.s.Close()
		}
		<-e.sem
	}
}

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
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
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
		writeError(w, http.StatusRequestEntityTooLarge, "the request body is larger than the limit of %d bytes (--max-body)", tooBig.Limit)
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "the request body is empty: want a JSON object")
	case err != nil:
		writeError(w, http.StatusBadRequest, "the request body is not the JSON this operation takes: %v", err)
	default:
		return true
	}
	return false
}

// fail answers an error the API returned for the request r. An error
// after r's deadline passed is the deadline's, whether or not the error
// says so (a killed run may only say "killed").
func (s *Service) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	code := http.StatusUnprocessableEntity // the program, call or action cannot be done as asked
	if cerr := r.Context().Err(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "%s: the request ran past the limit of %s per request (--request-timeout)", what, s.lim.RequestTimeout)
		return
	case errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "%s: the request was cancelled (the client went away or the server is shutting down)", what)
		return
	case errors.Is(err, ndbg.ErrFinished), errors.Is(err, ndbg.ErrAtStart):
		code = http.StatusConflict
	}
	writeError(w, code, "%s: %v", what, err)
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

func view(e *entry) sessionView {
	v := sessionView{ID: e.id, Backend: e.backend, Call: e.s.Call(), State: json.RawMessage("null"),
		Steps: len(e.s.Trajectory().Steps), Breakpoints: e.s.Breakpoints(), Stack: e.s.Stack(), VerifyBelow: e.verify}
	if v.Breakpoints == nil {
		v.Breakpoints = []int{}
	}
	if o, ok := e.s.Output(); ok {
		v.Output = &outputView{Stdout: string(o.Stdout), Stderr: string(o.Stderr), Truncated: o.Truncated}
	}
	if x := e.s.Escaped(); x != nil {
		v.Exception = &exceptionView{Type: x.Type, Message: x.Message, Line: x.Line}
	}
	if st, ok := e.s.State(); ok {
		// A predicted state says how sure the model was (and whether
		// verify_below replaced it by the real one), as ndbg-infer does.
		var pred *ndbg.Prediction
		if p, ok := e.s.Prediction(); ok {
			pred = &p
		}
		v.State = ndbg.MarshalOutcome(&st, pred)
	} else {
		v.Finished = true
	}
	return v
}

func (s *Service) health(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	n := len(s.sessions)
	s.mu.Unlock()
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
	switch {
	case req.Program == "":
		writeError(w, http.StatusBadRequest, `"program" (the Python source) is required`)
		return
	case len(req.Program) > s.lim.MaxProgramBytes:
		writeError(w, http.StatusRequestEntityTooLarge, "the program is %d bytes, more than the limit of %d (--max-program)", len(req.Program), s.lim.MaxProgramBytes)
		return
	}
	if req.Backend == "" {
		req.Backend = s.backends[0]
	}
	if strings.TrimSpace(req.Call) == "" && req.Backend != Real {
		writeError(w, http.StatusBadRequest, `no "call": debugging a whole script needs backend "real" (the model's trace format has no module-level frames); give "call", e.g. "f(3, [1, 2])", to debug a function on the %s backend`, req.Backend)
		return
	}
	if !slices.Contains(s.backends, req.Backend) {
		writeError(w, http.StatusBadRequest, "backend %q is not offered here (have %s)", req.Backend, strings.Join(s.backends, ", "))
		return
	}
	var p sample.Params
	if req.Sampling != nil {
		if req.Backend == Real {
			writeError(w, http.StatusBadRequest, `"sampling" applies to the neural and cwm backends, not to the real one`)
			return
		}
		sp := req.Sampling
		if sp.Temperature < 0 || sp.TopK < 0 || sp.TopP < 0 || sp.TopP > 1 {
			writeError(w, http.StatusBadRequest, "sampling: temperature and top_k cannot be negative, top_p is in [0, 1]")
			return
		}
		p = sample.Params{Temperature: sp.Temperature, TopK: sp.TopK, TopP: sp.TopP, Seed: sp.Seed}
	}
	switch {
	case req.VerifyBelow < 0 || req.VerifyBelow > 1:
		writeError(w, http.StatusBadRequest, "verify_below %g: want a probability from 0 to 1", req.VerifyBelow)
		return
	case req.VerifyBelow > 0 && req.Backend != Neural:
		writeError(w, http.StatusBadRequest, "verify_below checks the neural backend's predictions, not the %s backend's", req.Backend)
		return
	case req.NoExec && (req.Backend == Real || req.VerifyBelow > 0):
		writeError(w, http.StatusBadRequest, "no_exec runs nothing of the program; the real backend and verify_below run it")
		return
	}
	if !s.reserve(w) {
		return
	}
	var b ndbg.Backend
	switch req.Backend {
	case Neural:
		b = ndbg.Neural(s.cfg.Model, p)
		if req.VerifyBelow > 0 {
			var err error
			if b, err = ndbg.Verify(b, s.cfg.Trace, req.VerifyBelow); err != nil {
				s.unreserve()
				writeError(w, http.StatusBadRequest, "verify_below: %v", err)
				return
			}
		}
	case CWM:
		b = ndbg.CWM(s.cfg.Model, p)
	default:
		b = ndbg.Real(s.cfg.Trace)
	}
	if req.NoExec {
		var err error
		if b, err = ndbg.NoExec(b); err != nil {
			s.unreserve()
			writeError(w, http.StatusBadRequest, "no_exec: %v", err)
			return
		}
	}
	sess, err := ndbg.Start(r.Context(), b, req.Program, req.Call)
	if err != nil {
		s.unreserve()
		s.fail(w, r, "starting the session", err)
		return
	}
	s.add(w, &entry{backend: req.Backend, verify: req.VerifyBelow, s: sess})
}

// reserve counts a session about to be created against MaxSessions.
func (s *Service) reserve(w http.ResponseWriter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions)+s.pending >= s.lim.MaxSessions {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "there are %d live sessions, the limit (--max-sessions): delete one, or wait for idle ones to expire after %s", s.lim.MaxSessions, s.lim.IdleTimeout)
		return false
	}
	s.pending++
	return true
}

func (s *Service) unreserve() {
	s.mu.Lock()
	s.pending--
	s.mu.Unlock()
}

// add registers a new session e (its slot reserved; backend, verify and
// the session set) and answers 201.
func (s *Service) add(w http.ResponseWriter, e *entry) {
	var id [8]byte
	rand.Read(id[:]) // never fails (crypto/rand)
	e.id, e.sem, e.lastUsed = hex.EncodeToString(id[:]), make(chan struct{}, 1), time.Now()
	v := view(e)
	s.mu.Lock()
	s.pending--
	select {
	case <-s.done: // Close ran while this request was still running (past the shutdown's bound)
		s.mu.Unlock()
		e.s.Close()
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down")
		return
	default:
	}
	s.sessions[e.id] = e
	s.mu.Unlock()
	w.Header().Set("Location", "/sessions/"+e.id)
	writeJSON(w, http.StatusCreated, v)
}

// withSession finds the session {id}, holds its lock while h runs, and
// answers 404 for a session that does not exist (or no longer does).
func (s *Service) withSession(h func(http.ResponseWriter, *http.Request, *entry)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e, ok := s.acquire(w, r)
		if !ok {
			return
		}
		defer e.unlock()
		h(w, r, e)
	}
}

// acquire finds the session {id} and takes its lock (waiting within the
// request's deadline); it answers the request itself and reports false when
// the session does not exist, was closed meanwhile, or the wait failed. The
// caller unlocks.
func (s *Service) acquire(w http.ResponseWriter, r *http.Request) (*entry, bool) {
	e, ok := s.lookup(w, r)
	if !ok {
		return nil, false
	}
	if err := e.lock(r.Context()); err != nil {
		s.fail(w, r, "waiting for the session (another request is using it)", err)
		return nil, false
	}
	if e.closed {
		e.unlock()
		s.notFound(w, e.id)
		return nil, false
	}
	return e, true
}

func (s *Service) lookup(w http.ResponseWriter, r *http.Request) (*entry, bool) {
	id := r.PathValue("id")
	s.mu.Lock()
	e, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		s.notFound(w, id)
	}
	return e, ok
}

func (s *Service) notFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, "no session %q: it was never created, was deleted, or expired after %s idle", id, s.lim.IdleTimeout)
}

func (s *Service) get(w http.ResponseWriter, _ *http.Request, e *entry) {
	writeJSON(w, http.StatusOK, view(e))
}

func (s *Service) remove(w http.ResponseWriter, r *http.Request) {
	e, ok := s.acquire(w, r)
	if !ok {
		return
	}
	defer e.unlock()
	s.mu.Lock()
	delete(s.sessions, e.id)
	s.mu.Unlock()
	e.closed = true
	e.s.Close()
	w.WriteHeader(http.StatusNoContent)
}

// actionRequest runs one action: "step_into", "step_over", "step_return",
// "breakpoint:N", "continue" (to the session's breakpoints) or
// "continue:L,...", and their inv_ forms.
type actionRequest struct {
	Action string `json:"action"`
}

func (s *Service) action(w http.ResponseWriter, r *http.Request, e *entry) {
	var req actionRequest
	if !decode(w, r, &req) {
		return
	}
	a, err := ndbg.ParseAction(req.Action)
	if err != nil {
		writeError(w, http.StatusBadRequest, "action %q: %v", req.Action, err)
		return
	}
	before := len(e.s.Trajectory().Steps)
	switch {
	case a.Kind == dsl.Continue && a.Lines == nil:
		_, err = e.s.Continue(r.Context())
	case a.Kind == dsl.InvContinue && a.Lines == nil:
		_, err = e.s.ContinueBack(r.Context())
	default:
		_, err = e.s.Do(r.Context(), a)
	}
	// An action that runs past the end returns ErrFinished and is recorded:
	// it succeeded, and the answer says "finished". A forward action on a
	// session already finished records nothing and is refused.
	ranOff := errors.Is(err, ndbg.ErrFinished) && len(e.s.Trajectory().Steps) > before
	if err != nil && !ranOff {
		s.fail(w, r, "action "+req.Action, err)
		return
	}
	writeJSON(w, http.StatusOK, view(e))
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

func (s *Service) history(w http.ResponseWriter, _ *http.Request, e *entry) {
	t := e.s.Trajectory()
	h := historyView{Start: ndbg.MarshalState(t.Start), Steps: make([]stepView, len(t.Steps))}
	for i, st := range t.Steps {
		h.Steps[i] = stepView{Action: st.Action.String(), State: json.RawMessage("null")}
		if st.State != nil {
			h.Steps[i].State = ndbg.MarshalState(*st.State)
		}
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *Service) fork(w http.ResponseWriter, _ *http.Request, e *entry) {
	if !s.reserve(w) {
		return
	}
	s.add(w, &entry{backend: e.backend, verify: e.verify, s: e.s.Fork()})
}

// setLocalRequest edits a local of the current state.
type setLocalRequest struct {
	Repr *string `json:"repr"`
}

func (s *Service) setLocal(w http.ResponseWriter, r *http.Request, e *entry) {
	var req setLocalRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Repr == nil {
		writeError(w, http.StatusBadRequest, `"repr" (the new value as a Python repr, e.g. "[3, 1]") is required`)
		return
	}
	name := r.PathValue("name")
	if err := e.s.Set(r.Context(), name, *req.Repr); err != nil {
		s.fail(w, r, "setting "+name, err)
		return
	}
	writeJSON(w, http.StatusOK, view(e))
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

func (s *Service) setBreakpoint(w http.ResponseWriter, r *http.Request, e *entry) {
	n, ok := line(w, r)
	if !ok {
		return
	}
	if err := e.s.SetBreakpoint(n); err != nil {
		s.fail(w, r, "setting a breakpoint", err)
		return
	}
	writeJSON(w, http.StatusOK, view(e))
}

func (s *Service) clearBreakpoint(w http.ResponseWriter, r *http.Request, e *entry) {
	n, ok := line(w, r)
	if !ok {
		return
	}
	e.s.ClearBreakpoint(n)
	writeJSON(w, http.StatusOK, view(e))
}
