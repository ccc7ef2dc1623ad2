package statetree

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ndbg/ndbg/dsl"
)

// numKinds sizes arrays indexed by dsl.ActionKind (index 0 unused).
const numKinds = int(dsl.InvContinue) + 1

// Params configure the stochastic policy that samples debugging sessions
// over a tree (Sampler). Zero values are not defaults: start from
// DefaultParams.
type Params struct {
	// Weights are the relative probabilities of each action kind, indexed
	// by dsl.ActionKind (index 0 is ignored). Inverse kinds are never drawn
	// at state 0; at least one forward kind needs a positive weight.
	Weights [numKinds]float64
	// MinSteps and MaxSteps bound the number of actions per trajectory
	// (uniform between them). A trajectory stops early when an action runs
	// past the end of the program.
	MinSteps, MaxSteps int
	// StartAtEntry is the probability that a trajectory starts at the
	// entry's call state; otherwise it starts at a uniformly drawn state.
	StartAtEntry float64
	// Near is the probability that a breakpoint target is drawn among the
	// next (previous, for inverse actions) NearWindow states rather than
	// uniformly from all later (earlier) states: a mix of short and long
	// jumps.
	Near       float64
	NearWindow int
	// Miss is the probability that a breakpoint line is drawn uniformly
	// from the program's code lines instead of from the lines that will be
	// hit (were hit, for inverse actions): such a breakpoint may never stop,
	// so the model also learns to predict the end (or the start).
	Miss float64
	// MaxContinueLines is the largest number of breakpoints of a continue
	// or inv_continue (uniform from 1).
	MaxContinueLines int
}

// DefaultParams is the policy of ndbg's training data: mostly single steps
// forward, a quarter long jumps, a fifth inverse actions.
func DefaultParams() Params {
	var w [numKinds]float64
	w[dsl.StepInto] = 0.25
	w[dsl.StepOver] = 0.20
	w[dsl.StepReturn] = 0.10
	w[dsl.Breakpoint] = 0.15
	w[dsl.Continue] = 0.10
	w[dsl.InvStepInto] = 0.06
	w[dsl.InvStepOver] = 0.05
	w[dsl.InvStepReturn] = 0.04
	w[dsl.InvBreakpoint] = 0.03
	w[dsl.InvContinue] = 0.02
	return Params{
		Weights: w, MinSteps: 1, MaxSteps: 12, StartAtEntry: 0.5,
		Near: 0.5, NearWindow: 32, Miss: 0.05, MaxContinueLines: 3,
	}
}

// Validate reports what makes p unusable.
func (p Params) Validate() error {
	fwd := 0.0
	for k := 1; k < numKinds; k++ {
		w := p.Weights[k]
		if w < 0 || w != w {
			return fmt.Errorf("statetree: weight of %s is %v", dsl.ActionKind(k), w)
		}
		if !dsl.ActionKind(k).Inverse() {
			fwd += w
		}
	}
	if fwd <= 0 {
		return errors.New("statetree: no forward action has a positive weight")
	}
	if p.MinSteps < 1 || p.MaxSteps < p.MinSteps {
		return fmt.Errorf("statetree: steps range [%d,%d] is empty or starts below 1", p.MinSteps, p.MaxSteps)
	}
	for name, v := range map[string]float64{"StartAtEntry": p.StartAtEntry, "Near": p.Near, "Miss": p.Miss} {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("statetree: %s = %v is not a probability", name, v)
		}
	}
	if p.NearWindow < 1 || p.MaxContinueLines < 1 {
		return fmt.Errorf("statetree: NearWindow %d and MaxContinueLines %d must be at least 1", p.NearWindow, p.MaxContinueLines)
	}
	return nil
}

// Sampler draws debugging sessions over trees with fixed Params. It holds
// no mutable state: randomness comes from the caller's *rand.Rand.
type Sampler struct {
	p        Params
	cum, fwd [numKinds]float64 // cumulative weights: all kinds, forward kinds
}

