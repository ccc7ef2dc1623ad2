// Package httpd is what the HTTP front ends (`ndbg serve`, `ndbg mcp
// --listen`) share around their handlers: the owner-only access rule (a
// bearer token, or a unix socket whose peer is the server's uid: package
// owner) and the server's lifecycle, whose shutdown lets the requests in
// flight finish within a grace period, answers every new request 503
// meanwhile, stops the ones still running at the end of the grace (or at
// once, on a second signal) so that their clients get an answer rather
// than a dropped connection, and only then closes.
package httpd

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ndbg/ndbg/internal/owner"
)

// Auth decides whether a request is the owner's: it comes over a
// connection Serve accepted from a process of the server's own uid (a unix
// socket: owner.Verified), or it carries the token (Authorization: Bearer
// TOKEN).
type Auth struct {
	name  string            // the server, as its messages name it ("ndbg serve")
	token string            // "" : unix-socket connections only
	sum   [sha256.Size]byte // SHA-256 of token, compared in constant time
}

// NewAuth returns the rule for a server named name (for its messages)
// with token, at least owner.MinTokenLen characters; an empty token serves
// only connections Serve accepted on a unix socket from the server's uid.
func NewAuth(name, token string) (*Auth, error) {
	if token != "" && len(token) < owner.MinTokenLen {
		return nil, fmt.Errorf("%s: the token has %d characters, fewer than %d", name, len(token), owner.MinTokenLen)
	}
	a := &Auth{name: name, token: token}
	if token != "" {
		a.sum = sha256.Sum256([]byte(token))
	}
	return a, nil
}

// ownerConn marks, in a request's context, a connection Serve accepted
// from a process of the server's own uid (owner.Verified).
type ownerConn struct{}

// Why returns "" when r may be served, else why not, as its client should
// read it.
func (a *Auth) Why(r *http.Request) string {
	if r.Context().Value(ownerConn{}) != nil {
		return ""
	}
	if a.token == "" {
		return "this server takes requests only over its unix socket, from its own user"
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return fmt.Sprintf(`no "Authorization: Bearer <token>" header: %s runs programs as the user who started it, so it serves only that user; the token is in the file it named when it started (--token-file)`, a.name)
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], a.sum[:]) != 1 {
		return "the bearer token is not this server's (it is the content of the file the server named when it started: a restarted server writes a new one)"
	}
	return ""
}

// Refuse answers a request Why refused: 401 with a JSON error and the
// WWW-Authenticate challenge.
func (a *Auth) Refuse(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", a.name))
	WriteError(w, http.StatusUnauthorized, "%s", why)
}

