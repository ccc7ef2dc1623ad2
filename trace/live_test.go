package trace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/otheruser"
)

// liveProgram is a program with a class, a closure, a generator, a
// comprehension, output and an exception that is caught.
const liveProgram = `import sys

class Acct:
    def __init__(self, balance):
        self.balance = balance

    def add(self, n):
        self.balance += n
        return self.balance

RATE = 3

def gen(n):
    for i in range(n):
        yield i * RATE

def f(xs):
    a = Acct(1)
    add = lambda k: a.add(k)
    total = 0
    for v in gen(len(xs)):
        total += add(v)
    print("total", total)
    sq = [x * x for x in xs]
    try:
        int("z")
    except ValueError:
        print("bad", file=sys.stderr)
    return total + sum(sq)
`

// TestLiveMatchesRun: stepping a live program event by event stops at
// exactly Run's events (kind, line, depth, frame, function, locals, value,
// output so far), and ends where Run ends.
func TestLiveMatchesRun(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ src, call string }{
		{liveProgram, "f([1, 2, 3])"},
		{liveProgram + "\nif __name__ == '__main__':\n    print(f([2]))\n", ""},
		{"def fact(n):\n    if n <= 1:\n        raise ValueError(n)\n    return n * fact(n - 1)\n", "fact(4)"},
	} {
		entry, _, _ := strings.Cut(c.call, "(")
		var prog *dsl.Program
		var err error
		if entry == "" {
			prog, err = dsl.NewScript(c.src)
		} else {
			prog, err = dsl.NewProgram(c.src, entry)
		}
		require.NoError(t, err)
		res, err := Run(ctx, prog, c.call, Limits{})
		require.NoError(t, err)
		any := NoCriteria()
		any.Any = true
		l, st, err := StartLive(ctx, prog, c.call, Limits{}, any, nil)
		require.NoError(t, err)
		for i, want := range res.Events {
			require.False(t, st.End, "event %d", i)
			require.Equal(t, i, st.Index)
			require.Equal(t, want, st.Event, "event %d", i)
			st, err = l.Resume(ctx, any)
			require.NoError(t, err)
		}
		require.True(t, st.End)
		require.Equal(t, len(res.Events), st.Index)
		out, errOut, _, _ := l.Output()
		require.Equal(t, string(res.Stdout), string(out))
		require.Equal(t, string(res.Stderr), string(errOut))
		if res.Exception != nil {
			require.Equal(t, res.Exception, st.Exception)
		} else {
			require.Equal(t, res.Return, st.Return)
		}
		l.Close()
	}
}

// startAt starts liveProgram's f([1, 2, 3]) and runs it to the first line
// event at line.
func startAt(t *testing.T, lim Limits, src, call string, line int) (*Live, *Stop) {
	t.Helper()
	entry, _, _ := strings.Cut(call, "(")
	prog, err := dsl.NewProgram(src, entry)
	require.NoError(t, err)
	c := NoCriteria()
	c.Lines = []int{line}
	l, st, err := StartLive(context.Background(), prog, call, lim, c, nil)
	require.NoError(t, err)
	t.Cleanup(l.Close)
	require.False(t, st.End)
	require.Equal(t, line, st.Event.Line)
	return l, st
}

// TestLiveEval: expressions run in the stopped frame as pdb's p runs them:
// attributes and methods of objects, globals and the program's functions,
// callers' frames; statements change the frame's locals when it resumes;
// errors are pdb's one line.
func TestLiveEval(t *testing.T) {
	ctx := context.Background()
	l, _ := startAt(t, Limits{}, liveProgram, "f([1, 2, 3])", 22) // total += add(v), first time
	for _, c := range []struct {
		level                  int
		expr, mode, value, err string
	}{
		{0, "a.balance", EvalRepr, "1", ""},
		{0, "a.add(0) + RATE", EvalRepr, "4", ""},
		{0, "vars(a)", EvalPretty, "{'balance': 1}", ""},
		{0, "type(a).__module__", EvalRepr, "'program'", ""},
		{0, "gen", EvalWhatis, "Function gen", ""},
		{0, "Acct", EvalWhatis, "Class program.Acct", ""},
		{0, "a.add", EvalWhatis, "Method add", ""},
		{0, "zz", EvalRepr, "", "NameError: name 'zz' is not defined"},
		{0, "total > 0", EvalBool, "False", ""},
		{0, "", EvalArgs, "xs = [1, 2, 3]", ""},
	} {
		r, err := l.Eval(ctx, c.level, c.expr, c.mode)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.err, r.Error, c.expr)
		require.Equal(t, c.value, r.Value, c.expr)
	}
	r, err := l.Eval(ctx, 0, "total = 100; v", EvalExec)
	require.NoError(t, err)
	require.Equal(t, "0\n", r.Output) // an expression statement's value, as pdb's ! prints it
	c := NoCriteria()
	c.LE = 0
	st, err := l.Resume(ctx, c)
	require.NoError(t, err)
	require.Contains(t, st.Event.Locals, dsl.Local{Name: "total", Repr: "101"}, "total = 100, then += add(0) = 1")
}

