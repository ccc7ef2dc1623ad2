//go:build !cuda

package ndbg_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/device"
)

// Options.Device: in a build without the cuda tag, cuda is a clear error
// (for the embedded model and a directory alike), and so is a name that
// is no device; auto runs on the CPU.
func TestOpenDevice(t *testing.T) {
	ctx := context.Background()
	for _, dir := range []string{"", "model/testdata/mha_f32"} {
		_, err := ndbg.Open(ctx, ndbg.Options{Dir: dir, Device: "cuda"})
		require.ErrorIs(t, err, device.ErrNoCUDA, dir)
		_, err = ndbg.Open(ctx, ndbg.Options{Dir: dir, Device: "gpu"})
		require.ErrorContains(t, err, `device "gpu"`, dir)
	}
	m, err := ndbg.Open(ctx, ndbg.Options{Device: "auto", Threads: 1})
	if err != nil {
		require.ErrorIs(t, err, ndbg.ErrNoDefaultModel)
		t.Skip(err)
	}
	require.NoError(t, m.Close())
}
