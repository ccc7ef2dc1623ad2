package dsl

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckReprAcceptsCPythonReprs: every repr CPython prints for a varied
// set of values passes CheckRepr.
func TestCheckReprAcceptsCPythonReprs(t *testing.T) {
	out := runPython(t, `
import collections, json, decimal, fractions
class C: pass
def g(): pass
vals = [0, -3, 2.5, 1e300, float('inf'), float('nan'), 3+4j, True, None, ..., 'abc', "it's", 'say "hi"',
        'a\nb\\', b'\x00\'', [], [1, [2, (3,)]], (), (1,), {}, {'k': [None, {1, 2}]}, set(), frozenset({3}),
        collections.Counter('aab'), collections.deque([1]), collections.OrderedDict(a=1), decimal.Decimal('1.5'),
        fractions.Fraction(1, 3), C(), g, range(3), 'x' * 10, '([{', ')]}', '#', "'''"]
print(json.dumps([repr(v) for v in vals]))
`, nil)
	var reprs []string
	require.NoError(t, json.Unmarshal(out, &reprs))
	for _, r := range reprs {
		assert.NoError(t, CheckRepr(r), r)
	}
}

// TestCheckReprRejects: text that is no repr, each also a syntax error for
// CPython's compile (the independent reference), is rejected.
func TestCheckReprRejects(t *testing.T) {
	bad := []string{"[", "'abc", `"a\"`, "(1]", "{1, 2", ")", "[1, 2]]", "'''x''", "b'\\'"}
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
	for _, s := range append(bad, "", "a\nb", Dots, "<|end_of_text|>", "\xff") {
		assert.Error(t, CheckRepr(s), "%q", s)
	}
}
