package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/ndbg/ndbg/internal/owner"
)

// Serve answers HTTP on ln with h until ctx is done (SIGTERM, in `ndbg
// serve`), then shuts down: it stops accepting, lets the requests in
// flight finish within grace, and returns once the server's goroutines
// have ended. It returns nil after a clean shutdown, and an error when the
// listener failed or requests were still running after grace (they are
// then cut off: their connections are closed).
//
// On a unix socket, Serve accepts only connections from processes of its
// own uid (owner.Only: their peer credentials), closing any other at once
// and saying so on log; their requests need no token (Service.Handler).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	if _, ok := ln.Addr().(*net.UnixAddr); ok {
		ln = owner.Only(ln, func(format string, args ...any) {
			fmt.Fprintf(log, "ndbg serve: "+format+"\n", args...)
		})
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
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
		return fmt.Errorf("serve: listening on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		err = fmt.Errorf("serve: requests still running after %s of shutdown were cut off: %w", grace, errors.Join(err, srv.Close()))
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serve: %w", serr))
	}
	return err
}
