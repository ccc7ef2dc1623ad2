package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ndbg/ndbg/internal/testsupport/victim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hostile-program suite (issue 18, docs/security.md): each program
// attacks the machine or the tracer; each must be stopped or refused with a
// clear error and leave nothing behind (runChecked asserts that no process
// of the run survives).

// hostileRun runs src's f() in the sandbox and returns the result and error.
func hostileRun(t *testing.T, src string) (*Result, error) {
	t.Helper()
	lim := testLimits(t)
	lim.Timeout = 2 * time.Second
	return runChecked(t, src, "f", "f()", lim)
}

// requireRaised asserts the program ended by raising an exception of type typ.
func requireRaised(t *testing.T, res *Result, err error, typ string) {
	t.Helper()
	require.NoError(t, err)
	require.NotNil(t, res.Exception, "want %s, returned %s", typ, res.Return)
	assert.Equal(t, typ, res.Exception.Type, res.Exception.Message)
}

// requireOSError asserts the program ended by raising an OSError (or one
// of its subclasses: the file is not there, not writable, ...).
func requireOSError(t *testing.T, res *Result, err error) {
	t.Helper()
	require.NoError(t, err)
	require.NotNil(t, res.Exception, "want an OSError, returned %s", res.Return)
	assert.Contains(t, []string{"OSError", "FileNotFoundError", "PermissionError", "ConnectionRefusedError"}, res.Exception.Type, res.Exception.Message)
}

// victimDir is victim.Dir: a host folder the sandbox must not change.
func victimDir(t *testing.T) (dir, file string) { return victim.Dir(t) }

func TestHostileFileWrites(t *testing.T) {
	dir, file := victimDir(t)
	for _, path := range []string{filepath.Join(dir, "new"), file, "/etc/ndbg-hostile", "/var/tmp/ndbg-hostile",
		"/ndbg-hostile", "/usr/ndbg-hostile", "/dev/ndbg-hostile", "/dev/shm/ndbg-hostile"} {
		res, err := hostileRun(t, fmt.Sprintf("def f():\n    open(%q, 'w').write('pwned')\n", path))
		requireOSError(t, res, err)
	}
	assert.NoFileExists(t, filepath.Join(dir, "new"))
	for _, path := range []string{"/etc/ndbg-hostile", "/ndbg-hostile", "/usr/ndbg-hostile", "/dev/ndbg-hostile"} {
		assert.NoFileExists(t, path)
	}
	assert.NoFileExists(t, "/var/tmp/ndbg-hostile")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))

	// /tmp is the sandbox's own scratch space: writable, private, gone after.
	name := filepath.Join("/tmp", fmt.Sprintf("ndbg-hostile-%d", os.Getpid()))
	res, err := hostileRun(t, fmt.Sprintf("def f():\n    return open(%q, 'w').write('x' * 10)\n", name))
	require.NoError(t, err)
	assert.Equal(t, "10", res.Return)
	assert.NoFileExists(t, name)
	// The scratch space is bounded (a 64 MiB tmpfs; files at most 64 MiB).
	res, err = hostileRun(t, "def f():\n    with open('big', 'wb') as w:\n        for i in range(100):\n            w.write(b'x' * (1 << 20))\n")
	require.NoError(t, err)
	require.NotNil(t, res.Exception)
}

func TestHostileFileDeletion(t *testing.T) {
	dir, file := victimDir(t)
	for _, src := range []string{
		fmt.Sprintf("import os\ndef f():\n    os.remove(%q)\n", file),
		fmt.Sprintf("import shutil\ndef f():\n    shutil.rmtree(%q)\n", dir),
		fmt.Sprintf("import os\ndef f():\n    os.rename(%q, %q)\n", file, file+".moved"),
	} {
		res, err := hostileRun(t, src)
		requireOSError(t, res, err)
	}
	assert.FileExists(t, file)
}

