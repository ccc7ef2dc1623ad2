package dsl

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exampleSource is the worked example of docs/dsl.md.
const exampleSource = `def add(a, b):
    return a + b

def f(n):
    total = 0
    for i in range(n):
        total = add(total, i)
        total = add(total, i)
    return total
`

// exampleText is its trajectory text; the states are those of CPython
// 3.11's sys.settrace for f(2).
const exampleText = "<|begin_of_text|><|trace_context_start|>" +
	"def add(a, b):\n    return a + b\n\ndef f(n):  # << START_OF_TRACE\n    total = 0\n" +
	"    for i in range(n):\n        total = add(total, i)\n        total = add(total, i)  # (2)\n" +
	"    return total\n<|frame_sep|>" +
	`<|call_sep|>{"n": "2"}<|action_sep|>def f(n):` + "\n<|frame_sep|>" +
	`<|step_over|><|line_sep|>{"n": ".."}<|action_sep|>    total = 0` + "\n<|frame_sep|>" +
	"<|breakpoint|>    return a + b\n" +
	`<|line_sep|>{"a": "0", "b": "0"}<|action_sep|>    return a + b` + "\n<|frame_sep|>" +
	"<|step_return|><|return_sep|><|action_sep|>    return a + b\n<|arg_sep|>\"0\"<|frame_sep|>" +
	`<|step_into|><|line_sep|>{"n": "..", "total": "0", "i": "0"}<|action_sep|>        total = add(total, i)  # (2)` + "\n<|frame_sep|>" +
	"<|continue|>    return total\n" +
	`<|line_sep|>{"n": "..", "total": "2", "i": "1"}<|action_sep|>    return total` + "\n<|frame_sep|>" +
	`<|inv_step_over|><|line_sep|>{"n": "..", "total": "..", "i": ".."}<|action_sep|>    for i in range(n):` + "\n<|frame_sep|>" +
	"<|step_return|><|return_sep|><|action_sep|>    return total\n<|arg_sep|>\"2\"<|frame_sep|>" +
	"<|step_into|><|end_of_text|>"

func exampleTrajectory(t *testing.T) *Trajectory {
	p, err := NewProgram(exampleSource, "f")
	require.NoError(t, err)
	st := func(e Event, line int, value string, kv ...string) *State {
		s := &State{Event: e, Line: line, Source: p.Text(line), Value: value}
		for i := 0; i < len(kv); i += 2 {
			s.Locals = append(s.Locals, Local{kv[i], kv[i+1]})
		}
		return s
	}
	return &Trajectory{
		Program: p,
		Start:   *st(Call, 4, "", "n", "2"),
		Steps: []Step{
			{Action{Kind: StepOver}, st(Line, 5, "", "n", "2")},
			{Action{Kind: Breakpoint, Lines: []int{2}}, st(Line, 2, "", "a", "0", "b", "0")},
			{Action{Kind: StepReturn}, st(Return, 2, "0")},
			{Action{Kind: StepInto}, st(Line, 8, "", "n", "2", "total", "0", "i", "0")},
			{Action{Kind: Continue, Lines: []int{9}}, st(Line, 9, "", "n", "2", "total", "2", "i", "1")},
			{Action{Kind: InvStepOver}, st(Line, 6, "", "n", "2", "total", "2", "i", "1")},
			{Action{Kind: StepReturn}, st(Return, 9, "2")},
			{Action{Kind: StepInto}, nil},
		},
	}
}

func TestWorkedExample(t *testing.T) {
	tr := exampleTrajectory(t)
	text, err := tr.Encode()
	require.NoError(t, err)
	require.Equal(t, exampleText, text)
	back, err := Parse(text)
	require.NoError(t, err)
	require.Equal(t, tr, back)

	// Source may also be empty or the marked line as the tracer reads it.
	tr.Start.Source = tr.Program.Lines[3]
	tr.Steps[0].State.Source = ""
	again, err := tr.Encode()
	require.NoError(t, err)
	require.Equal(t, text, again)
}

