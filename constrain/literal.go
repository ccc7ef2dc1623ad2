package constrain

import "github.com/ndbg/ndbg/dsl"

// The literal grammar: where Context.Literals asks for it (CRUXEval's
// answers: the arguments at a call, the value at a return), a value's
// decoded text must be a Python literal as ast.literal_eval takes it and as
// repr writes one:
//
//	value   = number | sign number | number sign imag   (a complex: 1+2j, -1.5-0j)
//	        | string | "None" | "True" | "False" | "set()"
//	        | "(" [items] ")" | "[" [items] "]" | "{" [items | pairs] "}"
//	items   = value { "," value } [","]      pairs = value ":" value { "," value ":" value } [","]
//	number  = Python's decimal int, float or imaginary (no underscores, no hex, octal or binary)
//	string  = ['b'|'r'|'u'|'br'|'rb' in any case] one-line quoted string, '...' or "...",
//	          its escapes well formed (\x with 2 hex digits, \u with 4, \U with 8 up to
//	          0010FFFF; no \N{...})
//
// with spaces between tokens. No names, calls (but set()), attributes,
// subscripts or operators (but one sign and a complex's + or -) can be
// written, so "__import__('sys').exit(0)" is refused at its first byte.
// It is syntax only: an unhashable key ({[1]: 2}) passes and fails where
// the value is evaluated. Narrower than Python where repr never writes the
// form: no triple quotes, no adjacent strings, no top-level tuple without
// parentheses, at most maxLitDepth nested containers.
//
// The automaton reads the decoded characters of the value's JSON string,
// one byte each: ASCII as itself, any other character as litNonASCII.

// Literal automaton states (State.lit); litOff: the value is not constrained.
const (
	litOff       uint8 = iota
	litValue           // a value must come
	litOpen            // after an opening bracket or a comma: a value or the closing bracket
	litAfter           // after a complete value
	litAfterNum        // after a complete real number: as litAfter, or a complex's + or -
	litSign            // after a sign: a number must come
	litComplex         // after a complex's + or -: an imaginary number must come
	litZero            // a number "0", "00", ...
	litZeroNZ          // "0" then other digits: only a '.', an exponent or 'j' can follow
	litInt             // an int's digits
	litDotLead         // "." with no digit before it: a digit must come
	litFrac            // after the '.' of a float, or its digits
	litExp             // after 'e'
	litExpSign         // after 'e' and a sign
	litExpDigits       // an exponent's digits
	litImag            // after 'j'
	litPrefixB         // after a string prefix 'b'
	litPrefixR         // after 'r'
	litPrefixU         // after 'u'
	litPrefixBR        // after 'br' or 'rb'
	litStr             // inside a string
	litStrEsc          // after a backslash in a string
	litStrHex          // inside a \x, \u or \U escape: State.lcount digits to come
	litWord            // inside None, True, False or set(): State.lcount is word<<4 | position
)

// State.lflag bits.
const (
	litRHS    uint8 = 1 << iota // the number is a complex's imaginary part: it must end with 'j'
	litDouble                   // the string is in double quotes
	litBytes                    // the string is a bytes literal
	litRaw                      // the string is raw: escapes are not decoded
	litWide                     // the escape is \U: at most 0010FFFF
	litHigh                     // a \U escape's third digit was 1
)

// Containers on State.lstack, 3 bits a level, the innermost lowest.
const (
	litParen     uint64 = 1 + iota // ( ... ): a tuple, or a parenthesized value
	litList                        // [ ... ]
	litSet                         // { v, ... }
	litDictKey                     // { ... } of pairs, at a key
	litDictValue                   // { ... } of pairs, at a value
	litBrace                       // '{' and its first value: a set or a dict
)

const (
	maxLitDepth = 21 // containers nested in a literal (3 bits each in a uint64)
	litNonASCII = 0x80
)

var litWords = [...]string{"None", "True", "False", "set()"}

// literalAt reports whether the value opening at st (pValueOpen or
// pArgOpen) must be a literal.
func (p *Program) literalAt(st State) bool {
	if !p.rules[st.rules].literals {
		return false
	}
	return st.pos == pValueOpen && st.event == dsl.Call || st.pos == pArgOpen && st.event == dsl.Return
}

