package ndbg_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
)

const factPy = `def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)
`

// historyModels are the models the history tests run with: the default
// model and random ones, sampling hot, so that asking the model again
// would give another state.
func historyModels(t *testing.T) []*ndbg.Model {
	def, err := ndbg.Open(context.Background(), ndbg.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { def.Close() })
	return []*ndbg.Model{def, randomModel(t, 1), randomModel(t, 2)}
}

// TestNeuralNothingBeforeTheStart: an inverse action at the run's first
// state (the entry's call) is ErrAtStart on the neural backend as on the
// real one, also where the session came back to it (issue 29: step_into,
// inv_step_into, inv_step_return gave a state at depth -1), and no state
// is shown at a negative depth other than -1 (unknown).
func TestNeuralNothingBeforeTheStart(t *testing.T) {
	ctx := context.Background()
	inverse := []ndbg.Action{{Kind: dsl.InvStepInto}, {Kind: dsl.InvStepOver}, {Kind: dsl.InvStepReturn},
		{Kind: dsl.InvBreakpoint, Lines: []int{2}}, {Kind: dsl.InvContinue, Lines: []int{4}}, {Kind: dsl.InvContinue}}
	for i, m := range historyModels(t) {
		for seed := uint64(1); seed <= 2; seed++ {
			s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{Temperature: 1.5, Seed: seed}), factPy, "fact(6)")
			require.NoError(t, err)
			first, _ := s.State()
			for _, a := range inverse {
				_, err := s.Do(ctx, a)
				require.ErrorIs(t, err, ndbg.ErrAtStart, "model %d: %s at the start", i, a)
			}
			_, err = s.StepInto(ctx)
			require.NoError(t, err)
			back, err := s.StepBackInto(ctx)
			require.NoError(t, err)
			require.Equal(t, first, back, "model %d: back to the first state", i)
			for _, a := range inverse {
				st, err := s.Do(ctx, a)
				require.ErrorIs(t, err, ndbg.ErrAtStart, "model %d: %s back at the start gave %+v", i, a, st)
			}
			s.Close()
		}
	}
}

// TestNeuralStepBackIsHistory: a step back returns to the state the
// session showed before (not a new prediction, which sampling would make
// another state), with the prediction it had; a step forward again from
// there returns to the state it went to.
func TestNeuralStepBackIsHistory(t *testing.T) {
	ctx := context.Background()
	for i, m := range historyModels(t) {
		for seed := uint64(1); seed <= 3; seed++ {
			s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{Temperature: 1.5, Seed: seed}), buggy, "f([3, None, 4])")
			require.NoError(t, err)
			first, _ := s.State()
			over, err := s.StepOver(ctx)
			if errors.Is(err, ndbg.ErrFinished) {
				continue
			}
			require.NoError(t, err)
			overP, _ := s.Prediction()
			back, err := s.StepBackOver(ctx)
			require.NoError(t, err)
			require.Equal(t, first, back, "model %d seed %d: step back over after step over", i, seed)
			_, ok := s.Prediction()
			require.False(t, ok, "the first state was not predicted")
			again, err := s.StepOver(ctx)
			require.NoError(t, err)
			require.Equal(t, over, again, "model %d seed %d: step over again", i, seed)
			againP, ok := s.Prediction()
			require.True(t, ok)
			require.Equal(t, overP, againP, "the prediction it had")

			into, err := s.StepInto(ctx)
			if errors.Is(err, ndbg.ErrFinished) {
				continue
			}
			require.NoError(t, err)
			back, err = s.StepBackInto(ctx)
			require.NoError(t, err)
			require.Equal(t, over, back, "model %d seed %d: step back into after step into", i, seed)
			again, err = s.StepInto(ctx)
			require.NoError(t, err)
			require.Equal(t, into, again)
			if into.Event != dsl.Return { // stepping back over from a callee's return is the caller's earlier stop
				back, err = s.StepBackOver(ctx)
				require.NoError(t, err)
				require.Equal(t, over, back, "model %d seed %d: step back over after step into", i, seed)
			}
			s.Close()
		}
	}
}

// TestNeuralStepBackAfterEnd: a neural session that reached the end steps
// back as a real one does: back to the call (the first state, from the
// history), to the entry's return (predicted, then remembered), and on.
func TestNeuralStepBackAfterEnd(t *testing.T) {
	ctx := context.Background()
	for i, m := range historyModels(t) {
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{Temperature: 1.5, Seed: 7}), buggy, "f([3, None, 4])")
		require.NoError(t, err)
		first, _ := s.State()
		_, err = s.Continue(ctx) // no breakpoint: to the end
		require.ErrorIs(t, err, ndbg.ErrFinished)
		back, err := s.StepBackReturn(ctx)
		require.NoError(t, err, "model %d", i)
		require.Equal(t, first, back, "model %d: back from the end to the call", i)
		_, err = s.Continue(ctx)
		require.ErrorIs(t, err, ndbg.ErrFinished)

		ret, err := s.StepBackInto(ctx)
		require.NoError(t, err, "model %d", i)
		require.Contains(t, []dsl.Event{dsl.Return, dsl.Exception}, ret.Event, "model %d: the run's last state", i)
		require.Equal(t, 0, ret.Depth, "model %d: in the entry", i)
		if ret.Event == dsl.Return {
			_, err = s.StepInto(ctx) // the entry's return steps to the end
			require.ErrorIs(t, err, ndbg.ErrFinished)
			again, err := s.StepBackOver(ctx)
			require.NoError(t, err)
			require.Equal(t, ret, again, "model %d: the entry's return, as shown before", i)
		}
		_, err = s.StepBackInto(ctx) // predicted, from the model's text restarted at that state
		require.NoError(t, err, "model %d", i)
		s.Close()
	}
}
