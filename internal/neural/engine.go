package neural

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// Params say how an engine decodes.
type Params struct {
	// Sample is the sampling (the zero Params is greedy decoding).
	Sample sample.Params
	// NoExec builds the first state from the program's text
	// (trace.CallEvent), running nothing of it.
	NoExec bool
	// Literals: call arguments and return values must be Python literals
	// (constrain.Context.Literals).
	Literals bool
}

// Start makes the entry's call event, the first state, and feeds the
// program and that state to the model. The call event comes from a real
// run (the program's module code and the call's arguments run, the entry
// function does not: the trace stops at its call event), or, with Params.NoExec,
// from the program's text, running nothing.
func Start(ctx context.Context, m *Model, prog *dsl.Program, call string, p Params) (*Engine, dsl.State, error) {
	lim, starter, err := m.limits(ctx)
	if err != nil {
		return nil, dsl.State{}, err
	}
	lim.MaxEvents = 1
	run, callEvent := trace.Run, trace.CallEvent
	if starter != nil { // nil after Close: each run starts its own interpreter
		run, callEvent = starter.Run, starter.CallEvent
	}
	var ev trace.Event
	if p.NoExec {
		if ev, err = callEvent(ctx, prog, call, lim); err != nil {
			return nil, dsl.State{}, fmt.Errorf("ndbg: building %s from the program's text (no-exec): %w", call, err)
		}
	} else {
		res, err := run(ctx, prog, call, lim)
		if err != nil {
			return nil, dsl.State{}, fmt.Errorf("ndbg: evaluating %s: %w", call, err)
		}
		if len(res.Events) == 0 || res.Events[0].Kind != dsl.Call {
			return nil, dsl.State{}, fmt.Errorf("ndbg: %s did not call a function of the program", call)
		}
		ev = res.Events[0]
	}
	first := dsl.State{Event: dsl.Call, Line: ev.Line, Source: prog.Text(ev.Line), Locals: ev.Locals}
	e, err := StartAt(ctx, m, prog, first, p)
	if err != nil {
		return nil, dsl.State{}, err
	}
	return e, first, nil
}

// StartAt feeds the program and a first state to the model.
func StartAt(ctx context.Context, m *Model, prog *dsl.Program, first dsl.State, p Params) (*Engine, error) {
	pc, err := m.program(ctx, prog)
	if err != nil {
		return nil, err
	}
	smp, err := sample.New(p.Sample)
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	e := &Engine{m: m, pc: pc, smp: smp, mask: sample.NewMask(m.eng.Config().VocabSize), literals: p.Literals}
	if first.Event == dsl.Call && first.Line == prog.EntryLine() {
		e.calls = []int{first.Line} // the entry's call: the stack is known
	}
	e.first = slices.Clone(e.calls)
	e.hist = newHistory(e.calls, e.first != nil)
	if err := e.restart(ctx, prog, first); err != nil {
		return nil, err
	}
	return e, nil
}

// restart gives the engine a fresh model session that has read the program
// (prompt: all of it, or the part the session needs) and then st as its
// first frame, as a session that starts at st reads them.
func (e *Engine) restart(ctx context.Context, prog *dsl.Program, st dsl.State) error {
	src, frame, err := e.prompt(prog, st)
	if err != nil {
		return err
	}
	sess, err := e.m.prefixes.Fork(ctx, src.tokens)
	if err != nil {
		return fmt.Errorf("ndbg: reading the program: %w", err)
	}
	e.sess, e.src, e.text, e.pending = sess, src, src.text, nil
	e.frameAt, e.frameTextAt = len(src.tokens), len(src.text)
	return e.feedText(ctx, src.text+frame)
}

// restartAt restarts the engine at the session's current state: the model
// reads the program and that frame afresh (the state the training data's
// trajectories start from) and the history before it no longer. On error
// the engine is as it was.
func (e *Engine) restartAt(ctx context.Context, traj *dsl.Trajectory) error {
	saved := *e
	if err := e.restart(ctx, traj.Program, *lastState(traj)); err != nil {
		*e = saved
		return err
	}
	e.base, e.stale = len(traj.Steps), false
	return nil
}

