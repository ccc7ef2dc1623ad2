package trace

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dsl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brief writes events as "kind:line:depth:func" for compact assertions.
func brief(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Kind.String() + ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Depth) + ":" + e.Func
	}
	return out
}

// TestCPythonTracingFacts checks the event stream against the facts listed
// in docs/neural-debugger.md ("CPython tracing facts").
func TestCPythonTracingFacts(t *testing.T) {
	b := NewBatch(testLimits(t))
	defer b.Close()
	ctx := context.Background()
	run := func(src, call string) *Result {
		t.Helper()
		res, err := b.Run(ctx, program(t, src, "f"), call)
		require.NoError(t, err)
		return res
	}

	t.Run("comprehension runs in its own frame on the expression's line", func(t *testing.T) {
		res := run("def f(xs):\n    ys = [x * 2 for x in xs]\n    return ys\n", "f([1])")
		assert.Equal(t, []string{
			"call:1:0:f", "line:2:0:f",
			"call:2:1:<listcomp>", "line:2:1:<listcomp>", "line:2:1:<listcomp>", "return:2:1:<listcomp>",
			"line:3:0:f", "return:3:0:f",
		}, brief(res.Events))
		assert.Equal(t, "[2]", res.Events[5].Value)
	})

	t.Run("lambda called from C code has its own frame", func(t *testing.T) {
		res := run("def f(xs):\n    return sorted(xs, key=lambda x: -x)\n", "f([1, 2])")
		assert.Equal(t, []string{
			"call:1:0:f", "line:2:0:f",
			"call:2:1:<lambda>", "line:2:1:<lambda>", "return:2:1:<lambda>",
			"call:2:1:<lambda>", "line:2:1:<lambda>", "return:2:1:<lambda>",
			"return:2:0:f",
		}, brief(res.Events))
		assert.NotEqual(t, res.Events[2].Frame, res.Events[5].Frame)
	})

	t.Run("generator yields are return events and resumes are call events of one frame", func(t *testing.T) {
		res := run("def gen(n):\n    for i in range(n):\n        yield i\ndef f():\n    g = gen(2)\n    return list(g)\n", "f()")
		assert.Equal(t, []string{
			"call:4:0:f", "line:5:0:f", "line:6:0:f",
			"call:1:1:gen", "line:2:1:gen", "line:3:1:gen", "return:3:1:gen",
			"call:3:1:gen", "line:2:1:gen", "line:3:1:gen", "return:3:1:gen",
			"call:3:1:gen", "line:2:1:gen", "return:2:1:gen",
			"return:6:0:f",
		}, brief(res.Events))
		genFrame := res.Events[3].Frame
		for _, e := range res.Events[3:14] {
			assert.Equal(t, genFrame, e.Frame)
		}
		assert.Equal(t, "0", res.Events[6].Value)
		assert.Equal(t, "1", res.Events[10].Value)
		assert.Equal(t, "None", res.Events[13].Value)
	})

	t.Run("exception then return None in each frame it passes", func(t *testing.T) {
		res := run("def g():\n    raise KeyError('k')\ndef f():\n    try:\n        g()\n    except KeyError:\n        return 1\n", "f()")
		assert.Equal(t, []string{
			"call:3:0:f", "line:4:0:f", "line:5:0:f",
			"call:1:1:g", "line:2:1:g", "exception:2:1:g", "return:2:1:g",
			"exception:5:0:f", "line:6:0:f", "line:7:0:f", "return:7:0:f",
		}, brief(res.Events))
		assert.Equal(t, "KeyError('k')", res.Events[5].Value)
		assert.Equal(t, "None", res.Events[6].Value)
		assert.Equal(t, "KeyError('k')", res.Events[7].Value)
	})

	t.Run("C builtins produce no events", func(t *testing.T) {
		res := run("def f(s):\n    return ' '.join(sorted(s)).upper() + str(len(s))\n", "f('ba')")
		assert.Equal(t, []string{"call:1:0:f", "line:2:0:f", "return:2:0:f"}, brief(res.Events))
		assert.Equal(t, "'A B2'", res.Return)
	})

	t.Run("line locals are before the line, return locals are final", func(t *testing.T) {
		res := run("def f():\n    x = 1\n    x = 2\n    return x\n", "f()")
		require.Len(t, res.Events, 5)
		assert.Empty(t, res.Events[0].Locals)
		assert.Empty(t, res.Events[1].Locals)
		assert.Equal(t, []dsl.Local{{Name: "x", Repr: "1"}}, res.Events[2].Locals)
		assert.Equal(t, []dsl.Local{{Name: "x", Repr: "2"}}, res.Events[4].Locals)
	})

	t.Run("depth counts program frames only", func(t *testing.T) {
		res := run("import re\ndef g(m):\n    return m.group(0) * 2\ndef f(s):\n    return re.sub('a', g, s)\n", "f('ab')")
		assert.Equal(t, []string{
			"call:4:0:f", "line:5:0:f",
			"call:2:1:g", "line:3:1:g", "return:3:1:g",
			"return:5:0:f",
		}, brief(res.Events))
	})

	t.Run("frame ids are per invocation", func(t *testing.T) {
		res := run("def g(x):\n    return x\ndef f():\n    return g(1) + g(2)\n", "f()")
		ids := map[int]bool{}
		for _, e := range res.Events {
			ids[e.Frame] = true
		}
		assert.Len(t, ids, 3)
	})
}

