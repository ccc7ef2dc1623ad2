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

// Confidence is the engines' copy of ndbg.Confidence (the public type,
// where each field is documented): the same fields, so that the root
// package converts one to the other (ndbg.Confidence(c)), and a field
// added to one and not the other does not compile there.
type Confidence struct {
	State, Event, Line float64
	Locals             []float64
	Value              float64
	Cut                []string
}

// Confident is an engine whose states a model predicted.
type Confident interface {
	// Confidence describes the state the last Apply returned; nil when it
	// was not predicted (or the Apply failed).
	Confidence() *Confidence
}
