package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ndbg/ndbg/internal/testsupport/victim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDebugEvalSandboxed: p evaluates in the sandbox every program runs in
// (docs/security.md, package pyeval), on the neural backend too: an
// expression that runs a shell, writes or deletes outside the scratch
// space does nothing to the host.
func TestDebugEvalSandboxed(t *testing.T) {
	dir, file := victim.Dir(t)
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--threads", "1"},
		fmt.Sprintf("p __import__('os').system('touch %s/system; rm -f %s')", dir, file),
		fmt.Sprintf("p open(%q, 'w').write('pwned')", file),
		"p __import__('socket').gethostname(), __import__('os').getcwd()",
		"q")
	a := answers(out)
	require.Len(t, a, 5, out)
	assert.NotEqual(t, "0\n"+fromPrediction, a[1], "no shell starts")
	assert.Regexp(t, `^\*\*\* (OSError|FileNotFoundError|PermissionError): `, a[2], "the host folder is out of the sandbox's reach")
	assert.Equal(t, "('ndbg', '/tmp')\n"+fromPrediction, a[3])
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
	assert.NoFileExists(t, filepath.Join(dir, "system"))
}

// TestDebugEvalKernelAndSockets: p cannot open a kernel setting for writing
// or reach a host unix socket (issue 25), on the real backend too.
func TestDebugEvalKernelAndSockets(t *testing.T) {
	dir, _ := victim.Dir(t)
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, os.Chmod(sock, 0o777))
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	before, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	require.NoError(t, err)
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--backend", "real"},
		"p __import__('os').open('/proc/sys/kernel/core_pattern', 1)",
		fmt.Sprintf("p __import__('socket').socket(__import__('socket').AF_UNIX).connect(%q)", sock),
		"q")
	a := answers(out)
	require.Len(t, a, 4, out)
	assert.Regexp(t, `^\*\*\* (OSError|PermissionError|FileNotFoundError): `, a[1])
	assert.Regexp(t, `^\*\*\* (OSError|PermissionError|FileNotFoundError|ConnectionRefusedError): `, a[2])
	after, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	select {
	case <-accepted:
		t.Fatal("the host socket accepted a connection from p")
	case <-time.After(100 * time.Millisecond):
	}
}
