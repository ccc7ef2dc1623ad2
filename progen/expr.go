package progen

import (
	"fmt"
	"strings"
)

// cand is one way to build an expression; f returns "" when it does not
// apply in the current scope.
type cand struct {
	tag string
	w   int
	f   func() string
}

// compTags are the constructs that run a frame per element.
var compTags = map[string]bool{"sorted": true, "listcomp": true, "genexp": true, "any_all": true, "map_filter": true, "dictcomp": true, "setcomp": true, "zip": true, "enumerate": true}

// choose picks among cands by weight, trying others when one does not apply.
func (g *gen) choose(cands []cand) (string, string) {
	total := 0
	for _, c := range cands {
		total += c.w
	}
	for range 6 {
		if total <= 0 {
			break
		}
		n := g.intn(total)
		for i, c := range cands {
			if n < c.w {
				// Comprehensions inside loops make traces quadratic: rarer.
				if !(g.loop > 0 && compTags[c.tag] && g.chance(0.75)) {
					before := g.miss
					s := c.f()
					if c.tag == "stmt" || c.tag == "lit" {
						if s != "" {
							return s, c.tag
						}
					} else if s != "" && g.miss == before && g.usesVar(s) {
						return s, c.tag
					}
					// Rejected: forget the misses of what was thrown away.
					g.miss = before
				}
				total -= c.w
				cands = append(cands[:i:i], cands[i+1:]...)
				break
			}
			n -= c.w
		}
	}
	return "", ""
}

// usesVar reports whether expression s mentions a variable in scope:
// expressions made of literals alone are not worth generating.
func (g *gen) usesVar(s string) bool {
	for _, id := range identifiers(s) {
		if g.varNamed(id) != nil {
			return true
		}
	}
	return false
}

// sub is an operand of type t: usually a variable in scope, else a smaller
// expression or a literal.
func (g *gen) sub(t string, d int) string {
	if v := g.someVar(t); v != nil && g.chance(0.75) {
		return v.name
	}
	if d <= 0 || g.chance(0.3) {
		if v := g.someVar(t); v != nil {
			return v.name
		}
		return g.literal(t)
	}
	return g.expr(t, d-1)
}

// two returns two different operands of type t, the first a variable
// when there is one.
func (g *gen) two(t string, d int) (string, string) {
	a := g.subVar(t, d)
	for range 3 {
		if b := g.sub(t, d); b != a {
			return a, b
		}
	}
	return a, g.literal(t)
}

// subVar is like sub but insists on a variable when there is one. Without
// one, a string or collection subject becomes a literal and counts as a
// miss, which makes choose reject the expression ("[1, 2].index(x)").
func (g *gen) subVar(t string, d int) string {
	if v := g.someVar(t); v != nil {
		return v.name
	}
	if t == tStr || mutable(t) {
		g.miss++
	}
	return g.sub(t, d)
}

// charExpr is a one-character string: a char variable or a literal.
func (g *gen) charExpr() string {
	vs := g.vars(func(v *variable) bool { return v.char })
	if len(vs) > 0 && g.chance(0.6) {
		if g.focus != nil && g.focus.char && g.chance(0.6) {
			return g.focus.name
		}
		return pick(g, vs).name
	}
	return g.litChar()
}

// small is a short value of type t used to grow strings and lists, so that
// repeated growth in loops stays linear.
func (g *gen) small(t string) string {
	switch t {
	case tStr:
		switch g.intn(4) {
		case 0:
			return g.litStr()
		case 1:
			return "str(" + g.sub(tInt, 0) + ")"
		default:
			return g.charExpr()
		}
	case tInt:
		if v := g.someVar(tInt); v != nil && g.chance(0.6) {
			return v.name
		}
		return fmt.Sprint(g.litInt())
	}
	return g.sub(t, 0)
}

// lambda1 builds "lambda x: body" where body has type out and x type in.
func (g *gen) lambda1(in, out string) string {
	name := g.freshLoop(in)
	v := g.bind(name, in)
	v.ro = true
	v.char = false
	saved := g.focus
	g.focus = v
	body := g.mapOn(v, out)
	g.focus = saved
	g.scope = g.scope[:len(g.scope)-1]
	g.use("lambda")
	return "lambda " + name + ": " + body
}