func TestHostileSockets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener was closed
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer udp.Close()
	udpPort := udp.LocalAddr().(*net.UDPAddr).Port
	// The sandbox has a loopback of its own (nothing listens there) and no
	// other network.
	for src, exc := range map[string]string{
		fmt.Sprintf("import socket\ndef f():\n    socket.create_connection(('127.0.0.1', %d), timeout=1).sendall(b'pwned')\n", port):                           "ConnectionRefusedError",
		fmt.Sprintf("import socket\ndef f():\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    s.sendto(b'pwned', ('127.0.0.1', %d))\n", udpPort): "",
		"import socket\ndef f():\n    socket.create_connection(('1.1.1.1', 80), timeout=1)\n":                                                                  "OSError",
	} {
		res, err := hostileRun(t, src)
		if exc == "" {
			require.NoError(t, err)
		} else {
			requireRaised(t, res, err, exc)
		}
	}
	require.NoError(t, udp.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, _, err = udp.ReadFrom(make([]byte, 16))
	assert.Error(t, err, "the UDP listener received a datagram")
	assert.Zero(t, accepted.Load(), "the TCP listener accepted a connection")
}

func TestHostileProcessCreation(t *testing.T) {
	dir, _ := victimDir(t)
	marker := filepath.Join(dir, "ran")
	for _, src := range []string{
		// The re-imported posix module has the real system, fork and exec.
		fmt.Sprintf("import sys\ndel sys.modules['posix']\nimport posix\ndef f():\n    return posix.system('touch %s')\n", marker),
		"import os\ndef f():\n    return os.fork()\n",
		"import subprocess\ndef f():\n    return subprocess.run(['true'])\n",
		"import subprocess\ndef f():\n    return subprocess.Popen(['sleep', '100'], start_new_session=True)\n",
		"import pty\ndef f():\n    pty.fork()\n",
		"import ctypes\ndef f():\n    return ctypes.CDLL(None).fork()\n",
		"import multiprocessing\ndef f():\n    p = multiprocessing.Process(target=print)\n    p.start()\n",
	} {
		res, err := hostileRun(t, src)
		require.NoError(t, err, src)
		if res.Exception != nil {
			assert.Contains(t, []string{"PermissionError", "OSError"}, res.Exception.Type, src)
		} else {
			// fork(2) says -1; system(3) says 127 << 8, "no shell ran"
			assert.Contains(t, []string{"-1", "32512"}, res.Return, src)
		}
	}
	assert.NoFileExists(t, marker)
}

func TestHostileForkBombs(t *testing.T) {
	for _, src := range []string{
		// A bomb that ignores the refusals ends by time.
		"import os\ndef f():\n    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass\n",
		// setsid children that would outlive ndbg.
		"import os, time\ndef f():\n    for i in range(5):\n        try:\n            if os.fork() == 0:\n                os.setsid()\n                time.sleep(100)\n        except OSError:\n            pass\n    time.sleep(100)\n",
	} {
		res, err := hostileRun(t, src)
		if err == nil && res.Truncated {
			continue // stopped at the event cap
		}
		requireKind(t, err, ErrTimeout)
	}
	// Threads are allowed, and bounded by the memory limit (and by
	// RLIMIT_NPROC where the user is not root).
	res, err := hostileRun(t, "import threading, time\ndef f():\n    n = 0\n    try:\n        while n < 100000:\n            threading.Thread(target=time.sleep, args=(100,), daemon=True).start()\n            n += 1\n    except RuntimeError:\n        return 'bounded'\n")
	require.NoError(t, err)
	assert.Equal(t, "'bounded'", res.Return)
}

func TestHostileForgedRecords(t *testing.T) {
	forged := `{"t": "result", "id": 1, "status": "returned", "events": [], "ret": "42", "exc": null, "stdout": "", "stdout_trunc": false, "msg": "", "line": 0}`
	for _, src := range []string{
		fmt.Sprintf("import os\ndef f():\n    os.write(3, %q.encode() + b'\\n')\n    return 1\n", forged),
		fmt.Sprintf("import os\ndef f():\n    os.write(3, b'%s ' + %q.encode() + b'\\n')\n    return 1\n", strings.Repeat("0", 64), forged),
		// A partial line spoils the tracer's next one.
		"import os\ndef f():\n    os.write(3, b'{')\n    return 1\n",
		// Replace the channel with a pipe nobody reads: the result is lost.
		fmt.Sprintf("import os\ndef f():\n    os.write(3, %q.encode() + b'\\n')\n    os.dup2(os.pipe()[1], 3)\n    return 1\n", forged),
	} {
		_, err := hostileRun(t, src)
		requireKind(t, err, ErrForged)
	}
}

