package owner

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/otheruser"
)

// accept accepts one connection of ln in the background.
func accept(t *testing.T, ln net.Listener) <-chan net.Conn {
	t.Helper()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

// proc is a started client process.
type proc struct {
	out  bytes.Buffer
	done chan error
}

// start starts cmd, its stdout and stderr captured.
func start(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	require.NoError(t, cmd.Start())
	go func() { p.done <- cmd.Wait() }()
	return p
}

// acceptFrom is the connection got delivers, or a failure when the client
// p ends before (it could not connect).
func acceptFrom(t *testing.T, got <-chan net.Conn, p *proc) net.Conn {
	t.Helper()
	select {
	case c := <-got:
		require.NotNil(t, c)
		return c
	case err := <-p.done:
		t.Fatalf("the client ended before it connected: %v\n%s", err, p.out.String())
	}
	return nil
}

// connectAs runs python3 as the other user: it connects to addr (a TCP
// host:port, or a unix socket's path), sends hello, and, unless
// closeFirst, waits for the server to close before it closes itself
// (printing what it received).
func connectAs(t *testing.T, network, addr string, closeFirst bool) *exec.Cmd {
	t.Helper()
	py := otheruser.Python(t)
	const script = `
import socket, sys
net, addr, close_first = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if net == "unix":
    s = socket.socket(socket.AF_UNIX); s.connect(addr)
else:
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host.strip("[]"), int(port)))
got = b""
try:
    s.sendall(b"hello")
    while not close_first:
        b = s.recv(4096)
        if not b: break
        got += b
except (BrokenPipeError, ConnectionResetError):
    pass  # the server closed first
if not close_first:
    print(repr(got))
s.close()
`
	flag := "0"
	if closeFirst {
		flag = "1"
	}
	cmd := exec.Command(py, "-c", script, network, addr, flag)
	otheruser.Set(cmd)
	return cmd
}

// TestPeerUIDTCP: the uid of a loopback TCP peer is its process's, for
// IPv4, IPv6 and IPv4 through a dual-stack listener, read from the
// kernel's tables: the test's own (in-process) and another user's.
func TestPeerUIDTCP(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "[::]:0"} {
		t.Run(addr, func(t *testing.T) {
			ln, err := net.Listen("tcp", addr)
			if err != nil && addr != "127.0.0.1:0" {
				t.Skipf("no IPv6 here: %v", err)
			}
			require.NoError(t, err)
			defer ln.Close()
			got := accept(t, ln)
			dial := ln.Addr().String()
			if addr == "[::]:0" {
				dial = fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*net.TCPAddr).Port) // IPv4 through the dual-stack socket
			}
			cl, err := net.Dial("tcp", dial)
			require.NoError(t, err)
			defer cl.Close()
			c := <-got
			require.NotNil(t, c)
			defer c.Close()
			uid, err := PeerUID(c)
			require.NoError(t, err)
			require.Equal(t, os.Geteuid(), uid)
			require.NoError(t, Check(c, os.Geteuid()))
			require.ErrorIs(t, Check(c, os.Geteuid()+1), ErrNotOwner)
		})
	}
}

// TestPeerUIDOtherUser: a client running as uid 65534 is seen as 65534
// over TCP and over a unix socket.
func TestPeerUIDOtherUser(t *testing.T) {
	otheruser.Python(t) // skips unless root
	t.Run("tcp", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		got := accept(t, ln)
		p := start(t, connectAs(t, "tcp", ln.Addr().String(), false))
		c := acceptFrom(t, got, p)
		uid, err := PeerUID(c)
		c.Close()
		require.NoError(t, <-p.done, p.out.String())
		require.NoError(t, err)
		require.Equal(t, otheruser.UID, uid)
	})
	t.Run("unix", func(t *testing.T) {
		path := filepath.Join(otheruser.Dir(t), "s")
		ln, err := net.Listen("unix", path)
		require.NoError(t, err)
		defer ln.Close()
		require.NoError(t, os.Chmod(path, 0o666)) // let it connect: the check is the peer's uid, not the mode
		got := accept(t, ln)
		p := start(t, connectAs(t, "unix", path, false))
		c := acceptFrom(t, got, p)
		uid, err := PeerUID(c)
		c.Close()
		require.NoError(t, <-p.done, p.out.String())
		require.NoError(t, err)
		require.Equal(t, otheruser.UID, uid)
	})
}

