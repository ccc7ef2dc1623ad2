package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ndbg/ndbg/dsl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func requireKind(t *testing.T, err error, kind error) *Error {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, kind)
	var e *Error
	require.True(t, errors.As(err, &e), "want *Error, got %T: %v", err, err)
	return e
}

func TestRunReturnsValueAndStdout(t *testing.T) {
	res, err := runChecked(t, "def f(a, b=2, *c, k=None):\n    print(a, b, c, k)\n    return [a, b, c, k]\n", "f", "f(*[1], k='x', b=[3])", testLimits(t))
	require.NoError(t, err)
	assert.Equal(t, "[1, [3], (), 'x']", res.Return)
	assert.Equal(t, "1 [3] () x\n", string(res.Stdout))
	assert.Nil(t, res.Exception)
	assert.False(t, res.Truncated)
	assert.True(t, strings.HasPrefix(res.Python, "3."), res.Python)
	require.NotEmpty(t, res.Events)
	assert.Equal(t, dsl.Call, res.Events[0].Kind)
	assert.Equal(t, []dsl.Local{{Name: "a", Repr: "1"}, {Name: "b", Repr: "[3]"}, {Name: "k", Repr: "'x'"}, {Name: "c", Repr: "()"}}, res.Events[0].Locals)
	last := res.Events[len(res.Events)-1]
	assert.Equal(t, dsl.Return, last.Kind)
	assert.Equal(t, res.Return, last.Value)
}

