package dsl

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stmtPool holds statements for random programs; repeats are likely, so
// line naming is exercised, and some open strings or continue lines.
var stmtPool = []string{
	"x = 1", "x = 1", "y = x + 1", "return x", "s = 'a\\'b'", "t = \"\"\"", "u = (1 +",
	"pass", "z = x \\", "# a comment", "", "w = [i for i in range(3)]", "v = {'k': '<|x|>'}",
	"n += 1", "print('é😀')",
}

// randProgram builds a random program with functions and an entry f.
func randProgram(r *rand.Rand) *Program {
	for {
		var b strings.Builder
		nf := 1 + r.IntN(3)
		for fi := range nf {
			name := "f"
			if fi < nf-1 {
				name = "g" + string(rune('a'+fi))
			}
			b.WriteString("def " + name + "(a, b=2):\n")
			for range 1 + r.IntN(8) {
				indent := strings.Repeat("    ", 1+r.IntN(2))
				st := stmtPool[r.IntN(len(stmtPool))]
				b.WriteString(indent + st + "\n")
				switch {
				case strings.HasSuffix(st, `"""`):
					b.WriteString(indent + "text\n" + indent + "\"\"\"\n")
				case strings.HasSuffix(st, "("):
					b.WriteString(indent + "    2)\n")
				case strings.HasSuffix(st, "\\"):
					b.WriteString(indent + "    + 1\n")
				}
			}
			b.WriteString("\n")
		}
		if r.IntN(3) == 0 {
			b.WriteString("x = 1\nx = 1\n")
		}
		p, err := NewProgram(b.String(), "f")
		if err == nil {
			return p
		}
	}
}

// gen draws random trajectories over a program: random nameable lines,
// locals whose names and reprs repeat often (so ".." is common) or are
// awkward strings, every action kind, sometimes an end.
type gen struct {
	r     *rand.Rand
	p     *Program
	lines []int // nameable lines
	plain bool  // typical reprs only (benchmarks)
}

func newGen(r *rand.Rand, p *Program) *gen {
	g := &gen{r: r, p: p}
	for n := range len(p.Lines) {
		if p.Nameable(n + 1) {
			g.lines = append(g.lines, n+1)
		}
	}
	return g
}

func (g *gen) line() int { return g.lines[g.r.IntN(len(g.lines))] }

// plainReprs are typical small reprs of CRUXEval-style programs.
var plainReprs = []string{"0", "1", "42", "-7", "True", "None", "'abc'", "'hello world'", "[]",
	"[1, 2, 3]", "['a', 'b']", "{'k': 1}", "(4, 1)", "3.5", "'x'", "[(4, 1), (2, 3)]", "''"}

func (g *gen) repr() string {
	if g.plain {
		return plainReprs[g.r.IntN(len(plainReprs))]
	}
	switch g.r.IntN(4) {
	case 0:
		return []string{"0", "1", "'a'", "[]", "None"}[g.r.IntN(5)]
	case 1:
		return TruncateRepr(strings.Repeat("€x", g.r.IntN(200)))
	default:
		return TruncateRepr(randString(g.r, 12))
	}
}

