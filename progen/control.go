// control.go: if, for and while statements, with the bounded loop bodies,
// early exits and index variables they need.

package progen

import (
	"fmt"
	"strings"
)

// ifStmt emits an if statement, sometimes with elif and else branches.
func (g *gen) ifStmt() bool {
	g.emit("if %s:", g.cond(2))
	g.block(func() { g.body(g.between(1, 2)) })
	if g.chance(0.25) {
		g.emit("elif %s:", g.cond(2))
		g.block(func() { g.body(1) })
		g.use("elif")
	}
	if g.chance(0.4) {
		g.emit("else:")
		g.block(func() { g.body(g.between(1, 2)) })
		g.use("else")
	}
	g.use("if")
	return true
}

// loopExit emits a conditional break or continue inside a loop.
func (g *gen) loopExit() bool {
	if g.noCont || g.chance(0.5) {
		g.emit("if %s:", g.cond(1))
		g.block(func() {
			if g.chance(0.3) {
				g.stmts(1)
			}
			g.emit("break")
		})
		g.use("break")
		return true
	}
	g.emit("if %s:", g.cond(1))
	g.block(func() { g.emit("continue") })
	g.use("continue")
	return true
}

// earlyReturn emits a conditional return of the function's type.
func (g *gen) earlyReturn() bool {
	if g.retT == "" {
		return false
	}
	cond := g.cond(1)
	if !g.usesVar(cond) {
		return false
	}
	g.emit("if %s:", cond)
	g.block(func() { g.emit("return %s", g.retValue(g.expr(g.retT, 1))) })
	g.use("early_return")
	return true
}

// loopBody generates the body of a loop with the loop variable in focus.
func (g *gen) loopBody(focus *variable, n int) {
	saved := g.focus
	g.focus = focus
	g.loop++
	if acc := g.takeAcc(); acc != nil {
		if g.chance(0.4) {
			g.emit("if %s:", g.pred(focus))
			g.block(func() { g.update(acc) })
		} else {
			g.update(acc)
		}
		n--
	}
	g.body(n)
	g.loop--
	g.focus = saved
}

// forOver emits "for a[, b] in src:" binding names of the given types.
func (g *gen) forOver(src string, types []string, char bool) bool {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = g.freshLoop(t)
		for j := 0; j < i; j++ {
			if names[j] == names[i] {
				names[i] = g.fresh(t)
			}
		}
	}
	unfreeze := g.freeze(src)
	g.emit("for %s in %s:", strings.Join(names, ", "), src)
	g.block(func() {
		var vs []*variable
		for i, t := range types {
			v := g.bind(names[i], t)
			v.ro = true
			v.char = char
			vs = append(vs, v)
		}
		g.loopBody(vs[len(vs)-1], g.between(1, 3))
	})
	unfreeze()
	g.use("for")
	return true
}

