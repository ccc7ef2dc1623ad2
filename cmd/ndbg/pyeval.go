package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/ndbg/ndbg/dsl"
)

// evalScript evaluates expressions over locals given as reprs: each repr is
// rebuilt with ast.literal_eval (a repr that is no literal, such as
// <object at 0x...>, cannot be, and an expression that reads it says so),
// then each expression is evaluated with eval over them and only the
// builtins, and answered with repr (p) or pprint.pformat (pp), or pdb's
// one-line error.
const evalScript = `import ast, json, pprint, sys, traceback
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

// evalTimeout bounds one evaluation: an expression is the user's, and may
// not end (e.g. sum(range(10**12))).
const evalTimeout = 10 * time.Second

// evalResult is one expression's value (its repr, or pprint's form) or
// its error as pdb prints it after "*** ".
type evalResult struct {
	Value string `json:"value"`
	Error string `json:"error"`
}

// evalOn evaluates exprs with python3 over locals (reprs, as a state shows
// them); pretty formats the values as pp does.
func evalOn(ctx context.Context, locals []dsl.Local, exprs []string, pretty bool) ([]evalResult, error) {
	pairs := make([][2]string, len(locals))
	for i, l := range locals {
		pairs[i] = [2]string{l.Name, l.Repr}
	}
	req, err := json.Marshal(map[string]any{"locals": pairs, "exprs": exprs, "pretty": pretty})
	if err != nil {
		return nil, fmt.Errorf("evaluating: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, evalTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-I", "-c", evalScript)
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("evaluating %q: python3 did not answer within %v", exprs, evalTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("evaluating with python3: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var res []evalResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(exprs) {
		return nil, fmt.Errorf("evaluating with python3: unreadable answer %q", out)
	}
	return res, nil
}