// withTemp binds a comprehension variable of type t named for it, runs f,
// and unbinds it.
func (g *gen) withTemp(t string, char bool, f func(v *variable) string) string {
	v := g.bind(g.freshLoop(t), t)
	v.ro = true
	v.char = char
	saved := g.focus
	g.focus = v
	s := f(v)
	g.focus = saved
	g.scope = g.scope[:len(g.scope)-1]
	return s
}

// iterable returns an expression to loop over with its element type and
// whether elements are single characters; it prefers variables.
func (g *gen) iterable(elemT string) (string, bool) {
	switch elemT {
	case tStr:
		if g.chance(0.5) {
			return g.subVar(tStr, 1), true
		}
		return g.subVar(tLS, 1), false
	case tInt:
		switch g.intn(4) {
		case 0:
			return fmt.Sprintf("range(%d)", g.between(1, 6)), false
		default:
			return g.subVar(tLI, 1), false
		}
	}
	return g.subVar("list["+elemT+"]", 1), false
}

// pred is a condition on v (an element being filtered, tested or mapped).
func (g *gen) pred(v *variable) string {
	n := v.name
	other := func(t string) string {
		for range 3 {
			if o := g.small(t); o != n {
				return o
			}
		}
		return g.literal(t)
	}
	otherChar := func() string {
		for range 3 {
			if o := g.charExpr(); o != n {
				return o
			}
		}
		return g.litChar()
	}
	switch v.t {
	case tInt:
		switch g.intn(6) {
		case 0:
			return fmt.Sprintf("%s %% 2 == %d", n, g.intn(2))
		case 1:
			return fmt.Sprintf("%s > %s", n, other(tInt))
		case 2:
			return fmt.Sprintf("%s < %d", n, g.litInt())
		case 3:
			return fmt.Sprintf("%s != %s", n, other(tInt))
		case 4:
			return fmt.Sprintf("%s %% %d == 0", n, g.between(2, 4))
		default:
			return fmt.Sprintf("%s >= %d", n, g.litInt())
		}
	case tStr:
		ms := []string{"isdigit", "isalpha", "isupper", "islower", "isspace", "isalnum"}
		switch g.intn(7) {
		case 0, 1:
			g.use("str." + "is*")
			return n + "." + pick(g, ms) + "()"
		case 2:
			return n + " in " + pyStr(strings.Join(g.chars[:min(3, len(g.chars))], ""))
		case 3:
			return n + " != " + otherChar()
		case 4:
			g.use("str.startswith")
			return n + ".startswith(" + otherChar() + ")"
		case 5:
			if v.char {
				return n + " == " + otherChar()
			}
			return fmt.Sprintf("len(%s) > %d", n, g.between(0, 3))
		default:
			return n + " == " + otherChar()
		}
	}
	if v.t == tLI {
		switch g.intn(4) {
		case 0:
			return fmt.Sprintf("len(%s) > %d", n, g.between(0, 2))
		case 1:
			return fmt.Sprintf("sum(%s) > %d", n, g.litInt())
		case 2:
			return fmt.Sprintf("%d in %s", g.between(0, 5), n)
		default:
			return "not " + n
		}
	}
	return paren(g.expr(tBool, 1))
}