// TestClosedClientIsNotRoot: another user connects, sends, and closes
// before the server looks. The kernel then shows the client's end in
// FIN_WAIT (with no process holding it) and soon as a TIME_WAIT entry,
// whose uid column is 0: neither may count, or a root server would take
// the bytes already sent as root's.
func TestClosedClientIsNotRoot(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cmd := connectAs(t, "tcp", ln.Addr().String(), true)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	c, err := ln.Accept() // queued: the handshake completed before the client closed
	require.NoError(t, err)
	defer c.Close()
	uid, err := PeerUID(c)
	require.Error(t, err, "a closed client's socket was taken as uid %d's", uid)
	require.ErrorIs(t, Check(c, 0), ErrNotOwner)
}

// TestOnly: the listener hands over the owner's connections (Verified)
// and closes another user's before reading it, saying so.
func TestOnly(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(otheruser.Dir(t), "s")
			}
			raw, err := net.Listen(network, addr)
			require.NoError(t, err)
			if network == "unix" {
				require.NoError(t, os.Chmod(addr, 0o666))
			}
			var mu sync.Mutex
			var log bytes.Buffer
			ln := Only(raw, func(format string, args ...any) {
				mu.Lock()
				fmt.Fprintf(&log, format+"\n", args...)
				mu.Unlock()
			})
			defer ln.Close()
			got := accept(t, ln)
			if os.Geteuid() == 0 {
				// Another user first: refused, the connection closed unread.
				cmd := connectAs(t, network, raw.Addr().String(), false)
				out, err := cmd.Output()
				require.NoError(t, err)
				require.Equal(t, "b''\n", string(out), "the other user received something")
				mu.Lock()
				require.Contains(t, log.String(), "refused a connection")
				require.Contains(t, log.String(), "uid 65534")
				mu.Unlock()
			}
			mine, err := net.Dial(network, raw.Addr().String())
			require.NoError(t, err)
			defer mine.Close()
			c := <-got
			require.NotNil(t, c)
			defer c.Close()
			require.True(t, Verified(c))
			uid, err := PeerUID(c)
			require.NoError(t, err)
			require.Equal(t, os.Geteuid(), uid)
			_, err = mine.Write([]byte("x"))
			require.NoError(t, err)
			b := make([]byte, 1)
			_, err = io.ReadFull(c, b)
			require.NoError(t, err)
			require.Equal(t, "x", string(b), "the owner's connection is the one handed over")
		})
	}
}

// TestListenLoopbackOnly: with loopbackOnly, addresses on every interface
// or a non-loopback one are refused; loopback ones, named or not, listen.
func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		ln, err := Listen(addr, true)
		if err == nil {
			ln.Close()
		}
		require.Error(t, err, addr)
		require.Contains(t, err.Error(), "not a loopback address", addr)
		if ln, err := Listen(addr, false); err == nil {
			ln.Close()
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		ln, err := Listen(addr, true)
		require.NoError(t, err, addr)
		ln.Close()
	}
}

// TestListenUnix: the socket is 0600 and the user's from the start, serves
// the owner, replaces a stale socket, refuses a live one or another file,
// and is removed on Close.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ndbg.sock")
	ln, err := Listen("unix:"+path, true)
	require.NoError(t, err)
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st))
	require.Equal(t, uint32(syscall.S_IFSOCK), st.Mode&syscall.S_IFMT)
	require.Equal(t, uint32(0o600), st.Mode&0o7777, "mode %04o", st.Mode&0o7777)
	require.Equal(t, os.Geteuid(), int(st.Uid))
	require.Equal(t, path, ln.Addr().String())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the private directory it was bound in is gone")

	got := accept(t, ln)
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	s := <-got
	require.NotNil(t, s)
	uid, err := PeerUID(s)
	require.NoError(t, err)
	require.Equal(t, os.Geteuid(), uid)
	c.Close()
	s.Close()

	_, err = ListenUnix(path)
	require.ErrorContains(t, err, "a server listens there already")
	require.NoError(t, ln.Close())
	_, err = os.Lstat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "Close removes the socket")

	// A stale socket (its server killed: it stays, unlinked on no Close).
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	stale.SetUnlinkOnClose(false)
	stale.Close()
	ln, err = ListenUnix(path)
	require.NoError(t, err, "a stale socket of the user's is replaced")
	ln.Close()

	// A file that is no socket is left alone.
	require.NoError(t, os.WriteFile(path, []byte("data"), 0o600))
	_, err = ListenUnix(path)
	require.ErrorContains(t, err, "something else is there")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "data", string(data))

	// Relative paths are the working directory's.
	t.Chdir(dir)
	ln, err = Listen("unix:rel.sock", true)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "rel.sock"), ln.Addr().String())
	ln.Close()
	_, err = Listen("unix:", true)
	require.Error(t, err)
}

