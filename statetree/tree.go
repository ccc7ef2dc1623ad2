package statetree

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/trace"
)

// Errors returned by Apply for actions that have nowhere to go.
var (
	// ErrFinished: a forward action from End (the program has finished).
	ErrFinished = errors.New("statetree: program has finished")
	// ErrAtStart: an inverse action from state 0 (nothing happened before it).
	ErrAtStart = errors.New("statetree: already at the first state")
)

// Tree is the state tree of one traced call: its states in execution order,
// each at the depth of its frame, with every debugger action as an exact
// transition between state indices. A Tree is immutable and safe for
// concurrent use.
type Tree struct {
	prog   *dsl.Program
	events []trace.Event

	depth []int32
	kind  []dsl.Event
	line  []int32

	// Precomputed transitions (indices; n means End, -1 means none).
	nextLE  []int32 // first j > i with depth[j] <= depth[i] (step_over)
	nextLT  []int32 // first j > i with depth[j] <  depth[i]
	prevLE  []int32 // last j < i with depth[j] <= depth[i] (inv_step_over)
	retOf   []int32 // the return event ending i's activation, or n if the trace ends first
	startOf []int32 // the call event starting i's activation
	parent  []int32 // the call event starting the caller's activation (-1 at depth 0)

	// lineAt lists, for every source line, the indices of its line events
	// in increasing order (breakpoints).
	lineAt map[int32][]int32
	// nextLine[i] is the first line event at index >= i (n if none);
	// prevLine[i] the last line event at index <= i (-1 if none).
	nextLine, prevLine []int32
}

// Build makes the state tree of a trace: events are trace.Run's events of one
// call of prog's entry, starting with the entry's call event at depth 0.
// The tree ends with the entry's return event; events after it (GeneratorExit
// in generators the entry left suspended, thrown as its frame is freed) are
// dropped, as CWM's trace ends when the entry's scope is left. Build checks
// that depths and frames nest as CPython produces them (a call goes one
// level deeper, an event after a return is in the caller or is a sibling
// call) and that every line lies in the program. The tree keeps events (not
// a copy): the caller must not modify them afterwards.
func Build(prog *dsl.Program, events []trace.Event) (*Tree, error) {
	if prog == nil {
		return nil, errors.New("statetree: nil program")
	}
	if len(events) == 0 {
		return nil, errors.New("statetree: empty trace")
	}
	// The tree ends where the entry returns: later events (generators the
	// entry left suspended, finalized as its frame is freed) are dropped.
	for i, e := range events {
		if e.Kind == dsl.Return && e.Depth == 0 {
			events = events[:i+1]
			break
		}
	}
	n := len(events)
	if n >= 1<<31-1 {
		return nil, fmt.Errorf("statetree: trace too long (%d events)", n)
	}
	if e := events[0]; e.Kind != dsl.Call || e.Depth != 0 {
		return nil, fmt.Errorf("statetree: trace starts with %s at depth %d, want call at depth 0", e.Kind, e.Depth)
	}
	t := &Tree{
		prog: prog, events: events,
		depth: make([]int32, n), kind: make([]dsl.Event, n), line: make([]int32, n),
		lineAt: make(map[int32][]int32),
	}
	for i, e := range events {
		if e.Kind < dsl.Call || e.Kind > dsl.Exception {
			return nil, fmt.Errorf("statetree: event %d: bad kind %d", i, e.Kind)
		}
		if e.Line < 1 || e.Line > len(prog.Lines) {
			return nil, fmt.Errorf("statetree: event %d: line %d outside the program (%d lines)", i, e.Line, len(prog.Lines))
		}
		if i > 0 {
			if err := checkNesting(events[i-1], e); err != nil {
				return nil, fmt.Errorf("statetree: event %d: %w", i, err)
			}
		}
		t.depth[i], t.kind[i], t.line[i] = int32(e.Depth), e.Kind, int32(e.Line)
		if e.Kind == dsl.Line {
			t.lineAt[int32(e.Line)] = append(t.lineAt[int32(e.Line)], int32(i))
		}
	}
	t.precompute()
	return t, nil
}

// checkNesting checks the depth and frame of event e given the one before.
func checkNesting(prev, e trace.Event) error {
	want := prev.Depth
	if e.Kind == dsl.Call {
		if prev.Kind != dsl.Return {
			want++
		}
	} else if prev.Kind == dsl.Return {
		want--
	}
	if e.Depth != want {
		return fmt.Errorf("%s at depth %d after %s at depth %d (want depth %d)", e.Kind, e.Depth, prev.Kind, prev.Depth, want)
	}
	if e.Kind != dsl.Call && prev.Kind != dsl.Return && e.Frame != prev.Frame {
		return fmt.Errorf("%s in frame %d right after %s in frame %d", e.Kind, e.Frame, prev.Kind, prev.Frame)
	}
	return nil
}

