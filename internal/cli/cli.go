// Package cli is what the ndbg and ndbg-infer commands share, so that each
// is written once: flag parsing that reports a usage error once, the
// --backend flag and the backend it opens (with --model, --threads,
// --device and the real run's limits), and --version.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/device"
	"github.com/ndbg/ndbg/internal/regfile"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

// UsageError is a command line that cannot run as written (a bad or
// missing flag or argument): the command exits with status 2.
type UsageError struct {
	Err      error
	reported bool // the flag set has printed it, and the usage
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with the formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Parse parses args with fs, which must use flag.ContinueOnError. A bad
// flag is returned as a UsageError that the flag set has already printed,
// with the usage; -h is flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &UsageError{Err: err, reported: true}
}

// ExitStatus is the exit status for what a command returned: 0 for nil
// and flag.ErrHelp, 2 for a UsageError, 1 otherwise. It also reports
// whether the error still needs printing.
func ExitStatus(err error) (code int, print bool) {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0, false
	case errors.As(err, &ue):
		return 2, !ue.reported
	}
	return 1, true
}

// Backend names.
const (
	Neural = "neural" // the model predicts
	CWM    = "cwm"    // a CWM checkpoint, actions emulated by forced event tokens
	Real   = "real"   // the program runs under sys.settrace
)

// backendHelp says what each backend is, for --backend's help.
var backendHelp = map[string]string{
	Neural: "neural (the model predicts)",
	CWM:    "cwm (only with --model DIR of a CWM checkpoint, trained on plain traces without the DSL's action tokens, not the embedded default model: actions emulated by forcing event tokens)",
	Real:   "real (the program runs under sys.settrace)",
}

// BackendFlags are the flags that choose and open a debugger backend.
type BackendFlags struct {
	Name    string       // --backend
	Model   string       // --model: a model directory, empty for the embedded default
	Compute              // --threads, --device
	Limits  trace.Limits // --timeout, --max-events: the real run's limits
	// VerifyBelow (--verify-below, where RegisterVerify added it): check
	// neural predictions whose confidence is below it against the real run
	// (ndbg.Verify); 0 checks none.
	VerifyBelow float64
	// NoExec (--no-exec, where RegisterVerify added it): the neural or CWM
	// backend builds the first state from the program's text, running
	// nothing of it (ndbg.NoExec); the call's arguments must be literals.
	NoExec bool
	names  []string // the backends this command offers
}

// RegisterVerify adds --verify-below and --no-exec, the flags that say
// what of the program runs beside a prediction, to fs.
func (b *BackendFlags) RegisterVerify(fs *flag.FlagSet) {
	fs.Float64Var(&b.VerifyBelow, "verify-below", 0, "check predictions whose confidence is below this probability (0-1) against the real run and show the real state (0: never)")
	fs.BoolVar(&b.NoExec, "no-exec", false, "run nothing of the program: the first state is built from its text (the call's arguments must be literals); not with --backend real, --verify-below or --compare")
}

// Register adds --backend (one of names, the first the default), --model,
// --threads, --device, --timeout and --max-events to fs. The limits b holds are the
// flags' defaults.
func (b *BackendFlags) Register(fs *flag.FlagSet, names ...string) {
	b.names = names
	help := make([]string, len(names))
	for i, n := range names {
		help[i] = backendHelp[n]
	}
	text := help[len(help)-1]
	if len(help) > 1 {
		text = strings.Join(help[:len(help)-1], ", ") + " or " + text
	}
	fs.StringVar(&b.Name, "backend", names[0], text)
	fs.StringVar(&b.Model, "model", "", "model directory or GGUF file (default: the model embedded in the binary)")
	b.Compute.Register(fs)
	RegisterLimits(fs, &b.Limits)
}

// Compute are the flags that say where the model computes: --threads
// (the CPU's) and --device.
type Compute struct {
	Threads int    // --threads: compute threads on the CPU, 0 for one per core
	Device  string // --device: cpu, cuda or auto (package internal/device)
}

