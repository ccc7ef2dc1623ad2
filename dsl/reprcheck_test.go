package dsl

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckReprAcceptsCPythonReprs: every repr CPython prints for a varied
// set of values passes CheckRepr: the built-in types' literals (inf and
// nan, complex forms, strings needing every escape, bytes, 1-tuples, empty
// set), containers of them, the standard library's call forms, CPython's
// <...> forms for objects, functions, classes, modules, generators and
// methods (with the tracer's " at 0x..." mask), exceptions, recursive
// containers, and reprs cut by TruncateRepr.
func TestCheckReprAcceptsCPythonReprs(t *testing.T) {
	out := runPython(t, `
import collections, json, decimal, fractions, re, datetime, types, array, functools, enum, itertools, sys, uuid
class C: pass
class D:
    def m(self): pass
class Color(enum.Enum):
    RED = 1
def g(): pass
def gen(): yield 1
def outer():
    return lambda y: y
P = collections.namedtuple('P', 'x y')
rec = [1]; rec.append(rec)
drec = {'a': 1}; drec['b'] = drec
vals = [0, -3, 2.5, -0.0, 1e300, 1e-05, 1e16, 123456789.125, float('inf'), float('-inf'), float('nan'),
        3+4j, 1j, -2j, complex(0, -0.0), complex(float('inf'), float('nan')), complex(0, float('inf')),
        complex(-1.5, -2e-05), True, False, None, ..., NotImplemented,
        'abc', "it's", 'say "hi"', 'both \' and "', 'a\nb\\', '\t\x00\x7f\x80\xff', 'é\u2028😀\U0010ffff', '\ud800',
        b'\x00\'"', b'', bytearray(b'ab'), [], [1, [2, (3,)]], (), (1,), ((),), {}, {'k': [None, {1, 2}]},
        set(), frozenset(), frozenset({3}), {(1, 2): frozenset({'a'})},
        collections.Counter('aab'), collections.deque([1], maxlen=3), collections.OrderedDict(a=1),
        collections.defaultdict(list, {'a': [1]}), decimal.Decimal('1.5'), fractions.Fraction(1, 3),
        P(1, y='q'), types.SimpleNamespace(a=1, b=[2]), range(3), range(1, 9, 2), slice(1, None, 2),
        re.compile(r'a\d+'), re.IGNORECASE, re.match('a', 'ab'), datetime.date(2020, 1, 2),
        datetime.timedelta(days=1, seconds=3), array.array('i', [1, 2]), functools.partial(g, 1),
        Color.RED, C(), D().m, D.m, g, outer(), gen(), iter([1]), zip([1], [2]), map(str, [1]), len, C, int,
        re, sys.stdout, itertools.count(2), uuid.UUID(int=5), ValueError("invalid literal for int() with base 10: 'x'"),
        KeyError('a'), ZeroDivisionError('division by zero'), StopIteration(), OSError(2, 'No such file'),
        {}.keys(), {'a': 1}.items(), {'a': 1}.values(), rec, drec, object(), type(None),
        'x' * 10, '([{', ')]}', '#', "'''", '..', '...', '<|x|>', 'x' * 300, list(range(200)),
        {str(i): i for i in range(60)}, [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
def bound(s, limit=256, keep=240):
    b = s.encode('utf-8', 'backslashreplace')
    if len(b) <= limit:
        return b.decode('utf-8')
    cut = keep
    while cut > 0 and (b[cut] & 0xC0) == 0x80:
        cut -= 1
    return b[:cut].decode('utf-8') + '...[+%d]' % (len(b) - cut)
out = [bound(ADDRESS.sub(' at 0x...', repr(v))) for v in vals]
out.append(bound(repr(list(range(200))))[:-1] + '+]')   # the tracer's "at least N cut"
out.append(bound(repr('é' * 200)))                     # cut before byte 240, inside a character
print(json.dumps(out))
`, nil)
	var reprs []string
	require.NoError(t, json.Unmarshal(out, &reprs))
	for _, r := range reprs {
		assert.NoError(t, CheckRepr(r), r)
	}
	// Each is also one a trace may carry: TruncateRepr leaves it as it is.
	for _, r := range reprs {
		assert.Equal(t, r, TruncateRepr(r))
	}
}

