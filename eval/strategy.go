// The strategies that answer one CRUXEval item with the debugger: run
// forward to the return, or invert from the output to the input.

package eval

import (
	"context"
	"errors"
	"fmt"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
)

// answer runs one strategy once and scores its answer into pr. An error is
// the backend's failure (the prediction counts as wrong) or a
// *scorerError.
func answer(ctx context.Context, cfg *CruxConfig, it *Item, prog *dsl.Program, run Runner, strat string, k int, pr *Prediction) error {
	if strat == Inverse {
		call, args, err := inverse(ctx, prog, run, it, k)
		if err != nil {
			return err
		}
		pr.Answer = call
		ok, err := cfg.Scorer.CheckInput(ctx, it.Source, it.Entry, args, it.Output)
		if err != nil {
			return &scorerError{err}
		}
		pr.Pass = ok
		return nil
	}
	s, err := run.Entry(ctx, k)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := forward(ctx, s, prog, strat, cfg.MaxSteps)
	if err != nil {
		return err
	}
	if st.Event != dsl.Return {
		return fmt.Errorf("eval: %s stopped at event %s, not at f's return", strat, st.Event)
	}
	pr.Answer = st.Value
	ok, err := cfg.Scorer.CheckOutput(ctx, it.Source, it.Output, st.Value)
	if err != nil {
		return &scorerError{err}
	}
	pr.Pass = ok
	return nil
}

// forward drives a session from f's call to its return with strategy strat.
func forward(ctx context.Context, s *ndbg.Session, prog *dsl.Program, strat string, maxSteps int) (dsl.State, error) {
	switch strat {
	case StepReturn:
		return s.StepReturn(ctx)
	case BreakpointReturn:
		lines := returnLines(prog)
		if len(lines) == 0 {
			return dsl.State{}, errors.New("eval: f has no line to break at")
		}
		a := dsl.Action{Kind: dsl.Breakpoint, Lines: lines}
		if len(lines) > 1 {
			a.Kind = dsl.Continue
		}
		// A stop in a nested activation of f (recursion, when the depth is
		// known: the real debugger) is not the answer: run on to the next.
		for range 16 {
			st, err := s.Do(ctx, a)
			if err != nil {
				return st, err
			}
			for i := 0; i < 8 && st.Event != dsl.Return; i++ {
				if st, err = s.StepOver(ctx); err != nil {
					return st, err
				}
			}
			if st.Event != dsl.Return || st.Depth <= 0 {
				return st, nil
			}
		}
		return dsl.State{}, errors.New("eval: f's outermost return not reached")
	default: // Steps
		for range maxSteps {
			st, err := s.StepOver(ctx)
			if err != nil || st.Event == dsl.Return {
				return st, err
			}
		}
		return dsl.State{}, fmt.Errorf("eval: f did not return within %d step_over actions", maxSteps)
	}
}

// inverse predicts the call of f that returns it.Output: from the return
// state at f's last return line, inv_step_return to the call state, whose
// locals are the arguments.
func inverse(ctx context.Context, prog *dsl.Program, run Runner, it *Item, k int) (string, []Arg, error) {
	lines := returnLines(prog)
	if len(lines) == 0 {
		return "", nil, errors.New("eval: f has no return line")
	}
	value := it.Output
	if len(value) > dsl.MaxRepr {
		value = dsl.TruncateRepr(value)
	}
	s, err := run.FromReturn(ctx, lines[len(lines)-1], value, k)
	if err != nil {
		return "", nil, err
	}
	defer s.Close()
	st, err := s.StepBackReturn(ctx)
	if err != nil {
		return "", nil, err
	}
	if st.Event != dsl.Call {
		return "", nil, fmt.Errorf("eval: inv_step_return stopped at event %s, not at a call", st.Event)
	}
	sig, err := signature(prog)
	if err != nil {
		return "", nil, err
	}
	args := callArgs(sig, st.Locals)
	return Call(it.Entry, args), args, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
