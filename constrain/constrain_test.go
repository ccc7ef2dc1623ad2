package constrain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/trace"
)

const sampleSource = `def helper(z, k):
    return z + k

def f(xs, k=2):
    ys = [x * k for x in xs if x]
    total = 0
    for y in ys:
        total += helper(y, k)
    return total
`

// byteVocab is a vocabulary of the 256 single bytes plus the DSL's special
// tokens: every text has exactly one tokenization, which makes it easy to
// feed frames through the matcher.
func byteVocab(t testing.TB) (*Vocab, map[string]int) {
	tokens := make([][]byte, 256)
	for i := range tokens {
		tokens[i] = []byte{byte(i)}
	}
	special := map[string]int{}
	for _, s := range dsl.SpecialTokens() {
		special[s.Text] = len(tokens)
		tokens = append(tokens, []byte(s.Text))
	}
	v, err := NewVocab(tokens, special)
	require.NoError(t, err)
	return v, special
}

// tokenize splits DSL text into special tokens and single bytes.
func tokenize(text string, special map[string]int) []int {
	var ids []int
	for len(text) > 0 {
		matched := false
		if text[0] == '<' {
			for s, id := range special {
				if strings.HasPrefix(text, s) {
					ids = append(ids, id)
					text = text[len(s):]
					matched = true
					break
				}
			}
		}
		if !matched {
			ids = append(ids, int(text[0]))
			text = text[1:]
		}
	}
	return ids
}

func compileSample(t testing.TB, v *Vocab) *Program {
	prog, err := dsl.NewProgram(sampleSource, "f")
	require.NoError(t, err)
	codes, err := Analyze(context.Background(), trace.Limits{}, prog.Source)
	require.NoError(t, err)
	p, err := Compile(v, prog, codes)
	require.NoError(t, err)
	return p
}

// feed accepts every token of text and reports how many were accepted.
func feed(m *Matcher, text string, special map[string]int) int {
	for i, id := range tokenize(text, special) {
		if !m.Accept(id) {
			return i
		}
	}
	return -1
}

