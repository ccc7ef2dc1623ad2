// stmt.go: the statements of a block: the dispatch by the family's weights
// and the plain ones (declarations, assignments, augmented assignments,
// lambdas, swaps); mutations, control flow and raising statements have
// files of their own.

package progen

import (
	"fmt"
	"strings"
)

// stmtWeights are the relative frequencies of statement kinds.
type stmtWeights struct {
	decl, assign, aug, listMut, dictMut, setMut, ifs, fors, whiles, tries, lambda, raise int
}

// declType picks the type of a new local variable.
func (g *gen) declType() string {
	if g.chance(0.3) && g.retT != "" && g.retT != tBool {
		return g.retT
	}
	return g.fam.pickLocal(g)
}

// body generates a block's n statements: at least one, even when the
// budget is spent, so that no block is a bare pass.
func (g *gen) body(n int) {
	if g.budget < 1 {
		g.budget = 1
	}
	g.stmts(n)
}

// stmts generates n statements at the current level.
func (g *gen) stmts(n int) {
	for range n {
		if g.budget <= 0 {
			return
		}
		g.stmt()
	}
}

// takeAcc returns and clears the accumulator a new loop must update.
func (g *gen) takeAcc() *variable {
	a := g.pendingAcc
	g.pendingAcc = nil
	return a
}

// stmt emits one statement, its kind drawn by the family's statement
// weights; a kind that does not apply in the current scope is passed over.
func (g *gen) stmt() {
	g.budget--
	w := g.fam.stmts
	var cs []cand
	add := func(w int, f func() string) { cs = append(cs, cand{"stmt", w, f}) }
	ok := func(b bool) string {
		if b {
			return "ok"
		}
		return ""
	}
	nested := g.depth < g.maxDepth && g.budget > 1
	add(w.decl, func() string { return ok(g.decl()) })
	add(w.assign, func() string { return ok(g.assign()) })
	add(w.aug, func() string { return ok(g.aug()) })
	add(w.listMut, func() string { return ok(g.listMut()) })
	add(w.dictMut, func() string { return ok(g.dictMut()) })
	add(w.setMut, func() string { return ok(g.setMut()) })
	add(w.lambda, func() string { return ok(g.lambdaDecl()) })
	add(1, func() string { return ok(g.swap()) })
	add(w.raise, func() string { return ok(g.raiseStmt()) })
	if nested {
		add(w.ifs, func() string { return ok(g.ifStmt()) })
		if g.loop < 2 {
			add(w.fors, func() string { return ok(g.forStmt()) })
			add(w.whiles, func() string { return ok(g.whileStmt()) })
		}
		if !g.inTry {
			add(w.tries, func() string { return ok(g.tryStmt()) })
		}
	}
	if g.loop > 0 {
		add(2, func() string { return ok(g.loopExit()) })
	}
	if g.focus != nil {
		add(12, func() string { return ok(g.updateSome()) })
	}
	if nested && g.loop == 0 {
		add(w.fors+2, func() string { return ok(g.accumulate()) })
	}
	if g.depth > 0 || g.loop > 0 {
		add(1, func() string { return ok(g.earlyReturn()) })
	}
	if s, _ := g.choose(cs); s == "" {
		g.decl()
	}
}

// decl declares a new local of a type the family favours, from an
// expression over variables in scope (or an empty accumulator).
func (g *gen) decl() bool {
	t := g.declType()
	rhs := g.expr(t, 2)
	for try := 0; try < 3 && !g.usesVar(rhs); try++ {
		t = g.declType()
		rhs = g.expr(t, 2)
	}
	if !g.usesVar(rhs) {
		// An accumulator, filled later.
		rhs = emptyOf(t)
		if rhs == "" {
			rhs = g.literal(t)
		}
	}
	if mutable(t) && g.mayAlias(rhs) {
		// Never alias a mutable variable: a copy keeps loops bounded.
		v := g.varNamed(rhs)
		rhs = emptyOf(t)
		if v != nil && v.t == t {
			if isList(t) && g.chance(0.5) {
				rhs = v.name + "[:]"
			} else {
				rhs = v.name + ".copy()"
			}
			g.use("copy")
		}
	}
	name := g.fresh(t)
	g.emit("%s = %s", name, rhs)
	g.noteDeps(g.bind(name, t), rhs)
	g.use("assign")
	return true
}

