package statetree

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/trace"
)

const twoCalls = `def g(x):
    return x + 1

def f(a):
    b = g(a)
    c = g(b)
    return c
`

// twoCallsEvents is the trace of f(1) in twoCalls, written by hand.
func twoCallsEvents() []trace.Event {
	ev := func(k dsl.Event, line, depth, frame int) trace.Event {
		return trace.Event{Kind: k, Line: line, Depth: depth, Frame: frame}
	}
	return []trace.Event{
		ev(dsl.Call, 4, 0, 1), // 0
		ev(dsl.Line, 5, 0, 1), // 1
		ev(dsl.Call, 1, 1, 2), // 2
		ev(dsl.Line, 2, 1, 2), // 3
		ev(dsl.Return, 2, 1, 2),
		ev(dsl.Line, 6, 0, 1), // 5
		ev(dsl.Call, 1, 1, 3), // 6
		ev(dsl.Line, 2, 1, 3), // 7
		ev(dsl.Return, 2, 1, 3),
		ev(dsl.Line, 7, 0, 1), // 9
		ev(dsl.Return, 7, 0, 1),
	}
}

func mustTree(t *testing.T, src, entry string, events []trace.Event) *Tree {
	t.Helper()
	p, err := dsl.NewProgram(src, entry)
	require.NoError(t, err)
	tr, err := Build(p, events)
	require.NoError(t, err)
	return tr
}

func TestApplyByHand(t *testing.T) {
	tr := mustTree(t, twoCalls, "f", twoCallsEvents())
	require.Equal(t, 11, tr.End())
	a := func(k dsl.ActionKind, lines ...int) dsl.Action { return dsl.Action{Kind: k, Lines: lines} }
	cases := []struct {
		from int
		act  dsl.Action
		want int
	}{
		{0, a(dsl.StepInto), 1}, {4, a(dsl.StepInto), 5}, {10, a(dsl.StepInto), 11},
		{0, a(dsl.StepOver), 1}, {1, a(dsl.StepOver), 5}, {2, a(dsl.StepOver), 3},
		{3, a(dsl.StepOver), 4}, {4, a(dsl.StepOver), 5}, {5, a(dsl.StepOver), 9}, {10, a(dsl.StepOver), 11},
		{0, a(dsl.StepReturn), 10}, {1, a(dsl.StepReturn), 10}, {2, a(dsl.StepReturn), 4},
		{3, a(dsl.StepReturn), 4}, {4, a(dsl.StepReturn), 5}, {10, a(dsl.StepReturn), 11},
		{1, a(dsl.Breakpoint, 2), 3}, {3, a(dsl.Breakpoint, 2), 7}, {7, a(dsl.Breakpoint, 2), 11},
		{0, a(dsl.Breakpoint, 4), 11}, // the def line has no line event
		{0, a(dsl.Continue, 6, 7), 5}, {5, a(dsl.Continue, 6, 7), 9}, {9, a(dsl.Continue, 6, 7), 11},
		{0, a(dsl.Continue), 11},
		{1, a(dsl.InvStepInto), 0}, {11, a(dsl.InvStepInto), 10},
		{1, a(dsl.InvStepOver), 0}, {2, a(dsl.InvStepOver), 1}, {3, a(dsl.InvStepOver), 2},
		{5, a(dsl.InvStepOver), 1}, {6, a(dsl.InvStepOver), 5}, {9, a(dsl.InvStepOver), 5},
		{11, a(dsl.InvStepOver), 10},
		{3, a(dsl.InvStepReturn), 2}, {4, a(dsl.InvStepReturn), 2}, {2, a(dsl.InvStepReturn), 0},
		{5, a(dsl.InvStepReturn), 0}, {8, a(dsl.InvStepReturn), 6}, {11, a(dsl.InvStepReturn), 0},
		{7, a(dsl.InvBreakpoint, 2), 3}, {3, a(dsl.InvBreakpoint, 2), 0}, {11, a(dsl.InvBreakpoint, 2), 7},
		{9, a(dsl.InvContinue, 5, 7), 1}, {11, a(dsl.InvContinue, 5, 7), 9}, {1, a(dsl.InvContinue, 5), 0},
	}
	for _, c := range cases {
		got, err := tr.Apply(c.from, c.act)
		require.NoError(t, err, "%s from %d", c.act, c.from)
		assert.Equal(t, c.want, got, "%s from %d", c.act, c.from)
	}

	_, err := tr.Apply(11, a(dsl.StepOver))
	require.ErrorIs(t, err, ErrFinished)
	_, err = tr.Apply(0, a(dsl.InvStepInto))
	require.ErrorIs(t, err, ErrAtStart)
	for _, bad := range []dsl.Action{a(dsl.Breakpoint), a(dsl.Breakpoint, 1, 2), a(dsl.StepInto, 3), a(dsl.InvBreakpoint), {Kind: 0}} {
		_, err = tr.Apply(3, bad)
		require.Error(t, err, "%v", bad)
	}
	_, err = tr.Apply(12, a(dsl.StepInto))
	require.Error(t, err)
	_, err = tr.Apply(-1, a(dsl.InvStepInto))
	require.Error(t, err)

	s := tr.State(4)
	assert.Equal(t, dsl.State{Event: dsl.Return, Line: 2, Source: "    return x + 1", Depth: 1}, s)
	s = tr.State(0)
	assert.Equal(t, "def f(a):", s.Source, "Source is the frame text, without the START marker")
}