// Engine predicts one session's states. Its model session holds the
// text of the trajectory so far (text), except pending tokens not yet fed.
type Engine struct {
	m       *Model
	pc      *programCache
	src     *programView // the program as the model read it
	smp     *sample.Sampler
	sess    *model.Session
	text    string // the trajectory text the model has read (with pending)
	pending []int  // tokens of text not yet fed to sess
	// Where the current state's frame starts, in the model's tokens and in
	// text. The model reads its frames as it wrote them (a full value where
	// the DSL would write ".." included); Set rewrites the current one.
	frameAt, frameTextAt int
	calls                []int // call lines of the frames on the stack; nil when unknown
	first                []int // calls at the session's first state
	mask                 *sample.Mask
	// The model's text starts at the session's state after base steps (0:
	// at its first state): older history is dropped when the context fills.
	base int
	last *engine.Confidence // how sure the model was of the last Apply's state; nil after an error
	// literals: call arguments and return values must be Python literals
	// (Params.Literals).
	literals bool
	// enc follows the history the model has read (view) step by step
	// (encoder): it had read encSteps of the session's steps, the last
	// state encLast, when base was encBase.
	enc               *dsl.Encoder
	encBase, encSteps int
	encLast           *dsl.State
	// hist is the session's history as points of the run (history.go),
	// which answers the actions it decides; pend is the step the last
	// Apply answered, recorded once the session took it (follow).
	hist *history
	pend *pendingStep
	// stale: the model's text no longer follows the session (it predicted
	// a step back from the end from another state): the next action
	// restarts it at the current state.
	stale bool
}

// pendingStep is a step an Apply answered, for the history.
type pendingStep struct {
	from  int // the session's state it was taken from
	a     dsl.Action
	calls []int              // the call stack after it
	conf  *engine.Confidence // how sure the model was (nil: not predicted)
	at    point              // the point the history answered it with; -1: the model
}

// maxFrameTokens guards against a grammar bug looping forever.
const maxFrameTokens = 8192

// feedText makes the model read text, which must extend e.text.
func (e *Engine) feedText(ctx context.Context, text string) error {
	if !strings.HasPrefix(text, e.text) {
		return errors.New("ndbg: internal: trajectory text diverged from the model's")
	}
	if add := text[len(e.text):]; add != "" {
		e.pending = append(e.pending, e.m.encode(add)...)
		e.text = text
	}
	return e.flush(ctx)
}

// flush feeds the pending tokens; it returns the last token's logits.
func (e *Engine) flush(ctx context.Context) error {
	if len(e.pending) == 0 {
		return nil
	}
	if e.sess.Len()+len(e.pending) > e.m.eng.Config().MaxPositionEmbeddings {
		return fmt.Errorf("%w: %d tokens needed, the context holds %d",
			engine.ErrContextFull, e.sess.Len()+len(e.pending), e.m.eng.Config().MaxPositionEmbeddings)
	}
	if err := e.m.forward(ctx, e.sess, e.pending); err != nil {
		return fmt.Errorf("ndbg: %w", err)
	}
	e.pending = e.pending[:0]
	return nil
}

// snapshot is where an engine's text stood: restoring it undoes whatever
// a failed action had fed the model.
type snapshot struct {
	tokens, text, frameAt, frameTextAt int
	calls                              []int
}

func (e *Engine) snapshot() snapshot {
	return snapshot{tokens: e.sess.Len() + len(e.pending), text: len(e.text), frameAt: e.frameAt,
		frameTextAt: e.frameTextAt, calls: slices.Clone(e.calls)}
}

// restore goes back to a snapshot. The model keeps the snapshot's last
// token pending, so that the next step has the logits after it.
func (e *Engine) restore(ctx context.Context, s snapshot) error {
	if s.tokens <= e.sess.Len() {
		last := e.sess.Tokens()[s.tokens-1]
		if err := e.sess.Truncate(s.tokens - 1); err != nil {
			return fmt.Errorf("ndbg: %w", err)
		}
		e.pending = append(e.pending[:0], last)
	} else {
		e.pending = e.pending[:s.tokens-e.sess.Len()]
	}
	e.text = e.text[:s.text]
	e.frameAt, e.frameTextAt = s.frameAt, s.frameTextAt
	e.calls = s.calls
	return nil
}