func (g *gen) state(first bool) *State {
	s := &State{Event: Event(1 + g.r.IntN(4)), Line: g.line()}
	s.Source = g.p.Text(s.Line)
	if s.Event == Return || s.Event == Exception {
		s.Value = g.repr()
		return s
	}
	seen := map[string]bool{}
	for range g.r.IntN(6) {
		name := []string{"a", "b", "x", "y", ".0"}[g.r.IntN(5)]
		if g.r.IntN(4) == 0 && !g.plain {
			name = randString(g.r, 5)
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		repr := g.repr()
		if g.r.IntN(8) == 0 {
			repr = Dots // a literal "..": escaped where the ".." rule applies
		}
		s.Locals = append(s.Locals, Local{name, repr})
	}
	return s
}

func (g *gen) action() Action {
	a := Action{Kind: ActionKind(1 + g.r.IntN(10))}
	switch a.Kind {
	case Breakpoint, InvBreakpoint:
		a.Lines = []int{g.line()}
	case Continue, InvContinue:
		for range g.r.IntN(4) {
			n := g.line()
			dup := false
			for _, m := range a.Lines {
				dup = dup || m == n
			}
			if !dup {
				a.Lines = append(a.Lines, n)
			}
		}
	}
	return a
}

func (g *gen) trajectory() *Trajectory {
	t := &Trajectory{Program: g.p, Start: *g.state(true)}
	n := g.r.IntN(12)
	for i := range n {
		st := Step{Action: g.action()}
		if i < n-1 || g.r.IntN(3) > 0 {
			st.State = g.state(false)
		}
		t.Steps = append(t.Steps, st)
	}
	return t
}

// TestRoundTripRandom: Parse(Encode(t)) == t and Encode(Parse(x)) == x on
// random trajectories; every prefix's prompt and next frame agree with the
// whole text.
func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	dots, total := 0, 0
	for range 1500 {
		g := newGen(r, randProgram(r))
		tr := g.trajectory()
		text, err := tr.Encode()
		require.NoError(t, err)
		back, err := Parse(text)
		require.NoError(t, err, "%q", text)
		require.Equal(t, tr, back)
		again, err := back.Encode()
		require.NoError(t, err)
		require.Equal(t, text, again)
		text2, spans, err := tr.EncodeSpans()
		require.NoError(t, err)
		require.Equal(t, text, text2)
		require.Len(t, spans, len(tr.Steps))
		for k, sp := range spans {
			frame := text[sp.Start:sp.End]
			if tr.Steps[k].State == nil {
				require.Equal(t, EndOfText, frame)
			} else {
				require.True(t, strings.HasPrefix(frame, tr.Steps[k].State.Event.Token()) && strings.HasSuffix(frame, FrameSep))
			}
		}
		dots += strings.Count(text, `": ".."`)
		total += strings.Count(text, `": "`)

		k := r.IntN(len(tr.Steps) + 1)
		if k < len(tr.Steps) {
			prefix := &Trajectory{Program: tr.Program, Start: tr.Start, Steps: tr.Steps[:k]}
			prompt, err := prefix.EncodePrompt(tr.Steps[k].Action)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(text, prompt))
			rest := text[len(prompt):]
			if st := tr.Steps[k].State; st != nil {
				rest = rest[:strings.Index(rest, FrameSep)+len(FrameSep)]
			}
			got, err := prefix.ParseFrame(rest)
			require.NoError(t, err)
			require.Equal(t, tr.Steps[k].State, got)
		}
	}
	require.Greater(t, dots, total/20, "the .. rule is exercised")
}

// corpusTrajectory turns fuzz input into a trajectory deterministically.
func corpusTrajectory(seed1, seed2 uint64) *Trajectory {
	r := rand.New(rand.NewPCG(seed1, seed2))
	return newGen(r, randProgram(r)).trajectory()
}

// FuzzRoundTrip: random trajectories from fuzzed seeds encode, parse back
// equal, and re-encode to the same text.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(99), uint64(0))
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		tr := corpusTrajectory(s1, s2)
		text, err := tr.Encode()
		require.NoError(t, err)
		back, err := Parse(text)
		require.NoError(t, err)
		require.Equal(t, tr, back)
	})
}

// FuzzParse: arbitrary input never panics, and text that parses encodes
// back to itself byte for byte.
func FuzzParse(f *testing.F) {
	f.Add(exampleText)
	for i := range 8 {
		text, err := corpusTrajectory(uint64(i), 3).Encode()
		if err == nil {
			f.Add(text)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		tr, err := Parse(text)
		if err != nil {
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.True(t, pe.Offset >= 0 && pe.Offset <= len(text), "offset %d of %d", pe.Offset, len(text))
			return
		}
		again, err := tr.Encode()
		require.NoError(t, err)
		require.Equal(t, text, again)
	})
}

// FuzzParseFrame: a model's output after a prompt never panics the frame
// parser, and a frame it accepts is what Encode writes for that state.
func FuzzParseFrame(f *testing.F) {
	f.Add(`<|line_sep|>{"n": ".."}<|action_sep|>    total = 0` + "\n<|frame_sep|>")
	f.Add(`<|return_sep|><|action_sep|>    return a + b` + "\n<|arg_sep|>\"0\\u00e9\"<|frame_sep|>")
	f.Add(EndOfText)
	f.Fuzz(func(t *testing.T, out string) {
		tr := exampleTrajectory(t)
		tr.Steps = tr.Steps[:1]
		next := Action{Kind: StepOver}
		s, err := tr.ParseFrame(out)
		if err != nil {
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			return
		}
		prompt, err := tr.EncodePrompt(next)
		require.NoError(t, err)
		tr.Steps = append(tr.Steps, Step{next, s})
		text, err := tr.Encode()
		require.NoError(t, err)
		if s != nil {
			text = strings.TrimSuffix(text, EndOfText)
		}
		require.Equal(t, prompt+out, text)
	})
}