// forStmt emits a for loop over a collection, a string or list (maybe
// enumerated), a zip, a split, a sorted or reversed view, or a small range.
func (g *gen) forStmt() bool {
	colls := g.vars(func(v *variable) bool { return (v.t == tStr || mutable(v.t)) && v != g.pendingAcc })
	switch g.intn(9) {
	case 0, 1, 2:
		if len(colls) == 0 {
			break
		}
		c := pick(g, colls)
		if isDict(c.t) && g.chance(0.5) {
			g.use("dict.items")
			return g.forOver(c.name+".items()", []string{keyT(c.t), valT(c.t)}, false)
		}
		if isDict(c.t) {
			// for k in d: with d[k] safe inside.
			kv := g.freshLoop(keyT(c.t))
			c.frozen++
			g.emit("for %s in %s:", kv, c.name)
			g.block(func() {
				v := g.bind(kv, keyT(c.t))
				v.ro = true
				g.safe = append(g.safe, safeIndex{idx: v, cont: c})
				g.loopBody(v, g.between(1, 3))
			})
			c.frozen--
			g.use("for")
			return true
		}
		return g.forOver(c.name, []string{iterElem(c.t)}, c.t == tStr)
	case 3, 4:
		seqs := g.vars(func(v *variable) bool { return (v.t == tStr || isList(v.t)) && v != g.pendingAcc })
		if len(seqs) == 0 {
			break
		}
		c := pick(g, seqs)
		iv := g.freshIdx()
		start := 0
		if g.chance(0.3) {
			start = 1
		}
		c.frozen++
		switch {
		case start == 1:
			g.emit("for %s in range(1, len(%s)):", iv, c.name)
		case g.chance(0.2):
			g.emit("for %s in range(0, len(%s), 2):", iv, c.name)
		case g.chance(0.15):
			g.emit("for %s in reversed(range(len(%s))):", iv, c.name)
			g.use("reversed")
		default:
			g.emit("for %s in range(len(%s)):", iv, c.name)
		}
		g.block(func() {
			v := g.bind(iv, tInt)
			v.ro, v.nonneg = true, true
			g.safe = append(g.safe, safeIndex{idx: v, cont: c})
			if start == 1 {
				g.safe = append(g.safe, safeIndex{idx: v, cont: c, off: 1})
			}
			g.loopBody(v, g.between(1, 3))
		})
		c.frozen--
		g.use("range")
		g.use("for")
		return true
	case 5:
		seqs := g.vars(func(v *variable) bool { return (v.t == tStr || isList(v.t)) && v != g.pendingAcc })
		if len(seqs) == 0 {
			break
		}
		c := pick(g, seqs)
		iv := g.freshIdx()
		ev := g.freshLoop(iterElem(c.t))
		c.frozen++
		fromOne := g.chance(0.2)
		if fromOne {
			// Counting from 1: the index is no longer safe for c.
			g.emit("for %s, %s in enumerate(%s, 1):", iv, ev, c.name)
		} else {
			g.emit("for %s, %s in enumerate(%s):", iv, ev, c.name)
		}
		g.block(func() {
			v := g.bind(iv, tInt)
			v.ro, v.nonneg = true, true
			e := g.bind(ev, iterElem(c.t))
			e.ro, e.char = true, c.t == tStr
			if !fromOne {
				g.safe = append(g.safe, safeIndex{idx: v, cont: c})
			}
			g.loopBody(e, g.between(1, 3))
		})
		c.frozen--
		g.use("enumerate")
		g.use("for")
		return true
	case 6:
		ls := g.vars(func(v *variable) bool { return v.t == tLI && v != g.pendingAcc })
		ss := g.vars(func(v *variable) bool { return v.t == tLS && v != g.pendingAcc })
		if len(ls) == 0 || len(ss) == 0 {
			break
		}
		g.use("zip")
		return g.forOver("zip("+pick(g, ss).name+", "+pick(g, ls).name+")", []string{tStr, tInt}, false)
	case 7:
		if s := g.someVar(tStr); s != nil && s != g.pendingAcc {
			g.use("split")
			sep := ""
			if g.chance(0.4) {
				sep = g.litChar()
			}
			return g.forOver(s.name+".split("+sep+")", []string{tStr}, false)
		}
	}
	// range over a small constant, or sorted / reversed views.
	if g.chance(0.5) {
		if xs := g.someVar(tLI); xs != nil && xs != g.pendingAcc {
			w := pick(g, []string{"sorted", "reversed"})
			g.use(w)
			return g.forOver(w+"("+xs.name+")", []string{tInt}, false)
		}
	}
	iv := g.freshIdx()
	g.emit("for %s in range(%s):", iv, pick(g, []string{fmt.Sprint(g.between(1, 5)), fmt.Sprintf("%d, %d", g.between(0, 2), g.between(3, 6)), fmt.Sprintf("%d, 0, -1", g.between(2, 5))}))
	g.block(func() {
		v := g.bind(iv, tInt)
		v.ro = true
		g.loopBody(v, g.between(1, 3))
	})
	g.use("range")
	g.use("for")
	return true
}