// litStart puts the literal automaton at the start of a value (on), or off.
func (st State) litStart(on bool) State {
	st.lit, st.lflag, st.lcount, st.ldepth, st.lstack = litOff, 0, 0, 0, 0
	if on {
		st.lit = litValue
	}
	return st
}

// litChar feeds one decoded character of the value to the literal
// automaton, and checks that the value can still be completed within
// dsl.MaxRepr bytes (st.n, which already counts c, and later bytes of c
// still to come).
func (st State) litChar(c byte, later int) (State, bool) {
	if st.lit == litOff {
		return st, true
	}
	st, ok := st.litStep(c)
	if !ok || int(st.n)+later+st.litNeed() > dsl.MaxRepr {
		return st, false
	}
	return st, true
}

// litCan reports whether some character that a \uXXXX escape with a code
// unit in [lo, hi] writes may come next in the literal, room included: a
// JSON escape starts only where it can end well.
func (st State) litCan(lo, hi uint32) bool {
	takes := func(k int, c byte, later int) bool {
		_, ok := st.growLit(k, c, later)
		return ok
	}
	for r := lo; r <= min(hi, 0x7f); r++ {
		short := r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f' // written \n, ... instead
		if (r < 0x20 || r == 0x7f) && !short && takes(1, byte(r), 0) {
			return true
		}
	}
	overlaps := func(a, b uint32) bool { return lo <= b && hi >= a }
	return overlaps(0x80, 0x7ff) && takes(2, litNonASCII, 0) ||
		(overlaps(0x800, 0xd7ff) || overlaps(0xe000, 0xffff)) && takes(3, litNonASCII, 0) ||
		overlaps(0xd800, 0xdbff) && takes(2, litNonASCII, 2)
}

// litCanEscape reports whether some JSON escape may come next in the
// literal: a short one (\" \\ \n \r \t \b \f) or a \uXXXX.
func (st State) litCanEscape() bool {
	for _, c := range []byte{'"', '\\', '\n', '\r', '\t', '\b', '\f'} {
		if _, ok := st.growLit(1, c, 0); ok {
			return true
		}
	}
	return st.litCan(0, 0xffff)
}

// litEnd reports whether the value may end here: a complete literal.
func (st State) litEnd() bool {
	if st.lit == litOff {
		return true
	}
	if st.ldepth > 0 {
		return false
	}
	switch st.lit {
	case litAfter, litAfterNum, litImag:
		return true
	case litZero, litInt, litFrac, litExpDigits:
		return st.lflag&litRHS == 0
	}
	return false
}

