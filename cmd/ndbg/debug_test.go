package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
)

// debugProgram is the shared mean program.
const debugProgram = testmodel.MeanProgram

// fromPrediction is what p adds to a value it evaluated on a prediction.
const fromPrediction = "(derived from a prediction: evaluated on the predicted locals)\n"

// typeInto runs `ndbg debug` with the given lines typed at its prompt.
func typeInto(t *testing.T, args []string, lines ...string) string {
	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte(debugProgram), 0o644))
	var out, errb bytes.Buffer
	in := strings.NewReader(strings.Join(lines, "\n") + "\n")
	err := debugSession(context.Background(), append([]string{file}, args...), in, &out, &errb)
	require.NoError(t, err, errb.String())
	return out.String()
}

// answers splits a session's output at its prompts: answers[i] is what the
// i-th typed line printed (answers[0] what came before the first prompt).
func answers(out string) []string { return strings.Split(out, "(ndbg) ") }

// TestDebugCompareStaysInStep: the real run takes exactly the actions the
// predicting session took. A step the session refuses (the cwm backend has
// no continue) leaves the real run where it is, and an edit is made in the
// live real run too.
func TestDebugCompareStaysInStep(t *testing.T) {
	cwm := t.TempDir()
	testmodel.WriteCWMDir(t, cwm)
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--backend", "cwm", "--model", cwm, "--compare", "--threads", "1"}, "c", "s", "q")
	a := answers(out)
	require.Len(t, a, 4, out)
	require.Contains(t, a[1], "*** ", "cwm refuses continue")
	require.NotContains(t, a[1], "real", "and the real run did not continue")
	require.Regexp(t, `== real:  the same|!! real:  line +line 8: `, a[2], "the real run is one step in")
	require.NotContains(t, a[2], "real:  the program finished")

	out = typeInto(t, []string{"--call", "f([1, None, 4])", "--compare", "--threads", "1"}, "set data=[5]", "s", "q")
	a = answers(out)
	require.Len(t, a, 4, out)
	require.Contains(t, a[1], "    data = [5]\n== real:  the same")
	require.Regexp(t, `== real:  the same|!! real:  line +line 8: `, a[2], "the real run is one step in, from the edit")
}

// TestDebugSetRejectsBadEdits: set names an existing local and gives a
// repr, or it is refused and the session goes on from the unedited state.
func TestDebugSetRejectsBadEdits(t *testing.T) {
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--threads", "1"},
		"set zz=1", "set data=[", "p data", "set data=[2, 3]", "p data", "q")
	a := answers(out)
	require.Contains(t, a[1], `*** ndbg: set: no local "zz"`)
	require.Contains(t, a[2], "*** ndbg: set data: the value must be a Python repr")
	require.Equal(t, "[1, None, 4]\n"+fromPrediction, a[3])
	require.Equal(t, "[2, 3]\n"+fromPrediction, a[5])
}

// TestDebugLongLine: a command line over bufio.Scanner's 64 KiB is read
// whole and refused by its command; the session goes on.
func TestDebugLongLine(t *testing.T) {
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--backend", "real"},
		"p "+strings.Repeat("x", 100<<10), "set data="+strings.Repeat("1", 100<<10), "p data", "q")
	a := answers(out)
	require.Len(t, a, 5, "every line was read")
	require.Contains(t, a[1], "*** NameError: name 'xxx")
	require.Contains(t, a[2], "*** ")
	require.Equal(t, "[1, None, 4]\n", a[3])
}

