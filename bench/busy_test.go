package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunBusyTable runs the busy-machine measurement end to end on the
// tiny preset.
func TestRunBusyTable(t *testing.T) {
	o := Options{Models: []string{"tiny"}, DTypes: []string{"f32"}, Threads: []int{1, 2},
		Prefill: 8, Decode: 3, Reps: 1}
	rs, err := RunBusy(context.Background(), o)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	for i, r := range rs {
		assert.Equal(t, o.Threads[i], r.Threads)
		assert.Greater(t, r.IdleTokS, 0.0)
		assert.Greater(t, r.BusyTokS, 0.0)
		assert.InDelta(t, r.BusyTokS/r.IdleTokS, r.Ratio(), 1e-12)
	}
	var sb strings.Builder
	require.NoError(t, WriteBusyTable(&sb, rs))
	assert.Contains(t, sb.String(), "| tiny | F32 |")
}

// The burning process uses a core while it runs and is reaped by stop.
func TestBurnerStopsAndIsReaped(t *testing.T) {
	b, err := startBurner(context.Background())
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	share, err := b.stop()
	require.NoError(t, err)
	assert.Greater(t, share, 0.0, "the burner got no CPU")
	require.NotNil(t, b.cmd.ProcessState, "not reaped")
}