// mapOn transforms v into a value of type out, mostly using v.
func (g *gen) mapOn(v *variable, out string) string {
	n := v.name
	switch {
	case v.t == tInt && out == tInt:
		sq := n + " * " + n
		if g.grows() {
			sq = n + " * 3" // squaring each iteration explodes
		}
		return pick(g, []string{n + " * 2", n + " + 1", n + " - 1", n + " % 3", "abs(" + n + ")", "-" + n, sq, n + " // 2", n + " + " + fmt.Sprint(g.between(1, 9))})
	case v.t == tStr && out == tStr:
		if v.char {
			if g.grows() {
				return pick(g, []string{n + ".upper()", n + ".lower()", n + ".swapcase()"})
			}
			return pick(g, []string{n + ".upper()", n + " * 2", n + ".lower()", n + ".swapcase()", n + " + " + g.litStr()})
		}
		if g.grows() {
			return pick(g, []string{n + ".upper()", n + "[::-1]", n + ".strip()", n + "[:2]", n + ".capitalize()", n + "[1:]"})
		}
		return pick(g, []string{n + ".upper()", n + "[::-1]", n + ".strip()", n + "[:2]", n + ".capitalize()", n + " + " + g.charExpr(), n + ".replace(" + g.charExpr() + ", " + g.litStr() + ")"})
	case v.t == tStr && out == tInt:
		if v.char {
			return pick(g, []string{"ord(" + n + ")", "len(" + n + ")", "int(" + n + ") if " + n + ".isdigit() else 0"})
		}
		return pick(g, []string{"len(" + n + ")", n + ".count(" + g.charExpr() + ")", n + ".find(" + g.charExpr() + ")"})
	case v.t == tInt && out == tStr:
		// Never "'-' * n": n may be int('74960').
		return pick(g, []string{"str(" + n + ")", "str(" + n + " * 2)", "f'<{" + n + "}>'", "str(" + n + ").zfill(3)"})
	case v.t == tInt && out == tLI:
		return pick(g, []string{"[" + n + ", " + n + " * 2]", "[" + n + "] * 2", "list(range(" + n + " % 4))", "[" + n + ", -" + n + "]"})
	case v.t == tLI && out == tInt:
		return pick(g, []string{"sum(" + n + ")", "len(" + n + ")", "max(" + n + ", default=0)", "min(" + n + ", default=0)"})
	case v.t == tLI && out == tLI:
		return pick(g, []string{"sorted(" + n + ")", n + "[::-1]", n + " + [0]", n + "[1:]"})
	case v.t == tLI && out == tStr:
		return pick(g, []string{"str(" + n + ")", "str(sum(" + n + "))"})
	case out == tBool:
		return g.pred(v)
	case v.t == tInt && out == tTII:
		return pick(g, []string{"(" + n + ", " + n + " % 3)", "(-" + n + ", " + n + ")", "(" + n + " % 2, " + n + ")"})
	case v.t == tStr && out == tTIS:
		return "(len(" + n + "), " + n + ")"
	}
	return g.expr(out, 1)
}

// grows reports whether expressions must not multiply sizes: inside a
// loop, where a value rebuilt from itself each iteration would grow
// exponentially.
func (g *gen) grows() bool { return g.loop > 0 }

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

// safeElem returns container[index] for a proven-safe index whose element
// type is t.
func (g *gen) safeElem(t string) string {
	var ok []safeIndex
	for _, s := range g.safe {
		ct := s.cont.t
		if (isDict(ct) && valT(ct) == t) || (!isDict(ct) && elem(ct) == t) {
			ok = append(ok, s)
		}
	}
	if len(ok) == 0 {
		return ""
	}
	s := pick(g, ok)
	g.use("index")
	if s.off != 0 {
		return fmt.Sprintf("%s[%s - %d]", s.cont.name, s.idx.name, s.off)
	}
	return s.cont.name + "[" + s.idx.name + "]"
}

// expr builds an expression of type t whose evaluation cannot raise, with
// nesting at most d.
func (g *gen) expr(t string, d int) string {
	if d <= 0 {
		if v := g.someVar(t); v != nil && g.chance(0.8) {
			return v.name
		}
		return g.literal(t)
	}
	cands := g.cands(t, d)
	if s, tag := g.choose(cands); s != "" {
		if tag != "" && tag != "lit" && tag != "stmt" {
			g.use(tag)
		}
		return s
	}
	if v := g.someVar(t); v != nil {
		return v.name
	}
	return g.literal(t)
}