// TestCheckReprRejects: text that is no repr is rejected: each of the
// first list is also a syntax error for CPython's compile (the independent
// reference); the rest are the DSL's markers and source tags, text the
// constrained decoder once let a model write, and forms the grammar leaves
// out.
func TestCheckReprRejects(t *testing.T) {
	bad := []string{"[", "'abc", `"a\"`, "(1]", "{1, 2", ")", "[1, 2]]", "'''x''", "b'\\'", "acc '", "ikacc '",
		"1 2", "{1: 2, 3}", "[1,,2]", "(,)", "f(", "a.", "a..b", "x y", "'a' 'b", "1e", "{:1}", "[x for"}
	in, err := json.Marshal(bad)
	require.NoError(t, err)
	out := runPython(t, `
import json, sys
for s in json.load(sys.stdin):
    try:
        compile(s, '<repr>', 'eval')
        print('compiles: ' + s)
    except SyntaxError:
        pass
`, in)
	require.Empty(t, string(out), "each bad repr is a syntax error for CPython")
	others := []string{"", "a\nb", Dots, "...", "..    for i in range(n = 0)  # (1)", "<|end_of_text|>", "\xff",
		"acc f.<locals>.<lambda>'", "ikacc", "x", "foo = 1", "1  # (2)", "<", "<>", "< x>", "<a", "<a (>",
		"b'\u00e9'", "'\\N{DASH}'", "'\\U00110000'", "-'a'", "-x", "--1", "-None", "1+2", "(1+2)", "1+nan", "(1-infj",
		"x" + strings.Repeat("y", MaxRepr), "[1, 2, 3...[+17]", "[" + strings.Repeat("1, ", 90) + "...[+0]",
		strings.Repeat("[", reprMaxDepth+1) + strings.Repeat("]", reprMaxDepth+1)}
	for _, s := range append(bad, others...) {
		assert.Error(t, CheckRepr(s), "%q", s)
	}
}

// TestReprCompletion: from every position of many reprs (prefixes of
// CPython's and of random ones the grammar takes), Completion completes
// the repr, and need is its length: what the constrained decoder relies on
// to end a value where it must.
func TestReprCompletion(t *testing.T) {
	reprs := []string{"[1, (2, 'a\\x41'), {3: 4.5e+1}]", "(1+2j)", "-infj", "(nan-infj)", "Counter({'a': 1})",
		"deque([1], maxlen=3)", "<function f.<locals>.<lambda> at 0x...>", "[[...]]", "{'a': {...}}", "set()",
		"b'\\xff'", "re.IGNORECASE", "NotImplemented", "<re.Match object; span=(0, 1), match='a'>", "-0.0"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		reprs = append(reprs, TruncateRepr(randomRepr(rng, 0)))
	}
	// Values too deep to close within MaxRepr from where they stand: the
	// completion is the marker of a cut repr.
	deep := strings.Repeat("[", reprMaxDepth) + "'" + strings.Repeat("a", 223) + "...[+99]"
	require.NoError(t, CheckRepr(deep))
	reprs = append(reprs, deep, strings.Repeat("(", reprMaxDepth)+strings.Repeat("1, ", 74)+"...[+20]")
	for _, s := range reprs {
		require.NoError(t, CheckRepr(s), s)
		r := ReprStart(false)
		for i := 0; i <= len(s); i++ {
			c := r.Completion(i)
			require.NotNil(t, c, "%q at %d", s, i)
			if r.mk == mkNone && i+r.need() <= MaxRepr {
				assert.Equal(t, len(c), r.need(), "%q at %d", s, i)
			}
			f := r
			for k, b := range c {
				var ok bool
				f, ok = f.Step(b, i+k)
				require.True(t, ok, "%q at %d: completion %q", s, i, c)
			}
			require.True(t, f.Complete(), "%q at %d: completion %q", s, i, c)
			if i < len(s) {
				var ok bool
				r, ok = r.Step(s[i], i)
				require.True(t, ok)
			}
		}
	}
}

// randomRepr writes a random value of the repr grammar.
func randomRepr(rng *rand.Rand, depth int) string {
	atoms := []string{"0", "-12", "3.25", "1e+300", "-inf", "nan", "2j", "(1-2j)", "'a b'", `"it's"`, "b'\\x00'",
		"None", "True", "Ellipsis", "<object object at 0x...>", "<class 'int'>", "re.I", "'\\u00e9'", "'é'"}
	if depth > 4 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	n := rng.IntN(4)
	items := make([]string, n)
	for i := range items {
		items[i] = randomRepr(rng, depth+1)
	}
	switch rng.IntN(6) {
	case 0:
		return "[" + strings.Join(items, ", ") + "]"
	case 1:
		if n == 1 {
			return "(" + items[0] + ",)"
		}
		return "(" + strings.Join(items, ", ") + ")"
	case 2:
		if n == 0 {
			return "set()"
		}
		return "{" + strings.Join(items, ", ") + "}"
	case 3:
		for i := range items {
			items[i] += ": " + randomRepr(rng, depth+1)
		}
		return "{" + strings.Join(items, ", ") + "}"
	case 4:
		if n > 0 {
			items[n-1] = "key=" + items[n-1]
		}
		return "Thing(" + strings.Join(items, ", ") + ")"
	}
	return "[...]"
}
