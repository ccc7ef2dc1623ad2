package trace

import (
	"context"
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
	_, err := b.Run(ctx, program(t, "import os\ndef f():\n    os.fork()\n", "f"), "f()")
	requireKind(t, err, ErrForbidden)
	_, err = b.Run(ctx, program(t, "def f():\n    return [0] * 10**9\n", "f"), "f()")
	requireKind(t, err, ErrMemory)
	res, err := b.Run(ctx, program(t, "def f():\n    return len([0] * 10**6)\n", "f"), "f()")
	require.NoError(t, err)
	assert.Equal(t, "1000000", res.Return)
}
