package progen

import (
	"fmt"
	"regexp"
	"slices"
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

// freeze marks every variable named in expression s as being iterated, and
// returns a function undoing it.
func (g *gen) freeze(s string) func() {
	names := map[string]bool{}
	for _, id := range identifiers(s) {
		names[id] = true
	}
	var fz []*variable
	for _, v := range g.scope {
		if names[v.name] {
			v.frozen++
			fz = append(fz, v)
		}
	}
	return func() {
		for _, v := range fz {
			v.frozen--
		}
	}
}

func identifiers(s string) []string {
	var out []string
	start := -1
	var q byte
	for i := 0; i <= len(s); i++ {
		var ch byte
		if i < len(s) {
			ch = s[i]
		}
		if q != 0 {
			if ch == q {
				q = 0
			}
			continue
		}
		isID := ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9' && start >= 0)
		if isID {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if i-start > 0 && (start == 0 || s[start-1] != '.') {
				out = append(out, s[start:i])
			}
			start = -1
		}
		if ch == '\'' || ch == '"' {
			q = ch
		}
	}
	return out
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

func (g *gen) listMut() bool {
	v := g.mutableVar(isList)
	if v == nil {
		return false
	}
	et := elem(v.t)
	n := v.name
	m := pick(g, []string{"append", "append", "append", "pop", "insert", "sort", "reverse", "remove", "extend", "setitem", "del", "pop0", "sortkey", "clear"})
	switch m {
	case "append":
		g.emit("%s.append(%s)", n, g.notFrom(v, func() string { return g.expr(et, 1) }, et))
	case "pop":
		if g.chance(0.5) {
			g.emit("if %s:", n)
			g.block(func() { g.emit("%s.pop()", n) })
		} else {
			nv := g.fresh(et)
			g.emit("%s = %s.pop() if %s else %s", nv, n, n, g.literal(et))
			g.bind(nv, et)
		}
	case "pop0":
		m = "pop"
		g.emit("if %s:", n)
		g.block(func() {
			if g.chance(0.5) {
				g.emit("%s.pop(0)", n)
			} else {
				g.emit("del %s[0]", n)
				g.use("del")
			}
		})
	case "insert":
		g.emit("%s.insert(%s, %s)", n, pick(g, []string{"0", "0", "1", "-1", "len(" + n + ") // 2"}), g.small(et))
	case "sort":
		if !orderable(et) {
			return false
		}
		if g.chance(0.3) {
			g.emit("%s.sort(reverse=True)", n)
		} else {
			g.emit("%s.sort()", n)
		}
	case "sortkey":
		m = "sort"
		if et != tStr && et != tInt {
			return false
		}
		g.emit("%s.sort(key=%s)", n, g.lambda1(et, tInt))
	case "reverse":
		g.emit("%s.reverse()", n)
	case "remove":
		x := g.small(et)
		g.emit("if %s in %s:", x, n)
		g.block(func() { g.emit("%s.remove(%s)", n, x) })
	case "extend":
		src := g.expr(v.t, 1)
		if src == n || g.loop > 0 {
			src = g.literal(v.t)
			if src == "[]" {
				src = "[" + g.small(et) + "]"
			}
		}
		g.emit("%s.extend(%s)", n, src)
	case "setitem":
		if s := g.safeFor(v); s != "" {
			g.emit("%s = %s", s, g.expr(et, 1))
		} else {
			g.emit("if %s:", n)
			g.block(func() { g.emit("%s[%s] = %s", n, pick(g, []string{"0", "-1"}), g.expr(et, 1)) })
		}
	case "del":
		g.emit("if %s:", n)
		g.block(func() { g.emit("del %s[%s]", n, pick(g, []string{"0", "-1"})) })
	case "clear":
		if g.loop > 0 {
			return false
		}
		g.emit("%s.clear()", n)
	}
	g.use("list." + m)
	return true
}

// safeFor returns "xs[i]" when an index into v is proven safe.
func (g *gen) safeFor(v *variable) string {
	for _, s := range g.safe {
		if s.cont == v && s.off == 0 {
			return v.name + "[" + s.idx.name + "]"
		}
	}
	return ""
}

func (g *gen) dictMut() bool {
	v := g.mutableVar(isDict)
	if v == nil {
		return false
	}
	kt, vt := keyT(v.t), valT(v.t)
	n := v.name
	k := g.sub(kt, 0)
	if g.focus != nil && g.focus.t == kt && g.chance(0.7) {
		k = g.focus.name
	}
	m := pick(g, []string{"set", "count", "count", "get", "setdefault", "pop", "update", "del", "items", "popitem"})
	if vt == tDSLI || isList(vt) {
		m = pick(g, []string{"group", "group", "ifnot"})
	}
	switch m {
	case "set":
		g.emit("%s[%s] = %s", n, k, g.expr(vt, 1))
	case "count":
		if vt != tInt {
			g.emit("%s[%s] = %s", n, k, g.expr(vt, 1))
			m = "set"
			break
		}
		m = "get"
		g.emit("%s[%s] = %s.get(%s, 0) + %s", n, k, n, k, pick(g, []string{"1", "1", g.small(tInt)}))
	case "get":
		nv := g.fresh(vt)
		g.emit("%s = %s.get(%s, %s)", nv, n, k, g.literal(vt))
		g.bind(nv, vt)
	case "setdefault":
		g.emit("%s.setdefault(%s, %s)", n, k, g.expr(vt, 1))
	case "pop":
		if g.chance(0.5) {
			g.emit("%s.pop(%s, None)", n, k)
		} else {
			nv := g.fresh(vt)
			g.emit("%s = %s.pop(%s, %s)", nv, n, k, g.literal(vt))
			g.bind(nv, vt)
		}
	case "update":
		g.emit("%s.update({%s: %s})", n, k, g.expr(vt, 1))
	case "popitem":
		g.emit("if %s:", n)
		g.block(func() { g.emit("%s.popitem()", n) })
	case "del":
		g.emit("if %s in %s:", k, n)
		g.block(func() { g.emit("del %s[%s]", n, k) })
	case "items":
		if g.loop > 0 || g.depth >= g.maxDepth {
			return false
		}
		m = "items"
		return g.forOver(n+".items()", []string{kt, vt}, false)
	case "group":
		m = "setdefault"
		g.emit("%s.setdefault(%s, []).append(%s)", n, k, g.small(elem(vt)))
	case "ifnot":
		m = "in"
		g.emit("if %s not in %s:", k, n)
		g.block(func() { g.emit("%s[%s] = []", n, k) })
		g.emit("%s[%s].append(%s)", n, k, g.small(elem(vt)))
	}
	g.use("dict." + m)
	return true
}

func (g *gen) setMut() bool {
	v := g.mutableVar(isSet)
	if v == nil {
		return false
	}
	m := pick(g, []string{"add", "add", "discard", "update"})
	switch m {
	case "update":
		g.emit("%s.update(%s)", v.name, g.subVar(tLI, 0))
	default:
		g.emit("%s.%s(%s)", v.name, m, g.small(tInt))
	}
	g.use("set." + m)
	return true
}

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

func (g *gen) freshIdx() string {
	for _, n := range []string{"i", "j", "idx", "pos"} {
		if !g.inScope(n) {
			return n
		}
	}
	return g.fresh(tInt)
}

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

// loopBodyless generates one more statement focused on v (inside a try).
func (g *gen) loopBodyless(v *variable) {
	saved := g.focus
	g.focus = v
	g.stmts(1)
	g.focus = saved
}

func (g *gen) varNamed(n string) *variable {
	for _, v := range g.scope {
		if v.name == n {
			return v
		}
	}
	return nil
}

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

// elementRef matches a subscript that yields an element object: "rows[i]",
// "rows[0]" (not a slice, which copies).
var elementRef = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*\[[^\]:]*\]$`)

// mayAlias reports whether a mutable-typed expression may evaluate to an
// object some variable already holds (a bare name, a lookup in a dict of
// lists), which a later mutation would change behind a loop's back.
func (g *gen) mayAlias(rhs string) bool {
	if g.varNamed(rhs) != nil || elementRef.MatchString(rhs) {
		return true
	}
	return strings.Contains(rhs, ".get(") && !strings.HasSuffix(rhs, ")")
}

// selfRef reports whether expression e mentions v or a variable computed
// from v.
func (g *gen) selfRef(v *variable, e string) bool {
	for _, id := range identifiers(e) {
		if u := g.varNamed(id); u != nil && dependsOn(u, v, 0) {
			return true
		}
	}
	return false
}

func dependsOn(u, v *variable, depth int) bool {
	if u == v {
		return true
	}
	if depth > 8 {
		return false
	}
	for _, d := range u.deps {
		if dependsOn(d, v, depth+1) {
			return true
		}
	}
	return false
}

// noteDeps records that u was computed from the variables named in e.
func (g *gen) noteDeps(u *variable, e string) {
	for _, id := range identifiers(e) {
		if w := g.varNamed(id); w != nil && w != u && !slices.Contains(u.deps, w) {
			u.deps = append(u.deps, w)
		}
	}
}

// notFrom builds a value to put into v with gen, avoiding expressions made
// from v itself inside loops ("lines.append(”.join(lines))" doubles each
// iteration); it falls back to a small value of type t.
func (g *gen) notFrom(v *variable, gen func() string, t string) string {
	for range 3 {
		e := gen()
		if g.loop == 0 || !g.selfRef(v, e) {
			return e
		}
	}
	return g.small(t)
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