func TestSpecialTokens(t *testing.T) {
	toks := SpecialTokens()
	require.Len(t, toks, 20)
	want := map[string]int{
		"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|frame_sep|>": 128100,
		"<|action_sep|>": 128101, "<|return_sep|>": 128102, "<|call_sep|>": 128103,
		"<|line_sep|>": 128104, "<|exception_sep|>": 128105, "<|arg_sep|>": 128106,
		"<|trace_context_start|>": 128107,
	}
	for k := StepInto; k <= InvContinue; k++ {
		want["<|"+k.String()+"|>"] = 128108 + int(k-StepInto)
		require.Equal(t, "<|"+k.String()+"|>", k.Token())
	}
	got := map[string]int{}
	for _, tk := range toks {
		got[tk.Text] = tk.ID
		require.Equal(t, lookupToken(tk.Text), tokenAt(tk.Text, 0))
	}
	require.Equal(t, want, got)
	require.Equal(t, "<|begin_of_text|>", toks[0].Text)
	require.Equal(t, "<|inv_continue|>", toks[19].Text)
	toks[0].Text = "changed"
	require.Equal(t, BeginOfText, SpecialTokens()[0].Text, "a fresh copy")
	require.Equal(t, "", ActionKind(0).Token())
	require.Equal(t, "", Event(9).Token())
}

// TestDotsRule checks the reference frame across functions and after
// returns: ".." compares with the last call or line frame of the same
// function, whatever came between.
func TestDotsRule(t *testing.T) {
	tr := exampleTrajectory(t)
	require.Equal(t, 6, tr.Reference(4).Line, "the last call or line frame in f")
	require.Nil(t, (&Trajectory{Program: tr.Program, Start: tr.Start}).Reference(2))
	require.Equal(t, 2, tr.Reference(2).Line)
	require.Equal(t, 6, tr.Reference(9).Line)
	refs := tr.References()
	require.Len(t, refs, 2)
	require.Equal(t, 6, refs[4].Line)
	require.Equal(t, 2, refs[1].Line)

	// A call frame always shows full values, even equal ones.
	tr2 := &Trajectory{Program: tr.Program, Start: *tr.Steps[0].State, Steps: []Step{
		{Action{Kind: StepInto}, &State{Event: Call, Line: 4, Locals: []Local{{"n", "2"}}}},
		{Action{Kind: StepInto}, &State{Event: Line, Line: 5, Locals: []Local{{"n", "2"}, {"m", ".."}}}},
	}}
	// A repr that is literally ".." is escaped in a line frame, where ".."
	// is the marker (it failed to encode), and plain elsewhere.
	text, err := tr2.Encode()
	require.NoError(t, err)
	require.Contains(t, text, `<|line_sep|>{"n": "..", "m": "\u002e\u002e"}`)
	back, err := Parse(text)
	require.NoError(t, err)
	require.Equal(t, tr2.Steps[1].State.Locals, back.Steps[1].State.Locals)
	tr2.Steps[0].State.Locals = []Local{{"n", "2"}, {"m", ".."}} // now the reference holds it
	text, err = tr2.Encode()
	require.NoError(t, err)
	require.Contains(t, text, `<|call_sep|>{"n": "2", "m": ".."}`)
	require.Contains(t, text, `<|line_sep|>{"n": "..", "m": ".."}`)
	back, err = Parse(text)
	require.NoError(t, err)
	require.Equal(t, tr2.Steps[0].State.Locals, back.Steps[0].State.Locals)
	require.Equal(t, tr2.Steps[1].State.Locals, back.Steps[1].State.Locals)
	_, err = Parse(strings.Replace(text, `"m": ".."}<|action_sep|>`, `"m": "\u002e\u002e"}<|action_sep|>`, 1))
	require.Error(t, err, "not canonical: the value equals the reference's")
	_, err = Parse(strings.Replace(text, `{"n": "2", "m": ".."}`, `{"n": "2", "m": "\u002e\u002e"}`, 1))
	require.Error(t, err, "not canonical: a call frame writes it plainly")

	tr2.Steps[0].State.Locals = tr2.Steps[0].State.Locals[:1]
	tr2.Steps[1].State.Locals = tr2.Steps[1].State.Locals[:1]
	text, err = tr2.Encode()
	require.NoError(t, err)
	require.Contains(t, text, `<|call_sep|>{"n": "2"}`)
	require.Contains(t, text, `<|line_sep|>{"n": ".."}`)
	require.True(t, strings.HasPrefix(text[strings.Index(text, "<|frame_sep|>")+len(FrameSep):], `<|line_sep|>{"n": "2"}`),
		"the first frame shows full values")
}

