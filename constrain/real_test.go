package constrain

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
)

// realPrograms are hand-written programs for the constructs whose events
// are easy to get wrong: generators, exceptions, lambdas, comprehensions,
// recursion, closures.
var realPrograms = []struct{ src, call string }{
	{`def gen(n):
    for i in range(n):
        yield i * i

def f(n):
    total = 0
    for v in gen(n):
        total += v
    return total
`, "f(3)"},
	{`def risky(x):
    if x > 1:
        raise ValueError(x)
    return x

def f(xs):
    out = []
    for x in xs:
        try:
            out.append(risky(x))
        except ValueError as e:
            out.append(-1)
    return out
`, "f([0, 2, 1])"},
	{`def f(s):
    key = lambda c: (c.lower(), c)
    words = sorted({w for w in s.split()}, key=key)
    counts = {w: len(w) for w in words}
    return [k for k, v in counts.items() if v > 1]
`, "f('a bb Cc dd a')"},
	{`def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)

def f(n):
    return fact(n) + fact(n - 1)
`, "f(4)"},
	{`def outer(k):
    def add(x):
        return x + k
    return add

def f(xs):
    g = outer(10)
    return list(map(g, xs))
`, "f([1, 2])"},
	{`def f(d):
    if not d:
        raise KeyError('empty')
    return d
`, "f({})"},
}

// stackAt returns the call-event lines of the frames on the stack at state
// i, outermost first, as a debugger session tracks them.
func stackAt(tr *statetree.Tree, i int) []int {
	if i >= tr.End() {
		return nil
	}
	var stack []int
	d := tr.Depth(i)
	for j := i; j >= 0 && d >= 0; j-- {
		if tr.Depth(j) == d && tr.Event(j).Kind == dsl.Call {
			stack = append(stack, tr.Event(j).Line)
			d--
		}
	}
	for a, b := 0, len(stack)-1; a < b; a, b = a+1, b-1 {
		stack[a], stack[b] = stack[b], stack[a]
	}
	return stack
}

// TestRealNextStatesAccepted checks that the rules are sound: from every
// state of real traces, for every action, the frame of the state the real
// debugger reaches is accepted by the matcher, token by token, to the end.
func TestRealNextStatesAccepted(t *testing.T) {
	if testing.Short() {
		t.Skip("traces real programs")
	}
	type item struct{ src, call string }
	var items []item
	for _, p := range realPrograms {
		items = append(items, item{p.src, p.call})
	}
	dev, err := cruxeval.Dev()
	require.NoError(t, err)
	for _, it := range dev {
		items = append(items, item{it.Code, it.Call()})
	}
	v, special := byteVocab(t)
	ctx := context.Background()
	batch := trace.NewBatch(trace.Limits{})
	defer batch.Close()
	checked := 0
	progs := make([]*dsl.Program, len(items))
	sources := make([]string, len(items))
	for n, it := range items {
		prog, err := dsl.NewProgram(it.src, "f")
		require.NoError(t, err)
		progs[n], sources[n] = prog, prog.Source
	}
	analyses, err := AnalyzeMany(ctx, trace.Limits{}, sources)
	require.NoError(t, err)
	for n, it := range items {
		prog := progs[n]
		res, err := batch.Run(ctx, prog, it.call)
		require.NoError(t, err, "item %d", n)
		if res.Truncated {
			continue
		}
		tr, err := statetree.Build(prog, res.Events)
		require.NoError(t, err, "item %d", n)
		p, err := Compile(v, prog, analyses[n])
		require.NoError(t, err)

		lines := map[int]bool{}
		for i := 0; i < tr.End(); i++ {
			if tr.Event(i).Kind == dsl.Line {
				lines[tr.Event(i).Line] = true
			}
		}
		var bps []int
		for l := range lines {
			bps = append(bps, l)
		}
		for i := 0; i < tr.End(); i++ {
			actions := []dsl.Action{{Kind: dsl.StepInto}, {Kind: dsl.StepOver}, {Kind: dsl.StepReturn},
				{Kind: dsl.InvStepInto}, {Kind: dsl.InvStepOver}, {Kind: dsl.InvStepReturn}, {Kind: dsl.Continue}}
			if len(bps) > 0 {
				l := bps[i%len(bps)]
				actions = append(actions, dsl.Action{Kind: dsl.Breakpoint, Lines: []int{l}},
					dsl.Action{Kind: dsl.InvBreakpoint, Lines: []int{l}},
					dsl.Action{Kind: dsl.Continue, Lines: bps[:min(2, len(bps))]},
					dsl.Action{Kind: dsl.InvContinue, Lines: bps[:min(2, len(bps))]})
			}
			state := func(i int) dsl.State {
				s := tr.State(i)
				s.Source = prog.Text(s.Line) // frames quote the entry's def line without its marker
				return s
			}
			start := state(i)
			for _, a := range actions {
				next, err := tr.Apply(i, a)
				if err != nil {
					continue // nowhere to go (before the start, after the end)
				}
				traj := &dsl.Trajectory{Program: prog, Start: start}
				prompt, err := traj.EncodePrompt(a)
				require.NoError(t, err)
				step := dsl.Step{Action: a}
				if next < tr.End() {
					s := state(next)
					step.State = &s
				}
				traj.Steps = []dsl.Step{step}
				full, err := traj.Encode()
				require.NoError(t, err)
				frame := strings.TrimPrefix(full, prompt)
				if step.State != nil {
					frame = strings.TrimSuffix(frame, dsl.EndOfText)
				}
				m, err := p.Start(Context{Action: a, From: start, Stack: stackAt(tr, i),
					Dots: dotsOf(&dsl.Trajectory{Program: prog, Start: start})})
				require.NoError(t, err)
				stuck := feed(m, frame, special)
				require.Equal(t, -1, stuck, "item %d state %d action %v: true frame rejected at token %d:\n%q", n, i, a, stuck, frame)
				require.True(t, m.Done(), "item %d state %d action %v: frame not complete", n, i, a)
				checked++
			}
		}
	}
	t.Logf("%d true transitions accepted, %d programs", checked, len(items))
}

// dotsOf gives the names the ".." rule may write at each line after traj.
func dotsOf(traj *dsl.Trajectory) func(int) []string {
	return func(l int) []string {
		var names []string
		if r := traj.Reference(l); r != nil {
			for _, loc := range r.Locals {
				names = append(names, loc.Name)
			}
		}
		return names
	}
}
