package cuda

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The references are checked here in the default build, so the tagged
// kernel tests compare against something known good.

func TestRefApplyMask(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5}
	RefApplyMask(x, []uint32{0b10101})
	inf := float32(math.Inf(-1))
	require.Equal(t, []float32{1, inf, 3, inf, 5}, x)
}
