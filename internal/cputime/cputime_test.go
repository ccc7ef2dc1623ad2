package cputime

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProcessCountsWork: a busy loop of 50 ms wall time shows as CPU time.
func TestProcessCountsWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no getrusage")
	}
	c0 := Process()
	for t0 := time.Now(); time.Since(t0) < 50*time.Millisecond; {
	}
	require.GreaterOrEqual(t, Process()-c0, 20*time.Millisecond)
}
