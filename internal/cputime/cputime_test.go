package cputime

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProcessCountsWork: work shows as CPU time and sleep does not. The
// busy loop runs until 20 ms of CPU time show (at most 10 s of wall
// time), not for a fixed wall time: on a shared machine a 50 ms loop got
// 17 ms of CPU, which a fixed bound called a failure.
func TestProcessCountsWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no getrusage")
	}
	c0 := Process()
	for deadline := time.Now().Add(10 * time.Second); Process()-c0 < 20*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s of a busy loop showed %v of CPU time", Process()-c0)
		}
	}
	c1 := Process()
	time.Sleep(200 * time.Millisecond)
	require.Less(t, Process()-c1, 100*time.Millisecond, "sleeping counted as CPU time")
}