func TestDebugRealSession(t *testing.T) {
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--backend", "real"},
		"n", "n", "b 4", "c", "p x", "p total", "w", "", "r", "cl", "r", "br", "p xs", "l", "bn", "set clean=[2]", "zz", "to 99", "cl", "c", "q")
	for _, want := range []string{
		"> call      line 7: def f(data):",
		"    data = [1, None, 4]",
		"> line      line 8: clean = [d for d in data if d is not None]",
		"Breakpoint 1 at /",
		"> line      line 4: total += x",
		"(ndbg) 1\n",                      // p x
		"(ndbg) 0\n",                      // p total
		"(9)f()\n-> m = mean(clean)\n> /", // where
		"(4)mean()\n-> total += x\n",
		"(ndbg) > line      line 4: total += x\n    xs = [1, 4]\n    total = 1\n    x = 4\n", // r stops at the breakpoint, as pdb
		"> return    line 5: return total / len(xs) -> 2.5",
		"> call      line 1: def mean(xs):",
		"[1, 4]", // p xs after back to the call
		"Deleted breakpoint 1 at /",
		"  1  ->\tdef mean(xs):",                                          // l, as pdb's list
		"    clean = [2]\n(ndbg) *** NameError: name 'zz' is not defined", // set, then zz runs as Python
		"*** ndbg: line 99 is not a code line",
		"--the program finished--",
	} {
		require.Contains(t, out, want)
	}
}

func TestDebugUsageErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"debug", "--bogus"}, &stdout, &stderr))
	require.Equal(t, 1, strings.Count(stderr.String(), "-bogus"), "the bad flag is reported once: %s", stderr.String())
	require.Contains(t, stderr.String(), "--backend neural|cwm|real", "the usage names every backend")

	var out, errb bytes.Buffer
	require.Error(t, debugSession(context.Background(), []string{"--call", "f(1)"}, strings.NewReader(""), &out, &errb))
	require.Error(t, debugSession(context.Background(), []string{"/nonexistent.py", "--call", "f(1)", "--backend", "real"}, strings.NewReader(""), &out, &errb))
	// A whole script (no --call) needs the real backend: the model's trace
	// format has no module-level frames.
	prog := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(prog, []byte(debugProgram), 0o644))
	stderr.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"debug", prog}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "whole script needs --backend real")
	// A file that is not there says so first, whatever else is wrong.
	stderr.Reset()
	require.Equal(t, 1, run(context.Background(), []string{"debug", "nosuch.py"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "reading the program: stat nosuch.py: no such file or directory")
}

// TestDebugShowsUserLines: the listing, the stops and the breakpoints show
// the user's lines, not the prepared program's "  # (2)".
func TestDebugShowsUserLines(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte("def f(xs):\n    x = xs[0]\n    x = xs[0]\n    return x\n"), 0o644))
	var out, errb bytes.Buffer
	in := strings.NewReader("b 3\nc\nl\nq\n")
	require.NoError(t, debugSession(context.Background(), []string{file, "--call", "f([1])", "--backend", "real"}, in, &out, &errb), errb.String())
	require.NotContains(t, out.String(), "# (2)")
	for _, want := range []string{"Breakpoint 1 at " + file + ":3\n", "> line      line 3: x = xs[0]\n", "  3 B->\t"} {
		require.Contains(t, out.String(), want)
	}
}

// TestDebugConfidence: a prediction the model was unsure of shows its
// confidence; with --verify-below 1 every unsure step is checked against
// the real run, which then matches at each step; --verify-below outside
// [0, 1] or with the real backend is a usage error.
func TestDebugConfidence(t *testing.T) {
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--threads", "1"}, "s", "s", "s", "q")
	require.Regexp(t, `\[(\d+|<1)%\]`, out, "some step below 90%")

	out = typeInto(t, []string{"--call", "f([1, None, 4])", "--threads", "1", "--verify-below", "1", "--compare"}, "s", "s", "n", "n", "q")
	require.Contains(t, out, "== verified: the model was")
	require.NotContains(t, out, "!! real", "verified states are the real ones")

	for _, bad := range [][]string{{"--verify-below", "1.5"}, {"--verify-below", "0.5", "--backend", "real"}} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run(context.Background(), append([]string{"debug", "x.py", "--call", "f(1)"}, bad...), &stdout, &stderr), "%v", bad)
	}
}

