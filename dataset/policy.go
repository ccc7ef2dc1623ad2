package dataset

import (
	"errors"
	"math/rand/v2"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/statetree"
)

// Sampler draws one debugging trajectory over a state tree. It returns the
// trajectory and, per step, the horizon (statetree.Horizon) of its action.
type Sampler func(t *statetree.Tree, r *rand.Rand) (*dsl.Trajectory, []int, error)

// actionWeights are the interim policy's relative action frequencies:
// mostly single steps, some long jumps, a fifth inverse.
var actionWeights = [...]struct {
	k dsl.ActionKind
	w int
}{
	{dsl.StepInto, 22}, {dsl.StepOver, 22}, {dsl.StepReturn, 9}, {dsl.Breakpoint, 14}, {dsl.Continue, 6},
	{dsl.InvStepInto, 8}, {dsl.InvStepOver, 8}, {dsl.InvStepReturn, 4}, {dsl.InvBreakpoint, 5}, {dsl.InvContinue, 2},
}

// DefaultSampler is ndbg's interim stochastic policy, used until statetree
// ships its own: it starts at the entry's call (half the time) or at a
// random state, then takes one to eight actions drawn from actionWeights,
// with breakpoints on lines that run, and stops when the program ends.
func DefaultSampler(t *statetree.Tree, r *rand.Rand) (*dsl.Trajectory, []int, error) {
	end := t.End()
	if end == 0 {
		return nil, nil, errors.New("dataset: empty tree")
	}
	var lines []int
	seen := map[int]bool{}
	for i := range end {
		if e := t.Event(i); e.Kind == dsl.Line && !seen[e.Line] {
			seen[e.Line] = true
			lines = append(lines, e.Line)
		}
	}
	pos := 0
	if r.IntN(2) == 1 {
		pos = r.IntN(end)
	}
	tr := &dsl.Trajectory{Program: t.Program(), Start: state(t, pos)}
	var horizons []int
	nsteps := 1 + r.IntN(8)
	total := 0
	for _, a := range actionWeights {
		total += a.w
	}
	for len(tr.Steps) < nsteps {
		moved := false
		for try := 0; try < 8 && !moved; try++ {
			n := r.IntN(total)
			var k dsl.ActionKind
			for _, a := range actionWeights {
				if n < a.w {
					k = a.k
					break
				}
				n -= a.w
			}
			a := dsl.Action{Kind: k}
			switch k {
			case dsl.Breakpoint, dsl.InvBreakpoint:
				if len(lines) == 0 {
					continue
				}
				a.Lines = []int{lines[r.IntN(len(lines))]}
			case dsl.Continue, dsl.InvContinue:
				if len(lines) == 0 {
					continue
				}
				a.Lines = []int{lines[r.IntN(len(lines))]}
				if len(lines) > 1 && r.IntN(2) == 0 {
					if l := lines[r.IntN(len(lines))]; l != a.Lines[0] {
						a.Lines = append(a.Lines, l)
					}
				}
			}
			next, err := t.Apply(pos, a)
			if errors.Is(err, statetree.ErrFinished) || errors.Is(err, statetree.ErrAtStart) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			if next == pos {
				continue
			}
			step := dsl.Step{Action: a}
			if next < end {
				s := state(t, next)
				step.State = &s
			}
			tr.Steps = append(tr.Steps, step)
			horizons = append(horizons, statetree.Horizon(pos, next))
			pos = next
			moved = true
		}
		if !moved || pos == end {
			break
		}
	}
	return tr, horizons, nil
}

// state is t.State(i) with Source as frames write it (dsl.Program.Text:
// the entry's def line without the start marker).
func state(t *statetree.Tree, i int) dsl.State {
	s := t.State(i)
	s.Source = t.Program().Text(s.Line)
	return s
}
