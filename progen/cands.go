package progen

import (
	"fmt"
	"strings"
)

// candSet collects the candidate ways (cands) to build one expression,
// in the order choose sees them: the order and weights are part of the
// generated programs, pinned by TestExistingFamiliesPinned.
type candSet struct{ cs []cand }

// add appends a candidate with tag tag and weight w.
func (c *candSet) add(tag string, w int, f func() string) { c.cs = append(c.cs, cand{tag, w, f}) }

// cands lists the ways to build an expression of type t with nesting at
// most d: those that make any type, then those of t's kind, each kind in
// its own function below. A function value is only ever a fresh lambda.
func (g *gen) cands(t string, d int) []cand {
	if t == tFn {
		return []cand{{"lambda", 1, func() string { return g.lambda1(tInt, tInt) }}}
	}
	var c candSet
	g.anyTypeCands(&c, t, d)
	switch t {
	case tInt:
		g.intCands(&c, d)
	case tFloat:
		g.floatCands(&c, d)
	case tBool:
		g.boolCands(&c, d)
	case tStr:
		g.strCands(&c, d)
	}
	switch {
	case isList(t):
		g.listCands(&c, t, d)
	case isDict(t):
		g.dictCands(&c, t, d)
	case isSet(t):
		g.setCands(&c, t, d)
	case isTuple(t):
		g.tupleCands(&c, t, d)
	}
	return c.cs
}

// anyTypeCands adds the candidates of every type t: a variable, a literal, a
// helper call, a proven-safe element and (for immutable non-bool t) a
// ternary.
func (g *gen) anyTypeCands(c *candSet, t string, d int) {
	c.add("", 6, func() string {
		if v := g.someVar(t); v != nil {
			return v.name
		}
		return ""
	})
	c.add("lit", 1, func() string { return g.literal(t) })
	c.add("", 3, func() string { return g.callHelper(t, d) })
	c.add("", 4, func() string { return g.safeElem(t) })
	if !mutable(t) && t != tBool {
		// A ternary over mutable values may alias a variable; over bools
		// it is "True if c else False".
		c.add("ternary", 1, func() string {
			a, b := g.two(t, d-1)
			cond := g.expr(tBool, d-1)
			if !g.usesVar(cond) {
				return ""
			}
			return paren(a) + " if " + paren(cond) + " else " + paren(b)
		})
	}
}

// anyColl is a string or mutable collection variable in scope, or "".
func (g *gen) anyColl() string {
	vs := g.vars(func(v *variable) bool { return v.t == tStr || mutable(v.t) })
	if len(vs) == 0 {
		return ""
	}
	return pick(g, vs).name
}

