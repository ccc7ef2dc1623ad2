package trace

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParallel: every item is done once, by workers that each got a Worker
// of their own; a cancelled run closes the channel and its goroutines end.
func TestParallel(t *testing.T) {
	before := runtime.NumGoroutine()
	var batches atomic.Int32
	out := Parallel(context.Background(), 50, 3, Limits{}, func(w *Worker) func(context.Context, int) int {
		require.NotNil(t, w)
		batches.Add(1)
		return func(_ context.Context, i int) int { return i * i }
	})
	var got []int
	for r := range out {
		got = append(got, r)
	}
	slices.Sort(got)
	want := make([]int, 50)
	for i := range want {
		want[i] = i * i
	}
	require.Equal(t, want, got)
	require.Equal(t, int32(3), batches.Load(), "one Worker per worker goroutine")

	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int32
	out = Parallel(ctx, 1000, 2, Limits{}, func(*Worker) func(context.Context, int) int {
		return func(ctx context.Context, i int) int {
			if done.Add(1) == 5 {
				cancel()
			}
			return i
		}
	})
	n := 0
	for range out { // closed after the cancel, without draining 1000 items
		n++
	}
	require.Less(t, n, 10)
	require.Less(t, done.Load(), int32(10))
	// Polled by hand: assert.Eventually runs its condition on goroutines
	// of its own.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("Parallel's goroutines did not end: %d, was %d\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