// TestLiveInterrupt: an endless loop stops at its next event when
// interrupted, and again when a resume's CPU time (Limits.Timeout) runs out;
// there are no event or wall-clock limits.
func TestLiveInterrupt(t *testing.T) {
	ctx := context.Background()
	src := "def f():\n    i = 0\n    while True:\n        i += 1\n"
	l, _ := startAt(t, Limits{Timeout: 1e9}, src, "f()", 2)
	done := make(chan *Stop)
	go func() {
		st, err := l.Resume(ctx, NoCriteria())
		require.NoError(t, err)
		done <- st
	}()
	var st *Stop
	for st == nil {
		l.Interrupt()
		select {
		case st = <-done:
		default:
		}
	}
	require.Equal(t, "interrupt", st.Why)
	require.Contains(t, []int{3, 4}, st.Event.Line)
	l.ClearInterrupt()                     // the loop's interrupts after the stop, which the next resume would take
	st, err := l.Resume(ctx, NoCriteria()) // only its CPU time stops it now
	require.NoError(t, err)
	require.Equal(t, "cpu", st.Why)
	r, err := l.Eval(ctx, 0, "i > 100000", EvalBool)
	require.NoError(t, err)
	require.Equal(t, "True", r.Value)
}

// TestLiveInterruptAtStop: an interrupt made at a stop (one meant for an
// action whose resume another goroutine has not written yet) stops the
// next resume at its first event, and ClearInterrupt takes it back.
func TestLiveInterruptAtStop(t *testing.T) {
	ctx := context.Background()
	src := "def f():\n    i = 0\n    while True:\n        i += 1\n"
	l, first := startAt(t, Limits{Timeout: 1e9}, src, "f()", 2)
	l.Interrupt()
	st, err := l.Resume(ctx, NoCriteria())
	require.NoError(t, err)
	require.Equal(t, "interrupt", st.Why)
	require.Equal(t, first.Index+1, st.Index, "the resume's first event")

	l.Interrupt()
	l.ClearInterrupt()
	st, err = l.Resume(ctx, NoCriteria())
	require.NoError(t, err)
	require.Equal(t, "cpu", st.Why, "taken back: only the CPU time stops it")
}

// TestLiveHostile: a live program that writes to the tracer's channel is
// caught (ErrForged), a __repr__ that never returns is cut off at a stop,
// and a reply over the size limit is an error, not a line without end.
func TestLiveHostile(t *testing.T) {
	ctx := context.Background()
	src := "import os\n\ndef f():\n    x = 1\n    os.write(3, b'forged\\n')\n    return x\n"
	l, _ := startAt(t, Limits{}, src, "f()", 4)
	_, err := l.Resume(ctx, NoCriteria())
	require.ErrorIs(t, err, ErrForged)

	src = "class Slow:\n    def __repr__(self):\n        while True:\n            pass\n\ndef f():\n    s = Slow()\n    return 1\n"
	_, st := startAt(t, Limits{}, src, "f()", 8)
	require.Equal(t, []dsl.Local{{Name: "s", Repr: "<Slow object: repr timed out>"}}, st.Event.Locals)

	prog, err := dsl.NewScript("for i in range(300000):\n    globals()['v%d' % i] = i\nx = 1\n")
	require.NoError(t, err)
	c := NoCriteria()
	c.Lines = []int{3}
	_, _, err = StartLive(ctx, prog, "", Limits{}, c, nil)
	require.ErrorIs(t, err, ErrSetup)
	require.Contains(t, err.Error(), "over the limit")
}