func TestBuildRejectsMalformedTraces(t *testing.T) {
	p, err := dsl.NewProgram(twoCalls, "f")
	require.NoError(t, err)
	_, err = Build(p, nil)
	require.Error(t, err)
	_, err = Build(nil, twoCallsEvents())
	require.Error(t, err)

	mutate := map[string]func(ev []trace.Event){
		"starts with a line": func(ev []trace.Event) { ev[0].Kind = dsl.Line },
		"starts deep":        func(ev []trace.Event) { ev[0].Depth = 1 },
		"call not deeper":    func(ev []trace.Event) { ev[2].Depth = 0 },
		"line after return":  func(ev []trace.Event) { ev[5].Depth = 1 },
		"frame switch":       func(ev []trace.Event) { ev[3].Frame = 9 },
		"line out of range":  func(ev []trace.Event) { ev[3].Line = 99 },
		"bad kind":           func(ev []trace.Event) { ev[3].Kind = 9 },
	}
	for name, m := range mutate {
		ev := twoCallsEvents()
		m(ev)
		_, err := Build(p, ev)
		require.Error(t, err, name)
	}

	// Events after the entry's return (generator finalization) are dropped.
	ev := append(twoCallsEvents(), trace.Event{Kind: dsl.Call, Line: 1, Depth: 0, Frame: 7})
	tr, err := Build(p, ev)
	require.NoError(t, err)
	require.Equal(t, 11, tr.End())
}

// realTree traces p with trace.Run and builds its tree.
func realTree(t testing.TB, p testProgram) *Tree {
	t.Helper()
	return realTrees(t, []testProgram{p})[0]
}

// realTrees traces the programs in one trace.Batch and builds their trees.
func realTrees(t testing.TB, progs []testProgram) []*Tree {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	jobs := make([]trace.Job, len(progs))
	for i, p := range progs {
		prog, err := dsl.NewProgram(p.source, p.entry)
		require.NoError(t, err, p.name)
		jobs[i] = trace.Job{Prog: prog, Call: p.call}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := trace.NewBatch(trace.Limits{})
	defer b.Close()
	trees := make([]*Tree, len(progs))
	err := b.RunAll(ctx, jobs, func(i int, res *trace.Result, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", progs[i].name, err)
		}
		if res.Truncated {
			return fmt.Errorf("%s: trace truncated", progs[i].name)
		}
		trees[i], err = Build(jobs[i].Prog, res.Events)
		return err
	})
	require.NoError(t, err)
	return trees
}

// allActions lists, for state pos, every action worth checking there.
func allActions(tr *Tree, pos int) []dsl.Action {
	acts := []dsl.Action{{Kind: dsl.StepInto}, {Kind: dsl.StepOver}, {Kind: dsl.StepReturn},
		{Kind: dsl.InvStepInto}, {Kind: dsl.InvStepOver}, {Kind: dsl.InvStepReturn}}
	seen := map[int]bool{}
	for _, l := range tr.line {
		if !seen[int(l)] {
			seen[int(l)] = true
			acts = append(acts, dsl.Action{Kind: dsl.Breakpoint, Lines: []int{int(l)}},
				dsl.Action{Kind: dsl.InvBreakpoint, Lines: []int{int(l)}})
		}
	}
	return acts
}

