package ndbg_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/progen"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
)

// liveCases are programs with generators (also left suspended), closures,
// classes, recursion, comprehensions and exceptions, caught and escaping.
var liveCases = []struct{ src, call string }{
	{`class Acct:
    def __init__(self, b):
        self.b = b

    def add(self, n):
        self.b += n
        return self.b

def gen(n):
    for i in range(n):
        yield i * 2

def f(xs):
    a = Acct(1)
    add = lambda k: a.add(k)
    g = gen(9)
    next(g)
    total = 0
    for v in gen(len(xs)):
        total += add(v)
    sq = [x * x for x in xs if x]
    try:
        int("z")
    except ValueError:
        total -= 1
    return total + sum(sq)
`, "f([1, 2, 3])"},
	{`def fact(n):
    if n <= 1:
        raise ValueError(n)
    return n * fact(n - 1)

def f(k):
    try:
        return fact(k)
    finally:
        k = 0
`, "f(4)"},
	{`import sys

def half(x):
    print("half of", x)
    return 1 / x

total = 0
for v in [4, 2]:
    total += half(v)
print(total, file=sys.stderr)
`, ""},
}

// TestRealMatchesTree: the live real backend takes every action, forward
// and backward (by running the program again), with breakpoints kept set,
// exactly as the state tree of the recorded trace does (statetree, which
// is checked against CPython's bdb): random sessions on hand-written
// programs and one program of four generator families.
func TestRealMatchesTree(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: about 50 runs of programs in the sandbox")
	}
	ctx := context.Background()
	cases := slices.Clone(liveCases)
	for i, fam := range progen.Families()[:4] {
		p, err := progen.Generate(uint64(100+i), []string{fam})
		require.NoError(t, err)
		cases = append(cases, struct{ src, call string }{p.Source, p.Call})
	}
	kinds := []dsl.ActionKind{dsl.StepInto, dsl.StepInto, dsl.StepOver, dsl.StepOver, dsl.StepReturn, dsl.Breakpoint,
		dsl.Continue, dsl.InvStepInto, dsl.InvStepOver, dsl.InvStepReturn, dsl.InvBreakpoint, dsl.InvContinue}
	for ci, c := range cases {
		t.Run(fmt.Sprint(ci), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 7))
			s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), c.src, c.call)
			require.NoError(t, err)
			defer s.Close()
			res, err := trace.Run(ctx, s.Program(), c.call, trace.Limits{})
			require.NoError(t, err)
			tree, err := statetree.Build(s.Program(), res.Events)
			require.NoError(t, err)
			var lines []int
			for i := range tree.End() {
				if ev := tree.Event(i); ev.Kind == dsl.Line && !slices.Contains(lines, ev.Line) {
					lines = append(lines, ev.Line)
				}
			}
			pos := 0
			if c.call == "" {
				pos = 1
			}
			for step := range 12 {
				var bps []int
				if rng.IntN(3) == 0 {
					bps = []int{lines[rng.IntN(len(lines))]}
					require.NoError(t, s.SetBreakpoint(bps[0]))
				}
				a := ndbg.Action{Kind: kinds[rng.IntN(len(kinds))]}
				switch a.Kind {
				case dsl.Breakpoint, dsl.InvBreakpoint:
					a.Lines = []int{lines[rng.IntN(len(lines))]}
				case dsl.Continue, dsl.InvContinue:
					a.Lines = bps
				}
				if pos == tree.End() && !a.Kind.Inverse() || pos == 0 && a.Kind.Inverse() {
					a = ndbg.Action{Kind: dsl.InvStepOver}
					if pos == 0 {
						a.Kind = dsl.StepInto
					}
				}
				want, err := tree.ApplyBreakpoints(pos, a, bps)
				require.NoError(t, err)
				got, err := s.Do(ctx, a)
				what := fmt.Sprintf("step %d: %s from state %d with breakpoints %v", step, a, pos, bps)
				if want == tree.End() {
					require.ErrorIs(t, err, ndbg.ErrFinished, what)
					require.Nil(t, s.Frames(), what)
				} else {
					require.NoError(t, err, what)
					st := tree.State(want)
					if st.Event == dsl.Return || st.Event == dsl.Exception {
						st.Locals, st.LocalsKnown = tree.Event(want).Locals, true
					}
					// The same locals; their order may differ, as pdb's
					// does (README, "Differences from pdb", 5): the live
					// run reads f_locals only at its stops.
					require.ElementsMatch(t, st.Locals, got.Locals, what)
					st.Locals, got.Locals = nil, nil
					require.Equal(t, st, got, what)
					require.Equal(t, tree.Stack(want), s.Stack(), what)
				}
				pos = want
				s.ClearBreakpoint(0)
			}
		})
	}
}

