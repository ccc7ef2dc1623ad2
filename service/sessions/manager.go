// Package sessions is the session manager the network front ends share
// (`ndbg mcp`, and `ndbg serve` through package serve): the table of live
// debugging sessions, the limits on them (sessions at once, program size,
// time per request, idle time, models opened on request), their lifecycle
// (start, use, fork, end, idle expiry) and the service's shutdown, which
// lets the operations in flight finish within a grace period, stops them
// after it, and refuses new ones. A front end only translates its protocol
// into these calls and their results and errors (Error, Kind) into its
// answers.
//
// Every neural session runs on one shared ndbg.Model (Config.Model, or a
// model a session names, opened once and shared by every session naming
// it), whose batched decode turns the one-token steps of concurrent
// sessions into one pass (ARCHITECTURE.md, "ndbg serve, concretely").
//
// A Session is not safe for concurrent use, so the manager gives it to one
// operation at a time (Use): the others wait for it within their own
// deadline. Operations on different sessions run in parallel.
//
// The manager runs programs with the rights of the user who started it;
// who may ask it to is the front end's business (docs/security.md: every
// front end serves only its owner, package owner).
package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/trace"
)

// Backend names a client may ask for.
const (
	Neural  = "neural"  // the model predicts
	CWM     = "cwm"     // a CWM checkpoint, actions emulated by forced event tokens
	Real    = "real"    // the program runs under sys.settrace
	Compare = "compare" // the model predicts, and a real run takes the same actions beside it
)

// Limits bound what clients may ask of the manager. A zero field takes the
// default named beside it.
type Limits struct {
	MaxSessions     int           // live sessions at once (256)
	MaxProgramBytes int           // a session's program source (256 KiB)
	RequestTimeout  time.Duration // one operation, passed to the API as its context's deadline (60 s)
	IdleTimeout     time.Duration // a session unused this long is closed (10 min)
	// MaxModels bounds the models opened at once for sessions that name a
	// model directory (Spec.Model), beside Config.Model (2). A model is
	// closed when its last session ends.
	MaxModels int
}

func (l Limits) withDefaults() Limits {
	if l.MaxSessions <= 0 {
		l.MaxSessions = 256
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
	if l.MaxModels <= 0 {
		l.MaxModels = 2
	}
	return l
}

// Config configures a Manager.
type Config struct {
	// Model answers the neural, CWM and compare backends; nil offers the
	// real backend only. The caller opens it and closes it after
	// Manager.Close.
	Model *ndbg.Model
	// Backends offered to clients (Neural, CWM, Real, Compare), the first
	// the default; empty offers every backend the configuration allows.
	Backends []string
	// Trace limits each real run (the real backend's, the run that starts
	// a neural session, the compare backend's real run), and its Python
	// and sandbox choice are those of evaluations (Session.Evaluate).
	Trace  trace.Limits
	Limits Limits
	// OpenModel opens a model directory a session names (Spec.Model); nil
	// refuses such sessions.
	OpenModel func(ctx context.Context, dir string) (*ndbg.Model, error)
}

// Manager holds the live sessions. Create it with New; Shutdown it when
// the service stops (or Close it).
type Manager struct {
	cfg      Config
	lim      Limits
	backends []string
	models   *pool

	mu       sync.Mutex
	sessions map[string]*Session
	pending  int  // sessions being created, counted against MaxSessions
	inflight int  // operations running (Start, Use, Run, End, Fork)
	draining bool // Shutdown began: new operations are refused
	drained  chan struct{}

	// stop is cancelled, with ErrShuttingDown, when Shutdown's grace is
	// over: every operation's context derives from it.
	stop       context.Context
	cancelStop context.CancelCauseFunc

	done      chan struct{} // closed by Close: the janitor stops
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New returns a manager and starts its janitor, which closes sessions idle
// for longer than Limits.IdleTimeout.
func New(cfg Config) (*Manager, error) {
	lim := cfg.Limits.withDefaults()
	offered := []string{Real}
	switch {
	case cfg.Model != nil && cfg.Model.ActionTokens(): // trained on the DSL: not a CWM checkpoint
		offered = []string{Neural, Real, Compare}
	case cfg.Model != nil:
		offered = []string{Neural, CWM, Real, Compare}
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
				return nil, fmt.Errorf("sessions: backend %q is not available (have %s; neural, cwm and compare need a model)%s", b, strings.Join(offered, ", "), why)
			}
			if !slices.Contains(backends, b) {
				backends = append(backends, b)
			}
		}
	}
	// python3 once for every session's runs; a failure is each run's to
	// report.
	if lim, err := cfg.Trace.WithPython(context.Background()); err == nil {
		cfg.Trace = lim
	}
	m := &Manager{cfg: cfg, lim: lim, backends: backends, sessions: map[string]*Session{},
		drained: make(chan struct{}), done: make(chan struct{})}
	m.models = &pool{open: cfg.OpenModel, max: lim.MaxModels, open1: map[string]*pooled{}}
	m.stop, m.cancelStop = context.WithCancelCause(context.Background())
	m.wg.Add(1)
	go m.janitor()
	return m, nil
}