// Register adds --threads and --device to fs.
func (c *Compute) Register(fs *flag.FlagSet) {
	fs.IntVar(&c.Threads, "threads", 0, "compute threads of the model on the CPU (0: one per core)")
	fs.StringVar(&c.Device, "device", device.Auto, "where the model computes: "+device.CPU+", "+device.CUDA+
		" (an NVIDIA GPU; needs a build with -tags cuda) or "+device.Auto+" (cuda when built in and a GPU is present, else cpu)")
}

// Check returns a UsageError for negative --threads or a --device that
// names no device.
func (c *Compute) Check() error {
	if c.Threads < 0 {
		return Usagef("--threads %d cannot be negative", c.Threads)
	}
	if err := device.Check(c.Device); err != nil {
		return Usagef("--%v", err)
	}
	return nil
}

// OpenDevice opens the device --device names for a model to own
// (model.Options.Device with CloseDevice); nil is the model's own CPU.
func (c *Compute) OpenDevice() (model.Device, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return device.Open(c.Device)
}

// RegisterLimits adds --timeout and --max-events, the limits of a real run
// that a user may need to raise, and --unsandboxed to fs; lim's values are
// their defaults.
func RegisterLimits(fs *flag.FlagSet, lim *trace.Limits) {
	fs.BoolVar(&lim.Unsandboxed, "unsandboxed", lim.Unsandboxed,
		"run programs WITHOUT the operating-system sandbox (docs/security.md), where it cannot start: they can do whatever you can")
	fs.DurationVar(&lim.Timeout, "timeout", lim.Timeout, "wall-clock limit of a recorded real run (ndbg trace, eval, --compare of a prediction); CPU time of each action of a live one (the real debugger: past it the program stops where it is) (0: package trace's 5s)")
	fs.IntVar(&lim.MaxEvents, "max-events", lim.MaxEvents, "cap on the states of a real run (0: package trace's 100000)")
}

// Names is the backends offered, as a usage line writes them: "neural|real".
func (b *BackendFlags) Names() string { return strings.Join(b.names, "|") }

// Check rejects a --backend the command does not offer and negative limits.
func (b *BackendFlags) Check() error {
	if !slices.Contains(b.names, b.Name) {
		return Usagef("--backend %q: want %s", b.Name, strings.Join(b.names, ", "))
	}
	if err := b.Compute.Check(); err != nil {
		return err
	}
	if b.Limits.Timeout < 0 || b.Limits.MaxEvents < 0 {
		return Usagef("--timeout and --max-events cannot be negative")
	}
	if !(b.VerifyBelow >= 0 && b.VerifyBelow <= 1) {
		return Usagef("--verify-below %g: want a probability from 0 to 1", b.VerifyBelow)
	}
	if b.VerifyBelow > 0 && b.Name != Neural {
		return Usagef("--verify-below checks the neural backend's predictions (not --backend %s)", b.Name)
	}
	if b.NoExec && (b.Name == Real || b.VerifyBelow > 0) {
		return Usagef("--no-exec runs nothing of the program; --backend real and --verify-below run it")
	}
	if b.Name == CWM && b.Model == "" {
		return Usagef("--backend cwm needs --model DIR, a CWM checkpoint (trained on plain traces, without the DSL's action tokens); " +
			"the embedded default model is trained with them: use --backend neural")
	}
	return nil
}

// OpenModel opens the model a neural or CWM backend needs (nil, nil for
// the real backend); the caller closes it.
func (b *BackendFlags) OpenModel(ctx context.Context) (*ndbg.Model, error) {
	if err := b.Check(); err != nil {
		return nil, err
	}
	if b.Name == Real {
		return nil, nil
	}
	return ndbg.Open(ctx, ndbg.Options{Dir: b.Model, Threads: b.Threads, Device: b.Device, Unsandboxed: b.Limits.Unsandboxed})
}

// Open returns the session backend the flags name, sampling with p, and the
// model it opened (nil for the real backend), which the caller closes.
func (b *BackendFlags) Open(ctx context.Context, p sample.Params) (ndbg.Backend, *ndbg.Model, error) {
	m, err := b.OpenModel(ctx)
	if err != nil {
		return nil, nil, err
	}
	var nb ndbg.Backend
	switch b.Name {
	case Real:
		return ndbg.Real(b.Limits), nil, nil
	case CWM:
		nb = ndbg.CWM(m, p)
	default:
		nb = ndbg.Neural(m, p)
	}
	switch {
	case b.VerifyBelow > 0:
		nb, err = ndbg.Verify(nb, b.Limits, b.VerifyBelow)
	case b.NoExec:
		nb, err = ndbg.NoExec(nb)
	}
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return nb, m, nil
}

