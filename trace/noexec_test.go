package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/progen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noExecCase is a program and a call whose no-exec call event is checked
// against the first event of the real run.
type noExecCase struct {
	name, source, entry, call string
}

// checkCallEvents compares CallEvent with the first event of the program
// run for real (the reference: CPython's own binding and f_locals), for
// every case; a case CallEvent refuses must be one whose call is not made
// of literals, and refused lists them.
func checkCallEvents(t *testing.T, cases []noExecCase) (compared int, refused []string) {
	t.Helper()
	lim := testLimits(t)
	first := lim
	first.MaxEvents = 1
	b := NewBatch(first)
	defer b.Close()
	lim.noExec = true // CallEvent's requests, in one interpreter for speed
	parsed := NewBatch(lim)
	defer parsed.Close()
	for _, c := range cases {
		prog, err := dsl.NewProgram(c.source, c.entry)
		require.NoError(t, err, c.name)
		got, err := callEventOf(parsed.Run(context.Background(), prog, c.call))
		if err != nil {
			require.ErrorIs(t, err, ErrSetup, c.name)
			require.Contains(t, err.Error(), "is not a literal", "%s: %s", c.name, c.call)
			refused = append(refused, c.name)
			continue
		}
		res, err := b.Run(context.Background(), prog, c.call)
		require.NoError(t, err, c.name)
		require.NotEmpty(t, res.Events, c.name)
		assert.Equal(t, res.Events[0], got, "%s: %s", c.name, c.call)
		compared++
	}
	return compared, refused
}

