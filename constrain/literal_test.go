package constrain

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/oracle"
	"github.com/ndbg/ndbg/trace"
)

// pyLiterals asks CPython which texts ast.literal_eval takes (warnings,
// such as for "\q", aside): the independent reference of the literal
// grammar.
func pyLiterals(t *testing.T, texts []string) []bool {
	t.Helper()
	errs := oracle.LiteralEvalErrors(t, texts)
	ok := make([]bool, len(errs))
	for i, e := range errs {
		ok[i] = e == ""
	}
	return ok
}

// returnValue feeds a return frame of sampleSource's f whose value is v,
// token by token (one byte each), to a literal-constrained matcher. It
// returns the index in v's JSON content of the first token refused (len of
// the content: the closing quote), or -1 when the whole frame is taken.
func returnValue(t *testing.T, p *Program, special map[string]int, v string) int {
	t.Helper()
	m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.StepReturn}, From: dsl.State{Event: dsl.Line, Line: 6},
		Stack: []int{4}, Literals: true})
	require.NoError(t, err)
	require.Equal(t, -1, feed(m, dsl.ReturnSep+dsl.ActionSep+p.src.Text(9)+"\n"+dsl.ArgSep+`"`, special))
	content := appendJSONContent(nil, v)
	if i := feed(m, string(content), special); i >= 0 {
		return i
	}
	if !m.Accept('"') {
		return len(content)
	}
	require.Equal(t, -1, feed(m, dsl.FrameSep, special))
	require.True(t, m.Done())
	return -1
}

// TestLiteralGrammarRefusesCode: the exit trick and every other piece of
// code is refused, at the byte where it stops being a literal; without
// Literals the same value is taken (any repr is).
func TestLiteralGrammarRefusesCode(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	for value, at := range map[string]int{
		"__import__('sys').exit(0)": 0,
		"[1, __import__('os')]":     4,
		"(1).real":                  3,
		"'a'.upper()":               3,
		"1 + 1":                     5,
		"-(1)":                      1,
		"[x for x in 'ab']":         1,
		"{**{}}":                    1,
		"f'{1}'":                    0,
		"None.x":                    4,
		"Nonex":                     4,
		"(1, 2":                     5,
		"1e":                        2,
		"01":                        2,
		"1+-2j":                     2,
		"1+2":                       3,
		"b'\\u00e9'":                -1, // \u is no escape in bytes: a backslash and 'u'
		"b'\u00e9'":                 2,
		"{1: 2, 3}":                 8,
		"'\\N{DASH}'":               2,
		"'\\U00110000'":             6,
	} {
		got := returnValue(t, p, special, value)
		switch {
		case at == len(value): // the closing quote
			assert.Equal(t, len(appendJSONContent(nil, value)), got, "%s", value)
		case at >= 0: // within the refused character's JSON form (\u00e9: once its digits rule it out)
			assert.GreaterOrEqual(t, got, len(appendJSONContent(nil, value[:at])), "%s", value)
			assert.Less(t, got, len(appendJSONContent(nil, value[:at+1])), "%s", value)
		default:
			assert.Equal(t, -1, got, "%s", value)
		}
	}
	// Without Literals a call form is a repr like Counter({'a': 1}) (the
	// repr grammar's), but the attribute of a call is not.
	for value, ok := range map[string]bool{"__import__('sys')": true, "__import__('sys').exit(0)": false} {
		m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.StepReturn}, From: dsl.State{Event: dsl.Line, Line: 6}, Stack: []int{4}})
		require.NoError(t, err)
		taken := feed(m, dsl.ReturnSep+dsl.ActionSep+p.src.Text(9)+"\n"+dsl.ArgSep+`"`+value+`"`+dsl.FrameSep, special) == -1
		require.Equal(t, ok, taken, value)
	}
}