func TestInfiniteLoopTimesOut(t *testing.T) {
	lim := testLimits(t)
	lim.Timeout = 300 * time.Millisecond
	// Lift the caps, or an idle machine reaches the event cap first (a
	// truncated trace, not a timeout).
	lim.MaxEvents = 1 << 30
	lim.MaxOutputBytes = 1 << 30
	start := time.Now()
	_, err := runChecked(t, "def f():\n    while True:\n        pass\n", "f", "f()", lim)
	requireKind(t, err, ErrTimeout)
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestInfiniteLoopHitsEventCap(t *testing.T) {
	lim := testLimits(t)
	lim.MaxEvents = 500
	res, err := runChecked(t, "def f():\n    x = 0\n    while True:\n        x += 1\n", "f", "f()", lim)
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Len(t, res.Events, 500)
	assert.Empty(t, res.Return)
	assert.Nil(t, res.Exception)
}

func TestLoopInCCodeIsKilled(t *testing.T) {
	// sum() over an endless iterator never returns to the bytecode loop, so
	// the in-process timer cannot fire: the Go side must kill the group.
	lim := testLimits(t)
	lim.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := runChecked(t, "import itertools\ndef f():\n    return sum(itertools.repeat(1))\n", "f", "f()", lim)
	requireKind(t, err, ErrTimeout)
	assert.Less(t, time.Since(start), lim.Timeout+killGrace+2*time.Second)
}

func TestSwallowedTimeoutStillEnds(t *testing.T) {
	lim := testLimits(t)
	lim.Timeout = 200 * time.Millisecond
	lim.MaxEvents = 1 << 30
	lim.MaxOutputBytes = 1 << 30
	src := "def f():\n    while True:\n        try:\n            while True:\n                pass\n        except BaseException:\n            pass\n"
	_, err := runChecked(t, src, "f", "f()", lim)
	requireKind(t, err, ErrTimeout)
}

func TestRecursionErrorIsTraced(t *testing.T) {
	res, err := runChecked(t, "def f(n):\n    return f(n + 1)\n", "f", "f(0)", testLimits(t))
	require.NoError(t, err)
	require.NotNil(t, res.Exception)
	assert.Equal(t, "RecursionError", res.Exception.Type)
	assert.Equal(t, 2, res.Exception.Line)
	// Every frame down to the limit got its call, line, exception and return.
	calls, excs, rets := 0, 0, 0
	maxDepth := 0
	for _, e := range res.Events {
		switch e.Kind {
		case dsl.Call:
			calls++
		case dsl.Exception:
			excs++
			assert.Contains(t, e.Value, "RecursionError")
		case dsl.Return:
			rets++
			assert.Equal(t, "None", e.Value)
		}
		maxDepth = max(maxDepth, e.Depth)
	}
	assert.Equal(t, calls, excs)
	assert.Equal(t, calls, rets)
	// The program sees CPython's default limit: 1000 frames, the module's
	// frame included, as in an untraced run.
	assert.Equal(t, 999, calls)
	assert.Equal(t, 998, maxDepth)
	last := res.Events[len(res.Events)-1]
	assert.Equal(t, 0, last.Depth)
	assert.Equal(t, dsl.Return, last.Kind)
}

func TestDeepRecursionWithRaisedLimit(t *testing.T) {
	src := "import sys\ndef g(n):\n    return 0 if n == 0 else 1 + g(n - 1)\ndef f(n):\n    sys.setrecursionlimit(5000)\n    return g(n)\n"
	res, err := runChecked(t, src, "f", "f(3000)", testLimits(t))
	require.NoError(t, err)
	assert.Equal(t, "3000", res.Return)
}

func TestRecursionCaughtByProgram(t *testing.T) {
	src := "def g(n):\n    return g(n + 1)\ndef f():\n    try:\n        return g(0)\n    except RecursionError as e:\n        return 'caught'\n"
	res, err := runChecked(t, src, "f", "f()", testLimits(t))
	require.NoError(t, err)
	assert.Equal(t, "'caught'", res.Return)
	n := len(res.Events)
	require.GreaterOrEqual(t, n, 3)
	// exception in f, then line events in the handler, then the return.
	assert.Equal(t, dsl.Exception, res.Events[n-4].Kind)
	assert.Equal(t, dsl.Line, res.Events[n-3].Kind)
	assert.Equal(t, 6, res.Events[n-3].Line)
	assert.Equal(t, dsl.Line, res.Events[n-2].Kind)
	assert.Equal(t, 7, res.Events[n-2].Line)
}

func TestHugeReprsAreBounded(t *testing.T) {
	lim := testLimits(t)
	lim.MaxOutputBytes = 1 << 20
	res, err := runChecked(t, "def f(n):\n    s = 'ab' * n\n    return s\n", "f", "f(10**6)", lim)
	require.NoError(t, err)
	for _, e := range res.Events {
		for _, l := range e.Locals {
			assert.LessOrEqual(t, len(l.Repr), dsl.MaxRepr)
		}
		assert.LessOrEqual(t, len(e.Value), dsl.MaxRepr)
	}
	last := res.Events[len(res.Events)-1]
	assert.Equal(t, "'"+strings.Repeat("ab", 119)+"a...[+1999762]", last.Value)
	// The outcome carries the value up to the output cap.
	kept := 1<<20 - 32
	marker := fmt.Sprintf("...[+%d]", 2000002-kept)
	assert.Equal(t, kept+len(marker), len(res.Return))
	assert.True(t, strings.HasSuffix(res.Return, marker), res.Return[len(res.Return)-20:])
}

func TestSyntaxErrorHasLine(t *testing.T) {
	_, err := runChecked(t, "def f(x):\n    y = (x +\n    return y\n", "f", "f(1)", testLimits(t))
	e := requireKind(t, err, ErrSyntax)
	assert.Equal(t, 2, e.Line)
	_, err = runChecked(t, "def f(x):\n    return x\n  return 2\n", "f", "f(1)", testLimits(t))
	e = requireKind(t, err, ErrSyntax)
	assert.Equal(t, 3, e.Line)
}

func TestSetupErrors(t *testing.T) {
	lim := testLimits(t)
	for _, c := range []struct{ src, call string }{
		{"def f(x):\n    return x\n", "g(1)"},                   // not the entry
		{"def f(x):\n    return x\n", "f(1"},                    // bad call syntax
		{"def f(x):\n    return x\n", "f(undefined)"},           // argument raises
		{"def f(x):\n    return x\nraise ValueError\n", "f(1)"}, // module code raises
		{"def f(x):\n    return x\nf = 3\n", "f(1)"},            // entry is no function
		{"def f(x):\n    return x\n", "print(1)"},
		{"def f(x):\n    return x\n", "f(1)[0]"},
	} {
		_, err := runChecked(t, c.src, "f", c.call, lim)
		requireKind(t, err, ErrSetup)
	}
}

func TestRaisingProgramIsATrace(t *testing.T) {
	src := "def g(x):\n    return 1 / x\ndef f(x):\n    y = g(x)\n    return y\n"
	res, err := runChecked(t, src, "f", "f(0)", testLimits(t))
	require.NoError(t, err)
	require.NotNil(t, res.Exception)
	assert.Equal(t, Exception{Type: "ZeroDivisionError", Message: "division by zero", Line: 2}, *res.Exception)
	kinds := []dsl.Event{}
	for _, e := range res.Events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []dsl.Event{dsl.Call, dsl.Line, dsl.Call, dsl.Line, dsl.Exception, dsl.Return, dsl.Exception, dsl.Return}, kinds)
}

