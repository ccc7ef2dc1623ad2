package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/internal/owner"
	"github.com/ndbg/ndbg/service/serve"
	"github.com/ndbg/ndbg/trace"
)

// runServe is `ndbg serve`: the debugger over HTTP/JSON (package serve)
// until SIGTERM or SIGINT, which finish the requests in flight.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8321", "TCP address to listen on, or unix:PATH for a unix socket (mode 0600; only this user's processes are served, without a token). Over TCP every request but GET /openapi.json needs the token (Authorization: Bearer TOKEN); keep it on loopback: the token travels unencrypted")
	tokenFile := fs.String("token-file", "", "TCP only: the token's file. If it exists it holds your token (mode 0600, yours; kept); if not, a fresh one is written there (removed at exit). Default: a fresh token in $XDG_RUNTIME_DIR/ndbg/serve-HOST-PORT.token (else ~/.cache/ndbg/tokens/), directory 0700, file 0600, removed at exit")
	backends := fs.String("backends", "neural,cwm,real", "backends offered, comma-separated; the first is the default (real alone opens no model; the default leaves cwm out unless the model is a CWM checkpoint)")
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
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM or SIGINT, how long requests in flight may take to finish (new ones are answered 503; a second signal stops them at once, answered 503)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ndbg serve [--listen HOST:PORT|unix:PATH] [--token-file PATH] [--backends neural,cwm,real] [--model DIR] [--device cpu|cuda|auto] [limits]")
		fmt.Fprintln(fs.Output(), "(the API: GET /openapi.json; docs in service/serve/openapi.json)")
		fmt.Fprintln(fs.Output(), "It runs the programs clients send with your rights, so it serves only you: over TCP, requests carry the")
		fmt.Fprintln(fs.Output(), "token it writes to a file only you can read (its path is printed at start); on a unix socket, only")
		fmt.Fprintln(fs.Output(), "processes of your uid can connect. Anything else is refused (401, or the connection closed). docs/security.md")
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
	if owner.IsUnix(*listen) && *tokenFile != "" {
		return cli.Usagef("--token-file is for TCP: on a unix socket only your own processes can connect, and need no token")
	}
	sig := cli.Signals(ctx)
	defer sig.Stop()
	ln, access, err := ownerListen("serve", *listen, *tokenFile, stderr)
	if err != nil {
		return err
	}
	defer ln.close()
	cfg := serve.Config{Backends: names, Trace: lim, Limits: sl, Token: ln.token}
	if slices.Contains(cfg.Backends, serve.Neural) || slices.Contains(cfg.Backends, serve.CWM) {
		m, err := ndbg.Open(sig.Begin, ndbg.Options{Dir: *modelDir, Threads: comp.Threads, Device: comp.Device})
		if err != nil {
			return err
		}
		defer m.Close()
		cfg.Model = m
		if m.ActionTokens() && !flagSet(fs, "backends") {
			// The default offers cwm where the model is a CWM checkpoint.
			cfg.Backends = slices.DeleteFunc(cfg.Backends, func(b string) bool { return b == serve.CWM })
		}
	}
	svc, err := serve.New(cfg)
	if err != nil {
		return cli.Usagef("--backends: %v", err)
	}
	defer svc.Close()
	fmt.Fprintf(stdout, "ndbg serve: listening on %s (backends %s)\nndbg serve: %s\n", ln.where, strings.Join(cfg.Backends, ","), access)
	if err := svc.Serve(sig.Begin, ln.ln, *grace, sig.Now, stderr); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ndbg serve: shut down")
	return nil
}