func TestFramesAcceptedAndRejected(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	src := p.src
	line := func(n int) string { return src.Text(n) + "\n" }
	from := dsl.State{Event: dsl.Line, Line: 6, Source: src.Lines[5], Locals: []dsl.Local{{Name: "xs", Repr: "[1, 2]"}, {Name: "k", Repr: "2"}, {Name: "ys", Repr: "[2, 4]"}}}
	dots := func(l int) []string {
		if src.FuncOf(l) == src.FuncOf(6) {
			return []string{"xs", "k", "ys"}
		}
		return nil
	}
	cases := []struct {
		name   string
		action dsl.Action
		frame  string
		ok     bool
	}{
		{"line in f", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "..", "k": "..", "ys": "..", "total": "0"}<|action_sep|>` + line(7) + `<|frame_sep|>`, true},
		{"empty locals", dsl.Action{Kind: dsl.StepInto}, `<|line_sep|>{}<|action_sep|>` + line(7) + `<|frame_sep|>`, true},
		{"return with value", dsl.Action{Kind: dsl.StepReturn}, `<|return_sep|><|action_sep|>` + line(9) + `<|arg_sep|>"12"<|frame_sep|>`, true},
		{"call of helper", dsl.Action{Kind: dsl.StepInto}, `<|call_sep|>{"z": "2", "k": "2"}<|action_sep|>` + line(1) + `<|frame_sep|>`, true},
		{"end", dsl.Action{Kind: dsl.Continue}, `<|end_of_text|>`, true},
		{"escapes", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "['\u00e9\t', \"'\", '\ud83d\ude00\\n']"}<|action_sep|>` + line(7) + `<|frame_sep|>`, true},
		{"breakpoint line", dsl.Action{Kind: dsl.Breakpoint, Lines: []int{8}}, `<|line_sep|>{"y": "2"}<|action_sep|>` + line(8) + `<|frame_sep|>`, true},

		{"line not in program", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{}<|action_sep|>    total = 1` + "\n", false},
		{"name not in scope", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"zz": "1"}`, false},
		{"helper name in f's line", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "1", "z": "1"}`, false},
		{"names of two scopes", dsl.Action{Kind: dsl.StepInto}, `<|line_sep|>{"xs": "1", "z"`, false},
		{"duplicate name", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "1", "xs"`, false},
		{"dots without reference", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"total": ".."`, false},
		{"step_over leaves f for helper", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{}<|action_sep|>` + line(2), false},
		{"breakpoint elsewhere", dsl.Action{Kind: dsl.Breakpoint, Lines: []int{8}}, `<|line_sep|>{}<|action_sep|>` + line(7), false},
		{"end on inverse", dsl.Action{Kind: dsl.InvStepInto}, `<|end_of_text|>`, false},
		{"non-canonical escape", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "\u0041`, false},
		{"uppercase hex", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "\u00E9`, false},
		{"lone low surrogate", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "\udc00`, false},
		{"raw newline in string", dsl.Action{Kind: dsl.StepOver}, "<|line_sep|>{\"xs\": \"a\n", false},
		{"special token text in string", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "<|`, false},
		{"empty repr", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": ""`, false},
		{"newline in a repr", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "'a\n`, false},
		{"unterminated repr string", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "ikacc '"`, false},
		{"source line in a value", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "..    for`, false},
		{"dots as a return value", dsl.Action{Kind: dsl.StepReturn}, `<|return_sep|><|action_sep|>` + line(9) + `<|arg_sep|>".."`, false},
		{"unbalanced", dsl.Action{Kind: dsl.StepOver}, `<|line_sep|>{"xs": "[1, (2]`, false},
		{"locals on return", dsl.Action{Kind: dsl.StepReturn}, `<|return_sep|>{`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := p.Start(Context{Action: c.action, From: from, Stack: []int{4}, Dots: dots})
			require.NoError(t, err)
			stuck := feed(m, c.frame, special)
			if c.ok {
				require.Equal(t, -1, stuck, "rejected at token %d", stuck)
				require.True(t, m.Done())
			} else {
				require.NotEqual(t, -1, stuck, "accepted")
			}
		})
	}
}

func TestMaskAgreesWithAllowed(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	from := dsl.State{Event: dsl.Line, Line: 6}
	frame := `<|line_sep|>{"xs": "[1, 2]", "k": "2"}<|action_sep|>` + p.src.Text(7) + "\n<|frame_sep|>"
	m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.StepInto}, From: from})
	require.NoError(t, err)
	mask := make([]uint64, (v.Size()+63)/64)
	for _, id := range tokenize(frame, special) {
		m.FillMask(mask)
		for tok := 0; tok < v.Size(); tok++ {
			require.Equal(t, m.Allowed(tok), mask[tok>>6]>>(tok&63)&1 == 1, "token %d at position %d", tok, m.Accepted())
		}
		require.True(t, m.Accept(id))
	}
	require.True(t, m.Done())
}

// TestRandomDecodingAlwaysCompletes decodes frames from random and
// adversarial choices under the mask: decoding never gets stuck.
func TestRandomDecodingAlwaysCompletes(t *testing.T) {
	v, _ := byteVocab(t)
	p := compileSample(t, v)
	rng := rand.New(rand.NewPCG(1, 2))
	mask := make([]uint64, (v.Size()+63)/64)
	actions := []dsl.Action{{Kind: dsl.StepInto}, {Kind: dsl.StepOver}, {Kind: dsl.StepReturn}, {Kind: dsl.InvStepReturn},
		{Kind: dsl.Breakpoint, Lines: []int{8}}, {Kind: dsl.InvContinue, Lines: []int{7, 8}}}
	for trial := 0; trial < 300; trial++ {
		m, err := p.Start(Context{Action: actions[trial%len(actions)], From: dsl.State{Event: dsl.Line, Line: 7}})
		require.NoError(t, err)
		for steps := 0; !m.Done(); steps++ {
			require.Less(t, steps, 2000, "frame never ends")
			m.FillMask(mask)
			var allowed []int
			for tok := 0; tok < v.Size(); tok++ {
				if mask[tok>>6]>>(tok&63)&1 == 1 {
					allowed = append(allowed, tok)
				}
			}
			require.NotEmpty(t, allowed, "dead end after %d tokens in state %+v", m.Accepted(), m.st)
			// A forced special is the only token allowed; ForcedSpecial is
			// Forced's special.
			_, sp := m.Forced()
			require.Equal(t, sp, m.ForcedSpecial())
			if sp >= 0 {
				require.Equal(t, []int{sp}, allowed)
			}
			require.True(t, m.Accept(allowed[rng.IntN(len(allowed))]))
		}
	}
}

func TestForcedJumpsForward(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.Breakpoint, Lines: []int{8}}, From: dsl.State{Event: dsl.Line, Line: 7}})
	require.NoError(t, err)
	text, sp := m.Forced()
	require.Empty(t, text)
	require.Equal(t, -1, sp, "a line frame or the end: a choice")
	require.True(t, m.Accept(special[dsl.LineSep]))
	text, sp = m.Forced()
	require.Equal(t, "{", string(text))
	require.Equal(t, -1, sp)
	require.Equal(t, -1, feed(m, `{"y": "2"}`, special))
	text, sp = m.Forced()
	require.Empty(t, text)
	require.Equal(t, special[dsl.ActionSep], sp)
	require.True(t, m.Accept(sp))
	text, sp = m.Forced()
	require.Equal(t, p.src.Text(8)+"\n", string(text), "the breakpoint's line is forced whole")
	require.Equal(t, -1, feed(m, string(text), special))
	_, sp = m.Forced()
	require.Equal(t, special[dsl.FrameSep], sp)
	require.True(t, m.Accept(sp))
	require.True(t, m.Done())

	m.Rollback(2)
	require.False(t, m.Done())
	f := m.Fork()
	require.True(t, f.Accept(int('\n')))
	require.False(t, m.Allowed(special[dsl.FrameSep]), "the fork does not move the original")
}

