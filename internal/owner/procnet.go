package owner

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// tcpEstablished is TCP_ESTABLISHED in the st column of /proc/net/tcp.
const tcpEstablished = "01"

// FindTCPOwner reads a /proc/net/tcp or /proc/net/tcp6 table (data) and
// returns the uid of the socket whose local address is client and remote
// address is server, the client's end of a connection to server; found is
// false when there is none. Only an established socket that a process
// still holds (inode not 0) counts: a socket its process closed
// (FIN_WAIT, TIME_WAIT) shows uid 0 or no inode, and must not pass as
// root's. IPv4-mapped IPv6 addresses match their IPv4 form. A line that
// cannot be read is an error that says which.
//
// Each line after the header is
//
//	sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
//
// with addresses as ADDR:PORT in hex, ADDR being the kernel's 32-bit words
// in this machine's byte order (1 word for IPv4, 4 for IPv6) and PORT a
// plain number.
func FindTCPOwner(data []byte, client, server netip.AddrPort) (uid int, found bool, err error) {
	client = netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		f := strings.Fields(string(line))
		if i == 0 || len(f) == 0 {
			continue // the header, or the end
		}
		if len(f) < 10 {
			return -1, false, fmt.Errorf("line %d has %d fields, want at least 10", i+1, len(f))
		}
		local, err := parseHexAddrPort(f[1])
		if err != nil {
			return -1, false, fmt.Errorf("line %d: local address: %w", i+1, err)
		}
		remote, err := parseHexAddrPort(f[2])
		if err != nil {
			return -1, false, fmt.Errorf("line %d: remote address: %w", i+1, err)
		}
		if local != client || remote != server {
			continue
		}
		if f[3] != tcpEstablished || f[9] == "0" {
			continue // closed by its process: its uid is no longer its owner's
		}
		u, err := strconv.ParseUint(f[7], 10, 32)
		if err != nil {
			return -1, false, fmt.Errorf("line %d: uid %q: %w", i+1, f[7], err)
		}
		return int(u), true, nil
	}
	return -1, false, nil
}

// parseHexAddrPort reads "0100007F:1F90" (127.0.0.1:8080 on a
// little-endian machine) or its 32-digit IPv6 form.
func parseHexAddrPort(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, fmt.Errorf("%q is not ADDR:PORT in hex", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: port: %w", s, err)
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: address: %w", s, err)
	}
	// Each 32-bit word was printed as a number: turn it back into the
	// bytes it was in memory (network order).
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	var addr netip.Addr
	if len(b) == 4 {
		addr = netip.AddrFrom4([4]byte(b))
	} else {
		addr = netip.AddrFrom16([16]byte(b)).Unmap()
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}