// Backends returns the backends offered, the default first.
func (m *Manager) Backends() []string { return slices.Clone(m.backends) }

// Limits returns the limits in force (defaults filled in).
func (m *Manager) Limits() Limits { return m.lim }

// Model returns the service's model (nil when it offers the real backend
// only).
func (m *Manager) Model() *ndbg.Model { return m.cfg.Model }

// Len returns the number of live sessions.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// op is one operation in flight: its context (the caller's, bounded by
// the time per request and cut by the shutdown) and its end.
type op struct {
	ctx    context.Context
	cancel func()
	m      *Manager
}

// begin starts an operation, or refuses it while the manager shuts down.
func (m *Manager) begin(ctx context.Context) (*op, error) {
	m.mu.Lock()
	if m.draining {
		m.mu.Unlock()
		return nil, &Error{Kind: Unavailable, Err: ErrShuttingDown}
	}
	m.inflight++
	m.mu.Unlock()
	c, cancel := context.WithCancelCause(ctx)
	stopAfter := context.AfterFunc(m.stop, func() { cancel(context.Cause(m.stop)) })
	c, cancelTimeout := context.WithTimeoutCause(c, m.lim.RequestTimeout, errTimeout)
	return &op{ctx: c, m: m, cancel: func() {
		cancelTimeout()
		stopAfter()
		cancel(nil)
	}}, nil
}

// end ends the operation.
func (o *op) end() {
	o.cancel()
	m := o.m
	m.mu.Lock()
	m.inflight--
	if m.draining && m.inflight == 0 {
		select {
		case <-m.drained:
		default:
			close(m.drained)
		}
	}
	m.mu.Unlock()
}

// fail is classify for this operation.
func (o *op) fail(what string, err error) error {
	return classify(o.ctx, what, err, o.m.lim.RequestTimeout)
}

// Start starts a session as spec says and, while no other operation can
// use it yet, calls then with it (a front end writes its answer there);
// then the session is live. The error is an *Error: a spec that is
// refused, the session limit, or the API's refusal to start (the program
// does not compile, the call does not match).
func (m *Manager) Start(ctx context.Context, spec Spec, then func(*Session)) error {
	spec, err := m.check(spec)
	if err != nil {
		return err
	}
	o, err := m.begin(ctx)
	if err != nil {
		return err
	}
	defer o.end()
	if err := m.reserve(); err != nil {
		return err
	}
	s, err := m.start(o.ctx, spec)
	if err != nil {
		m.unreserve()
		return o.fail("starting the session", err)
	}
	return m.add(o, s, then)
}

// reserve counts a session about to be created against MaxSessions.
func (m *Manager) reserve() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sessions)+m.pending >= m.lim.MaxSessions {
		return errorf(TooMany, "there are %d live sessions, the limit (--max-sessions): end one, or wait for idle ones to expire after %s", m.lim.MaxSessions, m.lim.IdleTimeout)
	}
	m.pending++
	return nil
}

func (m *Manager) unreserve() {
	m.mu.Lock()
	m.pending--
	m.mu.Unlock()
}

// add registers s (its slot reserved) after then has seen it. A session
// made after the shutdown stopped operations is closed instead.
func (m *Manager) add(o *op, s *Session, then func(*Session)) error {
	var id [8]byte
	rand.Read(id[:]) // never fails (crypto/rand)
	s.id, s.sem, s.lastUsed = hex.EncodeToString(id[:]), make(chan struct{}, 1), time.Now()
	if then != nil {
		then(s)
	}
	m.mu.Lock()
	m.pending--
	if m.stop.Err() != nil || o.ctx.Err() != nil {
		m.mu.Unlock()
		s.close()
		return o.fail("starting the session", o.ctx.Err())
	}
	m.sessions[s.id] = s
	m.mu.Unlock()
	return nil
}

// Use finds the session id, waits for it within ctx (another operation
// may be using it), and calls f with it and the operation's context
// (ctx, bounded by the time per request and cut by the shutdown). An
// error f returns is classified (classify: the context's end, the API's
// ErrFinished and ErrAtStart, an Error as it is) under what, which names
// the operation ("action step_over").
func (m *Manager) Use(ctx context.Context, id, what string, f func(ctx context.Context, s *Session) error) error {
	o, err := m.begin(ctx)
	if err != nil {
		return err
	}
	defer o.end()
	s, err := m.acquire(o, id)
	if err != nil {
		return err
	}
	defer s.unlock()
	return o.fail(what, f(o.ctx, s))
}