func TestSandboxRefused(t *testing.T) {
	// What bubblewrap prints where the kernel refuses user namespaces: the
	// program must not run at all.
	fake := filepath.Join(t.TempDir(), "bwrap")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"), 0o755))
	lim := testLimits(t)
	lim.bwrap = fake
	_, err := Run(context.Background(), program(t, "def f():\n    return 1\n", "f"), "f()", lim)
	e := requireKind(t, err, ErrSandbox)
	assert.Contains(t, e.Msg, "No permissions to create new namespace")
	assert.Contains(t, e.Msg, "--unsandboxed")

	// Without bubblewrap the same: refused, naming the way out.
	lim = testLimits(t)
	t.Setenv("PATH", t.TempDir())
	_, err = Run(context.Background(), program(t, "def f():\n    return 1\n", "f"), "f()", lim)
	e = requireKind(t, err, ErrSandbox)
	assert.Contains(t, e.Msg, "apt-get install bubblewrap")

	// Asked for by name, the unsandboxed mode runs it.
	lim.Unsandboxed = true
	res, err := Run(context.Background(), program(t, "def f():\n    return 1\n", "f"), "f()", lim)
	require.NoError(t, err)
	assert.Equal(t, "1", res.Return)
}

func TestStaleWorkDirsAreRemoved(t *testing.T) {
	// A work directory of a process that no longer exists (a SIGKILLed
	// ndbg) goes at the next unsandboxed start; a live process's stays.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	stale, err := os.MkdirTemp("", fmt.Sprintf("ndbg-trace-%d-", cmd.Process.Pid))
	require.NoError(t, err)
	live, err := os.MkdirTemp("", fmt.Sprintf("ndbg-trace-%d-", os.Getppid()))
	require.NoError(t, err)
	defer os.RemoveAll(live)
	lim := testLimits(t)
	lim.Unsandboxed = true
	_, err = runChecked(t, "def f():\n    return 1\n", "f", "f()", lim)
	require.NoError(t, err)
	assert.NoDirExists(t, stale)
	assert.DirExists(t, live)
}

func TestTooDeepToCompile(t *testing.T) {
	deep := strings.Repeat("1+", 200000) + "1"
	_, err := hostileRun(t, "def f():\n    return "+deep+"\n")
	e := requireKind(t, err, ErrSyntax)
	assert.Contains(t, e.Msg, "too deeply nested")
	_, err = runChecked(t, "def f(x):\n    return x\n", "f", "f("+deep+")", testLimits(t))
	e = requireKind(t, err, ErrSetup)
	assert.Contains(t, e.Msg, "too deeply nested")
}

func TestHostileHugeReprs(t *testing.T) {
	// The repr of a 10^7-element list is 89 MB: built at every event it
	// timed out; built to a budget, the loop traces.
	lim := testLimits(t)
	lim.Timeout = 20 * time.Second // building the list is slow on a loaded machine
	res, err := runChecked(t, "def f():\n    xs = list(range(10**7))\n    s = 0\n    for i in range(20):\n        s += xs[i]\n    return s\n", "f", "f()", lim)
	require.NoError(t, err)
	assert.Equal(t, "190", res.Return)
	last := res.Events[len(res.Events)-1]
	require.Equal(t, "xs", last.Locals[0].Name)
	assert.True(t, strings.HasPrefix(last.Locals[0].Repr, "[0, 1, 2, 3, "), last.Locals[0].Repr)
	assert.Regexp(t, `\.\.\.\[\+\d+\+\]$`, last.Locals[0].Repr, "cut unmeasured: at least N bytes")
	assert.LessOrEqual(t, len(last.Locals[0].Repr), 256)
}

