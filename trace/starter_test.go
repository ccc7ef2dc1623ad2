package trace

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// spareOf waits for s's spare interpreter and returns it.
func spareOf(t *testing.T, s *Starter) *proc {
	t.Helper()
	var p *proc
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		p = s.spare
		return p != nil
	}, 20*time.Second, 5*time.Millisecond, "no spare interpreter")
	return p
}

// TestStarterRunsEachProgramInAFreshInterpreter: runs on a Starter give
// Run's results, from the third on in the spare started after the one
// before (a single run starts no spare), and a program never sees what
// another left in its interpreter (a mark on the sys module, which one
// interpreter shares among all its code).
func TestStarterRunsEachProgramInAFreshInterpreter(t *testing.T) {
	lim := testLimits(t)
	s, err := NewStarter(context.Background(), lim)
	require.NoError(t, err)
	defer s.Close()
	prog := program(t, "import sys\n\ndef f(x):\n    seen = hasattr(sys, 'ndbg_mark')\n    sys.ndbg_mark = x\n    return seen\n", "f")
	noSpare := func(msg string) {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		require.False(t, s.spare != nil || s.starting, msg)
	}
	noSpare("no spare before the first run")

	want, err := Run(context.Background(), prog, "f(1)", lim)
	require.NoError(t, err)
	require.Equal(t, "False", want.Return)
	for i := range 4 {
		var spare *proc
		if i > 1 {
			spare = spareOf(t, s)
		}
		res, err := s.Run(context.Background(), prog, "f(1)", lim)
		require.NoError(t, err)
		require.Equal(t, want.Events, res.Events, "run %d", i)
		require.Equal(t, "False", res.Return, "run %d saw an earlier run's mark", i)
		if i == 0 {
			noSpare("a single run started a spare")
		}
		if spare != nil {
			s.mu.Lock()
			require.NotSame(t, spare, s.spare, "run %d did not take the spare", i)
			s.mu.Unlock()
		}
	}
	// No-exec call events come from the spare too.
	spareOf(t, s)
	ev, err := s.CallEvent(context.Background(), prog, "f(2)", lim)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"x": "2"}, localsOf(ev))

	// Limits that start an interpreter differently get their own; the
	// spare stays for the next run that matches.
	spare := spareOf(t, s)
	other := lim
	other.Timeout = lim.Timeout + time.Second
	res, err := s.Run(context.Background(), prog, "f(3)", other)
	require.NoError(t, err)
	require.Equal(t, "False", res.Return)
	s.mu.Lock()
	require.Same(t, spare, s.spare)
	s.mu.Unlock()
}

// TestStarterCloseLeavesNoProcess: Close kills the spare and reaps every
// interpreter the Starter started, used or spare; runs after Close start
// their own.
func TestStarterCloseLeavesNoProcess(t *testing.T) {
	lim := testLimits(t)
	s, err := NewStarter(context.Background(), lim)
	require.NoError(t, err)
	prog := program(t, "def f():\n    return 1\n", "f")
	for range 2 {
		_, err = s.Run(context.Background(), prog, "f()", lim)
		require.NoError(t, err)
	}
	spare := spareOf(t, s)
	pgid := spare.cmd.Process.Pid // the child leads its own group
	require.NotEmpty(t, groupMembers(t, pgid))
	s.Close()
	require.Empty(t, groupMembers(t, pgid), "the spare's processes survived Close")
	s.mu.Lock()
	require.Nil(t, s.spare)
	s.mu.Unlock()
	s.Close() // idempotent

	res, err := s.Run(context.Background(), prog, "f()", lim)
	require.NoError(t, err)
	require.Equal(t, "1", res.Return)
	s.mu.Lock()
	require.Nil(t, s.spare, "a closed Starter starts no spare")
	s.mu.Unlock()
}

// localsOf maps an event's local names to their reprs.
func localsOf(ev Event) map[string]string {
	m := map[string]string{}
	for _, l := range ev.Locals {
		m[l.Name] = l.Repr
	}
	return m
}