// TestInverseProperties checks the relations between forward and inverse
// actions on real traces of the hand-written programs.
func TestInverseProperties(t *testing.T) {
	trees := realTrees(t, handPrograms)
	for pi, p := range handPrograms {
		tr := trees[pi]
		n := tr.End()
		ap := func(pos int, k dsl.ActionKind, lines ...int) int {
			r, err := tr.Apply(pos, dsl.Action{Kind: k, Lines: lines})
			require.NoError(t, err)
			return r
		}
		for s := 0; s < n; s++ {
			msg := p.name + ": from " + describe(tr, s)
			// step_into and inv_step_into are inverses.
			require.Equal(t, s, ap(ap(s, dsl.StepInto), dsl.InvStepInto), msg)
			if s > 0 {
				require.Equal(t, s, ap(ap(s, dsl.InvStepInto), dsl.StepInto), msg)
			}
			// Forward jumps are ordered: step_into <= step_over <= step_return.
			in, over, ret := ap(s, dsl.StepInto), ap(s, dsl.StepOver), ap(s, dsl.StepReturn)
			require.LessOrEqual(t, in, over, msg)
			require.LessOrEqual(t, over, ret, msg)
			// step_over and inv_step_over are inverses between states of equal
			// depth; from a return into the caller, inv_step_over goes back
			// before the callee's subtree.
			if over < n {
				if tr.Depth(over) == tr.Depth(s) {
					require.Equal(t, s, ap(over, dsl.InvStepOver), msg)
				} else {
					require.Equal(t, dsl.Return, tr.kind[s], msg)
					require.Less(t, tr.Depth(over), tr.Depth(s), msg)
					require.Less(t, ap(over, dsl.InvStepOver), s, msg)
				}
				// Everything skipped is deeper.
				for j := s + 1; j < over; j++ {
					require.Greater(t, tr.Depth(j), tr.Depth(s), msg)
				}
			}
			// step_return ends the activation: a return at the same depth in
			// the same frame, whose activation starts at inv_step_return(s).
			if tr.kind[s] != dsl.Return && ret < n {
				require.Equal(t, dsl.Return, tr.kind[ret], msg)
				require.Equal(t, tr.Depth(s), tr.Depth(ret), msg)
				require.Equal(t, tr.Event(s).Frame, tr.Event(ret).Frame, msg)
				c := ap(ret, dsl.InvStepReturn)
				require.Equal(t, dsl.Call, tr.kind[c], msg)
				require.Equal(t, ret, ap(c, dsl.StepReturn), msg)
				if tr.kind[s] != dsl.Call {
					require.Equal(t, c, ap(s, dsl.InvStepReturn), msg)
				}
			}
			// The converse: inv_step_over back to a state of equal depth is
			// undone by step_over.
			if s > 0 {
				if b := ap(s, dsl.InvStepOver); tr.Depth(b) == tr.Depth(s) {
					require.Equal(t, s, ap(b, dsl.StepOver), msg)
				}
			}
			// Every action moves.
			for _, act := range allActions(tr, s) {
				if s == 0 && act.Kind.Inverse() {
					continue
				}
				next, err := tr.Apply(s, act)
				require.NoError(t, err, msg)
				require.NotEqual(t, s, next, "%s %s", msg, act)
			}
			if s > 0 {
				// Backward jumps are ordered too.
				bin, bover, bret := ap(s, dsl.InvStepInto), ap(s, dsl.InvStepOver), ap(s, dsl.InvStepReturn)
				require.GreaterOrEqual(t, bin, bover, msg)
				require.GreaterOrEqual(t, bover, bret, msg)
				require.Equal(t, dsl.Call, tr.kind[bret], msg)
				require.LessOrEqual(t, tr.Depth(bret), tr.Depth(s), msg)
				if bover > 0 || tr.Depth(s) == 0 {
					require.LessOrEqual(t, tr.Depth(bover), tr.Depth(s), msg)
				}
			}
			// A breakpoint stops at the first later line event at L, and
			// inv_breakpoint from there goes back to s or before.
			for _, act := range allActions(tr, s) {
				if act.Kind != dsl.Breakpoint {
					continue
				}
				l := act.Lines[0]
				b := ap(s, dsl.Breakpoint, l)
				if b == n {
					for j := s + 1; j < n; j++ {
						require.False(t, tr.kind[j] == dsl.Line && int(tr.line[j]) == l, msg)
					}
					continue
				}
				require.Equal(t, dsl.Line, tr.kind[b], msg)
				require.Equal(t, l, int(tr.line[b]), msg)
				back := ap(b, dsl.InvBreakpoint, l)
				require.LessOrEqual(t, back, s, msg)
				if tr.kind[s] == dsl.Line && int(tr.line[s]) == l {
					require.Equal(t, s, back, msg)
				}
				// continue with one line is breakpoint.
				require.Equal(t, b, ap(s, dsl.Continue, l), msg)
			}
		}
	}
}

