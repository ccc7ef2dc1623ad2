package serve

import (
	"context"
	"io"
	"net"
	"time"

	"github.com/ndbg/ndbg/service/httpd"
)

// Serve answers HTTP on ln with the service until ctx is done (the first
// SIGTERM or SIGINT, in `ndbg serve`), then shuts down (httpd.Serve): new
// requests are answered 503, the requests in flight may finish within
// grace, and what still runs then, or when now is done (a second signal;
// nil: never), is stopped and answered 503 ("the server is shutting
// down") rather than cut off; then every session is closed. It returns nil
// after a clean shutdown, and an error when the listener failed or
// requests had to be stopped.
//
// On a unix socket, Serve accepts only connections from processes of its
// own uid (owner.Only: their peer credentials), closing any other at once
// and saying so on log; their requests need no token (Handler).
func (s *Service) Serve(ctx context.Context, ln net.Listener, grace time.Duration, now context.Context, log io.Writer) error {
	return httpd.Serve(ctx, ln, s.Handler(), httpd.Options{Name: "ndbg serve", Grace: grace, Now: now, Drain: s.m.Shutdown, Log: log})
}
