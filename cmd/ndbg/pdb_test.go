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

// pdbHelperGen is a generator that calls a helper, for the generator
// cases' programs to go on from.
const pdbHelperGen = `def helper(x):
    y = x + 1
    return y

def gen(n):
    for i in range(n):
        v = helper(i)
        yield v
        w = v * 2

`

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
	{"break FUNCTION with a comprehension and a lambda on its first line: stops in the function's frame only", `def g(xs):
    ys = [x * 2 for x in xs]; key = (lambda v: -v)
    return sorted(ys, key=key)

def f(n):
    a = g(list(range(n)))
    b = g([n, n + 1])
    return a + b
`, "f(3)", []string{
		"b g", "c", "p xs", "n", "p ys", "c", "p xs", "c",
	}},
	{"next over calls with a breakpoint whose condition is false: pdb's rule stays the caller's", `def h(x):
    y = x * 2
    return y

def f(n):
    a = h(n)
    b = h(n + 1)
    return a + b
`, "f(3)", []string{
		"b 2, x > 3", "n", "n", "p x", "n", "n", "n", "r", "c",
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

// pdbGenProgram has generators consumed every way: by a for loop, by
// next(), by send(), through yield from, as a generator expression, and one
// left unfinished.
const pdbGenProgram = `def squares(n):
    for i in range(n):
        sq = i * i
        yield sq
    done = True

def echo():
    total = 0
    while True:
        got = yield total
        if got is None:
            return total
        total += got

def inner(k):
    yield k
    yield k + 1
    return k * 10

def outer(k):
    r = yield from inner(k)
    yield r

def f(n):
    acc = 0
    for v in squares(n):
        acc += v
    e = echo()
    next(e)
    e.send(3)
    e.send(4)
    try:
        e.send(None)
    except StopIteration as stop:
        acc += stop.value
    o = list(outer(2))
    g = sum(x + 1 for x in range(3))
    half = squares(5)
    first = next(half)
    return acc + g + first + len(o)
`

func init() {
	pdbCases = append(pdbCases,
		pdbCase{"generators: next at a yield in a for loop's generator, next at its last line, return in a generator", pdbGenProgram, "f(3)", []string{
			"n", "n", "s", "s", "n", "n", "p i, sq", "n", "p i, sq", "n", "n", "p i", "n", "n", "n", "n", "p acc", "n", "s", "s", "n", "n",
		}},
		pdbCase{"generators: send, a return in a generator that ends by a StopIteration in its consumer", pdbGenProgram, "f(3)", []string{
			"b 30", "c", "s", "s", "n", "n", "p total", "n", "n", "n", "p got, total", "n", "n", "n", "n", "p got, total", "r", "p acc",
			"n", "n", "n", "n", "n", "n", "n", "n", "p acc",
		}},
		pdbCase{"generators: yield from, a generator expression, next() on a generator left unfinished", pdbGenProgram, "f(3)", []string{
			"b 21", "c", "s", "p k", "n", "n", "n", "n", "p k", "n", "s", "s", "cl 1", "b 37", "c", "s", "s", "n", "p x", "n", "p x",
			"cl 2", "b 39", "c", "s", "s", "n", "p i", "n", "s", "s", "p first", "n",
		}},
		pdbCase{"generators: breakpoints in a generator, next from a breakpoint, return from a helper a generator called", pdbHelperGen + `def f(n):
    out = []
    for a in gen(n):
        out.append(a)
    it = gen(2)
    b = next(it)
    c = next(it)
    return out, b, c
`, "f(3)", []string{
			"b 7", "c", "s", "n", "r", "n", "p v", "n", "n", "p i, v", "n", "p w", "cl 1", "n", "n", "n", "n", "n", "n", "n", "p out",
			"b gen", "c", "n", "n", "r", "p b", "b 9", "n", "p b", "c", "p w", "c",
		}},
		pdbCase{"generators: next and return in a frame chosen by up, in a generator and its consumer", pdbHelperGen + `def f(n):
    out = []
    for a in gen(n):
        out.append(a)
    return out
`, "f(3)", []string{"b 2", "c", "u", "n", "p v", "u", "n", "cl 1", "n", "p a", "s", "s", "s", "s", "u", "r", "p out", "n"}},
	)
}

func init() {
	pdbCases = append(pdbCases,
		pdbCase{"input(): the program reads the lines typed while it runs", `def ask(k):
    name = input("name? ")
    n = int(input("n? "))
    return name * n + str(k)

def f(k):
    x = ask(k)
    print("out:", x)
    y = ask(k + 1)
    print("out:", y)
    try:
        z = input()
    except EOFError as e:
        z = repr(e)
    return x + y + z
`, "f(1)", []string{"n", "<bob", "<3", "p x", "n", "s", "n", "n", "<al", "p name", "n", "<2", "p n", "p name * n", "r", "n", "n", "p y", "n", "n", "<zed", "p z", "n"}},
	)
}

// Cases from an audit against python3 -m pdb (2026-11-29): a step over the
// end of a yield from's subgenerator, until over lines that raise, a
// script that calls sys.exit(), break FUNCTION on functions whose body
// starts with a nested def or a decorator, and break's refusals.
func init() {
	pdbCases = append(pdbCases,
		pdbCase{"generators: step past the return of a subgenerator that yield from runs", `def gen():
    yield 1
    return 'done'

def outer():
    r = yield from gen()
    yield r

def f():
    out = []
    for v in outer():
        out.append(v)
    return out
`, "f()", []string{"b 3", "c", "s", "s", "s", "s", "s", "s", "s", "s"}},
		pdbCase{"until over a line that raises: in a handler, and out of the function", `def g():
    try:
        1 / 0
    except ZeroDivisionError:
        return 'caught'

def h(x):
    y = 10 // x
    return y

def f():
    a = g()
    try:
        b = h(0)
    except ZeroDivisionError:
        b = None
    return a, b
`, "f()", []string{"b 3", "c", "unt", "unt", "unt", "cl 1", "b 8", "c", "unt", "unt", "unt", "unt", "unt"}},
		pdbCase{"a whole script that calls sys.exit()", `import sys

def main():
    x = 1
    if x:
        sys.exit(3)
    return x

print('out: start')
main()
print('out: never')
`, "", []string{"n", "n", "n", "s", "n", "c"}},
		pdbCase{"break FUNCTION on functions whose body starts with a nested def or a decorator; break on a blank line, past the end, on no function", `def outer(fn):
    def inner():
        return fn
    return inner

def deco(fn):
    @staticmethod
    def w():
        return fn
    return w

outer(1)()
deco(2)
`, "", []string{"b 5", "b 99", "b nosuch", "b outer", "b deco", "c", "p fn", "c", "c", "p fn", "c"}},
		pdbCase{"break Class.method, set once the class is defined", `class A:
    """A box."""

    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v

a = A(1)
b = A(2)
print('out:', a.get(), b.get())
`, "", []string{"n", "n", "b A.get", "b A.__init__", "c", "p v", "c", "p self.v", "c", "c"}},
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
			// A line "<text" is the program's input (input() reads
			// "text"), typed where it stands; it has no answer of its own.
			var typed, cmds []string
			for _, l := range c.cmds {
				if text, ok := strings.CutPrefix(l, "<"); ok {
					typed = append(typed, text)
					continue
				}
				typed, cmds = append(typed, l), append(cmds, l)
			}
			cmd.Stdin = strings.NewReader(strings.Join(typed, "\n") + "\n")
			var pout, perr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &pout, &perr
			_ = cmd.Run() // an escaping exception exits 1
			pdbAns := strings.Split(pout.String(), "(Pdb) ")

			var nout, nerr bytes.Buffer
			in := strings.NewReader(first + strings.Join(typed, "\n") + "\n")
			require.NoError(t, debugSession(context.Background(), args, in, &nout, &nerr), nerr.String())
			ndbgAns := answers(nout.String())
			if c.call != "" {
				ndbgAns = ndbgAns[1:] // [0] is the banner and the call
			}

			require.Equal(t, pdbStop(pdbAns[0], file), ndbgStop(ndbgAns[0]), "the first stop:\npdb:  %s\nndbg: %s", pdbAns[0], ndbgAns[0])
			ended := len(cmds)
		commands:
			for i, command := range cmds {
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
					if x := "The program exited via sys.exit(). Exit status: "; strings.Contains(p, x) { // pdb restarts, ndbg stays at the end
						require.Equal(t, linesWith(p, x), linesWith(n, x), msg...)
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
	m := regexp.MustCompile(`(?m)^(?:.*[?:] )?> ` + regexp.QuoteMeta(file) + `\((\d+)\)`).FindStringSubmatch(ans) // after an input's prompt
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// ndbgStop is the line of the stop ndbg printed ("> EVENT line LINE:"), 0
// if none.
func ndbgStop(ans string) int {
	m := regexp.MustCompile(`(?m)^(?:.*[?:] )?> \w+ +line (\d+):`).FindStringSubmatch(ans)
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