func (t *Tree) precompute() {
	n := len(t.depth)
	t.nextLE, t.nextLT, t.prevLE = make([]int32, n), make([]int32, n), make([]int32, n)
	t.retOf, t.startOf, t.parent = make([]int32, n), make([]int32, n), make([]int32, n)
	t.nextLine, t.prevLine = make([]int32, n), make([]int32, n)

	// Monotonic stacks over depth: indices whose answer is still open.
	var le, lt []int32
	for j := int32(0); j < int32(n); j++ {
		d := t.depth[j]
		for len(le) > 0 && t.depth[le[len(le)-1]] >= d {
			t.nextLE[le[len(le)-1]] = j
			le = le[:len(le)-1]
		}
		le = append(le, j)
		for len(lt) > 0 && t.depth[lt[len(lt)-1]] > d {
			t.nextLT[lt[len(lt)-1]] = j
			lt = lt[:len(lt)-1]
		}
		lt = append(lt, j)
	}
	for _, i := range le {
		t.nextLE[i] = int32(n)
	}
	for _, i := range lt {
		t.nextLT[i] = int32(n)
	}
	le = le[:0]
	for j := int32(n) - 1; j >= 0; j-- {
		d := t.depth[j]
		for len(le) > 0 && t.depth[le[len(le)-1]] >= d {
			t.prevLE[le[len(le)-1]] = j
			le = le[:len(le)-1]
		}
		le = append(le, j)
	}
	for _, i := range le {
		t.prevLE[i] = -1
	}

	// Activations: start[d] is the call event of the live activation at depth d.
	var start []int32
	for j := int32(0); j < int32(n); j++ {
		d := t.depth[j]
		if t.kind[j] == dsl.Call {
			start = append(start[:d], j)
		}
		t.startOf[j] = start[d]
		t.parent[j] = -1
		if d > 0 {
			t.parent[j] = start[d-1]
		}
	}
	// The return ending each activation: scan backwards.
	ret := make([]int32, 0, 16)
	for j := int32(n) - 1; j >= 0; j-- {
		d := int(t.depth[j])
		for len(ret) <= d {
			ret = append(ret, int32(n))
		}
		if t.kind[j] == dsl.Return {
			ret[d] = j
		}
		t.retOf[j] = ret[d]
		if t.kind[j] == dsl.Call {
			ret[d] = int32(n) // an earlier activation at this depth ends before j
		}
	}

	next := int32(n)
	for j := int32(n) - 1; j >= 0; j-- {
		if t.kind[j] == dsl.Line {
			next = j
		}
		t.nextLine[j] = next
	}
	prev := int32(-1)
	for j := int32(0); j < int32(n); j++ {
		if t.kind[j] == dsl.Line {
			prev = j
		}
		t.prevLine[j] = prev
	}
}

// End is the number of states: the position after the last one, meaning the
// program has finished (or the trace was cut off there).
func (t *Tree) End() int { return len(t.depth) }

// Program returns the program the tree was built for.
func (t *Tree) Program() *dsl.Program { return t.prog }

// Event returns the trace event of state i (0 <= i < End).
func (t *Tree) Event(i int) trace.Event { return t.events[i] }

// Depth returns the call depth of state i.
func (t *Tree) Depth(i int) int { return int(t.depth[i]) }

// Stack returns the call-event lines of the frames on the call stack at
// state i, outermost first, its own frame last (walking back from i to the
// call event of each enclosing frame); nil when i is End (finished).
func (t *Tree) Stack(i int) []int {
	if i < 0 || i >= t.End() {
		return nil
	}
	var lines []int
	d := t.Depth(i)
	for j := i; j >= 0 && d >= 0; j-- {
		if ev := &t.events[j]; ev.Depth == d && ev.Kind == dsl.Call {
			lines = append(lines, ev.Line)
			d--
		}
	}
	slices.Reverse(lines)
	return lines
}

// State returns state i as the DSL writes it: Source is the line's frame
// text (Program.Text), return and exception states carry no locals. The Locals slice is shared with the trace: do not modify.
func (t *Tree) State(i int) dsl.State {
	e := &t.events[i]
	s := dsl.State{Event: e.Kind, Line: e.Line, Source: t.prog.Text(e.Line), Depth: e.Depth}
	switch e.Kind {
	case dsl.Call, dsl.Line:
		s.Locals = e.Locals
	default:
		s.Value = e.Value
	}
	return s
}

