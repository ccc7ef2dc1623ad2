package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sandbox's confinement (docs/security.md, "The sandbox"): who the
// program runs as, what of the host it sees, and the kernel interfaces it
// cannot reach. Each attack asserts what the host kept (a setting's value,
// a listener that got nothing), not only that the program failed. When the
// tests run as root (CI), TestConfinementAsUnprivilegedUser runs them again
// as SandboxUID.

// jsonRun runs src's f(), which prints a JSON text, and decodes it into v.
func jsonRun(t *testing.T, src string, v any) {
	t.Helper()
	res, err := hostileRun(t, src)
	require.NoError(t, err)
	require.Nil(t, res.Exception, "%+v", res.Exception)
	require.NoError(t, json.Unmarshal(res.Stdout, v), string(res.Stdout))
}

// TestSandboxIdentity: the program never runs as the host's root, has no
// capability, and cannot gain privileges by executing anything.
func TestSandboxIdentity(t *testing.T) {
	var got struct {
		UID, GID, EUID int
		Groups         []int
		CapEff, CapPrm string
		NoNewPrivs     string
	}
	jsonRun(t, `import json, os
def f():
    st = dict(l.split(':\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\t' in l)
    print(json.dumps({"UID": os.getuid(), "GID": os.getgid(), "EUID": os.geteuid(), "Groups": os.getgroups(),
                       "CapEff": st["CapEff"], "CapPrm": st["CapPrm"], "NoNewPrivs": st["NoNewPrivs"]}))
`, &got)
	want := os.Getuid()
	if want == 0 {
		want = SandboxUID
		assert.Equal(t, SandboxGID, got.GID)
		assert.Empty(t, got.Groups)
	}
	assert.Equal(t, want, got.UID)
	assert.Equal(t, want, got.EUID)
	assert.NotZero(t, got.UID, "the program must never be the host's root")
	assert.Equal(t, "0000000000000000", got.CapEff)
	assert.Equal(t, "0000000000000000", got.CapPrm)
	assert.Equal(t, "1", got.NoNewPrivs)

	// ndbg's own scripts (verdicts, expressions, analysis) run the same way.
	out, err := scriptChecked(t, testLimits(t), "import os\nprint(os.getuid(), os.geteuid(), os.getgroups())\n", nil)
	require.NoError(t, err)
	if os.Getuid() == 0 {
		assert.Equal(t, fmt.Sprintf("%d %d []\n", SandboxUID, SandboxUID), string(out))
	} else {
		assert.Equal(t, fmt.Sprintf("%d %d ", os.Getuid(), os.Getuid()), string(out)[:len(fmt.Sprintf("%d %d ", os.Getuid(), os.Getuid()))])
	}
}

// TestSandboxSeesOnlyTheInterpreter: the file system holds the system
// folders, a few files of /etc, the interpreter's own prefix, /dev, /proc
// and the scratch /tmp; nothing of the host's /home, /root, /var, /run,
// /sys, /mnt or /tmp.
func TestSandboxSeesOnlyTheInterpreter(t *testing.T) {
	lim := testLimits(t)
	var got struct {
		Root, Etc []string
		Missing   map[string]bool
	}
	jsonRun(t, `import json, os
def f():
    paths = ['/home', '/root', '/var', '/run', '/sys', '/mnt', '/opt', '/srv', '/etc/shadow', '/etc/ssh', '/proc/self/mem']
    print(json.dumps({"Root": sorted(os.listdir('/')), "Etc": sorted(os.listdir('/etc')),
                       "Missing": {p: not os.path.exists(p) or not os.access(p, os.R_OK) for p in paths}}))
`, &got)
	allowed := []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc", "tmp"}
	roots := pythonRoots(lim.Python)
	for _, r := range roots {
		allowed = append(allowed, strings.SplitN(strings.TrimPrefix(r, "/"), "/", 2)[0])
	}
	for _, name := range got.Root {
		assert.Contains(t, allowed, name, "/%s is visible in the sandbox", name)
	}
	var etc []string
	for _, f := range etcFiles {
		etc = append(etc, strings.SplitN(strings.TrimPrefix(f, "/etc/"), "/", 2)[0])
	}
	for _, name := range got.Etc {
		assert.True(t, slices.Contains(etc, name) || strings.HasPrefix(name, "python3."), "/etc/%s is visible in the sandbox", name)
	}
	for path, missing := range got.Missing {
		if underAny(path, roots) || slices.ContainsFunc(roots, func(r string) bool { return strings.HasPrefix(r, path+"/") }) {
			continue // the interpreter's prefix (pyenv's under /root) and the empty folders above it
		}
		if path == "/proc/self/mem" && os.Getuid() != 0 {
			continue // readable by its own process unless the uid changed (which makes it non-dumpable)
		}
		assert.True(t, missing, "%s is visible in the sandbox", path)
	}
}

