package kernels_test

import (
	"testing"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/kernels/kerneltest"
)

// Every backend this CPU can run (the pure-Go one, and under !noasm the
// AVX2 and AVX-512 levels it supports) goes through the conformance suite.

func forEach(t *testing.T, f func(*testing.T, kerneltest.Ops)) {
	for _, b := range kernels.Backends() {
		t.Run(b.Name(), func(t *testing.T) { f(t, b) })
	}
}

func TestMatMul(t *testing.T)   { forEach(t, kerneltest.TestMatMul) }
func TestDot(t *testing.T)      { forEach(t, kerneltest.TestDot) }
func TestAxpy(t *testing.T)     { forEach(t, kerneltest.TestAxpy) }
func TestScale(t *testing.T)    { forEach(t, kerneltest.TestScale) }
func TestAdd(t *testing.T)      { forEach(t, kerneltest.TestAdd) }
func TestRMSNorm(t *testing.T)  { forEach(t, kerneltest.TestRMSNorm) }
func TestSoftmax(t *testing.T)  { forEach(t, kerneltest.TestSoftmax) }
func TestSwiGLU(t *testing.T)   { forEach(t, kerneltest.TestSwiGLU) }
func TestDotRows(t *testing.T)  { forEach(t, kerneltest.TestDotRows) }
func TestAxpyRows(t *testing.T) { forEach(t, kerneltest.TestAxpyRows) }