// Apply predicts the state after a. An action the session's history
// decides (history.go: taken before from the same point of the run, or the
// exact inverse of the step that came here) is answered from it, with the
// state shown then, which the model reads as if it had written it; an
// inverse action at the run's first state is engine.ErrAtStart. After the
// end, where the model's text ends, a step back the history does not
// decide is predicted from an earlier state (afterEnd). When the history
// no longer fits the model's context, the model goes on from the current
// state alone (restartAt), so a long session never stops at
// engine.ErrContextFull; the Session still keeps the whole history. So it
// does, before predicting, when the model read only part of the program
// and the current state or its stack is in code that part left out.
func (e *Engine) Apply(ctx context.Context, traj *dsl.Trajectory, a dsl.Action, _ []int) (*dsl.State, error) {
	e.last = nil
	e.follow(traj)
	i := len(traj.Steps)
	if a.Kind.Inverse() && e.first != nil && e.hist.isStart(i) {
		return nil, engine.ErrAtStart // the entry's call: the run's first state
	}
	if q, ok := e.hist.lookup(i, a); ok {
		return e.recall(ctx, traj, a, q)
	}
	cur := lastState(traj)
	if cur == nil {
		return e.afterEnd(ctx, traj, a)
	}
	if e.stale || !e.reads(*cur) {
		if err := e.restartAt(ctx, traj); err != nil {
			return nil, err
		}
	}
	full := e.base == len(traj.Steps) // nothing older than the current frame to drop
	st, err := e.predict(ctx, traj, a, full)
	if errors.Is(err, engine.ErrContextFull) && !full {
		saved := *e // predict restored e; restartAt replaces sess, text and pending
		if err = e.restartAt(ctx, traj); err != nil {
			return nil, err
		}
		if st, err = e.predict(ctx, traj, a, true); err != nil {
			*e = saved
		}
	}
	if err != nil {
		return nil, err
	}
	st, at, err := e.settle(ctx, traj, a, st, true)
	if err != nil {
		return nil, err
	}
	e.pend = &pendingStep{from: i, a: a, calls: slices.Clone(e.calls), conf: e.last, at: at}
	return st, nil
}

// follow records in the history the step the last Apply answered, which
// the session has taken since (the state it shows is traj's: Verify may
// have shown the real one instead).
func (e *Engine) follow(traj *dsl.Trajectory) {
	n := len(traj.Steps)
	if p := e.pend; p != nil && len(e.hist.pts) == p.from+1 && n == p.from+1 {
		e.hist.step(p.from, stateAt(traj, p.from), p.a, traj.Steps[n-1].State, p.calls, p.conf, p.at)
	}
	e.pend = nil
	for len(e.hist.pts) < n+1 { // steps the engine did not answer (none, in a session): new points
		e.hist.pts = append(e.hist.pts, e.hist.newPoint(len(e.hist.pts)))
		e.hist.calls, e.hist.conf = append(e.hist.calls, nil), append(e.hist.conf, nil)
	}
}

// recall answers a from the history: the state shown at point q (nil: the
// end), which the model reads as the step's frame.
func (e *Engine) recall(ctx context.Context, traj *dsl.Trajectory, a dsl.Action, q point) (*dsl.State, error) {
	var st *dsl.State
	calls := e.calls
	j := e.hist.shown[q]
	if q != endPoint {
		s := *stateAt(traj, j)
		st, calls = &s, e.hist.calls[j]
	}
	if err := e.readStep(ctx, traj, a, st, calls); err != nil {
		return nil, err
	}
	if j >= 0 {
		e.last = e.hist.conf[j]
	}
	e.pend = &pendingStep{from: len(traj.Steps), a: a, calls: slices.Clone(e.calls), conf: e.last, at: q}
	return st, nil
}

