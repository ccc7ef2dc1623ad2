package constrain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/trace"
)

// takesValue reports whether the frame grammar takes v (decoded text) as
// the return value of a step_return frame of sampleSource's f, fed one
// JSON byte at a time, and literal as the literal grammar (Context.Literals).
func takesValue(t testing.TB, p *Program, special map[string]int, v string, literal bool) bool {
	t.Helper()
	m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.StepReturn}, From: dsl.State{Event: dsl.Line, Line: 6},
		Stack: []int{4}, Literals: literal})
	require.NoError(t, err)
	require.Equal(t, -1, feed(m, dsl.ReturnSep+dsl.ActionSep+p.src.Text(9)+"\n"+dsl.ArgSep+`"`, special))
	return feed(m, string(appendJSONContent(nil, v))+`"`+dsl.FrameSep, special) == -1 && m.Done()
}

// reprCorpus is CPython's reprs of many values (the same kinds as dsl's
// TestCheckReprAcceptsCPythonReprs), for seeds.
var reprCorpus = []string{"0", "-3", "2.5", "1e+300", "inf", "-inf", "nan", "(3+4j)", "1j", "(-0-2j)", "(inf+nanj)",
	"infj", "True", "None", "Ellipsis", "NotImplemented", "'abc'", `"it's"`, `'say "hi"'`, `'a\nb\\'`, `'\t\x00\x7f'`,
	"'é😀'", "b'\\x00\\'\"'", "bytearray(b'ab')", "[]", "[1, [2, (3,)]]", "()", "(1,)", "{}", "{'k': [None, {1, 2}]}",
	"set()", "frozenset({3})", "Counter({'a': 2, 'b': 1})", "deque([1], maxlen=3)", "defaultdict(<class 'list'>, {'a': [1]})",
	"Decimal('1.5')", "P(x=1, y='q')", "namespace(a=1, b=[2])", "range(1, 9, 2)", "re.compile('a\\\\d+')", "re.IGNORECASE",
	"<re.Match object; span=(0, 1), match='a'>", "<__main__.C object at 0x...>", "<function f.<locals>.<lambda> at 0x...>",
	"<bound method D.m of <__main__.D object at 0x...>>", "<class '__main__.C'>", "<module 're' from '/usr/lib/python3.11/re/__init__.py'>",
	"<generator object gen at 0x...>", "<built-in function len>", "ValueError(\"invalid literal for int() with base 10: 'x'\")",
	"[[...]]", "{'a': 1, 'b': {...}}", "<unprintable C object>", "<C object: repr timed out>",
	"[" + strings.Repeat("1, ", 79) + "...[+123]", "'" + strings.Repeat("é", 119) + "...[+99+]"}

// TestGrammarValuesAreCheckRepr: the frame grammar takes a value exactly
// when dsl.CheckRepr accepts it, on CPython's reprs, on those reprs cut and
// mutated byte by byte, and on random text over the characters that
// matter; the literal grammar takes a subset of it.
func TestGrammarValuesAreCheckRepr(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte("'\"()[]{}<>.,:= 0123456789abjxuN-+e\\é|#")
	texts := append([]string(nil), reprCorpus...)
	for _, r := range reprCorpus {
		for range 20 {
			b := []byte(r)
			switch k := rng.IntN(4); {
			case k == 0 && len(b) > 1:
				b = b[:rng.IntN(len(b))]
			case k == 1 && len(b) > 0:
				i := rng.IntN(len(b))
				b = append(b[:i], b[i+1:]...)
			default:
				i := rng.IntN(len(b) + 1)
				b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
			}
			texts = append(texts, strings.ToValidUTF8(string(b), "?"))
		}
	}
	for range 3000 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		texts = append(texts, strings.ToValidUTF8(string(b), "?"))
	}
	accepted := 0
	for _, s := range texts {
		want := dsl.CheckRepr(s) == nil
		require.Equal(t, want, takesValue(t, p, special, s, false), "%q (CheckRepr: %v)", s, dsl.CheckRepr(s))
		if takesValue(t, p, special, s, true) {
			assert.True(t, want, "the literal grammar takes %q, CheckRepr does not", s)
		}
		if want {
			accepted++
		}
	}
	t.Logf("%d texts, %d reprs", len(texts), accepted)
	assert.Greater(t, accepted, len(texts)/10)
}

