package ndbg_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testmodel"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// randomModel is a random tiny model over a tokenizer with the DSL tokens.
func randomModel(t testing.TB, seed uint64) *ndbg.Model { return testmodel.Model(t, seed) }

// TestNeuralFramesValid drives neural sessions with random models through
// every action: each predicted state is well formed, quotes a line of the
// program, and its names can exist in a scope at that line.
func TestNeuralFramesValid(t *testing.T) {
	ctx := context.Background()
	codes, err := constrain.Analyze(ctx, "", mustProgram(t, buggy, "f").Source)
	require.NoError(t, err)
	actions := []dsl.Action{{Kind: dsl.StepInto}, {Kind: dsl.StepOver}, {Kind: dsl.StepInto}, {Kind: dsl.StepReturn},
		{Kind: dsl.InvStepOver}, {Kind: dsl.Breakpoint, Lines: []int{4}}, {Kind: dsl.InvStepReturn}, {Kind: dsl.Continue, Lines: []int{9}}}
	for seed := uint64(1); seed <= 3; seed++ {
		m := randomModel(t, seed)
		for _, temp := range []float64{0, 1.5} {
			s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{Temperature: temp, Seed: seed}), buggy, "f([1, None, 4])")
			require.NoError(t, err)
			for _, a := range actions {
				st, err := s.Do(ctx, a)
				if err == ndbg.ErrFinished {
					break
				}
				require.NoError(t, err, "seed %d action %v", seed, a)
				prog := s.Program()
				require.Equal(t, prog.Text(st.Line), st.Source)
				names := map[string]bool{}
				for _, c := range codes {
					if slices.Contains(c.Lines, st.Line) || c.First == st.Line {
						for _, n := range c.Names {
							names[n] = true
						}
					}
				}
				for _, l := range st.Locals {
					require.True(t, names[l.Name], "seed %d: %q cannot exist at line %d", seed, l.Name, st.Line)
				}
				if a.Kind == dsl.Breakpoint {
					require.Equal(t, dsl.Line, st.Event)
					require.Equal(t, 4, st.Line)
				}
			}
			text, err := s.Trajectory().Encode()
			require.NoError(t, err)
			_, err = dsl.Parse(text)
			require.NoError(t, err)
			s.Close()
		}
	}
}

// TestNeuralForkAndEdit: forks predict independently from a shared state,
// and an edited local is what the model reads next.
func TestNeuralForkAndEdit(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 20; seed++ {
		m := randomModel(t, seed)
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), buggy, "f([1, None, 4])")
		require.NoError(t, err)
		require.NoError(t, s.Set(ctx, "data", "[10, 20]"), "the first state (a call) can be edited")
		if _, err := s.StepInto(ctx); err != nil {
			require.ErrorIs(t, err, ndbg.ErrFinished)
			continue // this random model ends at once: try another
		}
		text, err := s.Trajectory().Encode()
		require.NoError(t, err)
		require.Contains(t, text, `{"data": "[10, 20]"}`)

		f := s.Fork()
		a, errA := s.StepInto(ctx)
		b, errB := f.StepInto(ctx)
		require.Equal(t, errA, errB)
		require.Equal(t, a, b, "greedy forks of one state agree")
		if errA != nil {
			continue
		}
		g := f.Fork()
		_, err = g.StepBackInto(ctx)
		require.NoError(t, err)
		require.Len(t, f.Trajectory().Steps, 2)
		require.Len(t, g.Trajectory().Steps, 3)
		return
	}
	t.Fatal("no random model stepped twice")
}

// TestSetValidates: Set edits only an existing local of the current frame,
// named by an identifier, to a value that is a repr; anything else is a
// clear error and leaves the state as it was.
func TestSetValidates(t *testing.T) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Neural(randomModel(t, 1), sample.Params{}), buggy, "f([1, None, 4])")
	require.NoError(t, err)
	defer s.Close()
	before, _ := s.State()
	for _, c := range []struct{ name, repr, want string }{
		{"zz", "1", `no local "zz"`},
		{"data x", "1", "not a Python name"},
		{"1data", "1", "not a Python name"},
		{"", "1", "not a Python name"},
		{"data", "[", "must be a Python repr"},
		{"data", "'abc", "must be a Python repr"},
		{"data", "", "must be a Python repr"},
	} {
		require.ErrorContains(t, s.Set(ctx, c.name, c.repr), c.want, "set %s=%s", c.name, c.repr)
		after, _ := s.State()
		require.Equal(t, before, after, "a rejected edit leaves the state unchanged")
	}
	require.NoError(t, s.Set(ctx, "data", "[7]"))
	after, _ := s.State()
	require.Equal(t, []dsl.Local{{Name: "data", Repr: "[7]"}}, after.Locals)
}

