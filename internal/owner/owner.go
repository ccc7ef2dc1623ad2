// Package owner keeps ndbg's network front ends (`ndbg serve`, `ndbg dap
// --listen`) for the user who started them. Those servers run programs and
// read files with their user's rights, so a request from anyone else would
// act as that user (issue 25: as nobody, through a root-started server, a
// program read /etc/shadow). Two things tell the owner apart:
//
//   - the peer's user: a unix socket's peer credentials (SO_PEERCRED), or,
//     for a loopback TCP connection, the owner of the client's socket in
//     /proc/net/tcp and /proc/net/tcp6 (PeerUID, Only);
//   - a secret only the owner can read: a random token in a file of mode
//     0600 in a directory only the owner can use (Token), which `ndbg
//     serve`'s HTTP clients send as a bearer token.
//
// Listen creates unix sockets of mode 0600 without a window in which
// another user could connect, and refuses non-loopback TCP addresses where
// asked to (DAP has no way to authenticate a remote client).
//
// Linux only, as the rest of ndbg (the sandbox needs it).
package owner

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNotOwner is what Check returns for a peer that runs as another user,
// or whose user cannot be told (a remote client, a client that closed its
// end before it was looked up).
var ErrNotOwner = errors.New("owner: the peer is not the server's user")

// unixPrefix marks a unix socket's path in an address: "unix:/run/x.sock".
const unixPrefix = "unix:"

// IsUnix reports whether addr names a unix socket ("unix:PATH").
func IsUnix(addr string) bool { return strings.HasPrefix(addr, unixPrefix) }

// Listen listens on addr: "unix:PATH", a unix socket created with mode
// 0600 (see ListenUnix), or a TCP "host:port". With loopbackOnly, a TCP
// address that does not resolve to a loopback address (127.0.0.0/8, ::1)
// is refused: ":4711" or "0.0.0.0:4711" listen on every interface, where
// a remote client's user cannot be known.
func Listen(addr string, loopbackOnly bool) (net.Listener, error) {
	if IsUnix(addr) {
		return ListenUnix(strings.TrimPrefix(addr, unixPrefix))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("owner: listening on %s: %w", addr, err)
	}
	if loopbackOnly && !isLoopback(ln.Addr()) {
		ln.Close()
		return nil, fmt.Errorf("owner: %s listens on %s, which is not a loopback address: a remote client's user cannot be known, so it could never be served (use 127.0.0.1:PORT and ssh -L PORT:127.0.0.1:PORT for a remote editor, or unix:PATH)", addr, ln.Addr())
	}
	return ln, nil
}

