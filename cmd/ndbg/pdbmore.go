package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg"
)

// maxAliasDepth bounds the expansion of aliases that name aliases (pdb
// stops at an alias that names itself).
const maxAliasDepth = 20

// expandAlias replaces a line's first word while it is an alias, as pdb
// does: %1..%9 are the line's arguments, %* all of them.
func (d *debugger) expandAlias(line string) string {
	for range maxAliasDepth {
		args := strings.Fields(line)
		if len(args) == 0 {
			return line
		}
		def, ok := d.aliases[args[0]]
		if !ok {
			return line
		}
		for i, a := range args[1:] {
			def = strings.ReplaceAll(def, "%"+strconv.Itoa(i+1), a)
		}
		def = strings.ReplaceAll(def, "%*", strings.Join(args[1:], " "))
		if first, _, _ := strings.Cut(def, " "); first == args[0] {
			return def
		}
		line = def
	}
	return line
}

// alias is pdb's alias: none lists them, NAME shows one, NAME COMMAND
// defines it.
func (d *debugger) alias(arg string) {
	name, def, _ := strings.Cut(arg, " ")
	def = strings.TrimSpace(def)
	switch {
	case name == "":
		names := make([]string, 0, len(d.aliases))
		for n := range d.aliases {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(d.out, "%s = %s\n", n, d.aliases[n])
		}
	case def == "":
		if v, ok := d.aliases[name]; ok {
			fmt.Fprintf(d.out, "%s = %s\n", name, v)
		} else {
			fmt.Fprintf(d.out, "*** Unknown alias '%s'\n", name)
		}
	default:
		d.aliases[name] = def
	}
}

// unalias is pdb's unalias.
func (d *debugger) unalias(arg string) {
	name := strings.TrimSpace(arg)
	if name == "" {
		fmt.Fprintln(d.out, "*** Usage: unalias name")
		return
	}
	delete(d.aliases, name)
}

// commandsCmd is pdb's commands: the lines that follow, up to "end", run
// when breakpoint N (the last one made, without N) stops the program.
func (d *debugger) commandsCmd(arg string) {
	var b *breakpoint
	if arg == "" {
		if len(d.bps) > 0 {
			b = d.bps[len(d.bps)-1]
		}
	} else if bs := d.byNumbers(arg); len(bs) > 0 {
		b = bs[0]
	}
	if b == nil {
		if arg == "" {
			fmt.Fprintln(d.out, "*** Usage: commands [bnum]")
		}
		return
	}
	d.defining, d.defined = b, nil
}

// define takes one line of a commands list; "end" ends it.
func (d *debugger) define(line string) {
	if strings.TrimSpace(line) == "end" {
		d.defining.commands, d.defining = d.defined, nil
		return
	}
	d.defined = append(d.defined, strings.TrimSpace(line))
	// A command that resumes the program ends the list, as in pdb.
	if verb, _, _ := strings.Cut(strings.TrimSpace(line), " "); resumes(verb) {
		d.defining.commands, d.defining = d.defined, nil
	}
}

// resumes reports whether a command takes the program on (and so ends a
// breakpoint's commands).
func resumes(verb string) bool {
	switch verb {
	case "s", "step", "n", "next", "r", "return", "c", "cont", "continue", "unt", "until", "j", "jump", "q", "quit", "exit", "to":
		return true
	}
	return false
}

// silent reports whether a breakpoint's commands begin with silent: its
// stop is not shown.
func silent(b *breakpoint) bool {
	return b != nil && len(b.commands) > 0 && b.commands[0] == "silent"
}

// runCommands queues the commands of the breakpoint that made the last
// stop, as pdb runs them before its prompt.
func (d *debugger) runCommands() {
	if d.hit == nil {
		return
	}
	for _, c := range d.hit.commands {
		if c != "silent" {
			d.pending = append(d.pending, c)
		}
	}
	d.hit = nil
}

