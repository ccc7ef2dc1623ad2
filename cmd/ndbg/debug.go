package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/internal/ctxio"
	"github.com/ndbg/ndbg/internal/regfile"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

const debugHelp = `commands (pdb's, with its abbreviations, plus steps backwards):
  s, step            step into              n, next            step over
  r, return          step out (return)      c, cont, continue  run to a breakpoint or the end
  unt, until [LINE]  next, but not back in a loop (or on to a line >= LINE in this frame)
  to LINE            run to LINE            l, list [FIRST[, LAST] | .]  the source (again: on)
  ll, longlist       the current function   a, args            its arguments
  b, break [WHERE[, COND]]  a breakpoint at LINE or FUNCTION's first line, stopping
                     only where COND is true; no WHERE: list them
  tbreak WHERE[, COND]  one that goes after it stops
  condition N [COND] ignore N [COUNT]       commands [N] ... end   (run when N stops)
  disable N...       enable N...            cl, clear [N... | FILE:LINE]  delete (all: no argument)
  p EXPR             an expression's repr   pp EXPR            pretty-printed
  whatis EXPR        its kind               !STMT, or any line that is no command: run it
  display [EXPR]     show EXPR when it changes at a stop in this frame (none: list them)
  undisplay [EXPR]   stop showing one (or all)
  retval, rv         the value being returned
  w, where, bt       the call stack         u, up [N]  d, down [N]  select a caller / back
  alias [NAME [CMD]] unalias NAME           restart, run       start the program again
  set NAME=VALUE     edit a local           back, bs           step back into
  bn                 step back over         br                 back to the call (the inputs)
  bc                 continue backwards     backto LINE        back to the previous stop at LINE
  h, help            this help              q, quit            leave
on the real backend code runs in the live program's frame, as in pdb (attributes, methods,
globals); on a prediction p, pp, display and conditions evaluate over the predicted
locals' reprs and say so, and statements cannot run; Ctrl-C stops a running program where
it is; without --call the whole script runs (real backend); an exception that escapes
enters post-mortem debugging in the frame that raised it, where c, s and n restart it`

// runDebug is `ndbg debug FILE --call EXPR`: a pdb-like prompt that shows
// predicted states (or real ones with --backend real); --compare shows the
// real state beside each prediction and marks every difference.
func runDebug(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// Ctrl-C stops the running program where it is, as in pdb, instead of
	// ending ndbg (SIGTERM still does).
	signal.Reset(os.Interrupt)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	interrupts := make(chan struct{}, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-sigs:
				select {
				case interrupts <- struct{}{}:
				default:
				}
			case <-done:
				return
			}
		}
	}()
	return debugWith(ctx, args, os.Stdin, stdout, stderr, interrupts)
}

// debugSession is runDebug with the given input and no interrupts.
func debugSession(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return debugWith(ctx, args, stdin, stdout, stderr, nil)
}

