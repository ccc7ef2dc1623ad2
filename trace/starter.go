package trace

import (
	"context"
	"sync"

	"github.com/ndbg/ndbg/dsl"
)

// Starter runs programs as Run and CallEvent do, each in a fresh sandboxed
// interpreter of its own, but keeps the next interpreter started ahead: a
// spare that has said hello and waits for its one request. Starting an
// interpreter (bubblewrap, Python, the tracer's imports) is most of a short
// run's time (about 45 ms of 55 here), so a debugger that starts sessions
// one after another (a server's, an agent's) finds it done. The first two
// runs start their own interpreters, and only the second sets a spare
// starting: a one-shot command (ndbg-infer) never starts a spare beside its
// work that it would not use. Nothing of a program ever runs
// in an interpreter that ran another: a spare is only ever handed one
// request, as Run's own interpreter is.
//
// A spare serves runs whose limits start an interpreter the same way as
// the Starter's (interpreter, sandbox, memory and CPU limits, hash seed,
// output caps); other runs start their own. Each run's finished interpreter
// is reaped in the background. Close kills the spare and waits for all of
// it: after Close no process or goroutine of the Starter remains. Safe for
// concurrent use.
type Starter struct {
	lim    Limits // with defaults, Python resolved
	ctx    context.Context
	cancel context.CancelFunc // ends a spare's start on Close

	mu       sync.Mutex
	spare    *proc // started, nothing sent to it; nil while there is none
	starting bool  // a spare is being started
	runs     int   // runs taken so far: spares from the second on
	closed   bool
	wg       sync.WaitGroup // spare starts and background shutdowns, counted under mu before Close
}

// NewStarter returns a Starter for runs under lim (defaults filled in; an
// empty Python is python3 on PATH, looked up now).
func NewStarter(ctx context.Context, lim Limits) (*Starter, error) {
	lim, err := lim.resolved(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	return &Starter{lim: lim, ctx: sctx, cancel: cancel}, nil
}

// Run is Run(ctx, prog, call, lim) on the spare where lim allows it.
func (s *Starter) Run(ctx context.Context, prog *dsl.Program, call string, lim Limits) (*Result, error) {
	if prog == nil {
		return nil, &Error{Kind: ErrSetup, Msg: "nil program"}
	}
	lim = lim.withDefaults()
	if lim.Python == "" {
		lim.Python = s.lim.Python
	}
	p, err := s.take(ctx, lim)
	if err != nil {
		return nil, err
	}
	defer s.retire(p)
	return p.run(ctx, 1, prog, call, lim)
}

// CallEvent is CallEvent(ctx, prog, call, lim) on the spare where lim
// allows it.
func (s *Starter) CallEvent(ctx context.Context, prog *dsl.Program, call string, lim Limits) (Event, error) {
	lim.noExec = true
	return callEventOf(s.Run(ctx, prog, call, lim))
}

// Close kills the spare, ends a start under way and waits until every
// interpreter the Starter started has been reaped. Runs after Close start
// their own interpreters, as Run does. Close is idempotent.
func (s *Starter) Close() {
	s.mu.Lock()
	s.closed = true
	spare := s.spare
	s.spare = nil
	s.mu.Unlock()
	s.cancel()
	if spare != nil {
		spare.kill()
	}
	s.wg.Wait()
}

// take returns an interpreter for a run under lim: the spare when there is
// one and lim starts interpreters as the Starter's do, else a new one; from
// the second run on it then sets a spare starting.
func (s *Starter) take(ctx context.Context, lim Limits) (*proc, error) {
	s.mu.Lock()
	s.runs++
	p := s.spare
	if p != nil && sameStart(lim, s.lim) {
		s.spare = nil
		s.refill()
		s.mu.Unlock()
		return p, nil
	}
	s.mu.Unlock()
	p, err := startProc(ctx, lim, "single")
	s.mu.Lock()
	if s.runs > 1 {
		s.refill()
	}
	s.mu.Unlock()
	return p, err
}

// refill starts a spare in the background unless there is one, one is on
// its way or the Starter is closed. s.mu is held.
func (s *Starter) refill() {
	if s.spare != nil || s.starting || s.closed {
		return
	}
	s.starting = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		p, err := startProc(s.ctx, s.lim, "single")
		s.mu.Lock()
		defer s.mu.Unlock()
		s.starting = false
		switch {
		case err != nil: // the next run starts its own and reports the error
		case s.closed:
			p.kill()
		default:
			s.spare = p
		}
	}()
}

// retire shuts a used interpreter down in the background (a finished
// tracer exits by itself in a few milliseconds; see shutdown).
func (s *Starter) retire(p *proc) {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if closed { // Close may be waiting: no new background work
		p.shutdown()
		return
	}
	go func() {
		defer s.wg.Done()
		p.shutdown()
	}()
}

// sameStart reports whether a and b start an interpreter the same way
// (startProc's inputs; the rest of Limits goes with each request).
func sameStart(a, b Limits) bool {
	return a.Python == b.Python && a.Unsandboxed == b.Unsandboxed && a.bwrap == b.bwrap &&
		a.MaxMemory == b.MaxMemory && a.Timeout == b.Timeout && a.HashSeed == b.HashSeed &&
		a.MaxOutputBytes == b.MaxOutputBytes && a.MaxStdout == b.MaxStdout && a.onStart == nil && b.onStart == nil
}
