package dap

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	godap "github.com/google/go-dap"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/owner"
	"github.com/ndbg/ndbg/internal/testsupport/otheruser"
)

// marker stands for a secret in a file: it must never reach a client that
// may not read the file.
const marker = "SECRET_MARKER_7f3a"

// TestLoadErrorsQuoteNothing: a program that fails to load (not valid
// Python, not UTF-8, NUL bytes) or a model whose file is not JSON is
// refused with an error that says what and where, and nothing the client
// receives quotes the file. CPython's own messages would: "duplicate
// argument 'SECRET...'", "invalid character '€'".
func TestLoadErrorsQuoteNothing(t *testing.T) {
	dir := t.TempDir()
	files := map[string]struct {
		text string
		line string // where the error must say it is
	}{
		"duplicate":    {"def f(" + marker + ", " + marker + "):\n    pass\n", "line 1"},
		"character":    {"x = 1\n" + marker + " = '€' €\n", "line 2"},
		"unterminated": {"def f():\n    return '" + marker + "\n", "line 2"},
		"print":        {"print \"" + marker + "\"\n", "line 1"},
		"not utf-8":    {"# coding: latin-1\n" + marker + " = '\xe9'\n", "line 2, column 23"},
		"nul":          {marker + " = 1\x00\n", "line 1, column 23"},
	}
	for name, f := range files {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".py")
		require.NoError(t, os.WriteFile(path, []byte(f.text), 0o600))
		for _, args := range []map[string]any{
			{"backend": "real"},                // the whole script
			{"backend": "real", "call": "f()"}, // a call
			{"call": "f()", "noExec": true},    // the model's first state from the text
		} {
			args["program"] = path
			c := newClient(t)
			c.do("initialize", map[string]any{"adapterID": "ndbg"})
			r, events := c.response(c.send("launch", args), false)
			msg := r.GetResponse().Message
			require.NotContains(t, msg, marker, "%s %v", name, args)
			require.NotContains(t, msg, "€", "%s %v", name, args)
			for _, e := range events {
				require.NotContains(t, fmt.Sprint(e), marker)
			}
			if !strings.Contains(msg, "no top-level def f(") { // the call's check comes first where the text has no f
				require.Contains(t, msg, path, "%s %v: %s", name, args, msg)
				require.Contains(t, msg, f.line, "%s %v: %s", name, args, msg)
			}
		}
	}

	model := filepath.Join(dir, "model")
	require.NoError(t, os.Mkdir(model, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(model, "config.json"), []byte(marker+" {"), 0o600))
	prog := filepath.Join(dir, "ok.py")
	require.NoError(t, os.WriteFile(prog, []byte("def f():\n    return 1\n"), 0o600))
	c := newClient(t)
	c.do("initialize", nil)
	msg := c.refuse("launch", map[string]any{"program": prog, "call": "f()", "model": model})
	require.Contains(t, msg, "config.json")
	require.Contains(t, msg, "not JSON at byte 1")
	require.NotContains(t, msg, "'S'", "the offending character is not quoted")
}

// TestReadProgram: a path to something that is no Python file (a FIFO,
// whose open would wait for a writer; a device that never ends; a
// directory; a huge file) is refused at once, saying what it is.
func TestReadProgram(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big.py")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(maxProgramFile+1))
	f.Close()
	for path, want := range map[string]string{fifo: "a FIFO", "/dev/zero": "a device", dir: "a directory", big: "larger than"} {
		_, err := readProgram(path)
		require.ErrorContains(t, err, want, path)
	}
	ok := filepath.Join(dir, "ok.py")
	require.NoError(t, os.WriteFile(ok, []byte("x = 'é'\n"), 0o600))
	src, err := readProgram(ok)
	require.NoError(t, err)
	require.Equal(t, "x = 'é'\n", src)
}

