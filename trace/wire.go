package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ndbg/ndbg/dsl"
)

// The wire format between tracer.py and Go: ASCII JSON lines, one object
// each, on dedicated pipes (never the program's stdout). Decoding is strict:
// unknown fields, trailing data, non-ASCII bytes and out-of-range values are
// errors.

// request asks the tracer to trace one program (Go to Python, fd 4).
type request struct {
	ID        int     `json:"id"`
	Source    string  `json:"source"`
	Entry     string  `json:"entry"`
	Call      string  `json:"call"`
	Timeout   float64 `json:"timeout"`
	MaxEvents int     `json:"max_events"`
	MaxBytes  int     `json:"max_bytes"`
	MaxStdout int     `json:"max_stdout"`
	// NoExec asks for the entry's call event built from the program's text
	// (CallEvent): nothing of the program runs.
	NoExec bool `json:"no_exec,omitempty"`
}

// wireHello is the tracer's first line.
type wireHello struct {
	T       string `json:"t"`
	Version string `json:"version"`
}

// wireEvent is one event; Kind numbers are dsl.Event's.
type wireEvent struct {
	E int      `json:"e"`           // kind
	L int      `json:"l"`           // line
	D int      `json:"d"`           // depth
	F int      `json:"f"`           // frame (invocation id)
	N string   `json:"n"`           // co_name
	A []string `json:"a"`           // locals: name, repr, name, repr, ...
	U []int    `json:"u,omitempty"` // indices of locals whose repr is unchanged since the frame's last event (sent as "")
	R *string  `json:"r,omitempty"` // value (return, exception only)
	O *int     `json:"o,omitempty"` // bytes written to stdout before it, where changed since the last event
	X *int     `json:"x,omitempty"` // the same for stderr
}

type wireExc struct {
	Type string `json:"type"`
	Msg  string `json:"msg"`
	Line int    `json:"line"`
}

// wireResult is the tracer's answer to one request.
type wireResult struct {
	T           string      `json:"t"`
	ID          int         `json:"id"`
	Status      string      `json:"status"`
	Events      []wireEvent `json:"events"`
	Ret         *string     `json:"ret"`
	Exc         *wireExc    `json:"exc"`
	Stdout      []byte      `json:"stdout"` // base64
	StdoutTrunc bool        `json:"stdout_trunc"`
	Stderr      []byte      `json:"stderr"` // base64
	StderrTrunc bool        `json:"stderr_trunc"`
	Msg         string      `json:"msg"`
	Line        int         `json:"line"`
	// Retire says the interpreter ends after this result (the program left
	// threads running), so queued requests go to a fresh one.
	Retire bool `json:"retire,omitempty"`
}