func mustProgram(t testing.TB, src, entry string) *dsl.Program {
	p, err := dsl.NewProgram(src, entry)
	require.NoError(t, err)
	return p
}

// TestStartAtReturnStepsBackToCall: from a given return state, the neural
// backend predicts the call that produced it (the CRUXEval-I strategy).
func TestStartAtReturnStepsBackToCall(t *testing.T) {
	ctx := context.Background()
	m := randomModel(t, 3)
	s, err := ndbg.StartAt(ctx, ndbg.Neural(m, sample.Params{}), buggy, "f",
		dsl.State{Event: dsl.Return, Line: 10, Value: "2.5"})
	require.NoError(t, err)
	st, err := s.StepBackReturn(ctx)
	require.NoError(t, err)
	require.Equal(t, dsl.Call, st.Event, "inv_step_return lands on a call")
	_, err = ndbg.StartAt(ctx, ndbg.Real(trace.Limits{}), buggy, "f", dsl.State{Event: dsl.Return, Line: 10, Value: "2.5"})
	require.ErrorIs(t, err, ndbg.ErrUnsupported)
	_, err = ndbg.StartAt(ctx, ndbg.Neural(m, sample.Params{}), buggy, "f", dsl.State{Event: dsl.Return, Line: 6, Value: "1"})
	require.Error(t, err, "line 6 is blank")
}

// TestNeuralNonCanonicalFrames: a model may write a full value where the
// DSL writes ".." (a greedy random model repeats itself, so its values
// equal their references). The session must go on over many actions (the
// model reads its own text; the session's history is canonical).
func TestNeuralNonCanonicalFrames(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 4; seed++ {
		m := randomModel(t, seed)
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), buggy, "f([1, None, 4])")
		require.NoError(t, err)
		for i := range 10 {
			a := dsl.Action{Kind: dsl.StepOver}
			if i%3 == 2 {
				a.Kind = dsl.StepInto
			}
			if _, err := s.Do(ctx, a); err != nil {
				require.ErrorIs(t, err, ndbg.ErrFinished, "seed %d action %d", seed, i)
				break
			}
		}
		text, err := s.Trajectory().Encode()
		require.NoError(t, err)
		_, err = dsl.Parse(text)
		require.NoError(t, err)
	}
}

// TestNeuralConcurrentSessions: sessions share one model (its weights and
// cached program prefix) concurrently, and each predicts exactly what it
// predicts alone (greedy decoding is deterministic).
func TestNeuralConcurrentSessions(t *testing.T) {
	ctx := context.Background()
	m := randomModel(t, 11)
	play := func() []ndbg.State {
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), buggy, "f([1, None, 4])")
		require.NoError(t, err)
		defer s.Close()
		var out []ndbg.State
		for _, k := range []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepInto, dsl.InvStepInto} {
			st, err := s.Do(ctx, dsl.Action{Kind: k})
			if err != nil {
				break
			}
			out = append(out, st)
		}
		return out
	}
	alone := play()
	results := make([][]ndbg.State, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = play()
		}()
	}
	wg.Wait()
	for i, r := range results {
		require.Equal(t, alone, r, "session %d", i)
	}
}

// TestNeuralLongSession: a session whose history outgrows the model's
// context goes on from its current state (the model rereads the program and
// that frame) instead of stopping at ErrContextFull, and keeps its whole
// history; a context too small for the program and one frame is an error.
func TestNeuralLongSession(t *testing.T) {
	ctx := context.Background()
	const window = 512
	for seed := uint64(1); seed <= 3; seed++ {
		m := testmodel.ModelContext(t, seed, window)
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), buggy, "f([1, None, 4])")
		require.NoError(t, err)
		steps := 0
		for ; steps < 100; steps++ {
			st, err := s.Do(ctx, dsl.Action{Kind: []dsl.ActionKind{dsl.StepInto, dsl.InvStepInto}[steps%2]})
			if errors.Is(err, ndbg.ErrFinished) {
				break
			}
			require.NoError(t, err, "seed %d step %d", seed, steps)
			require.Equal(t, s.Program().Text(st.Line), st.Source)
		}
		traj := s.Trajectory()
		require.Len(t, traj.Steps, steps+boolInt(s.Finished()), "the session keeps every step")
		text, err := traj.Encode()
		require.NoError(t, err)
		_, err = dsl.Parse(text)
		require.NoError(t, err)
		require.Greater(t, len(m.Tokenizer().Encode(text)), window, "seed %d: the history never outgrew the context", seed)
		s.Close()
	}

	small := testmodel.ModelContext(t, 1, 32)
	_, err := ndbg.Start(ctx, ndbg.Neural(small, sample.Params{}), buggy, "f([1, None, 4])")
	require.ErrorIs(t, err, ndbg.ErrContextFull)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