func TestHostileEndlessRepr(t *testing.T) {
	src := `import time
class Stuck:
    def __repr__(self):
        while True:
            time.sleep(0.01)
class Stubborn:
    def __repr__(self):
        while True:
            try:
                time.sleep(0.01)
            except BaseException:
                pass
def f():
    a = Stuck()
    b = [1, a]
    return 7
`
	lim := testLimits(t)
	lim.Timeout = 10 * time.Second
	start := time.Now()
	res, err := runChecked(t, src, "f", "f()", lim)
	require.NoError(t, err)
	assert.Equal(t, "7", res.Return)
	last := res.Events[len(res.Events)-1]
	assert.Equal(t, "<Stuck object: repr timed out>", last.Locals[0].Repr)
	assert.Equal(t, "<list object: repr timed out>", last.Locals[1].Repr)
	// One budget per value: a repr that timed out is not tried again.
	assert.Less(t, time.Since(start), lim.Timeout)

	// A __repr__ that swallows its timeout ends by the program's limit.
	lim.Timeout = 2 * time.Second
	_, err = runChecked(t, "import time\n"+src[strings.Index(src, "class Stubborn"):strings.Index(src, "def f")]+"def f():\n    a = Stubborn()\n    return 7\n", "f", "f()", lim)
	requireKind(t, err, ErrTimeout)
}

func TestLeakedDescriptorsAreClosed(t *testing.T) {
	// A descriptor ndbg's caller left without close-on-exec (Go passes
	// those on to every child) must not reach the program.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	leaked, err := syscall.Dup(int(w.Fd()))
	require.NoError(t, err)
	defer syscall.Close(leaked)
	res, err := hostileRun(t, "import os\ndef f():\n    return sorted(int(n) for n in os.listdir('/proc/self/fd'))\n")
	require.NoError(t, err)
	// 0-2, the tracer's channel, and listdir's own descriptor.
	assert.Equal(t, "[0, 1, 2, 3, 4]", res.Return)
}

// TestNothingOutlivesKilledNdbg SIGKILLs a process in the middle of a Run
// (this test binary, re-executed) and checks that the sandbox dies with it.
func TestNothingOutlivesKilledNdbg(t *testing.T) {
	if os.Getenv("NDBG_TRACE_KILLED_HELPER") == "1" {
		lim := testLimits(t)
		lim.Timeout = time.Minute
		lim.onStart = func(pgid int) { fmt.Println(pgid) }
		_, _ = Run(context.Background(), program(t, "import time\ndef f():\n    time.sleep(60)\n", "f"), "f()", lim)
		return
	}
	testLimits(t) // skips without python3
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNothingOutlivesKilledNdbg$")
	cmd.Env = append(os.Environ(), "NDBG_TRACE_KILLED_HELPER=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var pgid int
	_, err = fmt.Fscan(out, &pgid)
	require.NoError(t, err, "the helper's sandbox did not start")
	ns := pidNamespaces(t, pgid)
	require.NotEmpty(t, ns)
	require.NotEmpty(t, namespaceMembers(t, ns))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return len(namespaceMembers(t, ns)) == 0 && len(groupMembers(t, pgid)) == 0 },
		5*time.Second, 10*time.Millisecond, "the sandbox outlived the killed process")
}