// LimitHint is what to tell a user whose real run passed a limit
// (ndbg.ErrLimit): the flags that raise them.
const LimitHint = "raise --max-events or --timeout if the program does end"

// Version writes the command's version: the module version and VCS
// revision from the build information, the Go version, and the embedded
// default model's identity.
func Version(w io.Writer, command string) error {
	version, rev, goVersion := "(unknown)", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version, goVersion = bi.Main.Version, bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = " revision " + s.Value
			case "vcs.modified":
				if s.Value == "true" {
					rev += " (modified)"
				}
			}
		}
	}
	model := ndbg.DefaultModelID()
	if model == "" {
		model = "none embedded"
	}
	_, err := fmt.Fprintf(w, "%s %s%s, %s\ndefault model: %s\n", command, version, rev, goVersion, model)
	return err
}

// MaxFile bounds a program or item file a command reads (from a path or
// stdin): a program ndbg can debug is far smaller (the model's context is
// 2048 tokens), and a path to something endless (/dev/zero) must not be
// read forever.
const MaxFile = 8 << 20

// ReadFile reads the program or item at path ("-": stdin) for a command:
// a regular file (regfile: a FIFO or a device is refused at once, without
// blocking) or stdin, of at most MaxFile bytes, of UTF-8 text without NUL
// bytes (an error says the line and column, not quoting it); a read of
// stdin ends when ctx does (SIGINT or SIGTERM: Main), with ctx's error.
// what names it in errors.
func ReadFile(ctx context.Context, what, path string) (string, error) {
	data, err := readFile(ctx, what, path)
	if err != nil {
		return "", err
	}
	if where, bad := regfile.NotText(data); bad {
		return "", fmt.Errorf("%s is not UTF-8 text without NUL bytes: %s", what, where)
	}
	return string(data), nil
}

func readFile(ctx context.Context, what, path string) ([]byte, error) {
	if path != "-" {
		data, err := regfile.Read(path, MaxFile)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", what, err)
		}
		return data, nil
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() { // ends with the read, or with the process when ctx ended first
		data, err := io.ReadAll(io.LimitReader(os.Stdin, MaxFile+1))
		done <- result{data, err}
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("reading %s from stdin: %w", what, ctx.Err())
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("reading %s from stdin: %w", what, r.err)
		}
		if len(r.data) > MaxFile {
			return nil, fmt.Errorf("reading %s from stdin: more than the %d bytes allowed", what, MaxFile)
		}
		return r.data, nil
	}
}

// RegisterSampling registers the sampling flags (--temperature, --top-k,
// --top-p, --seed) into p, their defaults p's values: the zero Params with
// TopP 1 is greedy decoding.
func RegisterSampling(fs *flag.FlagSet, p *sample.Params) {
	fs.Float64Var(&p.Temperature, "temperature", p.Temperature, "sampling temperature (0: greedy)")
	fs.IntVar(&p.TopK, "top-k", p.TopK, "keep the k most likely tokens (0: all)")
	fs.Float64Var(&p.TopP, "top-p", p.TopP, "nucleus sampling threshold (1: off)")
	fs.Uint64Var(&p.Seed, "seed", p.Seed, "sampling seed")
}

