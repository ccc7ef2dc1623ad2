package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
)

// breakpoint is one of pdb's numbered breakpoints. The session holds the
// lines of the enabled ones; the debugger holds the rest (number,
// condition, temporary, enabled, hits).
type breakpoint struct {
	num, line int    // line: where it stops
	at        int    // the line pdb names: line, or the def line of break FUNCTION
	fn        string // break FUNCTION's function; "" for a line
	cond      string
	temp      bool
	enabled   bool
	hits      int
	ignore    int      // stops to pass over (pdb's ignore)
	commands  []string // run when it stops (pdb's commands)
}

// loc is how pdb names a breakpoint's place: FILE:LINE.
func (d *debugger) loc(line int) string { return fmt.Sprintf("%s:%d", d.file, line) }

// syncBreakpoints gives the session the lines of the enabled breakpoints.
func (d *debugger) syncBreakpoints() {
	d.s.ClearBreakpoint(0)
	for _, b := range d.bps {
		if b.enabled {
			_ = d.s.SetBreakpoint(b.line) // checked when it was made
		}
	}
	if d.real != nil {
		d.real.ClearBreakpoint(0)
		for _, l := range d.s.Breakpoints() {
			_ = d.real.SetBreakpoint(l)
		}
	}
}

// breakCmd is pdb's break and tbreak: no argument lists the breakpoints;
// LINE, FILE:LINE or FUNCTION, then optionally ", CONDITION".
func (d *debugger) breakCmd(arg string, temp bool) {
	if arg == "" {
		d.listBreakpoints()
		return
	}
	where, cond, _ := strings.Cut(arg, ",")
	where, cond = strings.TrimSpace(where), strings.TrimSpace(cond)
	if i := strings.LastIndex(where, ":"); i >= 0 {
		where = where[i+1:] // one file: its name adds nothing
	}
	line, err := strconv.Atoi(where)
	at, fn := line, ""
	if err != nil {
		fn = where
		var ok bool
		if at, line, ok = d.s.FunctionLine(where); !ok {
			fmt.Fprintf(d.out, "*** The specified object '%s' is not a function or was not found along sys.path.\n", where)
			return
		}
	} else if why := d.noBreakLine(line); why != "" {
		fmt.Fprintln(d.out, why)
		return
	}
	if err := d.s.SetBreakpoint(line); err != nil {
		fmt.Fprintf(d.out, "*** %v\n", err)
		return
	}
	d.nextBP++
	d.bps = append(d.bps, &breakpoint{num: d.nextBP, line: line, at: at, fn: fn, cond: cond, temp: temp, enabled: true})
	d.syncBreakpoints()
	fmt.Fprintf(d.out, "Breakpoint %d at %s\n", d.nextBP, d.loc(at))
}

// noBreakLine is pdb's answer refusing a breakpoint on line n (its
// checkline, in its words): past the end of the file, or blank, a comment
// or the start of a docstring; "" when pdb would set it. (SetBreakpoint refuses the
// other lines that run no code, which pdb sets but never stops at.)
func (d *debugger) noBreakLine(n int) string {
	if n < 1 || n > len(d.s.Program().Lines) {
		return "End of file"
	}
	text := strings.TrimSpace(d.s.UserLine(n))
	if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, `"""`) || strings.HasPrefix(text, "'''") {
		return "*** Blank or comment"
	}
	return ""
}

// listBreakpoints prints the table pdb's break prints.
func (d *debugger) listBreakpoints() {
	if len(d.bps) == 0 {
		return
	}
	fmt.Fprintln(d.out, "Num Type         Disp Enb   Where")
	for _, b := range d.bps {
		disp, enb := "keep", "no "
		if b.temp {
			disp = "del "
		}
		if b.enabled {
			enb = "yes"
		}
		fmt.Fprintf(d.out, "%-3d breakpoint   %s %s   at %s\n", b.num, disp, enb, d.loc(b.at))
		if b.cond != "" {
			fmt.Fprintf(d.out, "\tstop only if %s\n", b.cond)
		}
		if b.ignore > 0 {
			fmt.Fprintf(d.out, "\tignore next %d hits\n", b.ignore)
		}
		if b.hits > 0 {
			s := "s"
			if b.hits == 1 {
				s = ""
			}
			fmt.Fprintf(d.out, "\tbreakpoint already hit %d time%s\n", b.hits, s)
		}
	}
}

// byNumbers returns the breakpoints numbered in arg (space-separated), and
// says which numbers are not breakpoints.
func (d *debugger) byNumbers(arg string) []*breakpoint {
	var bs []*breakpoint
	for _, f := range strings.Fields(arg) {
		n, err := strconv.Atoi(f)
		i := slices.IndexFunc(d.bps, func(b *breakpoint) bool { return b.num == n })
		switch {
		case err != nil:
			fmt.Fprintf(d.out, "*** Invalid breakpoint number %s\n", f)
		case i < 0:
			fmt.Fprintf(d.out, "*** Breakpoint %d does not exist\n", n)
		default:
			bs = append(bs, d.bps[i])
		}
	}
	return bs
}

