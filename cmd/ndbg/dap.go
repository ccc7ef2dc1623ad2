package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/internal/dap"
)

// runDap is `ndbg dap`: a Debug Adapter Protocol server for editors, on
// stdin and stdout, or with --listen on a TCP address, one session per
// connection, until interrupted.
func runDap(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dapServe(ctx, args, os.Stdin, stdout, stderr)
}

func dapServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "serve DAP on this TCP address (e.g. 127.0.0.1:4711) instead of stdin/stdout")
	var cfg dap.Config
	var comp cli.Compute
	comp.Register(fs)
	cli.RegisterLimits(fs, &cfg.Limits)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ndbg dap [--listen ADDR]   (launch arguments: program, call, backend, model, device; docs/editors.md)")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return cli.Usagef("dap takes no arguments, got %q", fs.Args())
	}
	if cfg.Limits.Timeout < 0 || cfg.Limits.MaxEvents < 0 {
		return cli.Usagef("--timeout and --max-events cannot be negative")
	}
	if err := comp.Check(); err != nil {
		return err
	}
	cfg.Threads, cfg.Device, cfg.Log = comp.Threads, comp.Device, stderr
	if *listen == "" {
		return dap.Serve(ctx, stdin, stdout, cfg)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening for DAP clients: %w", err)
	}
	fmt.Fprintf(stderr, "ndbg dap: listening on %s\n", ln.Addr())
	return serveConns(ctx, ln, cfg)
}

// serveConns serves each connection of ln in its own goroutine until ctx
// is done, then closes the listener and the open connections and waits for
// their sessions to end.
func serveConns(ctx context.Context, ln net.Listener, cfg dap.Config) error {
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
			return fmt.Errorf("accepting a DAP client: %w", err)
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := dap.Serve(ctx, c, c, cfg); err != nil && ctx.Err() == nil {
				fmt.Fprintf(cfg.Log, "ndbg dap: %s: %v\n", c.RemoteAddr(), err)
			}
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
}
