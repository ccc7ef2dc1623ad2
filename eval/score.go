package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ndbg/ndbg/trace"
)

// Scorer runs CRUXEval's check by value, in two kinds of sandboxed python3
// processes (package trace's operating-system sandbox, trace.Script: no
// network, no host folders, no process creation, killed with its group;
// 3 s each by default):
//
//   - the item's process runs the item's code and then computes one value
//     (f of the predicted arguments for CRUXEval-I; the reference output
//     where it is not a literal) and reports its repr. It never sees a
//     prediction it is not given as its input, nor the reference output;
//   - the verdict's process, in which no item's code ever runs, parses the
//     two values as Python literals (ast.literal_eval) and compares them
//     with ==.
//
// So an item's code can change its own result (as any program can), never
// the verdict on a prediction: it cannot see or replace the prediction, the
// comparison or the verdict's channel. Predictions are data, never code: a
// predicted output or argument must be a Python literal, so
// "__import__('sys').exit(0)" is a wrong prediction rather than a way out; a
// result whose repr is no literal (an object of the item's own class) fails.
// A check that fails, raises, times out or gives no verdict is a failure,
// never an error. A Scorer is safe for concurrent use.
type Scorer struct {
	// Python is the interpreter; empty means python3 on PATH.
	Python string
	// Timeout is the wall-clock limit of each process (default 3 s).
	Timeout time.Duration
	// MaxMemory is the address-space limit in bytes (default 2 GiB).
	MaxMemory int64
	// Unsandboxed runs checks without the sandbox; only when the user asks
	// for it by name (trace.Limits.Unsandboxed).
	Unsandboxed bool
}

// Arg is one argument of a CRUXEval-I call: a Python expression (a repr),
// passed positionally, as *args, by keyword, or as **kwargs.
type Arg struct {
	Kind ArgKind
	Name string // the parameter name (keyword arguments)
	Repr string
}

// ArgKind says how an argument is passed.
type ArgKind uint8

// The ways of passing an argument.
const (
	Positional ArgKind = iota
	Star               // *args
	Keyword            // name=value
	StarStar           // **kwargs
)

// Call renders args as the text of a call of f, e.g. "f(1, *(2, 3), k='a')".
func Call(f string, args []Arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch a.Kind {
		case Star:
			parts[i] = "*" + a.Repr
		case Keyword:
			parts[i] = a.Name + "=" + a.Repr
		case StarStar:
			parts[i] = "**" + a.Repr
		default:
			parts[i] = a.Repr
		}
	}
	return f + "(" + strings.Join(parts, ", ") + ")"
}

// maxValue bounds the repr an item's process reports (a longer one fails).
const maxValue = 1 << 20

// valueScript is what the item's process runs: the item's code, then the
// repr of one value written to fd 3 (trace.Script has set the limits and
// closed every descriptor but stdio and fd 3). Its standard input is a JSON
// object: "code", the item's code, and either "expr", an expression over
// the item's globals, or "entry" and "args", a call of the item's function
// entry with arguments given as [kind, name, text] (kind "pos", "star",
// "kw" or "starstar"; each text parsed with ast.literal_eval before the
// item's code runs, so an argument that is no literal gives no value).
const valueScript = `import ast, json, os, sys
__ndbg_in = json.loads(sys.stdin.read())
__ndbg_pos, __ndbg_kw = [], {}
for __ndbg_kind, __ndbg_name, __ndbg_text in __ndbg_in.get("args", []):
    __ndbg_v = ast.literal_eval(__ndbg_text)
    if __ndbg_kind == "star":
        __ndbg_pos.extend(__ndbg_v)
    elif __ndbg_kind == "kw":
        __ndbg_kw[__ndbg_name] = __ndbg_v
    elif __ndbg_kind == "starstar":
        __ndbg_kw.update(__ndbg_v)
    else:
        __ndbg_pos.append(__ndbg_v)
__ndbg_g = {"__name__": "__main__", "__builtins__": __builtins__}
exec(compile(__ndbg_in["code"], "<item>", "exec"), __ndbg_g)
if "entry" in __ndbg_in:
    __ndbg_v = __ndbg_g[__ndbg_in["entry"]](*__ndbg_pos, **__ndbg_kw)
else:
    __ndbg_v = eval(compile(__ndbg_in["expr"], "<check>", "eval"), __ndbg_g)
os.write(3, repr(__ndbg_v).encode("utf-8", "backslashreplace"))
`

