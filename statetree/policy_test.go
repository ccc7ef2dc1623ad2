package statetree

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
)

func TestParamsValidate(t *testing.T) {
	require.NoError(t, DefaultParams().Validate())
	bad := map[string]func(p *Params){
		"no forward":     func(p *Params) { p.Weights = [numKinds]float64{}; p.Weights[dsl.InvStepInto] = 1 },
		"negative":       func(p *Params) { p.Weights[dsl.StepOver] = -1 },
		"NaN":            func(p *Params) { p.Weights[dsl.StepOver] = math.NaN() },
		"zero steps":     func(p *Params) { p.MinSteps = 0 },
		"empty range":    func(p *Params) { p.MaxSteps = p.MinSteps - 1 },
		"probability":    func(p *Params) { p.Miss = 1.5 },
		"window":         func(p *Params) { p.NearWindow = 0 },
		"continue lines": func(p *Params) { p.MaxContinueLines = 0 },
	}
	for name, m := range bad {
		p := DefaultParams()
		m(&p)
		require.Error(t, p.Validate(), name)
		_, err := NewSampler(p)
		require.Error(t, err, name)
	}
}

// TestSampleIsConsistent: every sampled step is the tree's transition, its
// state the tree's state, its horizon right, and the text encodes.
func TestSampleIsConsistent(t *testing.T) {
	s, err := NewSampler(DefaultParams())
	require.NoError(t, err)
	var stats Stats
	trees := realTrees(t, handPrograms[:6])
	for pi, p := range handPrograms[:6] {
		tr := trees[pi]
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 300; i++ {
			x, err := s.Sample(tr, rng)
			require.NoError(t, err)
			stats.Add(x)
			traj := x.Trajectory
			require.Len(t, x.Positions, len(traj.Steps)+1)
			require.Len(t, x.Horizons, len(traj.Steps))
			require.Equal(t, tr.State(x.Positions[0]), traj.Start)
			require.NotEmpty(t, traj.Steps)
			require.LessOrEqual(t, len(traj.Steps), DefaultParams().MaxSteps)
			for j, st := range traj.Steps {
				from, to := x.Positions[j], x.Positions[j+1]
				if st.Action.Kind.Inverse() {
					require.NotZero(t, from, "inverse action at the start")
				}
				want, err := tr.Apply(from, st.Action)
				require.NoError(t, err)
				require.Equal(t, want, to)
				require.Equal(t, Horizon(from, to), x.Horizons[j])
				if to == tr.End() {
					require.Nil(t, st.State)
					require.Equal(t, len(traj.Steps)-1, j, "steps after the end")
				} else {
					require.NotNil(t, st.State)
					require.Equal(t, tr.State(to), *st.State)
					if st.State.Event == dsl.Return || st.State.Event == dsl.Exception {
						require.Nil(t, st.State.Locals)
					}
				}
				for _, l := range st.Action.Lines {
					require.True(t, tr.prog.Nameable(l), "breakpoint line %d", l)
				}
			}
			_, err = traj.Encode()
			require.NoError(t, err, "%s", p.name)
		}
	}
	t.Logf("\n%s", stats.String())
	require.Equal(t, 1800, stats.Trajectories)
	sum := 0
	for _, k := range stats.ByKind {
		sum += k.Count
	}
	require.Equal(t, stats.Steps, sum)
	// Every kind is drawn; single steps have horizon 0 by definition.
	for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
		require.NotZero(t, stats.ByKind[k].Count, "%s never drawn", k)
	}
	require.Equal(t, stats.ByKind[dsl.StepInto].Count, stats.ByKind[dsl.StepInto].Single)
	require.Equal(t, stats.ByKind[dsl.InvStepInto].Count, stats.ByKind[dsl.InvStepInto].Single)
	for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
		ks := stats.ByKind[k]
		total := 0
		for _, h := range ks.Hist {
			total += h
		}
		require.Equal(t, ks.Count, total, "%s", k)
		require.Equal(t, ks.Single, ks.Hist[0], "%s", k)
	}
	for h, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 2, 4: 3, 63: 6, 64: 7, 1000: 7, 32: 6} {
		require.Equal(t, want, bucket(h), "horizon %d", h)
	}
	require.Greater(t, stats.ByKind[dsl.Breakpoint].HorizonSum, int64(stats.ByKind[dsl.Breakpoint].Count), "breakpoints should jump")
}

func TestSampleDeterministicAndWeighted(t *testing.T) {
	tr := realTree(t, handPrograms[2]) // fib(4)
	p := DefaultParams()
	p.StartAtEntry = 0
	p.MinSteps, p.MaxSteps = 1, 1
	s, err := NewSampler(p)
	require.NoError(t, err)
	a, err := s.Sample(tr, rand.New(rand.NewPCG(7, 7)))
	require.NoError(t, err)
	b, err := s.Sample(tr, rand.New(rand.NewPCG(7, 7)))
	require.NoError(t, err)
	require.Equal(t, a, b, "same seed, same sample")

	rng := rand.New(rand.NewPCG(3, 4))
	var counts [numKinds]int
	const draws = 20000
	for i := 0; i < draws; i++ {
		x, err := s.Sample(tr, rng)
		require.NoError(t, err)
		counts[x.Trajectory.Steps[0].Action.Kind]++
	}
	// Starts are uniform over states, so state 0 (no inverse actions) is
	// drawn 1/End of the time: inverse shares shrink by that factor.
	atZero := 1 / float64(tr.End())
	fwd := 0.0
	for k := dsl.StepInto; k <= dsl.Continue; k++ {
		fwd += p.Weights[k]
	}
	for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
		w := p.Weights[k]
		want := w * (1 - atZero)
		if !k.Inverse() {
			want += atZero * w / fwd
		}
		assert.InDelta(t, want, float64(counts[k])/draws, 0.015, "%s", k)
	}
}
