package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ndbg/ndbg"
)

// Kind says what sort of refusal an Error is, so that each front end can
// answer it in its protocol (an HTTP status, an MCP tool error) without
// reading the message.
type Kind int

// The kinds of refusal. The comment is the HTTP status `ndbg serve`
// answers each with.
const (
	Invalid       Kind = iota + 1 // 400: the request is malformed or names what is not offered
	NotFound                      // 404: no such session (never created, ended, expired)
	Conflict                      // 409: the session cannot do it from where it stands (finished, at its start)
	TooLarge                      // 413: the program is over the limit
	Unprocessable                 // 422: the program, call or action cannot be done as asked
	TooMany                       // 429: the session limit is reached
	Unavailable                   // 503: past the time per request, cancelled, or the service is shutting down
)

// Error is a refusal: what was refused and why, with its Kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error of kind k with a formatted message: a front
// end's own refusal, classified as the manager's are.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Err: fmt.Errorf(format, args...)}
}

func errorf(k Kind, format string, args ...any) *Error { return Errorf(k, format, args...) }

// KindOf is the kind of err: an Error's, else Unprocessable (what the API
// refused). Nil is 0.
func KindOf(err error) Kind {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Unprocessable
}

// ErrShuttingDown is the cause of every operation the manager stops or
// refuses because it is shutting down.
var ErrShuttingDown = errors.New("the server is shutting down")

// classify turns what an operation returned into an Error saying what
// failed (what) and why: an error after the operation's context ended is
// that context's (whether or not the error says so: a killed run may only
// say "killed"), with its cause: the time per request, the client's
// cancellation or the shutdown.
func classify(ctx context.Context, what string, err error, timeout time.Duration) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if what == "" {
			return err
		}
		return &Error{Kind: e.Kind, Err: fmt.Errorf("%s: %w", what, e.Err)}
	}
	prefix := ""
	if what != "" {
		prefix = what + ": "
	}
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrShuttingDown):
			return errorf(Unavailable, "%s%v (the operation was stopped)", prefix, ErrShuttingDown)
		case errors.Is(cause, context.DeadlineExceeded) || errors.Is(cause, errTimeout):
			return errorf(Unavailable, "%sthe request ran past the limit of %s per request (--request-timeout)", prefix, timeout)
		default:
			return errorf(Unavailable, "%sthe request was cancelled (the client cancelled it or went away)", prefix)
		}
	}
	switch {
	case errors.Is(err, ndbg.ErrFinished), errors.Is(err, ndbg.ErrAtStart):
		return &Error{Kind: Conflict, Err: fmt.Errorf("%s%w", prefix, err)}
	}
	return &Error{Kind: Unprocessable, Err: fmt.Errorf("%s%w", prefix, err)}
}

// errTimeout is the cause of an operation's context that reached the time
// per request.
var errTimeout = errors.New("the time per request is over")
