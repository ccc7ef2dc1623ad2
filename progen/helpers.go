// helpers.go: the plain helper functions f calls (the helpers family and
// every family with helpers): their definitions, the call f is made to
// include, and calls to them inside expressions.

package progen

import (
	"strings"
)

func helperName(g *gen, i int) string {
	names := []string{"helper", "transform", "check", "combine", "process", "normalize", "score", "clean", "count_matches", "build"}
	n := names[(g.intn(len(names))+i)%len(names)]
	for g.inScope(n) {
		n += "2"
	}
	return n
}

// helper generates a non-recursive helper function and returns its
// signature. Its parameters are never mutated, so the caller's objects do
// not change under it.
func (g *gen) helper(name string, raises bool) *sig {
	np := g.between(1, 2)
	pts := make([]string, np)
	names := make([]string, np)
	saveScope := g.scope
	g.scope = nil
	for i := range pts {
		pts[i] = pickWeighted(g, []wt{{tStr, 3}, {tInt, 4}, {tLI, 3}, {tLS, 1}})
		if len(g.ptypes) > 0 && g.chance(0.7) && !isDict(g.ptypes[0]) {
			pts[i] = pick(g, g.ptypes)
			if isDict(pts[i]) {
				pts[i] = tInt
			}
		}
		names[i] = g.paramName(pts[i])
		g.bind(names[i], pts[i])
	}
	g.scope = nil
	ret := pickWeighted(g, []wt{{tInt, 4}, {tStr, 3}, {tLI, 2}, {tBool, 1}})
	savedRet := g.retT
	g.retT = ret
	g.emit("def %s(%s):", name, strings.Join(names, ", "))
	s := &sig{name: name, params: pts, ret: ret}
	g.block(func() {
		for i, n := range names {
			v := g.bind(n, pts[i])
			v.noMut = true
		}
		if raises {
			exc := "ValueError"
			cond := g.cond(1)
			g.emit("if %s:", cond)
			g.block(func() {
				msg := pyStr(pick(g, []string{"invalid", "negative value", "empty input", "bad input"}))
				if g.chance(0.5) {
					msg = "f'invalid: {" + names[0] + "}'"
				}
				g.emit("raise %s(%s)", exc, msg)
			})
			s.raises = exc
			g.use("raise")
		}
		hs, depth := g.fam.helperStmts, g.fam.helperDepth
		if hs[1] == 0 {
			hs = [2]int{1, 2}
		}
		g.budget = g.between(hs[0], hs[1])
		savedDepth := g.maxDepth
		g.maxDepth = max(depth, 1)
		g.stmts(g.budget)
		g.maxDepth = savedDepth
		g.emit("return %s", g.returnExpr())
	})
	g.emit("")
	g.retT = savedRet
	g.scope = saveScope
	g.funcs = append(g.funcs, s)
	g.use("helper")
	return s
}

// forcedCall makes sure f calls helper s at least once.
func (g *gen) forcedCall(s *sig) {
	args := make([]string, len(s.params))
	for i, p := range s.params {
		args[i] = s.arg(i, g.subVar(p, 1))
	}
	name := g.fresh(s.ret)
	call := s.name + "(" + strings.Join(args, ", ") + ")"
	if s.raises != "" && !g.catches(s.raises) {
		if g.chance(0.6) {
			// Caught here.
			g.emit("try:")
			g.block(func() { g.emit("%s = %s", name, call) })
			g.emit("except %s:", pick(g, []string{s.raises, "Exception"}))
			g.block(func() { g.emit("%s = %s", name, g.literal(s.ret)) })
			g.use("try")
			g.use("except_" + s.raises)
		} else {
			g.emit("%s = %s", name, call)
			g.raises[s.raises] = struct{}{}
			g.use("uncaught_" + s.raises)
		}
	} else {
		g.emit("%s = %s", name, call)
	}
	g.bind(name, s.ret)
	g.use("call_helper")
}

// callHelper calls a helper returning t, if there is one. Recursive
// helpers are not called inside loops, to keep traces short.
func (g *gen) callHelper(t string, d int) string {
	var fs []*sig
	for _, s := range g.funcs {
		if s.ret == t && !(s.recursive && g.loop > 0) {
			fs = append(fs, s)
		}
	}
	if len(fs) == 0 {
		return ""
	}
	s := pick(g, fs)
	a := make([]string, len(s.params))
	for i, p := range s.params {
		a[i] = s.arg(i, g.sub(p, d-1))
	}
	if s.raises != "" && !g.catches(s.raises) {
		g.raises[s.raises] = struct{}{}
	}
	g.use("call_helper")
	return s.name + "(" + strings.Join(a, ", ") + ")"
}
