//go:build !unix

// Package cputime reads the CPU time of the whole process: what benchmarks
// report per CPU-second, so that their figures hold on a machine whose
// cores other processes share.
package cputime

import "time"

// Process is unavailable here: it returns 0, and figures per CPU-second are
// then reported as 0.
func Process() time.Duration { return 0 }