// assign gives an existing variable a new value of its type, refusing
// values that would grow from themselves inside a loop.
func (g *gen) assign() bool {
	v := g.assignable(func(t string) bool { return t != tFn })
	if v == nil {
		return false
	}
	saved := g.focus
	if g.focus == nil || g.focus.t != v.t {
		g.focus = nil
	}
	rhs := g.expr(v.t, 2)
	g.focus = saved
	if rhs == v.name {
		return false
	}
	if g.loop > 0 && (v.t == tStr || mutable(v.t)) && g.selfRef(v, rhs) && !strings.HasPrefix(rhs, v.name+"[") && !strings.HasPrefix(rhs, v.name+".") {
		// "s = s + s" or "xs = xs + [f(xs)]" each iteration doubles.
		return false
	}
	if mutable(v.t) && g.mayAlias(rhs) {
		return false
	}
	g.emit("%s = %s", v.name, rhs)
	g.noteDeps(v, rhs)
	g.use("reassign")
	return true
}

// aug emits an augmented assignment (+=, -=, *=) to an int, str, float
// or list variable.
func (g *gen) aug() bool {
	v := g.assignable(func(t string) bool { return t == tInt || t == tStr || t == tFloat || t == tLI || t == tLS })
	if v == nil || (isList(v.t) && v.noMut) {
		// += on a list mutates it in place.
		return false
	}
	switch v.t {
	case tInt:
		op := pick(g, []string{"+=", "+=", "-=", "*="})
		rhs := g.small(tInt)
		if op == "*=" {
			rhs = fmt.Sprint(g.between(2, 3))
		} else if g.chance(0.4) {
			rhs = g.expr(tInt, 1)
			if strings.Contains(rhs, v.name) && g.loop > 0 {
				rhs = g.small(tInt)
			}
		}
		g.emit("%s %s %s", v.name, op, rhs)
	case tFloat:
		g.emit("%s %s %s", v.name, pick(g, []string{"+=", "-=", "*="}), g.litFloat())
	case tStr:
		g.emit("%s += %s", v.name, g.small(tStr))
	default:
		g.emit("%s += [%s]", v.name, g.small(elem(v.t)))
	}
	g.use("augassign")
	return true
}

// lambdaDecl binds a read-only int -> int lambda to a fresh name, at most
// one per scope.
func (g *gen) lambdaDecl() bool {
	if len(g.varsOf(tFn)) > 0 {
		return false
	}
	name := g.fresh(tFn)
	g.emit("%s = %s", name, g.lambda1(tInt, tInt))
	v := g.bind(name, tFn)
	v.ro = true
	return true
}

// emptyOf is the zero value a function starts accumulating into.
func emptyOf(t string) string {
	switch {
	case t == tInt:
		return "0"
	case t == tStr:
		return "''"
	case t == tBool:
		return "False"
	case t == tFloat:
		return "0.0"
	case isList(t):
		return "[]"
	case isDict(t):
		return "{}"
	case isSet(t):
		return "set()"
	}
	return ""
}

// cond is a condition for if, elif, while and raise: one that reads a
// variable when any can ("if False:" tests nothing).
func (g *gen) cond(d int) string {
	c := g.expr(tBool, d)
	for try := 0; try < 4 && !g.usesVar(c); try++ {
		c = g.expr(tBool, d)
	}
	return c
}

// swap is a tuple assignment between two variables of one type:
// "a, b = b, a" or, for ints, "a, b = b, a + b".
func (g *gen) swap() bool {
	for _, t := range []string{tInt, tStr} {
		vs := g.vars(func(v *variable) bool { return v.t == t && v.frozen == 0 && !v.ro })
		if len(vs) < 2 {
			continue
		}
		a := pick(g, vs)
		b := pick(g, vs)
		if a == b {
			continue
		}
		switch {
		case t == tInt && g.chance(0.5):
			g.emit("%s, %s = %s, %s + %s", a.name, b.name, b.name, a.name, b.name)
		case t == tInt && g.chance(0.5):
			g.emit("%s, %s = %s, %s %% %d", a.name, b.name, b.name, a.name, g.between(2, 5))
		default:
			g.emit("%s, %s = %s, %s", a.name, b.name, b.name, a.name)
		}
		g.noteDeps(a, b.name)
		g.noteDeps(b, a.name)
		g.use("tuple_assign")
		return true
	}
	return false
}