func TestApplyBreakpointsByHand(t *testing.T) {
	tr := mustTree(t, twoCalls, "f", twoCallsEvents())
	a := func(k dsl.ActionKind, lines ...int) dsl.Action { return dsl.Action{Kind: k, Lines: lines} }
	// A breakpoint at line 2 (g's body, states 3 and 7), kept set.
	cases := []struct {
		from      int
		act       dsl.Action
		want, off int // with the breakpoint, without it
	}{
		{1, a(dsl.StepOver), 3, 5}, {5, a(dsl.StepOver), 7, 9}, {3, a(dsl.StepOver), 4, 4},
		{1, a(dsl.StepReturn), 3, 10}, {3, a(dsl.StepReturn), 4, 4}, {4, a(dsl.StepReturn), 5, 5},
		{0, a(dsl.Continue), 3, 11}, {1, a(dsl.Breakpoint, 7), 3, 9}, {8, a(dsl.StepOver), 9, 9},
		{9, a(dsl.InvStepOver), 7, 5}, {5, a(dsl.InvStepOver), 3, 1}, {11, a(dsl.InvStepOver), 10, 10},
		{9, a(dsl.InvStepReturn), 7, 0}, {8, a(dsl.InvStepReturn), 7, 6}, {7, a(dsl.InvStepReturn), 6, 6},
		{8, a(dsl.InvStepInto), 7, 7}, {9, a(dsl.InvBreakpoint, 5), 7, 1}, {11, a(dsl.InvContinue), 7, 0},
	}
	for _, c := range cases {
		got, err := tr.ApplyBreakpoints(c.from, c.act, []int{2})
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%s from %d with a breakpoint at 2", c.act, c.from)
		got, err = tr.ApplyBreakpoints(c.from, c.act, nil)
		require.NoError(t, err)
		assert.Equal(t, c.off, got, "%s from %d without breakpoints", c.act, c.from)
	}
	_, err := tr.ApplyBreakpoints(11, a(dsl.StepOver), []int{2})
	require.ErrorIs(t, err, ErrFinished)
	_, err = tr.ApplyBreakpoints(0, a(dsl.InvStepOver), []int{2})
	require.ErrorIs(t, err, ErrAtStart)
}

// TestApplyBreakpointsIssue17 is the case of issue 17, checked with pdb by
// hand: fact(3), `b 4`, `c`, `n` stops at line 4 again in fact(2), n = 2
// (Apply alone, with no breakpoint, returns 6 from the outer call).
func TestApplyBreakpointsIssue17(t *testing.T) {
	tr := realTree(t, breakPrograms[0])
	c, err := tr.ApplyBreakpoints(0, dsl.Action{Kind: dsl.Continue}, []int{4})
	require.NoError(t, err)
	require.Equal(t, dsl.State{Event: dsl.Line, Line: 4, Source: "    return n * fact(n - 1)", Locals: []dsl.Local{{Name: "n", Repr: "3"}}}, tr.State(c))
	n, err := tr.ApplyBreakpoints(c, dsl.Action{Kind: dsl.StepOver}, []int{4})
	require.NoError(t, err)
	require.Equal(t, dsl.State{Event: dsl.Line, Line: 4, Source: "    return n * fact(n - 1)", Locals: []dsl.Local{{Name: "n", Repr: "2"}}, Depth: 1}, tr.State(n))
	r, err := tr.ApplyBreakpoints(c, dsl.Action{Kind: dsl.StepReturn}, []int{4})
	require.NoError(t, err)
	require.Equal(t, n, r, "pdb's return stops at the breakpoint in the callee too")
	// Backwards from the outer return, a reverse step passes fact(2)'s line
	// 4 (the last one before it) and stops there.
	end, err := tr.Apply(c, dsl.Action{Kind: dsl.StepOver})
	require.NoError(t, err)
	require.Equal(t, dsl.State{Event: dsl.Return, Line: 4, Source: "    return n * fact(n - 1)", Value: "6"}, tr.State(end))
	for _, k := range []dsl.ActionKind{dsl.InvStepOver, dsl.InvStepReturn} {
		b, err := tr.ApplyBreakpoints(end, dsl.Action{Kind: k}, []int{4})
		require.NoError(t, err)
		require.Equal(t, n, b, "%s", k)
	}

	// A breakpoint on a line of nested comprehensions: next from that line
	// stops in the comprehension's frame (pdb's next does), not at line 3.
	tr = realTree(t, breakPrograms[1])
	at2, err := tr.Apply(0, dsl.Action{Kind: dsl.StepInto})
	require.NoError(t, err)
	require.Equal(t, 2, tr.Event(at2).Line)
	over, err := tr.Apply(at2, dsl.Action{Kind: dsl.StepOver})
	require.NoError(t, err)
	require.Equal(t, 3, tr.Event(over).Line)
	in, err := tr.ApplyBreakpoints(at2, dsl.Action{Kind: dsl.StepOver}, []int{2})
	require.NoError(t, err)
	require.Equal(t, trace.Event{Kind: dsl.Line, Line: 2, Depth: 1, Frame: 2, Func: "<listcomp>", Locals: []dsl.Local{{Name: ".0", Repr: tr.Event(in).Locals[0].Repr}}},
		tr.Event(in))
}