// intCands adds the candidates for an int: lengths, arithmetic, counts and
// searches, sums and extrema, conversions, comprehensions that count, tuple
// fields and lambda calls.
func (g *gen) intCands(c *candSet, d int) {
	c.add("len", 6, func() string {
		if s := g.anyColl(); s != "" {
			return "len(" + s + ")"
		}
		return ""
	})
	c.add("arith", 5, func() string {
		a, b := g.two(tInt, d-1)
		return paren(a) + " " + pick(g, []string{"+", "-", "+", "-"}) + " " + paren(b)
	})
	c.add("arith", 2, func() string { return paren(g.sub(tInt, d-1)) + " * " + fmt.Sprint(g.between(2, 3)) })
	c.add("floordiv_mod", 3, func() string {
		return paren(g.sub(tInt, d-1)) + " " + pick(g, []string{"//", "%"}) + " " + fmt.Sprint(g.between(2, 5))
	})
	c.add("abs", 1, func() string { return "abs(" + g.sub(tInt, d-1) + ")" })
	c.add("min_max", 2, func() string {
		a, b := g.two(tInt, d-1)
		return pick(g, []string{"min", "max"}) + "(" + a + ", " + b + ")"
	})
	c.add("sum", 3, func() string { return "sum(" + g.subVar(tLI, d-1) + ")" })
	c.add("min_max", 2, func() string {
		xs := g.subVar(tLI, d-1)
		return pick(g, []string{"max", "min"}) + "(" + xs + ") if " + xs + " else " + fmt.Sprint(g.litInt())
	})
	c.add("min_max_default", 1, func() string {
		return pick(g, []string{"max", "min"}) + "(" + g.subVar(tLI, d-1) + ", default=" + fmt.Sprint(g.litInt()) + ")"
	})
	c.add("str.count", 3, func() string { return paren(g.subVar(tStr, d-1)) + ".count(" + g.charExpr() + ")" })
	c.add("str.find", 2, func() string {
		return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"find", "rfind"}) + "(" + g.small(tStr) + ")"
	})
	c.add("list.count", 2, func() string { return g.subVar(tLI, d-1) + ".count(" + g.small(tInt) + ")" })
	c.add("list.index", 2, func() string {
		xs, x := g.subVar(tLI, d-1), g.small(tInt)
		return xs + ".index(" + x + ") if " + x + " in " + xs + " else -1"
	})
	c.add("str.index", 1, func() string {
		s, c := g.subVar(tStr, d-1), g.charExpr()
		return s + ".index(" + c + ") if " + c + " in " + s + " else -1"
	})
	c.add("dict.get", 3, func() string {
		vs := g.vars(func(v *variable) bool { return isDict(v.t) && valT(v.t) == tInt })
		if len(vs) == 0 {
			return ""
		}
		dv := pick(g, vs)
		return dv.name + ".get(" + g.sub(keyT(dv.t), 0) + ", " + fmt.Sprint(g.between(0, 1)) + ")"
	})
	c.add("int()", 2, func() string {
		s := g.subVar(tStr, d-1)
		return "int(" + s + ") if " + s + ".isdigit() else " + fmt.Sprint(g.litInt())
	})
	c.add("int()", 1, func() string { return "int(" + g.subVar(tFloat, d-1) + ")" })
	c.add("round", 1, func() string { return "round(" + g.subVar(tFloat, d-1) + ")" })
	c.add("genexp", 2, func() string {
		et := pick(g, []string{tStr, tInt})
		src, ch := g.iterable(et)
		return g.withTemp(et, ch, func(v *variable) string {
			return "sum(1 for " + v.name + " in " + src + " if " + g.pred(v) + ")"
		})
	})
	c.add("listcomp", 2, func() string {
		et := pick(g, []string{tStr, tInt})
		src, ch := g.iterable(et)
		return g.withTemp(et, ch, func(v *variable) string {
			return "len([" + v.name + " for " + v.name + " in " + src + " if " + g.pred(v) + "])"
		})
	})
	c.add("split", 1, func() string { return "len(" + paren(g.subVar(tStr, d-1)) + ".split())" })
	c.add("nested_sum", 1, func() string {
		rows := g.someVar(tLLI)
		if rows == nil {
			return ""
		}
		return pick(g, []string{"sum(map(sum, " + rows.name + "))", "sum(map(len, " + rows.name + "))", "len(" + rows.name + "[0]) if " + rows.name + " else 0"})
	})
	c.add("ord", 1, func() string {
		vs := g.vars(func(v *variable) bool { return v.char })
		if len(vs) == 0 {
			return ""
		}
		return "ord(" + pick(g, vs).name + ")"
	})
	c.add("tuple_index", 2, func() string {
		vs := g.vars(func(v *variable) bool { return isTuple(v.t) })
		for _, v := range vs {
			for i, a := range args(v.t) {
				if a == tInt {
					return fmt.Sprintf("%s[%d]", v.name, i)
				}
			}
		}
		return ""
	})
	c.add("lambda", 2, func() string {
		vs := g.varsOf(tFn)
		if len(vs) == 0 {
			return ""
		}
		return pick(g, vs).name + "(" + g.sub(tInt, d-1) + ")"
	})
	c.add("neg", 1, func() string { return "-" + paren(g.subVar(tInt, d-1)) })
}

