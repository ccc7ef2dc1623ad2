package dap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/ndbg/ndbg/internal/owner"
)

// Listen listens for DAP clients on addr: a loopback TCP address
// ("127.0.0.1:4711") or a unix socket ("unix:PATH", created with mode
// 0600). Any other TCP address is refused: DAP carries no credentials, so
// a client is known only by the user its process runs as, which cannot be
// told for a remote client (ServeListener would refuse every one).
func Listen(addr string) (net.Listener, error) {
	ln, err := owner.Listen(addr, true)
	if err != nil {
		return nil, fmt.Errorf("dap: %w", err)
	}
	return ln, nil
}

// ServeListener serves each connection of ln as one DAP session (Serve)
// in its own goroutine until ctx is done, then closes the listener and the
// open connections and waits for their sessions to end.
//
// A session runs programs and reads the files its launch names with the
// server's rights, so only the server's own user is served: a connection
// whose process runs as another user, or whose user cannot be told (a
// remote client; a client that closed its end before it was looked up),
// is closed before a byte of it is read, with a line on cfg.Log
// (owner.Only: SO_PEERCRED on a unix socket, /proc/net/tcp and tcp6 for
// TCP).
func ServeListener(ctx context.Context, ln net.Listener, cfg Config) error {
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	ln = owner.Only(ln, func(format string, args ...any) {
		fmt.Fprintf(log, "ndbg dap: "+format+"\n", args...)
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("dap: accepting a client: %w", err)
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Go(func() {
			if err := Serve(ctx, c, c, cfg); err != nil && ctx.Err() == nil {
				fmt.Fprintf(log, "ndbg dap: %s: %v\n", c.RemoteAddr(), err)
			}
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		})
	}
}
