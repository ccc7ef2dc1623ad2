package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/internal/serve"
	"github.com/ndbg/ndbg/trace"
)

// runServe is `ndbg serve`: the debugger over HTTP/JSON (package serve)
// until SIGTERM or SIGINT, which finish the requests in flight.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8321", "address to listen on (the service runs the programs clients send: keep it on loopback unless the network is trusted)")
	backends := fs.String("backends", "neural,cwm,real", "backends offered, comma-separated; the first is the default (real alone opens no model)")
	modelDir := fs.String("model", "", "model directory (default: the model embedded in the binary)")
	var comp cli.Compute
	comp.Register(fs)
	var lim trace.Limits
	cli.RegisterLimits(fs, &lim)
	var sl serve.Limits
	fs.IntVar(&sl.MaxSessions, "max-sessions", 256, "live sessions at once")
	fs.Int64Var(&sl.MaxBodyBytes, "max-body", 1<<20, "bytes of a request's body")
	fs.IntVar(&sl.MaxProgramBytes, "max-program", 256<<10, "bytes of a session's program")
	fs.DurationVar(&sl.RequestTimeout, "request-timeout", time.Minute, "time per request")
	fs.DurationVar(&sl.IdleTimeout, "idle-timeout", 10*time.Minute, "a session unused this long is closed")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, how long requests in flight may take to finish")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ndbg serve [--listen ADDR] [--backends neural,cwm,real] [--model DIR] [--device cpu|cuda|auto] [limits]")
		fmt.Fprintln(fs.Output(), "(the API: GET /openapi.json; docs in internal/serve/openapi.json)")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("serve takes no arguments, got %q", fs.Args())
	}
	if sl.MaxSessions < 1 || sl.MaxBodyBytes < 1 || sl.MaxProgramBytes < 1 || sl.RequestTimeout <= 0 || sl.IdleTimeout <= 0 || *grace <= 0 {
		return cli.Usagef("the limits (--max-sessions, --max-body, --max-program, --request-timeout, --idle-timeout, --shutdown-timeout) must be positive")
	}
	if lim.Timeout < 0 || lim.MaxEvents < 0 {
		return cli.Usagef("--timeout and --max-events cannot be negative")
	}
	if err := comp.Check(); err != nil {
		return err
	}
	names, err := cli.List("backends", *backends, []string{serve.Neural, serve.CWM, serve.Real})
	if err != nil {
		return err
	}
	cfg := serve.Config{Backends: names, Trace: lim, Limits: sl}
	if slices.Contains(cfg.Backends, serve.Neural) || slices.Contains(cfg.Backends, serve.CWM) {
		m, err := ndbg.Open(ctx, ndbg.Options{Dir: *modelDir, Threads: comp.Threads, Device: comp.Device})
		if err != nil {
			return err
		}
		defer m.Close()
		cfg.Model = m
	}
	svc, err := serve.New(cfg)
	if err != nil {
		return cli.Usagef("--backends: %v", err)
	}
	defer svc.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Fprintf(stdout, "ndbg serve: listening on http://%s (backends %s)\n", ln.Addr(), *backends)
	if err := serve.Serve(ctx, ln, svc.Handler(), *grace); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ndbg serve: shut down")
	return nil
}
