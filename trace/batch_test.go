package trace

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBatchRecoversFromKilledInterpreter: a program that wedges the
// interpreter (a C loop no timer can stop) gets ErrTimeout, the next program
// runs in a fresh interpreter, and no process of any group survives Close.
func TestBatchRecoversFromKilledInterpreter(t *testing.T) {
	lim := testLimits(t)
	lim.Timeout = 200 * time.Millisecond
	lim.MaxEvents = 1 << 30 // the timeout, not the event cap, must end the loop below
	lim.MaxOutputBytes = 1 << 30
	var mu sync.Mutex
	var pgids []int
	lim.onStart = func(g int) { mu.Lock(); pgids = append(pgids, g); mu.Unlock() }
	b := NewBatch(lim)
	ctx := context.Background()
	ok := program(t, "def f(x):\n    return x + 1\n", "f")

	res, err := b.Run(ctx, ok, "f(1)")
	require.NoError(t, err)
	assert.Equal(t, "2", res.Return)

	// A soft timeout keeps the interpreter.
	_, err = b.Run(ctx, program(t, "def f():\n    while True:\n        pass\n", "f"), "f()")
	requireKind(t, err, ErrTimeout)
	res, err = b.Run(ctx, ok, "f(2)")
	require.NoError(t, err)
	assert.Equal(t, "3", res.Return)
	require.Len(t, pgids, 1)

	// A hard one replaces it.
	_, err = b.Run(ctx, program(t, "import itertools\ndef f():\n    return sum(itertools.repeat(1))\n", "f"), "f()")
	requireKind(t, err, ErrTimeout)
	require.Empty(t, groupMembers(t, pgids[0]))
	res, err = b.Run(ctx, ok, "f(3)")
	require.NoError(t, err)
	assert.Equal(t, "4", res.Return)
	require.Len(t, pgids, 2)

	// Per-program state does not leak: globals are fresh.
	_, err = b.Run(ctx, program(t, "X = 1\ndef f():\n    return X\n", "f"), "f()")
	require.NoError(t, err)
	res, err = b.Run(ctx, program(t, "def f():\n    return globals().get('X')\n", "f"), "f()")
	require.NoError(t, err)
	assert.Equal(t, "None", res.Return)

	require.NoError(t, b.Close())
	for _, g := range pgids {
		require.Empty(t, groupMembers(t, g))
	}
	_, err = b.Run(ctx, ok, "f(1)")
	require.ErrorIs(t, err, ErrClosed)
}

func TestBatchAfterForbiddenAndMemory(t *testing.T) {
	lim := testLimits(t)
	lim.MaxMemory = 512 << 20
	b := NewBatch(lim)
	defer b.Close()
	ctx := context.Background()
	_, err := b.Run(ctx, program(t, "import os\ndef f():\n    os._exit(0)\n", "f"), "f()")
	requireKind(t, err, ErrForbidden)
	_, err = b.Run(ctx, program(t, "def f():\n    return [0] * 10**9\n", "f"), "f()")
	requireKind(t, err, ErrMemory)
	res, err := b.Run(ctx, program(t, "def f():\n    return len([0] * 10**6)\n", "f"), "f()")
	require.NoError(t, err)
	assert.Equal(t, "1000000", res.Return)
}

