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
// does: pdb.Pdb().runcall(f, *args) stops first at f's first line. An
// exception that escapes enters post-mortem debugging as python3 -m pdb's
// main does (which cannot run a call); there c or s end the driver, where
// pdb's main would restart (ndbg restarts: the cases type neither there).
const pdbDriver = `import pdb, sys, traceback
sys.path.insert(0, sys.argv[1])
import prog
name, args = sys.argv[2].split("(", 1)
p = pdb.Pdb(readrc=False)
try:
    p.runcall(getattr(prog, name.strip()), *eval("[" + args.strip()[:-1] + "]", vars(prog)))
except Exception:
    traceback.print_exc()
    print("Uncaught exception. Entering post mortem debugging")
    print("Running 'cont' or 'step' will restart the program")
    p.reset()
    p.interaction(None, sys.exc_info()[2])
`

// pdbCase is a program, a call (none: the whole script, under
// python3 -m pdb) and the commands typed at both prompts.
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
`, "f([1, 0])", []string{"s", "n", "w", "p xs", "u", "p xs", "d", "n", "n", "n", "c", "p xs", "p xs[0]", "u", "p xs", "p y"}},
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
`, "f([1, 0])", []string{"b 12", "c", "p xs", "w", "c", "w", "u", "u", "p xs", "u", "p _", "d", "d", "d"}},
	{"a whole script: its __main__ block, module-level steps, output, post-mortem and its restart", `import sys

def half(x):
    print("out: half of", x)
    return 1 / x

total = 0
if __name__ == "__main__":
    for v in [4, 0]:
        total += half(v)
    print("out: total", total)
`, "", []string{
		"n", "n", "n", "p total", "n", "n", "s", "n", "r", "retval", "n", "w", "p total + v", "b 5", "c", "w", "p x", "c",
		"w", "p x", "u", "p total, v", "d", "pp x", "c", "n", "b", "c", "p x", "cl 1", "c", "p x", "u", "p v", "s", "n",
	}},
	{"a whole script that ends: output on stdout and stderr, a return out of the module", `import sys

def g(n):
    print("out: g", n)
    acc = [i for i in range(n)]
    print("err: g", n, file=sys.stderr)
    return sum(acc)

def main():
    a = g(3)
    b = g(a)
    return a + b

if __name__ == "__main__":
    r = main()
    print("out: r =", r)
`, "", []string{"b g", "c", "p n", "n", "n", "n", "w", "c", "unt", "p a", "n", "n", "n", "n", "r", "n", "p r", "n", "n"}},
}

// pdbLiveProgram has a class, a closure, a generator, globals and a loop of
// 10^6 iterations.
const pdbLiveProgram = `RATE = 2

class Acct:
    def __init__(self, owner):
        self.owner = owner
        self.balance = 0

    def deposit(self, n):
        self.balance += n * RATE
        return self.balance

def make_counter():
    count = 0
    def inc(k):
        nonlocal count
        count += k
        return count
    return inc

def gen(n):
    for i in range(n):
        yield i * i

def f(n):
    a = Acct("ann")
    inc = make_counter()
    total = 0
    for v in gen(n):
        total += a.deposit(v)
        inc(v)
    big = 0
    for i in range(1000000):
        big += i
    return total + inc(0) + big
`

