package kernels

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMeasureFMAPeak(t *testing.T) {
	g := MeasureFMAPeak(1)
	t.Logf("FMA peak, 1 thread: %.1f GFLOP/s", g)
	assert.Greater(t, g, 0.1)
}

func TestReadSum(t *testing.T) {
	x := make([]float32, 1000)
	for i := range x {
		x[i] = 1
	}
	assert.Equal(t, float32(1000), readSum(x))
	assert.Equal(t, float32(0), readSum(nil))
}

// TestReadStreams checks that every access pattern reads each element
// exactly once, whatever the length, stream count and chunk size.
func TestReadStreams(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000, 4099} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%7 + 1)
		}
		want := readSumGo(x)
		for _, streams := range []int{1, 2, 3, 4, 8} {
			for _, chunk := range []int{1, 5, 64, 1024, 1 << 20} {
				assert.Equal(t, want, readStreams(x, streams, chunk), "n=%d streams=%d chunk=%d", n, streams, chunk)
			}
		}
	}
}
