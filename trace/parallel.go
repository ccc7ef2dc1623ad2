package trace

import (
	"context"
	"sync"

	"github.com/ndbg/ndbg/dsl"
)

// Worker is how one Parallel worker traces programs, in two ways that must
// not be confused:
//
//   - Run gives each program an interpreter of its own (a Starter's, the
//     next one started ahead, so its start-up overlaps the work): for every
//     program from outside (a file, a client, a user), which could otherwise
//     tamper with the next one's interpreter (rebind json.dumps, leave a
//     thread behind);
//   - RunGenerated runs programs in one shared interpreter (a Batch, Python's
//     start-up paid once): only for programs ndbg generated itself (package
//     progen), which do no such thing.
//
// Both start their interpreters on first use. A Worker is not safe for
// concurrent use; Parallel closes it when the worker ends.
type Worker struct {
	lim     Limits
	batch   *Batch
	starter *Starter
}

// NewWorker returns a Worker for programs under lim; Close it when done.
func NewWorker(lim Limits) *Worker { return &Worker{lim: lim} }

// Run traces prog's call in a fresh interpreter, as the package-level Run
// does.
func (w *Worker) Run(ctx context.Context, prog *dsl.Program, call string) (*Result, error) {
	if w.starter == nil {
		s, err := NewStarter(ctx, w.lim)
		if err != nil {
			return nil, err
		}
		w.starter = s
	}
	return w.starter.Run(ctx, prog, call, w.lim)
}

// RunGenerated traces prog's call, a program ndbg generated itself, in the
// worker's shared interpreter (Batch.Run).
func (w *Worker) RunGenerated(ctx context.Context, prog *dsl.Program, call string) (*Result, error) {
	if w.batch == nil {
		w.batch = NewBatch(w.lim)
	}
	return w.batch.Run(ctx, prog, call)
}

// Close ends the worker's interpreters and waits for them.
func (w *Worker) Close() {
	if w.batch != nil {
		w.batch.Close()
	}
	if w.starter != nil {
		w.starter.Close()
	}
}

// Parallel runs many programs' work on workers goroutines (at least one),
// each with a Worker of its own (limits lim) that it closes when it ends:
// newWorker is called once per goroutine with its Worker and returns the
// function that does item i. Items 0..n-1 are handed out in order; each
// result is sent on the returned channel in completion order. The channel
// is closed once every item is done, or, after ctx is cancelled, once the
// items under way have returned (their results, and those of later items,
// are dropped). The goroutines end as long as the caller drains the
// channel or cancels ctx.
func Parallel[R any](ctx context.Context, n, workers int, lim Limits, newWorker func(w *Worker) func(ctx context.Context, i int) R) <-chan R {
	jobs := make(chan int)
	out := make(chan R, 4*max(workers, 1))
	go func() {
		defer close(jobs)
		for i := range n {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := NewWorker(lim)
			defer w.Close()
			do := newWorker(w)
			for i := range jobs {
				r := do(ctx, i)
				if ctx.Err() != nil {
					return
				}
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}