// TestHostileKernelSettings: /proc/sys and the other kernel interfaces are
// read-only or absent; the host's values are unchanged (the route from a
// writable core_pattern to code execution as host root).
func TestHostileKernelSettings(t *testing.T) {
	settings := []string{"/proc/sys/vm/swappiness", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname",
		"/proc/sys/fs/protected_fifos", "/proc/sys/user/max_user_namespaces"}
	before := map[string]string{}
	for _, s := range settings {
		data, err := os.ReadFile(s)
		if err == nil {
			before[s] = string(data)
		}
	}
	for _, s := range append(settings, "/proc/sysrq-trigger", "/sys/kernel/uevent_helper", "/sys/fs/cgroup/cgroup.procs") {
		// Opening for writing is the whole attack; nothing is written, so
		// that a regression here cannot change the machine running the test.
		res, err := hostileRun(t, fmt.Sprintf("import os\ndef f():\n    os.close(os.open(%q, os.O_WRONLY))\n", s))
		requireOSError(t, res, err)
	}
	for s, v := range before {
		data, err := os.ReadFile(s)
		require.NoError(t, err)
		assert.Equal(t, v, string(data), "%s changed", s)
	}
}

// TestHostileUnixSockets: host unix sockets (in the host's /tmp and
// /var/tmp, in a folder beside the tests, and abstract ones) cannot be
// reached: the listeners accept nothing.
func TestHostileUnixSockets(t *testing.T) {
	dir, _ := victimDir(t)
	var paths []string
	for _, parent := range []string{dir, "/tmp", "/var/tmp"} {
		paths = append(paths, filepath.Join(parent, fmt.Sprintf("ndbg-sock-%d", os.Getpid())))
	}
	abstract := fmt.Sprintf("@ndbg-sock-%d", os.Getpid())
	accepted := make(chan string, 8)
	for _, p := range append(paths, abstract) {
		ln, err := net.Listen("unix", p)
		require.NoError(t, err, p)
		if !strings.HasPrefix(p, "@") {
			require.NoError(t, os.Chmod(p, 0o777)) // reachable by any uid: only the sandbox stands in the way
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- p
				c.Close()
			}
		}()
	}
	for _, p := range append(paths, abstract) {
		addr := fmt.Sprintf("%q", p)
		if strings.HasPrefix(p, "@") {
			addr = fmt.Sprintf("'\\0' + %q", p[1:])
		}
		res, err := hostileRun(t, fmt.Sprintf("import socket\ndef f():\n    s = socket.socket(socket.AF_UNIX)\n    s.connect(%s)\n    s.sendall(b'pwned')\n", addr))
		requireOSError(t, res, err)
	}
	select {
	case p := <-accepted:
		t.Fatalf("the listener at %s accepted a connection from the sandbox", p)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestHostileKernelMemory: the one writable place is the 64 MiB scratch
// tmpfs: /dev is read-only, and the kernel's other memory that escapes the
// address-space limit (memfd files, System V shared memory and message
// queues) or outlives the program (key stores), and new namespaces, are
// refused.
func TestHostileKernelMemory(t *testing.T) {
	var got map[string]string
	jsonRun(t, `import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
def call(fn, *args):
    r = fn(*args)
    return 'ok' if r >= 0 else os.strerror(ctypes.get_errno())
def dev():
    try:
        with open('/dev/fill', 'wb') as w:
            w.write(b'x' * (100 << 20))
        return 'ok'
    except OSError as e:
        return e.strerror
def f():
    print(json.dumps({
        "dev": dev(),
        "memfd": call(libc.memfd_create, b'x', 0),
        "shmget": call(libc.shmget, 0, 1 << 20, 0o1600),
        "msgget": call(libc.msgget, 0, 0o1600),
        "semget": call(libc.semget, 0, 1, 0o1600),
        "add_key": call(libc.syscall, 248 if os.uname().machine == 'x86_64' else 217, b'user', b'k', b'v', 1, -4),
        "unshare_user": call(libc.unshare, 0x10000000),
        "unshare_mount": call(libc.unshare, 0x00020000),
    }))
`, &got)
	for k, v := range got {
		assert.NotEqual(t, "ok", v, k)
	}
	assert.Equal(t, "Function not implemented", got["memfd"])
	assert.Equal(t, "Operation not permitted", got["unshare_user"])
}

// TestConfinementAsUnprivilegedUser: run as root (CI), the confinement
// tests run again as an unprivileged user (SandboxUID), whose sandbox is a
// user namespace of its own; Debian's /usr/bin/python3 is the interpreter
// (root's may lie under /root, out of that user's reach).
func TestConfinementAsUnprivilegedUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: these tests already ran as an unprivileged user")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 for the unprivileged user")
	}
	// A folder of the user's own outside /tmp (victim.Dir avoids /tmp),
	// holding a copy of this test binary it can run.
	dir, err := os.MkdirTemp("/var/tmp", "ndbg-unpriv-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chown(dir, SandboxUID, SandboxGID))
	bin := filepath.Join(dir, "trace.test")
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^(TestSandbox|TestHostile|TestContextCancelKillsGroup)", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: SandboxUID, Gid: SandboxGID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "as uid %d:\n%s", SandboxUID, out)
	assert.Contains(t, string(out), "--- PASS: TestHostileKernelSettings")
	assert.NotContains(t, string(out), "--- SKIP")
}

