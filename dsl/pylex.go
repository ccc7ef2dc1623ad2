package dsl

import "strings"

// This file is the small part of Python's lexical structure the DSL needs:
// which physical lines are blank or comments, which end inside a string
// literal or with a backslash continuation (no comment can be appended
// there), where logical lines start, their indentation, and from that the
// innermost enclosing def of every line. It is not a tokenizer: numbers,
// names and operators other than brackets are irrelevant here.

// lineKind classifies a physical line.
type lineKind uint8

const (
	codeLine    lineKind = iota // anything else
	blankLine                   // only spaces, tabs and form feeds
	commentLine                 // a comment alone, outside any string literal
	stringLine                  // wholly inside a string literal: it starts and ends there
)

// lineInfo is what the lexer knows of one physical line.
type lineInfo struct {
	kind lineKind
	// logicalStart: the line starts a logical line (it is not inside a
	// string literal, brackets, or after a backslash continuation).
	logicalStart bool
	// open: the line ends inside a string literal or with a backslash
	// continuation, so nothing may be appended to it.
	open   bool
	indent int // indentation column of a logical start (tabs to multiples of 8)
}

// scanPython classifies the physical lines of a Python source.
func scanPython(lines []string) []lineInfo {
	info := make([]lineInfo, len(lines))
	var (
		inStr   bool // inside a string literal
		quote   byte // its quote character
		triple  bool // whether it is triple-quoted
		depth   int  // bracket nesting
		contBSL bool // the previous line ended with a backslash continuation
	)
	for n, l := range lines {
		li := &info[n]
		li.logicalStart = !inStr && depth == 0 && !contBSL
		startsInStr := inStr
		rest := strings.TrimLeft(l, " \t\f")
		switch {
		case rest == "":
			li.kind = blankLine
		case !inStr && rest[0] == '#':
			li.kind = commentLine
		}
		if li.logicalStart {
			li.indent = indentColumn(l)
		}
		contBSL = false
		i := 0
		for i < len(l) {
			if inStr {
				j, closed := scanString(l, i, quote, triple)
				i = j
				if !closed {
					// Only a triple-quoted string or a backslash-newline
					// continues; an unterminated one-line string is a
					// syntax error, treated as closed.
					if !triple && !(len(l) > 0 && endsWithEscape(l)) {
						inStr = false
					}
					break
				}
				inStr = false
				continue
			}
			c := l[i]
			switch c {
			case '#':
				i = len(l)
				continue
			case '"', '\'':
				quote = c
				triple = i+2 < len(l) && l[i+1] == c && l[i+2] == c
				inStr = true
				if triple {
					i += 3
				} else {
					i++
				}
				continue
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth > 0 {
					depth--
				}
			case '\\':
				if i == len(l)-1 {
					contBSL = true
				}
			}
			i++
		}
		if inStr && !triple && !endsWithEscape(l) {
			inStr = false // an empty line inside a one-line string: syntax error
		}
		li.open = inStr || contBSL
		if startsInStr && inStr {
			li.kind = stringLine
		}
	}
	return info
}

// scanString scans string literal content from l[i] for its closing quote.
// It returns the offset after the closing quote and true, or len(l) and
// false. A backslash always takes the next character with it, in raw
// strings too (r"\"" is one string), so prefixes need no special case.
func scanString(l string, i int, quote byte, triple bool) (int, bool) {
	for i < len(l) {
		switch l[i] {
		case '\\':
			i += 2
			continue
		case quote:
			if !triple {
				return i + 1, true
			}
			if i+2 < len(l) && l[i+1] == quote && l[i+2] == quote {
				return i + 3, true
			}
		}
		i++
	}
	return len(l), false
}

// endsWithEscape reports whether l ends with an odd run of backslashes, so
// that inside a string literal its newline is escaped.
func endsWithEscape(l string) bool {
	n := 0
	for n < len(l) && l[len(l)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// indentColumn is the indentation of l as CPython's tokenizer counts it.
func indentColumn(l string) int {
	col := 0
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case ' ':
			col++
		case '\t':
			col = (col/8 + 1) * 8
		case '\f':
			col = 0
		default:
			return col
		}
	}
	return col
}

// isDefLine reports whether the text of a logical line (indentation
// stripped) starts a function definition: "def" or "async def".
func isDefLine(rest string) bool {
	if r, ok := strings.CutPrefix(rest, "async"); ok && r != "" && (r[0] == ' ' || r[0] == '\t') {
		rest = strings.TrimLeft(r, " \t")
	}
	return len(rest) > 4 && rest[:3] == "def" && (rest[3] == ' ' || rest[3] == '\t')
}

// funcLines computes, for every line (index line-1), the 1-based def line
// of the innermost function enclosing it by indentation, 0 at module level.
// A def line, its decorators and the continuation lines of its signature
// belong to the function itself, as its call event does. Class bodies are
// not scopes of their own here. Blank and comment lines between logical
// lines belong to the innermost def still open above them; continuation
// lines to their logical line.
func funcLines(lines []string, info []lineInfo) []int32 {
	type block struct {
		indent int
		def    int32 // its def line
	}
	var defs []block     // the defs still open at the current line, innermost last
	var decorators []int // decorator lines waiting for the def or class they decorate
	out := make([]int32, len(lines))
	enclosing := func() int32 {
		if len(defs) == 0 {
			return 0
		}
		return defs[len(defs)-1].def
	}
	start := 0 // the first line of the current logical line
	for n, l := range lines {
		li := info[n]
		switch {
		case !li.logicalStart:
			out[n] = out[start] // a continuation: its logical line's scope
			continue
		case li.kind != codeLine:
			out[n] = enclosing() // blank or comment between logical lines
			continue
		}
		start = n
		for len(defs) > 0 && defs[len(defs)-1].indent >= li.indent {
			defs = defs[:len(defs)-1]
		}
		rest := strings.TrimLeft(l, " \t\f")
		if rest[0] == '@' {
			decorators = append(decorators, n)
			out[n] = enclosing() // until the decorated def is known
			continue
		}
		if isDefLine(rest) {
			defs = append(defs, block{li.indent, int32(n + 1)})
		}
		out[n] = enclosing()
		// Decorators (and their continuation lines) belong to what they
		// decorate: this def, or for a class the enclosing scope.
		for _, d := range decorators {
			for k := d; k < n && (k == d || !info[k].logicalStart); k++ {
				out[k] = out[n]
			}
		}
		decorators = decorators[:0]
	}
	return out
}
