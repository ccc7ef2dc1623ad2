package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/internal/owner"
	"github.com/ndbg/ndbg/service/httpd"
	"github.com/ndbg/ndbg/service/mcp"
	"github.com/ndbg/ndbg/service/sessions"
	"github.com/ndbg/ndbg/trace"
)

// runMCP is `ndbg mcp`: the debugger as a Model Context Protocol server
// for coding agents (package service/mcp), on stdin and stdout (an agent
// starts it), or with --listen over streamable HTTP, until SIGTERM or
// SIGINT, which let the tool calls in flight finish (a second one stops
// them).
func runMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return mcpServe(ctx, args, os.Stdin, stdout, stderr)
}

func mcpServe(ctx context.Context, args []string, stdin io.ReadCloser, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "serve MCP's streamable HTTP transport on this TCP address (e.g. 127.0.0.1:8322; requests carry the token) or unix:PATH (mode 0600; only your own processes, no token) instead of stdin/stdout")
	tokenFile := fs.String("token-file", "", "with --listen on TCP: the token's file. If it exists it holds your token (mode 0600, yours; kept); if not, a fresh one is written there (removed at exit). Default: a fresh token in $XDG_RUNTIME_DIR/ndbg/mcp-HOST-PORT.token (else ~/.cache/ndbg/tokens/), removed at exit")
	backends := fs.String("backends", "neural,real,compare,cwm", "backends offered, comma-separated; the first is the default (real alone opens no model; the default leaves cwm out unless the model is a CWM checkpoint)")
	modelDir := fs.String("model", "", "model directory (default: the model embedded in the binary)")
	var comp cli.Compute
	comp.Register(fs)
	var lim trace.Limits
	cli.RegisterLimits(fs, &lim)
	var sl sessions.Limits
	fs.IntVar(&sl.MaxSessions, "max-sessions", 256, "live debugging sessions at once")
	fs.IntVar(&sl.MaxProgramBytes, "max-program", 256<<10, "bytes of a session's program")
	fs.DurationVar(&sl.RequestTimeout, "request-timeout", time.Minute, "time per tool call")
	fs.DurationVar(&sl.IdleTimeout, "idle-timeout", 10*time.Minute, "a debugging session (and an HTTP client's MCP session) unused this long is closed")
	fs.IntVar(&sl.MaxModels, "max-models", 2, "models opened at once for sessions that name one (debug_start's model), beside the server's")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM or SIGINT, how long tool calls in flight may take to finish (a second signal stops them at once)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ndbg mcp [--listen HOST:PORT|unix:PATH] [--token-file PATH] [--backends neural,real,compare,cwm] [--model DIR] [--device cpu|cuda|auto] [limits]")
		fmt.Fprintln(fs.Output(), "A Model Context Protocol server for coding agents (tools: debug_start, debug_step, debug_breakpoints,")
		fmt.Fprintln(fs.Output(), "debug_evaluate, debug_set, debug_fork, debug_history, debug_end, predict; docs/agents.md). Without --listen")
		fmt.Fprintln(fs.Output(), "it speaks MCP on stdin/stdout to the agent that started it. It runs programs with your rights, so over")
		fmt.Fprintln(fs.Output(), "HTTP it serves only you, as ndbg serve: requests carry the token it writes to a file only you can read")
		fmt.Fprintln(fs.Output(), "(its path is printed at start), or come over a 0600 unix socket from your uid. docs/security.md")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("mcp takes no arguments, got %q", fs.Args())
	}
	if sl.MaxSessions < 1 || sl.MaxProgramBytes < 1 || sl.RequestTimeout <= 0 || sl.IdleTimeout <= 0 || sl.MaxModels < 1 || *grace <= 0 {
		return cli.Usagef("the limits (--max-sessions, --max-program, --request-timeout, --idle-timeout, --max-models, --shutdown-timeout) must be positive")
	}
	if lim.Timeout < 0 || lim.MaxEvents < 0 {
		return cli.Usagef("--timeout and --max-events cannot be negative")
	}
	if err := comp.Check(); err != nil {
		return err
	}
	names, err := cli.List("backends", *backends, []string{sessions.Neural, sessions.Real, sessions.Compare, sessions.CWM})
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return cli.Usagef("--backends names none")
	}
	if *tokenFile != "" && (*listen == "" || owner.IsUnix(*listen)) {
		return cli.Usagef("--token-file is for --listen on TCP: over stdio the agent that started ndbg mcp is its client, and on a unix socket only your own processes can connect")
	}
	sig := cli.Signals(ctx)
	defer sig.Stop()
	// Open what can fail before the model, which takes a moment.
	var (
		ln     = (*listenerAndToken)(nil)
		access string
	)
	if *listen != "" {
		if ln, access, err = mcpListen(*listen, *tokenFile, stderr); err != nil {
			return err
		}
		defer ln.close()
	}
	open := func(ctx context.Context, dir string) (*ndbg.Model, error) {
		return ndbg.Open(ctx, ndbg.Options{Dir: dir, Threads: comp.Threads, Device: comp.Device, Unsandboxed: lim.Unsandboxed})
	}
	cfg := sessions.Config{Backends: names, Trace: lim, Limits: sl, OpenModel: open}
	if slices.ContainsFunc(names, func(b string) bool { return b != sessions.Real }) {
		m, err := open(sig.Begin, *modelDir)
		if err != nil {
			return err
		}
		defer m.Close()
		cfg.Model = m
		if m.ActionTokens() && !flagSet(fs, "backends") {
			// The default offers cwm where the model is a CWM checkpoint.
			cfg.Backends = slices.DeleteFunc(cfg.Backends, func(b string) bool { return b == sessions.CWM })
		}
	}
	mgr, err := sessions.New(cfg)
	if err != nil {
		return cli.Usagef("--backends: %v", err)
	}
	defer mgr.Close()
	srv, err := mcp.NewServer(mgr, version())
	if err != nil {
		return err
	}
	if ln == nil {
		fmt.Fprintf(stderr, "ndbg mcp: serving MCP on stdin/stdout (backends %s)\n", *backends)
		return mcp.ServeStdio(sig.Begin, srv, mgr, stdin, nopWriteCloser{stdout}, *grace, sig.Now)
	}
	auth, err := httpd.NewAuth(mcp.Name, ln.token)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ndbg mcp: listening on %s (backends %s)\nndbg mcp: %s\n", ln.where, *backends, access)
	err = httpd.Serve(sig.Begin, ln.ln, mcp.HTTPHandler(srv, auth, sl.IdleTimeout), httpd.Options{
		Name: mcp.Name, Grace: *grace, Now: sig.Now, Drain: mgr.Shutdown,
		Streams: mcp.IsStream, Close: func() { mcp.CloseSessions(srv) }, Log: stderr})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ndbg mcp: shut down")
	return nil
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// nopWriteCloser is stdout for the stdio transport, which closes its
// writer at the end: the process's stdout stays open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// version is ndbg's module version for MCP's initialize answer.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
