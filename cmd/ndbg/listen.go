package main

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/ndbg/ndbg/internal/owner"
)

// listenerAndToken is where an HTTP front end (ndbg serve, ndbg mcp
// --listen) listens, and the token its TCP clients must send ("" on a unix
// socket, which serves only the owner's processes).
type listenerAndToken struct {
	ln    net.Listener
	where string // http://HOST:PORT or unix:PATH, as the listening line says
	token string
	tf    *owner.TokenFile // nil on a unix socket
}

func (l *listenerAndToken) close() {
	l.ln.Close()
	if l.tf != nil {
		l.tf.Remove()
	}
}

// ownerListen listens on addr (owner.Listen) for the command cmd ("serve",
// "mcp"): on TCP with a token in the file tokenPath names, or a fresh one
// in the default directory named after cmd and the address; access says
// how a client gets in. A non-loopback TCP address draws a warning on
// stderr: the token and the programs travel unencrypted.
func ownerListen(cmd, addr, tokenPath string, stderr io.Writer) (*listenerAndToken, string, error) {
	ln, err := owner.Listen(addr, false)
	if err != nil {
		return nil, "", fmt.Errorf("listening: %w", err)
	}
	if owner.IsUnix(addr) {
		return &listenerAndToken{ln: ln, where: "unix:" + ln.Addr().String()},
			fmt.Sprintf("only processes of uid %d can connect (no token needed)", os.Geteuid()), nil
	}
	tf, err := tokenFileFor(cmd, tokenPath, ln.Addr())
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err != nil || !ap.Addr().Unmap().IsLoopback() {
		fmt.Fprintf(stderr, "ndbg %s: warning: %s is not a loopback address: the token and the programs travel unencrypted (reach a remote server through ssh -L instead)\n", cmd, ln.Addr())
	}
	return &listenerAndToken{ln: ln, where: "http://" + ln.Addr().String(), token: tf.Token, tf: tf},
		fmt.Sprintf("token in %s (send it as Authorization: Bearer <token>)", tf.Path), nil
}

// tokenFileFor is the token of a server listening on TCP at addr: the file
// the user named (owner.OpenTokenFile), or a fresh token in the default
// directory, in a file named after the command and the address
// (owner.NewTokenFile).
func tokenFileFor(cmd, path string, addr net.Addr) (*owner.TokenFile, error) {
	if path != "" {
		return owner.OpenTokenFile(path)
	}
	dir, err := owner.DefaultDir()
	if err != nil {
		return nil, err
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return nil, fmt.Errorf("naming the token file after the address %s: %w", addr, err)
	}
	name := fmt.Sprintf("%s-%s-%d", cmd, strings.ReplaceAll(ap.Addr().String(), ":", "_"), ap.Port())
	return owner.NewTokenFile(dir, name+".token")
}

// mcpListen is ownerListen for ndbg mcp --listen.
func mcpListen(addr, tokenPath string, stderr io.Writer) (*listenerAndToken, string, error) {
	return ownerListen("mcp", addr, tokenPath, stderr)
}