// Apply returns the state that action a leads to from state pos, End when a
// forward action runs past the last state. The rules (see the package
// documentation for how they relate to pdb):
//
//   - step_into: pos+1.
//   - step_over: the first later state at depth <= depth(pos): the next stop
//     in the current frame or a caller, skipping callee subtrees. From a return
//     state that is the very next state (the caller, or a sibling call).
//   - step_return: from a return state, the first later state at depth <
//     depth(pos) (the caller's next stop); otherwise the return state that ends
//     the current activation (after an exception: its return with None).
//   - breakpoint:L: the first later line state at line L, or End.
//   - continue:L1,...: the first later line state at any Li, or End.
//   - inv_step_into: pos-1 (from End: the last state).
//   - inv_step_over: the last earlier state at depth <= depth(pos) (from End:
//     the last state at depth 0, the entry's return).
//   - inv_step_return: from a call state, the call state that started the
//     caller's activation; otherwise the call state that started the current
//     activation (for a generator, the latest resume: each resume is its own
//     activation).
//   - inv_breakpoint:L: the last earlier line state at L, or 0.
//   - inv_continue:L1,...: the last earlier line state at any Li, or 0.
//
// Forward actions from End return ErrFinished, inverse actions from 0
// ErrAtStart; other errors mean a malformed action or position.
func (t *Tree) Apply(pos int, a dsl.Action) (int, error) {
	n := len(t.depth)
	if pos < 0 || pos > n {
		return 0, fmt.Errorf("statetree: position %d out of range [0,%d]", pos, n)
	}
	switch a.Kind {
	case dsl.Breakpoint, dsl.InvBreakpoint:
		if len(a.Lines) != 1 {
			return 0, fmt.Errorf("statetree: %s needs exactly one line, got %d", a.Kind, len(a.Lines))
		}
	case dsl.Continue, dsl.InvContinue:
	default:
		if len(a.Lines) != 0 {
			return 0, fmt.Errorf("statetree: %s takes no lines", a.Kind)
		}
	}
	if a.Kind.Inverse() {
		if pos == 0 {
			return 0, ErrAtStart
		}
	} else if pos == n {
		return 0, ErrFinished
	}
	switch a.Kind {
	case dsl.StepInto:
		return pos + 1, nil
	case dsl.StepOver:
		return int(t.nextLE[pos]), nil
	case dsl.StepReturn:
		if t.kind[pos] == dsl.Return {
			return int(t.nextLT[pos]), nil
		}
		return int(t.retOf[pos]), nil
	case dsl.Breakpoint, dsl.Continue:
		return t.nextAt(pos, a.Lines), nil
	case dsl.InvStepInto:
		return pos - 1, nil
	case dsl.InvStepOver:
		if pos == n {
			return t.lastAtDepth0(), nil
		}
		return int(max(t.prevLE[pos], 0)), nil
	case dsl.InvStepReturn:
		if pos == n {
			return 0, nil
		}
		if t.kind[pos] == dsl.Call {
			return int(max(t.parent[pos], 0)), nil
		}
		return int(t.startOf[pos]), nil
	case dsl.InvBreakpoint, dsl.InvContinue:
		return t.prevAt(pos, a.Lines), nil
	}
	return 0, fmt.Errorf("statetree: unknown action %s", a.Kind)
}

// ApplyBreakpoints is Apply with breakpoints set at lines, as pdb honours
// them: a forward action stops at the first line state after pos at any of
// them if that comes before the action's own stop (pdb's next, return and
// continue stop at a breakpoint on the way, in any frame, a callee or a
// comprehension on the same line included); an inverse action, as a reverse
// debugger does, stops at the last line state before pos at any of them if
// that comes after the action's own stop. Breakpoints stop at line states
// only (as bdb). With no lines it is Apply.
func (t *Tree) ApplyBreakpoints(pos int, a dsl.Action, lines []int) (int, error) {
	next, err := t.Apply(pos, a)
	if err != nil || len(lines) == 0 {
		return next, err
	}
	if a.Kind.Inverse() {
		return max(next, t.prevAt(pos, lines)), nil
	}
	return min(next, t.nextAt(pos, lines)), nil
}

// lastAtDepth0 is the last state of the entry's frame.
func (t *Tree) lastAtDepth0() int {
	for j := len(t.depth) - 1; ; j-- {
		if t.depth[j] == 0 {
			return j
		}
	}
}

// nextAt is the first line state after pos at any of lines, or End.
func (t *Tree) nextAt(pos int, lines []int) int {
	best := int32(len(t.depth))
	for _, l := range lines {
		idx := t.lineAt[int32(l)]
		k, _ := slices.BinarySearch(idx, int32(pos)+1)
		if k < len(idx) && idx[k] < best {
			best = idx[k]
		}
	}
	return int(best)
}

// prevAt is the last line state before pos at any of lines, or 0.
func (t *Tree) prevAt(pos int, lines []int) int {
	best := int32(0)
	for _, l := range lines {
		idx := t.lineAt[int32(l)]
		k, _ := slices.BinarySearch(idx, int32(pos))
		if k > 0 && idx[k-1] > best {
			best = idx[k-1]
		}
	}
	return int(best)
}

// Horizon is the number of states an action from pos to next skips over, in
// execution order: |next-pos|-1 (End counts as position End).
func Horizon(pos, next int) int {
	h := next - pos
	if h < 0 {
		h = -h
	}
	return max(h-1, 0)
}