func isLoopback(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// ListenUnix listens on a unix socket at path, created with mode 0600 and
// owned by the current user, with no moment at which another user could
// connect to it: the socket is bound in a new directory of mode 0700 beside
// path, given mode 0600 there, and then linked to path (a link never
// replaces a file that exists), so the umask, which is the whole process's,
// is never changed. A socket already at path is replaced only when it is
// the current user's and nothing listens on it (a server that was killed);
// anything else there is an error. Closing the listener removes path.
func ListenUnix(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("owner: unix: wants a path, e.g. unix:/run/user/1000/ndbg.sock")
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("owner: unix socket %q: %w", path, err)
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".ndbg")
	if err != nil {
		return nil, fmt.Errorf("owner: unix socket %s: making a private directory beside it: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: bound, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("owner: unix socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // it would unlink the temporary name, not path
	fail := func(what string, err error) (net.Listener, error) {
		ln.Close()
		return nil, fmt.Errorf("owner: unix socket %s: %s: %w", path, what, err)
	}
	if err := os.Chmod(bound, 0o600); err != nil {
		return fail("setting its mode to 0600", err)
	}
	if err := os.Link(bound, path); err != nil {
		return fail("putting it in place", err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		os.Remove(path)
		return fail("reading it back", err)
	}
	return &unixListener{UnixListener: ln, path: path, dev: st.Dev, ino: st.Ino}, nil
}

// removeStale removes a socket of the current user at path that nothing
// listens on; it leaves path alone when nothing is there, and refuses
// anything else.
func removeStale(path string) error {
	var st syscall.Stat_t
	err := syscall.Lstat(path, &st)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("owner: unix socket %s: %w", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFSOCK || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owner: unix socket %s: something else is there already (not a socket of uid %d): remove it or choose another path", path, os.Geteuid())
	}
	c, err := net.Dial("unix", path)
	if err == nil {
		c.Close()
		return fmt.Errorf("owner: unix socket %s: a server listens there already", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("owner: unix socket %s: already there, and cannot tell whether a server listens on it: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("owner: removing the stale unix socket %s: %w", path, err)
	}
	return nil
}

// unixListener removes its socket's path on Close, if the path still
// names the socket it created.
type unixListener struct {
	*net.UnixListener
	path     string
	dev, ino uint64
}

func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	var st syscall.Stat_t
	if syscall.Lstat(l.path, &st) == nil && st.Dev == l.dev && st.Ino == l.ino {
		os.Remove(l.path)
	}
	return err
}

// Check returns nil when the process at the other end of c runs as uid,
// and an error wrapping ErrNotOwner that says who it is, or why that cannot
// be told, otherwise.
func Check(c net.Conn, uid int) error {
	peer, err := PeerUID(c)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotOwner, err)
	}
	if peer != uid {
		return fmt.Errorf("%w: its process runs as uid %d, the server as uid %d", ErrNotOwner, peer, uid)
	}
	return nil
}

// PeerUID returns the user id of the process at the other end of c: a
// unix socket's peer credentials (SO_PEERCRED: the user it connected as),
// or, for TCP, the owner of the client's socket as /proc/net/tcp or
// /proc/net/tcp6 shows it. The client's socket is found there only when
// the client runs on this machine, in this network namespace, and still
// holds its end open (an established connection); otherwise the uid cannot
// be told and PeerUID returns an error.
func PeerUID(c net.Conn) (int, error) {
	switch c := c.(type) {
	case *verified:
		return c.uid, nil
	case *net.UnixConn:
		raw, err := c.SyscallConn()
		if err != nil {
			return -1, fmt.Errorf("owner: the unix connection's descriptor: %w", err)
		}
		var cred *syscall.Ucred
		var cerr error
		if err := raw.Control(func(fd uintptr) {
			cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		}); err != nil {
			return -1, fmt.Errorf("owner: the unix connection's descriptor: %w", err)
		}
		if cerr != nil {
			return -1, fmt.Errorf("owner: the unix connection's peer credentials (SO_PEERCRED): %w", cerr)
		}
		return int(cred.Uid), nil
	case *net.TCPConn:
		server, err1 := netip.ParseAddrPort(c.LocalAddr().String())
		client, err2 := netip.ParseAddrPort(c.RemoteAddr().String())
		if err := errors.Join(err1, err2); err != nil {
			return -1, fmt.Errorf("owner: the TCP connection's addresses: %w", err)
		}
		return tcpOwner("/proc/net", client, server)
	}
	return -1, fmt.Errorf("owner: cannot tell who is at the other end of a %T connection", c)
}

// tcpOwner finds, in procNet's tcp and tcp6 tables, the established socket
// whose local address is client and remote address is server (the
// client's end of the connection) and returns its owner's uid.
func tcpOwner(procNet string, client, server netip.AddrPort) (int, error) {
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join(procNet, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			return -1, fmt.Errorf("owner: reading %s: %w", filepath.Join(procNet, name), err)
		}
		uid, found, err := FindTCPOwner(data, client, server)
		if err != nil {
			return -1, fmt.Errorf("owner: %s: %w", filepath.Join(procNet, name), err)
		}
		if found {
			return uid, nil
		}
	}
	return -1, fmt.Errorf("owner: no established socket from %s to %s in %s/tcp or tcp6: the client is not on this machine (or not in this network namespace), or closed its end", client, server, procNet)
}

// Only returns a listener that accepts from ln only connections whose peer
// runs as the current effective user (Check); any other is closed at once,
// before a byte of it is read, and reported to logf (when not nil). A
// connection it returns is Verified.
func Only(ln net.Listener, logf func(format string, args ...any)) net.Listener {
	return &onlyListener{Listener: ln, uid: os.Geteuid(), logf: logf}
}

type onlyListener struct {
	net.Listener
	uid  int
	logf func(string, ...any)
}

func (l *onlyListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := Check(c, l.uid); err != nil {
			if l.logf != nil {
				l.logf("refused a connection from %s: %v", peerName(c), err)
			}
			c.Close()
			continue
		}
		return &verified{Conn: c, uid: l.uid}, nil
	}
}

func peerName(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		return a.String()
	}
	return "a unix socket peer"
}

// verified is a connection Only accepted.
type verified struct {
	net.Conn
	uid int
}

// Verified reports whether c was accepted by Only: its peer runs as the
// server's user.
func Verified(c net.Conn) bool {
	_, ok := c.(*verified)
	return ok
}