func (g *gen) cands(t string, d int) []cand {
	var cs []cand
	add := func(tag string, w int, f func() string) { cs = append(cs, cand{tag, w, f}) }
	varOf := func(t string) func() string {
		return func() string {
			if v := g.someVar(t); v != nil {
				return v.name
			}
			return ""
		}
	}
	add("", 6, varOf(t))
	add("lit", 1, func() string { return g.literal(t) })
	add("", 3, func() string { return g.callHelper(t, d) })
	add("", 4, func() string { return g.safeElem(t) })
	if !mutable(t) && t != tBool {
		// A ternary over mutable values may alias a variable; over bools
		// it is "True if c else False".
		add("ternary", 1, func() string {
			a, b := g.two(t, d-1)
			cond := g.expr(tBool, d-1)
			if !g.usesVar(cond) {
				return ""
			}
			return paren(a) + " if " + paren(cond) + " else " + paren(b)
		})
	}
	anyColl := func() string {
		vs := g.vars(func(v *variable) bool { return v.t == tStr || mutable(v.t) })
		if len(vs) == 0 {
			return ""
		}
		return pick(g, vs).name
	}
	switch t {
	case tInt:
		add("len", 6, func() string {
			if s := anyColl(); s != "" {
				return "len(" + s + ")"
			}
			return ""
		})
		add("arith", 5, func() string {
			a, b := g.two(tInt, d-1)
			return paren(a) + " " + pick(g, []string{"+", "-", "+", "-"}) + " " + paren(b)
		})
		add("arith", 2, func() string { return paren(g.sub(tInt, d-1)) + " * " + fmt.Sprint(g.between(2, 3)) })
		add("floordiv_mod", 3, func() string {
			return paren(g.sub(tInt, d-1)) + " " + pick(g, []string{"//", "%"}) + " " + fmt.Sprint(g.between(2, 5))
		})
		add("abs", 1, func() string { return "abs(" + g.sub(tInt, d-1) + ")" })
		add("min_max", 2, func() string {
			a, b := g.two(tInt, d-1)
			return pick(g, []string{"min", "max"}) + "(" + a + ", " + b + ")"
		})
		add("sum", 3, func() string { return "sum(" + g.subVar(tLI, d-1) + ")" })
		add("min_max", 2, func() string {
			xs := g.subVar(tLI, d-1)
			return pick(g, []string{"max", "min"}) + "(" + xs + ") if " + xs + " else " + fmt.Sprint(g.litInt())
		})
		add("min_max_default", 1, func() string {
			return pick(g, []string{"max", "min"}) + "(" + g.subVar(tLI, d-1) + ", default=" + fmt.Sprint(g.litInt()) + ")"
		})
		add("str.count", 3, func() string { return paren(g.subVar(tStr, d-1)) + ".count(" + g.charExpr() + ")" })
		add("str.find", 2, func() string {
			return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"find", "rfind"}) + "(" + g.small(tStr) + ")"
		})
		add("list.count", 2, func() string { return g.subVar(tLI, d-1) + ".count(" + g.small(tInt) + ")" })
		add("list.index", 2, func() string {
			xs, x := g.subVar(tLI, d-1), g.small(tInt)
			return xs + ".index(" + x + ") if " + x + " in " + xs + " else -1"
		})
		add("str.index", 1, func() string {
			s, c := g.subVar(tStr, d-1), g.charExpr()
			return s + ".index(" + c + ") if " + c + " in " + s + " else -1"
		})
		add("dict.get", 3, func() string {
			vs := g.vars(func(v *variable) bool { return isDict(v.t) && valT(v.t) == tInt })
			if len(vs) == 0 {
				return ""
			}
			dv := pick(g, vs)
			return dv.name + ".get(" + g.sub(keyT(dv.t), 0) + ", " + fmt.Sprint(g.between(0, 1)) + ")"
		})
		add("int()", 2, func() string {
			s := g.subVar(tStr, d-1)
			return "int(" + s + ") if " + s + ".isdigit() else " + fmt.Sprint(g.litInt())
		})
		add("int()", 1, func() string { return "int(" + g.subVar(tFloat, d-1) + ")" })
		add("round", 1, func() string { return "round(" + g.subVar(tFloat, d-1) + ")" })
		add("genexp", 2, func() string {
			et := pick(g, []string{tStr, tInt})
			src, ch := g.iterable(et)
			return g.withTemp(et, ch, func(v *variable) string {
				return "sum(1 for " + v.name + " in " + src + " if " + g.pred(v) + ")"
			})
		})
		add("listcomp", 2, func() string {
			et := pick(g, []string{tStr, tInt})
			src, ch := g.iterable(et)
			return g.withTemp(et, ch, func(v *variable) string {
				return "len([" + v.name + " for " + v.name + " in " + src + " if " + g.pred(v) + "])"
			})
		})
		add("split", 1, func() string { return "len(" + paren(g.subVar(tStr, d-1)) + ".split())" })
		add("nested_sum", 1, func() string {
			rows := g.someVar(tLLI)
			if rows == nil {
				return ""
			}
			return pick(g, []string{"sum(map(sum, " + rows.name + "))", "sum(map(len, " + rows.name + "))", "len(" + rows.name + "[0]) if " + rows.name + " else 0"})
		})
		add("ord", 1, func() string {
			vs := g.vars(func(v *variable) bool { return v.char })
			if len(vs) == 0 {
				return ""
			}
			return "ord(" + pick(g, vs).name + ")"
		})
		add("tuple_index", 2, func() string {
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
		add("lambda", 2, func() string {
			vs := g.varsOf(tFn)
			if len(vs) == 0 {
				return ""
			}
			return pick(g, vs).name + "(" + g.sub(tInt, d-1) + ")"
		})
		add("neg", 1, func() string { return "-" + paren(g.subVar(tInt, d-1)) })
	case tFloat:
		add("div", 4, func() string { return paren(g.sub(tInt, d-1)) + " / " + fmt.Sprint(pick(g, []int{2, 4, 5, 10})) })
		add("div", 2, func() string {
			return paren(g.sub(tFloat, d-1)) + " " + pick(g, []string{"+", "-", "*"}) + " " + g.litFloat()
		})
		add("float()", 1, func() string { return "float(" + g.sub(tInt, d-1) + ")" })
		add("round", 2, func() string { return "round(" + g.sub(tFloat, d-1) + ", " + fmt.Sprint(g.between(1, 2)) + ")" })
		add("mean", 3, func() string {
			xs := g.subVar(tLI, d-1)
			return "sum(" + xs + ") / len(" + xs + ") if " + xs + " else 0.0"
		})
		add("min_max", 1, func() string { return "max(" + g.sub(tFloat, d-1) + ", " + g.litFloat() + ")" })
	case tBool:
		add("compare", 8, func() string {
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
		add("in", 4, func() string {
			return g.charExpr() + " " + pick(g, []string{"in", "not in"}) + " " + g.subVar(tStr, d-1)
		})
		add("in", 3, func() string {
			return g.small(tInt) + " " + pick(g, []string{"in", "not in"}) + " " + g.subVar(tLI, d-1)
		})
		add("in", 2, func() string {
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
		add("str.is*", 3, func() string {
			return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"isdigit", "isalpha", "isupper", "islower", "isalnum", "isspace", "istitle", "isascii", "isdecimal", "isnumeric"}) + "()"
		})
		add("str.startswith", 3, func() string {
			return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"startswith", "endswith"}) + "(" + g.small(tStr) + ")"
		})
		add("not", 2, func() string { return "not " + paren(g.expr(tBool, d-1)) })
		add("and_or", 2, func() string {
			a, b := g.expr(tBool, d-1), g.expr(tBool, d-1)
			if a == b || !g.usesVar(a) || !g.usesVar(b) {
				return ""
			}
			return paren(a) + " " + pick(g, []string{"and", "or"}) + " " + paren(b)
		})
		add("any_all", 3, func() string {
			et := pick(g, []string{tStr, tInt})
			src, ch := g.iterable(et)
			return g.withTemp(et, ch, func(v *variable) string {
				return pick(g, []string{"any", "all"}) + "(" + g.pred(v) + " for " + v.name + " in " + src + ")"
			})
		})
		add("any_all", 1, func() string {
			et := pick(g, []string{tStr, tInt})
			src, ch := g.iterable(et)
			return g.withTemp(et, ch, func(v *variable) string {
				return pick(g, []string{"any", "all"}) + "([" + g.pred(v) + " for " + v.name + " in " + src + "])"
			})
		})
		add("len", 3, func() string {
			if s := anyColl(); s != "" {
				return fmt.Sprintf("len(%s) %s %d", s, pick(g, []string{">", "<", "==", ">="}), g.between(0, 4))
			}
			return ""
		})
		add("sorted", 1, func() string {
			xs := g.subVar(tLI, d-1)
			return xs + " == sorted(" + xs + ")"
		})
		add("palindrome", 1, func() string {
			s := g.subVar(tStr, d-1)
			return s + " == " + s + "[::-1]"
		})
		add("bool()", 1, func() string {
			if c := anyColl(); c != "" {
				return "bool(" + c + ")"
			}
			return ""
		})
		add("is_none", 1, func() string {
			vs := g.vars(func(v *variable) bool { return isDict(v.t) })
			if len(vs) == 0 {
				return ""
			}
			dv := pick(g, vs)
			return dv.name + ".get(" + g.sub(keyT(dv.t), 0) + ") " + pick(g, []string{"is None", "is not None"})
		})
		add("parity", 2, func() string { return paren(g.subVar(tInt, d-1)) + " % 2 == " + fmt.Sprint(g.intn(2)) })
		add("truthy", 2, func() string {
			if s := anyColl(); s != "" {
				return pick(g, []string{"", "not "}) + s
			}
			return ""
		})
	case tStr:
		add("str.method", 8, func() string {
			m := pick(g, []string{"upper", "lower", "strip", "lstrip", "rstrip", "title", "capitalize", "swapcase"})
			g.use("str." + m)
			return paren(g.subVar(tStr, d-1)) + "." + m + "()"
		})
		add("str.strip_chars", 1, func() string {
			return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"strip", "lstrip", "rstrip"}) + "(" + g.litStr() + ")"
		})
		add("str.replace", 4, func() string {
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
		add("slice", 3, func() string {
			// Slices never raise: cut at an int variable, often the loop's.
			i := g.someVar(tInt)
			if i == nil {
				return ""
			}
			s := paren(g.subVar(tStr, d-1))
			return pick(g, []string{s + "[:" + i.name + "]", s + "[" + i.name + ":]", s + "[" + i.name + ":" + i.name + " + 2]", s + "[" + i.name + " + 1:]"})
		})
		add("slice", 6, func() string {
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
		add("concat", 4, func() string { return paren(g.sub(tStr, d-1)) + " + " + paren(g.small(tStr)) })
		add("str.affix", 2, func() string {
			return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"removeprefix", "removesuffix"}) + "(" + g.small(tStr) + ")"
		})
		add("str.format", 2, func() string {
			a, b := g.someVar(tStr), g.someVar(tInt)
			if a == nil || b == nil {
				return ""
			}
			return pick(g, []string{"'{}-{}'", "'{}: {}'", "'{} ({})'"}) + ".format(" + a.name + ", " + b.name + ")"
		})
		add("str.translate", 1, func() string {
			if len(g.chars) < 4 {
				return ""
			}
			from := g.chars[0] + g.chars[1]
			to := g.chars[2] + g.chars[3]
			return paren(g.subVar(tStr, d-1)) + ".translate(str.maketrans(" + pyStr(from) + ", " + pyStr(to) + "))"
		})
		add("str.method", 1, func() string { return paren(g.subVar(tStr, d-1)) + ".casefold()" })
		add("chr", 1, func() string {
			vs := g.vars(func(v *variable) bool { return v.char })
			if len(vs) == 0 {
				return ""
			}
			return "chr(ord(" + pick(g, vs).name + ") + 1)"
		})
		add("str.index", 1, func() string {
			s, c := g.subVar(tStr, d-1), g.charExpr()
			return "str(" + s + ".rindex(" + c + ")) if " + c + " in " + s + " else ''"
		})
		add("str.join", 5, func() string {
			return pick(g, []string{"''", "' '", "', '", "'-'", "'|'", "'\\n'"}) + ".join(" + g.sub(tLS, d-1) + ")"
		})
		add("reversed", 2, func() string { return "''.join(reversed(" + g.subVar(tStr, d-1) + "))" })
		add("sorted", 2, func() string { return "''.join(sorted(" + g.subVar(tStr, d-1) + "))" })
		add("str()", 3, func() string { return "str(" + g.sub(pick(g, []string{tInt, tInt, tFloat, tLI}), d-1) + ")" })
		add("fstring", 4, func() string {
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
		add("str.pad", 2, func() string {
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
		add("repeat", 1, func() string {
			if g.loop > 0 {
				return ""
			}
			return paren(g.subVar(tStr, d-1)) + " * " + fmt.Sprint(g.between(2, 3))
		})
		add("index", 2, func() string {
			s := g.subVar(tStr, d-1)
			return s + pick(g, []string{"[0]", "[-1]"}) + " if " + s + " else " + g.litStr()
		})
		add("index", 1, func() string {
			ws := g.subVar(tLS, d-1)
			return ws + pick(g, []string{"[0]", "[-1]"}) + " if " + ws + " else " + g.litStr()
		})
		add("genexp", 3, func() string {
			src := g.subVar(tStr, d-1)
			return g.withTemp(tStr, true, func(v *variable) string {
				if g.chance(0.5) {
					return "''.join(" + v.name + " for " + v.name + " in " + src + " if " + g.pred(v) + ")"
				}
				return "''.join([" + g.mapOn(v, tStr) + " if " + g.pred(v) + " else " + v.name + " for " + v.name + " in " + src + "])"
			})
		})
		add("genexp", 2, func() string {
			src := g.subVar(tLS, d-1)
			return g.withTemp(tStr, false, func(v *variable) string {
				return pick(g, []string{"' '", "''", "'-'"}) + ".join(" + g.mapOn(v, tStr) + " for " + v.name + " in " + src + ")"
			})
		})
		add("str.partition", 1, func() string {
			return paren(g.subVar(tStr, d-1)) + "." + pick(g, []string{"partition", "rpartition"}) + "(" + g.charExpr() + ")[" + fmt.Sprint(pick(g, []int{0, 2})) + "]"
		})
		add("dict.get", 2, func() string {
			vs := g.vars(func(v *variable) bool { return isDict(v.t) && valT(v.t) == tStr })
			if len(vs) == 0 {
				return ""
			}
			dv := pick(g, vs)
			return dv.name + ".get(" + g.sub(keyT(dv.t), 0) + ", " + g.litStr() + ")"
		})
		add("max_key", 1, func() string {
			d := g.someVar(tDSI)
			if d == nil {
				return ""
			}
			return pick(g, []string{"max", "min"}) + "(" + d.name + ", key=" + d.name + ".get) if " + d.name + " else ''"
		})
		add("tuple_index", 1, func() string {
			for _, v := range g.vars(func(v *variable) bool { return isTuple(v.t) }) {
				for i, a := range args(v.t) {
					if a == tStr {
						return fmt.Sprintf("%s[%d]", v.name, i)
					}
				}
			}
			return ""
		})
	case tFn:
		cs = cs[:0]
		add("lambda", 1, func() string { return g.lambda1(tInt, tInt) })
	}
	switch {
	case isList(t):
		et := elem(t)
		add("list()", 1, func() string { return paren(g.subVar(t, d-1)) + "[:]" })
		add("list.copy", 1, func() string { return g.subVar(t, d-1) + ".copy()" })
		add("starred", 1, func() string {
			xs := g.subVar(t, d-1)
			if g.chance(0.5) {
				return "[*" + xs + ", " + g.small(et) + "]"
			}
			return "[" + g.small(et) + ", *" + xs + "]"
		})
		if orderable(et) {
			add("sorted", 5, func() string {
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
		add("reversed", 2, func() string { return "list(reversed(" + g.subVar(t, d-1) + "))" })
		add("slice", 4, func() string {
			xs := paren(g.subVar(t, d-1))
			return pick(g, []string{xs + "[::-1]", xs + "[1:]", xs + "[:-1]", fmt.Sprintf("%s[:%d]", xs, g.between(1, 3)), fmt.Sprintf("%s[%d:]", xs, g.between(1, 2)), xs + "[::2]"})
		})
		add("slice", 2, func() string {
			i := g.someVar(tInt)
			if i == nil {
				return ""
			}
			xs := paren(g.subVar(t, d-1))
			return pick(g, []string{xs + "[:" + i.name + "]", xs + "[" + i.name + ":]", xs + "[" + i.name + " + 1:]"})
		})
		add("concat", 2, func() string { return paren(g.subVar(t, d-1)) + " + [" + g.small(et) + "]" })
		add("concat", 1, func() string {
			if g.loop > 0 {
				return ""
			}
			a, b := g.two(t, d-1)
			return a + " + " + b
		})
		add("listcomp", 6, func() string {
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
		add("range", 2, func() string {
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
		add("split", 1, func() string {
			if et != tStr {
				return ""
			}
			if g.chance(0.5) {
				return paren(g.subVar(tStr, d-1)) + ".splitlines()"
			}
			return paren(g.subVar(tStr, d-1)) + ".rsplit(" + g.charExpr() + ", 1)"
		})
		add("split", 6, func() string {
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
		add("dict.keys", 2, func() string {
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
		add("set", 2, func() string {
			if et != tInt {
				return ""
			}
			return "sorted(set(" + g.subVar(tLI, d-1) + "))"
		})
		add("map_filter", 2, func() string {
			if et != tInt && et != tStr {
				return ""
			}
			if g.chance(0.5) {
				return "list(map(" + g.lambda1(et, et) + ", " + g.subVar(t, d-1) + "))"
			}
			g.use("filter")
			return "list(filter(" + g.lambdaPred(et) + ", " + g.subVar(t, d-1) + "))"
		})
		add("enumerate", 3, func() string {
			if t != tLTIS {
				return ""
			}
			return "list(enumerate(" + g.subVar(tLS, d-1) + "))"
		})
		add("zip", 3, func() string {
			if t != tLTSI {
				return ""
			}
			return "list(zip(" + g.subVar(tLS, d-1) + ", " + g.subVar(tLI, d-1) + "))"
		})
		add("dict.items", 3, func() string {
			if t != tLTSI {
				return ""
			}
			vs := g.varsOf(tDSI)
			if len(vs) == 0 {
				return ""
			}
			return pick(g, []string{"sorted(", "list("}) + pick(g, vs).name + ".items())"
		})
		add("sorted", 2, func() string {
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
		add("zip", 2, func() string {
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
		add("nested_comp", 3, func() string {
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
		add("enumerate", 2, func() string {
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
	case isDict(t):
		kt, vt := keyT(t), valT(t)
		add("dict.copy", 1, func() string { return g.subVar(t, d-1) + ".copy()" })
		add("dict.fromkeys", 1, func() string {
			if isList(vt) {
				return ""
			}
			return "dict.fromkeys(" + g.subVar("list["+kt+"]", d-1) + ", " + g.literal(vt) + ")"
		})
		add("dictcomp", 5, func() string {
			if vt == tDSLI || isList(vt) {
				return ""
			}
			src, ch := g.iterable(kt)
			return g.withTemp(kt, ch, func(v *variable) string {
				return "{" + v.name + ": " + g.mapOn(v, vt) + " for " + v.name + " in " + src + "}"
			})
		})
		add("zip", 3, func() string {
			if isList(vt) {
				return ""
			}
			return "dict(zip(" + g.subVar("list["+kt+"]", d-1) + ", " + g.subVar("list["+vt+"]", d-1) + "))"
		})
		add("enumerate", 2, func() string {
			if kt != tInt || isList(vt) {
				return ""
			}
			return "dict(enumerate(" + g.subVar("list["+vt+"]", d-1) + "))"
		})
		add("dictcomp", 3, func() string {
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
		add("sorted", 1, func() string {
			if !orderable(kt) {
				return ""
			}
			return "dict(sorted(" + g.subVar(t, d-1) + ".items()))"
		})
	case isSet(t):
		add("set", 4, func() string { return "set(" + g.subVar(tLI, d-1) + ")" })
		add("setcomp", 2, func() string {
			src, _ := g.iterable(tInt)
			return g.withTemp(tInt, false, func(v *variable) string {
				return "{" + g.mapOn(v, tInt) + " for " + v.name + " in " + src + "}"
			})
		})
		add("set_ops", 3, func() string {
			return g.subVar(t, d-1) + " " + pick(g, []string{"|", "&", "-", "^"}) + " " + g.sub(t, d-1)
		})
	case isTuple(t):
		add("tuple", 5, func() string {
			a := args(t)
			parts := make([]string, len(a))
			for i, at := range a {
				parts[i] = g.sub(at, d-1)
			}
			return "(" + strings.Join(parts, ", ") + ")"
		})
		add("divmod", 2, func() string {
			if t != tTII {
				return ""
			}
			return "divmod(" + g.subVar(tInt, d-1) + ", " + fmt.Sprint(g.between(2, 5)) + ")"
		})
	}
	return cs
}

// lambdaPred is "lambda x: <condition on x>".
func (g *gen) lambdaPred(t string) string {
	return g.withTemp(t, false, func(v *variable) string {
		g.use("lambda")
		return "lambda " + v.name + ": " + g.pred(v)
	})
}
