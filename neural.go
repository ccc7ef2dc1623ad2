package ndbg

import (
	"context"
	"fmt"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
	"github.com/ndbg/ndbg/internal/neural"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/tokenizer"
)

// Model is a loaded neural debugger: the engine, its tokenizer and the
// constrained decoder's view of the vocabulary. It is safe for concurrent
// use by many sessions, which share each program's analysis and the model
// state of its source (computed once, then forked).
type Model struct {
	n    *neural.Model
	name string
}

// OpenModel wraps an already loaded engine and tokenizer (for tests and
// for models built in memory).
func OpenModel(eng *model.Model, tok *tokenizer.Tokenizer, python, name string) (*Model, error) {
	return openModel(eng, tok, Options{Python: python}, name)
}

// openModel makes the Model of an engine and tokenizer, run as opts say.
func openModel(eng *model.Model, tok *tokenizer.Tokenizer, opts Options, name string) (*Model, error) {
	n, err := neural.NewModel(eng, tok, opts.Python, opts.Unsandboxed, !opts.SerialDecode)
	if err != nil {
		return nil, err
	}
	return &Model{n: n, name: name}, nil
}

// ActionTokens reports whether the model's tokenizer has the DSL's action
// tokens (<|step_into|> ...): it was trained on ndbg's DSL with its
// actions, for the Neural backend. CWM's checkpoints have none: the CWM
// backend takes only those.
func (m *Model) ActionTokens() bool { return m.n.ActionTokens() }

// Name says which model this is (a directory, or "embedded default").
func (m *Model) Name() string { return m.name }

// Engine returns the underlying inference engine.
func (m *Model) Engine() *model.Model { return m.n.Engine() }

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.n.Tokenizer() }

// Close releases the model (mapped weights, worker threads).
func (m *Model) Close() error { return m.n.Close() }

// DecodeStats returns the decode batches the model ran for sessions
// stepping concurrently and the session steps they held (steps/batches is
// the mean batch size; 0, 0 with Options.SerialDecode).
func (m *Model) DecodeStats() (batches, steps int64) { return m.n.DecodeStats() }

// Neural returns the backend that predicts with model m, sampling with p
// (the zero Params is greedy decoding). Every frame is constrained to be
// well formed and consistent with the program (package constrain).
func Neural(m *Model, p sample.Params) Backend {
	return neuralBackend{m: m, p: neural.Params{Sample: p}}
}

// NoExec returns the neural (or CWM) backend b made to run nothing of the
// program: a session's first state, the entry's call with its arguments, is
// built from the program's text (trace.CallEvent: the module is parsed and
// compiled, never run; the call's arguments, and the defaults they leave
// out, must be Python literals, and a session whose call has any other
// argument fails to start, naming it). Without NoExec that state comes from
// a real run of the module code and the argument expressions (sandboxed).
// The real backend and Verify run the program by design: they cannot be
// made so.
func NoExec(b Backend) (Backend, error) {
	switch nb := b.(type) {
	case neuralBackend:
		nb.p.NoExec = true
		return nb, nil
	case cwmBackend:
		nb.n.p.NoExec = true
		return nb, nil
	}
	return nil, fmt.Errorf("ndbg: no-exec: the %s backend runs the program (no-exec applies to the neural and cwm backends, without verifying)", b.Name())
}

// neuralBackend is Neural's backend: the model and how it decodes
// (package internal/neural).
type neuralBackend struct {
	m *Model
	p neural.Params
}

// Literals returns the neural (or CWM) backend b constrained to write only
// Python literals (constrain.Context.Literals: no names, calls, attributes
// or operators) where CRUXEval reads its answers: the locals of every call
// state it predicts (the arguments) and the value of every return state.
// Other values (a line state's locals, an exception) stay any repr.
// eval's CRUXEval sessions use it, so that a prediction such as
// __import__('sys').exit(0) cannot be written.
func Literals(b Backend) (Backend, error) {
	switch nb := b.(type) {
	case neuralBackend:
		nb.p.Literals = true
		return nb, nil
	case cwmBackend:
		nb.n.p.Literals = true
		return nb, nil
	}
	return nil, fmt.Errorf("ndbg: literals: the %s backend writes no predictions to constrain (literals apply to the neural and cwm backends)", b.Name())
}

func (neuralBackend) Name() string { return "neural" }

// start makes the entry's call event, the first state, and feeds the
// program and that state to the model (neural.Start).
func (b neuralBackend) start(ctx context.Context, prog *dsl.Program, call string) (engine.Engine, dsl.State, error) {
	if err := b.needActions(); err != nil {
		return nil, dsl.State{}, err
	}
	e, first, err := neural.Start(ctx, b.m.n, prog, call, b.p)
	if err != nil {
		return nil, dsl.State{}, err
	}
	return e, first, nil
}

// needActions refuses a model without the DSL's action tokens (a CWM
// checkpoint): the neural backend writes one after every frame, which such
// a model never read; its backend is CWM.
func (b neuralBackend) needActions() error {
	if !b.m.ActionTokens() {
		return fmt.Errorf("%w: the neural backend needs a model trained on ndbg's DSL with its action tokens (%s, ...); "+
			"model %s has none (a CWM checkpoint): use the cwm backend", ErrUnsupported, dsl.StepInto.Token(), b.m.Name())
	}
	return nil
}

// startAt feeds the program and a first state to the model.
func (b neuralBackend) startAt(ctx context.Context, prog *dsl.Program, first dsl.State) (engine.Engine, error) {
	if err := b.needActions(); err != nil {
		return nil, err
	}
	e, err := neural.StartAt(ctx, b.m.n, prog, first, b.p)
	if err != nil {
		return nil, err
	}
	return e, nil
}
