// Package engine holds what every debugger backend's engine shares with
// the session that drives it (the root package ndbg): the Engine
// interface, the errors a session returns, and the confidence of a
// predicted state. It is apart from the root package so that the engines
// (internal/neural, and the real one in the root package) need not import
// the API that drives them.
package engine

import (
	"context"
	"errors"

	"github.com/ndbg/ndbg/dsl"
)

// Engine answers actions for one session. The session keeps the history;
// the engine keeps whatever it needs to answer the next action.
type Engine interface {
	// Apply returns the state a leads to from the session's history (traj,
	// whose last state is current), or nil when the program ran past its
	// end. breakpoints are the session's breakpoint lines: the real engine
	// stops at them in every action, as pdb does; a model's actions carry
	// none (the DSL has no token for them), so the neural engines ignore
	// them.
	Apply(ctx context.Context, traj *dsl.Trajectory, a dsl.Action, breakpoints []int) (*dsl.State, error)
	// Edited is called after the current state's locals were changed.
	Edited(ctx context.Context, traj *dsl.Trajectory) error
	// Stack returns the call-event lines of the frames on the call stack,
	// outermost first; nil when unknown.
	Stack() []int
	// Fork returns an independent copy.
	Fork() Engine
	// Close releases the engine's resources.
	Close()
}

// Errors the engines return; the root package exports them as
// ndbg.ErrAtStart, ndbg.ErrUnsupported and ndbg.ErrContextFull, where their
// meaning is documented.
var (
	ErrAtStart     = errors.New("ndbg: already at the first state")
	ErrUnsupported = errors.New("ndbg: not supported by this backend")
	ErrContextFull = errors.New("ndbg: the model's context is full")
)

// Confidence is how sure the model was of a predicted state, per field.
//
// A field's confidence is the product of the probabilities of the tokens
// the model wrote for it, each under the constrained distribution: the
// model's softmax at temperature 1 (whatever the sampling parameters)
// restricted to the tokens the grammar allows there and renormalised
// (sample.Sampler.Prob). By the chain rule the product is the probability the
// model gives that field's text, given what precedes it, so it is a
// probability that can be calibrated against exact match; a minimum would
// rate a value with one doubtful token like one with ten. Tokens the
// grammar forces (a special token, or text with a single allowed
// continuation) have probability 1 and do not lower it. State, the
// product over every token of the frame, is the model's probability of the
// whole predicted state.
type Confidence struct {
	// State is the whole frame's probability (every token, the punctuation
	// between fields included).
	State float64
	// Event is the event token's (or <|end_of_text|>'s) probability.
	Event float64
	// Line is the source line's.
	Line float64
	// Locals holds each local's (its name, its value and whether another
	// follows), in State.Locals' order; nil where the state has none.
	Locals []float64
	// Value is the return or exception value's; 1 at call and line states.
	Value float64
	// Cut names the fields whose value the model kept extending where no
	// real value can go (see Uncertain): "value", or "locals.NAME", their
	// confidence 0; or "locals": the locals were ended where the model
	// meant more and the context had no room (State is 0).
	Cut []string
}

// Uncertain reports whether a value of the state was cut: the model kept
// extending it past the longest repr the tracer ever writes (dsl.MaxRepr
// bytes: longer reprs are cut to dsl.TruncateRepr's form) or past the room
// left in the model's context. The state is still the model's best
// guess, with what it wrote of that value, but that value is certainly not
// the real one as the model meant it.
func (c Confidence) Uncertain() bool { return len(c.Cut) > 0 }

// Confident is an engine whose states a model predicted.
type Confident interface {
	// Confidence describes the state the last Apply returned; nil when it
	// was not predicted (or the Apply failed).
	Confidence() *Confidence
}
