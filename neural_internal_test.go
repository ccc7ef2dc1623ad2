package ndbg

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// TestNeuralFollowsFreeGreedy: the constrained decoder steps in only where
// the model's own choice breaks the grammar. Up to the first token of the
// default model's free greedy frame that the grammar rejects, the neural
// backend writes exactly the free frame's tokens. (Jump-forward over forced
// text broke this: it fed the model tokenizations it never saw in training,
// e.g. "{" alone where the BPE has `{"`, and cost most of the accuracy.)
func TestNeuralFollowsFreeGreedy(t *testing.T) {
	ctx := context.Background()
	m, err := Open(ctx, Options{})
	if errors.Is(err, ErrNoDefaultModel) {
		t.Skip("no embedded default model")
	}
	require.NoError(t, err)
	defer m.Close()
	src, err := os.ReadFile("examples/mean.py")
	require.NoError(t, err)
	prog, err := dsl.NewProgram(string(src), "f")
	require.NoError(t, err)
	res, err := trace.Run(ctx, prog, "f([3, None, 4])", trace.Limits{})
	require.NoError(t, err)

	compared := 0
	for _, ev := range res.Events[:16] {
		st := State{Event: ev.Kind, Line: ev.Line, Locals: ev.Locals, Value: ev.Value}
		if st.Event == dsl.Return || st.Event == dsl.Exception {
			st.Locals = nil // not in a return frame's text
		}
		for _, a := range []dsl.Action{{Kind: dsl.StepInto}, {Kind: dsl.StepOver}} {
			s, err := StartAt(ctx, Neural(m, sample.Params{}), string(src), "f", st)
			require.NoError(t, err)
			e := s.eng.(*neuralEngine)
			mt, err := e.pc.cp.Start(constrain.Context{Action: a, From: st, Stack: e.calls, Dots: dots(&s.traj)})
			require.NoError(t, err)

			// Free greedy decoding of what the engine's model reads, up to
			// the first token the grammar rejects.
			free := m.eng.NewSession()
			prompt := append(slices.Clone(e.sess.Tokens()), e.pending...)
			prompt = append(prompt, m.encode(actionText(prog, a))...)
			_, err = free.Forward(ctx, prompt, false)
			require.NoError(t, err)
			greedy, err := sample.New(sample.Params{})
			require.NoError(t, err)
			var want []int
			for !mt.Done() && len(want) < 256 {
				tok, err := greedy.Sample(free.Last())
				require.NoError(t, err)
				if !mt.Accept(tok) {
					break
				}
				want = append(want, tok)
				_, err = free.Forward(ctx, []int{tok}, false)
				require.NoError(t, err)
			}

			_, err = s.Do(ctx, a)
			if err != nil {
				require.ErrorIs(t, err, ErrFinished)
			}
			got := append(slices.Clone(e.sess.Tokens()), e.pending...)[len(prompt):]
			require.GreaterOrEqual(t, len(got), len(want))
			require.Equal(t, m.tok.Decode(want), m.tok.Decode(got[:len(want)]), "%s from %+v", a.Kind, st)
			compared += len(want)
			s.Close()
		}
	}
	require.Greater(t, compared, 100, "too few tokens where the free frame was well formed")
}
