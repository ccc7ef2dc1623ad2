package ndbg_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
	"github.com/stretchr/testify/require"
)

// TestConcurrentSessionsBatchDecode runs sessions on goroutines, their
// one-token decode steps batched on the shared model, and checks that each
// predicts the same states (greedy) as when the sessions run one after
// another on a model that never batches; that the model formed batches;
// and that no goroutine outlives the sessions and the model.
func TestConcurrentSessionsBatchDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default model in 16 sessions")
	}
	ctx := context.Background()
	mean, err := os.ReadFile("examples/mean.py")
	require.NoError(t, err)
	const fact = "def fact(n):\n    if n <= 1:\n        return 1\n    r = fact(n - 1)\n    return n * r\n"
	const loop = "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n"
	progs := []struct{ src, call string }{
		{string(mean), "f([1, 2, 3, 4])"}, {fact, "fact(3)"}, {loop, "total([4, 5, 6])"},
		{string(mean), "f([7, 8])"}, {fact, "fact(2)"}, {loop, "total([1])"},
		{fact, "fact(4)"}, {loop, "total([2, 3])"},
	}
	actions := []dsl.ActionKind{dsl.StepInto, dsl.StepInto, dsl.StepOver, dsl.StepInto, dsl.StepOver,
		dsl.StepOver, dsl.InvStepOver, dsl.StepReturn, dsl.StepInto, dsl.StepOver}
	// run predicts program i's trajectory on m: each state (or error) as text.
	run := func(m *ndbg.Model, i int) ([]string, error) {
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), progs[i].src, progs[i].call)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", progs[i].call, err)
		}
		defer s.Close()
		var out []string
		for _, k := range actions {
			st, err := s.Do(ctx, dsl.Action{Kind: k})
			if err != nil {
				out = append(out, "error: "+err.Error())
				continue
			}
			out = append(out, string(ndbg.MarshalOutcome(&st, nil)))
		}
		return out, nil
	}

	base := runtime.NumGoroutine()
	serial, err := ndbg.Open(ctx, ndbg.Options{SerialDecode: true})
	if err != nil {
		t.Skip("no embedded default model:", err)
	}
	want := make([][]string, len(progs))
	for i := range progs {
		want[i], err = run(serial, i)
		require.NoError(t, err)
	}
	require.NoError(t, serial.Close())
	b, steps := serial.DecodeStats()
	require.Zero(t, b+steps, "a SerialDecode model batched")

	m, err := ndbg.Open(ctx, ndbg.Options{})
	require.NoError(t, err)
	got := make([][]string, len(progs))
	errs := make([]error, len(progs))
	var wg sync.WaitGroup
	for i := range progs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = run(m, i)
		}()
	}
	wg.Wait()
	for i := range progs {
		require.NoError(t, errs[i])
		require.Equal(t, want[i], got[i], "%s: concurrent, batched sessions against one at a time", progs[i].call)
	}
	batches, steps := m.DecodeStats()
	t.Logf("%d decode batches of %d session steps", batches, steps)
	require.Less(t, batches, steps, "the concurrent sessions' steps ran in batches")
	require.NoError(t, m.Close())
	if !assertEventually(func() bool { return runtime.NumGoroutine() <= base }, 30*time.Second) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left after the sessions and the model closed (%d before):\n%s",
			runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
	}
}

// assertEventually reports whether cond holds within d, polling it.
func assertEventually(cond func() bool, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
