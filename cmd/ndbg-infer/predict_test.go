package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
)

const sumSource = "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"

func TestPredictReal(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(prog, []byte(sumSource), 0o644))
	runJSON := func(args ...string) map[string]any {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		require.Equal(t, 0, code, errb.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v), out.String())
		return v
	}
	st := runJSON("--program", prog, "--call", "f([1, 2])", "--backend", "real", "--actions", "step_into step_over", "--action", "breakpoint:4")
	require.Equal(t, "line", st["event"])
	require.EqualValues(t, 4, st["line"])
	require.Equal(t, map[string]any{"xs": "[1, 2]", "total": "0", "x": "1"}, st["locals"])

	cmp := runJSON("--program", prog, "--call", "f([1, 2])", "--backend", "real", "--action", "step_return", "--compare")
	require.Equal(t, "3", cmp["real"].(map[string]any)["value"])
	require.Equal(t, true, cmp["match"].(map[string]any)["all"])
	// The real return state shows the frame's locals; the match says what
	// it compared.
	require.Equal(t, map[string]any{"xs": "[1, 2]", "total": "3", "x": "2"}, cmp["real"].(map[string]any)["locals"])
	require.Equal(t, []any{"event", "line", "locals", "value", "depth"}, cmp["match"].(map[string]any)["compared"])

	end := runJSON("--program", prog, "--call", "f([])", "--backend", "real", "--action", "continue")
	require.Equal(t, "end", end["event"])

	var out, errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"--program", prog, "--call", "f([1])", "--backend", "real", "--action", "jump"}, &out, &errb),
		"an action that is none is a usage error")
	for _, bad := range [][]string{
		{"--program", prog, "--call", "f([1])", "--backend", "real", "--action", "breakpoint:1000"},
		{"--program", prog, "--call", "g(1)", "--backend", "real"},
		{"--program", prog, "--call", "f([1])", "--backend", "real", "--action", "inv_step_into"},
		{"--program", filepath.Join(t.TempDir(), "missing.py"), "--call", "f(1)", "--backend", "real"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 1, run(context.Background(), bad, &out, &errb), "%v", bad)
		require.NotEmpty(t, errb.String())
	}
}

// TestPredictRealSaysHowItEnded: a real run that raises says so where the
// state alone would not (a return state's value None): the exception that
// a return leaves its frame by ("raising") and the one that ended the
// program ("escaped"); an action its CPU time (--timeout) cut short is an
// error that says where the program stopped, not a state shown as the
// action's.
func TestPredictRealSaysHowItEnded(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "p.py")
	require.NoError(t, os.WriteFile(prog, []byte("def f(xs):\n    m = sum(xs) / len(xs)\n    return m\n"), 0o644))
	runJSON := func(args ...string) map[string]any {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(context.Background(), args, &out, &errb), errb.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v), out.String())
		return v
	}
	ret := runJSON("--program", prog, "--call", "f([])", "--backend", "real", "--actions", "step_into step_into", "--action", "step_into")
	require.Equal(t, "return", ret["event"])
	require.Equal(t, "None", ret["value"])
	require.Equal(t, "ZeroDivisionError('division by zero')", ret["raising"])
	end := runJSON("--program", prog, "--call", "f([])", "--backend", "real", "--action", "continue")
	require.Equal(t, map[string]any{"type": "ZeroDivisionError", "message": "division by zero", "line": float64(2)}, end["escaped"])
	ok := runJSON("--program", prog, "--call", "f([2])", "--backend", "real", "--action", "continue")
	require.Equal(t, map[string]any{"event": "end"}, ok)

	loop := filepath.Join(dir, "loop.py")
	require.NoError(t, os.WriteFile(loop, []byte("def f(n):\n    while True:\n        n += 1\n    return n\n"), 0o644))
	var out, errb bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"--program", loop, "--call", "f(1)", "--backend", "real", "--timeout", "1s", "--action", "step_return"}, &out, &errb))
	require.Empty(t, out.String())
	require.Contains(t, errb.String(), "the program ran past the CPU time of an action (--timeout) and stopped at line")
}

