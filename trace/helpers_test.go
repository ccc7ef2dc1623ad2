package trace

import (
	"context"
	"fmt"
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
	dirs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	var pids []int
	for _, d := range dirs {
		if g, _, ok := procStat(filepath.Base(d)); ok && g == pgid {
			pid, _ := strconv.Atoi(filepath.Base(d))
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat returns the process group and parent of pid from /proc.
func procStat(pid string) (pgrp, ppid int, ok bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false // the process ended while we looked
	}
	// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return pgrp, ppid, err1 == nil && err2 == nil
}

// pidNamespaces returns the PID namespaces ("pid:[N]") of pgid's processes
// and their descendants other than this test's own: the sandbox's.
func pidNamespaces(t testing.TB, pgid int) map[string]bool {
	t.Helper()
	self, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	parent := map[int]int{}
	group := map[int]bool{}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if g, pp, ok := procStat(filepath.Base(d)); ok {
			parent[pid] = pp
			group[pid] = g == pgid
		}
	}
	ns := map[string]bool{}
	for pid := range parent {
		in := false
		for p, n := pid, 0; p > 1 && n < 64 && !in; p, n = parent[p], n+1 {
			in = group[p]
		}
		if !in {
			continue
		}
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && link != self {
			ns[link] = true
		}
	}
	return ns
}

// namespaceMembers lists the pids of live processes in any of the PID
// namespaces. A process that has released its files (FDSize 0) is exiting:
// the kernel takes a second or two to finish a PID namespace's init after
// its last child, and that process can no longer do anything.
func namespaceMembers(t testing.TB, ns map[string]bool) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	var pids []int
	for _, d := range dirs {
		if link, err := os.Readlink(d + "/ns/pid"); err == nil && ns[link] {
			if status, err := os.ReadFile(d + "/status"); err != nil || strings.Contains(string(status), "\nFDSize:\t0\n") {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(d))
			pids = append(pids, pid)
		}
	}
	return pids
}

// runChecked runs Run and then asserts that no process of the child's group
// or of its sandbox's PID namespace survives.
func runChecked(t *testing.T, source, entry, call string, lim Limits) (*Result, error) {
	t.Helper()
	var pgids []int
	var ns map[string]bool
	lim.onStart = func(pgid int) {
		pgids = append(pgids, pgid)
		ns = pidNamespaces(t, pgid)
	}
	prog := &dsl.Program{Source: source, Entry: entry}
	if p, err := dsl.NewProgram(source, entry); err == nil {
		prog = p
	}
	res, err := Run(context.Background(), prog, call, lim)
	require.Len(t, pgids, 1, "one child per Run")
	require.Empty(t, groupMembers(t, pgids[0]), "processes of group %d survived", pgids[0])
	if !lim.Unsandboxed {
		require.NotEmpty(t, ns, "the sandbox has its own PID namespace")
	}
	// The kernel tears the namespace down once its init is killed, which
	// takes a moment after the outer bwrap has been reaped.
	require.Eventually(t, func() bool { return len(namespaceMembers(t, ns)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"processes of the sandbox's PID namespace %v survived", ns)
	return res, err
}
