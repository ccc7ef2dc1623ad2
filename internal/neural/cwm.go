package neural

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
)

// CWMEngine emulates the debugger's actions over plain trace text, for a
// model trained on plain traces without the DSL's action tokens (CWM
// itself, facebook/cwm, or anything trained like it): step into takes the
// next frame; step over takes it too, and when that enters a callee, forces
// <|return_sep|> to skip the callee's body; step return forces
// <|return_sep|>; step back drops the last step. Breakpoints, continue and
// the other inverse actions are unsupported: they need the action tokens.
type CWMEngine struct {
	*Engine // the model session; its text is the CWM text
	// hist holds every frame the model wrote (including the callee frames a
	// step over skipped) as step_into steps: the ".." references of the next
	// frame. The model reads the frames as it wrote them, without actions.
	hist  dsl.Trajectory
	marks []cwmMark // one per state the session has seen, for step back
}

// cwmMark is where the text and the history stood at one state.
type cwmMark struct {
	snapshot
	steps int
}

// NewCWM makes an engine, started at first, emulate CWM's debugger.
func NewCWM(e *Engine, prog *dsl.Program, first dsl.State) *CWMEngine {
	c := &CWMEngine{Engine: e, hist: dsl.Trajectory{Program: prog, Start: first}}
	c.mark()
	return c
}

func (c *CWMEngine) mark() {
	c.marks = append(c.marks, cwmMark{c.snapshot(), len(c.hist.Steps)})
}

// restoreMark goes back to a mark: text, model and history.
func (c *CWMEngine) restoreMark(ctx context.Context, mk cwmMark) error {
	c.hist.Steps = c.hist.Steps[:mk.steps]
	return c.restore(ctx, mk.snapshot)
}

// maxSkipped bounds the callee frames one step over may skip.
const maxSkipped = 64

// Apply takes the frames the action a is emulated by.
func (c *CWMEngine) Apply(ctx context.Context, _ *dsl.Trajectory, a dsl.Action, _ []int) (st *dsl.State, err error) {
	from := *lastState(&c.hist)
	defer func() {
		if err != nil && a.Kind != dsl.InvStepInto { // a failed action leaves no trace
			if rerr := c.restoreMark(context.WithoutCancel(ctx), c.marks[len(c.marks)-1]); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	switch a.Kind {
	case dsl.StepInto:
		st, err = c.next(ctx, dsl.StepInto, "")
	case dsl.StepReturn:
		if from.Event == dsl.Return {
			st, err = c.next(ctx, dsl.StepInto, "")
		} else {
			st, err = c.next(ctx, dsl.StepReturn, dsl.ReturnSep)
		}
	case dsl.StepOver:
		depth := len(c.calls)
		st, err = c.next(ctx, dsl.StepInto, "")
		for i := 0; err == nil && st != nil && st.Event == dsl.Call && c.calls != nil && len(c.calls) > depth; i++ {
			if i == maxSkipped {
				return nil, fmt.Errorf("ndbg: step over skipped %d calls without coming back", maxSkipped)
			}
			if st, err = c.next(ctx, dsl.StepReturn, dsl.ReturnSep); err == nil && st != nil { // the callee returns
				st, err = c.next(ctx, dsl.StepInto, "") // the caller's next stop (or a sibling call)
			}
		}
	case dsl.InvStepInto:
		return c.back(ctx)
	default:
		return nil, fmt.Errorf("%w: %s on the CWM backend (it needs the DSL's action tokens)", engine.ErrUnsupported, a.Kind)
	}
	if err != nil {
		return nil, err
	}
	if st != nil {
		c.mark()
	}
	return st, nil
}

// next has the model write one more frame, starting with the forced event
// token when one is given.
func (c *CWMEngine) next(ctx context.Context, kind dsl.ActionKind, force string) (*dsl.State, error) {
	from := *lastState(&c.hist)
	m, err := c.pc.cp.Start(constrain.Context{Action: dsl.Action{Kind: kind}, From: from, Stack: c.calls, Dots: dots(c.hist.Program, c.hist.References()), Literals: c.literals})
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	if err := c.flush(ctx); err != nil {
		return nil, err
	}
	var out []int
	if force != "" {
		id, ok := c.m.vocab.Special(force)
		if !ok || !m.Accept(id) {
			return nil, fmt.Errorf("ndbg: internal: cannot force %s here", force)
		}
		out = append(out, id)
		c.pending = append(c.pending, id)
	}
	rest, _, err := c.decodeFrame(ctx, m, true)
	if err != nil {
		return nil, err
	}
	frame := c.m.tok.Decode(append(out, rest...))
	c.text += frame
	st, err := c.hist.ParseFrameLenient(frame)
	if err != nil {
		return nil, fmt.Errorf("ndbg: the model's frame does not parse (a constraint bug): %w", err)
	}
	if st == nil {
		return nil, nil
	}
	c.hist.Steps = append(c.hist.Steps, dsl.Step{Action: dsl.Action{Kind: dsl.StepInto}, State: st})
	c.track(from, dsl.Action{Kind: dsl.StepInto}, st)
	return st, nil
}

// back returns to the previous state the session saw, dropping what the
// model wrote since.
func (c *CWMEngine) back(ctx context.Context) (*dsl.State, error) {
	if len(c.marks) < 2 {
		return nil, engine.ErrAtStart
	}
	c.marks = c.marks[:len(c.marks)-1]
	if err := c.restoreMark(ctx, c.marks[len(c.marks)-1]); err != nil {
		return nil, err
	}
	st := *lastState(&c.hist)
	return &st, nil
}

// Edited is not available: a CWM session's history holds frames the
// session never showed.
func (c *CWMEngine) Edited(context.Context, *dsl.Trajectory) error {
	return fmt.Errorf("%w: editing a local on the CWM backend", engine.ErrUnsupported)
}

// Fork returns an independent copy.
func (c *CWMEngine) Fork() engine.Engine {
	f := *c
	f.Engine = c.Engine.Fork().(*Engine)
	f.hist.Steps = slices.Clone(c.hist.Steps)
	f.marks = slices.Clone(c.marks)
	return &f
}

// Confidence is nil: a CWM session's states carry no confidence.
func (c *CWMEngine) Confidence() *engine.Confidence { return nil }
