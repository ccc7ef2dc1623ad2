package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pdbDriver calls the entry under CPython's own pdb as ndbg debug --call
// does: pdb.Pdb().runcall(f, *args) stops first at f's first line.
const pdbDriver = `import pdb, sys
sys.path.insert(0, sys.argv[1])
import prog
name, args = sys.argv[2].split("(", 1)
pdb.Pdb(readrc=False).runcall(getattr(prog, name.strip()), *eval("[" + args.strip()[:-1] + "]", vars(prog)))
`

// pdbCase is a program, a call and the commands typed at both prompts.
type pdbCase struct {
	name, src, call string
	cmds            []string
}

var pdbCases = []pdbCase{
	{"conditional break, p, pp, where, up, down, display, until, retval", debugProgram + "\n\ndef g(data):\n    return f(data) + 1\n", "g([1, None, 4, 5])", []string{
		"b 4, x > 1", "c", "p x", "pp {'k': list(range(30)), 'total': total}", "p total + x * 2", "p zz", "w", "u", "p clean", "p len(clean)", "u", "p data", "d", "d", "d",
		"display total", "display", "n", "n", "n", "disable 1", "unt", "unt", "unt", "retval", "rv", "p total", "n", "retval", "enable 1", "b", "c", "c", "c",
	}},
	{"tbreak and break by function, until over a loop", `def g(n):
    acc = []
    for i in range(n):
        acc.append(i * i)
    total = sum(acc)
    return total

def f(n):
    a = g(n)
    b = g(n + 1)
    return a + b
`, "f(3)", []string{
		"tbreak g", "b", "c", "unt 1", "unt x", "unt 4", "p i", "unt 5", "p acc", "b g", "b", "display i", "n", "n", "c", "display i",
		"n", "n", "n", "n", "unt", "unt", "p acc", "pp acc", "r", "retval", "b", "cl 2", "b 5, total > 100", "b 9", "c", "p total", "n", "w", "retval", "c",
	}},
	{"recursion: where, up into the same function, conditions on its locals", `def fact(n):
    if n <= 1:
        return 1
    rest = fact(n - 1)
    return n * rest

def f(k):
    squares = [i * i for i in range(k)]
    return fact(k) + sum(squares)
`, "f(4)", []string{
		"b 3", "b 5, rest > 2", "c", "w", "u", "p n", "u", "p n, k if 'k' in dir() else None", "d", "display n", "c", "w", "p rest", "n", "retval", "unt", "p n * 10", "c", "rv",
	}},
	{"an exception escapes", `def h(xs):
    return xs[0] / xs[1]

def f(xs):
    y = h(xs)
    return y
`, "f([1, 0])", []string{"s", "n", "w", "p xs", "u", "p xs", "d", "n", "n", "n", "c"}},
	{"an exception escapes through a comprehension and a finally, past a handled one", `def h(xs):
    try:
        return xs[0] / xs[1]
    finally:
        print("x")

def g(xs):
    try:
        int("a")
    except ValueError:
        pass
    return h(xs)

def f(xs):
    y = [g(xs) for _ in range(1)]
    return y
`, "f([1, 0])", []string{"b 12", "c", "p xs", "w", "c"}},
}