// TestProgramSeesItselfAsAScript: the program's sys.argv and __file__ are
// those of a script run with no arguments, under the name its code
// objects carry ("<program>"), not the tracer's own arguments (which
// argparse would read); in a whole script's trace the module's locals
// are the program's names, without the globals the tracer sets.
func TestProgramSeesItselfAsAScript(t *testing.T) {
	var got struct {
		Argv []string
		File string
	}
	jsonRun(t, "import json, sys\n\ndef f():\n    print(json.dumps({'Argv': sys.argv, 'File': __file__}))\n", &got)
	require.Equal(t, []string{"<program>"}, got.Argv)
	require.Equal(t, "<program>", got.File)

	res, err := runChecked(t, "import argparse\nargs = argparse.ArgumentParser().parse_args()\nx = 1\n", "", "", testLimits(t))
	require.NoError(t, err)
	require.Nil(t, res.Exception, "%+v", res.Exception)
	last := res.Events[len(res.Events)-1]
	var names []string
	for _, l := range last.Locals {
		names = append(names, l.Name)
	}
	require.Equal(t, []string{"argparse", "args", "x"}, names)
}

// TestHostileProcessAccess: the program cannot reach into another process,
// the sandbox's init above all (run by a user other than root, it has the
// program's uid: traced, it could drop its death-with-parent signal and
// outlive ndbg, or allocate past the memory limit): ptrace and
// process_vm_readv/writev are refused (EPERM) by the seccomp filter; and
// the descriptors it may hold are bounded (each socket's buffers are kernel
// memory outside its memory limit).
func TestHostileProcessAccess(t *testing.T) {
	var got struct{ Ptrace, VMRead, VMWrite, Files int }
	jsonRun(t, `import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def err(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return ctypes.get_errno() if r == -1 else 0
KEEP = []  # a global, not a local the tracer writes at every line
def f():
    ptrace, vmr, vmw = {"x86_64": (101, 310, 311), "aarch64": (117, 270, 271)}[os.uname().machine]
    try:
        for _ in range(5000):
            KEEP.append(socket.socketpair())
    except OSError:
        pass
    print(json.dumps({"Ptrace": err(ptrace, 16, 1, 0, 0), "VMRead": err(vmr, 1, 0, 0, 0, 0, 0),
                      "VMWrite": err(vmw, 1, 0, 0, 0, 0, 0), "Files": 2 * len(KEEP)}))
`, &got)
	eperm := int(syscall.EPERM)
	assert.Equal(t, eperm, got.Ptrace, "ptrace(PTRACE_ATTACH, 1)")
	assert.Equal(t, eperm, got.VMRead, "process_vm_readv")
	assert.Equal(t, eperm, got.VMWrite, "process_vm_writev")
	assert.LessOrEqual(t, got.Files, 1024, "sockets held")
	assert.Greater(t, got.Files, 512, "sockets held")
}
