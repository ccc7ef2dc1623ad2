package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// covers checks that For calls fn on disjoint ranges covering [0, n) once.
func covers(t *testing.T, p *Pool, n, grain int) {
	t.Helper()
	hits := make([]atomic.Int32, max(n, 0))
	var calls atomic.Int32
	p.For(n, grain, func(lo, hi int) {
		calls.Add(1)
		assert.Less(t, lo, hi)
		if grain > 0 {
			assert.LessOrEqual(t, hi-lo, grain)
		}
		for i := lo; i < hi; i++ {
			hits[i].Add(1)
		}
	})
	for i := range hits {
		require.Equal(t, int32(1), hits[i].Load(), "n=%d grain=%d: index %d", n, grain, i)
	}
	if n <= 0 {
		require.Zero(t, calls.Load())
	}
}

func TestPoolFor(t *testing.T) {
	for _, threads := range []int{1, 2, 5} {
		p := NewPool(threads)
		assert.Equal(t, threads, p.Threads())
		for _, n := range []int{-1, 0, 1, 2, 7, 100, 1001} {
			for _, grain := range []int{-3, 0, 1, 3, 64, 5000} {
				covers(t, p, n, grain)
			}
		}
		p.Close()
	}
	var nilPool *Pool
	assert.Equal(t, 1, nilPool.Threads())
	covers(t, nilPool, 10, 3)
	nilPool.Close()
}

func TestPoolForShares(t *testing.T) {
	var nilPool *Pool
	for _, p := range []*Pool{nilPool, NewPool(1), NewPool(2), NewPool(5)} {
		for _, n := range []int{-1, 0, 1, 2, 7, 100, 1001} {
			hits := make([]atomic.Int32, max(n, 0))
			busy := make([]atomic.Int32, p.Threads())
			p.ForShares(n, func(s, lo, hi int) {
				require.Less(t, s, p.Threads())
				require.Equal(t, int32(1), busy[s].Add(1), "two calls of share %d at once", s)
				assert.Equal(t, lo+1, hi)
				hits[lo].Add(1)
				busy[s].Add(-1)
			})
			for i := range hits {
				require.Equal(t, int32(1), hits[i].Load(), "threads=%d n=%d: index %d", p.Threads(), n, i)
			}
		}
		p.Close()
	}
}

func TestPoolRunsInParallel(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var inside, most atomic.Int32
	p.For(3, 1, func(lo, hi int) {
		v := inside.Add(1)
		for {
			m := most.Load()
			if v <= m || most.CompareAndSwap(m, v) {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
		inside.Add(-1)
	})
	assert.Greater(t, most.Load(), int32(1), "chunks never overlapped")
}

func TestPoolNestedAndConcurrent(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	var sum atomic.Int64
	done := make(chan struct{})
	for range 4 {
		go func() {
			p.For(8, 1, func(lo, hi int) {
				p.For(10, 2, func(lo, hi int) { sum.Add(int64(hi - lo)) })
			})
			done <- struct{}{}
		}()
	}
	for range 4 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("deadlock")
		}
	}
	assert.Equal(t, int64(4*8*10), sum.Load())
}

// settledGoroutines returns the number of goroutines once the goroutines
// of earlier tests (which end just after signalling that they are done)
// have gone.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 100 {
		time.Sleep(5 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

func TestPoolCloseEndsGoroutines(t *testing.T) {
	before := settledGoroutines()
	p := NewPool(8)
	covers(t, p, 100, 1)
	assert.GreaterOrEqual(t, runtime.NumGoroutine(), before+7)
	p.Close()
	p.Close() // idempotent
	// At most as many as before: a goroutine of an earlier test may still
	// have been on its way out when "before" was counted (under load it can
	// be descheduled for longer than settledGoroutines waits), but the
	// pool's 7 workers must be gone.
	// (Polled here: assert.Eventually would add a goroutine of its own.)
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, after, before, "goroutines after Close, and before NewPool")
	covers(t, p, 100, 7) // still works, on the caller
}

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {1, 0x3f80}, {-2, 0xc000},
		{math32(0x3f808000), 0x3f80}, // tie, even stays
		{math32(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math32(0x3f808001), 0x3f81}, // above the tie
		{math32(0x7f7fffff), 0x7f80}, // max float32 rounds to +Inf
		{math32(0x7f800000), 0x7f80}, {math32(0xff800000), 0xff80},
		{math32(0x00000001), 0x0000}, // tiny denormal to zero
		{math32(0x80018000), 0x8002}, // denormal tie, odd up
	} {
		assert.Equal(t, c.want, F32ToBF16(c.f), "%x", c.f)
	}
	nan := F32ToBF16(math32(0x7f800001)) // signalling NaN with a low payload
	assert.True(t, BF16ToF32(nan) != BF16ToF32(nan), "NaN stays NaN: %x", nan)
	assert.True(t, BF16ToF32(F32ToBF16(math32(0xffc00000))) != 0, "negative NaN")
	// Round trip of every BF16 value that is not NaN.
	for h := range 1 << 16 {
		f := BF16ToF32(uint16(h))
		if f != f {
			continue
		}
		require.Equal(t, uint16(h), F32ToBF16(f))
	}
	// F32ToBF16Slice (its vector path and its tail) agrees with F32ToBF16
	// on every BF16 value, each value half-way above it (ties), NaNs of
	// either sign and payload, denormals and random bits.
	var many []float32
	for h := range 1 << 16 {
		many = append(many, math32(uint32(h)<<16), math32(uint32(h)<<16|0x8000), math32(uint32(h)<<16|0x7fff))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 16 {
		many = append(many, math32(r.Uint32()))
	}
	for _, n := range []int{len(many), len(many) - 5, 15, 17, 33} {
		got := make([]uint16, n)
		F32ToBF16Slice(got, many[len(many)-n:])
		for i, f := range many[len(many)-n:] {
			if got[i] != F32ToBF16(f) {
				t.Fatalf("n %d: F32ToBF16Slice(%#x) = %#x, F32ToBF16 %#x", n, math.Float32bits(f), got[i], F32ToBF16(f))
			}
		}
	}
	src := []float32{1, 2, 3}
	dst := make([]uint16, 2)
	F32ToBF16Slice(dst, src)
	assert.Equal(t, []uint16{0x3f80, 0x4000}, dst)
	back := make([]float32, 3)
	BF16ToF32Slice(back, dst)
	assert.Equal(t, []float32{1, 2, 0}, back)
}

