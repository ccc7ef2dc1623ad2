package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
)

// runTrace is `ndbg trace FILE --call EXPR [--format json|dsl]`: the real
// debugger states of one call, traced with sys.settrace (package trace), as
// JSON Lines (one object per state, then one saying why the trace ended:
// traceEnd) or as the DSL text of the linear step_into trajectory from the
// entry's call state. It fails (exit status 1, after the states) when an
// exception escapes the entry or a limit cuts the run.
func runTrace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	call := fs.String("call", "", `the call to trace, e.g. 'f(3, [1, 2])' (required; its function is the entry)`)
	format := fs.String("format", "json", "output: json (JSON Lines: one object per state, then one saying why the trace ended) or dsl (the step_into trajectory as DSL text)")
	var lim trace.Limits
	cli.RegisterLimits(fs, &lim)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ndbg trace FILE --call EXPR [--format json|dsl]   (FILE - reads stdin)")
		fs.PrintDefaults()
	}
	// Flags may come before or after FILE.
	var pos []string
	for {
		if err := cli.Parse(fs, args); err != nil {
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
		return cli.Usagef("need exactly one program file, got %d", len(pos))
	}
	if *format != "json" && *format != "dsl" {
		return cli.Usagef("unknown --format %q (want json or dsl)", *format)
	}
	if strings.TrimSpace(*call) == "" {
		return cli.Usagef("need --call, e.g. --call 'f(3)'")
	}
	if err := cli.CheckCall(*call); err != nil {
		return err
	}
	entry, err := ndbg.EntryOf(*call)
	if err != nil {
		return err
	}
	src, err := cli.ReadFile(ctx, "the program", pos[0])
	if err != nil {
		return err
	}
	prog, err := dsl.NewProgram(src, entry)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	if lim.Timeout < 0 || lim.MaxEvents < 0 {
		return cli.Usagef("--timeout and --max-events cannot be negative")
	}
	res, runErr := trace.Run(ctx, prog, *call, lim)
	var end traceEnd
	switch {
	case errors.Is(runErr, trace.ErrTimeout):
		end = traceEnd{End: "limit", Limit: "timeout"}
	case errors.Is(runErr, trace.ErrMemory):
		end = traceEnd{End: "limit", Limit: "memory"}
	case runErr != nil:
		return fmt.Errorf("tracing %s: %w", *call, runErr)
	}
	w := bufio.NewWriter(stdout)
	if res != nil {
		tree, err := statetree.Build(prog, res.Events)
		if err != nil {
			return err
		}
		if *format == "dsl" {
			err = writeDSL(w, tree)
		} else {
			err = writeJSON(w, tree, dsl.UserLines(string(src)))
		}
		if err != nil {
			return err
		}
		end = endOf(res, tree, lim)
	}
	if *format == "json" {
		b, err := json.Marshal(end)
		if err != nil {
			return fmt.Errorf("encoding the end record: %w", err)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("writing the end record: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return end.err(*call, runErr)
}

// traceEnd is the last JSON record of `ndbg trace`: why the trace ended.
// End is "finished" (the entry returned Value), "exception" (Type escaped
// the entry at Line, raised at RaisedAt) or "limit" (Limit cut the run:
// max-events, max-output-bytes, timeout or memory). States counts the state
// records before it.
type traceEnd struct {
	End      string  `json:"end"`
	States   int     `json:"states"`
	Value    *string `json:"value,omitempty"`
	Type     string  `json:"type,omitempty"`
	Message  *string `json:"message,omitempty"`
	Line     int     `json:"line,omitempty"`
	RaisedAt int     `json:"raised_at,omitempty"`
	Limit    string  `json:"limit,omitempty"`
	// Stdout and Stderr are what the program wrote (as text, invalid
	// UTF-8 replaced), each kept up to 64 KiB (trace.Limits.MaxStdout); OutputCut names
	// the streams the program wrote more to.
	Stdout    string   `json:"stdout,omitempty"`
	Stderr    string   `json:"stderr,omitempty"`
	OutputCut []string `json:"output_cut,omitempty"`
}

// endOf says how a traced run ended. An escaping exception is reported at
// the entry's line where it left, and at the innermost line that raised it.
func endOf(res *trace.Result, tree *statetree.Tree, lim trace.Limits) traceEnd {
	e := traceEnd{End: "finished", States: tree.End(),
		Stdout: strings.ToValidUTF8(string(res.Stdout), "\uFFFD"), Stderr: strings.ToValidUTF8(string(res.Stderr), "\uFFFD")}
	if res.StdoutTruncated {
		e.OutputCut = append(e.OutputCut, "stdout")
	}
	if res.StderrTruncated {
		e.OutputCut = append(e.OutputCut, "stderr")
	}
	switch {
	case res.Truncated:
		e.End, e.Limit = "limit", "max-output-bytes"
		if len(res.Events) >= lim.WithDefaults().MaxEvents {
			e.Limit = "max-events"
		}
	case res.Exception != nil:
		e.End, e.Type, e.Message, e.RaisedAt = "exception", res.Exception.Type, &res.Exception.Message, res.Exception.Line
		for i := tree.End() - 1; i >= 0; i-- {
			if ev := tree.Event(i); ev.Depth == 0 {
				e.Line = ev.Line // the entry's return event: where it left
				break
			}
		}
	default:
		e.Value = &res.Return
	}
	return e
}

// err is the command's error for a run that did not finish: its exit
// status is then 1. runErr is the tracer's error, if any.
func (e traceEnd) err(call string, runErr error) error {
	switch e.End {
	case "exception":
		return fmt.Errorf("%s (raised at line %d) escaped %s at line %d: %s", e.Type, e.RaisedAt, call, e.Line, *e.Message)
	case "limit":
		switch e.Limit {
		case "timeout":
			return fmt.Errorf("tracing %s: %w (raise --timeout if the program does end)", call, runErr)
		case "memory":
			return fmt.Errorf("tracing %s: %w (the traced program's memory is capped)", call, runErr)
		case "max-events":
			return fmt.Errorf("the trace of %s was cut at %d states (raise --max-events if the program does end)", call, e.States)
		}
		return fmt.Errorf("the trace of %s was cut at %d states: it grew past its size limit", call, e.States)
	}
	return nil
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
