package trace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbg/ndbg/dsl"
	"github.com/stretchr/testify/require"
)

// findPython resolves the interpreter once for all tests.
var findPython = sync.OnceValues(func() (string, error) { return FindPython(context.Background()) })

// testLimits returns small limits with the interpreter resolved; tests that
// need python3 skip without it.
func testLimits(t testing.TB) Limits {
	t.Helper()
	py, err := findPython()
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	return Limits{Python: py, Timeout: 3 * time.Second, MaxMemory: 1 << 30}
}

// program prepares source for tracing entry, or fails the test.
func program(t testing.TB, source, entry string) *dsl.Program {
	t.Helper()
	p, err := dsl.NewProgram(source, entry)
	require.NoError(t, err)
	return p
}

// groupMembers lists the pids whose process group is pgid, scanning /proc.
func groupMembers(t testing.TB, pgid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended while we looked
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			pids = append(pids, pid)
		}
	}
	return pids
}

// runChecked runs Run and then asserts that no process of the child's group
// survives.
func runChecked(t *testing.T, source, entry, call string, lim Limits) (*Result, error) {
	t.Helper()
	var pgids []int
	lim.onStart = func(pgid int) { pgids = append(pgids, pgid) }
	prog := &dsl.Program{Source: source, Entry: entry}
	if p, err := dsl.NewProgram(source, entry); err == nil {
		prog = p
	}
	res, err := Run(context.Background(), prog, call, lim)
	require.Len(t, pgids, 1, "one child per Run")
	require.Empty(t, groupMembers(t, pgids[0]), "processes of group %d survived", pgids[0])
	return res, err
}