// verdictScript is what the verdict's process runs: its standard input is
// a JSON list of two texts; it writes to fd 3 "pass" when both are Python
// literals and equal, "fail" when they are literals and differ, and
// "nolit0" or "nolit1" when the first or second is no literal. No item's
// code runs here: only ast.literal_eval and == on built-in values.
const verdictScript = `import ast, json, os, sys
__texts = json.loads(sys.stdin.read())
__vals = []
for __i, __t in enumerate(__texts):
    try:
        __vals.append(ast.literal_eval(__t))
    except Exception:
        os.write(3, b"nolit%d" % __i)
        raise SystemExit(0)
os.write(3, b"pass" if __vals[0] == __vals[1] else b"fail")
`

// CheckOutput scores a CRUXEval-O prediction: it passes when pred, a
// Python literal, equals the reference output ref (a literal, or else an
// expression evaluated after the item's code in the item's process).
func (s *Scorer) CheckOutput(ctx context.Context, code, ref, pred string) (bool, error) {
	v, err := s.verdict(ctx, ref, pred)
	if err != nil || v != "nolit0" {
		return v == "pass", err
	}
	want, ok, err := s.value(ctx, map[string]any{"code": code, "expr": ref})
	if err != nil || !ok {
		return false, err
	}
	v, err = s.verdict(ctx, want, pred)
	return v == "pass", err
}

// CheckInput scores a CRUXEval-I prediction: it passes when entry(<args>),
// each argument a Python literal, called in the item's process after its
// code, equals the reference output ref (evaluated apart, as CheckOutput
// does, where it is no literal).
func (s *Scorer) CheckInput(ctx context.Context, code, entry string, args []Arg, ref string) (bool, error) {
	spec := make([][3]string, len(args))
	for i, a := range args {
		kind := map[ArgKind]string{Positional: "pos", Star: "star", Keyword: "kw", StarStar: "starstar"}[a.Kind]
		spec[i] = [3]string{kind, a.Name, a.Repr}
	}
	got, ok, err := s.value(ctx, map[string]any{"code": code, "entry": entry, "args": spec})
	if err != nil || !ok {
		return false, err
	}
	v, err := s.verdict(ctx, got, ref)
	if err != nil || v != "nolit1" {
		return v == "pass", err
	}
	want, ok, err := s.value(ctx, map[string]any{"code": code, "expr": ref})
	if err != nil || !ok {
		return false, err
	}
	v, err = s.verdict(ctx, got, want)
	return v == "pass", err
}

// value runs valueScript on in (its JSON input) in the item's process and
// returns the repr it reported; ok is false when it reported none (it
// raised, timed out, ran out of memory, or an argument is no literal) or
// one longer than maxValue.
func (s *Scorer) value(ctx context.Context, in map[string]any) (repr string, ok bool, err error) {
	data, err := json.Marshal(in)
	if err != nil {
		return "", false, fmt.Errorf("eval: encode the item's input: %w", err)
	}
	out, err := s.run(ctx, valueScript, data, maxValue)
	if err != nil || len(out) == 0 || len(out) > maxValue {
		return "", false, err
	}
	return string(out), true, nil
}

// verdict compares the literals a and b in a process where no item's code
// runs and returns "pass", "fail", "nolit0", "nolit1", or "" when the
// process gave no verdict.
func (s *Scorer) verdict(ctx context.Context, a, b string) (string, error) {
	in, err := json.Marshal([]string{a, b})
	if err != nil {
		return "", fmt.Errorf("eval: encode the values: %w", err)
	}
	out, err := s.run(ctx, verdictScript, in, 16)
	return string(out), err
}

// run executes script in the sandbox (trace.Script) with stdin and returns
// what it wrote to fd 3, up to limit+1 bytes. Whatever ends the script (an
// exception, a timeout, running out of memory or output) gives what was
// written by then; only the sandbox's refusal, the context and an
// interpreter that cannot start are errors.
func (s *Scorer) run(ctx context.Context, script string, stdin []byte, limit int) ([]byte, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("eval: result pipe: %w", err)
	}
	defer r.Close()
	read := make(chan []byte, 1)
	go func() { // read while it runs: a value may be more than a pipe holds
		data, _ := io.ReadAll(io.LimitReader(r, int64(limit)+1))
		read <- data
	}()
	lim := trace.Limits{Python: s.Python, Timeout: timeout, MaxMemory: s.MaxMemory, MaxStdout: 4 << 10, Unsandboxed: s.Unsandboxed}
	_, err = trace.Script(ctx, lim, script, stdin, w) // closes w
	var te *trace.Error
	if err != nil && (!errors.As(err, &te) || errors.Is(err, trace.ErrSandbox)) {
		r.Close() // ends the reader
		<-read
		return nil, fmt.Errorf("eval: %w", err)
	}
	// The script is over: what it wrote is in the pipe, or never will be
	// (a descriptor it handed on dies with its sandbox).
	if derr := r.SetReadDeadline(time.Now().Add(time.Second)); derr != nil {
		return nil, fmt.Errorf("eval: result pipe: %w", derr)
	}
	return <-read, nil
}