// debugWith runs a session; each value on interrupts stops the action
// running then (Ctrl-C).
func debugWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, interrupts <-chan struct{}) error {
	fs := flag.NewFlagSet("debug", flag.ContinueOnError)
	fs.SetOutput(stderr)
	call := fs.String("call", "", `the call to debug, e.g. 'f(3, [1, 2])' (none: the whole script, run as __main__; real backend)`)
	var bf cli.BackendFlags
	bf.Register(fs, cli.Neural, cli.CWM, cli.Real)
	bf.RegisterVerify(fs)
	compare := fs.Bool("compare", false, "run the real debugger alongside and mark where the prediction differs")
	temp := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	raw := fs.Bool("raw-output", false, "show the program's output and reprs as they are; by default control characters (escape sequences that could retitle the window, write the clipboard or redraw the screen) are shown escaped, as repr writes them")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ndbg debug FILE [--call EXPR] [--backend %s] [--model DIR] [--compare] [--verify-below P | --no-exec] [--raw-output]\n", bf.Names())
		fmt.Fprintln(fs.Output(), "(the cwm backend answers s, n, r and back only)")
		fs.PrintDefaults()
	}
	// Flags may come before or after FILE.
	var files []string
	for {
		if err := cli.Parse(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		fs.Usage()
		return cli.Usagef("need one FILE, got %d (%q)", len(files), files)
	}
	file := files[0]
	if err := bf.Check(); err != nil {
		return err
	}
	if err := cli.CheckCall(*call); err != nil {
		return err
	}
	if err := cli.CheckSampling(sample.Params{Temperature: *temp}); err != nil {
		return err
	}
	if *compare && bf.NoExec {
		return cli.Usagef("--compare runs the program; --no-exec runs nothing of it")
	}
	data, err := regfile.Read(file, cli.MaxFile) // before what it is for: a missing file says so first
	if err != nil {
		return fmt.Errorf("reading the program: %w", err)
	}
	src := string(data)
	if *call == "" && bf.Name != cli.Real {
		return cli.Usagef("debugging a whole script needs --backend real (the model's trace format has no module-level frames); or give --call")
	}
	b, m, err := bf.Open(ctx, sample.Params{Temperature: *temp})
	if err != nil {
		return err
	}
	if m != nil {
		defer m.Close()
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return fmt.Errorf("naming the program: %w", err)
	}
	if !*raw { // the program's output and its objects' reprs are its own text, not the terminal's commands
		stdout, stderr = cli.TerminalSafe(stdout), cli.TerminalSafe(stderr)
	}
	in := bufio.NewReader(ctxio.Reader(ctx, stdin)) // SIGTERM and SIGINT end the wait at the prompt (and the program's input)
	if bf.Name == cli.Real {
		// The program reads the terminal, as under pdb: the next lines
		// typed, while it runs; a step back feeds it the same again.
		b = ndbg.RealWithInput(bf.Limits, func(context.Context) (string, bool, error) {
			line, err := in.ReadString('\n')
			switch {
			case err == io.EOF:
				return line, line != "", nil
			case err != nil:
				return "", false, fmt.Errorf("reading the program's input: %w", err)
			}
			return line, true, nil
		})
	}
	d := &debugger{lim: bf.Limits, out: stdout, errOut: stderr, file: abs, src: string(src), call: *call, backend: b,
		aliases: map[string]string{}, interrupts: interrupts}
	if *compare && bf.Name != cli.Real {
		d.realBackend = ndbg.Real(bf.Limits)
	}
	if err := d.start(ctx); err != nil {
		return err
	}
	defer func() {
		d.s.Close()
		d.detach("")
	}()
	what := *call
	if what == "" {
		what = file
	}
	fmt.Fprintf(stdout, "ndbg: debugging %s with the %s debugger (h for help)\n", what, b.Name())
	d.show()
	for {
		if len(d.pending) > 0 { // a breakpoint's commands
			line := d.pending[0]
			d.pending = d.pending[1:]
			if quit := d.command(ctx, line); quit {
				return nil
			}
			continue
		}
		if d.defining != nil {
			fmt.Fprint(stdout, "(com) ")
		} else {
			fmt.Fprint(stdout, "(ndbg) ")
		}
		// A line of any length: a long one is the command's to reject.
		line, err := in.ReadString('\n')
		if ctx.Err() != nil {
			fmt.Fprintln(stdout)
			return context.Cause(ctx)
		}
		if err != nil && (err != io.EOF || line == "") {
			fmt.Fprintln(stdout)
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("reading a command: %w", err)
		}
		if d.defining != nil {
			d.define(line)
			continue
		}
		if quit := d.command(ctx, strings.TrimSpace(line)); quit {
			return nil
		}
	}
}

