package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const debugProgram = `def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)

def f(data):
    clean = [d for d in data if d is not None]
    m = mean(clean)
    return round(m, 2)
`

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

func TestDebugRealSession(t *testing.T) {
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--backend", "real"},
		"n", "n", "b 4", "c", "p x", "p total", "w", "", "r", "br", "p xs", "l", "bn", "set xs=[2]", "zz", "to 99", "cl", "c", "q")
	for _, want := range []string{
		"> call      line 7: def f(data):",
		"    data = [1, None, 4]",
		"> line      line 8: clean = [d for d in data if d is not None]",
		"breakpoint at line 4: total += x",
		"> line      line 4: total += x",
		"(ndbg) 1\n",                      // p x
		"(ndbg) 0\n",                      // p total
		"def f(data):\n  def mean(xs):\n", // where
		"> return    line 5: return total / len(xs) -> 2.5",
		"> call      line 1: def mean(xs):",
		"[1, 4]", // p xs after back to the call
		"  1  -> def mean(xs):",
		"*** ndbg: not supported", // set on a real run
		`*** unknown command "zz"`,
		"*** ndbg: line 99 is not a code line",
		"--the program finished--",
	} {
		require.Contains(t, out, want)
	}
}

func TestDebugUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	require.Error(t, debugSession(context.Background(), []string{"--call", "f(1)"}, strings.NewReader(""), &out, &errb))
	require.Error(t, debugSession(context.Background(), []string{"/nonexistent.py", "--call", "f(1)", "--backend", "real"}, strings.NewReader(""), &out, &errb))
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
	for _, want := range []string{"breakpoint at line 3: x = xs[0]\n", "> line      line 3: x = xs[0]\n", "  3 B-> "} {
		require.Contains(t, out.String(), want)
	}
}
