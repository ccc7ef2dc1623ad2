//go:build unix

// Package cputime reads the CPU time of the whole process: what benchmarks
// report per CPU-second, so that their figures hold on a machine whose
// cores other processes share.
package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time (user + system) the process has used so far,
// over all its threads; 0 if the system will not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