func (st State) top() uint64 { return st.lstack & 7 }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// litStep is one transition of the automaton.
func (st State) litStep(c byte) (State, bool) {
	switch st.lit {
	case litValue, litOpen:
		if c == ' ' {
			return st, true
		}
		if st.lit == litOpen {
			if closed, ok := st.litClose(c, true); ok {
				return closed, true
			}
		}
		return st.litBegin(c)
	case litAfter, litAfterNum:
		switch c {
		case ' ':
			return st, true
		case '+', '-':
			if st.lit == litAfterNum {
				st.lit, st.lflag = litComplex, litRHS
				return st, true
			}
			return st, false
		case ',':
			switch st.top() {
			case litParen, litList, litSet:
			case litBrace:
				st.lstack = st.lstack&^7 | litSet
			case litDictValue:
				st.lstack = st.lstack&^7 | litDictKey
			default: // a key without its value, or a tuple without parentheses
				return st, false
			}
			st.lit = litOpen
			return st, true
		case ':':
			switch st.top() {
			case litBrace, litDictKey:
				st.lstack = st.lstack&^7 | litDictValue
				st.lit = litValue
				return st, true
			}
			return st, false
		}
		return st.litClose(c, false)
	case litSign, litComplex:
		if c == ' ' {
			return st, true
		}
		return st.litNumber(c)
	case litZero, litZeroNZ, litInt, litDotLead, litFrac, litExp, litExpSign, litExpDigits, litImag:
		if next, ok := st.litInNumber(c); ok {
			return next, true
		}
		// c is not part of the number: the number ends before it.
		switch {
		case st.lit == litImag:
			st.lit = litAfter
		case st.lflag&litRHS != 0 || st.lit == litZeroNZ || st.lit == litDotLead || st.lit == litExp || st.lit == litExpSign:
			return st, false
		default:
			st.lit = litAfterNum
		}
		st.lflag = 0
		return st.litStep(c)
	case litPrefixB, litPrefixR, litPrefixU, litPrefixBR:
		switch {
		case c == '\'' || c == '"':
			return st.litQuote(c), true
		case (c == 'r' || c == 'R') && st.lit == litPrefixB, (c == 'b' || c == 'B') && st.lit == litPrefixR:
			st.lit, st.lflag = litPrefixBR, litBytes|litRaw
			return st, true
		}
		return st, false
	case litStr:
		switch {
		case c == '"' && st.lflag&litDouble != 0, c == '\'' && st.lflag&litDouble == 0:
			st.lit, st.lflag = litAfter, 0
			return st, true
		case c == '\\':
			st.lit = litStrEsc
			return st, true
		}
		return st, st.litStringChar(c)
	case litStrEsc:
		if !st.litStringChar(c) {
			return st, false
		}
		st.lit = litStr
		if st.lflag&litRaw != 0 {
			return st, true
		}
		switch {
		case c == 'x':
			st.lit, st.lcount = litStrHex, 2
		case c == 'u' && st.lflag&litBytes == 0:
			st.lit, st.lcount = litStrHex, 4
		case c == 'U' && st.lflag&litBytes == 0:
			st.lit, st.lcount = litStrHex, 8
			st.lflag |= litWide
		case c == 'N' && st.lflag&litBytes == 0:
			return st, false // \N{NAME}: names are not checked here, and repr never writes them
		}
		return st, true
	case litStrHex:
		if !isHex(c) {
			return st, false
		}
		if st.lflag&litWide != 0 { // \U0010FFFF at most
			switch st.lcount {
			case 8, 7:
				if c != '0' {
					return st, false
				}
			case 6:
				if c == '1' {
					st.lflag |= litHigh
				} else if c != '0' {
					return st, false
				}
			case 5:
				if st.lflag&litHigh != 0 && c != '0' {
					return st, false
				}
			}
		}
		if st.lcount--; st.lcount == 0 {
			st.lit = litStr
			st.lflag &^= litWide | litHigh
		}
		return st, true
	case litWord:
		w, i := litWords[st.lcount>>4], st.lcount&15
		if c != w[i] {
			return st, false
		}
		if i++; int(i) == len(w) {
			st.lit, st.lcount = litAfter, 0
		} else {
			st.lcount = st.lcount&^15 | i
		}
		return st, true
	}
	return st, false
}

// litBegin starts a value with c.
func (st State) litBegin(c byte) (State, bool) {
	switch c {
	case '(', '[', '{':
		if st.ldepth == maxLitDepth {
			return st, false
		}
		kind := litParen
		if c == '[' {
			kind = litList
		} else if c == '{' {
			kind = litBrace
		}
		st.lstack = st.lstack<<3 | kind
		st.ldepth++
		st.lit = litOpen
		return st, true
	case '-', '+':
		st.lit = litSign
		return st, true
	case '\'', '"':
		return st.litQuote(c), true
	case 'b', 'B':
		st.lit, st.lflag = litPrefixB, litBytes
		return st, true
	case 'r', 'R':
		st.lit, st.lflag = litPrefixR, litRaw
		return st, true
	case 'u', 'U':
		st.lit = litPrefixU
		return st, true
	}
	for i, w := range litWords {
		if c == w[0] {
			st.lit, st.lcount = litWord, uint8(i)<<4|1
			return st, true
		}
	}
	return st.litNumber(c)
}

// litNumber starts a number's digits with c (after a sign, or a complex's
// + or -, when there was one).
func (st State) litNumber(c byte) (State, bool) {
	switch {
	case c == '0':
		st.lit = litZero
	case isDigit(c):
		st.lit = litInt
	case c == '.':
		st.lit = litDotLead
	default:
		return st, false
	}
	return st, true
}

