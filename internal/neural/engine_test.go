package neural

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testprog"
	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/trace"
)

// defaultDir is the default model in the repository (what the root package
// embeds).
const defaultDir = "../../weights/default"

// openDefault loads the default model.
func openDefault(t *testing.T) *Model {
	t.Helper()
	if _, err := os.Stat(filepath.Join(defaultDir, "model.safetensors")); err != nil {
		t.Skip("no default model in weights/default")
	}
	eng, err := model.Load(context.Background(), defaultDir, model.Options{})
	require.NoError(t, err)
	tok, err := tokenizer.Load(filepath.Join(defaultDir, "tokenizer.json"))
	require.NoError(t, err)
	m, err := NewModel(eng, tok, "", false, true)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// randomModel is a tiny random-weight model with the default model's
// tokenizer and a context of n tokens: its greedy values are arbitrary text
// that often runs on, which the runaway and context cuts must bound.
func randomModel(t *testing.T, seed uint64, n int) *Model {
	t.Helper()
	tok, err := tokenizer.Load(filepath.Join(defaultDir, "tokenizer.json"))
	require.NoError(t, err)
	cfg, err := model.Preset("tiny")
	require.NoError(t, err)
	cfg.VocabSize, cfg.MaxPositionEmbeddings, cfg.LayerTypes = tok.VocabSize(), n, nil
	eng, err := model.NewRandom(context.Background(), cfg, kernels.F32, seed, model.Options{Threads: 1})
	require.NoError(t, err)
	m, err := NewModel(eng, tok, "", false, true)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// meanSource is examples/mean.py.
func meanSource(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/mean.py")
	require.NoError(t, err)
	return string(src)
}

// session drives an engine as the root package's Session does: it keeps
// the history and appends each action and its state.
type session struct {
	e    *Engine
	traj dsl.Trajectory
}

// start starts an engine at call of src.
func start(t *testing.T, m *Model, src, call string) *session {
	t.Helper()
	entry, _, _ := strings.Cut(call, "(")
	prog, err := dsl.NewProgram(src, entry)
	require.NoError(t, err)
	e, first, err := Start(context.Background(), m, prog, call, Params{})
	require.NoError(t, err)
	return &session{e: e, traj: dsl.Trajectory{Program: prog, Start: first}}
}

// do applies a; the state is nil at the end of the program.
func (s *session) do(ctx context.Context, a dsl.Action) (*dsl.State, error) {
	st, err := s.e.Apply(ctx, &s.traj, a, nil)
	if err != nil {
		return nil, err
	}
	s.traj.Steps = append(s.traj.Steps, dsl.Step{Action: a, State: st})
	return st, nil
}

// realTree runs call of prog for real and builds its state tree.
func realTree(t *testing.T, prog *dsl.Program, call string) *statetree.Tree {
	t.Helper()
	res, err := trace.Run(context.Background(), prog, call, trace.Limits{})
	require.NoError(t, err)
	tree, err := statetree.Build(prog, res.Events)
	require.NoError(t, err)
	return tree
}

// TestNeuralFollowsFreeGreedy: the constrained decoder steps in only where
// the model's own choice breaks the grammar. Up to the first token of the
// default model's free greedy frame that the grammar rejects, the neural
// backend writes exactly the free frame's tokens. (Jump-forward over forced
// text broke this: it fed the model tokenizations it never saw in training,
// e.g. "{" alone where the BPE has `{"`, and cost most of the accuracy.)
func TestNeuralFollowsFreeGreedy(t *testing.T) {
	ctx := context.Background()
	m := openDefault(t)
	src := meanSource(t)
	prog, err := dsl.NewProgram(src, "f")
	require.NoError(t, err)
	res, err := trace.Run(ctx, prog, "f([3, None, 4])", trace.Limits{})
	require.NoError(t, err)

	compared := 0
	for _, ev := range res.Events[:16] {
		st := dsl.State{Event: ev.Kind, Line: ev.Line, Locals: ev.Locals, Value: ev.Value}
		if st.Event == dsl.Return || st.Event == dsl.Exception {
			st.Locals = nil // not in a return frame's text
		}
		for _, a := range []dsl.Action{{Kind: dsl.StepInto}, {Kind: dsl.StepOver}} {
			st.Source = prog.Text(st.Line)
			e, err := StartAt(ctx, m, prog, st, Params{})
			require.NoError(t, err)
			mt, err := e.pc.cp.Start(constrain.Context{Action: a, From: st, Stack: e.calls, Dots: dots(prog, (&dsl.Trajectory{Program: prog, Start: st}).References())})
			require.NoError(t, err)

			// Free greedy decoding of what the engine's model reads, up to
			// the first token the grammar rejects.
			free := m.eng.NewSession()
			prompt := append(slices.Clone(e.sess.Tokens()), e.pending...)
			prompt = append(prompt, m.encode(actionText(t, prog, a))...)
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

			_, err = e.Apply(ctx, &dsl.Trajectory{Program: prog, Start: st}, a, nil)
			require.NoError(t, err)
			got := append(slices.Clone(e.sess.Tokens()), e.pending...)[len(prompt):]
			require.GreaterOrEqual(t, len(got), len(want))
			require.Equal(t, m.tok.Decode(want), m.tok.Decode(got[:len(want)]), "%s from %+v", a.Kind, st)
			compared += len(want)
		}
	}
	require.Greater(t, compared, 100, "too few tokens where the free frame was well formed")
}

// TestTrackFollowsRealStack: the neural engine's call stack, followed
// through the real run's states, is the real backend's wherever it is
// known, after forward and inverse steps and jumps; and it stays known
// through inverse single steps (it was lost at every inverse step).
func TestTrackFollowsRealStack(t *testing.T) {
	m := openDefault(t)
	progs := []struct{ src, call string }{
		{meanSource(t), "f([1, 2, None, 4])"},
		{"def fib(n):\n    if n < 2:\n        return n\n    a = fib(n - 1)\n    b = fib(n - 2)\n    return a + b\n", "fib(4)"},
		{"def g(x):\n    return x * 2\n\n\ndef h(a, b):\n    return a + b\n\n\ndef f(xs):\n    out = h(g(xs[0]), g(xs[1]))\n" +
			"    ys = sorted(xs, key=lambda v: -v)\n    try:\n        out += 1 // (xs[0] - xs[0])\n    except ZeroDivisionError:\n" +
			"        out -= 1\n    return [out + y for y in ys]\n", "f([2, 5, 3])"},
	}
	rng := rand.New(rand.NewPCG(17, 2))
	knownInverse, inverse := 0, 0
	for _, p := range progs {
		s := start(t, m, p.src, p.call)
		e, prog := s.e, s.traj.Program
		tree := realTree(t, prog, p.call)
		for range 40 {
			e.calls = slices.Clone(e.first)
			pos := 0
			for range 30 {
				a := dsl.Action{Kind: dsl.ActionKind(1 + rng.IntN(int(dsl.InvContinue)))}
				if rng.IntN(4) > 0 { // mostly single steps
					a.Kind = []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepReturn,
						dsl.InvStepInto, dsl.InvStepOver, dsl.InvStepReturn}[rng.IntN(6)]
				}
				if a.Kind == dsl.Breakpoint || a.Kind == dsl.InvBreakpoint || a.Kind == dsl.Continue && rng.IntN(2) == 0 {
					a.Lines = []int{1 + rng.IntN(len(prog.Lines))}
					if !prog.Nameable(a.Lines[0]) {
						continue
					}
				}
				from := tree.State(pos)
				next, err := tree.ApplyBreakpoints(pos, a, nil)
				if errors.Is(err, statetree.ErrFinished) || err == nil && next >= tree.End() {
					break // the neural engine does not step back from the end
				}
				if err != nil {
					require.ErrorIsf(t, err, statetree.ErrAtStart, "%s", a)
					continue
				}
				pos = next
				rst := tree.State(pos)
				known := e.calls != nil
				st := rst
				e.track(from, a, &st)
				if e.calls != nil {
					require.Equal(t, tree.Stack(pos), e.calls, "%s: stack after %s from %+v", p.call, a, from)
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
	}
	t.Log(knownInverse, inverse)
	require.Greater(t, inverse, 200)
	require.GreaterOrEqual(t, knownInverse*10, inverse*9, "inverse steps from a known stack keep it known")
}

// TestPromptShowsTheStack: where the whole program does not fit the
// model's context, the prompt holds the current line's function and those
// on the real call stack (the outermost left out when the stack is too
// deep), in source order, and while there is room, the module's imports
// and constants; with room left for the next frame; the
// shortened source is still Python (CPython compiles it).
func TestPromptShowsTheStack(t *testing.T) {
	// The default model (context 2048) on a program of 80 functions, and
	// a random model with the same tokenizer and a context of 512 tokens,
	// where the deepest stacks no longer fit.
	t.Run("default", func(t *testing.T) { checkPromptShowsTheStack(t, openDefault(t), false) })
	t.Run("context512", func(t *testing.T) { checkPromptShowsTheStack(t, randomModel(t, 1, 512), true) })
}

func checkPromptShowsTheStack(t *testing.T, m *Model, tooDeep bool) {
	ctx := context.Background()
	src, call := testprog.LongProgram(80)
	prog, err := dsl.NewProgram(src, "f")
	require.NoError(t, err)
	tree := realTree(t, prog, call)
	pos := 0
	pc, err := m.program(ctx, prog)
	require.NoError(t, err)
	n := m.eng.Config().MaxPositionEmbeddings
	require.Greater(t, len(pc.tokens), n, "the program must not fit the context")

	checked, deepest := 0, 0
	for range 40 {
		pos, err = tree.Apply(pos, dsl.Action{Kind: dsl.StepInto})
		require.NoError(t, err)
		st, stack := tree.State(pos), tree.Stack(pos)
		e := &Engine{m: m, pc: pc, calls: stack}
		v, frame, err := e.prompt(prog, st)
		require.NoError(t, err)
		require.NotNil(t, v.shown, "a shortened view")
		require.Less(t, len(v.tokens)+len(m.encode(frame)), n)
		var shown []string
		for l := 1; l <= len(prog.Lines); l++ {
			if v.holds(l) {
				shown = append(shown, prog.Lines[l-1])
			}
		}
		source := strings.Join(shown, "\n") + "\n"
		require.Equal(t, dsl.BeginOfText+dsl.TraceContextStart+source+dsl.FrameSep, v.text)
		require.True(t, v.holds(st.Line), "the current line")
		// The stack's functions, but the outermost when it is too deep.
		for k, c := range stack {
			require.Equal(t, k < len(v.omitted), slices.Contains(v.omitted, c), "stack %v omitted %v", stack, v.omitted)
			require.Equal(t, !slices.Contains(v.omitted, c), v.holds(c), "line %d (stack %v) in the prompt:\n%s", c, stack, source)
		}
		if len(stack) <= 6 {
			require.Empty(t, v.omitted, "stack %v", stack)
		}
		deepest = max(deepest, len(v.omitted))
		if len(stack) <= 2 { // room for more than the stack
			require.Contains(t, source, "import math\n")
			require.Contains(t, source, "SCALE = 3\n")
		}
		require.False(t, slices.Contains(shown, "def h0(x):") && len(stack) < 30, "h0 is far from the stack")
		out, err := exec.Command("python3", "-c", "import sys; compile(sys.argv[1], 'view', 'exec')", source).CombinedOutput()
		require.NoError(t, err, "%s\n%s", out, source)
		checked++
	}
	require.Equal(t, 40, checked)
	if tooDeep {
		require.Positive(t, deepest, "a stack too deep for the context")
	}
}

// TestRunawayValueCut: a return value the model keeps extending is cut
// within dsl.MaxRepr bytes and a bounded number of tokens, and the state is
// marked uncertain, its value's confidence 0. (The default model ran away
// on this call until it learned better; a random model, seed 1, still does.)
func TestRunawayValueCut(t *testing.T) {
	ctx := context.Background()
	m := randomModel(t, 1, 2048)
	s := start(t, m, testprog.Runaway, "f((1,), (1,), (1, 2))")
	e := s.e
	before := e.sess.Len() + len(e.pending)
	st, err := s.do(ctx, dsl.Action{Kind: dsl.StepReturn})
	require.NoError(t, err)
	written := e.sess.Len() + len(e.pending) - before
	require.Equal(t, dsl.Return, st.Event)
	require.LessOrEqual(t, len(st.Value), dsl.MaxRepr)
	require.LessOrEqual(t, written, dsl.MaxRepr+32, "tokens for one frame")
	p := e.Confidence()
	require.NotNil(t, p)
	require.NotEmpty(t, p.Cut, "value %q: uncertain", st.Value)
	require.Equal(t, []string{"value"}, p.Cut)
	require.Zero(t, p.Value)
	require.Zero(t, p.State)
}

// TestConfidenceIsTheFramesProbability: a prediction's confidence is the
// product of the probabilities of the frame's drawn tokens under the
// grammar-masked softmax, recomputed here independently (float64 softmax
// over a fork of the engine's session taken before the step, fed the same
// tokens); fields multiply to at least the state's; each is a probability.
//
// The fork, rather than a fresh session prefilled with the whole prompt,
// keeps the earlier positions' keys and values exactly as the engine
// computed them: the default model is BF16 and so is its KV cache, and
// rows computed by prefill and by decode (float32 results a few ulps apart)
// now and then round to neighbouring BF16 values, which moved a 45-token
// frame's probability by 1.4e-3 relative; from the fork the two agree to
// about 3e-7.
func TestConfidenceIsTheFramesProbability(t *testing.T) {
	ctx := context.Background()
	m := openDefault(t)
	s := start(t, m, meanSource(t), "f([3, None, 4])")
	e := s.e
	checked := 0
	for i, k := range []dsl.ActionKind{dsl.StepInto, dsl.StepInto, dsl.StepOver, dsl.StepInto, dsl.StepOver, dsl.StepReturn, dsl.InvStepInto} {
		a := dsl.Action{Kind: k}
		from := *lastState(&s.traj)
		mt, err := e.pc.cp.Start(constrain.Context{Action: a, From: from, Stack: e.calls, Dots: dots(s.traj.Program, e.view(&s.traj).References())})
		require.NoError(t, err)
		prompt := append(slices.Clone(e.sess.Tokens()), e.pending...)
		prompt = append(prompt, m.encode(actionText(t, s.traj.Program, a))...)
		ref := e.sess.Fork() // the reference continues from the engine's own cache
		st, err := s.do(ctx, a)
		require.NoError(t, err)
		if st == nil {
			break
		}
		p := e.Confidence()
		require.NotNil(t, p)
		frame := append(slices.Clone(e.sess.Tokens()), e.pending...)[len(prompt):]

		_, err = ref.Forward(ctx, prompt[ref.Len():], false)
		require.NoError(t, err)
		want := 1.0
		mask := sample.NewMask(m.eng.Config().VocabSize)
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
}

// actionText is dsl.ActionText of an action the test knows to be valid.
func actionText(t *testing.T, p *dsl.Program, a dsl.Action) string {
	t.Helper()
	text, err := dsl.ActionText(p, a)
	require.NoError(t, err)
	return text
}

// TestEngineEncoderIsIncremental: the engine's dsl.Encoder follows the
// session one step at a time (it is not read afresh at each action) and
// agrees with the whole history's references; a fork has its own.
func TestEngineEncoderIsIncremental(t *testing.T) {
	ctx := context.Background()
	m := openDefault(t)
	s := start(t, m, meanSource(t), "f([3, None, 4])")
	var enc *dsl.Encoder
	for i := range 12 {
		st, err := s.do(ctx, dsl.Action{Kind: dsl.StepInto})
		require.NoError(t, err)
		if i > 0 {
			require.Same(t, enc, s.e.enc, "step %d: the encoder was read afresh", i)
		}
		enc = s.e.enc
		before := dsl.Trajectory{Program: s.traj.Program, Start: s.traj.Start, Steps: s.traj.Steps[:i]}
		require.Equal(t, before.References(), enc.References(), "step %d", i)
		if st == nil {
			break
		}
	}
	f := s.e.Fork().(*Engine)
	require.NotSame(t, s.e.enc, f.enc)
	require.NoError(t, s.e.Edited(ctx, &s.traj))
	require.Nil(t, s.e.enc, "Edited: the history is read afresh")
}

// TestLoneDecoderStepsAlone: sessions that decode one after another, never
// together, step on their own Forward (no Batcher hand-off, and none of its
// waiting for the session before), and the count of decoding engines
// returns to zero after each frame, errors included.
func TestLoneDecoderStepsAlone(t *testing.T) {
	m := openDefault(t)
	for range 2 {
		s := start(t, m, meanSource(t), "f([3, None, 4])")
		for range 3 {
			_, err := s.do(context.Background(), dsl.Action{Kind: dsl.StepOver})
			require.NoError(t, err)
			require.Zero(t, m.decoding.Load())
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.do(ctx, dsl.Action{Kind: dsl.StepOver})
		require.Error(t, err)
		require.Zero(t, m.decoding.Load())
	}
	batches, steps := m.DecodeStats()
	require.Zero(t, batches+steps, "a lone decoder's steps went through the Batcher")
}

// TestPythonFoundOnce: a model given no interpreter looks python3 up on PATH
// at its first session and keeps it. A shim (here a script that counts its
// runs, as pyenv's is a script) costs a shell and an interpreter each time
// it is asked; it must be asked once, not at every session.
func TestPythonFoundOnce(t *testing.T) {
	real, err := trace.FindPython(context.Background())
	require.NoError(t, err)
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	shim := "#!/bin/sh\necho run >>" + count + "\nexec " + real + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "python3"), []byte(shim), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	m := randomModel(t, 1, 2048)
	src := meanSource(t)
	for range 3 {
		s := start(t, m, src, "f([3, None, 4])")
		s.e.Close()
	}
	runs, err := os.ReadFile(count)
	require.NoError(t, err)
	require.Equal(t, "run\n", string(runs), "the shim ran once per lookup")
	require.Equal(t, real, m.python)
}
