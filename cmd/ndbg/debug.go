package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/trace"
)

const debugHelp = `commands (pdb's, plus steps backwards):
  s, step           step into            n, next          step over
  r, return         step out (return)    c, continue      run to a breakpoint or the end
  to LINE           run to LINE          b, break [LINE]  set a breakpoint (or list them)
  cl, clear [LINE]  clear one or all     p, print NAME    a local's value
  set NAME=VALUE    edit a local (neural) l, list         the source around here
  w, where          the call stack       back, bs         step back into
  bn                step back over       br               back to the call (the inputs)
  bc                continue backwards   backto LINE      back to the previous stop at LINE
  h, help           this help            q, quit          leave`

// runDebug is `ndbg debug FILE --call EXPR`: a pdb-like prompt that shows
// predicted states (or real ones with --backend real); --compare shows the
// real state beside each prediction and marks every difference.
func runDebug(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return debugSession(ctx, args, os.Stdin, stdout, stderr)
}

func debugSession(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("debug", flag.ContinueOnError)
	fs.SetOutput(stderr)
	call := fs.String("call", "", `the call to debug, e.g. 'f(3, [1, 2])' (required)`)
	backend := fs.String("backend", "neural", "neural (predict), cwm (a CWM checkpoint: s, n, r, back only) or real (run)")
	modelDir := fs.String("model", "", "model directory (default: the embedded default model)")
	compare := fs.Bool("compare", false, "run the real debugger alongside and mark where the prediction differs")
	temp := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ndbg debug FILE --call EXPR [--backend neural|real] [--model DIR] [--compare]")
		fs.PrintDefaults()
	}
	file, rest := splitFile(args)
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	}
	if file == "" || *call == "" {
		fs.Usage()
		return errors.New("need FILE and --call")
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var b ndbg.Backend
	switch *backend {
	case "real":
		b = ndbg.Real(trace.Limits{})
	case "neural", "cwm":
		m, err := ndbg.Open(ctx, ndbg.Options{Dir: *modelDir})
		if err != nil {
			return err
		}
		defer m.Close()
		b = ndbg.Neural(m, sample.Params{Temperature: *temp})
		if *backend == "cwm" {
			b = ndbg.CWM(m, sample.Params{Temperature: *temp})
		}
	default:
		return fmt.Errorf("--backend %q: want neural, cwm or real", *backend)
	}
	s, err := ndbg.Start(ctx, b, string(src), *call)
	if err != nil {
		return err
	}
	defer s.Close()
	d := &debugger{s: s, out: stdout}
	if *compare && *backend != "real" {
		if d.real, err = ndbg.Start(ctx, ndbg.Real(trace.Limits{}), string(src), *call); err != nil {
			return fmt.Errorf("the real run for --compare: %w", err)
		}
		defer d.real.Close()
	}
	fmt.Fprintf(stdout, "ndbg: debugging %s with the %s debugger (h for help)\n", *call, b.Name())
	d.show(nil)
	in := bufio.NewScanner(stdin)
	for {
		fmt.Fprint(stdout, "(ndbg) ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			return in.Err()
		}
		if quit := d.command(ctx, strings.TrimSpace(in.Text())); quit {
			return nil
		}
	}
}

// splitFile takes FILE from the front of args so flags may follow it.
func splitFile(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

// debugger is the state of one interactive session.
type debugger struct {
	s    *ndbg.Session
	real *ndbg.Session // the real run beside, for --compare; nil otherwise
	out  io.Writer
	last string // the last command, repeated by an empty line as in pdb
}

// command runs one command line; it reports whether to quit.
func (d *debugger) command(ctx context.Context, line string) bool {
	if line == "" {
		line = d.last
	}
	d.last = line
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	lineArg := func() (int, bool) {
		n, err := strconv.Atoi(arg)
		if err != nil {
			fmt.Fprintf(d.out, "*** %s needs a line number\n", cmd)
			return 0, false
		}
		return n, true
	}
	act := func(a ndbg.Action) { d.act(ctx, a) }
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
	case "to", "until":
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
		if arg == "" {
			fmt.Fprintf(d.out, "breakpoints: %v\n", d.s.Breakpoints())
			break
		}
		if n, ok := lineArg(); ok {
			if err := d.s.SetBreakpoint(n); err != nil {
				fmt.Fprintf(d.out, "*** %v\n", err)
			} else {
				fmt.Fprintf(d.out, "breakpoint at line %d: %s\n", n, strings.TrimSpace(d.s.UserLine(n)))
			}
		}
	case "cl", "clear":
		n := 0
		if arg != "" {
			var ok bool
			if n, ok = lineArg(); !ok {
				break
			}
		}
		d.s.ClearBreakpoint(n)
		fmt.Fprintf(d.out, "breakpoints: %v\n", d.s.Breakpoints())
	case "p", "print":
		d.print(arg)
	case "set":
		name, value, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintln(d.out, "*** usage: set NAME=VALUE (VALUE as its repr, e.g. [1, 2] or 'abc')")
			break
		}
		if err := d.s.Set(ctx, strings.TrimSpace(name), strings.TrimSpace(value)); err != nil {
			fmt.Fprintf(d.out, "*** %v\n", err)
			break
		}
		d.show(nil)
	case "l", "list":
		d.list()
	case "w", "where", "bt":
		d.where()
	case "h", "help", "?":
		fmt.Fprintln(d.out, debugHelp)
	case "q", "quit", "exit":
		return true
	default:
		fmt.Fprintf(d.out, "*** unknown command %q (h for help)\n", cmd)
	}
	return false
}