// TestDebugEvalObjects: on the real backend p runs in the live frame, as
// pdb's: objects, their attributes and methods, the program's globals.
func TestDebugEvalObjects(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte("class C:\n    pass\n\ndef f(n):\n    o = C()\n    return n\n"), 0o644))
	var out, errb bytes.Buffer
	in := strings.NewReader("n\nn\np o\np n + 1\npp [n] * 2\np )\np o.__class__.__name__, C.__module__\nq\n")
	require.NoError(t, debugSession(context.Background(), []string{file, "--call", "f(4)", "--backend", "real"}, in, &out, &errb), errb.String())
	a := answers(out.String())
	require.Len(t, a, 9, out.String())
	require.Regexp(t, `^<program\.C object at 0x[0-9a-f]+>\n$`, a[3])
	require.Equal(t, "5\n", a[4])
	require.Equal(t, "[4, 4]\n", a[5])
	require.Contains(t, a[6], "*** SyntaxError: ")
	require.Equal(t, "('C', 'program')\n", a[7])
}

// TestDebugNeuralVocabulary: on a prediction, p says it is derived from
// one, and where says what it cannot know.
func TestDebugNeuralVocabulary(t *testing.T) {
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--threads", "1"}, "p data[0] + 1", "w", "retval", "u", "q")
	a := answers(out)
	require.Equal(t, "2\n"+fromPrediction, a[1])
	require.Contains(t, a[2], "> /")
	require.Contains(t, a[2], "(7)f()\n-> def f(data):")
	require.Equal(t, "*** Not yet returned!\n", a[3])
	require.Equal(t, "*** Oldest frame\n", a[4])
}

// TestDebugCompareTemporaryBreakpoint: the real run --compare follows
// stops at the temporary breakpoint the prediction stopped at, which goes
// only once the action is over.
func TestDebugCompareTemporaryBreakpoint(t *testing.T) {
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--compare", "--threads", "1"}, "tbreak 4", "c", "b", "q")
	a := answers(out)
	require.Len(t, a, 5, out)
	require.Contains(t, a[2], "Deleted breakpoint 1 at ")
	require.Contains(t, a[2], "> line      line 4: total += x", "the prediction stopped at the breakpoint")
	require.Regexp(t, `== real:  the same|!! real:  line +line 4: `, a[2], "and so did the real run")
	require.Equal(t, "", a[3], "no breakpoints left")
}

// TestDebugNoExec: `ndbg debug --no-exec` starts at the call, its
// arguments bound from the literal call, and predicts on; --compare, which
// runs the program, is a usage error beside it.
func TestDebugNoExec(t *testing.T) {
	out := typeInto(t, []string{"--call", "f([1, None])", "--no-exec", "--threads", "1"}, "p data", "s", "q")
	a := answers(out)
	require.Contains(t, a[0], "ndbg: debugging f([1, None]) with the neural debugger")
	require.Contains(t, a[1], "[1, None]")

	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte(debugProgram), 0o644))
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"debug", file, "--call", "f([1])", "--no-exec", "--compare"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--no-exec")
}

// TestDebugTerminalSafe: escape sequences in the program's output and in a
// __repr__ reach the terminal escaped (as repr writes them), unless
// --raw-output asks for them as they are.
func TestDebugTerminalSafe(t *testing.T) {
	src := "class T:\n    def __repr__(self):\n        return '\\x1b]52;c;cHduZWQ=\\x07'\n\n" +
		"def f(x):\n    print('\\x1b]0;pwned\\x07\\u009b2J done')\n    t = T()\n    return x\n"
	file := filepath.Join(t.TempDir(), "esc.py")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	run := func(extra ...string) string {
		var out, errb bytes.Buffer
		in := strings.NewReader("n\nn\nn\nq\n")
		err := debugSession(context.Background(), append([]string{file, "--call", "f(1)", "--backend", "real"}, extra...), in, &out, &errb)
		require.NoError(t, err, errb.String())
		return out.String()
	}
	out := run()
	assert.NotContains(t, out, "\x1b", "no escape character reaches the terminal")
	assert.NotContains(t, out, "\u009b")
	assert.Contains(t, out, `\x1b]0;pwned\x07\x9b2J done`, "the output, escaped")
	assert.Contains(t, out, `t = \x1b]52;c;cHduZWQ=\x07`, "the repr, escaped")
	raw := run("--raw-output")
	assert.Contains(t, raw, "\x1b]0;pwned\x07\u009b2J done")
	assert.Contains(t, raw, "t = \x1b]52;c;cHduZWQ=\x07")
}