// readStep has the model read the step a to st (nil: the end), which the
// session takes without a prediction, as its frame written canonically
// (after the end, or where its text no longer follows the session, the
// model restarts at st); calls is st's call stack.
func (e *Engine) readStep(ctx context.Context, traj *dsl.Trajectory, a dsl.Action, st *dsl.State, calls []int) error {
	if lastState(traj) == nil || e.stale {
		if st == nil { // the end, where the text is stale: after it the model restarts anyway
			if lastState(traj) == nil {
				return errors.New("ndbg: internal: the history answered the end after the end")
			}
			return nil
		}
		saved := *e
		e.calls = slices.Clone(calls)
		if err := e.restart(ctx, traj.Program, *st); err != nil {
			*e = saved
			return err
		}
		e.base, e.stale = len(traj.Steps)+1, false
		return nil
	}
	enc, err := e.encoder(traj)
	if err != nil {
		return err
	}
	seg, err := enc.Action(a)
	if err != nil {
		return fmt.Errorf("ndbg: %w", err)
	}
	frame := dsl.EndOfText
	if st != nil {
		step, err := enc.Fork().Append(dsl.Step{Action: a, State: st})
		if err != nil {
			return fmt.Errorf("ndbg: writing the state from the history for the model: %w", err)
		}
		frame = step[len(seg):]
	}
	e.text += seg
	e.pending = append(e.pending, e.m.encode(seg)...)
	e.frameAt, e.frameTextAt = e.sess.Len()+len(e.pending), len(e.text)
	e.text += frame
	e.pending = append(e.pending, e.m.encode(frame)...)
	if st != nil {
		e.calls = slices.Clone(calls)
		if len(e.calls) == 0 {
			e.calls = nil
		}
	}
	return nil
}

// settle makes a predicted state that can only be the run's first state
// (a call at depth 0 reached backwards, where the session started at the
// entry's call) or
// its last (a return at depth 0, once the session has shown it) the state
// the session showed there, rewriting the model's frame where it differs
// (rewrite false: the model's text does not follow the session anyway). It
// returns the state and the history's point for it (-1: a new one).
func (e *Engine) settle(ctx context.Context, traj *dsl.Trajectory, a dsl.Action, st *dsl.State, rewrite bool) (*dsl.State, point, error) {
	if st == nil || st.Depth != 0 {
		return st, -1, nil
	}
	var at point
	switch {
	case st.Event == dsl.Call && e.first != nil && a.Kind.Inverse(): // no step forward reaches it
		at = e.hist.pts[0]
	case st.Event == dsl.Return && e.hist.ret != 0:
		at = e.hist.ret
	default:
		return st, -1, nil
	}
	j := e.hist.shown[at]
	known := *stateAt(traj, j)
	if rewrite && !sameState(known, *st) {
		if err := e.Replace(ctx, traj, a, &known, e.hist.calls[j]); err != nil {
			return nil, 0, err
		}
	}
	e.calls = slices.Clone(e.hist.calls[j])
	e.last = e.hist.conf[j]
	return &known, at, nil
}

// sameState reports whether two states show the same stop.
func sameState(a, b dsl.State) bool {
	return a.Event == b.Event && a.Line == b.Line && a.Value == b.Value && slices.Equal(a.Locals, b.Locals)
}

// afterEnd predicts a step back from the end, which the history does not
// decide. The model's text ends with the end, so it restarts at an earlier
// state and predicts from there what leads to a's answer: the entry's
// return (inv_step_into, inv_step_over) by step_return from the entry's
// call (exact, when the session started there) or else from the last
// state before the end; inv_step_return, inv_breakpoint and inv_continue
// from the entry's return when the session has shown it (exact), else
// from the last state before the end (exact where the end was reached
// from it by a step; after a breakpoint or continue, a stop at the lines
// after it is missed). Its text then no longer follows the session
// (stale): the next action restarts it at the state this one shows.
func (e *Engine) afterEnd(ctx context.Context, traj *dsl.Trajectory, a dsl.Action) (*dsl.State, error) {
	n := len(traj.Steps)
	base, calls := *stateAt(traj, n-1), e.hist.calls[n-1]
	b := a
	switch a.Kind {
	case dsl.InvStepInto, dsl.InvStepOver:
		b = dsl.Action{Kind: dsl.StepReturn}
		if e.first != nil {
			base, calls = traj.Start, e.first
		}
	case dsl.InvStepReturn:
	default:
		if e.hist.ret != 0 {
			j := e.hist.shown[e.hist.ret]
			base, calls = *stateAt(traj, j), e.hist.calls[j]
		}
	}
	saved := *e
	e.calls = slices.Clone(calls)
	if len(e.calls) == 0 {
		e.calls = nil
	}
	view := &dsl.Trajectory{Program: traj.Program, Start: base}
	if err := e.restart(ctx, traj.Program, base); err != nil {
		*e = saved
		return nil, err
	}
	e.base, e.stale = 0, true
	st, err := e.predict(ctx, view, b, true)
	if err == nil && st == nil {
		err = fmt.Errorf("ndbg: stepping back from the end (%s): the model predicted no state before it", a.Kind)
	}
	if err != nil {
		*e = saved
		return nil, err
	}
	st, at, err := e.settle(ctx, traj, a, st, false)
	if err != nil {
		*e = saved
		return nil, err
	}
	e.pend = &pendingStep{from: n, a: a, calls: slices.Clone(e.calls), conf: e.last, at: at}
	return st, nil
}

