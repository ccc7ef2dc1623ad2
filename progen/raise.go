// raise.go: statements that may raise: try/except around a risky
// operation, raise statements, and the bookkeeping of which exceptions
// are caught.

package progen

import (
	"strings"
)

// catches reports whether an enclosing try handles exc.
func (g *gen) catches(exc string) bool {
	return g.inTry && (g.caught == exc || g.caught == "Exception")
}

// risky is an assignment right-hand side that may raise exc.
func (g *gen) risky(t string) (rhs, exc, typ string) {
	type r struct {
		t, exc, need string
		f            func() string
	}
	opts := []r{
		{tInt, "ValueError", tStr, func() string { return "int(" + g.subVar(tStr, 0) + ")" }},
		{tInt, "ValueError", tLI, func() string { return g.subVar(tLI, 0) + ".index(" + g.small(tInt) + ")" }},
		{tInt, "ValueError", tStr, func() string { return g.subVar(tStr, 0) + ".index(" + g.charExpr() + ")" }},
		{tInt, "ZeroDivisionError", tInt, func() string {
			return paren(g.sub(tInt, 1)) + " " + pick(g, []string{"//", "%"}) + " " + g.subVar(tInt, 0)
		}},
		{tInt, "IndexError", tLI, func() string { return g.subVar(tLI, 0) + "[" + g.small(tInt) + "]" }},
		{tStr, "IndexError", tStr, func() string { return g.subVar(tStr, 0) + "[" + g.small(tInt) + "]" }},
		{tFloat, "ValueError", tStr, func() string { return "float(" + g.subVar(tStr, 0) + ")" }},
	}
	for _, dv := range g.vars(func(v *variable) bool { return isDict(v.t) && !isList(valT(v.t)) }) {
		opts = append(opts, r{valT(dv.t), "KeyError", "", func() string { return dv.name + "[" + g.sub(keyT(dv.t), 0) + "]" }})
	}
	for _, s := range g.funcs {
		if s.raises != "" {
			opts = append(opts, r{s.ret, s.raises, "", func() string {
				a := make([]string, len(s.params))
				for i, p := range s.params {
					a[i] = s.arg(i, g.sub(p, 0))
				}
				g.use("call_helper")
				return s.name + "(" + strings.Join(a, ", ") + ")"
			}})
		}
	}
	var ok []r
	for _, o := range opts {
		if t == "" || o.t == t {
			// The subject must be a variable: "[].index(3)" says nothing.
			if o.need == "" || len(g.varsOf(o.need)) > 0 {
				ok = append(ok, o)
			}
		}
	}
	if len(ok) == 0 {
		return "", "", ""
	}
	o := pick(g, ok)
	return o.f(), o.exc, o.t
}

// tryStmt wraps a risky operation in try/except for the exception it may
// raise, binding its result (or a fallback in the handler) to a fresh name.
func (g *gen) tryStmt() bool {
	rhs, exc, t := g.risky("")
	if rhs == "" {
		return false
	}
	name := g.fresh(t)
	handler := exc
	switch g.intn(4) {
	case 0:
		handler = "Exception"
	case 1:
		handler = "(" + exc + ", TypeError)"
	}
	g.emit("try:")
	savedTry, savedCaught := g.inTry, g.caught
	g.inTry, g.caught = true, exc
	g.block(func() {
		g.emit("%s = %s", name, rhs)
		v := g.bind(name, t)
		if g.chance(0.4) {
			g.loopBodyless(v)
		}
	})
	g.inTry, g.caught = savedTry, savedCaught
	asE := g.chance(0.3)
	if asE {
		g.emit("except %s as e:", handler)
	} else {
		g.emit("except %s:", handler)
	}
	g.block(func() {
		if asE && t == tStr {
			g.emit("%s = str(e)", name)
		} else {
			g.emit("%s = %s", name, g.literal(t))
		}
	})
	if g.chance(0.2) {
		g.emit("else:")
		g.block(func() { g.body(1) })
		g.use("try_else")
	}
	if g.chance(0.15) {
		g.emit("finally:")
		g.block(func() { g.body(1) })
		g.use("finally")
	}
	g.bind(name, t)
	g.use("try")
	g.use("except_" + exc)
	return true
}

// typeOfDictGet is the value type of the dict indexed in rhs ("d[k]").
func (g *gen) typeOfDictGet(rhs string) string {
	if v := g.varNamed(rhs[:strings.Index(rhs, "[")]); v != nil && isDict(v.t) {
		return valT(v.t)
	}
	return tInt
}

// raiseStmt raises an exception the program does not catch: either an
// explicit raise under a condition or an operation that may fail.
func (g *gen) raiseStmt() bool {
	if g.chance(0.5) {
		cond := g.cond(1)
		exc := pick(g, []string{"ValueError", "KeyError", "TypeError", "RuntimeError"})
		msg := pyStr(pick(g, []string{"invalid input", "bad value", "not found", "empty", "too many"}))
		if a := g.someVar(pick(g, []string{tInt, tStr})); a != nil && g.chance(0.5) {
			msg = "f'bad value: {" + a.name + "}'"
		}
		g.emit("if %s:", cond)
		g.block(func() { g.emit("raise %s(%s)", exc, msg) })
		if !g.catches(exc) {
			g.raises[exc] = struct{}{}
		}
		g.use("raise")
		return true
	}
	rhs, exc, t := g.risky("")
	if rhs == "" {
		return false
	}
	name := g.fresh(t)
	g.emit("%s = %s", name, rhs)
	g.bind(name, t)
	if !g.catches(exc) {
		g.raises[exc] = struct{}{}
	}
	g.use("uncaught_" + exc)
	return true
}