func TestUnprintableObjects(t *testing.T) {
	src := `class Bad:
    def __repr__(self):
        raise ValueError('no')
class Num:
    def __repr__(self):
        return 42
class Long:
    def __repr__(self):
        return 'x' * 1000
def f():
    a = Bad()
    b = Num()
    c = Long()
    return [a, b]
`
	res, err := runChecked(t, src, "f", "f()", testLimits(t))
	require.NoError(t, err)
	last := res.Events[len(res.Events)-1]
	assert.Equal(t, []dsl.Local{
		{Name: "a", Repr: "<unprintable Bad object>"},
		{Name: "b", Repr: "<unprintable Num object>"},
		{Name: "c", Repr: strings.Repeat("x", 240) + "...[+760]"},
	}, last.Locals)
	assert.Equal(t, "<unprintable list object>", res.Return)
}

func TestNonUTF8Stdout(t *testing.T) {
	src := "import sys\ndef f():\n    print('h\\u00e9')\n    sys.stdout.buffer.write(b'\\xff\\xfe\\n')\n    sys.stdout.write('x')\n    return 1\n"
	res, err := runChecked(t, src, "f", "f()", testLimits(t))
	require.NoError(t, err)
	// In the order written: text is written through (a plain python3 on a
	// pipe would hold it back behind the bytes), so each event can say
	// what came before it.
	assert.Equal(t, []byte("h\xc3\xa9\n\xff\xfe\nx"), res.Stdout)
	assert.False(t, res.StdoutTruncated)
}

// TestRunScript traces a whole script: the module frame at depth 0, run as
// __main__ (its main block runs), its globals as locals without the
// tracer's own, and each event's count of the output before it.
func TestRunScript(t *testing.T) {
	src := "import sys\n\ndef f(x):\n    print('in f', x)\n    return x + 1\n\nif __name__ == '__main__':\n    y = f(1)\n    print('y', y, file=sys.stderr)\n    print('done')\n"
	prog, err := dsl.NewScript(src)
	require.NoError(t, err)
	res, err := Run(context.Background(), prog, "", testLimits(t))
	require.NoError(t, err)
	assert.Equal(t, "None", res.Return)
	assert.Equal(t, "in f 1\ndone\n", string(res.Stdout))
	assert.Equal(t, "y 2\n", string(res.Stderr))
	first, last := res.Events[0], res.Events[len(res.Events)-1]
	assert.Equal(t, Event{Kind: dsl.Call, Line: 1, Depth: 0, Frame: 1, Func: "<module>"}, first)
	assert.Equal(t, dsl.Return, last.Kind)
	assert.Equal(t, 0, last.Depth)
	assert.Equal(t, len(res.Stdout), last.Stdout)
	assert.Equal(t, len(res.Stderr), last.Stderr)
	var lines []int
	for _, e := range res.Events {
		if e.Kind == dsl.Line && e.Depth == 0 {
			lines = append(lines, e.Line)
			if e.Line == 9 { // after f printed, before the stderr line ran
				assert.Equal(t, []dsl.Local{{Name: "sys", Repr: "<module 'sys' (built-in)>"}, {Name: "f", Repr: "<function f at 0x...>"}, {Name: "y", Repr: "2"}}, e.Locals)
				assert.Equal(t, len("in f 1\n"), e.Stdout)
				assert.Equal(t, 0, e.Stderr)
			}
		}
	}
	assert.Equal(t, []int{1, 3, 7, 8, 9, 10}, lines)
}

