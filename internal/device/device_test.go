//go:build !cuda

package device

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Without the cuda build tag: cuda is an error that says how to get it,
// auto and cpu are the CPU (nil: the model's own), other names are refused.
func TestOpenWithoutCUDA(t *testing.T) {
	for _, name := range []string{"", CPU, Auto} {
		d, err := Open(name)
		require.NoError(t, err, name)
		require.Nil(t, d, name)
	}
	_, err := Open(CUDA)
	require.ErrorIs(t, err, ErrNoCUDA)
	require.ErrorContains(t, err, "-tags cuda")
	_, err = Open("gpu")
	require.ErrorContains(t, err, `device "gpu": want cpu, cuda, auto`)
	require.False(t, CUDACompiled)
}