// act applies one action (and, with --compare, the same to the real run).
func (d *debugger) act(ctx context.Context, a ndbg.Action) {
	_, err := d.s.Do(ctx, a)
	var realState *ndbg.State
	if d.real != nil {
		if st, rerr := d.real.Do(ctx, a); rerr == nil {
			realState = &st
		} else if !errors.Is(rerr, ndbg.ErrFinished) {
			fmt.Fprintf(d.out, "*** real: %v\n", rerr)
		}
	}
	switch {
	case errors.Is(err, ndbg.ErrFinished):
		fmt.Fprintln(d.out, "--the program finished--")
		if d.real != nil && realState != nil {
			fmt.Fprintf(d.out, "!! real:  %s\n", describe(d.s, *realState))
		}
	case err != nil:
		fmt.Fprintf(d.out, "*** %v\n", err)
	default:
		d.show(realState)
	}
}

// show prints the current state; with --compare, the real one beside,
// marking each difference with "!!".
func (d *debugger) show(realState *ndbg.State) {
	st, ok := d.s.State()
	if !ok {
		fmt.Fprintln(d.out, "--the program finished--")
		return
	}
	fmt.Fprintf(d.out, "> %s\n", describe(d.s, st))
	if st.Event == dsl.Call || st.Event == dsl.Line {
		for _, l := range st.Locals {
			fmt.Fprintf(d.out, "    %s = %s\n", l.Name, l.Repr)
		}
	}
	if d.real == nil {
		return
	}
	if realState == nil {
		if len(d.s.Trajectory().Steps) > 0 {
			fmt.Fprintln(d.out, "!! real:  the program finished")
			return
		}
		r, ok := d.real.State()
		if !ok {
			return
		}
		realState = &r
	}
	m := ndbg.Compare(&st, realState)
	if m.All {
		fmt.Fprintln(d.out, "== real:  the same")
		return
	}
	fmt.Fprintf(d.out, "!! real:  %s\n", describe(d.s, *realState))
	if !m.Locals {
		pred := map[string]string{}
		for _, l := range st.Locals {
			pred[l.Name] = l.Repr
		}
		for _, l := range realState.Locals {
			if v, ok := pred[l.Name]; !ok || v != l.Repr {
				fmt.Fprintf(d.out, "!!  %s = %s (predicted %s)\n", l.Name, l.Repr, orMissing(v, ok))
			}
		}
	}
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

func (d *debugger) print(name string) {
	st, ok := d.s.State()
	if !ok {
		fmt.Fprintln(d.out, "*** the program finished")
		return
	}
	if name == "" {
		for _, l := range st.Locals {
			fmt.Fprintf(d.out, "%s = %s\n", l.Name, l.Repr)
		}
		return
	}
	for _, l := range st.Locals {
		if l.Name == name {
			fmt.Fprintln(d.out, l.Repr)
			return
		}
	}
	if st.Event == dsl.Return || st.Event == dsl.Exception {
		fmt.Fprintf(d.out, "*** a %s state shows no locals (its value: %s)\n", st.Event, st.Value)
		return
	}
	fmt.Fprintf(d.out, "*** no local %q here\n", name)
}

// list shows the source around the current line, with the current line
// (->) and breakpoints (B) marked.
func (d *debugger) list() {
	p := d.s.Program()
	cur := 0
	if st, ok := d.s.State(); ok {
		cur = st.Line
	}
	bps := map[int]bool{}
	for _, b := range d.s.Breakpoints() {
		bps[b] = true
	}
	from, to := max(1, cur-5), min(len(p.Lines), max(cur, 1)+5)
	if cur == 0 {
		from, to = 1, len(p.Lines)
	}
	for n := from; n <= to; n++ {
		mark := "  "
		if n == cur {
			mark = "->"
		}
		b := " "
		if bps[n] {
			b = "B"
		}
		fmt.Fprintf(d.out, "%3d %s%s %s\n", n, b, mark, d.s.UserLine(n))
	}
}

func (d *debugger) where() {
	stack := d.s.Stack()
	if stack == nil {
		if d.s.Finished() {
			fmt.Fprintln(d.out, "*** the program finished")
		} else {
			fmt.Fprintln(d.out, "*** the call stack is unknown after a jump (the model's text does not say how deep it is)")
		}
		return
	}
	for i, l := range stack {
		fmt.Fprintf(d.out, "%s%s\n", strings.Repeat("  ", i), strings.TrimSpace(d.s.UserLine(l)))
	}
}