// debugger is the state of one interactive session.
type debugger struct {
	s           *ndbg.Session
	real        *ndbg.Session // the real run beside, for --compare; nil otherwise
	backend     ndbg.Backend
	realBackend ndbg.Backend // for --compare; nil otherwise
	lim         trace.Limits // the interpreter and sandbox choice of p, pp, display and conditions (pyeval.Eval)
	src, call   string       // what the sessions debug (call "": the whole script)
	out, errOut io.Writer    // the prompt's output; the program's stderr goes to errOut
	last        string       // the last command, repeated by an empty line as in pdb
	file        string       // the program's absolute path, as pdb names it
	bps         []*breakpoint
	nextBP      int               // the last breakpoint number given
	up          int               // the frame u and d selected: 0 is the current one
	displays    map[int][]*shown  // display expressions by frame id (-1: frames unknown)
	printed     ndbg.OutputCursor // the program's output shown so far
	listed      int               // the last line list showed since the stop; 0: none
	aliases     map[string]string // alias NAME COMMAND
	hit         *breakpoint       // the breakpoint that made the last stop, for its commands
	pending     []string          // its commands, still to run
	defining    *breakpoint       // the breakpoint whose commands are being typed
	defined     []string          // those typed so far
	interrupts  <-chan struct{}   // Ctrl-C: stop the running action
}

// start (re)starts the session, and the real run beside it for --compare,
// at the program's start, keeping the breakpoints; displays start afresh,
// as pdb's do in a new run.
func (d *debugger) start(ctx context.Context) error {
	s, err := ndbg.Start(ctx, d.backend, d.src, d.call)
	if err != nil {
		return err
	}
	var real *ndbg.Session
	if d.realBackend != nil {
		if real, err = ndbg.Start(ctx, d.realBackend, d.src, d.call); err != nil {
			s.Close()
			if errors.Is(err, ndbg.ErrLimit) {
				err = fmt.Errorf("%w (%s)", err, cli.LimitHint)
			}
			return fmt.Errorf("the real run for --compare: %w", err)
		}
	}
	if d.s != nil {
		d.s.Close()
	}
	d.detach("")
	d.s, d.real = s, real
	d.up, d.printed, d.displays = 0, ndbg.OutputCursor{}, map[int][]*shown{}
	d.syncBreakpoints()
	return nil
}

// restart ends post-mortem debugging as pdb's c, s and n do there: the
// program starts again.
func (d *debugger) restart(ctx context.Context) {
	fmt.Fprintf(d.out, "Post mortem debugger finished. The %s will be restarted\n", d.file)
	if err := d.start(ctx); err != nil {
		fmt.Fprintf(d.out, "*** restarting: %v\n", err)
		return
	}
	d.show()
}

// postMortem says whether the session is in post-mortem debugging: the
// program ended with an exception that escaped it, other than SystemExit
// (escaped, below).
func (d *debugger) postMortem() bool { return d.escaped() != nil }

// escaped is the exception that escaped the program, but not SystemExit:
// as under python3 -m pdb, sys.exit() ends the program (its status said,
// no traceback, no post-mortem debugging; finished).
func (d *debugger) escaped() *ndbg.Exception {
	if x := d.s.Escaped(); x != nil && x.Type != "SystemExit" {
		return x
	}
	return nil
}

// showOutput prints what the program wrote since the last stop (stdout to
// the prompt, stderr to errOut), as pdb's terminal shows it before the
// stop; nothing after a step back.
func (d *debugger) showOutput() {
	out, errOut := d.printed.Next(d.s)
	_, _ = d.out.Write(out)
	_, _ = d.errOut.Write(errOut)
}

