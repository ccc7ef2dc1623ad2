package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serve answers HTTP on ln with h until ctx is done (SIGTERM, in `ndbg
// serve`), then shuts down: it stops accepting, lets the requests in
// flight finish within grace, and returns once the server's goroutines
// have ended. It returns nil after a clean shutdown, and an error when the
// listener failed or requests were still running after grace (they are
// then cut off: their connections are closed).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
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
