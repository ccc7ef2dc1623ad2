package progen

import (
	"fmt"
	"strings"
)

// recursive emits one bounded recursive helper from a handful of shapes
// (numbers counting down, digits, gcd, lists and strings shrinking by one
// element, halving) with randomized pieces, and returns its signature.
// Arguments are bounded through sig.wrap where the input could be large.
func (g *gen) recursive() *sig { return g.recursiveNamed("") }

// recursiveNamed is recursive with the function named as given (the entry
// "f" itself) or, for "", by its shape.
func (g *gen) recursiveNamed(forced string) *sig {
	saveScope := g.scope
	defer func() { g.scope = saveScope }()
	g.scope = nil
	s := &sig{recursive: true}
	name := func(n string) string {
		if forced != "" {
			n = forced
		}
		s.name = n
		return n
	}
	head := func(xs string, t string, char bool) *variable {
		return &variable{name: xs + "[0]", t: t, char: char}
	}
	switch g.intn(11) {
	case 0: // count down over n
		n := name(pick(g, []string{"total", "rec", "accumulate", "tally"}))
		g.emit("def %s(n):", n)
		v := &variable{name: "n", t: tInt}
		op := pick(g, []string{"+", "+", "-", "*"})
		lim := 8
		base := fmt.Sprint(g.between(0, 2))
		if op == "*" {
			lim, base = 5, "1"
		}
		g.ind++
		g.emit("if n <= %d:", g.between(0, 1))
		g.ind++
		g.emit("return %s", base)
		g.ind--
		if op == "*" {
			g.emit("return n * %s(n - 1)", n)
		} else {
			g.emit("return %s %s %s(n - 1)", paren(g.mapOn(v, tInt)), op, n)
		}
		g.ind--
		s.params, s.ret, s.wrap = []string{tInt}, tInt, []string{fmt.Sprintf("min(%%s, %d)", lim)}
	case 1: // fib-like
		n := name(pick(g, []string{"fib", "ways", "steps"}))
		g.emit("def %s(n):", n)
		g.ind++
		g.emit("if n < 2:")
		g.ind++
		g.emit("return %s", pick(g, []string{"n", "1"}))
		g.ind--
		g.emit("return %s(n - 1) + %s(n - 2)", n, n)
		g.ind--
		s.params, s.ret, s.wrap = []string{tInt}, tInt, []string{"min(%s, 6)"}
	case 2: // digits
		n := name(pick(g, []string{"digit_sum", "count_digits", "digits"}))
		g.emit("def %s(n):", n)
		g.ind++
		g.emit("if n < 10:")
		g.ind++
		if n == "count_digits" {
			g.emit("return 1")
			g.ind--
			g.emit("return 1 + %s(n // 10)", n)
		} else {
			g.emit("return n")
			g.ind--
			g.emit("return n %% 10 %s %s(n // 10)", pick(g, []string{"+", "*"}), n)
		}
		g.ind--
		s.params, s.ret, s.wrap = []string{tInt}, tInt, []string{"abs(%s)"}
	case 3: // gcd
		n := name("gcd")
		g.emit("def %s(a, b):", n)
		g.ind++
		g.emit("if b == 0:")
		g.ind++
		g.emit("return a")
		g.ind--
		g.emit("return %s(b, a %% b)", n)
		g.ind--
		s.params, s.ret = []string{tInt, tInt}, tInt
	case 4: // power
		n := name(pick(g, []string{"power", "repeat_mul"}))
		g.emit("def %s(base, exp):", n)
		g.ind++
		g.emit("if exp <= 0:")
		g.ind++
		g.emit("return 1")
		g.ind--
		g.emit("return base * %s(base, exp - 1)", n)
		g.ind--
		s.params, s.ret, s.wrap = []string{tInt, tInt}, tInt, []string{"", "min(%s, 4)"}
	case 5: // reduce a list to an int
		n := name(pick(g, []string{"total", "count_if", "largest", "rec_sum"}))
		g.emit("def %s(xs):", n)
		g.ind++
		g.emit("if not xs:")
		g.ind++
		g.emit("return %d", g.between(0, 1))
		g.ind--
		h := head("xs", tInt, false)
		switch g.intn(3) {
		case 0:
			g.emit("return %s + %s(xs[1:])", paren(g.mapOn(h, tInt)), n)
		case 1:
			g.emit("return (1 if %s else 0) + %s(xs[1:])", g.pred(h), n)
		default:
			g.emit("return max(xs[0], %s(xs[1:]))", n)
		}
		g.ind--
		s.params, s.ret = []string{tLI}, tInt
	case 6: // list to list
		n := name(pick(g, []string{"rebuild", "keep", "rev", "mapped"}))
		g.emit("def %s(xs):", n)
		g.ind++
		g.emit("if not xs:")
		g.ind++
		g.emit("return []")
		g.ind--
		switch g.intn(3) {
		case 0:
			g.emit("return [%s] + %s(xs[1:])", g.mapOn(head("xs", tInt, false), tInt), n)
		case 1:
			g.emit("rest = %s(xs[1:])", n)
			g.emit("if %s:", g.pred(head("xs", tInt, false)))
			g.ind++
			g.emit("return [xs[0]] + rest")
			g.ind--
			g.emit("return rest")
		default:
			g.emit("return %s(xs[1:]) + [xs[0]]", n)
		}
		g.ind--
		s.params, s.ret = []string{tLI}, tLI
	case 7: // string to string
		n := name(pick(g, []string{"rev", "strip_char", "rebuild", "convert"}))
		g.emit("def %s(s):", n)
		g.ind++
		g.emit("if not s:")
		g.ind++
		g.emit("return ''")
		g.ind--
		h := head("s", tStr, true)
		switch g.intn(3) {
		case 0:
			g.emit("return %s(s[1:]) + s[0]", n)
		case 1:
			g.emit("if %s:", g.pred(h))
			g.ind++
			g.emit("return %s(s[1:])", n)
			g.ind--
			g.emit("return s[0] + %s(s[1:])", n)
		default:
			g.emit("return %s + %s(s[1:])", paren(g.mapOn(h, tStr)), n)
		}
		g.ind--
		s.params, s.ret = []string{tStr}, tStr
	case 8: // string to int or bool
		if g.chance(0.5) {
			n := name(pick(g, []string{"count_chars", "score", "tally"}))
			g.emit("def %s(s):", n)
			g.ind++
			g.emit("if not s:")
			g.ind++
			g.emit("return 0")
			g.ind--
			g.emit("return (1 if %s else 0) + %s(s[1:])", g.pred(head("s", tStr, true)), n)
			g.ind--
			s.params, s.ret = []string{tStr}, tInt
		} else {
			n := name(pick(g, []string{"is_pal", "mirror", "symmetric"}))
			g.emit("def %s(s):", n)
			g.ind++
			g.emit("if len(s) < 2:")
			g.ind++
			g.emit("return True")
			g.ind--
			g.emit("if s[0] != s[-1]:")
			g.ind++
			g.emit("return False")
			g.ind--
			g.emit("return %s(s[1:-1])", n)
			g.ind--
			s.params, s.ret = []string{tStr}, tBool
		}
	case 9: // accumulator
		n := name(pick(g, []string{"build", "walk", "collect"}))
		if g.chance(0.5) {
			g.emit("def %s(s, acc):", n)
			g.ind++
			g.emit("if not s:")
			g.ind++
			g.emit("return acc")
			g.ind--
			g.emit("return %s(s[1:], acc + %s)", n, paren(g.mapOn(head("s", tStr, true), tStr)))
			g.ind--
			s.params, s.ret, s.wrap = []string{tStr, tStr}, tStr, []string{"", "''"}
		} else {
			g.emit("def %s(xs, acc):", n)
			g.ind++
			g.emit("if not xs:")
			g.ind++
			g.emit("return acc")
			g.ind--
			g.emit("return %s(xs[1:], acc + [%s])", n, g.mapOn(head("xs", tInt, false), tInt))
			g.ind--
			s.params, s.ret, s.wrap = []string{tLI, tLI}, tLI, []string{"", "[]"}
		}
	default: // halving
		n := name(pick(g, []string{"split_sum", "halves", "divide"}))
		g.emit("def %s(xs):", n)
		g.ind++
		g.emit("if len(xs) <= 1:")
		g.ind++
		g.emit("return %s", pick(g, []string{"sum(xs)", "len(xs)", "max(xs, default=0)"}))
		g.ind--
		g.emit("mid = len(xs) // 2")
		g.emit("return %s(xs[:mid]) %s %s(xs[mid:])", n, pick(g, []string{"+", "+", "-"}), n)
		g.ind--
		s.params, s.ret = []string{tLI}, tInt
	}
	g.emit("")
	g.funcs = append(g.funcs, s)
	g.use("recursion")
	return s
}

// recursiveEntry makes a program whose entry f is itself the bounded
// recursive function; its inputs respect the bounds the helper's callers
// would impose (sig.wrap).
func (g *gen) recursiveEntry() *Program {
	s := g.recursiveNamed("f")
	call := make([]string, len(s.params))
	for i, t := range s.params {
		w := ""
		if i < len(s.wrap) {
			w = s.wrap[i]
		}
		switch {
		case w != "" && !strings.Contains(w, "%s"):
			call[i] = w // an accumulator's initial value
		case strings.HasPrefix(w, "min("):
			var lim int
			fmt.Sscanf(w, "min(%%s, %d)", &lim)
			call[i] = fmt.Sprint(g.between(0, max(lim, 1)))
		case w == "abs(%s)":
			call[i] = fmt.Sprint(g.between(0, 9999))
		default:
			call[i] = g.input(t)
		}
	}
	return &Program{
		Family:     g.fam.name,
		Source:     strings.Join(g.lines, "\n") + "\n",
		Entry:      "f",
		Call:       "f(" + strings.Join(call, ", ") + ")",
		Constructs: g.constructs(),
	}
}