// command runs one command line; it reports whether to quit.
func (d *debugger) command(ctx context.Context, line string) bool {
	if line == "" {
		line = d.last
	}
	d.last = line
	if strings.HasPrefix(line, "!") {
		d.exec(ctx, strings.TrimSpace(line[1:]))
		return false
	}
	line = d.expandAlias(line)
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	if cmd == "l" || cmd == "list" {
		d.last = "list" // an empty line lists on, as in pdb
	}
	lineArg := func() (int, bool) {
		n, err := strconv.Atoi(arg)
		if err != nil {
			fmt.Fprintf(d.out, "*** %s needs a line number\n", cmd)
			return 0, false
		}
		return n, true
	}
	act := func(a ndbg.Action) { d.act(ctx, a) }
	if d.postMortem() {
		switch cmd {
		case "s", "step", "n", "next", "r", "return", "c", "cont", "continue", "unt", "until", "to":
			d.restart(ctx)
			return false
		}
	}
	switch cmd {
	case "":
	case "s", "step":
		act(ndbg.Action{Kind: dsl.StepInto})
	case "n", "next":
		act(ndbg.Action{Kind: dsl.StepOver})
	case "r", "return":
		act(ndbg.Action{Kind: dsl.StepReturn})
	case "c", "cont", "continue":
		act(ndbg.Action{Kind: dsl.Continue, Lines: d.s.Breakpoints()})
	case "unt", "until":
		d.until(ctx, arg)
	case "to":
		if n, ok := lineArg(); ok {
			act(ndbg.Action{Kind: dsl.Breakpoint, Lines: []int{n}})
		}
	case "back", "bs":
		act(ndbg.Action{Kind: dsl.InvStepInto})
	case "bn":
		act(ndbg.Action{Kind: dsl.InvStepOver})
	case "br":
		act(ndbg.Action{Kind: dsl.InvStepReturn})
	case "bc":
		act(ndbg.Action{Kind: dsl.InvContinue, Lines: d.s.Breakpoints()})
	case "backto":
		if n, ok := lineArg(); ok {
			act(ndbg.Action{Kind: dsl.InvBreakpoint, Lines: []int{n}})
		}
	case "b", "break":
		d.breakCmd(arg, false)
	case "tbreak":
		d.breakCmd(arg, true)
	case "disable":
		d.enable(arg, false)
	case "enable":
		d.enable(arg, true)
	case "cl", "clear":
		d.clear(arg)
	case "p":
		d.evalCmd(ctx, arg, false)
	case "pp":
		d.evalCmd(ctx, arg, true)
	case "display":
		d.display(ctx, arg)
	case "undisplay":
		d.undisplay(arg)
	case "retval", "rv":
		d.retval()
	case "u", "up":
		d.move(arg, 1)
	case "d", "down":
		d.move(arg, -1)
	case "set":
		name, value, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintln(d.out, "*** usage: set NAME=VALUE (VALUE as its repr, e.g. [1, 2] or 'abc')")
			break
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if err := d.s.Set(ctx, name, value); err != nil {
			fmt.Fprintf(d.out, "*** %v\n", err)
			break
		}
		if d.real != nil {
			if err := d.real.Set(ctx, name, value); err != nil {
				d.detach(fmt.Sprintf("the real run cannot follow an edited state (%v)", err))
			}
		}
		d.show()
	case "l", "list":
		d.list(arg)
	case "ll", "longlist":
		d.longlist()
	case "a", "args":
		d.args(ctx)
	case "whatis":
		d.whatis(ctx, arg)
	case "condition":
		d.condition(arg)
	case "ignore":
		d.ignoreCmd(arg)
	case "commands":
		d.commandsCmd(arg)
	case "alias":
		d.alias(arg)
	case "unalias":
		d.unalias(arg)
	case "restart", "run":
		fmt.Fprintf(d.out, "Restarting %s\n", d.file)
		if err := d.start(ctx); err != nil {
			fmt.Fprintf(d.out, "*** restarting: %v\n", err)
			break
		}
		d.show()
	case "j", "jump":
		fmt.Fprintln(d.out, "*** jump is not supported: ndbg's real backend runs the program as it is, so that a step back can run it again to any earlier event")
	case "interact":
		fmt.Fprintln(d.out, "*** interact is not supported: the program runs in a sandboxed interpreter that ndbg talks to one request at a time; type Python at the prompt instead (any line that is no command runs in the current frame)")
	case "w", "where", "bt":
		d.where()
	case "h", "help", "?":
		fmt.Fprintln(d.out, debugHelp)
	case "q", "quit", "exit":
		return true
	default:
		d.exec(ctx, line)
	}
	return false
}

// act applies one action and, with --compare, the same to the real run
// when the session took it, so that both histories stay step for step.
func (d *debugger) act(ctx context.Context, a ndbg.Action) {
	n := len(d.s.Trajectory().Steps)
	d.hit = nil
	stop := d.interruptible()
	_, err := d.s.DoLikePdb(ctx, a, d.up, func(st ndbg.State) bool { return d.fires(ctx, st) })
	stop()
	if d.real != nil && len(d.s.Trajectory().Steps) > n {
		d.follow(ctx, a)
	}
	d.report(ctx, err)
	d.runCommands()
}

