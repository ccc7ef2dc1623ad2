package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// devItems returns the first n CRUXEval dev items.
func devItems(t *testing.T, n int) []Item {
	items, err := DevItems()
	require.NoError(t, err)
	require.NotEmpty(t, items)
	return items[:min(n, len(items))]
}

// TestRealSanity: the real debugger graded against itself must be right
// every time, in next-state exact match and on CRUXEval-O and -I. It checks
// the harness end to end against real execution.
func TestRealSanity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	gen, err := Generated(99, 6, []string{"mixed", "strings", "lists"})
	require.NoError(t, err)
	dev := devItems(t, 4)
	items := append(gen, dev...)
	be := Real(trace.Limits{Timeout: 2 * time.Second, MaxEvents: 5000})

	res, err := NextState(ctx, NextConfig{Items: items, Backend: be, Workers: 2, MaxPairs: 24})
	require.NoError(t, err)
	require.Equal(t, len(items), res.Programs, "skipped: %v", res.Skipped)
	require.Greater(t, res.All.N, 120)
	require.Greater(t, res.Inverse.N, 5, "the policy draws inverse actions")
	assert.Equal(t, res.All.N, res.All.State, "misses: %+v", res.Misses)
	assert.Equal(t, res.All.LocalN, res.All.Locals)
	assert.Equal(t, res.All.ValueN, res.All.Value)
	assert.Zero(t, res.All.Errors)
	require.Contains(t, res.ByFamily, "items")
	fam := 0
	for _, f := range res.ByFamily {
		fam += f.N
	}
	assert.Equal(t, res.All.N, fam)
	assert.GreaterOrEqual(t, len(res.ByAction), 8, "(nearly) every action kind is drawn")

	every, err := NextState(ctx, NextConfig{Items: gen[:2], Backend: be, Workers: 2, Mode: "every", MaxPairs: 60})
	require.NoError(t, err)
	require.Greater(t, every.All.N, 60)
	assert.Equal(t, every.All.N, every.All.State)

	// A recursive f whose nested activation reaches the return line first.
	dev = append(dev[:len(dev):len(dev)], Item{ID: "recursive", Source: "def f(s, k):\n    if k > 0:\n        s = f(s + 'a', k - 1)\n    return s + str(k)\n",
		Entry: "f", Call: "f('x', 2)", Input: "'x', 2", Output: "'xaa012'"})
	crux, err := CRUXEval(ctx, CruxConfig{Items: dev, Backend: be, Scorer: &Scorer{}, Workers: 2})
	require.NoError(t, err)
	for _, s := range Strategies() {
		p := crux.Scores[s]
		require.NotNil(t, p, s)
		assert.Equal(t, len(dev), p.Items)
		assert.Equal(t, 100.0, p.Pass1, "%s: %+v", s, crux.PerItem)
	}
}

// TestItemsDoNotShareAnInterpreter: items from outside (a file, the dev
// split) are traced each in an interpreter of its own (issue 25): an item
// that rebinds json.dumps (which the tracer reports with) or leaves a
// thread rewriting builtins behind cannot change the next item's reference
// trace, which the real backend, run apart, must then match exactly.
func TestItemsDoNotShareAnInterpreter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	hostile := []Item{
		{ID: "dumps", Family: "items", Entry: "f", Call: "f(1)",
			Source: "import json\njson.dumps = lambda *a, **k: '\"TAMPERED\"'\n\ndef f(x):\n    return x\n"},
		{ID: "thread", Family: "items", Entry: "f", Call: "f(1)",
			Source: "import _thread, builtins, threading, time\n_thread._count = lambda: 0\n\ndef spoil():\n    end = time.time() + 20\n    while time.time() < end:\n        builtins.sorted = lambda xs, **k: ['TAMPERED']\n        time.sleep(0.001)\n\ndef f(x):\n    threading.Thread(target=spoil, daemon=True).start()\n    return x\n"},
	}
	victim := Item{ID: "victim", Family: "items", Entry: "f", Call: "f([3, 1, 2])",
		Source: "import json\n\ndef f(xs):\n    ys = sorted(xs)\n    s = json.dumps(ys)\n    return s\n"}
	be := Real(trace.Limits{Timeout: 2 * time.Second, MaxEvents: 5000})
	for _, h := range hostile {
		res, err := NextState(ctx, NextConfig{Items: []Item{h, victim, victim}, Backend: be, Workers: 1, MaxPairs: 24})
		require.NoError(t, err)
		for _, m := range res.Misses {
			assert.NotEqual(t, "victim", m.Item, "after %s, the victim's reference trace was changed: %+v", h.ID, m)
		}
		assert.GreaterOrEqual(t, res.Programs, 2, "after %s, the victims were skipped: %v", h.ID, res.Skipped)
	}
}