// TestRealEvalEveryStop: at every stop of a real session (call, line,
// return and exception events, in every frame, generators and lambdas
// included), an object's attribute in the entry's frame reads as pdb's
// p reads it, once the object exists; and after the end, in the frames an
// exception passed through.
func TestRealEvalEveryStop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an evaluation at each of about 70 stops")
	}
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), liveCases[0].src, liveCases[0].call)
	require.NoError(t, err)
	defer s.Close()
	stops := 0
	for {
		fs := s.Frames()
		require.NotEmpty(t, fs)
		level := len(fs) - 1 // the entry's frame, f
		bound := slices.ContainsFunc(fs[0].Locals, func(l dsl.Local) bool { return l.Name == "a" })
		res, err := s.Eval(ctx, level, "a.b * 10", ndbg.EvalRepr)
		require.NoError(t, err)
		if bound {
			require.Empty(t, res.Error, "stop %d", stops)
			require.Regexp(t, `^\d+0$`, res.Value)
		} else {
			require.Equal(t, "NameError: name 'a' is not defined", res.Error)
		}
		stops++
		if _, err := s.StepInto(ctx); errors.Is(err, ndbg.ErrFinished) {
			break
		}
		require.NoError(t, err)
	}
	require.Greater(t, stops, 50)

	s, err = ndbg.Start(ctx, ndbg.Real(trace.Limits{}), liveCases[1].src, liveCases[1].call)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Continue(ctx)
	require.ErrorIs(t, err, ndbg.ErrFinished)
	x := s.Escaped()
	require.NotNil(t, x)
	require.Equal(t, "ValueError", x.Type)
	res, err := s.Eval(ctx, 0, "n, k", ndbg.EvalRepr) // post-mortem: the innermost frame, fact(1)
	require.NoError(t, err)
	require.Equal(t, "NameError: name 'k' is not defined", res.Error)
	res, err = s.Eval(ctx, len(x.Traceback)-1, "k", ndbg.EvalRepr) // f's frame, its finally run
	require.NoError(t, err)
	require.Equal(t, "0", res.Value)
}

// TestRealParked: past parkMin events, a run is parked ahead just before
// the session's position, and the step backs it serves (into, over a line,
// to a breakpoint just before) stop exactly where the state tree says, as
// do those it cannot serve (a step back over the loop, a return).
func TestRealParked(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs of 60,000 events in the sandbox")
	}
	ctx := context.Background()
	const src = `def sq(x):
    return x * x

def f(n):
    s = 0
    for i in range(n):
        s += i
    t = sq(s % 7)
    return s + t
`
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), src, "f(15000)")
	require.NoError(t, err)
	defer s.Close()
	res, err := trace.Run(ctx, s.Program(), "f(15000)", trace.Limits{})
	require.NoError(t, err)
	tree, err := statetree.Build(s.Program(), res.Events)
	require.NoError(t, err)
	require.Greater(t, tree.End(), 30_000)

	pos := 0
	do := func(a ndbg.Action, parked bool) {
		want, err := tree.Apply(pos, a)
		require.NoError(t, err)
		hits, pk := ndbg.ParkHits(s), ndbg.Parked(s)
		if parked { // just before, or at most an eighth of the run before
			require.True(t, pk <= pos-1 && pos-1-pk <= (pos-1)/8, "a run parked at %d before %s from %d", pk, a, pos)
		}
		got, err := s.Do(ctx, a)
		if a.Kind.Inverse() {
			// served by the parked run when its target is at or after it
			require.Equal(t, hits+b2i(parked && want >= pk), ndbg.ParkHits(s), "%s from %d to %d, parked at %d", a, pos, want, pk)
		}
		require.NoError(t, err, "%s from %d", a, pos)
		st := tree.State(want)
		if st.Event == dsl.Return || st.Event == dsl.Exception {
			st.Locals, st.LocalsKnown = tree.Event(want).Locals, true
		}
		require.ElementsMatch(t, st.Locals, got.Locals, "%s from %d", a, pos)
		st.Locals, got.Locals = nil, nil
		require.Equal(t, st, got, "%s from %d to %d", a, pos, want)
		pos = want
	}
	do(ndbg.Action{Kind: dsl.Breakpoint, Lines: []int{8}}, false)
	do(ndbg.Action{Kind: dsl.InvStepInto}, true)
	do(ndbg.Action{Kind: dsl.StepInto}, false)
	do(ndbg.Action{Kind: dsl.StepInto}, false) // sq's call
	do(ndbg.Action{Kind: dsl.StepOver}, false)
	do(ndbg.Action{Kind: dsl.InvStepOver}, true)
	do(ndbg.Action{Kind: dsl.InvStepReturn}, true) // back past the checkpoint: from the start
	do(ndbg.Action{Kind: dsl.Breakpoint, Lines: []int{9}}, false)
	do(ndbg.Action{Kind: dsl.StepOver}, false)
	do(ndbg.Action{Kind: dsl.InvStepOver}, true)
	do(ndbg.Action{Kind: dsl.InvStepOver}, true) // over sq: before the checkpoint
	do(ndbg.Action{Kind: dsl.InvBreakpoint, Lines: []int{7}}, true)
	do(ndbg.Action{Kind: dsl.InvStepInto}, true)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
