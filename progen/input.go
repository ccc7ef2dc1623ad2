package progen

import (
	"fmt"
	"strings"
)

// input returns a Python literal for an argument of type t: small, so traces
// stay short, and drawn from the program's alphabet, so that the literals in
// the code sometimes match and branches go both ways.
func (g *gen) input(t string) string {
	switch t {
	case tInt:
		switch g.intn(6) {
		case 0:
			return fmt.Sprint(g.between(-5, -1))
		case 1:
			return fmt.Sprint(g.between(10, 99))
		default:
			return fmt.Sprint(g.between(0, 9))
		}
	case tFloat:
		return fmt.Sprintf("%d.%d", g.between(0, 9), pick(g, []int{0, 5, 25, 75}))
	case tBool:
		return pick(g, []string{"True", "False"})
	case tStr:
		return pyStr(g.inputStr())
	}
	switch {
	case isList(t):
		n := g.between(0, 6)
		if g.chance(0.1) {
			n = 0
		}
		parts := make([]string, n)
		wide := g.chance(0.2)
		for i := range parts {
			if elem(t) == tLI {
				m := g.between(0, 3)
				xs := make([]string, m)
				for j := range xs {
					xs[j] = fmt.Sprint(g.between(-2, 9))
				}
				parts[i] = "[" + strings.Join(xs, ", ") + "]"
			} else if elem(t) == tInt {
				if wide {
					parts[i] = fmt.Sprint(g.between(-10, 99))
				} else {
					parts[i] = fmt.Sprint(g.between(-2, 12))
				}
			} else if elem(t) == tStr {
				parts[i] = pyStr(g.inputWord())
			} else {
				parts[i] = g.input(elem(t))
			}
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case isDict(t):
		n := g.between(0, 4)
		seen := map[string]bool{}
		var parts []string
		for range n {
			var k string
			if keyT(t) == tStr {
				k = pyStr(g.inputWord())
			} else {
				k = fmt.Sprint(g.between(0, 9))
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			v := g.input(valT(t))
			if valT(t) == tStr {
				v = pyStr(g.inputWord())
			}
			parts = append(parts, k+": "+v)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case isSet(t):
		return "{" + fmt.Sprint(g.between(0, 5)) + ", " + fmt.Sprint(g.between(6, 9)) + "}"
	case isTuple(t):
		a := args(t)
		parts := make([]string, len(a))
		for i := range a {
			parts[i] = g.input(a[i])
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return g.literal(t)
}

func (g *gen) inputWord() string {
	if g.chance(0.6) {
		return pick(g, g.words)
	}
	n := g.between(1, 5)
	var b strings.Builder
	for range n {
		b.WriteString(pick(g, g.chars))
	}
	return b.String()
}

// inputStr is a short text in one of a few styles: a word, a few words,
// digits, mixed case, padded.
func (g *gen) inputStr() string {
	switch g.intn(9) {
	case 8:
		// A longer sentence, mixed case.
		n := g.between(3, 4)
		ws := make([]string, n)
		for i := range ws {
			ws[i] = g.inputWord()
			if g.chance(0.3) {
				ws[i] = strings.ToUpper(ws[i][:1]) + ws[i][1:]
			}
		}
		return strings.Join(ws, " ")
	case 0:
		return ""
	case 1:
		return fmt.Sprint(g.between(0, 99999))
	case 2:
		n := g.between(2, 3)
		ws := make([]string, n)
		for i := range ws {
			ws[i] = g.inputWord()
		}
		return strings.Join(ws, pick(g, []string{" ", " ", ",", "-", "\n"}))
	case 3:
		return "  " + g.inputWord() + " "
	case 4:
		w := g.inputWord()
		return strings.ToUpper(w[:1]) + w[1:] + pick(g, g.chars)
	default:
		n := g.between(1, 9)
		var b strings.Builder
		for range n {
			b.WriteString(pick(g, g.chars))
		}
		return b.String()
	}
}