// TestScorer: right predictions pass, wrong and hostile ones fail, within
// the limit, without side effects.
func TestScorer(t *testing.T) {
	ctx := context.Background()
	s := testScorer(t)
	code := "def f(xs):\n    return sorted(xs)[::-1]\n"
	ok := func(pred string) bool {
		t.Helper()
		r, err := s.CheckOutput(ctx, code, "[3, 2, 1]", pred)
		require.NoError(t, err)
		return r
	}
	assert.True(t, ok("[3, 2, 1]"))
	assert.True(t, ok("[3,2,1]"), "any literal equal to the output")
	assert.False(t, ok("[1, 2, 3]"))
	assert.False(t, ok("[3, 2, 1"), "a syntax error")
	assert.False(t, ok("0) or (True"), "a prediction cannot rewrite the assertion")
	// A prediction is a value, not code (issue 18): these passed when the
	// check was an exit status and predictions were evaluated.
	assert.False(t, ok("__import__('sys').exit(0)"))
	assert.False(t, ok("__import__('os')._exit(0)"))
	assert.False(t, ok("sorted([1, 2, 3])[::-1]"), "an expression, even a right one, is not a literal")

	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep"), nil, 0o644))
	defer func() {
		_, err := os.Stat(filepath.Join(dir, "keep"))
		assert.NoError(t, err, "os.remove must not run")
	}()
	assert.False(t, ok("__import__('os').system('touch "+marker+"')"))
	assert.False(t, ok("__import__('subprocess').run(['touch', '"+marker+"'])"))
	assert.False(t, ok("__import__('os').remove('"+filepath.Join(dir, "keep")+"')"))
	_, err := os.Stat(marker)
	assert.True(t, os.IsNotExist(err), "os.system must not run")

	start := time.Now()
	assert.False(t, ok("[x for x in iter(int, 1)]"), "an infinite loop")
	assert.Less(t, time.Since(start), 4*time.Second, "killed at the limit")
	start = time.Now()
	assert.False(t, ok("bytearray(8 << 30)"), "a memory bomb")
	assert.Less(t, time.Since(start), 4*time.Second)

	in := func(args []Arg) bool {
		t.Helper()
		r, err := s.CheckInput(ctx, code, "f", args, "[3, 2, 1]")
		require.NoError(t, err)
		return r
	}
	assert.True(t, in([]Arg{{Repr: "[1, 3, 2]"}}))
	assert.True(t, in([]Arg{{Kind: Keyword, Name: "xs", Repr: "(2, 1, 3)"}}))
	assert.False(t, in([]Arg{{Repr: "[1, 2]"}}))
	assert.False(t, in([]Arg{{Repr: "[1, 3, 2]), print(("}}), "an argument is one expression")
	assert.False(t, in(nil), "a missing argument")
	assert.False(t, in([]Arg{{Repr: "__import__('sys').exit(0)"}}))
	assert.False(t, in([]Arg{{Repr: "[1, 3, 2]"}, {Kind: Keyword, Name: "k", Repr: "__import__('os')._exit(0)"}}))
	assert.Equal(t, "f([1], *(2,), k=3, **{})", Call("f", []Arg{{Repr: "[1]"}, {Kind: Star, Repr: "(2,)"}, {Kind: Keyword, Name: "k", Repr: "3"}, {Kind: StarStar, Repr: "{}"}}))
}

