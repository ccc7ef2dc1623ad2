package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/kernels/kerneltest"
)

// Every implementation this CPU can run (the pure-Go one, and under !noasm the
// AVX2 and AVX-512 levels it supports) goes through the conformance suite.

func forEach(t *testing.T, f func(*testing.T, kerneltest.Ops)) {
	for _, b := range kernels.Impls() {
		t.Run(b.Name(), func(t *testing.T) { f(t, b) })
	}
}

func TestMatMul(t *testing.T)  { forEach(t, kerneltest.TestMatMul) }
func TestDot(t *testing.T)     { forEach(t, kerneltest.TestDot) }
func TestAxpy(t *testing.T)    { forEach(t, kerneltest.TestAxpy) }
func TestScale(t *testing.T)   { forEach(t, kerneltest.TestScale) }
func TestAdd(t *testing.T)     { forEach(t, kerneltest.TestAdd) }
func TestRMSNorm(t *testing.T) { forEach(t, kerneltest.TestRMSNorm) }
func TestSoftmax(t *testing.T) { forEach(t, kerneltest.TestSoftmax) }
func TestSwiGLU(t *testing.T)  { forEach(t, kerneltest.TestSwiGLU) }

// TestExpShifted runs the suite's ExpShifted check on every implementation.
func TestExpShifted(t *testing.T) {
	for _, b := range kernels.Impls() {
		t.Run(b.Name(), func(t *testing.T) { kerneltest.TestExpShifted(t, b) })
	}
}

// TestSoftmaxParts runs the suite's SoftmaxParts check on every
// implementation.
func TestSoftmaxParts(t *testing.T) {
	for _, b := range kernels.Impls() {
		t.Run(b.Name(), func(t *testing.T) { kerneltest.TestSoftmaxParts(t, b) })
	}
}

// TestArgmax runs the suite's Argmax check on every implementation.
func TestArgmax(t *testing.T) {
	for _, b := range kernels.Impls() {
		t.Run(b.Name(), func(t *testing.T) { kerneltest.TestArgmax(t, b) })
	}
}
func TestDotRows(t *testing.T)  { forEach(t, kerneltest.TestDotRows) }
func TestAxpyRows(t *testing.T) { forEach(t, kerneltest.TestAxpyRows) }

func TestDotRowsBF16(t *testing.T) {
	forEach(t, func(t *testing.T, o kerneltest.Ops) { kerneltest.TestDotRowsBF16(t, o.(kernels.Impl)) })
}

func TestAxpyRowsMany(t *testing.T) {
	forEach(t, func(t *testing.T, o kerneltest.Ops) { kerneltest.TestAxpyRowsMany(t, o.(kernels.Impl)) })
}

func TestAxpyRowsBF16(t *testing.T) {
	forEach(t, func(t *testing.T, o kerneltest.Ops) { kerneltest.TestAxpyRowsBF16(t, o.(kernels.Impl)) })
}

// FuzzMatMul compares the Native implementation with the pure-Go one on arbitrary
// small shapes and contents.
func FuzzMatMul(f *testing.F) {
	f.Add(uint8(1), uint8(7), uint8(13), false, []byte{1, 2, 3})
	f.Add(uint8(33), uint8(13), uint8(31), true, []byte{0xff, 0x7f, 0x80})
	f.Fuzz(func(t *testing.T, n, rows, cols uint8, bf16 bool, data []byte) {
		if len(data) == 0 {
			data = []byte{0}
		}
		val := func(i int) float32 { return float32(int8(data[i%len(data)]^byte(i*131))) / 64 }
		w := &kernels.Mat{Rows: int(rows), Cols: int(cols)}
		x := make([]float32, int(n)*int(cols))
		for i := range x {
			x[i] = val(i)
		}
		if bf16 {
			w.DType = kernels.BF16
			w.BF16 = make([]uint16, int(rows)*int(cols))
			for i := range w.BF16 {
				w.BF16[i] = kernels.F32ToBF16(val(i + 7))
			}
		} else {
			w.F32 = make([]float32, int(rows)*int(cols))
			for i := range w.F32 {
				w.F32[i] = val(i + 7)
			}
		}
		want := make([]float32, int(n)*int(rows))
		got := make([]float32, int(n)*int(rows))
		require.NoError(t, kernels.Generic().MatMul(nil, want, x, int(n), w))
		require.NoError(t, kernels.Native().MatMul(nil, got, x, int(n), w))
		ref := make([]float64, len(want))
		for i, v := range want {
			ref[i] = float64(v)
		}
		nmse, ok, first := kerneltest.NMSE(got, ref)
		require.True(t, ok, "element %d", first)
		require.LessOrEqual(t, nmse, 1e-10)
	})
}

func TestMatMulQuant(t *testing.T) { forEach(t, kerneltest.TestMatMulQuant) }

func TestMatMulQuantExtremes(t *testing.T) { forEach(t, kerneltest.TestMatMulQuantExtremes) }