func init() {
	pdbCases = append(pdbCases,
		pdbCase{"objects, globals, closures, a generator, a long loop: p, whatis, a, ll, l, condition, ignore, alias, statements", pdbLiveProgram, "f(4)", []string{
			"b 9", "c", "p self.balance", "p self.owner.upper(), RATE", "pp vars(self)", "whatis self.deposit", "whatis n", "whatis make_counter", "a",
			"ll", "l 1, 3", "l", "", "l 40", "l .", "u", "p a.balance + RATE", "p [x for x in gen(3)]", "total", "!total = 1000", "p total", "d",
			"ignore 1 1", "b", "c", "p n", "condition 1 n > 5", "c", "p n, self.balance", "condition 1", "b", "cl 1",
			"self.balance", "!self.balance = 7", "p self.balance", "alias pt p self.balance * 2", "pt", "alias", "r",
			"b 16", "c", "p count, k", "a", "u", "p n, total", "cl 2",
			"b 34", "c", "p big, i", "n", "retval", "p total + inc(0) + big",
		}},
		pdbCase{"a whole script: whatis of its class, ll at module level, a global read in a function, statements", `class Box:
    def __init__(self, v):
        self.v = v

def grow(b, k):
    b.v = b.v * k + LIMIT
    return b.v

LIMIT = 3
box = Box(2)
for k in range(3):
    grow(box, k)
print("out:", box.v)
`, "", []string{
			"n", "n", "n", "whatis Box", "whatis box", "p box.v", "ll", "b grow", "c", "p LIMIT, b.v", "a", "ll", "whatis b", "!b.v = 100", "p b.v",
			"r", "retval", "u", "p box.v", "c", "p box.v, k", "cl 1", "c",
		}},
	)
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
			args, first := []string{file, "--call", c.call, "--backend", "real"}, "s\n"
			if c.call == "" {
				cmd = exec.Command("python3", "-m", "pdb", file)
				args, first = []string{file, "--backend", "real"}, "" // both start at the module's first line
			}
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+dir, "PYTHONDONTWRITEBYTECODE=1")
			cmd.Stdin = strings.NewReader(strings.Join(c.cmds, "\n") + "\n")
			var pout, perr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &pout, &perr
			_ = cmd.Run() // an escaping exception exits 1
			pdbAns := strings.Split(pout.String(), "(Pdb) ")

			var nout, nerr bytes.Buffer
			in := strings.NewReader(first + strings.Join(c.cmds, "\n") + "\n")
			require.NoError(t, debugSession(context.Background(), args, in, &nout, &nerr), nerr.String())
			ndbgAns := answers(nout.String())
			if c.call != "" {
				ndbgAns = ndbgAns[1:] // [0] is the banner and the call
			}

			require.Equal(t, pdbStop(pdbAns[0], file), ndbgStop(ndbgAns[0]), "the first stop:\npdb:  %s\nndbg: %s", pdbAns[0], ndbgAns[0])
			ended := len(c.cmds)
		commands:
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
					require.Equal(t, linesWith(p, "out:"), linesWith(n, "out:"), msg...) // the program's output
					require.Equal(t, linesWith(p, "Uncaught ", "Running ", "Post mortem "), linesWith(n, "Uncaught ", "Running ", "Post mortem "), msg...)
					if strings.HasPrefix(p, "***") { // refused
						require.Equal(t, p, n, msg...)
						continue
					}
					if strings.Contains(p, "The program finished and will be restarted") { // ndbg stays at the end
						require.Contains(t, n, "--the program finished--", msg...)
						ended = i + 1
						break commands
					}
					if pdbStop(p, file) == 0 { // pdb ran off the end of the entry
						require.Contains(t, n, "--the program finished", msg...)
						continue
					}
					if strings.Contains(p, "Uncaught exception") {
						require.Contains(t, n, "\n"+lastLine(perr.String())+"\n", msg...) // the exception
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
					require.Equal(t, sameObjects(p), sameObjects(n), msg...)
				}
			}
			// Every traceback's frames in the program, and its stderr.
			at := `  File "` + file + `"`
			require.Equal(t, linesWith(perr.String(), at), linesWith(strings.Join(ndbgAns[:ended+1], ""), at), "the tracebacks' frames\npdb:\n%s\nndbg:\n%s", perr.String(), nout.String())
			require.Equal(t, linesWith(perr.String(), "err:"), linesWith(nerr.String(), "err:"))
		})
	}
}

// sameObjects masks what differs between any two runs in an object's
// default repr, its address, and names the module of a call as ndbg
// imports it (the pdb driver imports it as prog).
func sameObjects(ans string) string {
	ans = regexp.MustCompile(` at 0x[0-9a-f]+`).ReplaceAllString(ans, " at 0x...")
	return strings.ReplaceAll(ans, "<prog.", "<program.")
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