// TestScorerForgery: an item's code cannot forge a verdict (issue 25): it
// never runs where the verdict is made and never sees the prediction or the
// reference, so whatever it writes, rebinds or exits with, a wrong
// prediction fails (and a right one still passes).
func TestScorerForgery(t *testing.T) {
	ctx := context.Background()
	s := testScorer(t)
	honest := "def f(xs):\n    return sorted(xs)[::-1]\n"
	for _, attack := range []string{
		// The verdict channel: "pass" written where the old scorer read it.
		"import os, posix\nos.write(3, b'pass')\nposix._exit(0)\n",
		"import os, posix\nif '__preds' in globals():\n    os.write(3, b'pass')\n    posix._exit(0)\n",
		// Rebinding what the old scorer's comparison used.
		"import builtins\nbuiltins.__dict__['__preds'] = [[3, 2, 1]]\n__preds = [[3, 2, 1]]\n",
		"import ast\nast.literal_eval = lambda t: [3, 2, 1]\n",
		"import json\njson.loads = lambda t: ['[3, 2, 1]'] * 2\n",
	} {
		code := honest + attack
		r, err := s.CheckOutput(ctx, code, "[3, 2, 1]", "[1, 2, 3]")
		require.NoError(t, err)
		assert.False(t, r, "CRUXEval-O forged by %q", attack)
		r, err = s.CheckOutput(ctx, code, "[3, 2, 1]", "[3, 2, 1]")
		require.NoError(t, err)
		assert.True(t, r, "a right prediction still passes beside %q", attack)
		r, err = s.CheckInput(ctx, code, "f", []Arg{{Repr: "[5]"}}, "[3, 2, 1]")
		require.NoError(t, err)
		assert.False(t, r, "CRUXEval-I forged by %q", attack)
	}
	// A reference output that names the scorer's own variables.
	for _, ref := range []string{"__preds[0]", "__ndbg_v", "__texts[1]", "__vals[1]"} {
		r, err := s.CheckOutput(ctx, honest, ref, "[1, 2, 3]")
		require.NoError(t, err)
		assert.False(t, r, "reference output %q", ref)
	}
	// A reference output that is no literal is still evaluated after the
	// item's code, in the item's process.
	r, err := s.CheckOutput(ctx, honest, "f([1, 3, 2])", "[3, 2, 1]")
	require.NoError(t, err)
	assert.True(t, r)
	r, err = s.CheckInput(ctx, honest, "f", []Arg{{Repr: "[2, 3, 1]"}}, "f([1, 2, 3])")
	require.NoError(t, err)
	assert.True(t, r)
}

// testScorer returns a Scorer whose interpreter is resolved once (a pyenv
// shim costs a process per check otherwise).
func testScorer(t *testing.T) *Scorer {
	t.Helper()
	py, err := trace.FindPython(context.Background())
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	return &Scorer{Python: py, Timeout: 1500 * time.Millisecond}
}

func TestSignatureAndCallArgs(t *testing.T) {
	prog, err := dsl.NewProgram("def g(a):\n    return a\n\ndef f(a, b=(1, ','),\n      *rest, k: int = 2, **kw):\n    if a:\n        return g(a)\n    return b\n", "f")
	require.NoError(t, err)
	sig, err := signature(prog)
	require.NoError(t, err)
	require.Equal(t, []param{{name: "a"}, {name: "b"}, {name: "rest", kind: Star}, {name: "k", kind: Keyword}, {name: "kw", kind: StarStar}}, sig)
	assert.Equal(t, []int{7, 8}, returnLines(prog))

	locals := []dsl.Local{{Name: "a", Repr: "1"}, {Name: "b", Repr: "2"}, {Name: "k", Repr: "3"}, {Name: "rest", Repr: "(4,)"}, {Name: "kw", Repr: "{'z': 5}"}, {Name: "tmp", Repr: "0"}}
	assert.Equal(t, "f(1, 2, *(4,), k=3, **{'z': 5})", Call("f", callArgs(sig, locals)))
	assert.Equal(t, "f(b=2, k=3)", Call("f", callArgs(sig, []dsl.Local{{Name: "b", Repr: "2"}, {Name: "k", Repr: "3"}})),
		"after a missing parameter, keywords")

	slash, err := dsl.NewProgram("def f(a, /, b):\n    pass\n", "f")
	require.NoError(t, err)
	sig, err = signature(slash)
	require.NoError(t, err)
	assert.Equal(t, "f(1, 2)", Call("f", callArgs(sig, []dsl.Local{{Name: "a", Repr: "1"}, {Name: "b", Repr: "2"}})))
	assert.Equal(t, []int{2}, returnLines(slash), "no return: the last line")
}