// TestLiveStartTimeout: a live program's module code and the call's
// arguments run untraced before its first event, where no stop can
// reach them: past the CPU time of a step they end the start with
// ErrTimeout (the tracer raises at SIGXCPU), within a few seconds, and
// the process is gone.
func TestLiveStartTimeout(t *testing.T) {
	ctx := context.Background()
	any := NoCriteria()
	any.Any = true
	for _, c := range []struct{ src, call string }{
		{"while True:\n    pass\n\ndef f(x):\n    return x\n", "f(1)"},
		{"def spin():\n    while True:\n        pass\n\ndef f(x):\n    return x\n", "f(spin())"},
	} {
		prog, err := dsl.NewProgram(c.src, "f")
		require.NoError(t, err)
		start := time.Now()
		_, _, err = StartLive(ctx, prog, c.call, Limits{Timeout: time.Second}, any, nil)
		require.ErrorIs(t, err, ErrTimeout, c.src)
		require.Contains(t, err.Error(), "ran past the CPU time of a step (1 s)")
		require.Less(t, time.Since(start), 30*time.Second)
	}
}

// startIdentity starts f(1) of "def f(x): return x" live, stopped at its
// first event.
func startIdentity(t *testing.T) *Live {
	t.Helper()
	prog, err := dsl.NewProgram("def f(x):\n    return x\n", "f")
	require.NoError(t, err)
	any := NoCriteria()
	any.Any = true
	l, _, err := StartLive(context.Background(), prog, "f(1)", Limits{}, any, nil)
	require.NoError(t, err)
	return l
}

// procChildren lists the children of process pid (skipping t on a kernel
// without /proc/PID/task/PID/children).
func procChildren(t *testing.T, pid string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/task/" + pid + "/children")
	if err != nil {
		t.Skipf("no /proc/PID/task/PID/children: %v", err)
	}
	return strings.Fields(string(data))
}

// TestKillLeavesNoSandboxInit: a killed tracer's sandbox init (bwrap's
// child, PID 1 of the sandbox's PID namespace, in a session of its own) is
// killed first (killChildren), so that bwrap reaps it: no process of the
// sandbox outlives the kill, not even a zombie left to the host's init
// (which, in a container whose PID 1 does not reap, stays).
func TestKillLeavesNoSandboxInit(t *testing.T) {
	l := startIdentity(t)
	defer l.Close() // (Close is idempotent: the test closes it first)
	if l.lim.Unsandboxed {
		t.Skip("no sandbox")
	}
	kids := procChildren(t, fmt.Sprint(l.p.cmd.Process.Pid))
	require.NotEmpty(t, kids, "bwrap's sandbox init")
	l.Close()
	for _, k := range kids {
		_, err := os.Stat("/proc/" + k)
		require.True(t, os.IsNotExist(err), "process %s of the sandbox is still there (a zombie?) after Close", k)
	}
}

// TestOtherUserCannotSignalTheSandbox: run by root, a program runs as
// SandboxUID, which no account of the host has: another local user
// (otheruser, uid 65534, the nobody that the sandbox used to run as)
// cannot signal its interpreter or change its limits, which a process of
// the same uid could (kill, prlimit).
func TestOtherUserCannotSignalTheSandbox(t *testing.T) {
	py := otheruser.Python(t)
	l := startIdentity(t)
	defer l.Close()
	interp := []string{fmt.Sprint(l.p.cmd.Process.Pid)}
	for len(interp) == 1 && len(procChildren(t, interp[0])) > 0 { // bwrap, its init, then the interpreter
		interp = procChildren(t, interp[0])[:1]
	}
	status, err := os.ReadFile("/proc/" + interp[0] + "/status")
	require.NoError(t, err)
	require.Contains(t, string(status), fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d", SandboxUID, SandboxUID, SandboxUID, SandboxUID))
	cmd := exec.Command(py, "-c", "import os, sys\ntry:\n    os.kill(int(sys.argv[1]), 0)\n    print('signalled')\nexcept PermissionError:\n    print('refused')\n", interp[0])
	otheruser.Set(cmd)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "refused\n", string(out))
}