// dapAttack is a DAP client, run as another user: it connects (argv: a
// unix socket's path or host:port), sends initialize, a launch of the
// program named in argv, configurationDone and disconnect, and prints all
// it received until the server closed (or the error that stopped it).
const dapAttack = `
import json, socket, sys
addr, program = sys.argv[1], sys.argv[2]
def frame(seq, cmd, args=None):
    m = {"seq": seq, "type": "request", "command": cmd}
    if args is not None: m["arguments"] = args
    b = json.dumps(m).encode()
    return b"Content-Length: %d\r\n\r\n" % len(b) + b
got = b""
try:
    if addr.startswith("/"):
        s = socket.socket(socket.AF_UNIX); s.connect(addr)
    else:
        host, port = addr.rsplit(":", 1); s = socket.create_connection((host, int(port)))
    s.settimeout(60)
    s.sendall(frame(1, "initialize", {"adapterID": "x"}) +
              frame(2, "launch", {"program": program, "backend": "real", "stopOnEntry": True}) +
              frame(3, "configurationDone") + frame(4, "disconnect"))
    while True:
        b = s.recv(65536)
        if not b: break
        got += b
    print("GOT", repr(got))
except OSError as e:
    print("GOT", repr(got), "ERROR", type(e).__name__, e)
`

// TestListenOtherUser: through `ndbg dap --listen` (ServeListener) on
// loopback TCP and on a unix socket, a client running as another user
// (uid 65534) is refused before anything is read: it receives nothing,
// and above all not the first line of a file only root can read, named as
// the launch's program, which the same client running as root does get
// (the attack is real; the refusal is what stops it). The server's log
// says so.
func TestListenOtherUser(t *testing.T) {
	py := otheruser.Python(t)
	secret := filepath.Join(t.TempDir(), "secret.py")
	require.NoError(t, os.WriteFile(secret, []byte(marker+" = 1\n"), 0o600))
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = "unix:" + filepath.Join(otheruser.Dir(t), "dap.sock")
			}
			ln, err := Listen(addr)
			require.NoError(t, err)
			target := ln.Addr().String()
			if network == "unix" {
				require.NoError(t, os.Chmod(target, 0o666)) // past the socket's mode: the peer check must hold
			}
			var log lockedLog
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- ServeListener(ctx, ln, Config{Log: &log}) }()
			defer func() {
				cancel()
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(30 * time.Second):
					t.Error("ServeListener did not end with its context")
				}
			}()

			cmd := exec.Command(py, "-c", dapAttack, target, secret)
			otheruser.Set(cmd)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.NotContains(t, string(out), marker, "another user read the root-only file")
			require.NotContains(t, string(out), "Content-Length", "another user got an answer")
			require.Contains(t, log.String(), "refused a connection")
			require.Contains(t, log.String(), "uid 65534")

			mine := exec.Command(py, "-c", dapAttack, target, secret) // the same client, as the server's user
			out, err = mine.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), marker, "the owner's client is served (so the refusal above is the check's)")
		})
	}
}

// TestListenRefusesNonLoopback: DAP cannot tell a remote client's user,
// so it does not listen where one could connect.
func TestListenRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		ln, err := Listen(addr)
		if err == nil {
			ln.Close()
		}
		require.ErrorContains(t, err, "not a loopback address", addr)
	}
	ln, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	ln.Close()
}

// TestListenOwner: the server's own user is served over TCP and a unix
// socket (mode 0600).
func TestListenOwner(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "unix:" + filepath.Join(t.TempDir(), "dap.sock")} {
		ln, err := Listen(addr)
		require.NoError(t, err)
		network := "tcp"
		if owner.IsUnix(addr) {
			network = "unix"
			var st syscall.Stat_t
			require.NoError(t, syscall.Lstat(ln.Addr().String(), &st))
			require.Equal(t, uint32(0o600), st.Mode&0o7777)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ServeListener(ctx, ln, Config{}) }()
		c, err := net.Dial(network, ln.Addr().String())
		require.NoError(t, err)
		body := `{"seq":1,"type":"request","command":"initialize"}`
		_, err = fmt.Fprintf(c, "Content-Length: %d\r\n\r\n%s", len(body), body)
		require.NoError(t, err)
		m, err := godap.ReadProtocolMessage(bufio.NewReader(c))
		require.NoError(t, err)
		require.IsType(t, &godap.InitializeResponse{}, m)
		c.Close()
		cancel()
		require.NoError(t, <-done)
	}
}

// lockedLog is a server log the test reads while the server writes it.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