func TestCompare(t *testing.T) {
	a := &dsl.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "1"}, {Name: "it", Repr: "<list_iterator object at 0x7f00>"}}}
	b := &dsl.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "it", Repr: "<list_iterator object at 0x7fab>"}, {Name: "x", Repr: "1"}}}
	o := compare(a, b, false)
	assert.True(t, o.state && o.event && o.line && o.locals && o.hasLocals && !o.hasValue)
	c := &dsl.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "2"}}}
	o = compare(a, c, false)
	assert.True(t, !o.state && o.event && o.line && !o.locals)
	o = compare(&dsl.State{Event: dsl.Return, Line: 4, Value: "3"}, &dsl.State{Event: dsl.Return, Line: 4, Value: "4"}, false)
	assert.True(t, !o.state && o.event && o.hasValue && !o.value)
	o = compare(nil, nil, false)
	assert.True(t, o.state)
	o = compare(nil, nil, true)
	assert.False(t, o.state, "an error is never right")
	o = compare(a, nil, false)
	assert.False(t, o.state || o.event || o.line)
}

// TestReport writes a report and decodes its charts.
func TestReport(t *testing.T) {
	n := &NextResult{Backend: "real", Setting: Setting, Mode: "policy", Items: 2, Programs: 2,
		Skipped: map[string]int{}, ByAction: map[string]*Tally{}, ByHorizon: map[string]map[string]*Tally{}}
	add := func(a, bucket string, state bool) {
		o := outcome{state: state, event: true, line: state, hasLocals: true, locals: state}
		tallyOf(n.ByAction, a).add(o)
		if n.ByHorizon[a] == nil {
			n.ByHorizon[a] = map[string]*Tally{}
		}
		tallyOf(n.ByHorizon[a], bucket).add(o)
		n.All.add(o)
		n.Forward.add(o)
	}
	add("step_into", "0", true)
	add("step_into", "0", false)
	add("breakpoint", "4-7", false)
	add("breakpoint", "16-31", true)
	n.Misses = []Miss{{Item: "x", Action: "step_into", From: "line 2 {a: '|'}", Want: "end", Got: "line 3 {}"}}
	s := &Summary{Model: "random", Backend: "neural", Next: n, Crux: &CruxResult{Items: 1, Samples: 1,
		Scores: map[string]*Pass{StepReturn: {Items: 1, Samples: 1, Correct: 1, Pass1: 100}, Inverse: {Items: 1, Samples: 1, Pass1: 0}}}}
	dir := t.TempDir()
	require.NoError(t, s.WriteReport(dir))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	for _, want := range []string{"| step_into | 2 | 50.0 (1/2)", "horizon-forward.png", "actions.png", "cruxeval.png", "| O | step_return | 100.0", "| I | inverse | 0.0", `\|`} {
		assert.Contains(t, string(md), want)
	}
	_, err = os.Stat(filepath.Join(dir, "horizon-inverse.png"))
	assert.True(t, os.IsNotExist(err), "no inverse actions, no chart")
	for _, name := range []string{"horizon-forward.png", "actions.png", "cruxeval.png"} {
		f, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(f))
		require.NoError(t, err, name)
		assert.Equal(t, 960, img.Bounds().Dx())
		// Coloured (series) pixels exist: something was plotted.
		coloured := 0
		for y := 0; y < img.Bounds().Dy(); y += 2 {
			for x := 0; x < img.Bounds().Dx(); x += 2 {
				r, g, b, _ := img.At(x, y).RGBA()
				if r != g || g != b {
					coloured++
				}
			}
		}
		assert.Greater(t, coloured, 100, name)
	}
	js, err := s.JSON()
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, "random", back["model"])
}

// randomModel is a random-weight tiny model over a tokenizer with the DSL
// tokens.
func randomModel(t *testing.T, seed uint64) *ndbg.Model { return testmodel.Model(t, seed) }