// floatCands adds the candidates for a float: division, means, rounding and
// conversion.
func (g *gen) floatCands(c *candSet, d int) {
	c.add("div", 4, func() string { return paren(g.sub(tInt, d-1)) + " / " + fmt.Sprint(pick(g, []int{2, 4, 5, 10})) })
	c.add("div", 2, func() string {
		return paren(g.sub(tFloat, d-1)) + " " + pick(g, []string{"+", "-", "*"}) + " " + g.litFloat()
	})
	c.add("float()", 1, func() string { return "float(" + g.sub(tInt, d-1) + ")" })
	c.add("round", 2, func() string { return "round(" + g.sub(tFloat, d-1) + ", " + fmt.Sprint(g.between(1, 2)) + ")" })
	c.add("mean", 3, func() string {
		xs := g.subVar(tLI, d-1)
		return "sum(" + xs + ") / len(" + xs + ") if " + xs + " else 0.0"
	})
	c.add("min_max", 1, func() string { return "max(" + g.sub(tFloat, d-1) + ", " + g.litFloat() + ")" })
}

// boolCands adds the candidates for a bool: comparisons, membership, string
// predicates, logic, any/all and truthiness.
func (g *gen) boolCands(c *candSet, d int) {
	c.add("compare", 8, func() string {
		ct := pick(g, []string{tInt, tInt, tStr, tInt, tFloat})
		if len(g.varsOf(ct)) == 0 {
			ct = tInt
		}
		op := pick(g, []string{"<", "<=", ">", ">=", "==", "!="})
		lhs, rhs := g.two(ct, d-1)
		if ct == tStr && g.chance(0.6) {
			rhs = g.litStr()
		} else if ct == tInt && g.chance(0.5) {
			rhs = fmt.Sprint(g.litInt())
		}
		return paren(lhs) + " " + op + " " + paren(rhs)
	})
	c.add("in", 4, func() string {
		return g.charExpr() + " " + pick(g, []string{"in", "not in"}) + " " + g.subVar(tStr, d-1)
	})
	c.add("in", 3, func() string {
		return g.small(tInt) + " " + pick(g, []string{"in", "not in"}) + " " + g.subVar(tLI, d-1)
	})
	c.add("in", 2, func() string {
		vs := g.vars(func(v *variable) bool { return isDict(v.t) || isSet(v.t) })
		if len(vs) == 0 {
			return ""
		}
		dv := pick(g, vs)
		kt := elem(dv.t)
		if isDict(dv.t) {
			kt = keyT(dv.t)
		}
		return g.sub(kt, 0) + " in " + dv.name
	})
	c.add("str.is*", 3, func() string {
		return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"isdigit", "isalpha", "isupper", "islower", "isalnum", "isspace", "istitle", "isascii", "isdecimal", "isnumeric"}) + "()"
	})
	c.add("str.startswith", 3, func() string {
		return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"startswith", "endswith"}) + "(" + g.small(tStr) + ")"
	})
	c.add("not", 2, func() string { return "not " + paren(g.expr(tBool, d-1)) })
	c.add("and_or", 2, func() string {
		a, b := g.expr(tBool, d-1), g.expr(tBool, d-1)
		if a == b || !g.usesVar(a) || !g.usesVar(b) {
			return ""
		}
		return paren(a) + " " + pick(g, []string{"and", "or"}) + " " + paren(b)
	})
	c.add("any_all", 3, func() string {
		et := pick(g, []string{tStr, tInt})
		src, ch := g.iterable(et)
		return g.withTemp(et, ch, func(v *variable) string {
			return pick(g, []string{"any", "all"}) + "(" + g.pred(v) + " for " + v.name + " in " + src + ")"
		})
	})
	c.add("any_all", 1, func() string {
		et := pick(g, []string{tStr, tInt})
		src, ch := g.iterable(et)
		return g.withTemp(et, ch, func(v *variable) string {
			return pick(g, []string{"any", "all"}) + "([" + g.pred(v) + " for " + v.name + " in " + src + "])"
		})
	})
	c.add("len", 3, func() string {
		if s := g.anyColl(); s != "" {
			return fmt.Sprintf("len(%s) %s %d", s, pick(g, []string{">", "<", "==", ">="}), g.between(0, 4))
		}
		return ""
	})
	c.add("sorted", 1, func() string {
		xs := g.subVar(tLI, d-1)
		return xs + " == sorted(" + xs + ")"
	})
	c.add("palindrome", 1, func() string {
		s := g.subVar(tStr, d-1)
		return s + " == " + s + "[::-1]"
	})
	c.add("bool()", 1, func() string {
		if c := g.anyColl(); c != "" {
			return "bool(" + c + ")"
		}
		return ""
	})
	c.add("is_none", 1, func() string {
		vs := g.vars(func(v *variable) bool { return isDict(v.t) })
		if len(vs) == 0 {
			return ""
		}
		dv := pick(g, vs)
		return dv.name + ".get(" + g.sub(keyT(dv.t), 0) + ") " + pick(g, []string{"is None", "is not None"})
	})
	c.add("parity", 2, func() string { return paren(g.subVar(tInt, d-1)) + " % 2 == " + fmt.Sprint(g.intn(2)) })
	c.add("truthy", 2, func() string {
		if s := g.anyColl(); s != "" {
			return pick(g, []string{"", "not "}) + s
		}
		return ""
	})
}

