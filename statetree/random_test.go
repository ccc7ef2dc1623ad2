package statetree

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/trace"
)

// randomTrace makes a well-nested random trace over lines 1..lines, cut at
// a random point half of the time (as trace.Run's event cap does).
func randomTrace(rng *rand.Rand, lines int) []trace.Event {
	type fr struct{ id, depth int }
	stack := []fr{{1, 0}}
	nextID := 2
	line := func() int { return 1 + rng.IntN(lines) }
	ev := []trace.Event{{Kind: dsl.Call, Line: line(), Depth: 0, Frame: 1}}
	maxLen := 5 + rng.IntN(120)
	for len(ev) < maxLen {
		prev := ev[len(ev)-1]
		if prev.Kind == dsl.Return {
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				break
			}
			if rng.IntN(4) == 0 { // a sibling call from the same line
				f := fr{nextID, prev.Depth}
				nextID++
				stack = append(stack, f)
				ev = append(ev, trace.Event{Kind: dsl.Call, Line: line(), Depth: f.depth, Frame: f.id})
				continue
			}
		}
		top := stack[len(stack)-1]
		var k dsl.Event
		switch x := rng.IntN(10); {
		case prev.Kind == dsl.Exception && x < 5:
			k = dsl.Line // caught
		case prev.Kind == dsl.Exception:
			k = dsl.Return // propagates
		case x < 4:
			k = dsl.Line
		case x < 6 && len(stack) < 6:
			k = dsl.Call
		case x < 7:
			k = dsl.Exception
		default:
			k = dsl.Return
		}
		if k == dsl.Call {
			f := fr{nextID, top.depth + 1}
			nextID++
			stack = append(stack, f)
			ev = append(ev, trace.Event{Kind: k, Line: line(), Depth: f.depth, Frame: f.id})
			continue
		}
		ev = append(ev, trace.Event{Kind: k, Line: line(), Depth: top.depth, Frame: top.id})
	}
	if rng.IntN(2) == 0 {
		ev = ev[:1+rng.IntN(len(ev))]
	}
	return ev
}

// naiveApply is Apply written straight from the package documentation,
// one linear scan per action: the independent reference.
func naiveApply(ev []trace.Event, pos int, a dsl.Action) int {
	n := len(ev)
	at := func(j int) bool {
		for _, l := range a.Lines {
			if ev[j].Kind == dsl.Line && ev[j].Line == l {
				return true
			}
		}
		return false
	}
	switch a.Kind {
	case dsl.StepInto:
		return pos + 1
	case dsl.StepOver:
		for j := pos + 1; j < n; j++ {
			if ev[j].Depth <= ev[pos].Depth {
				return j
			}
		}
		return n
	case dsl.StepReturn:
		for j := pos + 1; j < n; j++ {
			if ev[pos].Kind == dsl.Return && ev[j].Depth < ev[pos].Depth ||
				ev[pos].Kind != dsl.Return && ev[j].Kind == dsl.Return && ev[j].Depth == ev[pos].Depth {
				return j
			}
		}
		return n
	case dsl.Breakpoint, dsl.Continue:
		for j := pos + 1; j < n; j++ {
			if at(j) {
				return j
			}
		}
		return n
	case dsl.InvStepInto:
		return pos - 1
	case dsl.InvStepOver:
		d := 0
		if pos < n {
			d = ev[pos].Depth
		}
		for j := pos - 1; j >= 0; j-- {
			if ev[j].Depth <= d {
				return j
			}
		}
		return 0
	case dsl.InvStepReturn:
		if pos == n {
			return 0
		}
		for j := pos; j >= 0; j-- {
			if ev[pos].Kind == dsl.Call && j < pos && ev[j].Kind == dsl.Call && ev[j].Depth == ev[pos].Depth-1 ||
				ev[pos].Kind != dsl.Call && ev[j].Kind == dsl.Call && ev[j].Depth == ev[pos].Depth {
				return j
			}
		}
		return 0
	case dsl.InvBreakpoint, dsl.InvContinue:
		for j := pos - 1; j >= 0; j-- {
			if at(j) {
				return j
			}
		}
		return 0
	}
	panic("unknown action")
}

// TestApplyMatchesNaive compares Apply's precomputed transitions with the
// naive reference on random (also truncated) traces, for every position and
// action.
func TestApplyMatchesNaive(t *testing.T) {
	const lines = 8
	var src strings.Builder
	src.WriteString("def f():\n")
	for i := 2; i <= lines; i++ {
		fmt.Fprintf(&src, "    a%d = %d\n", i, i)
	}
	prog, err := dsl.NewProgram(src.String(), "f")
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(11, 12))
	for it := 0; it < 400; it++ {
		ev := randomTrace(rng, lines)
		tr, err := Build(prog, ev)
		require.NoError(t, err)
		n := tr.End()
		var acts []dsl.Action
		for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
			switch k {
			case dsl.Breakpoint, dsl.InvBreakpoint:
				for l := 1; l <= lines; l++ {
					acts = append(acts, dsl.Action{Kind: k, Lines: []int{l}})
				}
			case dsl.Continue, dsl.InvContinue:
				acts = append(acts, dsl.Action{Kind: k}, dsl.Action{Kind: k, Lines: []int{2, 5}}, dsl.Action{Kind: k, Lines: []int{7, 3, 1}})
			default:
				acts = append(acts, dsl.Action{Kind: k})
			}
		}
		for pos := 0; pos <= n; pos++ {
			for _, a := range acts {
				got, err := tr.Apply(pos, a)
				if a.Kind.Inverse() && pos == 0 || !a.Kind.Inverse() && pos == n {
					require.Error(t, err)
					continue
				}
				require.NoError(t, err)
				require.Equal(t, naiveApply(ev[:n], pos, a), got, "trace %d (%d events) pos %d %s", it, n, pos, a)
			}
		}
	}
}

// FuzzBuildApply: Build never panics on arbitrary events, and on a tree it
// accepts every action from every position stays within [0, End].
func FuzzBuildApply(f *testing.F) {
	f.Add([]byte{1, 1, 0, 2, 1, 0, 1, 2, 1, 1, 4, 3, 1, 2, 0, 4})
	f.Add([]byte{1, 4, 0, 2, 5, 0, 1, 1, 1, 2, 2, 1, 3, 2, 1, 2, 6, 0, 3, 7, 0})
	prog, err := dsl.NewProgram("def f():\n    a = 1\n    b = 2\n    c = 3\n", "f")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev []trace.Event
		frames := []int{1}
		for i := 0; i+2 < len(data) && len(ev) < 200; i += 3 {
			d := int(data[i+2] % 6)
			for len(frames) <= d {
				frames = append(frames, len(frames)+1)
			}
			ev = append(ev, trace.Event{Kind: dsl.Event(data[i] % 6), Line: int(data[i+1] % 6), Depth: d, Frame: frames[d]})
		}
		tr, err := Build(prog, ev)
		if err != nil {
			return
		}
		n := tr.End()
		for pos := 0; pos <= n; pos++ {
			for k := dsl.ActionKind(1); k <= dsl.InvContinue; k++ {
				a := dsl.Action{Kind: k}
				if k == dsl.Breakpoint || k == dsl.InvBreakpoint {
					a.Lines = []int{2}
				}
				next, err := tr.Apply(pos, a)
				if err == nil {
					require.GreaterOrEqual(t, next, 0)
					require.LessOrEqual(t, next, n)
					require.NotEqual(t, pos, next)
				}
			}
		}
	})
}