// TestListenUnixOtherUser: another user cannot connect to the socket at
// all (mode 0600), even in a directory open to it.
func TestListenUnixOtherUser(t *testing.T) {
	otheruser.Python(t)
	path := filepath.Join(otheruser.Dir(t), "ndbg.sock")
	ln, err := ListenUnix(path)
	require.NoError(t, err)
	defer ln.Close()
	cmd := connectAs(t, "unix", path, false)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "PermissionError")
}

// FuzzFindTCPOwner: any table is read without a panic, and a found uid
// is the uid column of an established line.
func FuzzFindTCPOwner(f *testing.F) {
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	f.Add([]byte(head + "   0: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4 30 10 -1\n"))
	f.Add([]byte(head + "   0: 0100007F:1F90 0100007F:D431 06 00000000:00000000 03:00000E4E 00000000     0        0 0 3 0\n"))
	f.Add([]byte(head + "   0: 00000000000000000000000001000000:1F90 0000000000000000FFFF00000100007F:D431 01 0:0 0:0 0 7 0 12\n"))
	f.Add([]byte("garbage"))
	client := netip.MustParseAddrPort("127.0.0.1:8080")
	server := netip.MustParseAddrPort("127.0.0.1:54321")
	f.Fuzz(func(t *testing.T, data []byte) {
		uid, found, err := FindTCPOwner(data, client, server)
		if found && (err != nil || uid < 0) {
			t.Fatalf("found uid %d with error %v", uid, err)
		}
		if found && !strings.Contains(string(data), " 01 ") {
			t.Fatalf("found uid %d without an established line", uid)
		}
	})
}

// hexAddr writes ap as /proc/net/tcp does on this machine.
func hexAddr(ap netip.AddrPort, six bool) string {
	var b []byte
	if six {
		a := ap.Addr().As16()
		b = a[:]
	} else {
		a := ap.Addr().As4()
		b = a[:]
	}
	var s strings.Builder
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&s, "%08X", binary.NativeEndian.Uint32(b[i:]))
	}
	return fmt.Sprintf("%s:%04X", s.String(), ap.Port())
}

// TestFindTCPOwner reads tables written as the kernel writes them: the
// client's established end gives its uid; the server's end, closed ends
// (FIN_WAIT2, TIME_WAIT: uid 0) and ends without a process (inode 0) do
// not; IPv4-mapped addresses in tcp6 match their IPv4 form.
func TestFindTCPOwner(t *testing.T) {
	client := netip.MustParseAddrPort("127.0.0.1:40000")
	server := netip.MustParseAddrPort("127.0.0.1:4711")
	mapped := func(ap netip.AddrPort) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom16(ap.Addr().As16()), ap.Port())
	}
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	line := func(local, remote netip.AddrPort, six bool, st, uid, inode string) string {
		return fmt.Sprintf("   0: %s %s %s 00000000:00000000 00:00000000 00000000 %5s        0 %s 1 0000000000000000 20 4 30 10 -1\n",
			hexAddr(local, six), hexAddr(remote, six), st, uid, inode)
	}
	for _, tc := range []struct {
		name  string
		table string
		uid   int
		found bool
	}{
		{"established", line(server, client, false, "01", "0", "11") + line(client, server, false, "01", "1000", "12"), 1000, true},
		{"the server's end only", line(server, client, false, "01", "0", "11"), -1, false},
		{"fin_wait2", line(client, server, false, "05", "0", "0"), -1, false},
		{"time_wait", line(client, server, false, "06", "0", "0"), -1, false},
		{"no process", line(client, server, false, "01", "0", "0"), -1, false},
		{"mapped", line(mapped(client), mapped(server), true, "01", "65534", "99"), 65534, true},
		{"other port", line(netip.AddrPortFrom(client.Addr(), 40001), server, false, "01", "7", "5"), -1, false},
	} {
		uid, found, err := FindTCPOwner([]byte(head+tc.table), client, server)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.found, found, tc.name)
		require.Equal(t, tc.uid, uid, tc.name)
	}
	_, _, err := FindTCPOwner([]byte(head+"   0: 0100007F 1 2\n"), client, server)
	require.ErrorContains(t, err, "line 2")
	_, _, err = FindTCPOwner([]byte(head+line(client, server, false, "01", "x", "3")), client, server)
	require.ErrorContains(t, err, "uid")
}