// enable is pdb's enable and disable.
func (d *debugger) enable(arg string, on bool) {
	verb := "Disabled"
	if on {
		verb = "Enabled"
	}
	for _, b := range d.byNumbers(arg) {
		b.enabled = on
		fmt.Fprintf(d.out, "%s breakpoint %d at %s\n", verb, b.num, d.loc(b.at))
	}
	d.syncBreakpoints()
}

// clear is pdb's clear: breakpoint numbers, FILE:LINE, or (without asking,
// unlike pdb) every breakpoint.
func (d *debugger) clear(arg string) {
	var gone []*breakpoint
	if _, l, ok := strings.Cut(arg, ":"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil {
			fmt.Fprintf(d.out, "*** Invalid line number (%s)\n", l)
			return
		}
		for _, b := range d.bps {
			if b.at == n {
				gone = append(gone, b)
			}
		}
		if len(gone) == 0 {
			fmt.Fprintf(d.out, "*** There are no breakpoints at %s\n", d.loc(n))
		}
	} else if arg == "" {
		gone = d.bps
	} else {
		gone = d.byNumbers(arg)
	}
	for _, b := range gone {
		d.deleteBP(b)
	}
}

func (d *debugger) deleteBP(b *breakpoint) {
	d.bps = slices.DeleteFunc(d.bps, func(x *breakpoint) bool { return x == b })
	d.syncBreakpoints()
	fmt.Fprintf(d.out, "Deleted breakpoint %d at %s\n", b.num, d.loc(b.at))
}

// fires is bdb's effective(): whether a breakpoint at st's line stops there.
// Each enabled breakpoint there counts a hit; the first with no condition,
// or whose condition is true in the frame (or cannot be evaluated, as in
// pdb), stops unless it is to be ignored this time, and a temporary one is
// deleted.
func (d *debugger) fires(ctx context.Context, st ndbg.State) bool {
	b := d.firing(ctx, d.s, st, true)
	if b != nil {
		d.hit = b
		if b.temp {
			d.deleteBP(b)
		}
	}
	return b != nil
}

// firing returns the breakpoint that stops sess at st, nil if none; count
// says whether to count the hits and ignores (not for the real run
// --compare follows).
func (d *debugger) firing(ctx context.Context, sess *ndbg.Session, st ndbg.State, count bool) *breakpoint {
	if st.Event != dsl.Line {
		return nil
	}
	for _, b := range d.bps {
		if !b.enabled || b.line != st.Line || (b.fn != "" && !sess.InFunction(b.fn)) {
			continue // break FUNCTION stops in the function's own frame only
		}
		if count {
			b.hits++
		}
		if b.cond != "" {
			f := ndbg.Frame{Line: st.Line, Locals: st.Locals, LocalsKnown: true}
			res, err := d.evalIn(ctx, sess, 0, f, b.cond, ndbg.EvalBool)
			if err == nil && res.Error == "" && res.Value == "False" {
				continue
			}
		}
		if b.ignore > 0 {
			if count {
				b.ignore--
			}
			continue
		}
		return b
	}
	return nil
}

// condition is pdb's condition: N COND sets breakpoint N's condition, N
// alone removes it.
func (d *debugger) condition(arg string) {
	num, cond, _ := strings.Cut(arg, " ")
	bs := d.byNumbers(num)
	if len(bs) == 0 {
		if num == "" {
			fmt.Fprintln(d.out, "*** Usage: condition bpnumber [condition]")
		}
		return
	}
	bs[0].cond = strings.TrimSpace(cond)
	if bs[0].cond == "" {
		fmt.Fprintf(d.out, "Breakpoint %d is now unconditional.\n", bs[0].num)
		return
	}
	fmt.Fprintf(d.out, "New condition set for breakpoint %d.\n", bs[0].num)
}

// ignoreCmd is pdb's ignore: N COUNT passes over breakpoint N's next COUNT
// stops.
func (d *debugger) ignoreCmd(arg string) {
	num, count, _ := strings.Cut(arg, " ")
	bs := d.byNumbers(num)
	if len(bs) == 0 {
		if num == "" {
			fmt.Fprintln(d.out, "*** Usage: ignore bpnumber [count]")
		}
		return
	}
	n := 0
	if c := strings.TrimSpace(count); c != "" {
		var err error
		if n, err = strconv.Atoi(c); err != nil {
			fmt.Fprintf(d.out, "*** Error in argument: %q\n", c)
			return
		}
	}
	b := bs[0]
	b.ignore = max(n, 0)
	switch {
	case b.ignore == 0:
		fmt.Fprintf(d.out, "Will stop next time breakpoint %d is reached.\n", b.num)
	case b.ignore == 1:
		fmt.Fprintf(d.out, "Will ignore next 1 crossing of breakpoint %d.\n", b.num)
	default:
		fmt.Fprintf(d.out, "Will ignore next %d crossings of breakpoint %d.\n", b.ignore, b.num)
	}
}