// strCands adds the candidates for a str: string methods, slices,
// concatenation, formatting, joins, padding, indexing and dict lookups.
func (g *gen) strCands(c *candSet, d int) {
	c.add("str.method", 8, func() string {
		m := pick(g, []string{"upper", "lower", "strip", "lstrip", "rstrip", "title", "capitalize", "swapcase"})
		g.use("str." + m)
		return paren(g.subVar(tStr, d-1)) + "." + m + "()"
	})
	c.add("str.strip_chars", 1, func() string {
		return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"strip", "lstrip", "rstrip"}) + "(" + g.litStr() + ")"
	})
	c.add("str.replace", 4, func() string {
		rep := g.small(tStr)
		if g.grows() {
			rep = pick(g, []string{"''", g.litChar()})
		}
		s := paren(g.subVar(tStr, d-1)) + ".replace(" + g.charExpr() + ", " + rep
		if g.chance(0.2) {
			s += ", 1"
		}
		return s + ")"
	})
	c.add("slice", 3, func() string {
		// Slices never raise: cut at an int variable, often the loop's.
		i := g.someVar(tInt)
		if i == nil {
			return ""
		}
		s := paren(g.subVar(tStr, d-1))
		return pick(g, []string{s + "[:" + i.name + "]", s + "[" + i.name + ":]", s + "[" + i.name + ":" + i.name + " + 2]", s + "[" + i.name + " + 1:]"})
	})
	c.add("slice", 6, func() string {
		s := paren(g.subVar(tStr, d-1))
		switch g.intn(6) {
		case 0:
			return s + "[::-1]"
		case 1:
			return fmt.Sprintf("%s[%d:]", s, g.between(1, 3))
		case 2:
			return fmt.Sprintf("%s[:%d]", s, g.between(1, 4))
		case 3:
			return fmt.Sprintf("%s[%d:%d]", s, g.between(0, 2), g.between(2, 5))
		case 4:
			return s + "[::2]"
		default:
			return fmt.Sprintf("%s[:-%d]", s, g.between(1, 2))
		}
	})
	c.add("concat", 4, func() string { return paren(g.sub(tStr, d-1)) + " + " + paren(g.small(tStr)) })
	c.add("str.affix", 2, func() string {
		return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"removeprefix", "removesuffix"}) + "(" + g.small(tStr) + ")"
	})
	c.add("str.format", 2, func() string {
		a, b := g.someVar(tStr), g.someVar(tInt)
		if a == nil || b == nil {
			return ""
		}
		return pick(g, []string{"'{}-{}'", "'{}: {}'", "'{} ({})'"}) + ".format(" + a.name + ", " + b.name + ")"
	})
	c.add("str.translate", 1, func() string {
		if len(g.chars) < 4 {
			return ""
		}
		from := g.chars[0] + g.chars[1]
		to := g.chars[2] + g.chars[3]
		return paren(g.subVar(tStr, d-1)) + ".translate(str.maketrans(" + pyStr(from) + ", " + pyStr(to) + "))"
	})
	c.add("str.method", 1, func() string { return paren(g.subVar(tStr, d-1)) + ".casefold()" })
	c.add("chr", 1, func() string {
		vs := g.vars(func(v *variable) bool { return v.char })
		if len(vs) == 0 {
			return ""
		}
		return "chr(ord(" + pick(g, vs).name + ") + 1)"
	})
	c.add("str.index", 1, func() string {
		s, c := g.subVar(tStr, d-1), g.charExpr()
		return "str(" + s + ".rindex(" + c + ")) if " + c + " in " + s + " else ''"
	})
	c.add("str.join", 5, func() string {
		return pick(g, []string{"''", "' '", "', '", "'-'", "'|'", "'\\n'"}) + ".join(" + g.sub(tLS, d-1) + ")"
	})
	c.add("reversed", 2, func() string { return "''.join(reversed(" + g.subVar(tStr, d-1) + "))" })
	c.add("sorted", 2, func() string { return "''.join(sorted(" + g.subVar(tStr, d-1) + "))" })
	c.add("str()", 3, func() string { return "str(" + g.sub(pick(g, []string{tInt, tInt, tFloat, tLI}), d-1) + ")" })
	c.add("fstring", 4, func() string {
		// Only names inside the braces: no quotes within the f-string.
		a := g.someVar(pick(g, []string{tInt, tStr}))
		b := g.someVar(pick(g, []string{tInt, tStr, tFloat}))
		if a == nil || b == nil || a == b {
			if a == nil {
				return ""
			}
			return "f'" + pick(g, []string{"<", "[", "(", "#"}) + "{" + a.name + "}" + pick(g, []string{">", "]", ")", "#"}) + "'"
		}
		sep := pick(g, []string{"-", ":", " ", "=", ", ", ""})
		return "f'{" + a.name + "}" + sep + "{" + b.name + "}'"
	})
	c.add("str.pad", 2, func() string {
		s := paren(g.subVar(tStr, d-1))
		n := g.between(3, 8)
		switch g.intn(4) {
		case 0:
			return fmt.Sprintf("%s.zfill(%d)", s, n)
		case 1:
			return fmt.Sprintf("%s.center(%d, '%s')", s, n, pick(g, []string{"*", "-", "#", "."}))
		case 2:
			return fmt.Sprintf("%s.ljust(%d, '%s')", s, n, pick(g, []string{"*", "-", "#", "."}))
		default:
			return fmt.Sprintf("%s.rjust(%d)", s, n)
		}
	})
	c.add("repeat", 1, func() string {
		if g.loop > 0 {
			return ""
		}
		return paren(g.subVar(tStr, d-1)) + " * " + fmt.Sprint(g.between(2, 3))
	})
	c.add("index", 2, func() string {
		s := g.subVar(tStr, d-1)
		return s + pick(g, []string{"[0]", "[-1]"}) + " if " + s + " else " + g.litStr()
	})
	c.add("index", 1, func() string {
		ws := g.subVar(tLS, d-1)
		return ws + pick(g, []string{"[0]", "[-1]"}) + " if " + ws + " else " + g.litStr()
	})
	c.add("genexp", 3, func() string {
		src := g.subVar(tStr, d-1)
		return g.withTemp(tStr, true, func(v *variable) string {
			if g.chance(0.5) {
				return "''.join(" + v.name + " for " + v.name + " in " + src + " if " + g.pred(v) + ")"
			}
			return "''.join([" + g.mapOn(v, tStr) + " if " + g.pred(v) + " else " + v.name + " for " + v.name + " in " + src + "])"
		})
	})
	c.add("genexp", 2, func() string {
		src := g.subVar(tLS, d-1)
		return g.withTemp(tStr, false, func(v *variable) string {
			return pick(g, []string{"' '", "''", "'-'"}) + ".join(" + g.mapOn(v, tStr) + " for " + v.name + " in " + src + ")"
		})
	})
	c.add("str.partition", 1, func() string {
		return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"partition", "rpartition"}) + "(" + g.charExpr() + ")[" + fmt.Sprint(pick(g, []int{0, 2})) + "]"
	})
	c.add("dict.get", 2, func() string {
		vs := g.vars(func(v *variable) bool { return isDict(v.t) && valT(v.t) == tStr })
		if len(vs) == 0 {
			return ""
		}
		dv := pick(g, vs)
		return dv.name + ".get(" + g.sub(keyT(dv.t), 0) + ", " + g.litStr() + ")"
	})
	c.add("max_key", 1, func() string {
		d := g.someVar(tDSI)
		if d == nil {
			return ""
		}
		return pick(g, []string{"max", "min"}) + "(" + d.name + ", key=" + d.name + ".get) if " + d.name + " else ''"
	})
	c.add("tuple_index", 1, func() string {
		for _, v := range g.vars(func(v *variable) bool { return isTuple(v.t) }) {
			for i, a := range args(v.t) {
				if a == tStr {
					return fmt.Sprintf("%s[%d]", v.name, i)
				}
			}
		}
		return ""
	})
}