// NewSampler checks p and prepares the sampler.
func NewSampler(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &Sampler{p: p}
	for k := 1; k < numKinds; k++ {
		s.cum[k] = s.cum[k-1] + p.Weights[k]
		s.fwd[k] = s.fwd[k-1]
		if !dsl.ActionKind(k).Inverse() {
			s.fwd[k] += p.Weights[k]
		}
	}
	return s, nil
}

// Sample is one sampled session: the trajectory and, per step, where it went.
type Sample struct {
	Trajectory dsl.Trajectory
	// Positions are the tree positions: Positions[0] is the start, then one
	// per step (End for a step that ran past the end).
	Positions []int
	// Horizons are per step the number of states skipped (Horizon).
	Horizons []int
}

// Sample draws one session over tr.
func (s *Sampler) Sample(tr *Tree, rng *rand.Rand) (*Sample, error) {
	n := tr.End()
	pos := 0
	if rng.Float64() >= s.p.StartAtEntry {
		pos = rng.IntN(n)
	}
	steps := s.p.MinSteps + rng.IntN(s.p.MaxSteps-s.p.MinSteps+1)
	out := &Sample{
		Trajectory: dsl.Trajectory{Program: tr.prog, Start: tr.State(pos)},
		Positions:  make([]int, 1, steps+1),
		Horizons:   make([]int, 0, steps),
	}
	out.Positions[0] = pos
	states := make([]dsl.State, steps)
	out.Trajectory.Steps = make([]dsl.Step, 0, steps)
	for i := 0; i < steps; i++ {
		a := s.action(tr, pos, rng)
		next, err := tr.Apply(pos, a)
		if err != nil {
			return nil, fmt.Errorf("statetree: sampling %s at %d: %w", a, pos, err)
		}
		st := dsl.Step{Action: a}
		if next < n {
			states[i] = tr.State(next)
			st.State = &states[i]
		}
		out.Trajectory.Steps = append(out.Trajectory.Steps, st)
		out.Positions = append(out.Positions, next)
		out.Horizons = append(out.Horizons, Horizon(pos, next))
		pos = next
		if pos == n {
			break
		}
	}
	return out, nil
}

// action draws an action that is valid at pos (pos < End).
func (s *Sampler) action(tr *Tree, pos int, rng *rand.Rand) dsl.Action {
	cum := &s.cum
	if pos == 0 {
		cum = &s.fwd
	}
	x := rng.Float64() * cum[numKinds-1]
	k := 1
	for k < numKinds-1 && x >= cum[k] {
		k++
	}
	kind := dsl.ActionKind(k)
	a := dsl.Action{Kind: kind}
	switch kind {
	case dsl.Breakpoint, dsl.InvBreakpoint:
		a.Lines = []int{s.breakLine(tr, pos, kind.Inverse(), rng)}
	case dsl.Continue, dsl.InvContinue:
		m := 1 + rng.IntN(s.p.MaxContinueLines)
		for j := 0; j < m; j++ {
			l := s.breakLine(tr, pos, kind.Inverse(), rng)
			if !slices.Contains(a.Lines, l) {
				a.Lines = append(a.Lines, l)
			}
		}
	}
	return a
}

