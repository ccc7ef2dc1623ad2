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