// TestScriptRaises: an exception escaping a script's module code is the
// run's exception, as an entry's is.
func TestScriptRaises(t *testing.T) {
	prog, err := dsl.NewScript("x = 1\ny = x / 0\n")
	require.NoError(t, err)
	res, err := Run(context.Background(), prog, "", testLimits(t))
	require.NoError(t, err)
	require.NotNil(t, res.Exception)
	assert.Equal(t, Exception{Type: "ZeroDivisionError", Message: "division by zero", Line: 2}, *res.Exception)
}

func TestStdoutIsCapped(t *testing.T) {
	lim := testLimits(t)
	lim.MaxStdout = 100
	res, err := runChecked(t, "def f():\n    for i in range(1000):\n        print(i)\n", "f", "f()", lim)
	require.NoError(t, err)
	assert.Len(t, res.Stdout, 100)
	assert.True(t, res.StdoutTruncated)
	last := res.Events[len(res.Events)-1]
	assert.Equal(t, 3890, last.Stdout, "every byte written is counted, past the cap") // "0\n" .. "999\n"
}

func TestHugeMemory(t *testing.T) {
	lim := testLimits(t)
	lim.MaxMemory = 512 << 20
	lim.Timeout = 10 * time.Second // page faults are slow on a loaded machine
	for _, src := range []string{
		"def f():\n    x = bytearray(10**10)\n    return len(x)\n",
		"def f():\n    return [' ' * 10**8 for _ in range(100)]\n",
		"def f():\n    return [0] * 10**9\n",
	} {
		_, err := runChecked(t, src, "f", "f()", lim)
		require.ErrorIs(t, err, ErrMemory, src)
	}
	// A growing local is repr'd at every line, which is slow: it ends by
	// memory or by time.
	lim.Timeout = time.Second
	_, err := runChecked(t, "def f():\n    l = []\n    while True:\n        l.append(' ' * 10**7)\n", "f", "f()", lim)
	require.Error(t, err)
	if !errors.Is(err, ErrMemory) {
		requireKind(t, err, ErrTimeout)
	}
}

func TestStdinIsEmpty(t *testing.T) {
	res, err := runChecked(t, "def f():\n    return input()\n", "f", "f()", testLimits(t))
	require.NoError(t, err)
	require.NotNil(t, res.Exception)
	assert.Equal(t, "EOFError", res.Exception.Type)
	res, err = runChecked(t, "import sys, os\ndef f():\n    return sys.stdin.read() + repr(os.read(0, 10))\n", "f", "f()", testLimits(t))
	require.NoError(t, err)
	assert.Equal(t, `"b''"`, res.Return)
}

func TestExits(t *testing.T) {
	res, err := runChecked(t, "import sys\ndef f():\n    sys.exit(3)\n", "f", "f()", testLimits(t))
	require.NoError(t, err)
	require.NotNil(t, res.Exception)
	assert.Equal(t, Exception{Type: "SystemExit", Message: "3", Line: 3}, *res.Exception)
	_, err = runChecked(t, "import os\ndef f():\n    os._exit(0)\n", "f", "f()", testLimits(t))
	requireKind(t, err, ErrForbidden)
	_, err = runChecked(t, "import os\ndef f():\n    os.abort()\n", "f", "f()", testLimits(t))
	requireKind(t, err, ErrForbidden)
}