// TestDebugMarksCutOutput: output past trace.Limits.MaxStdout ends with
// ndbg.OutputCut's line at the stop after it, where it used to stop
// without a word.
func TestDebugMarksCutOutput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte("def f(n):\n    for i in range(n):\n        print('x' * 99)\n    return n\n"), 0o644))
	var out, errb bytes.Buffer
	err := debugSession(context.Background(), []string{file, "--call", "f(700)", "--backend", "real"}, strings.NewReader("c\n"), &out, &errb)
	require.NoError(t, err, errb.String())
	kept := 64 << 10
	assert.Contains(t, out.String(), strings.Repeat(strings.Repeat("x", 99)+"\n", 700)[:kept]+ndbg.OutputCut("stdout", kept))
	assert.Equal(t, 1, strings.Count(out.String(), "cut here"))
}

// TestDebugStaleInterrupt: a Ctrl-C pressed at the prompt does not stop
// the next action at its first event: continue goes on to the breakpoint.
func TestDebugStaleInterrupt(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte("def f(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"), 0o644))
	interrupts := make(chan struct{}, 1)
	interrupts <- struct{}{} // pressed before the first command
	var out, errb bytes.Buffer
	in := strings.NewReader("b 4\nc\np i, total\nq\n")
	require.NoError(t, debugWith(context.Background(), []string{file, "--call", "f(3)", "--backend", "real"}, in, &out, &errb, interrupts), errb.String())
	require.NotContains(t, out.String(), "Program interrupted")
	require.Contains(t, out.String(), "(0, 0)")
}

// TestDebugInterruptAndCommands: Ctrl-C (an interrupt) stops an endless
// loop where it is, and the session goes on there; a breakpoint's
// commands run when it stops; an alias expands with its arguments.
func TestDebugInterruptAndCommands(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte("def f(i):\n    while True:\n        i += 1\n"), 0o644))
	interrupts := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				select {
				case interrupts <- struct{}{}:
				default:
				}
			}
		}
	}()
	var out, errb bytes.Buffer
	in := strings.NewReader("c\np i >= 0\nq\n")
	err := debugWith(context.Background(), []string{file, "--call", "f(0)", "--backend", "real"}, in, &out, &errb, interrupts)
	close(done)
	require.NoError(t, err, errb.String())
	a := answers(out.String())
	require.Len(t, a, 4, out.String())
	require.Contains(t, a[1], "Program interrupted. (Use 'cont' to resume).")
	require.Regexp(t, `> line +line [23]: `, a[1], "in the loop")
	require.Equal(t, "True\n", a[2])

	src := "def f(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	out.Reset()
	in = strings.NewReader("b 4\ncommands 1\nsilent\np i, total\nend\nalias pp2 pp [%1, %2]\nc\nc\npp2 total i\nq\n")
	require.NoError(t, debugSession(context.Background(), []string{file, "--call", "f(3)", "--backend", "real"}, in, &out, &errb), errb.String())
	require.Contains(t, out.String(), "(com) (com) (com) ")
	require.Contains(t, out.String(), "(ndbg) (0, 0)\n(ndbg) (1, 0)\n(ndbg) [0, 1]\n", "silent stops, each printing i and total; then the alias")
	require.NotContains(t, out.String(), "> line      line 4", "silent: the stops are not shown")
}