// FuzzGrammarValuesAreCheckRepr: on any text the frame grammar takes a
// value exactly when dsl.CheckRepr accepts it.
func FuzzGrammarValuesAreCheckRepr(f *testing.F) {
	v, special := byteVocab(f)
	p := compileSample(f, v)
	for _, r := range reprCorpus {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8Valid(s) || len(s) > 2*dsl.MaxRepr {
			return
		}
		require.Equal(t, dsl.CheckRepr(s) == nil, takesValue(t, p, special, s, false), "%q", s)
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestValueMasksAgree: at every position of random decoding (uniform over
// the allowed tokens) with a real BPE vocabulary, the mask built from the
// vocabulary's value masks and precomputed sets (mask) is the one a plain
// walk of every token from the whole state gives.
func TestValueMasksAgree(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join("..", "weights", "default", "tokenizer.json"))
	require.NoError(t, err)
	v, err := VocabOf(tok)
	require.NoError(t, err)
	prog, err := dsl.NewProgram(sampleSource, "f")
	require.NoError(t, err)
	codes := analyzeSample(t, prog)
	p, err := Compile(v, prog, codes)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	mask := make([]uint64, (v.Size()+63)/64)
	var structure []int
	for _, text := range []string{"<", `\"`, "'", "["} {
		id := slices.IndexFunc(v.tokens, func(b []byte) bool { return string(b) == text })
		require.GreaterOrEqual(t, id, 0, text)
		structure = append(structure, id)
	}
	compared := 0
	seen := map[string]int{} // the fast paths and the bytes near the marker and MaxRepr, exercised
	for trial := range 60 {
		a := dsl.Action{Kind: dsl.StepReturn}
		from := dsl.State{Event: dsl.Line, Line: 6}
		if trial%2 == 1 {
			a = dsl.Action{Kind: dsl.StepOver}
		}
		m, err := p.Start(Context{Action: a, From: from, Stack: []int{4}, Literals: trial%5 == 0})
		require.NoError(t, err)
		for steps := 0; !m.Done() && steps < 400; steps++ {
			m.FillMask(mask)
			if m.st.pos == pValue || m.st.pos == pArg {
				want := make([]uint64, len(mask))
				p.walk(&v.all, 0, m.st, want)
				require.Equal(t, want, mask, "at %+v", m.st)
				compared++
				seen[fmt.Sprintf("plain%d", m.st.r.Plain())]++
				seen[fmt.Sprintf("ident%d", m.st.r.Ident())]++
				if m.st.n >= dsl.MarkerFrom-int16(v.maxLen) {
					seen["near the marker"]++
				}
			}
			var allowed []int
			for id := range v.Size() {
				if mask[id>>6]>>(id&63)&1 == 1 {
					allowed = append(allowed, id)
				}
			}
			require.NotEmpty(t, allowed)
			id := allowed[rng.IntN(len(allowed))]
			// Favour short tokens and structure, so that values nest, grow long and end.
			if rng.IntN(2) == 0 {
				for range 8 {
					if c := allowed[rng.IntN(len(allowed))]; len(v.tokens[c]) <= 2 {
						id = c
						break
					}
				}
			}
			// Now and then a <...> form or a string in double quotes.
			if c := structure[trial%len(structure)]; m.Allowed(c) && rng.IntN(2) == 0 {
				id = c
			}
			require.True(t, m.Accept(id))
		}
	}
	t.Logf("%d value masks compared: %v", compared, seen)
	for _, k := range []string{"plain1", "plain2", "plain3", "ident1", "ident2", "near the marker"} {
		assert.Positive(t, seen[k], k)
	}
}

// analyzeSample analyses sampleSource's prepared program.
func analyzeSample(t testing.TB, prog *dsl.Program) []Code {
	codes, err := Analyze(context.Background(), trace.Limits{}, prog.Source)
	require.NoError(t, err)
	return codes
}
