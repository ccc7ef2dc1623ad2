package ndbg

import (
	"context"
	"errors"
	"math/rand/v2"
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

// TestTrackFollowsRealStack: the neural engine's call stack, followed
// through the real run's states, is the real backend's wherever it is
// known, after forward and inverse steps and jumps; and it stays known
// through inverse single steps (it was lost at every inverse step).
func TestTrackFollowsRealStack(t *testing.T) {
	ctx := context.Background()
	m, err := Open(ctx, Options{})
	if errors.Is(err, ErrNoDefaultModel) {
		t.Skip("no embedded default model")
	}
	require.NoError(t, err)
	defer m.Close()
	mean, err := os.ReadFile("examples/mean.py")
	require.NoError(t, err)
	progs := []struct{ src, call string }{
		{string(mean), "f([1, 2, None, 4])"},
		{"def fib(n):\n    if n < 2:\n        return n\n    a = fib(n - 1)\n    b = fib(n - 2)\n    return a + b\n", "fib(4)"},
		{"def g(x):\n    return x * 2\n\n\ndef h(a, b):\n    return a + b\n\n\ndef f(xs):\n    out = h(g(xs[0]), g(xs[1]))\n" +
			"    ys = sorted(xs, key=lambda v: -v)\n    try:\n        out += 1 // (xs[0] - xs[0])\n    except ZeroDivisionError:\n" +
			"        out -= 1\n    return [out + y for y in ys]\n", "f([2, 5, 3])"},
	}
	rng := rand.New(rand.NewPCG(17, 2))
	knownInverse, inverse := 0, 0
	for _, p := range progs {
		s, err := Start(ctx, Neural(m, sample.Params{}), p.src, p.call)
		require.NoError(t, err)
		e := s.eng.(*neuralEngine)
		real, err := Start(ctx, Real(trace.Limits{}), p.src, p.call)
		require.NoError(t, err)
		for range 40 {
			e.calls = slices.Clone(e.first)
			rs := real.Fork()
			for range 30 {
				a := dsl.Action{Kind: dsl.ActionKind(1 + rng.IntN(int(dsl.InvContinue)))}
				if rng.IntN(4) > 0 { // mostly single steps
					a.Kind = []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepReturn,
						dsl.InvStepInto, dsl.InvStepOver, dsl.InvStepReturn}[rng.IntN(6)]
				}
				if a.Kind == dsl.Breakpoint || a.Kind == dsl.InvBreakpoint || a.Kind == dsl.Continue && rng.IntN(2) == 0 {
					a.Lines = []int{1 + rng.IntN(len(rs.Program().Lines))}
					if !rs.Program().Nameable(a.Lines[0]) {
						continue
					}
				}
				from, _ := rs.State()
				rst, err := rs.Do(ctx, a)
				if errors.Is(err, ErrFinished) {
					break // the neural engine does not step back from the end
				}
				if err != nil {
					require.ErrorIsf(t, err, ErrAtStart, "%s", a)
					continue
				}
				known := e.calls != nil
				st := rst
				e.track(from, a, &st)
				if e.calls != nil {
					require.Equal(t, rs.Stack(), e.calls, "%s: stack after %s from %+v", p.call, a, from)
					require.Equal(t, rst.Depth, st.Depth)
				}
				if known && (a.Kind == dsl.InvStepInto || a.Kind == dsl.InvStepOver || a.Kind == dsl.InvStepReturn) {
					inverse++
					if e.calls != nil {
						knownInverse++
					}
				}
			}
		}
		s.Close()
		real.Close()
	}
	t.Log(knownInverse, inverse)
	require.Greater(t, inverse, 200)
	require.GreaterOrEqual(t, knownInverse*10, inverse*9, "inverse steps from a known stack keep it known")
}
