package trace

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ndbg/ndbg/dsl"
)

// Batch traces many programs that ndbg generated itself (package progen) in
// one long-lived sandboxed interpreter, so Python's start-up (tens of
// milliseconds) is paid once rather than per program. Each program gets
// fresh globals, its own time limit (a timer inside the interpreter), event
// cap and output caps, and the same operating-system sandbox as Run (see
// Command). Programs share one interpreter (and its scratch space), so one
// may tamper with what later ones see: every program from outside (a file,
// a client, a user) goes to Run, a Starter or Worker.Run instead, an
// interpreter of its own. An interpreter whose program left
// threads running retires after it. When a
// program kills or wedges the interpreter, that program gets the error and
// the next one starts a fresh interpreter.
//
// A Batch runs one RunAll (or Run) at a time; its methods are safe for
// concurrent use (calls queue up). Use one Batch per core for parallelism.
type Batch struct {
	lim Limits

	mu     sync.Mutex
	p      *proc
	nextID int
	closed bool
}

// Job is one program for Batch.RunAll: Call (e.g. "f(1, 'a')") calls
// Prog.Entry.
type Job struct {
	Prog *dsl.Program
	Call string
}

// Requests queued ahead in the interpreter, so it never waits for Go
// between programs: at most pipeWindow of them and, beyond the first,
// pipeBytes of request text in all (half a pipe's buffer, so a write never
// blocks on an interpreter that is itself blocked writing results).
const (
	pipeWindow = 16
	pipeBytes  = 32 << 10
)

// NewBatch returns a Batch; the interpreter starts on first use.
func NewBatch(lim Limits) *Batch {
	return &Batch{lim: lim.withDefaults()}
}

// ErrClosed is returned by a Batch used after Close.
var ErrClosed = errors.New("trace: batch closed")

// Run traces one program like the package-level Run, in the shared
// interpreter.
func (b *Batch) Run(ctx context.Context, prog *dsl.Program, call string) (*Result, error) {
	var res *Result
	var rerr error
	err := b.RunAll(ctx, []Job{{prog, call}}, func(_ int, r *Result, err error) error {
		res, rerr = r, err
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, rerr
}

// RunAll traces jobs in order and calls fn with each job's index, result
// and error (as Run would return them) as soon as it completes. Later jobs
// are queued in the interpreter meanwhile, so a slow fn overlaps with
// tracing. RunAll returns fn's first non-nil error, the context's error, or
// ErrClosed; per-job failures go to fn.
func (b *Batch) RunAll(ctx context.Context, jobs []Job, fn func(i int, res *Result, err error) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	lim, err := b.lim.WithPython(ctx)
	if err != nil {
		return err
	}
	b.lim = lim
	type flight struct {
		job, id, size int
		sent          time.Time
	}
	var queue []flight
	next, done := 0, 0
	lastDone := time.Now()
	// finish reports job i and drops the interpreter if it died.
	finish := func(i int, res *Result, err error) error {
		done = i + 1
		lastDone = time.Now()
		if b.p != nil && b.p.dead() {
			b.p = nil
		}
		if b.p == nil {
			// Queued jobs died with the interpreter: send them again.
			queue, next = queue[:0], done
		}
		return fn(i, res, err)
	}
	for done < len(jobs) {
		if err := ctx.Err(); err != nil {
			b.drop(len(queue))
			return err
		}
		if b.p == nil {
			p, err := startProc(ctx, b.lim, "batch")
			if err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return ctxErr
				}
				if ferr := finish(done, nil, err); ferr != nil {
					return ferr
				}
				continue
			}
			b.p = p
		}
		bytes := 0
		for _, f := range queue {
			bytes += f.size
		}
		for next < len(jobs) && len(queue) < pipeWindow {
			j := jobs[next]
			if j.Prog == nil {
				if len(queue) > 0 {
					break // report in order: after the queued jobs
				}
				if ferr := fn(next, nil, &Error{Kind: ErrSetup, Msg: "nil program"}); ferr != nil {
					return ferr
				}
				next++
				done = next
				continue
			}
			req, err := encodeRequest(b.nextID+1, j.Prog, j.Call, b.lim)
			if err != nil {
				return err // cannot happen: the request holds strings and numbers
			}
			size := len(req)
			if len(queue) > 0 && bytes+size > pipeBytes {
				break
			}
			b.nextID++
			if err := b.p.send(req, time.Now().Add(b.lim.Timeout+killGrace)); err != nil {
				if len(queue) == 0 {
					if ferr := finish(next, nil, err); ferr != nil {
						return ferr
					}
					next = max(next, done)
				}
				break // the queued jobs learn the cause from recv
			}
			queue = append(queue, flight{next, b.nextID, size, time.Now()})
			bytes += size
			next++
		}
		if len(queue) == 0 {
			continue
		}
		// The interpreter works through its queue in order: the oldest job
		// started when it was sent or when the previous one finished.
		f := queue[0]
		start := f.sent
		if lastDone.After(start) {
			start = lastDone
		}
		res, err := b.p.recv(ctx, f.id, start.Add(b.lim.Timeout+killGrace))
		if ctxErr := ctx.Err(); ctxErr != nil && err != nil {
			b.drop(len(queue))
			return ctxErr
		}
		queue = queue[1:]
		if ferr := finish(f.job, res, err); ferr != nil {
			b.drop(len(queue))
			return ferr
		}
	}
	return nil
}

// drop discards the interpreter when results of n queued jobs would
// otherwise reach a later call.
func (b *Batch) drop(n int) {
	if b.p != nil && (n > 0 || b.p.dead()) {
		b.p.kill()
		b.p = nil
	}
}

// Close kills the interpreter's process group and removes its directory.
func (b *Batch) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.p != nil {
		b.p.shutdown()
		b.p = nil
	}
	return nil
}