// TestNeuralRandom: a small run with a random model completes; its scores
// are whatever they are (near 0), and every prediction is accounted for.
func TestNeuralRandom(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	m := randomModel(t, 7)
	gen, err := Generated(99, 3, []string{"mixed"})
	require.NoError(t, err)
	be := Neural(m, sample.Params{})
	res, err := NextState(ctx, NextConfig{Items: gen, Backend: be, Workers: 2, MaxPairs: 6})
	require.NoError(t, err)
	require.Equal(t, 3, res.Programs)
	require.Equal(t, 18, res.All.N)
	assert.Equal(t, res.All.N, res.Forward.N+res.Inverse.N)
	assert.Equal(t, "neural", res.Backend)

	dev := devItems(t, 2)
	crux, err := CRUXEval(ctx, CruxConfig{Items: dev, Backend: Neural(m, sample.Params{Temperature: 1}), Scorer: &Scorer{},
		Strategies: []string{StepReturn, Inverse}, Samples: 2, Workers: 2})
	require.NoError(t, err)
	for _, s := range []string{StepReturn, Inverse} {
		p := crux.Scores[s]
		assert.Equal(t, 4, p.Samples, s)
		assert.False(t, math.IsNaN(p.Pass1))
		assert.GreaterOrEqual(t, p.Pass1, 0.0)
	}
	// A random model sampling hot writes junk, but CRUXEval's sessions
	// are literal (ndbg.Literals): every answer is a Python literal, as
	// ast.literal_eval decides (syntax only: an unhashable key fails there).
	var answers []string
	for _, it := range crux.PerItem {
		for _, p := range it.Predictions[StepReturn] {
			if p.Answer != "" {
				answers = append(answers, p.Answer)
			}
		}
	}
	in, err := json.Marshal(answers)
	require.NoError(t, err)
	check := exec.Command("python3", "-I", "-S", "-c", `import ast, json, sys
for a in json.load(sys.stdin):
    try:
        ast.literal_eval(a)
    except TypeError:
        pass
    except Exception as e:
        print("not a literal:", repr(a), e)`)
	check.Stdin = bytes.NewReader(in)
	out, err := check.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Empty(t, string(out), "answers %q", answers)
	require.NotNil(t, res.Calibration, "neural predictions carry a confidence")
	assert.Equal(t, res.All.N-res.All.Errors, res.Calibration.N)
	s := &Summary{Model: m.Name(), Backend: be.Name(), Next: res, Crux: crux}
	dir := t.TempDir()
	require.NoError(t, s.WriteReport(dir))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "![reliability diagram](reliability.png)")
	f, err := os.ReadFile(filepath.Join(dir, "reliability.png"))
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(f))
	require.NoError(t, err)
}

// TestCalibration: the ECE over 10 bins, against a direct computation of
// its definition on a small hand-made set.
func TestCalibration(t *testing.T) {
	preds := []struct {
		conf  float64
		right bool
	}{{0.95, true}, {0.91, true}, {0.99, false}, {0.05, false}, {0.02, false}, {0.55, true}, {0.5, false}, {1, true}, {0, false}}
	var c Calibration
	for _, p := range preds {
		c.add(p.conf, p.right)
	}
	// Bins: [0.9,1]: 0.95 0.91 0.99 1 (3 right, mean 0.9625);
	// [0,0.1): 0.05 0.02 0 (0 right, mean 0.07/3); [0.5,0.6): 0.55 0.5 (1 right, mean 0.525).
	want := 4.0/9*math.Abs(3.0/4-0.9625) + 3.0/9*math.Abs(0-0.07/3) + 2.0/9*math.Abs(0.5-0.525)
	assert.InDelta(t, want, c.ECE, 1e-12)
	assert.Equal(t, 9, c.N)
	assert.Len(t, c.Bins, 10)
	assert.Equal(t, 4, c.Bins[9].N)
	assert.Contains(t, c.markdown(true), "reliability.png")
	_, err := c.chart().PNG()
	require.NoError(t, err)
}

// TestScorerLongCodeAndOutput: an item's code longer than one argument may
// be (128 KiB) is checked, and a check that prints more than the output kept
// still gives its verdict.
func TestScorerLongCodeAndOutput(t *testing.T) {
	s := &Scorer{}
	code := "# " + strings.Repeat("x", 200<<10) + "\ndef f(xs):\n    print('y' * 100000)\n    return sorted(xs)\n"
	r, err := s.CheckInput(context.Background(), code, "f", []Arg{{Repr: "[2, 1]"}}, "[1, 2]")
	require.NoError(t, err)
	assert.True(t, r)
	r, err = s.CheckOutput(context.Background(), code+"f([])\n", "[1, 2]", "[2, 1]")
	require.NoError(t, err)
	assert.False(t, r)
}
