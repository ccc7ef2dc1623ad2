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

// lambdaPred is "lambda x: <condition on x>".
func (g *gen) lambdaPred(t string) string {
	return g.withTemp(t, false, func(v *variable) string {
		g.use("lambda")
		return "lambda " + v.name + ": " + g.pred(v)
	})
}

// atomic reports whether s can be used as an operand or method receiver
// without parentheses.
func atomic(s string) bool {
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "not ") || strings.HasPrefix(s, "lambda") {
		return false
	}
	var q byte
	depth := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if q != 0 {
			if ch == '\\' {
				i++
			} else if ch == q {
				q = 0
			}
			continue
		}
		switch ch {
		case '\'', '"':
			q = ch
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ' ':
			if depth == 0 {
				return false
			}
		}
	}
	return true
}

func paren(s string) string {
	if atomic(s) {
		return s
	}
	return "(" + s + ")"
}
