package ndbg_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/internal/testsupport/testprog"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// TestContextCutReturnValue: a return value that would run past the end of
// the model's context is cut there (it failed with ndbg.ErrContextFull), and the
// state is marked uncertain.
func TestContextCutReturnValue(t *testing.T) {
	ctx := context.Background()
	cuts := 0
	for seed := uint64(1); seed <= 3; seed++ {
		m := testmodel.ModelContext(t, seed, 160)
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), testprog.Runaway, "f((1,), (1,), (1, 2))")
		require.NoError(t, err)
		st, err := s.StepReturn(ctx)
		if errors.Is(err, ndbg.ErrFinished) {
			continue
		}
		require.NoError(t, err, "seed %d", seed)
		p, ok := s.Prediction()
		require.True(t, ok)
		if st.Event == dsl.Return && p.Uncertain() {
			require.Equal(t, []string{"value"}, p.Cut)
			cuts++
		}
		s.Close()
	}
	require.Positive(t, cuts, "no random model ran out of context in the return value")
}

// TestVerifyBelow: a Verify session shows the real state wherever the
// model's confidence is below the threshold, and says so; with threshold 1
// it agrees with the real backend at every step; with threshold 0 it is the
// plain neural session. Non-neural backends and thresholds outside [0, 1]
// are refused.
func TestVerifyBelow(t *testing.T) {
	ctx := context.Background()
	m := openDefault(t)
	src, err := os.ReadFile("examples/mean.py")
	require.NoError(t, err)
	const call = "f([3, None, 4])"
	actions := []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepInto, dsl.StepInto, dsl.StepOver, dsl.StepOver,
		dsl.StepReturn, dsl.InvStepOver, dsl.StepReturn, dsl.StepOver}

	always, err := ndbg.Verify(ndbg.Neural(m, sample.Params{}), trace.Limits{}, 1)
	require.NoError(t, err)
	never, err := ndbg.Verify(ndbg.Neural(m, sample.Params{}), trace.Limits{}, 0)
	require.NoError(t, err)
	sessions := map[string]*ndbg.Session{}
	for name, b := range map[string]ndbg.Backend{"always": always, "never": never,
		"neural": ndbg.Neural(m, sample.Params{}), "real": ndbg.Real(trace.Limits{})} {
		s, err := ndbg.Start(ctx, b, string(src), call)
		require.NoError(t, err)
		defer s.Close()
		sessions[name] = s
	}
	verified := 0
	for i, k := range actions {
		got := map[string]*ndbg.State{}
		for name, s := range sessions {
			if s.Finished() { // a model that predicted the end stays there
				continue
			}
			st, err := s.Do(ctx, dsl.Action{Kind: k})
			if errors.Is(err, ndbg.ErrFinished) {
				got[name] = nil
				continue
			}
			require.NoError(t, err, "%s step %d", name, i)
			got[name] = &st
		}
		require.True(t, ndbg.Compare(got["always"], got["real"]).All, "step %d %s: %v vs %v", i, k, got["always"], got["real"])
		require.Equal(t, got["neural"], got["never"], "step %d", i)
		// A step the session's history decides without the model (the
		// end after the entry's return) has no prediction.
		if p, ok := sessions["always"].Prediction(); ok && p.Verified {
			verified++
			require.Less(t, p.State, 1.0)
		}
		if p, ok := sessions["never"].Prediction(); ok {
			require.False(t, p.Verified)
		}
		if sessions["real"].Finished() {
			break
		}
	}
	require.Positive(t, verified)
	require.Equal(t, sessions["real"].Stack(), sessions["always"].Stack())

	_, err = ndbg.StartAt(ctx, always, string(src), "f", ndbg.State{Event: dsl.Call, Line: 8})
	require.ErrorIs(t, err, ndbg.ErrUnsupported)
	_, err = ndbg.Verify(ndbg.Real(trace.Limits{}), trace.Limits{}, 0.5)
	require.Error(t, err)
	_, err = ndbg.Verify(ndbg.Neural(m, sample.Params{}), trace.Limits{}, 1.5)
	require.Error(t, err)
}

// TestContextCutLocals: a frame whose locals would run past the end of the
// model's context is ended there (the value under way closed, then the
// locals), leaving room for its line, and the state is marked uncertain.
// (CRUXEval's sample_264, stepped over from the call with the default model
// of context 512, failed with ndbg.ErrContextFull: the model ran away with a
// local. Today's default model has a 2048-token context and writes it
// right, so a random model, seed 2, with a context of 128 tokens runs out
// in its locals here.)
func TestContextCutLocals(t *testing.T) {
	ctx := context.Background()
	m := testmodel.ModelContext(t, 2, 128)
	const src = "def f(test_str):\n    s = test_str.replace('a', 'A')\n    return s.replace('e', 'A')\n"
	s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), src, `f("papera")`)
	require.NoError(t, err)
	defer s.Close()
	st, err := s.StepOver(ctx)
	require.NoError(t, err)
	require.Equal(t, dsl.Line, st.Event)
	p, ok := s.Prediction()
	require.True(t, ok)
	require.True(t, p.Uncertain())
	for _, c := range p.Cut {
		require.Regexp(t, `^locals(\..+)?$`, c)
	}
	require.Zero(t, p.State)
	_, err = s.StepOver(ctx) // a restart from the cut frame fits
	require.NoError(t, err)
}

// TestPredictionOnlyOfModelStates: a neural session's predicted state has a
// Prediction, its first state (not predicted) and a real session's states
// have none.
func TestPredictionOnlyOfModelStates(t *testing.T) {
	ctx := context.Background()
	m := testmodel.Model(t, 1)
	s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), testmodel.MeanProgram, "f([3, None, 4])")
	require.NoError(t, err)
	defer s.Close()
	_, ok := s.Prediction()
	require.False(t, ok, "the first state is not predicted")
	_, err = s.StepInto(ctx)
	require.NoError(t, err)
	_, ok = s.Prediction()
	require.True(t, ok)

	r, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), testmodel.MeanProgram, "f([3, None, 4])")
	require.NoError(t, err)
	defer r.Close()
	_, err = r.StepInto(ctx)
	require.NoError(t, err)
	_, ok = r.Prediction()
	require.False(t, ok, "a real state has no confidence")
}