// Main runs a command: run gets a context that SIGINT and SIGTERM end (so
// that running programs are killed and their work directories removed
// before the command exits), the arguments after the command's name and
// the standard streams; Main exits with the status run returns.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Meta answers the arguments every command takes the same way: none (the
// usage on stderr, status 2), -h/-help/--help (the usage on stdout, 0) and
// -version/--version/version (Version, 0). done is false for anything
// else, which the command handles itself.
func Meta(command string, args []string, stdout, stderr io.Writer, usage func(io.Writer)) (code int, done bool) {
	if len(args) == 0 {
		usage(stderr)
		return 2, true
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0, true
	case "-version", "--version", "version":
		if err := Version(stdout, command); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", command, err)
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// Finish turns a subcommand's error into the exit status (ExitStatus),
// printing the error as "command sub: error" where it should be shown.
func Finish(stderr io.Writer, command, sub string, err error) int {
	code, print := ExitStatus(err)
	if print {
		fmt.Fprintf(stderr, "%s %s: %v\n", command, sub, err)
	}
	return code
}

// SetUsage makes fs's usage text "usage: LINE", the lines of more, and
// then the flags; `ndbg help CMD` and CMD -h print it.
func SetUsage(fs *flag.FlagSet, line string, more ...string) {
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s\n", line)
		for _, m := range more {
			fmt.Fprintln(w, m)
		}
		fmt.Fprintln(w, "\nflags:")
		fs.PrintDefaults()
	}
}

// Bound is a flag's integer value and the least it may be.
type Bound struct {
	Flag       string
	Value, Min int
}

// AtLeast returns a UsageError naming the first bound whose value is below
// its minimum.
func AtLeast(bounds ...Bound) error {
	for _, b := range bounds {
		if b.Value < b.Min {
			return Usagef("--%s %d: want at least %d", b.Flag, b.Value, b.Min)
		}
	}
	return nil
}

// List splits a flag's comma-separated value into its non-empty items
// and, when allowed is not nil, returns a UsageError naming the first item
// that is not one of allowed.
func List(flagName, value string, allowed []string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(value, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if allowed != nil && !slices.Contains(allowed, f) {
			return nil, Usagef("--%s: unknown %q (want %s)", flagName, f, strings.Join(allowed, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// NoArgs returns a UsageError when fs parsed positional arguments, for a
// command that takes none.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return Usagef("unexpected arguments %q (%s takes flags only)", fs.Args(), fs.Name())
	}
	return nil
}

// CheckCall returns a UsageError when --call is given but is not a call of
// a top-level function (ndbg.EntryOf).
func CheckCall(call string) error {
	if call == "" {
		return nil
	}
	if _, err := ndbg.EntryOf(call); err != nil {
		return &UsageError{Err: fmt.Errorf("--call: %w", err)}
	}
	return nil
}

// ParseAction parses a flag's action (ndbg.ParseAction), a UsageError when
// it is none.
func ParseAction(flagName, text string) (ndbg.Action, error) {
	a, err := ndbg.ParseAction(text)
	if err != nil {
		return ndbg.Action{}, &UsageError{Err: fmt.Errorf("--%s: %w", flagName, err)}
	}
	return a, nil
}

// CheckSampling returns a UsageError for sampling flags sample.New refuses
// (a negative temperature or top-k, a top-p outside [0, 1]).
func CheckSampling(p sample.Params) error {
	if _, err := sample.New(p); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// Shutdown is what a server's shutdown listens to: Begin is done at the
// first SIGTERM or SIGINT (or when the parent context is), and Now at the
// second, which asks to stop what still runs without waiting out the
// grace. Stop releases the signals.
type Shutdown struct {
	Begin, Now context.Context
	Stop       func()
}

// Signals returns the Shutdown of a server started under ctx. Begin
// derives from ctx; Now does not (Main cancels ctx at the first signal
// too): only a second signal ends it. Signals are counted as they come
// here; one that came before Signals was called (ctx already done) counts
// as the first.
func Signals(ctx context.Context) Shutdown {
	begin, cancelBegin := context.WithCancel(ctx)
	now, cancelNow := context.WithCancel(context.WithoutCancel(ctx))
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		if ctx.Err() != nil { // Main caught the first signal already
			n = 1
		}
		for {
			select {
			case <-sig:
				n++
				cancelBegin()
				if n >= 2 {
					cancelNow()
				}
			case <-ctx.Done(): // Begin ends with it already; signals are counted above
				ctx = context.Background()
			case <-done:
				return
			}
		}
	}()
	return Shutdown{Begin: begin, Now: now, Stop: func() {
		signal.Stop(sig)
		close(done)
		cancelBegin()
		cancelNow()
	}}
}