// listCands adds the candidates for a list of type t: copies, sorts, slices,
// comprehensions, splits, ranges, keys, zips and enumerations.
func (g *gen) listCands(c *candSet, t string, d int) {
	et := elem(t)
	c.add("list()", 1, func() string { return paren(g.subVar(t, d-1)) + "[:]" })
	c.add("list.copy", 1, func() string { return g.subVar(t, d-1) + ".copy()" })
	c.add("starred", 1, func() string {
		xs := g.subVar(t, d-1)
		if g.chance(0.5) {
			return "[*" + xs + ", " + g.small(et) + "]"
		}
		return "[" + g.small(et) + ", *" + xs + "]"
	})
	if orderable(et) {
		c.add("sorted", 5, func() string {
			xs := g.sub(t, d-1)
			switch g.intn(4) {
			case 0:
				return "sorted(" + xs + ", reverse=True)"
			case 1:
				if et == tStr {
					return "sorted(" + xs + ", key=" + pick(g, []string{"len", "str.lower", g.lambda1(tStr, tInt)}) + ")"
				}
				if et == tInt {
					return "sorted(" + xs + ", key=" + g.lambda1(tInt, pick(g, []string{tInt, tTII})) + ")"
				}
			}
			return "sorted(" + xs + ")"
		})
	}
	c.add("reversed", 2, func() string { return "list(reversed(" + g.subVar(t, d-1) + "))" })
	c.add("slice", 4, func() string {
		xs := paren(g.subVar(t, d-1))
		return pick(g, []string{xs + "[::-1]", xs + "[1:]", xs + "[:-1]", fmt.Sprintf("%s[:%d]", xs, g.between(1, 3)), fmt.Sprintf("%s[%d:]", xs, g.between(1, 2)), xs + "[::2]"})
	})
	c.add("slice", 2, func() string {
		i := g.someVar(tInt)
		if i == nil {
			return ""
		}
		xs := paren(g.subVar(t, d-1))
		return pick(g, []string{xs + "[:" + i.name + "]", xs + "[" + i.name + ":]", xs + "[" + i.name + " + 1:]"})
	})
	c.add("concat", 2, func() string { return paren(g.subVar(t, d-1)) + " + [" + g.small(et) + "]" })
	c.add("concat", 1, func() string {
		if g.loop > 0 {
			return ""
		}
		a, b := g.two(t, d-1)
		return a + " + " + b
	})
	c.add("listcomp", 6, func() string {
		srcT := pick(g, []string{et, et, tInt, tStr})
		if et != tInt && et != tStr {
			srcT = et
		}
		src, ch := g.iterable(srcT)
		return g.withTemp(srcT, ch, func(v *variable) string {
			body := v.name
			if srcT != et || g.chance(0.6) {
				body = g.mapOn(v, et)
			}
			s := "[" + body + " for " + v.name + " in " + src
			if g.chance(0.5) || body == v.name {
				s += " if " + g.pred(v)
			}
			return s + "]"
		})
	})
	c.add("range", 2, func() string {
		if et != tInt {
			return ""
		}
		switch g.intn(3) {
		case 0:
			return fmt.Sprintf("list(range(%d))", g.between(1, 6))
		case 1:
			return fmt.Sprintf("list(range(%d, %d))", g.between(0, 3), g.between(4, 8))
		default:
			return "list(range(len(" + g.subVar(pick(g, []string{tStr, tLS}), d-1) + ")))"
		}
	})
	c.add("split", 1, func() string {
		if et != tStr {
			return ""
		}
		if g.chance(0.5) {
			return paren(g.subVar(tStr, d-1)) + ".splitlines()"
		}
		return paren(g.subVar(tStr, d-1)) + ".rsplit(" + g.charExpr() + ", 1)"
	})
	c.add("split", 6, func() string {
		if et != tStr {
			return ""
		}
		s := paren(g.subVar(tStr, d-1))
		switch g.intn(4) {
		case 0:
			return s + ".split()"
		case 1:
			return "list(" + g.subVar(tStr, d-1) + ")"
		default:
			return s + ".split(" + g.charExpr() + ")"
		}
	})
	c.add("dict.keys", 2, func() string {
		vs := g.vars(func(v *variable) bool { return isDict(v.t) && (keyT(v.t) == et || valT(v.t) == et) })
		if len(vs) == 0 {
			return ""
		}
		dv := pick(g, vs)
		if keyT(dv.t) == et && (valT(dv.t) != et || g.chance(0.5)) {
			return "list(" + dv.name + pick(g, []string{".keys()", ""}) + ")"
		}
		g.use("dict.values")
		return "list(" + dv.name + ".values())"
	})
	c.add("set", 2, func() string {
		if et != tInt {
			return ""
		}
		return "sorted(set(" + g.subVar(tLI, d-1) + "))"
	})
	c.add("map_filter", 2, func() string {
		if et != tInt && et != tStr {
			return ""
		}
		if g.chance(0.5) {
			return "list(map(" + g.lambda1(et, et) + ", " + g.subVar(t, d-1) + "))"
		}
		g.use("filter")
		return "list(filter(" + g.lambdaPred(et) + ", " + g.subVar(t, d-1) + "))"
	})
	c.add("enumerate", 3, func() string {
		if t != tLTIS {
			return ""
		}
		return "list(enumerate(" + g.subVar(tLS, d-1) + "))"
	})
	c.add("zip", 3, func() string {
		if t != tLTSI {
			return ""
		}
		return "list(zip(" + g.subVar(tLS, d-1) + ", " + g.subVar(tLI, d-1) + "))"
	})
	c.add("dict.items", 3, func() string {
		if t != tLTSI {
			return ""
		}
		vs := g.varsOf(tDSI)
		if len(vs) == 0 {
			return ""
		}
		return pick(g, []string{"sorted(", "list("}) + pick(g, vs).name + ".items())"
	})
	c.add("sorted", 2, func() string {
		if t != tLTSI {
			return ""
		}
		vs := g.varsOf(tDSI)
		if len(vs) == 0 {
			return ""
		}
		g.use("lambda")
		return "sorted(" + pick(g, vs).name + ".items(), key=lambda kv: " + pick(g, []string{"kv[1]", "-kv[1]", "(kv[1], kv[0])"}) + pick(g, []string{"", ", reverse=True"}) + ")"
	})
	c.add("zip", 2, func() string {
		if t != tLI {
			return ""
		}
		a, b := g.subVar(tLI, d-1), g.subVar(tLI, d-1)
		return g.withTemp(tInt, false, func(x *variable) string {
			return g.withTemp(tInt, false, func(y *variable) string {
				return "[" + x.name + " " + pick(g, []string{"+", "-", "*"}) + " " + y.name + " for " + x.name + ", " + y.name + " in zip(" + a + ", " + b + ")]"
			})
		})
	})
	c.add("nested_comp", 3, func() string {
		if t != tLI {
			return ""
		}
		rows := g.someVar(tLLI)
		if rows == nil {
			return ""
		}
		switch g.intn(3) {
		case 0:
			return g.withTemp(tLI, false, func(r *variable) string {
				return g.withTemp(tInt, false, func(x *variable) string {
					return "[" + x.name + " for " + r.name + " in " + rows.name + " for " + x.name + " in " + r.name + "]"
				})
			})
		case 1:
			return g.withTemp(tLI, false, func(r *variable) string {
				return "[" + g.mapOn(r, tInt) + " for " + r.name + " in " + rows.name + "]"
			})
		default:
			g.use("starred")
			return g.withTemp(tTII, false, func(c *variable) string {
				return "[sum(" + c.name + ") for " + c.name + " in zip(*" + rows.name + ")]"
			})
		}
	})
	c.add("enumerate", 2, func() string {
		if t != tLI {
			return ""
		}
		s := g.subVar(tStr, d-1)
		return g.withTemp(tInt, false, func(i *variable) string {
			return g.withTemp(tStr, true, func(c *variable) string {
				return "[" + i.name + " for " + i.name + ", " + c.name + " in enumerate(" + s + ") if " + g.pred(c) + "]"
			})
		})
	})
}

