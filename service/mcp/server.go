// Package mcp is `ndbg mcp`: the debugger as a Model Context Protocol
// server for coding agents, over stdio or streamable HTTP, on the official
// Go SDK (github.com/modelcontextprotocol/go-sdk). Its tools (debug_start,
// debug_step, debug_breakpoints, debug_evaluate, debug_set, debug_fork,
// debug_history, debug_end, predict) translate MCP tool calls into calls of
// the shared session manager (package sessions) and the API's states into
// structured JSON an agent reads without ndbg's DSL: event, line and its
// text, locals as name/repr pairs, return value, exception, stack, and for
// a prediction the model's confidence per field and the uncertain mark.
// Every tool has a JSON schema for its arguments and one for its result;
// a bad argument, a refusal or a failure is a tool error (isError, its
// text saying what and why), never a crashed server.
//
// Sessions of every client share the manager's model and its batched
// decode. Over HTTP the server serves only its owner, as `ndbg serve` does
// (package httpd: a bearer token from a 0600 file, or a 0600 unix socket
// checked by peer uid); over stdio it serves the agent that started it.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ndbg/ndbg/service/httpd"
	"github.com/ndbg/ndbg/service/sessions"
)

// Name is the server's name in MCP's initialize answer and in messages.
const Name = "ndbg mcp"

// instructions is what the server tells an agent when it connects.
const instructions = `ndbg is a debugger for Python that can predict what a program does instead of running it.
Start a session with debug_start (program text or path, and the call to debug, e.g. f([3, None, 4])), then
step with debug_step (step_into, step_over, step_return, continue, until, breakpoint:N, and backwards:
inv_step_into, inv_step_over, inv_step_return, inv_continue, inv_breakpoint:N), set breakpoints with
debug_breakpoints, evaluate expressions with debug_evaluate, and end it with debug_end.
Backend neural (the model) answers without running the program: its states are guesses, marked
predicted, with the model's confidence per field; backend real runs the program in a sandbox and is exact;
compare shows both. To find a bug: run to the failure, then step back (inv_step_return) to the inputs.
predict answers one action's state in one call.`

// NewServer returns the MCP server of m's sessions; version is ndbg's.
func NewServer(m *sessions.Manager, version string) (*sdk.Server, error) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "ndbg", Title: Name, Version: version},
		&sdk.ServerOptions{Instructions: instructions})
	h := &handlers{m: m}
	if err := h.tools(srv); err != nil {
		return nil, err
	}
	return srv, nil
}

// ServeStdio serves srv over in and out (newline-delimited JSON-RPC, MCP's
// stdio transport) until the client closes in or ctx is done (the first
// SIGTERM or SIGINT). Then it shuts down: new tool calls are refused, the
// calls in flight may finish within grace (or until now is done: a second
// signal) and are stopped after it, each answered; then the connection
// closes and every session ends (m.Shutdown). It returns nil after the
// client left or a clean shutdown.
func ServeStdio(ctx context.Context, srv *sdk.Server, m *sessions.Manager, in io.ReadCloser, out io.WriteCloser, grace time.Duration, now context.Context) error {
	ss, err := srv.Connect(context.WithoutCancel(ctx), &sdk.IOTransport{Reader: in, Writer: out}, nil)
	if err != nil {
		return fmt.Errorf("mcp: connecting over stdio: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended: // the client closed the stream
		m.Close()
		if err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "EOF") {
			return fmt.Errorf("mcp: the stdio connection: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if now != nil {
		defer context.AfterFunc(now, cancel)()
	}
	drained := make(chan error, 1)
	go func() { drained <- m.Shutdown(gctx) }()
	ss.Close() // waits for the calls in flight (which the shutdown ends), then closes
	<-ended
	return <-drained
}

// HTTPHandler returns the streamable HTTP handler of srv (MCP's HTTP
// transport: POST for messages, GET for the server's event stream, DELETE
// to end an MCP session), served only to the owner (auth), MCP sessions
// idle for idle closed.
func HTTPHandler(srv *sdk.Server, auth *httpd.Auth, idle time.Duration) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{SessionTimeout: idle})
	return auth.Wrap(h, nil)
}

// IsStream reports whether r is an MCP client's long-lived event stream
// (GET), which a shutdown does not wait for (httpd.Options.Streams).
func IsStream(r *http.Request) bool { return r.Method == http.MethodGet }

// CloseSessions ends every MCP session of srv (their event streams
// with them): httpd.Options.Close, once the calls in flight are answered.
func CloseSessions(srv *sdk.Server) {
	for ss := range srv.Sessions() {
		ss.Close()
	}
}