func TestEncodeErrors(t *testing.T) {
	good := exampleTrajectory(t)
	for name, mutate := range map[string]func(tr *Trajectory){
		"no program":         func(tr *Trajectory) { tr.Program = nil },
		"blank line":         func(tr *Trajectory) { tr.Start.Line = 3 },
		"line out of range":  func(tr *Trajectory) { tr.Start.Line = 10 },
		"wrong source":       func(tr *Trajectory) { tr.Start.Source = "def g(n):" },
		"bad event":          func(tr *Trajectory) { tr.Start.Event = 0 },
		"value on call":      func(tr *Trajectory) { tr.Start.Value = "1" },
		"locals on return":   func(tr *Trajectory) { tr.Steps[2].State.Locals = []Local{{"a", "0"}} },
		"duplicate local":    func(tr *Trajectory) { tr.Start.Locals = []Local{{"n", "1"}, {"n", "2"}} },
		"long repr":          func(tr *Trajectory) { tr.Start.Locals[0].Repr = strings.Repeat("x", MaxRepr+1) },
		"long value":         func(tr *Trajectory) { tr.Steps[2].State.Value = strings.Repeat("x", MaxRepr+1) },
		"invalid utf8":       func(tr *Trajectory) { tr.Start.Locals[0].Repr = "\xff" },
		"special token":      func(tr *Trajectory) { tr.Start.Locals[0].Name = "a<|frame_sep|>" },
		"breakpoint 0 lines": func(tr *Trajectory) { tr.Steps[1].Action.Lines = nil },
		"breakpoint blank":   func(tr *Trajectory) { tr.Steps[1].Action.Lines = []int{3} },
		"lines on step":      func(tr *Trajectory) { tr.Steps[0].Action.Lines = []int{2} },
		"continue repeats":   func(tr *Trajectory) { tr.Steps[4].Action.Lines = []int{9, 9} },
		"bad action":         func(tr *Trajectory) { tr.Steps[0].Action.Kind = 11 },
		"step after end": func(tr *Trajectory) {
			tr.Steps = append(tr.Steps, Step{Action{Kind: StepInto}, tr.Steps[0].State})
		},
	} {
		tr := exampleTrajectory(t)
		mutate(tr)
		_, err := tr.Encode()
		assert.Error(t, err, name)
		_, err = encodeStepwise(tr)
		assert.Error(t, err, "%s, step by step", name)
	}
	_, err := good.Encode()
	require.NoError(t, err)
	_, err = encodeStepwise(good)
	require.NoError(t, err)
}

func TestParseErrors(t *testing.T) {
	at := func(s string) int { return strings.Index(exampleText, s) }
	for _, tc := range []struct {
		name, text string
		off        int
	}{
		{"empty", "", 0},
		{"no begin", exampleText[len(BeginOfText):], 0},
		{"truncated", exampleText[:len(exampleText)-1], at("<|end_of_text|>")},
		{"trailing", exampleText + "x", len(exampleText)},
		{"full value where .. belongs", strings.Replace(exampleText, `{"n": ".."}`, `{"n": "2"}`, 1), at(`"..`)},
		{".. without reference", strings.Replace(exampleText, `{"a": "0"`, `{"a": ".."`, 1), at(`"0", "b"`) - 0},
		{"unknown line", strings.Replace(exampleText, "<|action_sep|>    total = 0", "<|action_sep|>    total = 1", 1), at("    total = 0\n<|frame_sep|>")},
		{"newline between frames", strings.Replace(exampleText, "<|frame_sep|><|step_over|>", "<|frame_sep|>\n<|step_over|>", 1), at("<|step_over|>")},
		{"spacing", strings.Replace(exampleText, `{"n": "2"}`, `{"n":"2"}`, 1), at(`"2"}`) - 2},
		{"duplicate key", strings.Replace(exampleText, `{"a": "0", "b": "0"}`, `{"a": "0", "a": "0"}`, 1), at(`"b": "0"}`)},
		{"missing breakpoint line", strings.Replace(exampleText, "<|breakpoint|>    return a + b\n", "<|breakpoint|>", 1), at("<|breakpoint|>") + len("<|breakpoint|>")},
	} {
		_, err := Parse(tc.text)
		var pe *ParseError
		if assert.True(t, errors.As(err, &pe), "%s: %v", tc.name, err) {
			assert.Equal(t, tc.off, pe.Offset, "%s: %v", tc.name, pe)
			assert.NotEmpty(t, pe.Expected)
			assert.NotEmpty(t, pe.Found)
		}
	}
}

