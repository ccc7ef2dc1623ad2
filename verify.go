package ndbg

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
	"github.com/ndbg/ndbg/internal/neural"
	"github.com/ndbg/ndbg/trace"
)

// Verify returns a backend that predicts with neural (Neural's backend)
// and checks every prediction whose whole-state confidence
// (Confidence.State) is below `below` against the program run for real
// (Recorded(lim)): the session then shows the real state, and its Prediction
// says so (Verified, with the model's own state in Model). An agent gets
// the model's speed where it is sure and the truth where it is not.
//
// The real run follows every action of the session, so it stands where the
// session does as long as the states shown agree; after a confident
// prediction that was wrong, "the real state" is the one the same actions
// reach (as ndbg-infer --compare grades it). A real run that cannot follow
// (it ended earlier, or a local was Set) leaves later predictions
// unverified, and Prediction().Unverified says why. Verify sessions start
// at an entry call only (Start): a real run cannot start at a given state.
func Verify(neural Backend, lim trace.Limits, below float64) (Backend, error) {
	nb, ok := neural.(neuralBackend)
	if !ok {
		return nil, fmt.Errorf("ndbg: verify: the %s backend has no confidence to check (want the neural backend)", neural.Name())
	}
	if nb.p.NoExec {
		return nil, errors.New("ndbg: verify: a no-exec backend (NoExec) runs nothing, and verifying runs the program")
	}
	if math.IsNaN(below) || below < 0 || below > 1 {
		return nil, fmt.Errorf("ndbg: verify: threshold %g is not a probability in [0, 1]", below)
	}
	return verifyBackend{nb, recordedBackend{lim}, below}, nil
}

type verifyBackend struct {
	neural neuralBackend
	real   recordedBackend
	below  float64
}

func (verifyBackend) Name() string { return "neural" }

func (b verifyBackend) start(ctx context.Context, prog *dsl.Program, call string) (engine.Engine, dsl.State, error) {
	re, first, err := b.real.start(ctx, prog, call)
	if err != nil {
		return nil, dsl.State{}, fmt.Errorf("ndbg: verify: %w", err)
	}
	ne, err := b.neural.startAt(ctx, prog, first)
	if err != nil {
		return nil, dsl.State{}, err
	}
	return &verifyEngine{neural: ne.(*neural.Engine), real: re.(*recordedEngine), below: b.below}, first, nil
}

// startAt: a real run starts at the entry's call, not at a given state.
func (verifyBackend) startAt(context.Context, *dsl.Program, dsl.State) (engine.Engine, error) {
	return nil, fmt.Errorf("%w: verifying predictions needs a real run, which starts at the entry's call (use Start, not StartAt)", ErrUnsupported)
}

// verifyEngine is a neural engine with a real one following it.
type verifyEngine struct {
	neural *neural.Engine
	real   *recordedEngine
	lost   string // why the real run no longer follows; "" while it does
	below  float64
	last   *Prediction
}

func (v *verifyEngine) Apply(ctx context.Context, traj *dsl.Trajectory, a dsl.Action, breakpoints []int) (*dsl.State, error) {
	v.last = nil
	st, err := v.neural.Apply(ctx, traj, a, breakpoints)
	if err != nil {
		return nil, err
	}
	var real *dsl.State
	if v.lost == "" {
		// The model's actions know no breakpoints (Session.Do): nor does its check.
		real, err = v.real.Apply(ctx, traj, a, nil)
		if err != nil {
			v.lost = fmt.Sprintf("the real run cannot follow %s: %v", a, err)
		}
	}
	np := v.neural.Confidence()
	if np == nil { // the session's first state again, from its history: no prediction to check
		return st, nil
	}
	pred := Prediction{Confidence: Confidence(*np)}
	v.last = &pred
	if pred.State >= v.below {
		return st, nil
	}
	if v.lost != "" {
		pred.Unverified = v.lost
		return st, nil
	}
	if err := v.neural.Replace(ctx, traj, a, real, v.real.Stack()); err != nil {
		return nil, err
	}
	pred.Verified, pred.Model = true, st
	return real, nil
}

func (v *verifyEngine) prediction() *Prediction { return v.last }

func (v *verifyEngine) Edited(ctx context.Context, traj *dsl.Trajectory) error {
	if err := v.neural.Edited(ctx, traj); err != nil {
		return err
	}
	v.lost = "a local was set: the real run cannot follow"
	return nil
}

func (v *verifyEngine) Stack() []int { return v.neural.Stack() }

func (v *verifyEngine) Fork() engine.Engine {
	f := *v
	f.neural = v.neural.Fork().(*neural.Engine)
	f.real = v.real.Fork().(*recordedEngine)
	return &f
}

func (v *verifyEngine) Close() { v.neural.Close(); v.real.Close() }
