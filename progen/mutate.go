// mutate.go: statements that change a list, dict or set in place (append,
// insert, pop, update, ...), each kept from raising or aliasing.

package progen

// listMut mutates a list variable in place (append, pop, insert, sort,
// remove, item assignment, del, clear, ...), guarded so it cannot raise.
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

// dictMut updates a dict variable (item assignment, counting, get,
// setdefault, pop, update, del, grouping, ...), guarded so it cannot raise.
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

// setMut adds to, discards from or updates a set variable.
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