// interruptible lets Ctrl-C stop the action about to run, until the
// returned function is called.
func (d *debugger) interruptible() func() {
	if d.interrupts == nil {
		return func() {}
	}
	// A Ctrl-C pressed at the prompt, while nothing ran, is not for this
	// action (and the real backend would stop it at its first event).
	for drained := false; !drained; {
		select {
		case <-d.interrupts:
		default:
			drained = true
		}
	}
	done := make(chan struct{})
	s, real := d.s, d.real
	go func() {
		for {
			select {
			case <-d.interrupts:
				s.Interrupt()
				if real != nil {
					real.Interrupt()
				}
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// report shows where an action (or the error it ended with) left the
// session: the stop and the displays that changed, or the end, with the
// exception that escaped.
func (d *debugger) report(ctx context.Context, err error) {
	d.up, d.listed = 0, 0
	switch {
	case errors.Is(err, ndbg.ErrFinished):
		d.finished()
		d.note(d.s.Prediction())
		if d.real != nil {
			if r, ok := d.real.State(); ok {
				fmt.Fprintf(d.out, "!! real:  %s\n", describe(d.s, r))
			} else {
				fmt.Fprintln(d.out, "== real:  the same")
			}
		}
	case err != nil:
		fmt.Fprintf(d.out, "*** %v\n", err)
	default:
		switch d.s.Interrupted() {
		case "interrupt":
			fmt.Fprintln(d.out, "Program interrupted. (Use 'cont' to resume).")
		case "cpu":
			fmt.Fprintf(d.out, "*** the program ran %v of CPU time since the last stop (--timeout) and was stopped where it was; c goes on\n", d.lim.WithDefaults().Timeout)
		}
		if !silent(d.hit) {
			d.show()
		}
		d.showDisplays(ctx)
	}
}

// finished says the program ended and, when an exception escaped, enters
// post-mortem debugging as pdb does: the traceback, then a stop in the
// frame that raised it, where p, w, u and d work on the frames it left.
func (d *debugger) finished() {
	d.showOutput()
	if x := d.s.Escaped(); x != nil && x.Type == "SystemExit" {
		fmt.Fprintf(d.out, "The program exited via sys.exit(). Exit status: %s\n", x.Message)
	}
	if x := d.escaped(); x != nil {
		fmt.Fprintln(d.out, "Traceback (most recent call last):")
		tb := x.Traceback
		if tb == nil {
			tb = []ndbg.Frame{{Line: x.Line}}
		}
		for _, f := range tb {
			fmt.Fprintf(d.out, "  File %q, line %d, in %s\n    %s\n", d.file, f.Line, f.Func, strings.TrimSpace(d.s.UserLine(f.Line)))
		}
		fmt.Fprintf(d.out, "%s: %s\n", x.Type, x.Message)
		fmt.Fprintln(d.out, "Uncaught exception. Entering post mortem debugging")
		fmt.Fprintln(d.out, "Running 'cont' or 'step' will restart the program")
		if f, ok := d.selected(); ok {
			fmt.Fprintf(d.out, "> exception line %d: %s\n", f.Line, strings.TrimSpace(d.s.UserLine(f.Line)))
			for _, l := range f.Locals {
				fmt.Fprintf(d.out, "    %s = %s\n", l.Name, l.Repr)
			}
		}
		return
	}
	t := d.s.Trajectory()
	if k := len(t.Steps); k >= 2 && t.Steps[k-2].State != nil && t.Steps[k-2].State.Event == dsl.Exception && d.predicted() {
		fmt.Fprintf(d.out, "--the program finished: predicted, after the exception %s--\n", t.Steps[k-2].State.Value)
		return
	}
	fmt.Fprintln(d.out, "--the program finished--")
}

// follow applies to the real run an action the session took. When the real
// run cannot take it (it finished before the prediction did), --compare
// stops: from there the two runs no longer answer the same history.
func (d *debugger) follow(ctx context.Context, a ndbg.Action) {
	n := len(d.real.Trajectory().Steps)
	_, err := d.real.DoIf(ctx, a, func(st ndbg.State) bool { return d.firing(ctx, d.real, st, false) != nil })
	if len(d.real.Trajectory().Steps) > n {
		return // it took the action (ErrFinished: it ran past the end)
	}
	d.detach(fmt.Sprintf("the real run cannot take %s from where it is (%v)", a.Kind, err))
}

// detach ends --compare, saying why unless why is empty.
func (d *debugger) detach(why string) {
	if d.real == nil {
		return
	}
	if why != "" {
		fmt.Fprintf(d.out, "!! real:  %s; --compare is off from here\n", why)
	}
	d.real.Close()
	d.real = nil
}

// show prints the current state; with --compare, the real one beside,
// marking each difference with "!!".
func (d *debugger) show() {
	st, ok := d.s.State()
	if !ok {
		d.finished()
		return
	}
	d.showOutput()
	p, predicted := d.s.Prediction()
	line := describe(d.s, st)
	if predicted && !p.Verified {
		line += confMark(p.State)
	}
	fmt.Fprintf(d.out, "> %s\n", line)
	if st.Event == dsl.Call || st.Event == dsl.Line {
		for i, l := range st.Locals {
			mark := ""
			if predicted && !p.Verified && i < len(p.Locals) {
				mark = confMark(p.Locals[i])
			}
			fmt.Fprintf(d.out, "    %s = %s%s\n", l.Name, l.Repr, mark)
		}
	}
	d.note(p, predicted)
	if d.real == nil {
		return
	}
	real, ok := d.real.State()
	if !ok {
		fmt.Fprintln(d.out, "!! real:  the program finished")
		return
	}
	m := ndbg.Compare(&st, &real)
	if m.All {
		fmt.Fprintln(d.out, "== real:  the same")
		return
	}
	fmt.Fprintf(d.out, "!! real:  %s\n", describe(d.s, real))
	if !m.Locals {
		pred := map[string]string{}
		for _, l := range st.Locals {
			pred[l.Name] = l.Repr
		}
		for _, l := range real.Locals {
			if v, ok := pred[l.Name]; !ok || v != l.Repr {
				fmt.Fprintf(d.out, "!!  %s = %s (predicted %s)\n", l.Name, l.Repr, orMissing(v, ok))
			}
		}
	}
}

// note says how the current state was predicted where that is news: a
// verified state (the real one shown instead), a value cut, a check that
// could not be made.
func (d *debugger) note(p ndbg.Prediction, predicted bool) {
	switch {
	case !predicted:
	case p.Verified:
		model := "the end of the program"
		if m := p.Model; m != nil {
			model = fmt.Sprintf("%s at line %d", m.Event, m.Line)
			if m.Event == dsl.Return || m.Event == dsl.Exception {
				model += " -> " + m.Value
			}
		}
		fmt.Fprintf(d.out, "== verified: the model was %s sure (it predicted %s); this is the real state\n", ndbg.Percent(p.State), model)
	case p.Uncertain():
		fmt.Fprintf(d.out, "?? uncertain: the model kept extending %s past any real value; cut\n", strings.Join(p.Cut, ", "))
	}
	if predicted && p.Unverified != "" {
		fmt.Fprintf(d.out, "?? not verified: %s\n", p.Unverified)
	}
}

// showConfBelow: a predicted state's or local's confidence is shown when
// below it (the display stays quiet where the model is sure).
const showConfBelow = 0.9

// confMark is "  [63%]" for a confidence below showConfBelow, else "".
func confMark(c float64) string {
	if c >= showConfBelow {
		return ""
	}
	return "  [" + ndbg.Percent(c) + "]"
}

func orMissing(v string, ok bool) string {
	if !ok {
		return "nothing"
	}
	return v
}

// describe is one line: event, line number, source, and the value of a
// return or exception.
func describe(sess *ndbg.Session, st ndbg.State) string {
	s := fmt.Sprintf("%-9s line %d: %s", st.Event, st.Line, strings.TrimSpace(sess.UserLine(st.Line)))
	if st.Event == dsl.Return || st.Event == dsl.Exception {
		s += " -> " + st.Value
	}
	return s
}
