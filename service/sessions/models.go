package sessions

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/ndbg/ndbg"
)

// pool is the models opened for sessions that name a model directory
// (Spec.Model): each opened once, shared by every session naming it (so
// their decode steps batch together), and closed when its last session
// ends. At most max are open at once.
type pool struct {
	open  func(ctx context.Context, dir string) (*ndbg.Model, error)
	max   int
	mu    sync.Mutex
	open1 map[string]*pooled // by absolute directory
}

// pooled is one opened (or opening) model and the sessions using it.
type pooled struct {
	dir   string
	refs  int
	ready chan struct{} // closed once m or err is set
	m     *ndbg.Model
	err   error
}

// acquire returns the model in dir, opening it if no session uses it yet;
// the caller releases it.
func (p *pool) acquire(ctx context.Context, dir string) (*pooled, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errorf(Invalid, "model %q: %v", dir, err)
	}
	p.mu.Lock()
	pm, ok := p.open1[abs]
	switch {
	case ok:
		pm.refs++
		p.mu.Unlock()
		select {
		case <-pm.ready:
		case <-ctx.Done():
			p.release(pm)
			return nil, ctx.Err()
		}
	case len(p.open1) >= p.max:
		p.mu.Unlock()
		return nil, errorf(TooMany, "model %s: %d models named by sessions are open, the limit (--max-models); end the sessions using one, or use the server's model", abs, p.max)
	default:
		// The opener holds the first reference, so no waiter's release
		// can close the model before it is ready.
		pm = &pooled{dir: abs, refs: 1, ready: make(chan struct{})}
		p.open1[abs] = pm
		p.mu.Unlock()
		// A session naming it meanwhile waits for it here (and fails
		// with it: a later one tries again).
		pm.m, pm.err = p.open(ctx, abs)
		if pm.err != nil {
			pm.err = &Error{Kind: Unprocessable, Err: fmt.Errorf("opening the model %s: %w", abs, pm.err)}
		}
		close(pm.ready)
	}
	if pm.err != nil {
		p.release(pm)
		return nil, pm.err
	}
	return pm, nil
}

// retain counts one more session on pm (a fork).
func (p *pool) retain(pm *pooled) {
	p.mu.Lock()
	pm.refs++
	p.mu.Unlock()
}

// release counts one session fewer on pm, closing its model after the
// last.
func (p *pool) release(pm *pooled) {
	p.mu.Lock()
	pm.refs--
	last := pm.refs == 0
	if last {
		delete(p.open1, pm.dir)
	}
	p.mu.Unlock()
	if last {
		if pm.m != nil { // ready: its opener held a reference until then
			pm.m.Close()
		}
	}
}
