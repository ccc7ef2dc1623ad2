//go:build unix

package kernels

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// An idle pool must not burn CPU: workers spin at most spinFor after a job,
// then block (an OpenMP style unbounded spin-wait made llama.cpp's decode
// collapse on a shared machine).
func TestPoolIdleUsesNoCPU(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	for range 100 { // leave the workers right after a burst of work
		p.For(64, 1, func(lo, hi int) {})
	}
	c0 := processCPU()
	time.Sleep(300 * time.Millisecond)
	used := processCPU() - c0
	assert.Less(t, used, 30*time.Millisecond, "idle pool used %v of CPU in 300ms", used)
}
