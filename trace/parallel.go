package trace

import (
	"context"
	"sync"
)

// Parallel runs many programs' work on workers goroutines (at least one),
// each with a Batch of its own (limits lim) that it closes when it ends:
// newWorker is called once per goroutine with its Batch and returns the
// function that does item i. Items 0..n-1 are handed out in order; each
// result is sent on the returned channel in completion order. The channel
// is closed once every item is done, or, after ctx is cancelled, once the
// items under way have returned (their results, and those of later items,
// are dropped). The goroutines end as long as the caller drains the
// channel or cancels ctx.
func Parallel[R any](ctx context.Context, n, workers int, lim Limits, newWorker func(b *Batch) func(ctx context.Context, i int) R) <-chan R {
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
			b := NewBatch(lim)
			defer b.Close()
			do := newWorker(b)
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
