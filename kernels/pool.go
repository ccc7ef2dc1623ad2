package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbg/ndbg/internal/freelist"
)

// spinFor bounds every busy wait of a Pool: a worker that finished a job
// watches for the next one this long before it blocks, and a caller whose
// own chunks are done watches this long for the workers' last chunks before
// it blocks. Decode hands out dozens of jobs per token, a few microseconds
// apart; waking a blocked worker costs tens of microseconds on a VM (an
// idle vCPU must be woken), so a short spin keeps the second thread busy.
// It is bounded so that a thread whose partner is descheduled (another
// process on its core) burns at most this much before it gives way.
const spinFor = 50 * time.Microsecond

// spinMin is the shortest a worker spins: after each spin that found no
// job a worker halves its next spin down to this, after each that found
// one it doubles it up to spinFor. On a machine whose cores other
// processes take (the caller often descheduled between jobs, so spins time
// out), the pool thus burns little; on a free one it keeps spinning.
const spinMin = 4 * time.Microsecond

// Pool is a fixed set of worker goroutines for data-parallel loops.
//
// Work is handed out in small chunks from an atomic counter, so a
// descheduled thread simply takes fewer chunks, and nobody ever waits for a
// worker that has not started: only for chunks already running. Idle workers
// spin for at most spinFor after a job, watching for the next one (decode's
// jobs come microseconds apart; shorter after spins that found nothing, see
// spinMin), then block on a channel: an idle Pool uses no CPU, and on a busy
// machine a Pool never spins for longer than that.
// The calling goroutine always takes part in the work, so a Pool of T
// threads starts T-1 goroutines. All goroutines end when Close returns.
//
// A nil *Pool is valid and runs everything on the calling goroutine. For may
// be called from several goroutines at once, and from inside fn.
type Pool struct {
	threads  int
	mu       sync.RWMutex // guards closed and sends on work
	closed   bool
	work     chan *job           // jobs for blocked workers, one send per helper
	offer    atomic.Pointer[job] // a job for spinning workers
	spinning atomic.Int32        // workers spinning for an offer
	wg       sync.WaitGroup
	// floats keeps the float32 buffers that products have finished with
	// (the GEMMs' packed rows of x), up to floatStashBytes of them, for
	// the next product: a 128-token prefill of 34m in BF16 packed 12 MB of
	// x into new buffers, only a collection letting later products reuse
	// them (1.6-2.4 times the prefill's time; freelist says why).
	floats freelist.List[[]float32]
}

// floatStashBytes is the most a Pool's floats keeps.
const floatStashBytes = 32 << 20

// scratch returns a buffer of n floats, its contents stale: a kept one
// when p has one large enough, else a new one.
func (p *Pool) scratch(n int) []float32 {
	if p != nil {
		if b, ok := p.floats.Take(func(b []float32) bool { return cap(b) >= n }); ok {
			return b[:n]
		}
	}
	return make([]float32, n)
}

// release keeps b for a later scratch unless p keeps enough already; b
// must not be used afterwards.
func (p *Pool) release(b []float32) {
	if p != nil && cap(b) > 0 {
		p.floats.Put(b[:cap(b)], int64(cap(b))*4)
	}
}

type job struct {
	next    atomic.Int64
	n       int
	grain   int
	fn      func(lo, hi int)
	tickets atomic.Int32   // helpers still wanted from spinning workers
	left    atomic.Int64   // chunks not yet finished
	done    sync.WaitGroup // released when left reaches 0
}

// NewPool returns a pool of the given number of threads (including the
// caller's); threads ≤ 0 means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads, work: make(chan *job, threads)}
	p.floats.Max = floatStashBytes
	for range threads - 1 {
		p.wg.Add(1)
		go p.worker()
	}
	return p
}

func (p *Pool) worker() {
	defer p.wg.Done()
	limit := spinFor
	for {
		if j := p.spin(limit); j != nil {
			limit = min(2*limit, spinFor)
			j.run()
			continue
		}
		limit = max(limit/2, spinMin)
		j, ok := <-p.work
		if !ok {
			return
		}
		j.run()
	}
}

// spin watches p.offer for up to limit and returns a job whose ticket it
// took, or nil. It checks the offer once more after it stops counting as
// spinning, so that a caller who saw it spinning (and so sent nothing on
// p.work) is never left without it.
func (p *Pool) spin(limit time.Duration) *job {
	p.spinning.Add(1)
	deadline := time.Now().Add(limit)
	for i := 0; ; i++ {
		if j := p.take(); j != nil {
			p.spinning.Add(-1)
			return j
		}
		if i&15 == 15 {
			if time.Now().After(deadline) {
				break
			}
			runtime.Gosched() // let this P's other goroutines run
		}
		spinPause()
	}
	p.spinning.Add(-1)
	return p.take()
}