// TestBreakpointProperties checks ApplyBreakpoints on real traces against a
// plain scan (a forward action stops at the first line state at a
// breakpoint before its own stop, an inverse one at the last after its own
// stop) and the forward-inverse round trips with breakpoints kept set.
func TestBreakpointProperties(t *testing.T) {
	progs := append(slices.Clone(breakPrograms), handPrograms...)
	trees := realTrees(t, progs)
	for pi, p := range progs {
		tr := trees[pi]
		n := tr.End()
		lines := slices.Sorted(maps.Keys(tr.lineAt))
		// Every line alone, and sets of two and three lines.
		var sets [][]int
		for i, l := range lines {
			sets = append(sets, []int{int(l)}, []int{int(l), int(lines[(i+2)%len(lines)])},
				[]int{int(l), int(lines[(i+1)%len(lines)]), int(lines[(i+3)%len(lines)])})
		}
		for _, bs := range sets {
			isBreak := func(j int) bool { return tr.kind[j] == dsl.Line && slices.Contains(bs, int(tr.line[j])) }
			ap := func(pos int, k dsl.ActionKind) int {
				r, err := tr.ApplyBreakpoints(pos, dsl.Action{Kind: k}, bs)
				require.NoError(t, err)
				return r
			}
			for s := 0; s <= n; s++ {
				msg := fmt.Sprintf("%s: breakpoints %v, from %s", p.name, bs, describe(tr, s))
				for _, k := range []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepReturn, dsl.Continue,
					dsl.InvStepInto, dsl.InvStepOver, dsl.InvStepReturn, dsl.InvContinue} {
					if k.Inverse() && s == 0 || !k.Inverse() && s == n {
						continue
					}
					plain, err := tr.Apply(s, dsl.Action{Kind: k})
					require.NoError(t, err)
					want := plain
					if k.Inverse() {
						for j := s - 1; j > plain; j-- {
							if isBreak(j) {
								want = j
								break
							}
						}
					} else {
						for j := s + 1; j < plain; j++ {
							if isBreak(j) {
								want = j
								break
							}
						}
					}
					require.Equal(t, want, ap(s, k), "%s %s", msg, k)
				}
				if s == n {
					continue
				}
				// step_into and inv_step_into stay inverses.
				require.Equal(t, s, ap(ap(s, dsl.StepInto), dsl.InvStepInto), msg)
				// step_over and inv_step_over stay inverses between states of
				// equal depth, both ways.
				if over := ap(s, dsl.StepOver); over < n && tr.Depth(over) == tr.Depth(s) {
					require.Equal(t, s, ap(over, dsl.InvStepOver), msg)
				}
				if s > 0 {
					if b := ap(s, dsl.InvStepOver); tr.Depth(b) == tr.Depth(s) {
						require.Equal(t, s, ap(b, dsl.StepOver), msg)
					}
				}
				// A step_return that reaches its return (no breakpoint on the
				// way) is undone by inv_step_return back to s or before, not
				// before the activation's call.
				if ret := ap(s, dsl.StepReturn); tr.kind[s] != dsl.Return && ret < n && !isBreak(ret) {
					back := ap(ret, dsl.InvStepReturn)
					require.LessOrEqual(t, back, s, msg)
					require.GreaterOrEqual(t, back, int(tr.startOf[s]), msg)
				}
			}
		}
	}
}