// reads reports whether the program's text the model read holds st's line
// and the calls on the stack (but those it was read without: prompt).
func (e *Engine) reads(st dsl.State) bool {
	if !e.src.holds(st.Line) {
		return false
	}
	for _, c := range e.calls {
		if !e.src.holds(c) && !slices.Contains(e.src.omitted, c) {
			return false
		}
	}
	return true
}

// view is the part of the session's history that the model has read.
func (e *Engine) view(traj *dsl.Trajectory) *dsl.Trajectory {
	if e.base == 0 {
		return traj
	}
	return &dsl.Trajectory{Program: traj.Program, Start: *traj.Steps[e.base-1].State, Steps: traj.Steps[e.base:]}
}

// predict is Apply within the current context: on any error, e is as it
// was. cutAtContext lets a return value be cut where the context ends
// (decodeFrame) rather than fail with engine.ErrContextFull, which Apply answers
// by dropping older history when there is some.
func (e *Engine) predict(ctx context.Context, traj *dsl.Trajectory, a dsl.Action, cutAtContext bool) (st *dsl.State, err error) {
	before := e.snapshot()
	defer func() {
		if err != nil {
			if rerr := e.restore(context.WithoutCancel(ctx), before); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	if len(traj.Steps) > 0 && traj.Steps[len(traj.Steps)-1].State == nil {
		return nil, errors.New("ndbg: internal: predicting after the end (the model's text ends there)")
	}
	enc, err := e.encoder(traj)
	if err != nil {
		return nil, err
	}
	seg, err := enc.Action(a) // checks the action against the history
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	from := *lastState(traj)
	m, err := e.pc.cp.Start(constrain.Context{Action: a, From: from, Stack: e.calls, Dots: dots(traj.Program, enc.References()), Literals: e.literals})
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	// Queue the action's text after what the model has read (its own frames,
	// as it wrote them), then decode the frame.
	e.text += seg
	e.pending = append(e.pending, e.m.encode(seg)...)
	frameAt, frameTextAt := e.sess.Len()+len(e.pending), len(e.text)
	out, conf, err := e.decodeFrame(ctx, m, cutAtContext)
	if err != nil {
		return nil, err
	}
	frame := e.m.tok.Decode(out)
	e.text += frame
	e.frameAt, e.frameTextAt = frameAt, frameTextAt
	st, err = enc.ParseFrameLenient(frame)
	if err != nil {
		return nil, fmt.Errorf("ndbg: the model's frame does not parse (a constraint bug): %w", err)
	}
	e.last = conf.finish(st)
	if st != nil {
		e.track(from, a, st)
	}
	return st, nil
}

// Confidence describes the state the last Apply predicted.
func (e *Engine) Confidence() *engine.Confidence { return e.last }

// encoder returns the engine's dsl.Encoder brought up to the end of the
// history the model has read (view): it reads only the steps appended
// since the last call, so a step's work does not grow with the history. A
// history it has not followed (after restartAt, Edited or a Fork of the
// session, or a shorter one) it reads afresh.
func (e *Engine) encoder(traj *dsl.Trajectory) (*dsl.Encoder, error) {
	n := len(traj.Steps)
	stateAt := func(k int) *dsl.State {
		if k == 0 {
			return &traj.Start
		}
		return traj.Steps[k-1].State
	}
	if e.enc == nil || e.encBase != e.base || e.encSteps > n || e.encSteps < e.base || stateAt(e.encSteps) != e.encLast {
		enc, err := e.view(traj).NewEncoder()
		if err != nil {
			return nil, fmt.Errorf("ndbg: %w", err)
		}
		e.enc, e.encBase, e.encSteps, e.encLast = enc, e.base, n, stateAt(n)
		return enc, nil
	}
	for ; e.encSteps < n; e.encSteps++ {
		if _, err := e.enc.Append(traj.Steps[e.encSteps]); err != nil {
			e.enc = nil // read afresh next time
			return nil, fmt.Errorf("ndbg: %w", err)
		}
		e.encLast = traj.Steps[e.encSteps].State
	}
	return e.enc, nil
}

// decodeFrame decodes one frame under the matcher: a special token the
// grammar forces, or the one token a mask allows, is queued without the
// model (it is read with the token after it, in one pass); everywhere else
// (forced text included, so that the model keeps its own tokenization) the
// sampler draws a token among those the grammar allows. Each drawn token's
// probability under the constrained distribution goes into the frame's
// confidence (Confidence). A value the model runs away with is cut
// (runaway): by the grammar at dsl.MaxRepr bytes, or, when cutAtContext is
// set, where the frame would not end within the context (closeMask). The
// frame's tokens are queued in pending.
func (e *Engine) decodeFrame(ctx context.Context, m *constrain.Matcher, cutAtContext bool) ([]int, *frameConf, error) {
	e.m.decoding.Add(1)
	defer e.m.decoding.Add(-1)
	var out []int
	conf := newFrameConf()
	cutting := false // the value under way was cut: its remaining tokens count for nothing
	for !m.Done() {
		if len(out) > maxFrameTokens {
			return nil, nil, errors.New("ndbg: internal: frame did not end")
		}
		if sp := m.ForcedSpecial(); sp >= 0 {
			if !m.Accept(sp) {
				return nil, nil, fmt.Errorf("ndbg: internal: forced token %d rejected", sp)
			}
			out = append(out, sp)
			e.pending = append(e.pending, sp)
			continue
		}
		pos := m.Position()
		if !pos.InString {
			cutting = false
		}
		e.mask.Reset()
		closing, brace := false, false
		if cutAtContext {
			closing, brace = e.closeMask(m, pos, len(out))
		}
		if !closing {
			m.FillMask(e.mask.Words())
		}
		// The mass the model gives the allowed tokens matters only where
		// the frame may be cut; elsewhere a token the mask alone decides
		// has probability 1 and needs no logits.
		weighAllowed := closing || nearReprEnd(pos)
		tok, only := e.mask.Only()
		if !only || weighAllowed {
			if err := e.flush(ctx); err != nil {
				return nil, nil, err
			}
			logits := e.sess.Last()
			var err error
			if tok, err = e.smp.SampleMasked(logits, e.mask); err != nil {
				return nil, nil, fmt.Errorf("ndbg: sampling: %w", err)
			}
			p, allowed := 1.0, 1.0
			if weighAllowed {
				p, allowed, err = e.smp.Prob(logits, e.mask, tok)
			} else {
				p, err = e.smp.CondProb(logits, e.mask, tok)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("ndbg: the probability of token %d: %w", tok, err)
			}
			switch {
			case cutting: // the rest of a value already cut counts for nothing
			case brace && allowed < 0.5: // the model meant more locals
				conf.cutLocals()
			case runaway(pos, allowed) || closing && allowed < 0.5:
				conf.cut(pos)
				cutting = true
			default:
				conf.add(pos, p)
			}
		}
		if !m.Accept(tok) {
			return nil, nil, fmt.Errorf("ndbg: internal: sampled token %d rejected", tok)
		}
		out = append(out, tok)
		e.pending = append(e.pending, tok)
	}
	return out, conf, nil
}

// closeMask fills e.mask for a frame that must end within the context
// (the state is then marked uncertain where the model meant more): a
// return value closes (by the shortest text that completes its repr:
// Matcher.FillCloseMask) when less than contextReserve tokens and the
// bytes of that text are left; a local's value closes, and the locals end
// ('}'), when less than that and the room for the line that follows them
// (programCache.lineRoom) are left. Either does when the frame, n tokens
// so far, reaches frameCap, so that a restart from it (Apply) still fits.
// closing reports whether it filled the mask, brace whether with the
// tokens that end the locals.
func (e *Engine) closeMask(m *constrain.Matcher, pos constrain.Position, n int) (closing, brace bool) {
	left := e.m.eng.Config().MaxPositionEmbeddings - e.sess.Len() - len(e.pending)
	long := n >= e.frameCap()
	reserve := contextReserve + m.Finish() // a token is a byte at least
	switch {
	case pos.Part == constrain.PartValue && pos.InString:
		return (left < reserve || long) && m.FillCloseMask(e.mask.Words()), false
	case pos.Part != constrain.PartLocal || left >= reserve+e.pc.lineRoom && !long:
		return false, false
	case pos.InString:
		return m.FillCloseMask(e.mask.Words()), false
	}
	w := e.mask.Words()
	m.FillMask(w)
	any := false
	for i := range w {
		any = any || w[i]&e.m.braces[i] != 0
	}
	if !any { // the grammar does not allow '}' here (a name, a colon)
		return false, false
	}
	for i := range w {
		w[i] &= e.m.braces[i]
	}
	return true, true
}

// track follows the call stack to the predicted state st. Single steps,
// forward or backward, follow it exactly from the event sequence
// (statetree's depth rules: a call is one level deeper than the state
// before it unless that is a return, a sibling; any other state after a
// return is one level shallower). An inverse jump that reaches a call has
// gone back to the session's first state (breakpoints stop at lines only).
// Otherwise, after a jump the stack is unknown (nil): the text does not say
// how deep a stop at a line is (a recursive function stops at the same
// line with the same locals at several depths).
func (e *Engine) track(from dsl.State, a dsl.Action, st *dsl.State) {
	calls := slices.Clone(e.calls)
	caller := func() []int { return calls[:max(len(calls)-1, 0)] }
	switch {
	case a.Kind == dsl.InvBreakpoint || a.Kind == dsl.InvContinue:
		calls = nil
		if st.Event == dsl.Call {
			calls = slices.Clone(e.first)
		}
	case calls == nil:
	case a.Kind == dsl.StepInto || a.Kind == dsl.StepOver || a.Kind == dsl.StepReturn:
		leaving := from.Event == dsl.Return
		if leaving {
			calls = caller()
		}
		if st.Event == dsl.Call && (leaving || a.Kind == dsl.StepInto) {
			calls = append(calls, st.Line)
		}
	case a.Kind == dsl.InvStepInto || a.Kind == dsl.InvStepOver:
		// Backwards from a call, the state before it is in the caller, or
		// a sibling's return; from any other state, in the same frame, or
		// (stepping into) a callee's return.
		if from.Event == dsl.Call {
			calls = caller()
		} else if st.Event == dsl.Return && a.Kind == dsl.InvStepOver {
			calls = nil // inv_step_over stays in the frame: a bad prediction
		}
		if st.Event == dsl.Return && calls != nil {
			if l, ok := e.callLineOf(st.Line); ok {
				calls = append(calls, l)
			} else {
				calls = nil
			}
		}
	case a.Kind == dsl.InvStepReturn:
		if from.Event == dsl.Call { // up to the caller's call
			calls = caller()
		}
	default:
		calls = nil
	}
	if len(calls) == 0 {
		calls = nil
	}
	e.calls = calls
	st.Depth = len(calls) - 1 // -1: unknown
}

// callLineOf returns the call-event line of the frame that returns at line
// l: the first line of the one code object holding l; not ok when several
// do (a lambda or comprehension inside its function's line) or it is a
// generator (whose resumes start at their yield).
func (e *Engine) callLineOf(l int) (int, bool) {
	first, n := 0, 0
	for _, c := range e.pc.codes {
		if slices.Contains(c.Lines, l) {
			if c.Generator {
				return 0, false
			}
			first, n = c.First, n+1
		}
	}
	return first, n == 1
}

// stateAt is the session's state i: its first, or the state after its
// i-th step (nil: the end).
func stateAt(traj *dsl.Trajectory, i int) *dsl.State {
	if i == 0 {
		return &traj.Start
	}
	return traj.Steps[i-1].State
}

func lastState(traj *dsl.Trajectory) *dsl.State {
	if n := len(traj.Steps); n > 0 {
		return traj.Steps[n-1].State
	}
	return &traj.Start
}

// dots gives the names the ".." rule may write at each line of program p
// after a text whose reference frames are refs (dsl's References): those of
// the reference frame of the line's function.
func dots(p *dsl.Program, refs map[int]*dsl.State) func(int) []string {
	byFunc := map[int][]string{} // the names, once per function: asked for every line
	return func(l int) []string {
		f := p.FuncOf(l)
		if names, ok := byFunc[f]; ok {
			return names
		}
		var names []string
		if r := refs[f]; r != nil {
			names = make([]string, len(r.Locals))
			for i, loc := range r.Locals {
				names[i] = loc.Name
			}
		}
		byFunc[f] = names
		return names
	}
}

// Edited rewrites the current frame in the model's context: the text
// before it stays, the frame is written anew (canonically) from the edited
// state.
func (e *Engine) Edited(ctx context.Context, traj *dsl.Trajectory) error {
	e.follow(traj)
	e.hist.edited(len(traj.Steps))
	e.enc = nil // the current state changed in place: read the history afresh
	full, err := e.view(traj).Encode()
	if err != nil {
		return fmt.Errorf("ndbg: %w", err)
	}
	return e.rewrite(ctx, lastFrameText(strings.TrimSuffix(full, dsl.EndOfText)))
}

// Replace rewrites the frame the model has just written for action a
// after traj as st instead (nil: the end of the program), the state the
// session shows (ndbg.Verify), whose call stack is calls.
func (e *Engine) Replace(ctx context.Context, traj *dsl.Trajectory, a dsl.Action, st *dsl.State, calls []int) error {
	frame := dsl.EndOfText
	if st != nil {
		enc, err := e.encoder(traj)
		if err != nil {
			return err
		}
		act, err := enc.Action(a)
		if err != nil {
			return fmt.Errorf("ndbg: writing the real state for the model: %w", err)
		}
		step, err := enc.Fork().Append(dsl.Step{Action: a, State: st})
		if err != nil {
			return fmt.Errorf("ndbg: writing the real state for the model: %w", err)
		}
		frame = step[len(act):]
	}
	if err := e.rewrite(ctx, frame); err != nil {
		return err
	}
	e.calls = slices.Clone(calls)
	if len(e.calls) == 0 {
		e.calls = nil
	}
	if e.pend != nil {
		e.pend.calls = slices.Clone(e.calls)
	}
	return nil
}

// rewrite replaces the current frame's text (from frameAt) by frame,
// queued for the model to read.
func (e *Engine) rewrite(_ context.Context, frame string) error {
	if n := e.sess.Len(); n > e.frameAt {
		if err := e.sess.Truncate(e.frameAt); err != nil {
			return fmt.Errorf("ndbg: %w", err)
		}
		e.pending = e.pending[:0]
	} else {
		e.pending = e.pending[:e.frameAt-n]
	}
	e.text = e.text[:e.frameTextAt] + frame
	e.pending = append(e.pending, e.m.encode(frame)...)
	return nil
}

// lastFrameText returns the last frame of a trajectory text: from its
// event token to the end.
func lastFrameText(text string) string {
	at := -1
	for _, tok := range []string{dsl.CallSep, dsl.LineSep, dsl.ReturnSep, dsl.ExceptionSep} {
		at = max(at, strings.LastIndex(text, tok))
	}
	if at < 0 {
		return ""
	}
	return text[at:]
}

// Fork returns an independent copy, sharing the model session's cache.
func (e *Engine) Fork() engine.Engine {
	f := *e
	f.sess = e.sess.Fork()
	f.pending = append([]int(nil), e.pending...)
	f.calls = slices.Clone(e.calls)
	if e.enc != nil {
		f.enc = e.enc.Fork()
	}
	f.mask = sample.NewMask(e.m.eng.Config().VocabSize)
	f.hist = e.hist.clone()
	if e.pend != nil {
		p := *e.pend
		f.pend = &p
	}
	smp, err := sample.New(e.smp.Params())
	if err == nil {
		f.smp = smp
	}
	return &f
}

// Close releases nothing: the model session's memory is garbage.
func (e *Engine) Close() {}

// Stack returns the call lines of the frames on the stack; nil when unknown.
func (e *Engine) Stack() []int { return e.calls }