// TestTruncationMatchesDSL checks the tracer's repr bound against
// dsl.TruncateRepr on strings whose cut falls inside UTF-8 sequences.
func TestTruncationMatchesDSL(t *testing.T) {
	b := NewBatch(testLimits(t))
	defer b.Close()
	src := "def f(s):\n    return s\n"
	for _, call := range []string{
		"f('x' * 300)", "f('x' * 254)", "f('x' * 255)", "f('\\u00e9' * 200)", "f('a' + '\\u00e9' * 200)",
		"f('\\u20ac' * 100)", "f('a' + '\\u20ac' * 100)", "f('ab' + '\\U0001f600' * 70)", "f('abc' + '\\U0001f600' * 70)",
		"f('\\U0001f600' * 63)", "f(list(range(100)))", "f({i: str(i) for i in range(60)})",
	} {
		res, err := b.Run(context.Background(), program(t, src, "f"), call)
		require.NoError(t, err, call)
		require.Nil(t, res.Exception)
		last := res.Events[len(res.Events)-1]
		assert.Equal(t, dsl.TruncateRepr(res.Return), last.Value, call)
		assert.Equal(t, dsl.TruncateRepr(res.Return), last.Locals[0].Repr, call)
		assert.LessOrEqual(t, len(last.Value), dsl.MaxRepr)
	}
}

// TestCRUXEvalGroundTruth traces every dev item and checks that the traced
// return value equals the reference output as Python values.
func TestCRUXEvalGroundTruth(t *testing.T) {
	items, err := cruxeval.Dev()
	require.NoError(t, err)
	require.NotEmpty(t, items)

	lim := testLimits(t)
	b := NewBatch(lim)
	defer b.Close()
	pairs := make([][2]string, len(items))
	events := 0
	for i, it := range items {
		prog, err := dsl.NewProgram(it.Code, "f")
		require.NoError(t, err, it.ID)
		res, err := b.Run(context.Background(), prog, it.Call())
		require.NoError(t, err, it.ID)
		require.Nil(t, res.Exception, "%s raised %+v", it.ID, res.Exception)
		require.False(t, res.Truncated, it.ID)
		require.NotEmpty(t, res.Events, it.ID)
		first, last := res.Events[0], res.Events[len(res.Events)-1]
		require.Equal(t, dsl.Call, first.Kind, it.ID)
		require.Equal(t, dsl.Return, last.Kind, it.ID)
		require.Equal(t, 0, last.Depth, it.ID)
		require.Equal(t, dsl.TruncateRepr(res.Return), last.Value, it.ID)
		pairs[i] = [2]string{res.Return, it.Output}
		events += len(res.Events)
	}
	// One interpreter compares all values: eval(traced) == eval(reference).
	in, err := json.Marshal(pairs)
	require.NoError(t, err)
	cmd := exec.Command(lim.Python, "-S", "-c",
		"import json, sys\nprint(json.dumps([eval(a) == eval(b) for a, b in json.load(sys.stdin)]))")
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	require.NoError(t, err)
	var same []bool
	require.NoError(t, json.Unmarshal(out, &same))
	require.Len(t, same, len(items))
	for i, ok := range same {
		assert.True(t, ok, "%s: traced %s, reference %s", items[i].ID, pairs[i][0], pairs[i][1])
	}
	t.Logf("%d CRUXEval dev items, %d events", len(items), events)
}

// TestAddressesMasked: reprs that print a memory address differ from run to
// run; the tracer masks the address so traces are reproducible.
func TestAddressesMasked(t *testing.T) {
	prog, err := dsl.NewProgram("def f(xs):\n    it = iter(xs)\n    return [x for x in it]\n", "f")
	require.NoError(t, err)
	res, err := Run(context.Background(), prog, "f([1])", Limits{})
	require.NoError(t, err)
	seen := false
	for _, e := range res.Events {
		for _, l := range e.Locals {
			require.NotRegexp(t, `0x[0-9a-f]{4,}`, l.Repr)
			if strings.Contains(l.Repr, " at 0x...>") {
				seen = true
			}
		}
	}
	require.True(t, seen, "an iterator's repr is shown with its address masked")
}
