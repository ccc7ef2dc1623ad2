package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
)

// runTrace is `ndbg trace FILE --call EXPR [--format json|dsl]`: the real
// debugger states of one call, traced with sys.settrace (package trace), as
// JSON Lines (one object per state) or as the DSL text of the linear
// step_into trajectory from the entry's call state.
func runTrace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	call := fs.String("call", "", `the call to trace, e.g. 'f(3, [1, 2])' (required; its function is the entry)`)
	format := fs.String("format", "json", "output: json (JSON Lines, one object per state) or dsl (the step_into trajectory as DSL text)")
	timeout := fs.Duration("timeout", 0, "wall-clock limit of the traced program (default trace's 5s)")
	maxEvents := fs.Int("max-events", 0, "cap on the number of states (default trace's 100000)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ndbg trace FILE --call EXPR [--format json|dsl]   (FILE - reads stdin)")
		fs.PrintDefaults()
	}
	// Flags may come before or after FILE.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("need exactly one program file, got %d", len(pos))
	}
	if *format != "json" && *format != "dsl" {
		return fmt.Errorf("unknown --format %q (want json or dsl)", *format)
	}
	if strings.TrimSpace(*call) == "" {
		return errors.New("need --call, e.g. --call 'f(3)'")
	}
	entry, err := ndbg.EntryOf(*call)
	if err != nil {
		return err
	}
	var src []byte
	if pos[0] == "-" {
		src, err = io.ReadAll(os.Stdin)
	} else {
		src, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return fmt.Errorf("reading program: %w", err)
	}
	prog, err := dsl.NewProgram(string(src), entry)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	res, err := trace.Run(ctx, prog, *call, trace.Limits{Timeout: *timeout, MaxEvents: *maxEvents})
	if err != nil {
		return fmt.Errorf("tracing %s: %w", *call, err)
	}
	if res.Truncated {
		fmt.Fprintf(stderr, "ndbg trace: warning: trace cut at %d states (a limit was reached)\n", len(res.Events))
	}
	if ex := res.Exception; ex != nil {
		fmt.Fprintf(stderr, "ndbg trace: %s escaped the entry at line %d: %s\n", ex.Type, ex.Line, ex.Message)
	}
	tree, err := statetree.Build(prog, res.Events)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	if *format == "dsl" {
		err = writeDSL(w, tree)
	} else {
		err = writeJSON(w, tree, dsl.UserLines(string(src)))
	}
	if err != nil {
		return err
	}
	return w.Flush()
}

// writeJSON writes one JSON object per state: index, event, line, source
// (the user's line, from user: dsl.UserLines), depth, func, locals (name to
// repr, in Python's order; for return and exception states the final
// locals) and, for return and exception, value.
func writeJSON(w io.Writer, tree *statetree.Tree, user []string) error {
	var b []byte
	for i := 0; i < tree.End(); i++ {
		e := tree.Event(i)
		b = append(b[:0], `{"index":`...)
		b = fmt.Appendf(b, "%d", i)
		b = appendField(b, "event", e.Kind.String())
		b = fmt.Appendf(b, `,"line":%d`, e.Line)
		source := ""
		if e.Line >= 1 && e.Line <= len(user) {
			source = user[e.Line-1]
		}
		b = appendField(b, "source", source)
		b = fmt.Appendf(b, `,"depth":%d`, e.Depth)
		b = appendField(b, "func", e.Func)
		b = append(b, `,"locals":{`...)
		for j, l := range e.Locals {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, l.Name)
			b = append(b, ':')
			b = appendJSON(b, l.Repr)
		}
		b = append(b, '}')
		if e.Kind == dsl.Return || e.Kind == dsl.Exception {
			b = appendField(b, "value", e.Value)
		}
		b = append(b, "}\n"...)
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("writing state %d: %w", i, err)
		}
	}
	return nil
}

func appendField(b []byte, name, value string) []byte {
	b = append(b, ',')
	b = appendJSON(b, name)
	b = append(b, ':')
	return appendJSON(b, value)
}

// appendJSON appends s as a JSON string (invalid UTF-8 becomes U+FFFD).
func appendJSON(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// writeDSL writes the linear trajectory: the entry's call state, then
// step_into to every following state and past the end. The text is exactly
// what dsl.Trajectory.Encode writes (no newline after <|end_of_text|>).
func writeDSL(w io.Writer, tree *statetree.Tree) error {
	traj := dsl.Trajectory{Program: tree.Program(), Start: tree.State(0)}
	states := make([]dsl.State, tree.End())
	for i := 1; i <= tree.End(); i++ {
		st := dsl.Step{Action: dsl.Action{Kind: dsl.StepInto}}
		if i < tree.End() {
			states[i] = tree.State(i)
			st.State = &states[i]
		}
		traj.Steps = append(traj.Steps, st)
	}
	text, err := traj.Encode()
	if err != nil {
		return fmt.Errorf("encoding the trajectory: %w", err)
	}
	if _, err := io.WriteString(w, text); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return nil
}