// printLines is pdb's _print_lines: each line numbered, B at a
// breakpoint, -> at the frame's current line.
func (d *debugger) printLines(from, to, current int) {
	var bps []int // where pdb names them: a function's at its def line, enabled or not
	for _, b := range d.bps {
		bps = append(bps, b.at)
	}
	n := len(d.s.Program().Lines)
	for l := from; l <= to && l <= n; l++ {
		s := fmt.Sprintf("%3d", l)
		if len(s) < 4 {
			s += " "
		}
		if slices.Contains(bps, l) {
			s += "B"
		} else {
			s += " "
		}
		if l == current {
			s += "->"
		}
		fmt.Fprintf(d.out, "%s\t%s\n", s, strings.TrimRight(d.s.UserLine(l), " \t"))
	}
}

// list is pdb's list: no argument lists 11 lines around the current line,
// and then the next 11 each time; "l N" around N; "l FIRST, LAST" those
// lines (LAST below FIRST: a count); "l ." around the current line again.
func (d *debugger) list(arg string) {
	cur := 0
	if f, ok := d.selected(); ok {
		cur = f.Line
	}
	first, last := 0, -1
	switch {
	case arg != "" && arg != ".":
		a, b, two := strings.Cut(arg, ",")
		x, err := strconv.Atoi(strings.TrimSpace(a))
		y := 0
		if err == nil && two {
			y, err = strconv.Atoi(strings.TrimSpace(b))
		}
		if err != nil {
			fmt.Fprintf(d.out, "*** Error in argument: '%s'\n", arg)
			return
		}
		if two {
			first, last = x, y
			if last < first {
				last = first + last
			}
		} else {
			first = max(1, x-5)
		}
	case d.listed == 0 || arg == ".":
		first = max(1, cur-5)
	default:
		first = d.listed + 1
	}
	if last < 0 {
		last = first + 10
	}
	n := len(d.s.Program().Lines)
	d.printLines(first, last, cur)
	d.listed = min(last, n)
	if n < last {
		fmt.Fprintln(d.out, "[EOF]")
	}
}

// longlist is pdb's ll: the whole source of the selected frame's function
// (a script's module frame: the whole file).
func (d *debugger) longlist() {
	f, ok := d.selected()
	if !ok {
		fmt.Fprintln(d.out, "*** the program finished")
		return
	}
	p := d.s.Program()
	def := p.FuncOf(f.Line)
	if def == 0 { // module code
		d.printLines(1, len(p.Lines), f.Line)
		return
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	top := indent(d.s.UserLine(def))
	end := def
	for l := def + 1; l <= len(p.Lines); l++ {
		text := d.s.UserLine(l)
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || indent(text) <= top && strings.HasPrefix(trimmed, "#") {
			continue // blank lines and comments end no block
		}
		if indent(text) <= top && !strings.HasPrefix(trimmed, ")") {
			break
		}
		end = l
	}
	d.printLines(def, end, f.Line)
}

// args is pdb's a: the selected frame's arguments.
func (d *debugger) args(ctx context.Context) {
	f, ok := d.selected()
	if !ok {
		fmt.Fprintln(d.out, "*** the program finished")
		return
	}
	if v, ok := d.evalPrint(ctx, f, "", ndbg.EvalArgs); ok && v != "" {
		fmt.Fprintln(d.out, v)
	}
}

// whatis is pdb's whatis: what kind of thing an expression's value is.
func (d *debugger) whatis(ctx context.Context, expr string) {
	f, ok := d.selected()
	if !ok {
		fmt.Fprintln(d.out, "*** the program finished")
		return
	}
	if v, ok := d.evalPrint(ctx, f, expr, ndbg.EvalWhatis); ok {
		fmt.Fprintln(d.out, v)
	}
}

// exec runs a line that is not a command (or follows !) as a Python
// statement in the selected frame, as pdb does: an expression statement's
// value is printed, an assignment changes the program.
func (d *debugger) exec(ctx context.Context, stmt string) {
	f, ok := d.selected()
	if !ok {
		fmt.Fprintln(d.out, "*** the program finished")
		return
	}
	if !d.live() {
		fmt.Fprintf(d.out, "*** %q is no command, and a statement needs the real backend: a prediction has no live program to run it in (h for help)\n", stmt)
		return
	}
	d.evalPrint(ctx, f, stmt, ndbg.EvalExec)
}