// Wrap returns h served only to the owner: every other request is refused
// (Refuse) before h sees it, except those public accepts (nil: none).
func (a *Auth) Wrap(h http.Handler, public func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public == nil || !public(r) {
			if why := a.Why(r); why != "" {
				a.Refuse(w, why)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// errorBody is every refusal's body.
type errorBody struct {
	Error string `json:"error"`
}

// WriteError answers with code and the JSON body {"error": message}.
func WriteError(w http.ResponseWriter, code int, format string, args ...any) {
	data, _ := json.Marshal(errorBody{fmt.Sprintf(format, args...)}) // a string always marshals
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(data, '\n'))
}

// Options configure Serve.
type Options struct {
	// Name is the server as log lines and refusals name it ("ndbg serve").
	Name string
	// Grace is how long the requests in flight may take to finish once the
	// shutdown begins (30 s when zero).
	Grace time.Duration
	// Now, when done, ends the grace at once (a second SIGTERM or SIGINT):
	// what is still running is stopped.
	Now context.Context
	// Drain stops the server's own work when the shutdown begins (the
	// session manager's Shutdown): it must refuse new work, let what runs
	// finish until its context is done, then stop it and return. Nil: the
	// requests are waited for alone.
	Drain func(ctx context.Context) error
	// Streams tells the long-lived requests (an MCP client's event
	// stream) that are neither waited for nor refused during the grace;
	// nil: none. After the drain, Close ends them.
	Streams func(*http.Request) bool
	// Close ends what Streams marked (an MCP server's sessions) once the
	// other requests have been answered; nil: nothing.
	Close func()
	// Log receives a line for each connection refused on a unix socket and
	// each request cut off; nil discards them.
	Log io.Writer
}

// after is how long, once what runs was stopped, the requests still
// being answered may take to write their answers before their
// connections are closed.
const after = 5 * time.Second

// settle is how long the streams (Options.Streams) outlive the last
// answer of the grace.
const settle = 500 * time.Millisecond

// Serve answers HTTP on ln with h until ctx is done (the first SIGTERM or
// SIGINT), then shuts down: every new request is answered 503 (the
// listener stays open for that), the work in flight (Options.Drain) and
// the requests being answered may finish within Options.Grace, and what
// still runs then (or when Options.Now is done) is stopped, so that its
// client is answered (503, or its protocol's error) rather than cut off;
// then the listener and the connections are closed and Serve returns once
// the server's goroutines have ended. It returns nil after a clean
// shutdown, and an error when the listener failed or work had to be
// stopped.
//
// On a unix socket, Serve accepts only connections from processes of its
// own uid (owner.Only: their peer credentials), closing any other at once
// and saying so on Log; their requests need no token (Auth).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts Options) error {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if opts.Grace <= 0 {
		opts.Grace = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = context.Background()
	}
	if _, ok := ln.Addr().(*net.UnixAddr); ok {
		ln = owner.Only(ln, func(format string, args ...any) {
			fmt.Fprintf(log, "%s: "+format+"\n", append([]any{opts.Name}, args...)...)
		})
	}
	g := &gate{name: opts.Name, streams: opts.Streams, h: h, idle: make(chan struct{})}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if owner.Verified(c) {
				return context.WithValue(ctx, ownerConn{}, true)
			}
			return ctx
		}}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("%s: listening on %s: %w", opts.Name, ln.Addr(), err)
	case <-ctx.Done():
	}

	// The grace: new requests are refused; the work and the requests in
	// flight finish, or are stopped at its end.
	g.close()
	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.Grace)
	defer cancel()
	stopNow := context.AfterFunc(opts.Now, cancel)
	defer stopNow()
	var errs []error
	if opts.Drain != nil {
		if err := opts.Drain(grace); err != nil {
			errs = append(errs, err)
		}
	}
	// What was stopped answers now; give it a moment to write.
	wait, cancelWait := context.WithTimeout(context.WithoutCancel(ctx), after)
	defer cancelWait()
	select {
	case <-g.idle:
	case <-grace.Done():
		select {
		case <-g.idle:
		case <-wait.Done():
		}
	}
	if opts.Close != nil {
		// The answers just written reach their clients before their
		// streams end: a client whose event stream ends may give up on
		// what it has not read yet.
		select {
		case <-time.After(settle):
		case <-opts.Now.Done():
		}
		opts.Close()
	}
	sctx, cancelShutdown := context.WithTimeout(context.WithoutCancel(ctx), after)
	defer cancelShutdown()
	if err := srv.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("%s: requests still running after the shutdown's grace were cut off: %w", opts.Name, errors.Join(err, srv.Close())))
		fmt.Fprintf(log, "%s: requests still running after the shutdown's grace were cut off\n", opts.Name)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("%s: %w", opts.Name, serr))
	}
	return errors.Join(errs...)
}

// gate counts the requests being answered (but streams) and, once
// closed, answers every new one (but streams) 503. A stream is let through
// then: an MCP client whose event stream is refused gives up on its calls
// in flight too; the streams end with Options.Close.
type gate struct {
	name    string
	streams func(*http.Request) bool
	h       http.Handler

	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed once closed and no request is being answered
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	stream := g.streams != nil && g.streams(r)
	g.mu.Lock()
	if g.closed && !stream { // a stream is no new work: Options.Close ends it
		g.mu.Unlock()
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "5")
		WriteError(w, http.StatusServiceUnavailable, "%s is shutting down: no new requests are taken", g.name)
		return
	}
	if !stream {
		g.n++
	}
	g.mu.Unlock()
	if !stream {
		defer g.done()
	}
	g.h.ServeHTTP(w, r)
}

func (g *gate) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.closed && g.n == 0 {
		close(g.idle)
	}
}

// close refuses new requests from now on.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.n == 0 {
		close(g.idle)
	}
}