func TestMatRowAndCheck(t *testing.T) {
	m := &Mat{Rows: 2, Cols: 2, DType: BF16, BF16: []uint16{0x3f80, 0x4000, 0x4040, 0x4080}}
	require.NoError(t, m.Check())
	assert.Equal(t, []float32{3, 4}, m.Row(make([]float32, 3), 1))
	assert.Nil(t, m.Row(make([]float32, 2), 2))
	assert.Nil(t, m.Row(make([]float32, 2), -1))
	assert.Nil(t, m.Row(make([]float32, 1), 0))
	f := &Mat{Rows: 1, Cols: 3, F32: []float32{1, 2, 3}}
	assert.Equal(t, []float32{1, 2, 3}, f.Row(make([]float32, 3), 0))
	assert.Error(t, (&Mat{Rows: 1 << 40, Cols: 1 << 40}).Check())
	assert.Equal(t, "BF16", BF16.String())
	assert.Equal(t, 4, F32.Size())
	assert.Equal(t, 0, DType(7).Size())
}

// BenchmarkPoolFor times For calls shaped like decode's: a few chunks of
// about 10µs each, a few microseconds of serial work between Fors. At 2
// threads the ideal is half the time of 1 thread; what is above that is the
// cost of handing chunks to the worker (waking it) and waiting for it.
func BenchmarkPoolFor(b *testing.B) {
	work := func(iters int) float64 {
		x := 1.0
		for range iters {
			x = x*0.999999 + 1e-9
		}
		return x
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			p := NewPool(threads)
			defer p.Close()
			var sink atomic.Uint64
			for b.Loop() {
				p.For(8, 1, func(lo, hi int) { sink.Add(uint64(work(8000))) })
				sink.Add(uint64(work(2000)))
			}
		})
	}
}

// With fewer Ps than pool threads, spinning workers and callers must still
// let each other run: every For finishes, nested ones included.
func TestPoolMoreThreadsThanProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := NewPool(3)
	defer p.Close()
	for range 200 {
		covers(t, p, 50, 1)
	}
	var sum atomic.Int64
	p.For(6, 1, func(lo, hi int) {
		p.For(4, 1, func(lo, hi int) { sum.Add(1) })
	})
	assert.Equal(t, int64(24), sum.Load())
}

// A spinning worker takes an offered job once per ticket, and a spin that
// finds nothing gives up after its limit (bounded: it never outlasts it by
// much) and leaves the spinner count as it found it.
func TestPoolSpinTakesTicketsAndGivesUp(t *testing.T) {
	p := &Pool{threads: 2}
	j := &job{n: 1, grain: 1}
	j.tickets.Store(1)
	p.offer.Store(j)
	assert.Same(t, j, p.spin(spinFor))
	t0 := time.Now()
	assert.Nil(t, p.spin(spinMin), "the job's only ticket was taken")
	assert.GreaterOrEqual(t, time.Since(t0), spinMin)
	// A spin that ignored its limit would run on; 1 s, not a few times
	// spinMin, so that a thread descheduled on a loaded machine is not taken
	// for one.
	assert.Less(t, time.Since(t0), time.Second, "spin outlasted its limit")
	assert.Zero(t, p.spinning.Load())
}
