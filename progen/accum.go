package progen

// accumTypes are the types an accumulator may have.
var accumTypes = []string{tLI, tLS, tInt, tStr, tDSI, tDII, tSI, tBool, tFloat, tLLI}

// accumulate emits the commonest shape of such code: an empty accumulator,
// then a loop over a collection that updates it from each element.
func (g *gen) accumulate() bool {
	t := g.retT
	if !contains(accumTypes, t) || g.chance(0.4) {
		t = g.fam.pickLocal(g)
	}
	if !contains(accumTypes, t) {
		t = tLI
	}
	name := g.fresh(t)
	g.emit("%s = %s", name, emptyOf(t))
	acc := g.bind(name, t)
	g.use("accumulate")
	g.pendingAcc = acc
	ok := g.forStmt()
	g.pendingAcc = nil
	return ok
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// update changes acc using the loop variable in focus: append, +=, count
// into a dict, keep a running max.
func (g *gen) update(acc *variable) bool {
	x := g.focus
	if x == nil || acc.frozen > 0 || acc.ro || acc.noMut {
		return false
	}
	a := acc.name
	switch acc.t {
	case tLI, tLS:
		et := elem(acc.t)
		if g.chance(0.15) {
			g.emit("%s.insert(0, %s)", a, g.mapOn(x, et))
			g.use("list.insert")
		} else {
			g.emit("%s.append(%s)", a, g.mapOrSelf(x, et))
			g.use("list.append")
		}
	case tLLI:
		g.emit("%s.append(%s)", a, g.mapOn(x, tLI))
		g.use("list.append")
	case tInt:
		switch g.intn(4) {
		case 0:
			g.emit("%s += 1", a)
		case 1:
			if x.t != tInt {
				g.emit("%s += %s", a, g.mapOn(x, tInt))
				break
			}
			g.emit("%s = %s(%s, %s)", a, pick(g, []string{"max", "min"}), a, x.name)
			g.use("min_max")
		default:
			g.emit("%s %s %s", a, pick(g, []string{"+=", "+=", "-="}), g.mapOrSelf(x, tInt))
		}
		g.use("augassign")
	case tFloat:
		g.emit("%s += %s / %d", a, g.mapOrSelf(x, tInt), pick(g, []int{2, 4}))
	case tStr:
		if g.chance(0.2) {
			g.emit("%s = %s + %s", a, paren(g.mapOrSelf(x, tStr)), a)
		} else {
			g.emit("%s += %s", a, g.mapOrSelf(x, tStr))
		}
		g.use("augassign")
	case tDSI, tDII:
		kt := keyT(acc.t)
		k := x.name
		if x.t != kt {
			k = g.mapOn(x, kt)
		}
		if g.chance(0.6) {
			g.emit("%s[%s] = %s.get(%s, 0) + 1", a, k, a, k)
			g.use("dict.get")
		} else if x.t == kt && g.chance(0.5) {
			g.emit("%s.setdefault(%s, %s)", a, k, g.mapOn(x, tInt))
			g.use("dict.setdefault")
		} else {
			g.emit("%s[%s] = %s", a, k, g.mapOn(x, tInt))
			g.use("dict.set")
		}
	case tSI:
		g.emit("%s.add(%s)", a, g.mapOrSelf(x, tInt))
		g.use("set.add")
	case tBool:
		g.emit("if %s:", g.pred(x))
		g.block(func() {
			g.emit("%s = %s", a, pick(g, []string{"True", "not " + a}))
			if g.loop > 0 && g.chance(0.5) {
				g.emit("break")
				g.use("break")
			}
		})
	default:
		return false
	}
	return true
}

// mapOrSelf is x itself when it already has type t, else a transform.
func (g *gen) mapOrSelf(x *variable, t string) string {
	if x.t == t && g.chance(0.5) {
		return x.name
	}
	return g.mapOn(x, t)
}

// updateSome updates an accumulator in scope from the focus variable.
func (g *gen) updateSome() bool {
	if g.focus == nil {
		return false
	}
	vs := g.vars(func(v *variable) bool {
		return contains(accumTypes, v.t) && v.frozen == 0 && !v.ro && !v.noMut && v != g.focus
	})
	if len(vs) == 0 {
		return false
	}
	// Prefer the most recent ones: they are what the loop is building.
	v := vs[len(vs)-1]
	if len(vs) > 1 && g.chance(0.3) {
		v = pick(g, vs)
	}
	if g.chance(0.35) && v.t != tBool {
		g.emit("if %s:", g.pred(g.focus))
		g.block(func() { g.update(v) })
		g.use("if")
		return true
	}
	return g.update(v)
}
