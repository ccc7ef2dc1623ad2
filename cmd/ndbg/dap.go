package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/service/dap"
)

// runDap is `ndbg dap`: a Debug Adapter Protocol server for editors, on
// stdin and stdout, or with --listen on a loopback TCP address or a unix
// socket, one session per connection from the user's own processes, until
// interrupted.
func runDap(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dapServe(ctx, args, os.Stdin, stdout, stderr)
}

func dapServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "serve DAP on this loopback TCP address (e.g. 127.0.0.1:4711) or unix socket (unix:PATH, mode 0600) instead of stdin/stdout; only processes of your own uid are served (others' connections are closed and logged), and non-loopback addresses are refused")
	var cfg dap.Config
	var comp cli.Compute
	comp.Register(fs)
	cli.RegisterLimits(fs, &cfg.Limits)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ndbg dap [--listen 127.0.0.1:PORT|unix:PATH]   (launch arguments: program, call, backend, model, device; docs/editors.md)")
		fmt.Fprintln(fs.Output(), "A session runs the program and reads the files its launch names with your rights, so --listen serves")
		fmt.Fprintln(fs.Output(), "only your own processes: a connection from another uid (or one whose uid cannot be told) is closed")
		fmt.Fprintln(fs.Output(), "unread and logged on stderr. DAP has no credentials, so remote clients cannot be told apart: use")
		fmt.Fprintln(fs.Output(), "ssh -L PORT:127.0.0.1:PORT. stdio (no --listen) serves the editor that started it. docs/security.md")
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
	ln, err := dap.Listen(*listen)
	if err != nil {
		return fmt.Errorf("listening for DAP clients: %w", err)
	}
	where := ln.Addr().String()
	if ln.Addr().Network() == "unix" {
		where = "unix:" + where
	}
	fmt.Fprintf(stderr, "ndbg dap: listening on %s (only uid %d is served)\n", where, os.Geteuid())
	return dap.ServeListener(ctx, ln, cfg)
}