func TestCRUXEvalModeReal(t *testing.T) {
	item := filepath.Join(t.TempDir(), "item.json")
	require.NoError(t, os.WriteFile(item, []byte(`{"id":"t","code":"def f(xs):\n    return sorted(xs)[::-1]\n","input":"[2, 3, 1]","output":"[3, 2, 1]"}`), 0o644))
	for _, args := range [][]string{
		{"--cruxeval-o", "--item", item, "--backend", "real"},
		{"--cruxeval-o", "--item", item, "--backend", "real", "--strategy", "breakpoint"},
		{"--cruxeval-i", "--item", item, "--backend", "real"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(context.Background(), args, &out, &errb), errb.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v))
		require.Equal(t, true, v["pass"], "%v: %s", args, out.String())
		if args[0] == "--cruxeval-i" {
			require.Equal(t, "[2, 3, 1]", v["input"], "CRUXEval's form: the arguments alone")
		}
	}
	var out, errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"--cruxeval-o", "--cruxeval-i", "--item", item}, &out, &errb))
}

// runCmd runs ndbg-infer with args and returns its exit status, stdout and
// stderr.
func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestCompareKeepsPredictionWhenRealFails: an infinite loop's real run
// passes its limits; --compare still shows the prediction, says why there
// is no real state, and names flags ndbg-infer has.
func TestCompareKeepsPredictionWhenRealFails(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "loop.py")
	require.NoError(t, os.WriteFile(prog, []byte("def f(n):\n    while True:\n        n += 1\n"), 0o644))
	code, out, errOut := runCmd("--program", prog, "--call", "f(0)", "--action", "continue", "--compare", "--max-events", "500", "--threads", "1")
	require.Equal(t, 1, code, errOut)
	var v struct {
		Predicted map[string]any `json:"predicted"`
		RealError string         `json:"real_error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.NotEmpty(t, v.Predicted["event"], "the prediction is shown")
	require.Contains(t, v.RealError, "cut at 500 events")
	require.Contains(t, v.RealError, "--max-events")
	require.Contains(t, errOut, "the real run for --compare failed")
	require.NotContains(t, out+errOut, "trace.Limits", "no advice the command line cannot follow")
}

func TestCommandLine(t *testing.T) {
	code, _, errOut := runCmd()
	require.Equal(t, 2, code, "no arguments is a usage error")
	require.Contains(t, errOut, "usage: ndbg-infer")

	code, out, _ := runCmd("--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "the embedded model unless --model DIR", "predict needs no --model")
	require.NotContains(t, out, "[mode] --model DIR")

	code, out, _ = runCmd("--version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "ndbg-infer ")
	require.Contains(t, out, "default model: weights/default, model.safetensors sha256 ")

	code, _, errOut = runCmd("--program", "x.py", "--call", "f()", "--bogus")
	require.Equal(t, 2, code)
	require.Equal(t, 1, strings.Count(errOut, "-bogus"), "the bad flag is reported once: %s", errOut)

	code, _, errOut = runCmd("--program", "x.py", "--call", "f()", "--backend", "magic")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `--backend "magic": want neural, cwm, real`)

	code, _, errOut = runCmd("generate", "--model", "../../model/testdata/mha_f32", "--tokens", "1", "--max-tokens", "-5")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--max-tokens -5: want at least 1")

	code, _, errOut = runCmd("--cruxeval-o", "--item", filepath.Join(t.TempDir(), "none.json"), "--backend", "real")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "reading the item")
	require.NotContains(t, errOut, "program")
}

// TestPredictShowsUserLine: "source" is the line as the user wrote it, not
// the prepared one (a repeated line gets "  # (2)" to make it unique).
func TestPredictShowsUserLine(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(prog, []byte("def f(xs):\n    x = xs[0]\n    x = xs[0]\n    return x\n"), 0o644))
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"--program", prog, "--call", "f([1])", "--backend", "real",
		"--action", "breakpoint:3", "--compare"}, &out, &errb), errb.String())
	var v map[string]map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &v), out.String())
	require.EqualValues(t, 3, v["real"]["line"])
	require.Equal(t, "    x = xs[0]", v["real"]["source"])
	require.Equal(t, "    x = xs[0]", v["predicted"]["source"])
}

// TestPredictConfidence: a neural prediction's JSON carries its
// confidence per field and the uncertain mark; with --verify-below 1 the
// state is the real one, marked verified, with the model's beside it.
func TestPredictConfidence(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(prog, []byte(sumSource), 0o644))
	runJSON := func(args ...string) map[string]any {
		var out, errb bytes.Buffer
		code := run(context.Background(), append(args, "--threads", "1"), &out, &errb)
		require.Equal(t, 0, code, errb.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v), out.String())
		return v
	}
	st := runJSON("--program", prog, "--call", "f([1, 2])", "--actions", "step_into", "--action", "step_into")
	conf := st["confidence"].(map[string]any)
	for _, k := range []string{"state", "event", "line"} {
		v := conf[k].(float64)
		require.True(t, v >= 0 && v <= 1, "%s %v", k, v)
	}
	require.Len(t, conf["locals"], len(st["locals"].(map[string]any)))
	require.Contains(t, st, "uncertain")

	cmp := runJSON("--program", prog, "--call", "f([1, 2])", "--action", "step_return", "--compare", "--verify-below", "1")
	pred := cmp["predicted"].(map[string]any)
	if pred["confidence"].(map[string]any)["state"].(float64) < 1 {
		require.Equal(t, true, pred["verified"])
		require.Contains(t, pred, "model")
		require.Equal(t, true, cmp["match"].(map[string]any)["all"])
	}
}

// TestPredictNoExec: --no-exec predicts from the call built from the
// program's text: module code that would stop the run does not run, an
// argument that is code is refused by name, and the flags that run the
// program are usage errors beside it.
func TestPredictNoExec(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	src := "import os\nif os.getpid():\n    raise SystemExit('module code ran')\n\n" + sumSource
	require.NoError(t, os.WriteFile(prog, []byte(src), 0o644))
	code, _, errOut := runCmd("--program", prog, "--call", "f([1, 2])", "--action", "step_into", "--threads", "1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "module code ran", "without --no-exec the module code runs")

	code, out, errOut := runCmd("--program", prog, "--call", "f([1, 2])", "--action", "step_into", "--threads", "1", "--no-exec")
	require.Equal(t, 0, code, errOut)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.NotEmpty(t, st["event"])

	code, _, errOut = runCmd("--program", prog, "--call", "f(__import__('os').getcwd())", "--threads", "1", "--no-exec")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "argument 1, __import__('os').getcwd(), is not a literal")

	for _, bad := range [][]string{{"--compare"}, {"--backend", "real"}, {"--verify-below", "0.5"}} {
		code, _, errOut = runCmd(append([]string{"--program", prog, "--call", "f([1])", "--no-exec"}, bad...)...)
		require.Equal(t, 2, code, "%v: %s", bad, errOut)
		require.Contains(t, errOut, "--no-exec")
	}
}

// TestCWMNeedsACWMCheckpoint: --backend cwm without --model (the embedded
// default model, trained with the DSL's action tokens) is a usage error
// that says which model it needs, and so is the help's word for it
// (issue 29: it ran and ended at the first step); with a model directory
// trained with action tokens the session does not start, saying why.
func TestCWMNeedsACWMCheckpoint(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(prog, []byte(sumSource), 0o644))
	var out, errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"--program", prog, "--call", "f([1])", "--backend", "cwm", "--action", "step_into"}, &out, &errb))
	require.Contains(t, errb.String(), "--backend cwm needs --model DIR, a CWM checkpoint")
	require.Empty(t, out.String())

	dsl := t.TempDir()
	testmodel.WriteDir(t, dsl, 0)
	out.Reset()
	errb.Reset()
	require.Equal(t, 1, run(context.Background(), []string{"--program", prog, "--call", "f([1])", "--backend", "cwm", "--model", dsl, "--action", "step_into"}, &out, &errb))
	require.Contains(t, errb.String(), "trained with the DSL's action tokens")

	out.Reset()
	errb.Reset()
	run(context.Background(), []string{"predict", "-h"}, &out, &errb)
	require.Contains(t, out.String()+errb.String(), "cwm (only with --model DIR of a CWM checkpoint")
}

// TestActionsThroughTheEnd: --actions may run to the end, and the action
// after them step back from it, on the neural backend as on the real one
// (the neural one from its history: back to the call it started at).
func TestActionsThroughTheEnd(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(prog, []byte(sumSource), 0o644))
	for _, backend := range []string{"real", "neural"} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"--program", prog, "--call", "f([1, 2])", "--backend", backend,
			"--actions", "continue", "--action", "inv_step_return"}, &out, &errb)
		require.Equal(t, 0, code, "%s: %s", backend, errb.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v), out.String())
		require.Equal(t, "call", v["event"], backend)
		require.Equal(t, map[string]any{"xs": "[1, 2]"}, v["locals"], backend)
		require.EqualValues(t, 0, v["depth"], backend)
	}
}