// breakLine draws a breakpoint line: usually one with a line state after
// pos (before pos when back), near or far; sometimes any nameable line.
func (s *Sampler) breakLine(tr *Tree, pos int, back bool, rng *rand.Rand) int {
	n := tr.End()
	if rng.Float64() >= s.p.Miss {
		lo, hi := pos+1, n // candidate targets [lo, hi)
		if back {
			lo, hi = 0, pos
		}
		if w := s.p.NearWindow; rng.Float64() < s.p.Near {
			if back {
				lo = max(lo, hi-w)
			} else {
				hi = min(hi, lo+w)
			}
		}
		if lo < hi {
			r := lo + rng.IntN(hi-lo)
			var j int32
			if back {
				j = tr.prevLine[r]
				if int(j) < lo {
					j = -1
				}
			} else {
				j = tr.nextLine[r]
				if int(j) >= n {
					j = tr.prevLine[n-1]
					if int(j) <= pos {
						j = -1
					}
				}
			}
			if j >= 0 && tr.prog.Nameable(int(tr.line[j])) {
				return int(tr.line[j])
			}
		}
	}
	// Any nameable line (a miss, or no line state on that side).
	lines := tr.prog.Lines
	for try := 0; try < 8; try++ {
		l := 1 + rng.IntN(len(lines))
		if tr.prog.Nameable(l) {
			return l
		}
	}
	return int(tr.line[tr.firstNameableLine()])
}

// firstNameableLine is the index of the first state whose line can be
// named (the entry's call line always can: NewProgram marks it).
func (t *Tree) firstNameableLine() int {
	for i, l := range t.line {
		if t.prog.Nameable(int(l)) {
			return i
		}
	}
	return 0
}

// KindStats are the statistics of one action kind.
type KindStats struct {
	Count      int   // steps with this action
	Ended      int   // of which ran past the end (forward) or to state 0 (inverse)
	HorizonSum int64 // total horizon
	MaxHorizon int
	Single     int // steps with horizon 0 (the very next or previous state)
	// Hist counts horizons in power-of-two buckets: 0, 1, 2-3, 4-7, ...,
	// 64 and more in the last.
	Hist [HistBuckets]int
}

// HistBuckets is the number of horizon buckets in KindStats.Hist.
const HistBuckets = 8

// bucket is the Hist bucket of horizon h.
func bucket(h int) int {
	b := 0
	for h > 0 && b < HistBuckets-1 {
		h >>= 1
		b++
	}
	return b
}

// Stats aggregate samples: counts and horizons by action kind.
type Stats struct {
	Trajectories, Steps int
	ByKind              [numKinds]KindStats
}

// Add counts one sample.
func (st *Stats) Add(x *Sample) {
	st.Trajectories++
	for i, step := range x.Trajectory.Steps {
		k := &st.ByKind[step.Action.Kind]
		h := x.Horizons[i]
		st.Steps++
		k.Count++
		k.HorizonSum += int64(h)
		k.MaxHorizon = max(k.MaxHorizon, h)
		if h == 0 {
			k.Single++
		}
		k.Hist[bucket(h)]++
		if step.State == nil || step.Action.Kind.Inverse() && x.Positions[i+1] == 0 {
			k.Ended++
		}
	}
}

// String renders the stats as a table, one row per action kind.
func (st *Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d trajectories, %d steps (%.2f per trajectory)\n", st.Trajectories, st.Steps, float64(st.Steps)/float64(max(st.Trajectories, 1)))
	fmt.Fprintf(&b, "%-16s %8s %6s %9s %9s %9s %9s   %s\n", "action", "steps", "share", "mean hor", "max hor", "hor=0", "end/start",
		"horizon histogram 0|1|2-3|4-7|8-15|16-31|32-63|64+ (%)")
	for k := 1; k < numKinds; k++ {
		ks := st.ByKind[k]
		if ks.Count == 0 {
			continue
		}
		c := float64(ks.Count)
		fmt.Fprintf(&b, "%-16s %8d %5.1f%% %9.1f %9d %8.1f%% %8.1f%%  ", dsl.ActionKind(k), ks.Count,
			100*c/float64(st.Steps), float64(ks.HorizonSum)/c, ks.MaxHorizon, 100*float64(ks.Single)/c, 100*float64(ks.Ended)/c)
		for i, h := range ks.Hist {
			sep := "|"
			if i == 0 {
				sep = " "
			}
			fmt.Fprintf(&b, "%s%.0f", sep, 100*float64(h)/c)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
