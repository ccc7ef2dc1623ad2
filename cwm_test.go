package ndbg_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/sample"
)

// TestCWMBackend drives the CWM emulation with random models: steps give
// well-formed states, step back returns exactly to the state before, and
// the actions that need action tokens are refused.
func TestCWMBackend(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 3; seed++ {
		m := testmodel.CWMModel(t, seed)
		s, err := ndbg.Start(ctx, ndbg.CWM(m, sample.Params{}), buggy, "f([1, None, 4])")
		require.NoError(t, err)
		require.Equal(t, "cwm", s.Backend().Name())
		var seen []ndbg.State
		first, _ := s.State()
		seen = append(seen, first)
		for i, a := range []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepInto, dsl.StepReturn, dsl.StepOver} {
			st, err := s.Do(ctx, dsl.Action{Kind: a})
			if errors.Is(err, ndbg.ErrContextFull) {
				break // a random model's step over can fill the context with calls
			}
			if err != nil {
				require.ErrorIs(t, err, ndbg.ErrFinished, "seed %d action %d", seed, i)
				break
			}
			require.Equal(t, s.Program().Text(st.Line), st.Source)
			if a == dsl.StepReturn && seen[len(seen)-1].Event != dsl.Return {
				require.Equal(t, dsl.Return, st.Event, "step return forces a return frame")
			}
			seen = append(seen, st)
		}
		if s.Finished() || len(seen) < 2 {
			continue
		}
		back, err := s.StepBackInto(ctx)
		require.NoError(t, err)
		require.Equal(t, seen[len(seen)-2], back, "back is the state before")
		again, err := s.StepInto(ctx)
		require.NoError(t, err)
		require.Equal(t, seen[len(seen)-1].Event, again.Event, "greedy: the same step again")
		_, err = s.RunTo(ctx, 4)
		require.ErrorIs(t, err, ndbg.ErrUnsupported)
		// Only call and line states have locals to edit.
		if st, _ := s.State(); (st.Event == dsl.Call || st.Event == dsl.Line) && len(st.Locals) > 0 {
			require.ErrorIs(t, s.Set(ctx, st.Locals[0].Name, "[]"), ndbg.ErrUnsupported)
		}
	}
}

// TestCWMOnlyForCWMCheckpoints: a model trained with the DSL's action
// tokens (the embedded default model, a random model over the DSL's
// tokens) is no CWM checkpoint: a CWM session on it does not start, and
// says so, instead of ending at the first step (issue 29); a model
// without them is one.
func TestCWMOnlyForCWMCheckpoints(t *testing.T) {
	ctx := context.Background()
	def, err := ndbg.Open(ctx, ndbg.Options{})
	require.NoError(t, err)
	defer def.Close()
	for _, m := range []*ndbg.Model{def, randomModel(t, 1)} {
		require.True(t, m.ActionTokens())
		_, err := ndbg.Start(ctx, ndbg.CWM(m, sample.Params{}), buggy, "f([1, None, 4])")
		require.ErrorIs(t, err, ndbg.ErrUnsupported)
		require.ErrorContains(t, err, "action tokens")
		require.ErrorContains(t, err, "use the neural backend")
		_, err = ndbg.StartAt(ctx, ndbg.CWM(m, sample.Params{}), buggy, "f", ndbg.State{Event: dsl.Call, Line: 7})
		require.ErrorIs(t, err, ndbg.ErrUnsupported)
	}
	cwm := testmodel.CWMModel(t, 1)
	require.False(t, cwm.ActionTokens())
	s, err := ndbg.Start(ctx, ndbg.CWM(cwm, sample.Params{}), buggy, "f([1, None, 4])")
	require.NoError(t, err)
	s.Close()
}
