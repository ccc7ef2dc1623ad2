// Package pyeval evaluates Python expressions over a debugger state's
// locals, as pdb's p does in a frame: the one implementation behind
// ndbg debug's p, pp, display and breakpoint conditions and ndbg dap's
// evaluate. The locals are rebuilt from their reprs, so it works alike on
// real and predicted states, and nothing it does reaches the program.
package pyeval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/ndbg/ndbg/dsl"
)

// script evaluates expressions over locals given as reprs: each repr is
// rebuilt with ast.literal_eval (a repr that is no literal, such as
// <object at 0x...>, cannot be, and an expression that reads it says so),
// then each expression is evaluated with eval over them and only the
// builtins, and answered with repr (p) or pprint.pformat (pp), or pdb's
// one-line error.
const script = `import ast, json, pprint, sys, traceback
req = json.load(sys.stdin)
ns, bad = {}, {}
for name, r in req["locals"]:
    try:
        ns[name] = ast.literal_eval(r)
    except Exception:
        bad[name] = r
out = []
for e in req["exprs"]:
    try:
        v = eval(compile(e, "<string>", "eval"), {"__builtins__": __builtins__}, dict(ns))
        out.append({"value": pprint.pformat(v) if req["pretty"] else repr(v)})
    except NameError as x:
        if getattr(x, "name", None) in bad:
            out.append({"error": "the value of %s is not a Python literal, so it cannot be rebuilt to evaluate: %s" % (x.name, bad[x.name])})
        else:
            out.append({"error": traceback.format_exception_only(type(x), x)[-1].strip()})
    except BaseException as x:
        out.append({"error": traceback.format_exception_only(type(x), x)[-1].strip()})
json.dump(out, sys.stdout)
`

// Timeout bounds one evaluation: an expression is the user's, and may
// not end (e.g. sum(range(10**12))).
const Timeout = 10 * time.Second

// Result is one expression's value (its repr, or pprint's form) or its
// error as pdb prints it after "*** ".
type Result struct {
	Value string `json:"value"`
	Error string `json:"error"`
}

// Eval evaluates exprs with python3 (on PATH, isolated: -I) over locals
// (reprs, as a state shows them) and the builtins only; pretty formats the
// values as pp does. An expression's own error is its Result's Error; the
// error returned is python3's failure to answer (within Timeout).
func Eval(ctx context.Context, locals []dsl.Local, exprs []string, pretty bool) ([]Result, error) {
	pairs := make([][2]string, len(locals))
	for i, l := range locals {
		pairs[i] = [2]string{l.Name, l.Repr}
	}
	req, err := json.Marshal(map[string]any{"locals": pairs, "exprs": exprs, "pretty": pretty})
	if err != nil {
		return nil, fmt.Errorf("evaluating: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-I", "-c", script)
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("evaluating %q: python3 did not answer within %v", exprs, Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("evaluating with python3: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var res []Result
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(exprs) {
		return nil, fmt.Errorf("evaluating with python3: unreadable answer %q", out)
	}
	return res, nil
}