// dictCands adds the candidates for a dict of type t: copies, fromkeys, dict
// comprehensions, zips, enumerations and sorted items.
func (g *gen) dictCands(c *candSet, t string, d int) {
	kt, vt := keyT(t), valT(t)
	c.add("dict.copy", 1, func() string { return g.subVar(t, d-1) + ".copy()" })
	c.add("dict.fromkeys", 1, func() string {
		if isList(vt) {
			return ""
		}
		return "dict.fromkeys(" + g.subVar("list["+kt+"]", d-1) + ", " + g.literal(vt) + ")"
	})
	c.add("dictcomp", 5, func() string {
		if vt == tDSLI || isList(vt) {
			return ""
		}
		src, ch := g.iterable(kt)
		return g.withTemp(kt, ch, func(v *variable) string {
			return "{" + v.name + ": " + g.mapOn(v, vt) + " for " + v.name + " in " + src + "}"
		})
	})
	c.add("zip", 3, func() string {
		if isList(vt) {
			return ""
		}
		return "dict(zip(" + g.subVar("list["+kt+"]", d-1) + ", " + g.subVar("list["+vt+"]", d-1) + "))"
	})
	c.add("enumerate", 2, func() string {
		if kt != tInt || isList(vt) {
			return ""
		}
		return "dict(enumerate(" + g.subVar("list["+vt+"]", d-1) + "))"
	})
	c.add("dictcomp", 3, func() string {
		vs := g.varsOf(t)
		if len(vs) == 0 || isList(vt) {
			return ""
		}
		dv := pick(g, vs)
		return g.withTemp(kt, false, func(k *variable) string {
			return g.withTemp(vt, false, func(v *variable) string {
				return "{" + k.name + ": " + v.name + " for " + k.name + ", " + v.name + " in " + dv.name + ".items() if " + g.pred(v) + "}"
			})
		})
	})
	c.add("sorted", 1, func() string {
		if !orderable(kt) {
			return ""
		}
		return "dict(sorted(" + g.subVar(t, d-1) + ".items()))"
	})
}

// setCands adds the candidates for a set of type t: set(), set
// comprehensions and set operators.
func (g *gen) setCands(c *candSet, t string, d int) {
	c.add("set", 4, func() string { return "set(" + g.subVar(tLI, d-1) + ")" })
	c.add("setcomp", 2, func() string {
		src, _ := g.iterable(tInt)
		return g.withTemp(tInt, false, func(v *variable) string {
			return "{" + g.mapOn(v, tInt) + " for " + v.name + " in " + src + "}"
		})
	})
	c.add("set_ops", 3, func() string {
		return g.subVar(t, d-1) + " " + pick(g, []string{"|", "&", "-", "^"}) + " " + g.sub(t, d-1)
	})
}

// tupleCands adds the candidates for a tuple of type t: tuples of
// sub-expressions and divmod.
func (g *gen) tupleCands(c *candSet, t string, d int) {
	c.add("tuple", 5, func() string {
		a := args(t)
		parts := make([]string, len(a))
		for i, at := range a {
			parts[i] = g.sub(at, d-1)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	})
	c.add("divmod", 2, func() string {
		if t != tTII {
			return ""
		}
		return "divmod(" + g.subVar(tInt, d-1) + ", " + fmt.Sprint(g.between(2, 5)) + ")"
	})
}
