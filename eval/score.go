package eval

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ndbg/ndbg/trace"
)

// Scorer runs CRUXEval's check by value: the item's code, then a
// comparison of the reference output with a prediction, in a fresh python3
// process (3 s by default) inside package trace's operating-system sandbox
// (trace.Command: read-only system, no network, no process creation, killed
// with its group). Predictions are data, never code: a predicted output or
// argument must be a Python literal (ast.literal_eval), so "__import__('sys').exit(0)"
// is a wrong prediction rather than a way out. The script reports its
// verdict on a pipe of its own; an exit status means nothing. A check that
// fails, raises, times out or gives no verdict is a failure, never an error.
// A Scorer is safe for concurrent use.
type Scorer struct {
	// Python is the interpreter; empty means python3 on PATH.
	Python string
	// Timeout is the wall-clock limit of one check (default 3 s).
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

// checkScript is what trace.Script runs: the check script, read from
// stdin (it holds the item's code, which can be long), executed as the main
// module.
const checkScript = "import sys\nexec(compile(sys.stdin.read(), '<check>', 'exec'))\n"

// prelude starts a check script, before the item's code: the predictions
// parsed as literals (a prediction that is not one raises here, before any
// comparison, so the check gives no verdict). %q is the hex of a JSON list
// of the predicted values' texts. trace.Script has set the limits and closed
// every descriptor but stdio and the verdict pipe (fd 3).
const prelude = `import ast as __ast, json as __json, os as __os
__preds = [__ast.literal_eval(__t) for __t in __json.loads(bytes.fromhex(%q).decode('utf-8'))]
del __ast, __json
`

// verdict ends a check script: it writes "pass" or "fail" to fd 3 for the
// comparison %s.
const verdict = "__os.write(3, b'pass' if (%s) else b'fail')\n"

// CheckOutput scores a CRUXEval-O prediction: it passes when the item's
// code has run and <ref> == <pred>, pred a Python literal.
func (s *Scorer) CheckOutput(ctx context.Context, code, ref, pred string) (bool, error) {
	var b strings.Builder
	b.WriteString(code)
	fmt.Fprintf(&b, "\n"+verdict, "("+ref+") == __preds[0]")
	return s.run(ctx, []string{pred}, b.String())
}

// CheckInput scores a CRUXEval-I prediction: it passes when the item's code
// has run and f(<args>) == <ref>, each argument a Python literal.
func (s *Scorer) CheckInput(ctx context.Context, code, entry string, args []Arg, ref string) (bool, error) {
	var b strings.Builder
	b.WriteString(code)
	b.WriteString("\n__pos, __kw = [], {}\n")
	preds := make([]string, len(args))
	for i, a := range args {
		preds[i] = a.Repr
		switch a.Kind {
		case Star:
			fmt.Fprintf(&b, "__pos.extend(__preds[%d])\n", i)
		case Keyword:
			fmt.Fprintf(&b, "__kw[%q] = __preds[%d]\n", a.Name, i)
		case StarStar:
			fmt.Fprintf(&b, "__kw.update(__preds[%d])\n", i)
		default:
			fmt.Fprintf(&b, "__pos.append(__preds[%d])\n", i)
		}
	}
	fmt.Fprintf(&b, verdict, fmt.Sprintf("%s(*__pos, **__kw) == (%s)", entry, ref))
	return s.run(ctx, preds, b.String())
}

// run executes a check script (prelude first, with preds) in the sandbox
// (trace.Script) and returns its verdict. Whatever ends the script (an
// exception, a timeout, running out of memory or output) is a failure; only
// the sandbox's refusal, the context and an interpreter that cannot start
// are errors.
func (s *Scorer) run(ctx context.Context, preds []string, script string) (bool, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	pj, err := json.Marshal(preds)
	if err != nil {
		return false, fmt.Errorf("eval: encode predictions: %w", err)
	}
	vr, vw, err := os.Pipe()
	if err != nil {
		return false, fmt.Errorf("eval: verdict pipe: %w", err)
	}
	defer vr.Close()
	lim := trace.Limits{Python: s.Python, Timeout: timeout, MaxMemory: s.MaxMemory, MaxStdout: 4 << 10, Unsandboxed: s.Unsandboxed}
	src := fmt.Sprintf(prelude, hex.EncodeToString(pj)) + script
	_, err = trace.Script(ctx, lim, checkScript, []byte(src), vw) // closes vw
	var te *trace.Error
	if err != nil && (!errors.As(err, &te) || errors.Is(err, trace.ErrSandbox)) {
		return false, fmt.Errorf("eval: %w", err)
	}
	// The script is over: the verdict (4 bytes) is in the pipe, or never will be.
	if derr := vr.SetReadDeadline(time.Now().Add(time.Second)); derr != nil {
		return false, fmt.Errorf("eval: verdict pipe: %w", derr)
	}
	v, _ := io.ReadAll(io.LimitReader(vr, 16))
	return string(v) == "pass", nil
}