// TestPromptAndFrame checks EncodePrompt and ParseFrame against Encode: the
// text of every trajectory prefix, then its next action, is a prefix of the
// whole text, and the frame after it parses to the next state.
func TestPromptAndFrame(t *testing.T) {
	tr := exampleTrajectory(t)
	full, err := tr.Encode()
	require.NoError(t, err)
	for k, st := range tr.Steps {
		prefix := &Trajectory{Program: tr.Program, Start: tr.Start, Steps: tr.Steps[:k]}
		prompt, err := prefix.EncodePrompt(st.Action)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(full, prompt), "step %d", k)
		rest := full[len(prompt):]
		frame := rest
		if st.State != nil {
			frame = rest[:strings.Index(rest, FrameSep)+len(FrameSep)]
		}
		got, err := prefix.ParseFrame(frame)
		require.NoError(t, err, "step %d: %q", k, frame)
		require.Equal(t, st.State, got, "step %d", k)
	}
	text, spans, err := tr.EncodeSpans()
	require.NoError(t, err)
	require.Equal(t, full, text)
	require.Len(t, spans, len(tr.Steps))
	for k, sp := range spans {
		prefix := &Trajectory{Program: tr.Program, Start: tr.Start, Steps: tr.Steps[:k]}
		got, err := prefix.ParseFrame(text[sp.Start:sp.End])
		require.NoError(t, err)
		require.Equal(t, tr.Steps[k].State, got, "span of step %d", k)
	}
	require.Equal(t, EndOfText, text[spans[len(spans)-1].Start:])

	// A full value where ".." is due: refused, or read leniently.
	prefix := &Trajectory{Program: tr.Program, Start: tr.Start}
	loose := `<|line_sep|>{"n": "2"}<|action_sep|>    total = 0` + "\n<|frame_sep|>"
	_, err = prefix.ParseFrame(loose)
	require.Error(t, err)
	got, err := prefix.ParseFrameLenient(loose)
	require.NoError(t, err)
	require.Equal(t, tr.Steps[0].State, got)

	_, err = tr.EncodePrompt(Action{Kind: StepInto})
	require.Error(t, err, "no prompt after the end")
	_, err = tr.ParseFrame(EndOfText)
	require.Error(t, err, "no frame after the end")
	_, err = tr.ParseFrame(`<|line_sep|>{"n": ".."}<|action_sep|>    total = 0` + "\n")
	require.Error(t, err, "a frame must end with <|frame_sep|>")
}

func TestTruncateRepr(t *testing.T) {
	short := strings.Repeat("a", MaxRepr)
	require.Equal(t, short, TruncateRepr(short))
	long := strings.Repeat("a", 1000)
	got := TruncateRepr(long)
	require.Equal(t, strings.Repeat("a", 240)+"...[+760]", got)
	// Byte 240 inside a 3-byte sequence: cut before it.
	s := strings.Repeat("a", 239) + "€" + strings.Repeat("b", 100)
	got = TruncateRepr(s)
	require.Equal(t, strings.Repeat("a", 239)+"...[+103]", got)
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		s := randString(r, 400)
		got := TruncateRepr(s)
		require.LessOrEqual(t, len(got), MaxRepr)
		require.Equal(t, got, TruncateRepr(got), "idempotent")
		require.True(t, strings.HasPrefix(s, strings.Split(got, "...[+")[0]))
		if len(s) > MaxRepr {
			require.Regexp(t, `\.\.\.\[\+\d+\]$`, got)
		}
	}
}
