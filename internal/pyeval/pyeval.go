// Package pyeval evaluates Python expressions over a debugger state's
// locals, as pdb's p does in a frame: the one implementation behind
// ndbg debug's p, pp, display and breakpoint conditions and ndbg dap's
// evaluate. The locals are rebuilt from their reprs, so it works alike on
// real and predicted states, and nothing it does reaches the program. An
// expression is the user's and the reprs are the model's or the program's
// text, so it runs in the operating-system sandbox every program runs in
// (trace.Script, docs/security.md).
package pyeval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/trace"
)

// script evaluates expressions over locals given as reprs: each repr is
// rebuilt with ast.literal_eval (a repr that is no literal, such as
// <object at 0x...>, cannot be, and an expression that reads it says so),
// then each expression is evaluated with eval over them and only the
// builtins, and answered with repr (p) or pprint.pformat (pp), or pdb's
// one-line error. A value's text is cut at valueCap characters (the marker
// says how many more there were).
const script = `import ast, json, pprint, sys, traceback
valueCap = 1 << 20
def cut(s):
    return s if len(s) <= valueCap else s[:valueCap] + "...[+%d characters]" % (len(s) - valueCap)
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
        out.append({"value": cut(pprint.pformat(v) if req["pretty"] else repr(v))})
    except NameError as x:
        if getattr(x, "name", None) in bad:
            out.append({"error": "the value of %s is not a Python literal, so it cannot be rebuilt to evaluate: %s" % (x.name, cut(bad[x.name]))})
        else:
            out.append({"error": cut(traceback.format_exception_only(type(x), x)[-1].strip())})
    except BaseException as x:
        out.append({"error": cut(traceback.format_exception_only(type(x), x)[-1].strip())})
json.dump(out, sys.stdout)
`

// Timeout bounds one evaluation: an expression is the user's, and may
// not end (e.g. sum(range(10**12))).
const Timeout = 10 * time.Second

// limits bound one evaluation, on top of the sandbox: Timeout, and the
// answer's size (values are cut at 1M characters each in script).
func limits(lim trace.Limits) trace.Limits {
	return trace.Limits{Python: lim.Python, Unsandboxed: lim.Unsandboxed, Timeout: Timeout, MaxStdout: 8 << 20}
}

// Result is one expression's value (its repr, or pprint's form) or its
// error as pdb prints it after "*** ".
type Result struct {
	Value string `json:"value"`
	Error string `json:"error"`
}

// Eval evaluates exprs over locals (reprs, as a state shows them) and the
// builtins only, in the sandbox (trace.Script; of lim, only Python, the
// interpreter, and Unsandboxed, the user's choice of no sandbox, count);
// pretty formats the values as pp does. An expression's own error is its
// Result's Error; the error returned is the failure to answer (within
// Timeout), trace.ErrSandbox where the sandbox cannot start.
func Eval(ctx context.Context, lim trace.Limits, locals []dsl.Local, exprs []string, pretty bool) ([]Result, error) {
	pairs := make([][2]string, len(locals))
	for i, l := range locals {
		pairs[i] = [2]string{l.Name, l.Repr}
	}
	req, err := json.Marshal(map[string]any{"locals": pairs, "exprs": exprs, "pretty": pretty})
	if err != nil {
		return nil, fmt.Errorf("evaluating: %w", err)
	}
	out, err := trace.Script(ctx, limits(lim), script, req)
	if errors.Is(err, trace.ErrTimeout) {
		return nil, fmt.Errorf("evaluating %q: no answer within %v", exprs, Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", exprs, err)
	}
	var res []Result
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(exprs) {
		return nil, fmt.Errorf("evaluating %q: unreadable answer %q", exprs, out)
	}
	return res, nil
}