// take returns the offered job if it still wants a helper, taking one of its
// tickets.
func (p *Pool) take() *job {
	j := p.offer.Load()
	if j == nil || j.tickets.Load() <= 0 {
		return nil
	}
	if j.tickets.Add(-1) < 0 {
		return nil
	}
	return j
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
		if j.left.Add(-1) == 0 {
			j.done.Done()
		}
	}
}

// wait returns when every chunk of j has finished: it watches for up to
// spinFor (the workers' last chunks are usually microseconds from done),
// then blocks.
func (j *job) wait() {
	deadline := time.Now().Add(spinFor)
	for i := 0; j.left.Load() != 0; i++ {
		if i&15 == 15 {
			if time.Now().After(deadline) {
				break
			}
			runtime.Gosched() // a chunk's goroutine may wait for this P
		}
		spinPause()
	}
	j.done.Wait()
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
//
// Helpers come first from workers spinning after their last job (through
// p.offer, no wake-up), the rest are woken through p.work.
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
	j.left.Store(int64(chunks))
	j.done.Add(1)
	helpers := min(p.threads-1, chunks-1)
	p.mu.RLock()
	if !p.closed {
		wake := helpers
		j.tickets.Store(int32(helpers))
		// Publish the offer (unless another caller's still wants helpers),
		// then count the spinners: a spinner stops counting before its
		// last look at the offer, so each one either is counted here or
		// sees the offer.
		if old := p.offer.Load(); (old == nil || old.tickets.Load() <= 0) && p.offer.CompareAndSwap(old, j) {
			wake -= min(int(p.spinning.Load()), helpers)
		}
	send:
		for range wake {
			select {
			case p.work <- j:
			default: // queue full (e.g. a nested For): the caller does more
				break send
			}
		}
	}
	p.mu.RUnlock()
	j.run()
	p.offer.CompareAndSwap(j, nil) // no more helpers wanted
	j.wait()
}

// ForShares calls fn(s, i, i+1) for every i in [0, n), in parallel on the
// pool's threads, and returns when all calls have returned. [0, n) is cut
// into one contiguous share per thread; share s's units are taken in order
// from its front by the goroutine that runs share s, and, once that one has
// run out, by the others from its back, one unit at a time. So each thread
// works on its own contiguous range of the output, and a thread that is
// late or descheduled has its units taken over a unit at a time: the last
// units end within about one unit's time of each other, where For's
// chunks, handed out in turn, interleave the threads' outputs (whose
// shared cache lines then travel between cores) or end a chunk apart.
//
// The calls of one share s never run at once, so fn may keep state per
// share (s < Threads()); fn must be safe for concurrent use otherwise.
func (p *Pool) ForShares(n int, fn func(s, lo, hi int)) {
	if n <= 0 {
		return
	}
	t := min(p.Threads(), n)
	if t <= 1 {
		for i := range n {
			fn(0, i, i+1)
		}
		return
	}
	shares := make([]share, t)
	for s := range shares {
		shares[s].set(s*n/t, (s+1)*n/t)
	}
	p.For(t, 1, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			for i, ok := shares[s].front(); ok; i, ok = shares[s].front() {
				fn(s, i, i+1)
			}
			for k := 1; k < t; k++ {
				v := &shares[(s+k)%t]
				for i, ok := v.back(); ok; i, ok = v.back() {
					fn(s, i, i+1)
				}
			}
		}
	})
}

// share is the units [lo, hi) of one ForShares share not yet taken, both
// bounds in one word (lo in the high half) so that taking from either end
// is one compare-and-swap; padded to a cache line of its own.
type share struct {
	w atomic.Uint64
	_ [56]byte
}

func (s *share) set(lo, hi int) { s.w.Store(uint64(lo)<<32 | uint64(hi)) }

// front takes the first unit left, if any.
func (s *share) front() (int, bool) {
	for {
		w := s.w.Load()
		lo, hi := w>>32, w&0xffffffff
		if lo >= hi {
			return 0, false
		}
		if s.w.CompareAndSwap(w, (lo+1)<<32|hi) {
			return int(lo), true
		}
	}
}

// back takes the last unit left, if any.
func (s *share) back() (int, bool) {
	for {
		w := s.w.Load()
		lo, hi := w>>32, w&0xffffffff
		if lo >= hi {
			return 0, false
		}
		if s.w.CompareAndSwap(w, lo<<32|(hi-1)) {
			return int(hi - 1), true
		}
	}
}
