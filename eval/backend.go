package eval

import (
	"context"
	"fmt"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// Backend is the debugger under evaluation: it opens sessions on an item's
// program at the places the evaluation starts from.
type Backend interface {
	// Name is "neural" or "real".
	Name() string
	// Open prepares one item. The Runner is used from one goroutine; many
	// Runners of one Backend run concurrently.
	Open(ctx context.Context, it *Item) (Runner, error)
}

// Runner opens sessions on one item's program. Sample k (0 for greedy
// runs) selects the k-th sampling seed where the backend samples.
type Runner interface {
	// Entry returns a session at the entry's call state of it.Call: where
	// CRUXEval-O starts (a neural session writes only literals as return
	// values, ndbg.Literals).
	Entry(ctx context.Context, k int) (*ndbg.Session, error)
	// At returns a session at state st, which is state pos of the real run
	// of it.Call (pos 0 is the entry's call).
	At(ctx context.Context, pos int, st dsl.State) (*ndbg.Session, error)
	// FromReturn returns a session at a return state of the entry at line
	// with the given value repr: where CRUXEval-I starts (a neural session
	// writes only literals as the call's arguments, ndbg.Literals).
	FromReturn(ctx context.Context, line int, value string, k int) (*ndbg.Session, error)
	Close()
}

// Neural evaluates a model. Greedy decoding when p.Temperature is 0;
// sample k uses seed p.Seed+k.
func Neural(m *ndbg.Model, p sample.Params) Backend { return neural{m, p} }

type neural struct {
	m *ndbg.Model
	p sample.Params
}

func (neural) Name() string { return "neural" }

func (b neural) Open(_ context.Context, it *Item) (Runner, error) {
	return &neuralRunner{b: b, it: it}, nil
}

type neuralRunner struct {
	b       neural
	it      *Item
	entries map[int]*ndbg.Session // by sample: the entry's call, forked per use
}

// backend is the model's backend for sample k. CRUXEval's sessions (Entry
// and FromReturn) are literal: the arguments and return values the model
// writes must be Python literals (ndbg.Literals), the answers the scorer
// takes; next-state sessions (At) predict any repr, as a debugger shows it.
func (r *neuralRunner) backend(k int, literal bool) (ndbg.Backend, error) {
	p := r.b.p
	p.Seed += uint64(k)
	b := ndbg.Neural(r.b.m, p)
	if !literal {
		return b, nil
	}
	return ndbg.Literals(b)
}

// Entry starts (once per sample: the arguments are evaluated by a python3
// run) and forks the session at the entry's call.
func (r *neuralRunner) Entry(ctx context.Context, k int) (*ndbg.Session, error) {
	s := r.entries[k]
	if s == nil {
		b, err := r.backend(k, true)
		if err != nil {
			return nil, err
		}
		if s, err = ndbg.Start(ctx, b, r.it.Source, r.it.Call); err != nil {
			return nil, err
		}
		if r.entries == nil {
			r.entries = map[int]*ndbg.Session{}
		}
		r.entries[k] = s
	}
	return s.Fork(), nil
}

// At starts the model from the real state alone: one action from a real
// state, no earlier history in the prompt.
func (r *neuralRunner) At(ctx context.Context, _ int, st dsl.State) (*ndbg.Session, error) {
	b, err := r.backend(0, false)
	if err != nil {
		return nil, err
	}
	return ndbg.StartAt(ctx, b, r.it.Source, r.it.Entry, st)
}

func (r *neuralRunner) FromReturn(ctx context.Context, line int, value string, k int) (*ndbg.Session, error) {
	b, err := r.backend(k, true)
	if err != nil {
		return nil, err
	}
	return ndbg.StartAt(ctx, b, r.it.Source, r.it.Entry, dsl.State{Event: dsl.Return, Line: line, Value: value})
}

func (r *neuralRunner) Close() {
	for _, s := range r.entries {
		s.Close()
	}
}

// Real is the sanity backend: the real debugger answers, so every
// next-state prediction and every CRUXEval-O answer must be right. It runs
// each item once (ndbg.Start) and forks that session; At reaches state pos
// by pos step_into actions. FromReturn cannot start from an arbitrary
// state: it runs it.Call (the reference input) to its return instead.
func Real(lim trace.Limits) Backend { return real{lim} }

type real struct{ lim trace.Limits }

func (real) Name() string { return "real" }

func (b real) Open(ctx context.Context, it *Item) (Runner, error) {
	s, err := ndbg.Start(ctx, ndbg.Recorded(b.lim), it.Source, it.Call)
	if err != nil {
		return nil, err
	}
	return &realRunner{entry: s}, nil
}

type realRunner struct{ entry *ndbg.Session }

func (r *realRunner) Entry(context.Context, int) (*ndbg.Session, error) { return r.entry.Fork(), nil }

func (r *realRunner) At(ctx context.Context, pos int, _ dsl.State) (*ndbg.Session, error) {
	s := r.entry.Fork()
	for i := 0; i < pos; i++ {
		if _, err := s.StepInto(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("eval: real session to state %d: %w", pos, err)
		}
	}
	return s, nil
}

func (r *realRunner) FromReturn(ctx context.Context, _ int, _ string, _ int) (*ndbg.Session, error) {
	s := r.entry.Fork()
	if _, err := s.StepReturn(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("eval: real session to the return: %w", err)
	}
	return s, nil
}

func (r *realRunner) Close() { r.entry.Close() }