// acquire finds the session id and takes its lock within the operation's
// context.
func (m *Manager) acquire(o *op, id string) (*Session, error) {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok {
		return nil, m.notFound(id)
	}
	select {
	case s.sem <- struct{}{}:
	case <-o.ctx.Done():
		return nil, o.fail("waiting for the session (another request is using it)", o.ctx.Err())
	}
	if s.closed {
		s.unlock()
		return nil, m.notFound(id)
	}
	return s, nil
}

func (m *Manager) notFound(id string) error {
	return errorf(NotFound, "no session %q: it was never created, was ended, or expired after %s idle", id, m.lim.IdleTimeout)
}

// Fork copies the session id (its history, breakpoints and, for compare,
// the real run beside) into a new live session, which then sees as Start's
// does.
func (m *Manager) Fork(ctx context.Context, id string, then func(*Session)) error {
	o, err := m.begin(ctx)
	if err != nil {
		return err
	}
	defer o.end()
	s, err := m.acquire(o, id)
	if err != nil {
		return err
	}
	defer s.unlock()
	if err := m.reserve(); err != nil {
		return err
	}
	return m.add(o, s.fork(), then)
}

// End closes the session id (waiting for an operation using it).
func (m *Manager) End(ctx context.Context, id string) error {
	o, err := m.begin(ctx)
	if err != nil {
		return err
	}
	defer o.end()
	s, err := m.acquire(o, id)
	if err != nil {
		return err
	}
	defer s.unlock()
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
	s.close()
	return nil
}

// Run runs f, an operation on no session (a one-shot prediction), as one
// in flight: refused while shutting down, given the time per request and
// stopped by the shutdown. Its error is classified under what.
func (m *Manager) Run(ctx context.Context, what string, f func(ctx context.Context) error) error {
	o, err := m.begin(ctx)
	if err != nil {
		return err
	}
	defer o.end()
	return o.fail(what, f(o.ctx))
}

// Shutdown stops the manager: from now on every operation is refused
// (ErrShuttingDown, Unavailable); those in flight may finish until ctx is
// done, when they are stopped (their contexts cancelled with
// ErrShuttingDown: each returns promptly, its client told so); then every
// session is closed. It returns ctx's error when operations had to be
// stopped. Calling it again waits again and does nothing more.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.drain()
	var err error
	select {
	case <-m.drained:
	case <-ctx.Done():
		err = fmt.Errorf("sessions: operations still running at the end of the shutdown's grace were stopped: %w", context.Cause(ctx))
		m.cancelStop(ErrShuttingDown)
		<-m.drained // every operation honours its context: they end now
	}
	m.Close()
	return err
}

// Close stops whatever runs (as Shutdown past its grace), closes every
// session and stops the janitor. Closing twice does nothing more.
func (m *Manager) Close() {
	m.cancelStop(ErrShuttingDown)
	m.closeOnce.Do(func() { close(m.done) })
	m.wg.Wait()
	m.drain()
	m.mu.Lock()
	all := m.sessions
	m.sessions = map[string]*Session{}
	m.mu.Unlock()
	for _, s := range all {
		s.sem <- struct{}{}
		s.close()
		<-s.sem
	}
}

// drain refuses new operations from now on.
func (m *Manager) drain() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.draining {
		m.draining = true
		if m.inflight == 0 {
			close(m.drained)
		}
	}
}

// Draining reports whether Shutdown (or Close) began.
func (m *Manager) Draining() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.draining
}

// janitor closes idle sessions until the manager closes.
func (m *Manager) janitor() {
	defer m.wg.Done()
	every := max(m.lim.IdleTimeout/4, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.done:
			return
		case now := <-t.C:
			m.expire(now)
		}
	}
}

// expire closes the sessions idle since before now-IdleTimeout. A session
// in use is not idle.
func (m *Manager) expire(now time.Time) {
	m.mu.Lock()
	var idle []*Session
	for id, s := range m.sessions {
		select {
		case s.sem <- struct{}{}:
		default:
			continue // in use
		}
		if now.Sub(s.lastUsed) > m.lim.IdleTimeout {
			delete(m.sessions, id)
			idle = append(idle, s)
			continue // still held: closed below, outside m.mu
		}
		<-s.sem
	}
	m.mu.Unlock()
	for _, s := range idle {
		s.close()
		<-s.sem
	}
}

// InFlight returns the number of operations running.
func (m *Manager) InFlight() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inflight
}