// TestCallEventEqualsRealFirstEvent: for every CRUXEval dev item whose
// input is a literal (as Python's own ast.literal_eval decides), the call
// event built from the program's text equals the real run's first event
// (line, function, every local's name, order and repr); the others are
// refused.
func TestCallEventEqualsRealFirstEvent(t *testing.T) {
	items, err := cruxeval.Dev()
	require.NoError(t, err)
	var cases []noExecCase
	inputs := make([]string, len(items))
	for i, it := range items {
		cases = append(cases, noExecCase{it.ID, it.Code, "f", it.Call()})
		inputs[i] = it.Input
	}
	in, err := json.Marshal(inputs)
	require.NoError(t, err)
	cmd := exec.Command(testLimits(t).Python, "-I", "-S", "-c", `import ast, json, sys
def literal(s):
    try:
        ast.literal_eval("(" + s + ",)")
        return True
    except Exception:
        return False
print(json.dumps([literal(s) for s in json.load(sys.stdin)]))`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	require.NoError(t, err)
	var literal []bool
	require.NoError(t, json.Unmarshal(out, &literal))
	var want []string
	for i, ok := range literal {
		if !ok {
			want = append(want, items[i].ID)
		}
	}
	compared, refused := checkCallEvents(t, cases)
	t.Logf("CRUXEval dev: %d compared, refused %v", compared, refused)
	assert.Equal(t, want, refused)
	assert.Equal(t, len(items)-len(want), compared)
	assert.GreaterOrEqual(t, compared, 90)
}

// TestCallEventGenerated does the same for generated programs of every
// family.
func TestCallEventGenerated(t *testing.T) {
	var cases []noExecCase
	for _, fam := range progen.Families() {
		for seed := range uint64(4) {
			p, err := progen.Generate(seed, []string{fam})
			require.NoError(t, err)
			cases = append(cases, noExecCase{fmt.Sprintf("%s/%d", fam, seed), p.Source, p.Entry, p.Call})
		}
	}
	compared, refused := checkCallEvents(t, cases)
	assert.Empty(t, refused)
	assert.Equal(t, len(cases), compared)
}

// TestCallEventBinding: parameters of every kind, defaults, keywords,
// *args and **kwargs, cells, long and unordered values, bound as CPython
// binds them.
func TestCallEventBinding(t *testing.T) {
	src := func(def string) string { return "import math\n\n" + def + "\n    return 1\n" }
	cases := []noExecCase{
		{"positional", src("def f(a, b):"), "f", "f(1, 'x')"},
		{"negative and floats", src("def f(a, b, c):"), "f", "f(-3, -2.5e-3, -0.1+2j)"},
		{"defaults", src("def f(a, b=[1, 2], c=None, *, d=-1, e={'k': (1,)}):"), "f", "f(0)"},
		{"keywords", src("def f(a, b=2, *, c, d=4):"), "f", "f(c=3, a=1)"},
		{"posonly", src("def f(a, b, /, c=3):"), "f", "f(1, 2, c=5)"},
		{"varargs", src("def f(a, *rest, k=1, **kw):"), "f", "f(1, 2, 3, z=4, k=2, y={1, 2})"},
		{"empty varargs", src("def f(*args, **kwargs):"), "f", "f()"},
		{"cell", "def f(x, y):\n    def g():\n        return x\n    return g()\n", "f", "f([1], 2)"},
		{"long", src("def f(s, xs):"), "f", "f('" + strings.Repeat("ab", 300) + "', " +
			"[" + strings.Repeat("123456789, ", 100) + "0])"},
		{"sets and bytes", src("def f(s, b, fs):"), "f", "f({'pear', 'apple', 'fig', 3}, b'\\x00\\xff', set())"},
		{"unicode", src("def f(s):"), "f", "f('héllo \\u2603 \\U0001F600')"},
		{"nested", src("def f(d):"), "f", "f({(1, 2): [{'a': None, 'b': True}], -0.0: 1+2j, ...: b''})"},
		{"big int", src("def f(n):"), "f", "f(-" + strings.Repeat("9", 4000) + ")"},
		{"later def wins", "def f(a):\n    return 0\n\nX = 1\n\ndef f(a, b=7):\n    return a\n", "f", "f(2)"},
		{"method-like names", "class C:\n    def f(self):\n        pass\n\ndef f(self, f=1):\n    return self\n", "f", "f('s')"},
	}
	compared, refused := checkCallEvents(t, cases)
	assert.Empty(t, refused)
	assert.Equal(t, len(cases), compared)
}

// TestCallEventRefuses: what CallEvent cannot know without running code is
// an ErrSetup that names it.
func TestCallEventRefuses(t *testing.T) {
	lim := testLimits(t)
	for _, c := range []struct{ source, call, want string }{
		{"def f(x):\n    return x\n", "f(__import__('os').system('touch /tmp/x'))", "argument 1, __import__('os').system('touch /tmp/x'), is not a literal"},
		{"def f(x):\n    return x\n", "f(x=len('ab'))", "argument x, len('ab'), is not a literal"},
		{"def f(x):\n    return x\n", "f([1, y])", "argument 1, [1, y], is not a literal"},
		{"def f(x):\n    return x\n", "f(*[1])", "unpacks a value"},
		{"def f(x):\n    return x\n", "f(**{'x': 1})", "unpacks a value"},
		{"N = 3\ndef f(x=N):\n    return x\n", "f()", "the default of 'x', N, is not a literal"},
		{"import functools\n@functools.cache\ndef f(x):\n    return x\n", "f(1)", "decorated (line 2)"},
		{"def f(x):\n    return x\nf = print\n", "f(1)", "last bound at line 3 by something other than a top-level def"},
		{"def f(x):\n    return x\nfrom os import *\n", "f(1)", "import *"},
		{"def f(x):\n    return x\nf.__defaults__ = (1,)\n", "f(1)", "last bound at line 3"},
		{"def f(x):\n    return x\ndef g():\n    global f\n", "f(1)", "declares 'f' global"},
		{"def f(x):\n    yield x\n", "f(1)", "generator function"},
		{"def f(x):\n    return x\nif True:\n    def f(x):\n        return x\n", "f(1)", "other than a top-level def"},
		{"while True:\n    pass\ndef f(x):\n    return x\n", "f(1)", "never reached"},
		{"def f(x):\n    return x\n", "f(--1)", "argument 1, --1, is not a literal"},
		{"def f(x):\n    return x\n", "f({[1]: 2})", "argument 1, {[1]: 2}, is not a literal"},
	} {
		prog, err := dsl.NewProgram(c.source, "f")
		require.NoError(t, err)
		_, err = CallEvent(context.Background(), prog, c.call, lim)
		require.ErrorIs(t, err, ErrSetup, c.call)
		assert.Contains(t, err.Error(), c.want, c.call)
	}
	// A program that does not compile is a syntax error, as for Run.
	prog, err := dsl.NewProgram("def f(x):\n    return x +\n", "f")
	require.NoError(t, err)
	_, err = CallEvent(context.Background(), prog, "f(1)", lim)
	require.ErrorIs(t, err, ErrSyntax)
}

// TestCallMismatchIsPythonsTypeError: a call that does not match the
// entry's parameters is an ErrSetup in CPython's own words, from a run
// (where the call raised before the entry's first event; it used to be a
// run with no events, "statetree: empty trace") and from CallEvent (which
// binds as CPython does, running nothing), checked against the message a
// plain python3 prints for the same call.
func TestCallMismatchIsPythonsTypeError(t *testing.T) {
	lim := testLimits(t)
	const def = "def f(x, y=3, /, z=[1], *a, k, m=None, **kw):\n    return x\n\ndef g(x):\n    return x\n\ndef p(x, /):\n    return x\n"
	for _, call := range []string{"g(1, 2)", "g()", "g(y=2)", "g(1, x=2)", "g(1, 2, 3)", "f(1)", "f(k=1)", "f(x=1, y=2, k=3)",
		"f(1, 2, 3, z=4, k=5)", "f()", "p(x=2)", "p(1, x=2)"} {
		entry := call[:1]
		script := def + "try:\n    " + call + "\nexcept TypeError as e:\n    print(e, end='')\n"
		out, err := exec.Command(lim.Python, "-c", script).Output()
		require.NoError(t, err)
		require.NotEmpty(t, out, "%s raises no TypeError in Python", call)
		python := string(out)

		prog := program(t, def, entry)
		_, err = Run(context.Background(), prog, call, lim)
		require.ErrorIs(t, err, ErrSetup, call)
		assert.Contains(t, err.Error(), "calling "+entry+" raised TypeError: "+python, call)
		_, err = CallEvent(context.Background(), prog, call, lim)
		require.ErrorIs(t, err, ErrSetup, call)
		assert.Contains(t, err.Error(), "calling "+entry+" would raise TypeError: "+python, call)
	}
}

// TestCallEventRunsNothing: module code that would write a file, print,
// fail or never end does none of it, even unsandboxed (where a write
// would reach the host's file system: the control run shows it does).
func TestCallEventRunsNothing(t *testing.T) {
	lim := testLimits(t)
	lim.Unsandboxed = true
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	src := fmt.Sprintf("open(%q, 'w').write('module code ran')\nprint('hello')\n\ndef f(x, y=2):\n    return x\n\n"+
		"open(%q, 'a').write(' after the def')\n", marker, marker)
	prog, err := dsl.NewProgram(src, "f")
	require.NoError(t, err)
	lim.noExec = true
	res, err := Run(context.Background(), prog, "f([1, 'a'])", lim)
	require.NoError(t, err)
	require.Len(t, res.Events, 1)
	assert.Equal(t, []dsl.Local{{Name: "x", Repr: "[1, 'a']"}, {Name: "y", Repr: "2"}}, res.Events[0].Locals)
	assert.Equal(t, 4, res.Events[0].Line)
	assert.Empty(t, res.Stdout, "module code printed")
	_, err = os.Stat(marker)
	require.True(t, errors.Is(err, os.ErrNotExist), "module code ran: %v", err)

	// The control: run for real, the same module code does write the file.
	lim.noExec = false
	_, err = Run(context.Background(), prog, "f([1, 'a'])", lim)
	require.NoError(t, err)
	data, err := os.ReadFile(marker)
	require.NoError(t, err)
	require.Equal(t, "module code ran after the def", string(data))

	// Module code that never ends or raises is not run either.
	for _, mod := range []string{"import itertools\nfor _ in itertools.count():\n    pass\n", "1 / 0\n", "import os\nos.kill(os.getpid(), 9)\n"} {
		prog, err := dsl.NewProgram(mod+"def f(x):\n    return x\n", "f")
		require.NoError(t, err)
		ev, err := CallEvent(context.Background(), prog, "f(1)", lim)
		require.NoError(t, err, mod)
		assert.Equal(t, []dsl.Local{{Name: "x", Repr: "1"}}, ev.Locals)
	}
}
