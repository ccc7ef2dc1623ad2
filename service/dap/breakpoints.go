package dap

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/pyeval"
)

// bp is one breakpoint the client set, on a line or a function (pdb's
// break FUNCTION: the function's first body line), with its condition and
// hit condition, as pdb's conditional breakpoints and ignore counts.
type bp struct {
	line     int
	function string // set by setFunctionBreakpoints
	cond     string // a Python expression; "" for none
	hitCond  hitCondition
	hits     int
}

// hitCondition is a DAP hit condition as debugpy reads it: "N" or "== N"
// (stop at the Nth hit), ">= N", "> N", "<= N", "< N", "% N" (every Nth).
type hitCondition struct {
	op string // "" for none
	n  int
}

// parseHit parses a hit condition; the error says what is wrong.
func parseHit(s string) (hitCondition, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return hitCondition{}, nil
	}
	op := "=="
	for _, o := range []string{"==", ">=", "<=", ">", "<", "%"} {
		if strings.HasPrefix(s, o) {
			op, s = o, strings.TrimSpace(s[len(o):])
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || (op == "%" && n == 0) {
		return hitCondition{}, fmt.Errorf("hit condition %q: want N, == N, >= N, > N, <= N, < N or %% N with N a whole number", s)
	}
	return hitCondition{op, n}, nil
}

// ok reports whether the hits so far let the breakpoint stop.
func (h hitCondition) ok(hits int) bool {
	switch h.op {
	case "==":
		return hits == h.n
	case ">=":
		return hits >= h.n
	case ">":
		return hits > h.n
	case "<=":
		return hits <= h.n
	case "<":
		return hits < h.n
	case "%":
		return hits%h.n == 0
	}
	return true
}

// lines returns the lines of every breakpoint, for the sessions.
func (ss *session) bpLines() []int {
	var ls []int
	for _, b := range append(append([]*bp(nil), ss.lineBPs...), ss.funcBPs...) {
		ls = append(ls, b.line)
	}
	return ls
}

// fires is the condition of a stop that only breakpoints made: the first
// breakpoint on st's line whose condition holds (evaluated in the frame:
// the live program's on the real backend, over the predicted locals
// elsewhere; an error stops, as in pdb), counted as a hit, and whose hit
// condition holds then makes the stop.
func (ss *session) fires(ctx context.Context, sess *ndbg.Session, st ndbg.State, count bool) *bp {
	if st.Event != dsl.Line {
		return nil
	}
	for _, b := range append(append([]*bp(nil), ss.lineBPs...), ss.funcBPs...) {
		if b.line != st.Line || (b.function != "" && !sess.InFunction(b.function)) {
			continue // a function breakpoint stops in the function's own frame only
		}
		if b.cond != "" && !ss.holds(ctx, sess, st, b.cond) {
			continue
		}
		hits := b.hits + 1 // where the condition holds, as pdb's ignore counts
		if count {
			b.hits = hits
		}
		if !b.hitCond.ok(hits) {
			continue
		}
		return b
	}
	return nil
}

// holds evaluates a breakpoint's condition at st; one that cannot be
// evaluated holds (pdb stops there).
func (ss *session) holds(ctx context.Context, sess *ndbg.Session, st ndbg.State, cond string) bool {
	if sess.Backend().Name() == "real" {
		res, err := sess.Eval(ctx, 0, cond, ndbg.EvalBool)
		return err != nil || res.Error != "" || res.Value != "False"
	}
	res, err := pyeval.Eval(ctx, ss.lim, st.Locals, []string{"bool(" + cond + ")"}, false)
	return err != nil || res[0].Error != "" || res[0].Value != "False"
}
