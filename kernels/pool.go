package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a fixed set of worker goroutines for data-parallel loops.
//
// Idle workers block on a channel: a Pool never spins, so it shares the
// machine gracefully with other busy processes (work is handed out in small
// chunks from an atomic counter, so a descheduled thread simply takes fewer
// chunks). The calling goroutine always takes part in the work, so a Pool of
// T threads starts T-1 goroutines. All goroutines end when Close returns.
//
// A nil *Pool is valid and runs everything on the calling goroutine. For may
// be called from several goroutines at once.
type Pool struct {
	threads int
	mu      sync.RWMutex // guards closed and sends on work
	closed  bool
	work    chan *job
	wg      sync.WaitGroup
}

type job struct {
	next  atomic.Int64
	n     int
	grain int
	fn    func(lo, hi int)
	done  sync.WaitGroup // one count per chunk
}

// NewPool returns a pool of the given number of threads (including the
// caller's); threads ≤ 0 means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads, work: make(chan *job, threads)}
	for range threads - 1 {
		p.wg.Add(1)
		go p.worker()
	}
	return p
}

func (p *Pool) worker() {
	defer p.wg.Done()
	for j := range p.work {
		j.run()
	}
}

// run takes chunks of the job until none is left. A worker that arrives
// after the last chunk was taken does nothing: the caller waits for chunks,
// not for workers, so a job never waits on a busy or late worker.
func (j *job) run() {
	for {
		lo := int(j.next.Add(int64(j.grain))) - j.grain
		if lo >= j.n {
			return
		}
		j.fn(lo, min(lo+j.grain, j.n))
		j.done.Done()
	}
}

// Threads returns the number of threads of p (1 for a nil pool).
func (p *Pool) Threads() int {
	if p == nil {
		return 1
	}
	return p.threads
}

// Close stops the workers and waits until their goroutines have ended. A
// closed pool still works, running everything on the caller. Close is
// idempotent.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.work)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// For calls fn(lo, hi) over disjoint ranges [lo, hi) covering [0, n), each
// at most grain long (grain ≤ 0 means 1), in parallel on the pool's threads,
// and returns when all calls have returned. fn must be safe for concurrent
// use on disjoint ranges. fn may itself call For (it never deadlocks: when
// every worker is busy, the caller does the work).
func (p *Pool) For(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain <= 0 {
		grain = 1
	}
	chunks := (n + grain - 1) / grain
	if p == nil || p.threads <= 1 || chunks <= 1 {
		for lo := 0; lo < n; lo += grain {
			fn(lo, min(lo+grain, n))
		}
		return
	}
	j := &job{n: n, grain: grain, fn: fn}
	j.done.Add(chunks)
	helpers := min(p.threads-1, chunks-1)
	p.mu.RLock()
	if !p.closed {
	send:
		for range helpers {
			select {
			case p.work <- j:
			default: // queue full (e.g. a nested For): the caller does more
				break send
			}
		}
	}
	p.mu.RUnlock()
	j.run()
	j.done.Wait()
}