// TestLiteralGrammarAgreesWithPython: the grammar takes a text exactly
// when ast.literal_eval does, but for the forms listed as narrower (valid
// literals repr never writes) and wider (syntax the grammar cannot see to
// be wrong).
func TestLiteralGrammarAgreesWithPython(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	same := []string{
		"0", "00", "7", "-3", "+3", "- 3", "1.5", "-1.5", "1.", ".5", "1e5", "1E-05", "1.5e+300", "1e999", "01.5", "01e3",
		"01j", "0j", "-0j", "2j", "1.5J", "1+2j", "(1+2j)", "(-0-1j)", "-1.5-2e-05j", "1 + 2j", "1+2j+3j", "1j+1",
		"True+1j", "01", "1__0", "'a'", "\"a\"", "\"it's\"", "'\\''", "'\\x41'", "'\\x4'", "'\\u00e9'",
		"'\\U0001F600'", "'\\q'", "b'\\xff'", "b'a'", "B\"a\"", "r'\\d'", "rb'\\x'", "BR'a'", "u'a'", "ub'a'", "f'a'", "'é'",
		"b'é'", "'a", "'", "None", "True", "False", "none", "Nonee", "set()", "set([1])", "set", "frozenset()", "[]", "[1]",
		"[1,]", "[,]", "[1,,2]", "[1 2]", "()", "(1)", "(1,)", "(1, 2)", "(,)", "((1))", "{}", "{1}", "{1,}", "{1: 2}",
		"{1: 2,}", "{1: 2, 3: 4}", "{1: 2, 3}", "{1, 2: 3}", "{1:}", "{:1}", "{'a': [1, (2, {'b': None})], (1, 2): -0.0}",
		"[[[[]]]]", "[1, 'a', b'b', 2.5, None, True, (), {}, set()]", " 1", "1 ", "[ 1 , 2 ]", "--1", "-True",
		"-'a'", "1 if 1 else 2", "x", "[x]", "len('a')", "__import__('os')", "'a'.upper()", "[1][0]", "1;2",
		"inf", "nan", "-inf", "Ellipsis", "1 2", "'a' + 'b'", "[1] * 2", "not 1", "{**{}}", "(*[1],)", "lambda: 1",
	}
	narrower := []string{"...", "'a' 'b'", "1, 2", "'''a'''", "0x10", "0o7", "0b1", "1_000", "'\\N{EM DASH}'", "-(1)", "'it''s'", "1\t"}
	wider := []string{"{[1]: 2}", "{[1]}", "{{}: 1}", "{(1, [2]): 3}"}
	texts := append(append(append([]string{}, same...), narrower...), wider...)
	py := pyLiterals(t, texts)
	for i, text := range texts {
		got := returnValue(t, p, special, text) == -1
		switch {
		case i < len(same):
			assert.Equal(t, py[i], got, "%q: Python says %v", text, py[i])
		case i < len(same)+len(narrower):
			assert.True(t, py[i], "%q is a literal", text)
			assert.False(t, got, "%q: refused, narrower than Python", text)
		default:
			assert.False(t, py[i], "%q is no literal (unhashable)", text)
			assert.True(t, got, "%q: taken, the grammar sees syntax only", text)
		}
	}
}

// TestLiteralGrammarNeverStuck: random decoding under the literal
// grammar's masks always completes the value within dsl.MaxRepr bytes, and
// every value it writes is one ast.literal_eval takes (or, syntax only,
// fails on an unhashable key).
func TestLiteralGrammarNeverStuck(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	rng := rand.New(rand.NewPCG(3, 4))
	mask := make([]uint64, (v.Size()+63)/64)
	var values []string
	for trial := range 400 {
		m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.StepReturn}, From: dsl.State{Event: dsl.Line, Line: 6},
			Stack: []int{4}, Literals: true})
		require.NoError(t, err)
		require.Equal(t, -1, feed(m, dsl.ReturnSep+dsl.ActionSep+p.src.Text(9)+"\n"+dsl.ArgSep+`"`, special))
		var text []byte
		for !m.Done() {
			m.FillMask(mask)
			var allowed []int
			for tok := range v.Size() {
				if mask[tok>>6]>>(tok&63)&1 == 1 {
					allowed = append(allowed, tok)
				}
			}
			require.NotEmpty(t, allowed, "dead end after %q", text)
			// Favour the structural bytes, so that values nest and end.
			tok := allowed[rng.IntN(len(allowed))]
			for _, c := range []int{'[', '(', '{', ']', ')', '}', ',', ':', '"', '0', '\''} {
				if trial%2 == 0 && rng.IntN(3) == 0 && m.Allowed(c) {
					tok = c
					break
				}
			}
			require.True(t, m.Accept(tok))
			if tok < 256 {
				text = append(text, byte(tok))
			}
		}
		var value string
		require.NoError(t, json.Unmarshal(append([]byte{'"'}, text...), &value), "%q", text)
		require.LessOrEqual(t, len(value), dsl.MaxRepr)
		values = append(values, value)
	}
	unhashable := 0
	for i, e := range oracle.LiteralEvalErrors(t, values) {
		if e != "" {
			// The one gap: syntax only, an unhashable key.
			require.Equal(t, "TypeError", e, "not a literal: %q", values[i])
			unhashable++
		}
	}
	t.Logf("%d values, %d with unhashable keys", len(values), unhashable)
}

