package ndbg

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// runawaySource is a program on which the default model, stepping to the
// return, writes 'RRRR... until the grammar's bound (it printed such a
// value to the end of the context before values were cut).
const runawaySource = `def f(a, b, c):
    s = ''
    for x in a + b + c:
        s += 'R' * x
    return s
`

func openDefault(t *testing.T) *Model {
	m, err := Open(context.Background(), Options{})
	if errors.Is(err, ErrNoDefaultModel) {
		t.Skip("no embedded default model")
	}
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// TestRunawayValueCut: a return value the default model keeps extending is
// cut within dsl.MaxRepr bytes and a bounded number of tokens, and the
// state is marked uncertain, its value's confidence 0.
func TestRunawayValueCut(t *testing.T) {
	ctx := context.Background()
	m := openDefault(t)
	s, err := Start(ctx, Neural(m, sample.Params{}), runawaySource, "f((1,), (1,), (1, 2))")
	require.NoError(t, err)
	defer s.Close()
	e := s.eng.(*neuralEngine)
	before := e.sess.Len() + len(e.pending)
	st, err := s.StepReturn(ctx)
	require.NoError(t, err)
	written := e.sess.Len() + len(e.pending) - before
	require.Equal(t, dsl.Return, st.Event)
	require.LessOrEqual(t, len(st.Value), dsl.MaxRepr)
	require.LessOrEqual(t, written, dsl.MaxRepr+32, "tokens for one frame")
	p, ok := s.Prediction()
	require.True(t, ok)
	require.True(t, p.Uncertain(), "value %q", st.Value)
	require.Equal(t, []string{"value"}, p.Cut)
	require.Zero(t, p.Value)
	require.Zero(t, p.State)
	require.Contains(t, string(MarshalPrediction(p, &st)), `"uncertain":true,"cut":["value"]`)
}

// TestConfidenceIsTheFramesProbability: a prediction's confidence is the
// product of the probabilities of the frame's drawn tokens under the
// grammar-masked softmax, recomputed here independently (float64 softmax
// over a fresh model session); fields multiply to at least the state's;
// each is a probability.
func TestConfidenceIsTheFramesProbability(t *testing.T) {
	ctx := context.Background()
	m := openDefault(t)
	src, err := os.ReadFile("examples/mean.py")
	require.NoError(t, err)
	s, err := Start(ctx, Neural(m, sample.Params{}), string(src), "f([3, None, 4])")
	require.NoError(t, err)
	defer s.Close()
	e := s.eng.(*neuralEngine)
	checked := 0
	for i, k := range []dsl.ActionKind{dsl.StepInto, dsl.StepInto, dsl.StepOver, dsl.StepInto, dsl.StepOver, dsl.StepReturn, dsl.InvStepInto} {
		a := dsl.Action{Kind: k}
		from := *s.current()
		mt, err := e.pc.cp.Start(constrain.Context{Action: a, From: from, Stack: e.calls, Dots: dots(e.view(&s.traj))})
		require.NoError(t, err)
		prompt := append(slices.Clone(e.sess.Tokens()), e.pending...)
		prompt = append(prompt, m.encode(actionText(s.prog, a))...)
		st, err := s.Do(ctx, a)
		if errors.Is(err, ErrFinished) {
			break
		}
		require.NoError(t, err)
		p, ok := s.Prediction()
		require.True(t, ok)
		frame := append(slices.Clone(e.sess.Tokens()), e.pending...)[len(prompt):]

		ref := m.eng.NewSession()
		_, err = ref.Forward(ctx, prompt, false)
		require.NoError(t, err)
		want := 1.0
		mask := sample.NewMask(m.eng.Config().Vocab)
		for _, tok := range frame {
			if text, sp := mt.Forced(); len(text) == 0 && sp == tok {
				require.True(t, mt.Accept(tok))
			} else {
				mask.Reset()
				mt.FillMask(mask.Words())
				logits := ref.Last()
				var z float64
				for id, v := range logits {
					if mask.Allowed(id) {
						z += math.Exp(float64(v - logits[tok]))
					}
				}
				want /= z
				require.True(t, mt.Accept(tok))
			}
			_, err = ref.Forward(ctx, []int{tok}, false)
			require.NoError(t, err)
		}
		require.InEpsilon(t, want, p.State, 1e-3, "step %d %s", i, k)
		fields := p.Event * p.Line * p.Value
		for _, c := range p.Locals {
			require.True(t, c >= 0 && c <= 1)
			fields *= c
		}
		require.LessOrEqual(t, p.State, fields*(1+1e-9))
		for _, c := range []float64{p.State, p.Event, p.Line, p.Value} {
			require.True(t, c >= 0 && c <= 1, "%v", p)
		}
		if st.HasLocals() {
			require.Len(t, p.Locals, len(st.Locals))
		}
		checked++
	}
	require.GreaterOrEqual(t, checked, 4)

	r, err := Start(ctx, Real(trace.Limits{}), string(src), "f([3, None, 4])")
	require.NoError(t, err)
	defer r.Close()
	_, err = r.StepInto(ctx)
	require.NoError(t, err)
	_, ok := r.Prediction()
	require.False(t, ok, "a real state has no confidence")
}
