package trace

import (
	"context"
	"errors"
	"sync"

	"github.com/ndbg/ndbg/dsl"
)

// Batch traces many trusted programs in one long-lived sandboxed
// interpreter, so Python's start-up (tens of milliseconds) is paid once
// rather than per program. Each program gets fresh globals, its own time
// limit (a timer inside the interpreter), event cap and output caps, and the
// same outer sandbox as Run (process group, memory limit, private directory,
// disabled process creation). Programs share one interpreter, so one may
// tamper with what later ones see: use Run for untrusted code. When a
// program kills or wedges the interpreter, that program gets the error and
// the next one starts a fresh interpreter.
//
// A Batch runs one program at a time; its methods are safe for concurrent
// use (calls queue up). Use one Batch per core for parallelism.
type Batch struct {
	lim Limits

	mu     sync.Mutex
	p      *proc
	nextID int
	closed bool
}

// NewBatch returns a Batch; the interpreter starts on first use.
func NewBatch(lim Limits) *Batch {
	return &Batch{lim: lim.withDefaults()}
}

// ErrClosed is returned by a Batch used after Close.
var ErrClosed = errors.New("trace: batch closed")

// Run traces one program like the package-level Run, in the shared
// interpreter. Results come back as soon as each program completes.
func (b *Batch) Run(ctx context.Context, prog *dsl.Program, call string) (*Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.lim.Python == "" {
		py, err := FindPython(ctx)
		if err != nil {
			return nil, err
		}
		b.lim.Python = py
	}
	if b.p == nil {
		p, err := startProc(ctx, b.lim, "batch")
		if err != nil {
			return nil, err
		}
		b.p = p
	}
	b.nextID++
	res, err := b.p.run(ctx, b.nextID, prog, call, b.lim)
	if b.p.dead() {
		b.p = nil
	}
	return res, err
}

// Close kills the interpreter's process group and removes its directory.
func (b *Batch) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.p != nil {
		b.p.kill()
		b.p = nil
	}
	return nil
}
