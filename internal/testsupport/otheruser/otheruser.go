// Package otheruser lets a test act as another local user: it runs a
// client process as uid and gid 65534 ("nobody"), so that tests of ndbg's
// network front ends can check that a user other than the server's is
// refused. Only root can start a process as another user; elsewhere the
// test skips, saying so. CI runs as root.
package otheruser

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// UID is the other user's uid and gid: nobody's.
const UID = 65534

// pythons are interpreters another user can run (pyenv's, under a private
// home, usually cannot be).
var pythons = []string{"/usr/bin/python3", "/usr/local/bin/python3"}

// Python returns a python3 that the other user can run. It skips t when the
// test is not root (only root can start another user's process) or no such
// interpreter exists.
func Python(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: only root can run a client as another user (uid 65534); CI runs as root")
	}
	for _, p := range pythons {
		cmd := exec.Command(p, "-c", "import os, socket; assert os.getuid() == 65534")
		Set(cmd)
		if cmd.Run() == nil {
			return p
		}
	}
	t.Skipf("no python3 that uid %d can run (tried %v)", UID, pythons)
	return ""
}

// Set makes cmd run as the other user, in "/", with an environment of
// PATH alone.
func Set(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: UID, Gid: UID}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
}

// Dir makes a directory the other user can reach (mode 0755, under the
// system's temporary directory, whose own mode lets everyone in; a test's
// t.TempDir() lies under a directory of mode 0700), removed when the test
// ends.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ndbg-otheruser-")
	if err != nil {
		t.Fatalf("otheruser: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("otheruser: %v", err)
	}
	return dir
}