// scriptChecked runs Script and asserts that no process of its group or of
// its sandbox's PID namespace survives.
func scriptChecked(t *testing.T, lim Limits, source string, stdin []byte) ([]byte, error) {
	t.Helper()
	var pgid int
	var ns map[string]bool
	lim.onStart = func(g int) {
		pgid = g
		ns = pidNamespaces(t, g)
	}
	out, err := Script(context.Background(), lim, source, stdin)
	if pgid == 0 {
		return out, err // never started: refused before
	}
	require.Empty(t, groupMembers(t, pgid), "processes of group %d survived", pgid)
	require.Eventually(t, func() bool { return len(namespaceMembers(t, ns)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"processes of the sandbox's PID namespace %v survived", ns)
	return out, err
}

// TestHostileScript: ndbg's own scripts over untrusted text (ndbg debug's
// p, constrain.Analyze, CRUXEval checks) run in the same sandbox as the
// tracer: code that reaches them cannot touch the host, and time, memory
// and output are bounded.
func TestHostileScript(t *testing.T) {
	dir, file := victimDir(t)
	src := fmt.Sprintf(`import json, os, socket, sys
out = {"stdin": sys.stdin.read(), "cwd": os.getcwd(), "host": socket.gethostname()}
out["system"] = os.system("touch %[1]s/system; rm -f %[2]s")
for name, act in [("write", lambda: open(%[2]q, "w").write("pwned")), ("create", lambda: open(%[1]q + "/new", "w")),
                  ("remove", lambda: os.remove(%[2]q)), ("fork", os.fork),
                  ("connect", lambda: socket.create_connection(("1.1.1.1", 53), timeout=1))]:
    try:
        act()
        out[name] = "done"
    except OSError as e:
        out[name] = type(e).__name__
json.dump(out, sys.stdout)
`, dir, file)
	out, err := scriptChecked(t, testLimits(t), src, []byte("data"))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	assert.Equal(t, "data", got["stdin"])
	assert.Equal(t, ScratchDir, got["cwd"])
	assert.Equal(t, "ndbg", got["host"])
	assert.NotEqual(t, float64(0), got["system"], "os.system cannot start a shell")
	for _, k := range []string{"write", "create", "remove", "fork", "connect"} {
		assert.NotEqual(t, "done", got[k], k)
	}
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
	assert.NoFileExists(t, filepath.Join(dir, "system"))
	assert.NoFileExists(t, filepath.Join(dir, "new"))

	lim := testLimits(t)
	lim.Timeout = 500 * time.Millisecond
	_, err = scriptChecked(t, lim, "import os\nos.setsid()\nwhile True: pass\n", nil)
	requireKind(t, err, ErrTimeout)
	_, err = scriptChecked(t, testLimits(t), "x = bytearray(4 << 30)\n", nil)
	requireKind(t, err, ErrMemory)
	lim = testLimits(t)
	lim.MaxStdout = 1000
	out, err = scriptChecked(t, lim, "print('x' * 5000)\n", nil)
	e := requireKind(t, err, ErrCrash)
	assert.Contains(t, e.Msg, "more than 1000 bytes")
	assert.Len(t, out, 1000)
	_, err = scriptChecked(t, testLimits(t), "raise ValueError('no')\n", nil)
	e = requireKind(t, err, ErrCrash)
	assert.Contains(t, e.Msg, "ValueError: no")
	// Leaked descriptors are closed before the script runs.
	out, err = scriptChecked(t, testLimits(t), "import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))\n", nil)
	require.NoError(t, err)
	assert.Equal(t, "[0, 1, 2, 3]\n", string(out), "stdio and listdir's own descriptor")
}

// TestScriptSandboxRefused: where the sandbox cannot start, a script does
// not run; asked for by name, the unsandboxed mode runs it.
func TestScriptSandboxRefused(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "bwrap")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755))
	lim := testLimits(t)
	lim.bwrap = fake
	_, err := scriptChecked(t, lim, "print(1)\n", nil)
	e := requireKind(t, err, ErrSandbox)
	assert.Contains(t, e.Msg, "No permissions to create new namespace")
	assert.Contains(t, e.Msg, "--unsandboxed")

	lim.Unsandboxed = true
	out, err := scriptChecked(t, lim, "import os\nprint(os.getcwd())\n", nil)
	require.NoError(t, err)
	dir := strings.TrimSpace(string(out))
	assert.Contains(t, dir, fmt.Sprintf("ndbg-trace-%d-", os.Getpid()))
	assert.NoDirExists(t, dir)
}

// TestScriptContextCancel: a cancelled context ends a script at once, with
// the context's error, and kills its group.
func TestScriptContextCancel(t *testing.T) {
	lim := testLimits(t)
	var pgid int
	ctx, cancel := context.WithCancel(context.Background())
	lim.onStart = func(g int) {
		pgid = g
		cancel()
	}
	_, err := Script(ctx, lim, "while True: pass\n", nil)
	require.ErrorIs(t, err, context.Canceled)
	require.NotZero(t, pgid)
	// Cancelled while bubblewrap still sets the sandbox up, its inner
	// process is killed too, and shows as a zombie until init reaps it.
	require.Eventually(t, func() bool { return len(groupMembers(t, pgid)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"processes of group %d survived", pgid)
}
