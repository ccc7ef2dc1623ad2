package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	godap "github.com/google/go-dap"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/service/dap"
)

// frame is one DAP request on the wire.
func frame(seq int, command string) string {
	body := fmt.Sprintf(`{"seq":%d,"type":"request","command":%q}`, seq, command)
	return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
}

// TestDapStdio: `ndbg dap` answers on stdin/stdout and ends at disconnect.
func TestDapStdio(t *testing.T) {
	var out, errb bytes.Buffer
	in := strings.NewReader(frame(1, "initialize") + frame(2, "disconnect") + frame(3, "threads"))
	require.NoError(t, dapServe(context.Background(), nil, in, &out, &errb))
	r := bufio.NewReader(&out)
	init, err := godap.ReadProtocolMessage(r)
	require.NoError(t, err)
	require.True(t, init.(*godap.InitializeResponse).Body.SupportsStepBack)
	require.True(t, init.(*godap.InitializeResponse).Body.SupportsConditionalBreakpoints)
	disc, err := godap.ReadProtocolMessage(r)
	require.NoError(t, err)
	require.IsType(t, &godap.DisconnectResponse{}, disc)
	_, err = godap.ReadProtocolMessage(r)
	require.ErrorIs(t, err, io.EOF, "nothing is answered after disconnect")

	code := run(context.Background(), []string{"dap", "extra"}, &out, &errb)
	require.Equal(t, 2, code)
}

// TestDapListen: --listen serves each connection, and stops when the
// context ends, closing the connections still open.
func TestDapListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dap.ServeListener(ctx, ln, dap.Config{Log: io.Discard}) }()

	ask := func(c net.Conn, r *bufio.Reader, seq int, command string) godap.Message {
		t.Helper()
		_, err := io.WriteString(c, frame(seq, command))
		require.NoError(t, err)
		m, err := godap.ReadProtocolMessage(r)
		require.NoError(t, err)
		return m
	}
	a, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	b, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	ra, rb := bufio.NewReader(a), bufio.NewReader(b)
	require.IsType(t, &godap.InitializeResponse{}, ask(a, ra, 1, "initialize"))
	require.IsType(t, &godap.InitializeResponse{}, ask(b, rb, 1, "initialize"), "each connection is its own session")
	require.IsType(t, &godap.DisconnectResponse{}, ask(a, ra, 2, "disconnect"))
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeListener did not end with its context")
	}
	_, err = godap.ReadProtocolMessage(rb)
	require.Error(t, err, "an open connection is closed at the end")
}

// TestDapListenRefusesNonLoopback: `ndbg dap --listen` on every interface
// is refused, saying why (a remote client's user cannot be known).
func TestDapListenRefusesNonLoopback(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"dap", "--listen", "0.0.0.0:0"}, &out, &errb))
	require.Contains(t, errb.String(), "not a loopback address")
	require.Contains(t, errb.String(), "ssh -L")
}

// TestDapListenLine: the listening line names the port actually bound
// (an editor's launcher, and testclient/run.js, read it from stderr) and
// a unix socket as unix:PATH.
func TestDapListenLine(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "unix:" + t.TempDir() + "/dap.sock"} {
		var errb syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- dapServe(ctx, []string{"--listen", addr}, strings.NewReader(""), io.Discard, &errb) }()
		want := regexp.MustCompile(`listening on 127\.0\.0\.1:[1-9]\d* \(only uid \d+ is served\)`)
		if strings.HasPrefix(addr, "unix:") {
			want = regexp.MustCompile(regexp.QuoteMeta("listening on "+addr) + ` \(only uid \d+ is served\)`)
		}
		for i := 0; !want.MatchString(errb.String()); i++ {
			require.Less(t, i, 1000, "no listening line: %q", errb.String())
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		require.NoError(t, <-done)
	}
}