// decodeStrict decodes exactly one JSON value of ASCII text into v.
func decodeStrict(data []byte, v any) error {
	for i, c := range data {
		if c >= 0x80 {
			return fmt.Errorf("non-ASCII byte 0x%02x at offset %d", c, i)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func decodeHello(data []byte) (string, error) {
	var h wireHello
	if err := decodeStrict(data, &h); err != nil {
		return "", fmt.Errorf("hello: %w", err)
	}
	if h.T != "hello" || h.Version == "" {
		return "", fmt.Errorf("hello: want t=hello and a version, got t=%q version=%q", h.T, h.Version)
	}
	return h.Version, nil
}

var statuses = map[string]bool{
	"returned": true, "raised": true, "truncated": true, "timeout": true, "memory": true,
	"syntax": true, "setup": true, "forbidden": true, "tracer": true,
}

// decodeResult decodes and validates one result line.
func decodeResult(data []byte) (*wireResult, error) {
	w, err := parseResult(data)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	if w.T != "result" {
		return nil, fmt.Errorf("result: t=%q", w.T)
	}
	if !statuses[w.Status] {
		return nil, fmt.Errorf("result: unknown status %q", w.Status)
	}
	if (w.Status == "returned") != (w.Ret != nil) {
		return nil, fmt.Errorf("result: status %s with ret present=%v", w.Status, w.Ret != nil)
	}
	if w.Status == "raised" && w.Exc == nil {
		return nil, errors.New("result: status raised without exc")
	}
	if w.Line < 0 || (w.Exc != nil && w.Exc.Line < 0) {
		return nil, errors.New("result: negative line")
	}
	for i := range w.Events {
		if err := w.Events[i].check(); err != nil {
			return nil, fmt.Errorf("result: event %d: %w", i, err)
		}
	}
	return w, nil
}

func (e *wireEvent) check() error {
	k := dsl.Event(e.E)
	switch {
	case k < dsl.Call || k > dsl.Exception:
		return fmt.Errorf("kind %d", e.E)
	case e.L < 1:
		return fmt.Errorf("line %d", e.L)
	case e.D < 0:
		return fmt.Errorf("depth %d", e.D)
	case e.F < 1:
		return fmt.Errorf("frame %d", e.F)
	case e.N == "":
		return errors.New("empty function name")
	case e.O != nil && *e.O < 0, e.X != nil && *e.X < 0:
		return errors.New("negative output count")
	case len(e.A)%2 != 0:
		return fmt.Errorf("odd locals list (%d strings)", len(e.A))
	case (k == dsl.Return || k == dsl.Exception) != (e.R != nil):
		return fmt.Errorf("%v event with value present=%v", k, e.R != nil)
	}
	for i := 0; i < len(e.A); i += 2 {
		if e.A[i] == "" {
			return errors.New("empty local name")
		}
	}
	for i, u := range e.U {
		if u < 0 || 2*u >= len(e.A) || (i > 0 && u <= e.U[i-1]) {
			return fmt.Errorf("unchanged-local indices %v out of order or range", e.U)
		}
		if e.A[2*u+1] != "" {
			return fmt.Errorf("unchanged local %d carries a repr", u)
		}
	}
	return nil
}

// result converts a decoded result into the API's terms: a Result, or an
// *Error for the statuses that have no truthful trace.
func (w *wireResult) result(version string) (*Result, error) {
	switch w.Status {
	case "timeout":
		return nil, &Error{Kind: ErrTimeout, Msg: w.Msg}
	case "memory":
		return nil, &Error{Kind: ErrMemory, Msg: w.Msg}
	case "syntax":
		return nil, &Error{Kind: ErrSyntax, Msg: w.Msg, Line: w.Line}
	case "setup":
		return nil, &Error{Kind: ErrSetup, Msg: w.Msg}
	case "forbidden":
		return nil, &Error{Kind: ErrForbidden, Msg: w.Msg}
	case "tracer":
		return nil, &Error{Kind: ErrTracer, Msg: w.Msg}
	}
	r := &Result{
		Events:          make([]Event, len(w.Events)),
		Stdout:          w.Stdout,
		StdoutTruncated: w.StdoutTrunc,
		Stderr:          w.Stderr,
		StderrTruncated: w.StderrTrunc,
		Truncated:       w.Status == "truncated",
		Python:          version,
	}
	// The last repr sent for each frame's locals: the wire sends an
	// unchanged repr once per frame, and the events share its string.
	last := map[int]map[string]string{}
	out, errOut := 0, 0 // output written so far: sent only where it changed
	for i, e := range w.Events {
		if e.O != nil {
			if *e.O < out {
				return nil, &Error{Kind: ErrProtocol, Msg: fmt.Sprintf("event %d: stdout count %d below %d", i, *e.O, out)}
			}
			out = *e.O
		}
		if e.X != nil {
			if *e.X < errOut {
				return nil, &Error{Kind: ErrProtocol, Msg: fmt.Sprintf("event %d: stderr count %d below %d", i, *e.X, errOut)}
			}
			errOut = *e.X
		}
		ev := Event{Kind: dsl.Event(e.E), Line: e.L, Depth: e.D, Frame: e.F, Func: e.N, Stdout: out, Stderr: errOut}
		seen := last[e.F]
		if seen == nil {
			seen = map[string]string{}
			last[e.F] = seen
		}
		if len(e.A) > 0 {
			ev.Locals = make([]dsl.Local, len(e.A)/2)
			u := e.U
			for j := range ev.Locals {
				name, repr := e.A[2*j], e.A[2*j+1]
				if len(u) > 0 && u[0] == j {
					u = u[1:]
					prev, ok := seen[name]
					if !ok {
						return nil, &Error{Kind: ErrProtocol, Msg: fmt.Sprintf("event %d: local %q unchanged but never sent", i, name)}
					}
					repr = prev
				} else {
					seen[name] = repr
				}
				ev.Locals[j] = dsl.Local{Name: name, Repr: repr}
			}
		}
		if e.R != nil {
			ev.Value = *e.R
		}
		r.Events[i] = ev
	}
	switch w.Status {
	case "returned":
		r.Return = *w.Ret
	case "raised":
		r.Exception = &Exception{Type: w.Exc.Type, Message: w.Exc.Msg, Line: w.Exc.Line}
	}
	return r, nil
}