func TestTamperingWithTracerIsForbidden(t *testing.T) {
	for _, src := range []string{
		"import sys\ndef f():\n    sys.settrace(None)\n    return 1\n",
		"import sys\ndef f():\n    sys.setprofile(print)\n    return 1\n",
		"import signal\ndef f():\n    signal.setitimer(signal.ITIMER_REAL, 0)\n",
		"import signal\ndef f():\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n",
		"import signal\ndef f():\n    signal.alarm(0)\n",
	} {
		_, err := runChecked(t, src, "f", "f()", testLimits(t))
		requireKind(t, err, ErrForbidden)
	}
}

// TestContextCancelKillsGroup: cancelling the context in the middle of the
// traced call ends the run with the context's error and kills the whole
// process group. The program says it has started through a FIFO (which a
// read-only file system still lets it open and write), so the cancel comes
// inside its sleep however long the sandbox takes to start.
func TestContextCancelKillsGroup(t *testing.T) {
	lim := testLimits(t)
	var pgid int
	lim.onStart = func(g int) { pgid = g }
	dir, _ := victimDir(t)
	fifo := filepath.Join(dir, "started")
	require.NoError(t, syscall.Mkfifo(fifo, 0o666))
	require.NoError(t, os.Chmod(fifo, 0o666))       // whatever the umask: the sandbox may run as another user
	started, err := os.OpenFile(fifo, os.O_RDWR, 0) // read-write: opening does not wait for the writer
	require.NoError(t, err)
	defer started.Close()
	lim.testMounts = []string{"--perms", "0755", "--dir", "/run", "--bind", fifo, "/run/started"} // the sandbox sees nothing of the host's folders
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		defer cancel()
		_ = started.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, _ = started.Read(make([]byte, 1))
	}()
	src := "import time\ndef f():\n    with open('/run/started', 'w') as w:\n        w.write('1')\n    time.sleep(30)\n"
	begin := time.Now()
	_, err = Run(ctx, program(t, src, "f"), "f()", lim)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(begin), 25*time.Second, "cancelled in the sleep, not after it")
	require.NotZero(t, pgid)
	require.Empty(t, groupMembers(t, pgid))
}

func TestWorkDirIsPrivateAndRemoved(t *testing.T) {
	src := "import os\ndef f():\n    open('x.txt', 'w').write('hi')\n    return os.getcwd()\n"
	res, err := runChecked(t, src, "f", "f()", testLimits(t))
	require.NoError(t, err)
	assert.Equal(t, "'"+ScratchDir+"'", res.Return) // a tmpfs private to the sandbox
	assert.NoFileExists(t, filepath.Join(ScratchDir, "x.txt"))

	lim := testLimits(t)
	lim.Unsandboxed = true
	res, err = runChecked(t, src, "f", "f()", lim)
	require.NoError(t, err)
	dir := strings.Trim(res.Return, "'")
	assert.Contains(t, dir, fmt.Sprintf("ndbg-trace-%d-", os.Getpid()))
	assert.NoDirExists(t, dir)
}

func TestOutputBytesCapTruncates(t *testing.T) {
	lim := testLimits(t)
	lim.MaxOutputBytes = 20000
	res, err := runChecked(t, "def f(n):\n    s = 'x' * 1000\n    for i in range(n):\n        s = s[1:] + s[0]\n    return s\n", "f", "f(1000)", lim)
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Less(t, len(res.Events), 400) // about 300 bytes per changed repr, unchanged ones are not resent
	assert.Greater(t, len(res.Events), 20)
}

func TestEnvironmentDoesNotLeak(t *testing.T) {
	t.Setenv("NDBG_SECRET", "s3cret")
	res, err := runChecked(t, "import os, sys\ndef f():\n    return sorted(os.environ), sys.flags.no_site, sys.flags.no_user_site\n", "f", "f()", testLimits(t))
	require.NoError(t, err)
	assert.NotContains(t, res.Return, "NDBG_SECRET")
	// bubblewrap sets PWD, to the scratch directory.
	assert.Equal(t, "(['LC_ALL', 'PATH', 'PWD', 'PYTHONHASHSEED', 'PYTHONSAFEPATH'], 1, 1)", res.Return)
}
