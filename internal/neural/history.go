package neural

import (
	"maps"
	"slices"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
)

// A session's history decides some actions by itself: the program is
// deterministic, so an action the session took before from the same point
// of the run leads where it led then, and some actions are the exact
// inverse of the step that reached the current state (inv_step_into after
// step_into: the state before). The engine answers those from the history,
// with the state the session showed then (its prediction, its confidence),
// instead of asking the model again: a step back returns to the stop it
// came from, a step forward again to the stop it went to, and the session
// never shows two states for one point of the run.
//
// history follows the session's states as points of the run: the states
// shown at one point share it. A transition (point, action) → point is
// known where the session took that action there, or where the depth
// rules of statetree (the real backend's exact semantics) derive it from
// a step the session took:
//
//   - step_into P → Q: inv_step_into Q → P (Q is the event after P);
//   - step_into or step_over P → Q at P's depth or one deeper (not from a
//     return to its caller): inv_step_over Q → P (every event between them
//     is deeper);
//   - a call's activation: the states the session reached from a call
//     state by steps inside its frame (or from each other) go back to it by
//     inv_step_return; a call reached by step_into from its caller goes
//     back to the caller's call;
//   - the end, reached by a step from the entry's return (the run's last
//     state): inv_step_into and inv_step_over from the end go back to it;
//     when the session started at the entry's call (the run's first
//     state), inv_step_return from the end goes back there;
//   - the inverse steps the model predicted, the other way round
//     (inv_step_into Q → P: step_into P → Q; inv_step_over from a line
//     state: step_over back; inv_step_return: the activation's call).
//
// The run has one first state (the entry's call at depth 0) and one last
// (the entry's return at depth 0): a state the model predicts there is
// the one the session showed there, if it did.
type history struct {
	pts   []point              // the point of each state of the session (0: its first)
	calls [][]int              // the call stack at each state (nil: unknown)
	conf  []*engine.Confidence // how sure the model was of each state (nil: not predicted)
	shown []int                // per point: a state of the session at it (-1: the end)
	trans map[transKey]point
	act   map[point]point // a point that is no call → the call state that started its activation
	// parent maps a call point to the call state that started its caller's
	// activation.
	parent map[point]point
	ret    point // the entry's return (the run's last state), once shown; 0 before
}

// point is a point of the run; the end is endPoint.
type point int32

const endPoint point = 0

type transKey struct {
	from  point
	kind  dsl.ActionKind
	lines string // the action's lines, for breakpoints and continue
}

func keyOf(p point, a dsl.Action) transKey {
	var b []byte
	for _, l := range a.Lines {
		b = append(b, byte(l>>24), byte(l>>16), byte(l>>8), byte(l))
	}
	return transKey{p, a.Kind, string(b)}
}

// newHistory starts a history at a session's first state, whose call
// stack is calls; entry says it is the entry's call, the run's first state.
func newHistory(calls []int, entry bool) *history {
	h := &history{shown: []int{-1}, trans: map[transKey]point{}, act: map[point]point{}, parent: map[point]point{}}
	p := h.newPoint(0)
	h.pts, h.calls, h.conf = []point{p}, [][]int{slices.Clone(calls)}, []*engine.Confidence{nil}
	if entry {
		h.trans[keyOf(endPoint, dsl.Action{Kind: dsl.InvStepReturn})] = p
	}
	return h
}

func (h *history) newPoint(state int) point {
	h.shown = append(h.shown, state)
	return point(len(h.shown) - 1)
}

// clone returns an independent copy.
func (h *history) clone() *history {
	c := *h
	c.pts, c.calls, c.conf, c.shown = slices.Clone(h.pts), slices.Clone(h.calls), slices.Clone(h.conf), slices.Clone(h.shown)
	c.trans, c.act, c.parent = maps.Clone(h.trans), maps.Clone(h.act), maps.Clone(h.parent)
	return &c
}

// lookup returns the point action a leads to from the session's state i,
// where the history knows it.
func (h *history) lookup(i int, a dsl.Action) (point, bool) {
	q, ok := h.trans[keyOf(h.pts[i], a)]
	return q, ok
}

// isStart reports whether the session's state i is its first state.
func (h *history) isStart(i int) bool { return h.pts[i] == h.pts[0] }

// step records the step the session took from its state i (from; nil:
// the end) by action a to its state i+1 (to; nil: the end), whose stack is
// calls and confidence conf; at is the point it was answered with from the
// history, or -1 for a new prediction.
func (h *history) step(i int, from *dsl.State, a dsl.Action, to *dsl.State, calls []int, conf *engine.Confidence, at point) {
	p := h.pts[i]
	q := at
	switch {
	case to == nil:
		q = endPoint
		h.shown[q] = i + 1
	case q < 0:
		q = h.newPoint(i + 1)
	default:
		h.shown[q] = i + 1
	}
	h.pts, h.calls, h.conf = append(h.pts[:i+1], q), append(h.calls[:i+1], slices.Clone(calls)), append(h.conf[:i+1], conf)
	h.trans[keyOf(p, a)] = q
	if at >= 0 && to != nil {
		return // a known step: what it says was derived when it was taken
	}
	h.derive(p, from, a, q, to)
}