// freshIdx is an unused index name: i, j, idx or pos, else a fresh one.
func (g *gen) freshIdx() string {
	for _, n := range []string{"i", "j", "idx", "pos"} {
		if !g.inScope(n) {
			return n
		}
	}
	return g.fresh(tInt)
}

// whileStmt emits a bounded while loop: an index walk, a digit loop,
// draining a list, trimming a string or list, or a counter.
func (g *gen) whileStmt() bool {
	g.use("while")
	switch g.intn(5) {
	case 0: // index walk
		seqs := g.vars(func(v *variable) bool { return v.t == tStr || isList(v.t) })
		if len(seqs) == 0 {
			return false
		}
		c := pick(g, seqs)
		iv := g.freshIdx()
		g.emit("%s = 0", iv)
		v := g.bind(iv, tInt)
		v.nonneg = true
		v.frozen++
		c.frozen++
		g.emit("while %s < len(%s):", iv, c.name)
		g.block(func() {
			g.safe = append(g.safe, safeIndex{idx: v, cont: c})
			saved := g.noCont
			g.noCont = true
			g.loopBody(v, g.between(1, 2))
			g.noCont = saved
			g.emit("%s += %d", iv, g.between(1, 2))
		})
		c.frozen--
		return true
	case 1: // digits
		src := g.subVar(tInt, 0)
		n := g.fresh(tInt)
		g.emit("%s = abs(%s)", n, src)
		v := g.bind(n, tInt)
		v.frozen++
		g.emit("while %s > 0:", n)
		g.block(func() {
			dn := g.fresh(tInt)
			g.emit("%s = %s %% 10", dn, n)
			dv := g.bind(dn, tInt)
			saved := g.noCont
			g.noCont = true
			g.loopBody(dv, g.between(1, 2))
			g.noCont = saved
			g.emit("%s //= 10", n)
		})
		v.frozen--
		v.ro = true
		return true
	case 2: // drain a list
		xs := g.mutableVar(isList)
		if xs == nil {
			return false
		}
		et := elem(xs.t)
		xs.frozen++
		if g.chance(0.5) {
			g.emit("while %s:", xs.name)
		} else {
			g.emit("while len(%s) > %d:", xs.name, g.between(1, 2))
		}
		g.block(func() {
			ev := g.freshLoop(et)
			g.emit("%s = %s.pop(%s)", ev, xs.name, pick(g, []string{"", "0"}))
			v := g.bind(ev, et)
			v.ro = true
			g.loopBody(v, g.between(1, 2))
		})
		xs.frozen--
		g.use("list.pop")
		return true
	case 3: // trim
		s := g.assignable(func(t string) bool { return t == tStr })
		if s == nil {
			return false
		}
		c := g.litChar()
		if g.chance(0.5) {
			g.emit("while %s.startswith(%s):", s.name, c)
			g.block(func() { g.emit("%s = %s[1:]", s.name, s.name) })
		} else {
			g.emit("while %s and %s[-1] == %s:", s.name, s.name, c)
			g.block(func() { g.emit("%s = %s[:-1]", s.name, s.name) })
		}
		return true
	default: // bounded counter
		k := g.fresh(tInt)
		g.emit("%s = 0", k)
		v := g.bind(k, tInt)
		v.frozen++
		cond := ""
		if g.chance(0.5) {
			cond = " and " + paren(g.cond(1))
		}
		g.emit("while %s < %d%s:", k, g.between(2, 5), cond)
		g.block(func() {
			g.emit("%s += 1", k)
			g.loopBody(v, g.between(1, 2))
		})
		v.frozen--
		return true
	}
}

// loopBodyless generates one more statement focused on v (inside a try).
func (g *gen) loopBodyless(v *variable) {
	saved := g.focus
	g.focus = v
	g.stmts(1)
	g.focus = saved
}
