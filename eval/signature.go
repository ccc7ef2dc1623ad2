// Reading a program's entry function: its signature, its return lines and
// the call arguments a CRUXEval input prediction names.

package eval

import (
	"errors"
	"strings"

	"github.com/ndbg/ndbg/dsl"
)

// returnLines are the lines of prog's entry function that hold a return
// statement, ascending; when it has none, its last code line (where the
// implicit return happens).
func returnLines(prog *dsl.Program) []int {
	entry := prog.EntryLine()
	var out []int
	last := 0
	for n := entry + 1; n <= len(prog.Lines); n++ {
		if prog.FuncOf(n) != entry || !prog.Nameable(n) {
			continue
		}
		last = n
		t := strings.TrimSpace(prog.Text(n))
		if t == "return" || strings.HasPrefix(t, "return ") || strings.HasPrefix(t, "return(") || strings.HasPrefix(t, "return[") ||
			strings.HasPrefix(t, "return{") || strings.HasPrefix(t, "return'") || strings.HasPrefix(t, "return\"") {
			out = append(out, n)
		}
	}
	if len(out) == 0 && last > 0 {
		out = []int{last}
	}
	return out
}

// param is one parameter of the entry function's signature.
type param struct {
	name    string
	kind    ArgKind // Positional (or positional-or-keyword), Star, Keyword (keyword-only), StarStar
	posOnly bool
}

// signature parses the parameters of the entry's def (which may span lines).
func signature(prog *dsl.Program) ([]param, error) {
	entry := prog.EntryLine()
	if entry == 0 {
		return nil, errors.New("eval: no entry function")
	}
	text := strings.Join(prog.Lines[entry-1:], "\n")
	open := strings.IndexByte(text, '(')
	if open < 0 {
		return nil, errors.New("eval: entry def has no parameter list")
	}
	// Split the text inside the outer parentheses at top-level commas,
	// skipping strings, comments and nested brackets.
	var parts []string
	var cur strings.Builder
	depth := 0
	var quote byte
	for i := open + 1; i < len(text); i++ {
		c := text[i]
		if quote != 0 {
			cur.WriteByte(c)
			if c == '\\' && i+1 < len(text) {
				i++
				cur.WriteByte(text[i])
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				parts = append(parts, cur.String())
				return params(parts), nil
			}
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, cur.String())
				cur.Reset()
				continue
			}
		case '#':
			for i+1 < len(text) && text[i+1] != '\n' {
				i++
			}
			continue
		}
		cur.WriteByte(c)
	}
	return nil, errors.New("eval: unterminated parameter list")
}

// params classifies parameter texts such as "x", "y=1", "*args", "*",
// "/", "k: int = 2", "**kw".
func params(parts []string) []param {
	var out []param
	kwOnly := false
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if i := strings.IndexAny(p, ":="); i >= 0 {
			p = strings.TrimSpace(p[:i])
		}
		switch {
		case p == "":
		case p == "/":
			for i := range out {
				out[i].posOnly = true
			}
		case p == "*":
			kwOnly = true
		case strings.HasPrefix(p, "**"):
			out = append(out, param{name: strings.TrimSpace(p[2:]), kind: StarStar})
		case strings.HasPrefix(p, "*"):
			out = append(out, param{name: strings.TrimSpace(p[1:]), kind: Star})
			kwOnly = true
		case kwOnly:
			out = append(out, param{name: p, kind: Keyword})
		default:
			out = append(out, param{name: p, kind: Positional})
		}
	}
	return out
}

// callArgs builds the arguments of a call of the entry from the locals of a
// call state: parameters in order, positionally while none is missing,
// then by keyword; *args and **kwargs unpacked. Locals that are not
// parameters are ignored; a missing parameter is left out (its default
// applies, or the call fails, which scores as wrong).
func callArgs(sig []param, locals []dsl.Local) []Arg {
	val := make(map[string]string, len(locals))
	for _, l := range locals {
		val[l.Name] = l.Repr
	}
	var args []Arg
	byKeyword := false
	for _, p := range sig {
		r, ok := val[p.name]
		if !ok {
			if p.kind == Positional {
				byKeyword = true
			}
			continue
		}
		switch {
		case p.kind == Star:
			if byKeyword {
				continue // cannot follow keyword arguments
			}
			args = append(args, Arg{Kind: Star, Name: p.name, Repr: r})
		case p.kind == StarStar:
			args = append(args, Arg{Kind: StarStar, Name: p.name, Repr: r})
		case p.kind == Keyword || byKeyword && !p.posOnly:
			args = append(args, Arg{Kind: Keyword, Name: p.name, Repr: r})
		default:
			args = append(args, Arg{Kind: Positional, Name: p.name, Repr: r})
		}
	}
	return args
}
