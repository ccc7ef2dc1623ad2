// literal.go: the literals in a program's code: its alphabet of characters
// and words, and literal strings, ints, floats and values of any type.

package progen

import (
	"fmt"
	"strings"
)

func (g *gen) pickAlphabet() {
	pools := []string{"abcde", "xyzw", "aeiou", "lmnop", "abxy", "hello", "rstu", "qwer"}
	base := pick(g, pools)
	set := map[string]bool{}
	for _, r := range base {
		set[string(r)] = true
	}
	var chars []string
	for _, r := range base {
		if set[string(r)] {
			chars = append(chars, string(r))
			set[string(r)] = false
		}
	}
	letters := chars
	if g.chance(0.5) {
		chars = append(chars, strings.ToUpper(pick(g, letters)))
	}
	if g.chance(0.4) {
		chars = append(chars, fmt.Sprint(g.intn(10)))
	}
	if g.chance(0.3) {
		chars = append(chars, pick(g, []string{"-", "_", ".", ",", "#", "!"}))
	}
	g.chars = chars
	for range 4 {
		n := g.between(2, 5)
		var b strings.Builder
		for range n {
			b.WriteString(pick(g, letters))
		}
		g.words = append(g.words, b.String())
	}
}

func (g *gen) litChar() string { return pyStr(pick(g, g.chars)) }

func (g *gen) litStr() string {
	switch g.intn(6) {
	case 0:
		return pyStr(pick(g, g.chars))
	case 1, 2:
		return pyStr(pick(g, g.words))
	case 3:
		return pyStr(pick(g, []string{" ", ", ", "-", ":", "|", "*", "#", "ab", "x"}))
	default:
		n := g.between(1, 4)
		var b strings.Builder
		for range n {
			b.WriteString(pick(g, g.chars))
		}
		return pyStr(b.String())
	}
}

func (g *gen) litInt() int {
	switch g.intn(5) {
	case 0:
		return g.between(-3, 3)
	case 1:
		return g.between(5, 20)
	default:
		return g.between(0, 6)
	}
}

func (g *gen) litFloat() string {
	return pick(g, []string{"0.5", "1.5", "2.0", "0.25", "3.5", "1.0", "2.5", "10.0", "0.1"})
}

// pyStr renders s as Python's repr would, for the characters used here.
func pyStr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	r := strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", `\n`, "\t", `\t`)
	return "'" + r.Replace(s) + "'"
}

// literal is a constant expression of type t, small enough for code.
func (g *gen) literal(t string) string {
	switch t {
	case tInt:
		return fmt.Sprint(g.litInt())
	case tFloat:
		return g.litFloat()
	case tBool:
		return pick(g, []string{"True", "False"})
	case tStr:
		if g.chance(0.15) {
			return "''"
		}
		return g.litStr()
	case tFn:
		return "lambda a: a + 1"
	}
	switch {
	case isList(t):
		n := g.intn(4)
		if g.chance(0.4) {
			n = 0
		}
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.literal(elem(t))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case isSet(t):
		n := g.intn(4)
		if n == 0 {
			return "set()"
		}
		seen := map[string]bool{}
		var parts []string
		for range n {
			s := g.literal(elem(t))
			if !seen[s] {
				seen[s] = true
				parts = append(parts, s)
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case isDict(t):
		n := g.intn(3)
		if g.chance(0.5) {
			n = 0
		}
		seen := map[string]bool{}
		var parts []string
		for range n {
			k := g.literal(keyT(t))
			if seen[k] {
				continue
			}
			seen[k] = true
			parts = append(parts, k+": "+g.literal(valT(t)))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case isTuple(t):
		a := args(t)
		parts := make([]string, len(a))
		for i := range a {
			parts[i] = g.literal(a[i])
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return "None"
}