// TestAnalyzeInSandbox: the program's text is compiled in the tracer's
// sandbox, so where the sandbox cannot start Analyze refuses, unless the
// user asked for no sandbox; a program too deep to compile is an error, not
// a crash, and module code never runs.
func TestAnalyzeInSandbox(t *testing.T) {
	py, err := trace.FindPython(context.Background())
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	_, err = Analyze(context.Background(), trace.Limits{Python: py}, "def f():\n    return "+strings.Repeat("1+", 200000)+"1\n")
	require.ErrorContains(t, err, "does not compile")
	codes, err := Analyze(context.Background(), trace.Limits{Python: py}, "import os\nos._exit(3)\ndef f():\n    return 1\n")
	require.NoError(t, err)
	require.Len(t, codes, 1)

	t.Setenv("PATH", t.TempDir()) // no bwrap
	_, err = Analyze(context.Background(), trace.Limits{Python: py}, "def f():\n    return 1\n")
	require.ErrorIs(t, err, trace.ErrSandbox)
	codes, err = Analyze(context.Background(), trace.Limits{Python: py, Unsandboxed: true}, "def f():\n    return 1\n")
	require.NoError(t, err)
	require.Len(t, codes, 1)
}

// TestTooManyNamesSaysTheLimit: a program with more distinct local names
// than the grammar tracks is refused with the limit and where it is
// documented, not a bare "more than 256 local names".
func TestTooManyNamesSaysTheLimit(t *testing.T) {
	vocab, _ := byteVocab(t)
	var b strings.Builder
	b.WriteString("def f(x):\n")
	var names []string
	for i := range maxNames + 1 {
		fmt.Fprintf(&b, "    v%d = %d\n", i, i)
		names = append(names, fmt.Sprintf("v%d", i))
	}
	b.WriteString("    return x\n")
	prog, err := dsl.NewProgram(b.String(), "f")
	require.NoError(t, err)
	_, err = Compile(vocab, prog, []Code{{Name: "f", Names: append([]string{"x"}, names...), Lines: []int{2}}})
	require.ErrorContains(t, err, "the program has more than 256 distinct local names (over all its functions)")
	require.ErrorContains(t, err, "README.md, Limits")
	_, err = Compile(vocab, prog, []Code{{Name: "f", Names: append([]string{"x"}, names[:maxNames-1]...), Lines: []int{2}}})
	require.NoError(t, err, "256 names are fine")
}