// TestRunAllStreamsInOrder: results arrive in job order, a job that wedges
// the interpreter gets the error alone and the queued jobs behind it are
// re-sent to a fresh interpreter.
func TestRunAllStreamsInOrder(t *testing.T) {
	lim := testLimits(t)
	lim.Timeout = 300 * time.Millisecond
	var pgids []int
	lim.onStart = func(g int) { pgids = append(pgids, g) }
	b := NewBatch(lim)
	defer b.Close()
	ok := program(t, "def f(x):\n    return x * 10\n", "f")
	wedge := program(t, "import itertools\ndef f(x):\n    return sum(itertools.repeat(x))\n", "f")
	var jobs []Job
	for i := 0; i < 40; i++ {
		p := ok
		if i == 17 {
			p = wedge
		}
		jobs = append(jobs, Job{p, fmt.Sprintf("f(%d)", i)})
	}
	var got []int
	err := b.RunAll(context.Background(), jobs, func(i int, res *Result, err error) error {
		got = append(got, i)
		if i == 17 {
			requireKind(t, err, ErrTimeout)
			return nil
		}
		require.NoError(t, err, i)
		assert.Equal(t, fmt.Sprint(i*10), res.Return)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, got, 40)
	for i, g := range got {
		require.Equal(t, i, g)
	}
	require.Len(t, pgids, 2)
	require.Empty(t, groupMembers(t, pgids[0]))

	// Stopping early discards the queued work.
	stop := errors.New("stop")
	err = b.RunAll(context.Background(), jobs[:10], func(i int, _ *Result, _ error) error {
		if i == 3 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	res, err := b.Run(context.Background(), ok, "f(5)")
	require.NoError(t, err)
	assert.Equal(t, "50", res.Return)
}

func TestBatchRestoresBuiltins(t *testing.T) {
	b := NewBatch(testLimits(t))
	defer b.Close()
	ctx := context.Background()
	res, err := b.Run(ctx, program(t, "import builtins\ndef f():\n    builtins.len = lambda x: 42\n    builtins.repr = None\n    return 1\n", "f"), "f()")
	require.NoError(t, err) // the tracer keeps its own builtins
	assert.Equal(t, "1", res.Return)
	res, err = b.Run(ctx, program(t, "def f(s):\n    return len(s)\n", "f"), "f('ab')")
	require.NoError(t, err)
	assert.Equal(t, "2", res.Return)
}

func TestNilProgramsAndNoGoroutineLeak(t *testing.T) {
	lim := testLimits(t)
	before := runtime.NumGoroutine()
	_, err := Run(context.Background(), nil, "f()", lim)
	requireKind(t, err, ErrSetup)
	for i := 0; i < 2; i++ {
		_, err = Run(context.Background(), program(t, "def f():\n    return 1\n", "f"), "f()", lim)
		require.NoError(t, err)
	}
	b := NewBatch(lim)
	ok := program(t, "def f():\n    return 1\n", "f")
	var errs []error
	require.NoError(t, b.RunAll(context.Background(), []Job{{ok, "f()"}, {nil, "f()"}, {ok, "f()"}}, func(i int, _ *Result, err error) error {
		errs = append(errs, err)
		return nil
	}))
	require.Len(t, errs, 3)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], ErrSetup)
	assert.NoError(t, errs[2])
	require.NoError(t, b.Close())
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, after, before, "goroutines left running")
}

// Requests and results larger than a pipe's buffer stream without
// deadlock, queued or not.
func TestRunAllBigPrograms(t *testing.T) {
	b := NewBatch(testLimits(t))
	defer b.Close()
	src := "S = '" + strings.Repeat("<a&b>", 30000) + "'\ndef f(n):\n    return S * n\n"
	p := program(t, src, "f")
	jobs := []Job{{p, "f(1)"}, {p, "f(2)"}, {p, "f(3)"}, {p, "f(1)"}}
	n := 0
	err := b.RunAll(context.Background(), jobs, func(i int, res *Result, err error) error {
		require.NoError(t, err)
		assert.Len(t, res.Return, 150000*[]int{1, 2, 3, 1}[i]+2)
		n++
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 4, n)
}

func TestBatchRetiresInterpreterWithThreads(t *testing.T) {
	// A program that leaves a thread running gets its result; the queued
	// programs after it run in a fresh interpreter, out of the thread's reach.
	lim := testLimits(t)
	var mu sync.Mutex
	var pgids []int
	lim.onStart = func(g int) { mu.Lock(); pgids = append(pgids, g); mu.Unlock() }
	b := NewBatch(lim)
	defer b.Close()
	spy := program(t, "import builtins, threading, time\ndef spoil():\n    while True:\n        builtins.len = lambda x: -1\n        time.sleep(0.001)\ndef f():\n    threading.Thread(target=spoil, daemon=True).start()\n    return 1\n", "f")
	ok := program(t, "def f(x):\n    return len(x)\n", "f")
	jobs := []Job{{ok, "f([1])"}, {spy, "f()"}, {ok, "f([1, 2])"}, {ok, "f([1, 2, 3])"}}
	var got []string
	require.NoError(t, b.RunAll(context.Background(), jobs, func(i int, res *Result, err error) error {
		require.NoError(t, err, "job %d", i)
		got = append(got, res.Return)
		return nil
	}))
	assert.Equal(t, []string{"1", "1", "2", "3"}, got)
	require.Len(t, pgids, 2, "a fresh interpreter after the one with threads")
	require.Empty(t, groupMembers(t, pgids[0]))
}