// TestDebugLikePdb types the same commands into CPython's pdb and into
// ndbg debug --backend real and compares, command by command, where each
// stops and what it prints: p, pp, retval and display values, where's
// frames, breakpoint messages and the exception that escapes. ndbg starts
// at the entry's call, one step before pdb (README, "Differences from
// pdb"), so it is given one "s" first.
func TestDebugLikePdb(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	for _, c := range pdbCases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "prog.py")
			require.NoError(t, os.WriteFile(file, []byte(c.src), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "driver.py"), []byte(pdbDriver), 0o644))

			cmd := exec.Command("python3", filepath.Join(dir, "driver.py"), dir, c.call)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+dir, "PYTHONDONTWRITEBYTECODE=1")
			cmd.Stdin = strings.NewReader(strings.Join(c.cmds, "\n") + "\n")
			var pout, perr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &pout, &perr
			_ = cmd.Run() // an escaping exception exits 1
			pdbAns := strings.Split(pout.String(), "(Pdb) ")

			var nout, nerr bytes.Buffer
			in := strings.NewReader("s\n" + strings.Join(c.cmds, "\n") + "\n")
			require.NoError(t, debugSession(context.Background(), []string{file, "--call", c.call, "--backend", "real"}, in, &nout, &nerr), nerr.String())
			ndbgAns := answers(nout.String())[1:] // [0] is the banner and the call

			require.Equal(t, pdbStop(pdbAns[0], file), ndbgStop(ndbgAns[0]), "the first stop:\npdb:  %s\nndbg: %s", pdbAns[0], ndbgAns[0])
			for i, command := range c.cmds {
				n := ndbgAns[i+1]
				if i+1 >= len(pdbAns) { // pdb ended: so did ndbg
					require.Contains(t, n, "finished", "command %d %q after the end", i, command)
					continue
				}
				p := pdbAns[i+1]
				msg := []any{"command %d %q:\npdb:\n%s\nndbg:\n%s", i, command, p, n}
				verb, _, _ := strings.Cut(command, " ")
				switch verb {
				case "s", "n", "r", "c", "unt":
					if strings.HasPrefix(p, "***") { // refused
						require.Equal(t, p, n, msg...)
						continue
					}
					if pdbStop(p, file) == 0 { // pdb ran off the end (or raised out of the entry)
						require.Contains(t, n, "--the program finished", msg...)
						if x := lastLine(perr.String()); strings.Contains(perr.String(), "Traceback") {
							require.Contains(t, n, "\n"+x+"\n", msg...)
							at := `  File "` + file + `"`
							require.NotEmpty(t, linesWith(perr.String(), at))
							require.Equal(t, linesWith(perr.String(), at), linesWith(n, at), "the traceback's frames\npdb:\n%s\nndbg:\n%s", perr.String(), n)
						}
						continue
					}
					require.Equal(t, pdbStop(p, file), ndbgStop(n), msg...)
					require.Equal(t, linesWith(p, "display ", "Deleted "), linesWith(n, "display ", "Deleted "), msg...)
				case "w", "u", "d":
					if strings.HasPrefix(p, "***") { // Newest frame
						require.Equal(t, p, n, msg...)
						continue
					}
					require.NotEmpty(t, framesOf(p, file), msg...)
					require.Equal(t, framesOf(p, file), framesOf(n, file), msg...)
				default: // p, pp, retval, display, break and its kin: the same text
					require.Equal(t, p, n, msg...)
				}
			}
		})
	}
}

// pdbStop is the line of the stop pdb printed in its answer ("> FILE(LINE)"),
// 0 if none.
func pdbStop(ans, file string) int {
	m := regexp.MustCompile(`(?m)^> ` + regexp.QuoteMeta(file) + `\((\d+)\)`).FindStringSubmatch(ans)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// ndbgStop is the line of the stop ndbg printed ("> EVENT line LINE:"), 0
// if none.
func ndbgStop(ans string) int {
	m := regexp.MustCompile(`(?m)^> \w+ +line (\d+):`).FindStringSubmatch(ans)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// linesWith returns the answer's lines that start with any of the prefixes.
func linesWith(ans string, prefixes ...string) []string {
	var out []string
	for _, l := range strings.Split(ans, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return out
}

// framesOf returns where's (or up's, down's) entries for the program's
// frames, each with its "-> " line; pdb's own frames (the driver, bdb) are
// left out.
func framesOf(ans, file string) []string {
	var out []string
	lines := strings.Split(ans, "\n")
	for i, l := range lines {
		if strings.Contains(l, file+"(") {
			out = append(out, l)
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "-> ") {
				out = append(out, lines[i+1])
			}
		}
	}
	return out
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}