// TestLiteralGrammarCRUXEval: every CRUXEval dev output is taken as a
// return value, every argument of every input (as written, and as the
// tracer's repr at the real call) as a call state's local, and the
// arguments that are not literals (Python's ast.literal_eval says which)
// are refused.
func TestLiteralGrammarCRUXEval(t *testing.T) {
	items, err := cruxeval.Dev()
	require.NoError(t, err)
	v, special := byteVocab(t)
	sources := make([]string, len(items))
	progs := make([]*dsl.Program, len(items))
	inputs := make([]string, len(items))
	for i, it := range items {
		progs[i], err = dsl.NewProgram(it.Code, "f")
		require.NoError(t, err)
		sources[i], inputs[i] = progs[i].Source, it.Input
	}
	codes, err := AnalyzeMany(context.Background(), trace.Limits{}, sources)
	require.NoError(t, err)

	// Each input's arguments as written, by CPython's parser.
	in, err := json.Marshal(inputs)
	require.NoError(t, err)
	cmd := exec.Command("python3", "-I", "-S", "-c", `import ast, json, sys
out = []
for s in json.load(sys.stdin):
    call = ast.parse("f(" + s + ")", mode="eval").body
    out.append([ast.get_source_segment("f(" + s + ")", a) for a in call.args + [k.value for k in call.keywords]])
print(json.dumps(out))`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	require.NoError(t, err)
	var args [][]string
	require.NoError(t, json.Unmarshal(out, &args))
	// The real run of each item: f's call (the arguments' reprs) and return.
	b := trace.NewBatch(trace.Limits{})
	defer b.Close()
	runs := make([]*trace.Result, len(items))
	var flat []string // every argument as written, then every argument's repr
	for i, it := range items {
		runs[i], err = b.Run(context.Background(), progs[i], it.Call())
		require.NoError(t, err, it.ID)
		flat = append(flat, args[i]...)
	}
	written := len(flat)
	for _, r := range runs {
		for _, l := range r.Events[0].Locals {
			flat = append(flat, l.Repr)
		}
	}
	literal := pyLiterals(t, flat)

	refused, k, kr := 0, 0, written
	for i, it := range items {
		p, err := Compile(v, progs[i], codes[i])
		require.NoError(t, err)
		call, ret := runs[i].Events[0], runs[i].Events[len(runs[i].Events)-1]
		require.Equal(t, dsl.Return, ret.Kind)

		// The output, at f's real return.
		m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.StepReturn}, From: dsl.State{Event: dsl.Call, Line: call.Line},
			Stack: []int{call.Line}, Literals: true})
		require.NoError(t, err)
		frame := dsl.ReturnSep + dsl.ActionSep + p.src.Text(ret.Line) + "\n" + dsl.ArgSep + `"` +
			string(appendJSONContent(nil, it.Output)) + `"` + dsl.FrameSep
		assert.Equal(t, -1, feed(m, frame, special), "%s: output %s", it.ID, it.Output)
		assert.True(t, m.Done(), it.ID)

		// The arguments, at f's call, back from its return (CRUXEval-I).
		callFrame := func(values []string) int {
			m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.InvStepReturn},
				From: dsl.State{Event: dsl.Return, Line: ret.Line}, Literals: true})
			require.NoError(t, err)
			var sb strings.Builder
			sb.WriteString(dsl.CallSep + "{")
			for j, val := range values {
				if j > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(`"` + call.Locals[j].Name + `": "` + string(appendJSONContent(nil, val)) + `"`)
			}
			sb.WriteString("}" + dsl.ActionSep + p.src.Text(call.Line) + "\n" + dsl.FrameSep)
			return feed(m, sb.String(), special)
		}
		reprs := make([]string, len(call.Locals))
		all := true
		for j, l := range call.Locals {
			reprs[j] = l.Repr
			all = all && literal[kr]
			kr++
		}
		if all {
			assert.Equal(t, -1, callFrame(reprs), "%s: arguments %v", it.ID, reprs)
		} else {
			assert.NotEqual(t, -1, callFrame(reprs), "%s: arguments %v hold a repr that is no literal", it.ID, reprs)
		}
		// Each argument as written, in a local's place (any local: the
		// grammar of a value is the same for all), the others literal.
		for j, a := range args[i] {
			values := []string{a}
			if all {
				values = append([]string{}, reprs...)
				values[min(j, len(values)-1)] = a
			}
			if literal[k] {
				assert.Equal(t, -1, callFrame(values), "%s: argument %s", it.ID, a)
			} else {
				assert.NotEqual(t, -1, callFrame(values), "%s: argument %s is no literal", it.ID, a)
				refused++
			}
			k++
		}
	}
	t.Logf("%d outputs, %d arguments, %d of them no literal and refused", len(items), written, refused)
	assert.Positive(t, refused)
}
