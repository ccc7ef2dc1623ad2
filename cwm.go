package ndbg

import (
	"context"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
	"github.com/ndbg/ndbg/internal/neural"
	"github.com/ndbg/ndbg/sample"
)

// CWM returns the backend for a model trained on plain traces, without the
// DSL's action tokens: CWM itself (facebook/cwm, its Llama-3 tokenizer with
// the trace tokens) or anything trained like it. Its text is CWM's trace
// format, frame after frame, and actions are emulated as CWM's own debugger
// demo does, by forcing event tokens: step into takes the next frame; step
// over takes it too, and when that enters a callee, forces <|return_sep|> to
// skip the callee's body; step return forces <|return_sep|>; step back
// drops the last step. Breakpoints, continue and the other inverse actions
// are not available (ErrUnsupported): they need the action tokens. Frames
// are constrained as on the Neural backend (neural.CWMEngine). A model
// trained with the DSL's action tokens (Model.ActionTokens: the embedded
// default model, any model ndbg trains) is not one: its sessions fail to
// start with ErrUnsupported, saying so.
func CWM(m *Model, p sample.Params) Backend {
	return cwmBackend{neuralBackend{m: m, p: neural.Params{Sample: p}}}
}

type cwmBackend struct{ n neuralBackend }

func (cwmBackend) Name() string { return "cwm" }

func (b cwmBackend) start(ctx context.Context, prog *dsl.Program, call string) (engine.Engine, dsl.State, error) {
	if err := neural.CheckCWM(b.n.m.n, b.n.m.name); err != nil {
		return nil, dsl.State{}, err
	}
	e, first, err := neural.Start(ctx, b.n.m.n, prog, call, b.n.p)
	if err != nil {
		return nil, dsl.State{}, err
	}
	return neural.NewCWM(e, prog, first), first, nil
}

func (b cwmBackend) startAt(ctx context.Context, prog *dsl.Program, st dsl.State) (engine.Engine, error) {
	if err := neural.CheckCWM(b.n.m.n, b.n.m.name); err != nil {
		return nil, err
	}
	e, err := neural.StartAt(ctx, b.n.m.n, prog, st, b.n.p)
	if err != nil {
		return nil, err
	}
	return neural.NewCWM(e, prog, st), nil
}