// derive records the transitions the step p (from; nil: the end) -a-> q
// (to; nil: the end) implies.
func (h *history) derive(p point, from *dsl.State, a dsl.Action, q point, to *dsl.State) {
	set := func(at point, k dsl.ActionKind, target point) { h.trans[keyOf(at, dsl.Action{Kind: k})] = target }
	// actOf is the call state that started the activation of the state at
	// point x (st): itself for a call.
	actOf := func(x point, st dsl.State) (point, bool) {
		if st.Event == dsl.Call {
			return x, true
		}
		c, ok := h.act[x]
		return c, ok
	}
	sameActivation := func(x point, st dsl.State, y point) { // y is in x's activation
		if c, ok := actOf(x, st); ok {
			h.act[y] = c
			set(y, dsl.InvStepReturn, c)
		}
	}
	if to == nil {
		if a.Kind == dsl.StepInto || a.Kind == dsl.StepOver || a.Kind == dsl.StepReturn {
			h.entryReturn(p) // only the entry's return steps to the end
		}
		return
	}
	if to.Event == dsl.Return && to.Depth == 0 {
		h.entryReturn(q)
	}
	if from == nil { // a step back from the end: the run's last states
		return
	}
	leaving := from.Event == dsl.Return // to the caller, or a sibling call
	switch a.Kind {
	case dsl.StepInto, dsl.StepOver, dsl.StepReturn:
		if a.Kind == dsl.StepInto {
			set(q, dsl.InvStepInto, p)
		}
		if a.Kind != dsl.StepReturn && !(leaving && to.Event != dsl.Call) {
			set(q, dsl.InvStepOver, p)
		}
		switch {
		case to.Event == dsl.Call && (a.Kind == dsl.StepInto || leaving):
			caller, ok := actOf(p, *from)
			if leaving { // a sibling: the same caller
				caller, ok = h.parent[caller]
			}
			if ok {
				h.parent[q] = caller
				set(q, dsl.InvStepReturn, caller)
			}
		case to.Event != dsl.Call && !leaving:
			sameActivation(p, *from, q)
		}
	case dsl.InvStepInto:
		set(q, dsl.StepInto, p)
		if from.Event != dsl.Call && to.Event != dsl.Return { // the state before, in the same frame
			h.inActivation(q, *to, p)
		}
	case dsl.InvStepOver:
		if from.Event == dsl.Call { // the caller's state, or a sibling's return, just before
			set(q, dsl.StepInto, p)
			if c, ok := actOf(q, *to); ok && to.Event != dsl.Return {
				h.parent[p] = c
				set(p, dsl.InvStepReturn, c)
			}
			break
		}
		set(q, dsl.StepOver, p) // the same frame's previous stop
		h.inActivation(q, *to, p)
	case dsl.InvStepReturn:
		if from.Event == dsl.Call {
			h.parent[p] = q
		} else if to.Event == dsl.Call {
			h.act[p] = q
		}
	}
}

// inActivation records that the states at points y (st) and x are of one
// activation, as far as either's is known.
func (h *history) inActivation(y point, st dsl.State, x point) {
	if st.Event == dsl.Call {
		if _, ok := h.act[x]; !ok {
			h.act[x] = y
			h.trans[keyOf(x, dsl.Action{Kind: dsl.InvStepReturn})] = y
		}
		return
	}
	if c, ok := h.act[x]; ok {
		h.act[y] = c
		h.trans[keyOf(y, dsl.Action{Kind: dsl.InvStepReturn})] = c
	} else if c, ok := h.act[y]; ok {
		h.act[x] = c
		h.trans[keyOf(x, dsl.Action{Kind: dsl.InvStepReturn})] = c
	}
}

// entryReturn records that point r is the entry's return, the run's last
// state: every step from it ends the run, and the end steps back to it.
func (h *history) entryReturn(r point) {
	if h.ret == 0 {
		h.ret = r
	}
	for _, k := range []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepReturn} {
		h.trans[keyOf(r, dsl.Action{Kind: k})] = endPoint
	}
	for _, k := range []dsl.ActionKind{dsl.InvStepInto, dsl.InvStepOver} {
		h.trans[keyOf(endPoint, dsl.Action{Kind: k})] = r
	}
}

// edited makes the session's state i a new point: its locals were set, so
// it is no longer the state of the run the history knew.
func (h *history) edited(i int) {
	h.pts[i] = h.newPoint(i)
	h.conf[i] = nil
	if i == 0 {
		h.trans[keyOf(endPoint, dsl.Action{Kind: dsl.InvStepReturn})] = h.pts[0]
	}
}