// litInNumber continues a number with c; false when c cannot continue it.
func (st State) litInNumber(c byte) (State, bool) {
	next := st.lit
	switch st.lit {
	case litZero:
		switch {
		case c == '0':
		case isDigit(c):
			next = litZeroNZ
		case c == '.':
			next = litFrac
		case c == 'e' || c == 'E':
			next = litExp
		case c == 'j' || c == 'J':
			next = litImag
		default:
			return st, false
		}
	case litZeroNZ, litInt:
		switch {
		case isDigit(c):
		case c == '.':
			next = litFrac
		case c == 'e' || c == 'E':
			next = litExp
		case c == 'j' || c == 'J':
			next = litImag
		default:
			return st, false
		}
	case litDotLead:
		if !isDigit(c) {
			return st, false
		}
		next = litFrac
	case litFrac:
		switch {
		case isDigit(c):
		case c == 'e' || c == 'E':
			next = litExp
		case c == 'j' || c == 'J':
			next = litImag
		default:
			return st, false
		}
	case litExp:
		switch {
		case c == '+' || c == '-':
			next = litExpSign
		case isDigit(c):
			next = litExpDigits
		default:
			return st, false
		}
	case litExpSign:
		if !isDigit(c) {
			return st, false
		}
		next = litExpDigits
	case litExpDigits:
		switch {
		case isDigit(c):
		case c == 'j' || c == 'J':
			next = litImag
		default:
			return st, false
		}
	default: // litImag: nothing continues it
		return st, false
	}
	st.lit = next
	return st, true
}

// litQuote opens a string with quote c, keeping the prefix's flags.
func (st State) litQuote(c byte) State {
	st.lflag &= litBytes | litRaw
	if st.lit != litPrefixB && st.lit != litPrefixR && st.lit != litPrefixBR {
		st.lflag = 0
	}
	if c == '"' {
		st.lflag |= litDouble
	}
	st.lit = litStr
	return st
}

// litStringChar reports whether c may stand in a one-line string.
func (st State) litStringChar(c byte) bool {
	switch {
	case c == '\n' || c == '\r' || c == 0:
		return false
	case c == litNonASCII:
		return st.lflag&litBytes == 0
	}
	return true
}

// litClose closes the innermost container with c, where it may close here
// (open: right after an opening bracket or a comma).
func (st State) litClose(c byte, open bool) (State, bool) {
	if st.ldepth == 0 {
		return st, false
	}
	switch k := st.top(); {
	case c == ')' && k == litParen, c == ']' && k == litList:
	case c == '}' && (k == litSet || k == litBrace || k == litDictValue || k == litDictKey && open):
	default:
		return st, false
	}
	st.lstack >>= 3
	st.ldepth--
	st.lit = litAfter
	return st, true
}

// litNeed is the fewest decoded bytes that complete the value from st: the
// current token's end, a value after a key, every closing bracket. A '"' or
// '\' counts 4, the room the JSON string needs to start an escape.
func (st State) litNeed() int {
	need := 0
	switch st.lit {
	case litValue, litSign:
		need = 1
	case litComplex:
		need = 2 // "0j"
	case litZero, litInt, litFrac, litExpDigits, litZeroNZ, litDotLead, litExp, litExpSign:
		if st.lit == litZeroNZ || st.lit == litDotLead || st.lit == litExp || st.lit == litExpSign {
			need = 1 // a digit, or the '.', exponent or 'j' after "0" and digits
		}
		if st.lflag&litRHS != 0 {
			need++ // the 'j'
		}
	case litPrefixB, litPrefixR, litPrefixU, litPrefixBR:
		need = 2 // ''
	case litStr, litStrEsc, litStrHex:
		need = 1
		if st.lflag&litDouble != 0 {
			need = 4
		}
		if st.lit == litStrEsc {
			need++
		} else if st.lit == litStrHex {
			need += int(st.lcount)
		}
	case litWord:
		need = len(litWords[st.lcount>>4]) - int(st.lcount&15)
	}
	stack := st.lstack
	for d := range int(st.ldepth) {
		need++ // the closing bracket
		// A key still needs ": 0"; the innermost may instead close after a comma.
		if stack&7 == litDictKey && !(d == 0 && st.lit == litOpen) {
			need += 2
		}
		stack >>= 3
	}
	return need
}
