package dsl

// The repr grammar: the text a state's value may hold. It is one automaton,
// read one character at a time, that both CheckRepr and the constrained
// decoder (package constrain, which embeds a ReprState in its frame
// grammar) run, so that what a model may write and what a user may set
// are the same language:
//
//	repr    = value | prefix marker              (a repr TruncateRepr cut)
//	value   = number | sign number | number sign imag   (a complex: 1+2j, -1.5-0j)
//	        | sign ("inf" | "nan" | "infj" | "nanj")
//	        | string | name | name "(" [args] ")"
//	        | "(" [items] ")" | "[" [items] "]" | "{" [items | pairs] "}"
//	        | "<" text ">"                        (CPython's <...> forms)
//	        | "..."                               (inside a container: a recursive one, [[...]])
//	items   = value { "," value } [","]      pairs = value ":" value { "," value ":" value } [","]
//	args    = arg { "," arg } [","]         arg = value | identifier "=" value
//	name    = "None" | "True" | "False" | "Ellipsis" | "NotImplemented" | "inf" | "nan" | "infj" | "nanj"
//	        | identifier "." identifier { "." identifier }   (re.IGNORECASE; or any name before "(")
//	text    = identifier-start { char | string | "<" text ">" | "(" {…} ")" | "[" {…} "]" | "{" {…} "}" }
//	number  = Python's decimal int, float or imaginary (no underscores, no hex, octal or binary)
//	string  = ['b'|'r'|'u'|'br'|'rb' in any case] one-line quoted string, '...' or "...",
//	          its escapes well formed (\x with 2 hex digits, \u with 4, \U with 8 up to
//	          0010FFFF; no \N{...}), no newline, carriage return or NUL
//	marker  = "...[+" digits ["+"] "]"            (after the first 237-240 bytes)
//
// with spaces allowed between tokens (not inside <...> text, which is free).
// Every repr CPython's built-in types print is in it (numbers with inf and
// nan, strings, bytes, containers and 1-tuples, set(), frozenset({...}),
// Counter(...), deque([...]), exceptions as ValueError('x'), objects,
// functions, classes and modules as <...>), and so are the tracer's
// placeholders (<unprintable X object>) and the marker of a cut repr; it
// holds no DSL marker (".." alone) and no source line tag ("  # (1)": a
// '#' is only text inside <...> or a string). It is a syntax, not a type
// check: {[1]: 2} is in it.
//
// The literal grammar (ReprStart(true): where CRUXEval reads a Python
// literal, ast.literal_eval's language as repr writes it) is the same
// automaton with the names, calls, <...> forms, "..." and the marker
// turned off, but None, True, False and set().
//
// The automaton reads decoded characters: ASCII as itself, any other
// character as ReprNonASCII. Nesting is at most reprMaxDepth levels.

// ReprNonASCII is the character the automaton reads for any non-ASCII one.
const ReprNonASCII = 0x80

// ReprState is a position in the repr grammar: a small comparable value
// (the constrained decoder keys its mask cache with it). The zero value is
// not a position: start with ReprStart.
type ReprState struct {
	st    uint8  // rs...
	flag  uint8  // f...
	count uint8  // hex digits to come; a word and position (word<<4 | pos)
	depth uint8  // open containers
	mk    uint8  // the marker "...[+N]" read so far (mk...); 0: none
	mkN   uint8  // digits of N read
	lit   bool   // the literal grammar
	stack uint64 // the open containers' kinds, 4 bits each, the innermost lowest
}

// Automaton states.
const (
	rsDead       uint8 = iota // no value: only a marker under way may go on
	rsValue                   // a value must come
	rsOpen                    // after an opening bracket or a comma: a value or the closing bracket
	rsAfter                   // after a complete value
	rsAfterNum                // after a complete real number: as rsAfter, or a complex's + or -
	rsSign                    // after a sign: a number must come
	rsComplex                 // after a complex's + or -: an imaginary number must come
	rsZero                    // a number "0", "00", ...
	rsZeroNZ                  // "0" then other digits: only a '.', an exponent or 'j' can follow
	rsInt                     // an int's digits
	rsDotLead                 // "." with no digit before it: a digit must come (or, in a container, "..")
	rsFrac                    // after the '.' of a float, or its digits
	rsExp                     // after 'e'
	rsExpSign                 // after 'e' and a sign
	rsExpDigits               // an exponent's digits
	rsImag                    // after 'j'
	rsPrefixB                 // after a string prefix 'b'
	rsPrefixR                 // after 'r'
	rsPrefixU                 // after 'u'
	rsPrefixBR                // after 'br' or 'rb'
	rsStr                     // inside a string
	rsStrEsc                  // after a backslash in a string
	rsStrHex                  // inside a \x, \u or \U escape: count digits to come
	rsWord                    // literal grammar: inside None, True, False or set(): count is word<<4 | position
	rsName                    // inside a name: count is the keyword it may still be (word<<4 | position; word 15: none)
	rsNameDot                 // after a name's '.': an identifier must come
	rsDots2                   // ".." inside a container: the third '.' of "..." must come
	rsAngleStart              // after '<': an identifier character must come
	rsText                    // inside <...>: free text
)

// Flags.
const (
	fRHS    uint8 = 1 << iota // the number is a complex's imaginary part: it must end with 'j'
	fDouble                   // the string is in double quotes
	fBytes                    // the string is a bytes literal
	fRaw                      // the string is raw: escapes are not decoded
	fWide                     // the escape is \U: at most 0010FFFF
	fHigh                     // a \U escape's third digit was 1
	fSigned                   // the name follows a sign: inf or nan (or infj, nanj)
	fDotted                   // the name has a '.': it may stand alone
)

// fKw shares fDouble's bit: it marks a name that starts an argument of a
// call (it may be a keyword, name=value); fDouble is only set in strings.
const fKw = fDouble

// Container kinds on the stack, 4 bits a level.
const (
	kParen     uint64 = 1 + iota // ( ... ): a tuple, or a parenthesized value
	kList                        // [ ... ]
	kSet                         // { v, ... }
	kDictKey                     // { ... } of pairs, at a key
	kDictValue                   // { ... } of pairs, at a value
	kBrace                       // '{' and its first value: a set or a dict
	kCall                        // name( ... ): a call's arguments
	kAngle                       // < ... >
	kTParen                      // ( ... ) inside <...>: text
	kTBrack                      // [ ... ] inside <...>
	kTBrace                      // { ... } inside <...>
)

// Marker progress (ReprState.mk).
const (
	mkNone   uint8 = iota
	mkDot1         // "."
	mkDot2         // ".."
	mkDot3         // "..."
	mkOpen         // "...["
	mkPlus         // "...[+"
	mkDigits       // "...[+N"
	mkPlus2        // "...[+N+"
	mkDone         // "...[+N]" or "...[+N+]": the repr is complete
)

// markerNeed is the fewest characters that complete the marker from mk.
var markerNeed = [...]int{mkDot1: 6, mkDot2: 5, mkDot3: 4, mkOpen: 3, mkPlus: 2, mkDigits: 1, mkPlus2: 1, mkDone: 0}

const (
	reprMaxDepth = 16 // nested containers (4 bits each in a uint64)
	markerFrom   = truncKeep - 3
	markerMaxN   = 9 // digits of a marker's N
	wordNone     = 15
	needBound    = 3*reprMaxDepth + 16 // more than ReprState.need can be
)

// The literal grammar's words, and the names that stand alone in the repr
// grammar. inf and nan are numbers: a complex's sign may follow them.
var (
	litWords   = [...]string{"None", "True", "False", "set()"}
	reprWords  = [...]string{"None", "True", "False", "Ellipsis", "NotImplemented", "inf", "nan", "infj", "nanj"}
	wordInf    = uint8(5)
	wordNan    = uint8(6)
	wordInfj   = uint8(7)
	wordNanj   = uint8(8)
	firstWords [128]uint8 // the first reprWords entry starting with a byte, +1; 0: none
)

func init() {
	for i := len(reprWords) - 1; i >= 0; i-- {
		firstWords[reprWords[i][0]] = uint8(i) + 1
	}
}

// ReprStart is the position before a value's first character: of the repr
// grammar, or with literal of the literal grammar.
func ReprStart(literal bool) ReprState { return ReprState{st: rsValue, lit: literal} }

// Literal reports whether s is in the literal grammar.
func (s ReprState) Literal() bool { return s.lit }

func (s ReprState) top() uint64 { return s.stack & 15 }

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

func isHexByte(c byte) bool {
	return isDigitByte(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= ReprNonASCII
}

func isIdent(c byte) bool { return isIdentStart(c) || isDigitByte(c) }

// textKind reports whether k is a container of free text (<...> and the
// brackets inside it).
func textKind(k uint64) bool { return k >= kAngle }

// Step reads character c, which starts at byte at of the repr (its length
// so far): the marker of a cut repr may start only at bytes 237-240. It
// reports false where c cannot continue the repr.
func (s ReprState) Step(c byte, at int) (ReprState, bool) {
	mk, mkN := s.markerStep(c, at)
	var ok bool
	if s.st != rsDead {
		s, ok = s.step(c)
	}
	if !ok {
		s = ReprState{st: rsDead, lit: s.lit}
	}
	s.mk, s.mkN = mk, mkN
	return s, ok || mk != mkNone
}

// markerStep advances the marker with c: a marker under way, or one that
// starts at c (a '.' within bytes 237-240 after a prefix of a value).
func (s ReprState) markerStep(c byte, at int) (uint8, uint8) {
	if s.lit {
		return mkNone, 0
	}
	switch s.mk {
	case mkDot1, mkDot2:
		if c == '.' {
			return s.mk + 1, 0
		}
	case mkDot3:
		switch {
		case c == '[':
			return mkOpen, 0
		case c == '.' && at-2 <= truncKeep: // the marker starts a byte later: "[[...." is "[[." and "...["
			return mkDot3, 0
		}
	case mkOpen:
		if c == '+' {
			return mkPlus, 0
		}
	case mkPlus:
		if c >= '1' && c <= '9' {
			return mkDigits, 1
		}
	case mkDigits:
		switch {
		case isDigitByte(c) && s.mkN < markerMaxN:
			return mkDigits, s.mkN + 1
		case c == '+':
			return mkPlus2, s.mkN
		case c == ']':
			return mkDone, s.mkN
		}
	case mkPlus2:
		if c == ']' {
			return mkDone, s.mkN
		}
	}
	if c == '.' && at >= markerFrom && at <= truncKeep && s.st != rsDead {
		return mkDot1, 0
	}
	return mkNone, 0
}

// step is one transition of the value automaton.
func (s ReprState) step(c byte) (ReprState, bool) {
	switch s.st {
	case rsValue, rsOpen:
		if c == ' ' {
			return s, true
		}
		if s.st == rsOpen {
			if closed, ok := s.close(c, true); ok {
				return closed, true
			}
		}
		return s.begin(c)
	case rsAfter, rsAfterNum:
		switch c {
		case ' ':
			return s, true
		case '+', '-':
			if s.st == rsAfterNum {
				s.st, s.flag = rsComplex, fRHS
				return s, true
			}
			return s, false
		case ',':
			switch s.top() {
			case kParen, kList, kSet, kCall:
			case kBrace:
				s.stack = s.stack&^15 | kSet
			case kDictValue:
				s.stack = s.stack&^15 | kDictKey
			default: // a key without its value, or a tuple without parentheses
				return s, false
			}
			s.st = rsOpen
			return s, true
		case ':':
			switch s.top() {
			case kBrace, kDictKey:
				s.stack = s.stack&^15 | kDictValue
				s.st = rsValue
				return s, true
			}
			return s, false
		}
		return s.close(c, false)
	case rsSign, rsComplex:
		if c == ' ' {
			return s, true
		}
		if !s.lit && (c == 'i' || c == 'n') { // -inf, 1+nanj
			s.flag |= fSigned
			return s.nameStart(c)
		}
		s.flag |= fSigned // a number after a sign: not the "..." of a container
		return s.number(c)
	case rsZero, rsZeroNZ, rsInt, rsDotLead, rsFrac, rsExp, rsExpSign, rsExpDigits, rsImag:
		if next, ok := s.inNumber(c); ok {
			return next, true
		}
		// c is not part of the number: the number ends before it.
		switch {
		case s.st == rsImag:
			s.st = rsAfter
		case s.flag&fRHS != 0 || s.st == rsZeroNZ || s.st == rsDotLead || s.st == rsExp || s.st == rsExpSign:
			return s, false
		default:
			s.st = rsAfterNum
		}
		s.flag = 0
		return s.step(c)
	case rsPrefixB, rsPrefixR, rsPrefixU, rsPrefixBR:
		switch {
		case c == '\'' || c == '"':
			return s.quote(c), true
		case (c == 'r' || c == 'R') && s.st == rsPrefixB, (c == 'b' || c == 'B') && s.st == rsPrefixR:
			s.st, s.flag = rsPrefixBR, fBytes|fRaw
			return s, true
		case !s.lit: // not a prefix: a name (bytearray, range, b=1)
			s.st, s.flag, s.count = rsName, s.flag&fKw, wordNone<<4
			return s.step(c)
		}
		return s, false
	case rsStr:
		switch {
		case c == '"' && s.flag&fDouble != 0, c == '\'' && s.flag&fDouble == 0:
			s.flag = 0
			if textKind(s.top()) {
				s.st = rsText
			} else {
				s.st = rsAfter
			}
			return s, true
		case c == '\\':
			s.st = rsStrEsc
			return s, true
		}
		return s, s.stringChar(c)
	case rsStrEsc:
		if !s.stringChar(c) {
			return s, false
		}
		s.st = rsStr
		if s.flag&fRaw != 0 {
			return s, true
		}
		switch {
		case c == 'x':
			s.st, s.count = rsStrHex, 2
		case c == 'u' && s.flag&fBytes == 0:
			s.st, s.count = rsStrHex, 4
		case c == 'U' && s.flag&fBytes == 0:
			s.st, s.count = rsStrHex, 8
			s.flag |= fWide
		case c == 'N' && s.flag&fBytes == 0:
			return s, false // \N{NAME}: names are not checked here, and repr never writes them
		}
		return s, true
	case rsStrHex:
		if !isHexByte(c) {
			return s, false
		}
		if s.flag&fWide != 0 { // \U0010FFFF at most
			switch s.count {
			case 8, 7:
				if c != '0' {
					return s, false
				}
			case 6:
				if c == '1' {
					s.flag |= fHigh
				} else if c != '0' {
					return s, false
				}
			case 5:
				if s.flag&fHigh != 0 && c != '0' {
					return s, false
				}
			}
		}
		if s.count--; s.count == 0 {
			s.st = rsStr
			s.flag &^= fWide | fHigh
		}
		return s, true
	case rsWord:
		w, i := litWords[s.count>>4], s.count&15
		if c != w[i] {
			return s, false
		}
		if i++; int(i) == len(w) {
			s.st, s.count = rsAfter, 0
		} else {
			s.count = s.count&^15 | i
		}
		return s, true
	case rsName:
		return s.inName(c)
	case rsNameDot:
		if !isIdentStart(c) {
			return s, false
		}
		s.st = rsName
		return s, true
	case rsDots2:
		if c != '.' {
			return s, false
		}
		s.st = rsAfter
		return s, true
	case rsAngleStart:
		if !isIdentStart(c) {
			return s, false
		}
		s.st = rsText
		return s, true
	case rsText:
		return s.text(c)
	}
	return s, false
}

// begin starts a value with c.
func (s ReprState) begin(c byte) (ReprState, bool) {
	switch c {
	case '(', '[', '{':
		kind := kParen
		if c == '[' {
			kind = kList
		} else if c == '{' {
			kind = kBrace
		}
		return s.push(kind, rsOpen)
	case '-', '+':
		s.st = rsSign
		return s, true
	case '\'', '"':
		return s.quote(c), true
	case 'b', 'B':
		s.st, s.flag = rsPrefixB, fBytes|s.kwFlag()
		return s, true
	case 'r', 'R':
		s.st, s.flag = rsPrefixR, fRaw|s.kwFlag()
		return s, true
	case 'u', 'U':
		s.st, s.flag = rsPrefixU, s.kwFlag()
		return s, true
	case '<':
		if s.lit {
			return s, false
		}
		return s.push(kAngle, rsAngleStart)
	}
	if s.lit {
		for i, w := range litWords {
			if c == w[0] {
				s.st, s.count = rsWord, uint8(i)<<4|1
				return s, true
			}
		}
		return s.number(c)
	}
	if isIdentStart(c) {
		s.flag = s.kwFlag()
		return s.nameStart(c)
	}
	return s.number(c)
}

// kwFlag is fKw where a name starting here may be a call's keyword
// argument.
func (s ReprState) kwFlag() uint8 {
	if s.st == rsOpen && s.top() == kCall {
		return fKw
	}
	return 0
}

// push opens a container of kind k, going on in state next.
func (s ReprState) push(k uint64, next uint8) (ReprState, bool) {
	if s.depth == reprMaxDepth {
		return s, false
	}
	s.stack = s.stack<<4 | k
	s.depth++
	s.st = next
	return s, true
}

// nameStart starts a name with its first character c (flags set).
func (s ReprState) nameStart(c byte) (ReprState, bool) {
	s.st, s.count = rsName, wordNone<<4
	if c < 128 {
		if w := firstWords[c]; w != 0 {
			s.count = (w-1)<<4 | 1
		}
	}
	if s.flag&fSigned != 0 && !s.signedWordPossible() {
		return s, false
	}
	return s, true
}

// signedWordPossible reports whether a signed name (or a complex's
// imaginary part) may still become the word it must be.
func (s ReprState) signedWordPossible() bool {
	w := s.count >> 4
	if s.flag&fRHS != 0 {
		return w == wordInfj || w == wordNanj || (w == wordInf || w == wordNan) && int(s.count&15) <= 3
	}
	return w >= wordInf && w <= wordNanj
}

// inName continues a name with c.
func (s ReprState) inName(c byte) (ReprState, bool) {
	switch {
	case isIdent(c):
		s.count = nextWord(s.count, c)
		if s.flag&fSigned != 0 && !s.signedWordPossible() {
			return s, false
		}
		return s, true
	case c == '.' && s.flag&fSigned == 0:
		s.st, s.flag, s.count = rsNameDot, s.flag&^fKw|fDotted, wordNone<<4
		return s, true
	case c == '(' && s.flag&fSigned == 0:
		s.flag = 0
		return s.push(kCall, rsOpen)
	case c == '=' && s.flag&fKw != 0 && s.flag&fDotted == 0:
		s.st, s.flag = rsValue, 0
		return s, true
	}
	// The name ends before c.
	next, ok := s.endName()
	if !ok {
		return s, false
	}
	return next.step(c)
}

// nextWord is the keyword (word<<4 | position) a name may still be after c.
func nextWord(count uint8, c byte) uint8 {
	w, i := count>>4, count&15
	if w == wordNone {
		return count
	}
	prefix := reprWords[w][:i]
	for k, word := range reprWords {
		if len(word) > int(i) && word[:i] == prefix && word[i] == c {
			return uint8(k)<<4 | (i + 1)
		}
	}
	return wordNone << 4
}

// word returns the keyword a name is, complete; ok false otherwise.
func (s ReprState) word() (uint8, bool) {
	w, i := s.count>>4, s.count&15
	if w == wordNone || int(i) != len(reprWords[w]) {
		return 0, false
	}
	return w, true
}

// endName ends a complete name: a keyword, or a dotted name.
func (s ReprState) endName() (ReprState, bool) {
	w, isWord := s.word()
	switch {
	case s.flag&fRHS != 0:
		if !isWord || w != wordInfj && w != wordNanj {
			return s, false
		}
		s.st = rsAfter
	case s.flag&fSigned != 0:
		if !isWord || w < wordInf {
			return s, false
		}
		s.st = rsAfterNum
		if w >= wordInfj {
			s.st = rsAfter
		}
	case s.flag&fDotted != 0:
		s.st = rsAfter
	case !isWord:
		return s, false
	case w == wordInf || w == wordNan:
		s.st = rsAfterNum
	default:
		s.st = rsAfter
	}
	s.flag, s.count = 0, 0
	return s, true
}

// text continues free text inside <...> with c.
func (s ReprState) text(c byte) (ReprState, bool) {
	switch c {
	case '<':
		return s.push(kAngle, rsAngleStart)
	case '(':
		return s.push(kTParen, rsText)
	case '[':
		return s.push(kTBrack, rsText)
	case '{':
		return s.push(kTBrace, rsText)
	case '>':
		if s.top() != kAngle {
			return s, true // text inside brackets: "(a>b)"
		}
		return s.pop()
	case ')', ']', '}':
		want := kTParen
		if c == ']' {
			want = kTBrack
		} else if c == '}' {
			want = kTBrace
		}
		if s.top() != want {
			return s, false
		}
		return s.pop()
	case '\'', '"':
		return s.quote(c), true
	}
	return s, c >= 0x20 && c != 0x7f
}

// pop closes the innermost container: text goes on inside an enclosing
// <...>, anything else has a complete value.
func (s ReprState) pop() (ReprState, bool) {
	s.stack >>= 4
	s.depth--
	s.st = rsAfter
	if textKind(s.top()) {
		s.st = rsText
	}
	return s, true
}

// number starts a number's digits with c (after a sign, or a complex's
// + or -, when there was one).
func (s ReprState) number(c byte) (ReprState, bool) {
	switch {
	case c == '0':
		s.st = rsZero
	case isDigitByte(c):
		s.st = rsInt
	case c == '.':
		s.st = rsDotLead
	default:
		return s, false
	}
	return s, true
}

// inNumber continues a number with c; false when c cannot continue it.
func (s ReprState) inNumber(c byte) (ReprState, bool) {
	next := s.st
	switch s.st {
	case rsZero:
		switch {
		case c == '0':
		case isDigitByte(c):
			next = rsZeroNZ
		case c == '.':
			next = rsFrac
		case c == 'e' || c == 'E':
			next = rsExp
		case c == 'j' || c == 'J':
			next = rsImag
		default:
			return s, false
		}
	case rsZeroNZ, rsInt:
		switch {
		case isDigitByte(c):
		case c == '.':
			next = rsFrac
		case c == 'e' || c == 'E':
			next = rsExp
		case c == 'j' || c == 'J':
			next = rsImag
		default:
			return s, false
		}
	case rsDotLead:
		switch {
		case isDigitByte(c):
			next = rsFrac
		case c == '.' && !s.lit && s.depth > 0 && s.flag == 0: // "..." in a container
			next = rsDots2
		default:
			return s, false
		}
	case rsFrac:
		switch {
		case isDigitByte(c):
		case c == 'e' || c == 'E':
			next = rsExp
		case c == 'j' || c == 'J':
			next = rsImag
		default:
			return s, false
		}
	case rsExp:
		switch {
		case c == '+' || c == '-':
			next = rsExpSign
		case isDigitByte(c):
			next = rsExpDigits
		default:
			return s, false
		}
	case rsExpSign:
		if !isDigitByte(c) {
			return s, false
		}
		next = rsExpDigits
	case rsExpDigits:
		switch {
		case isDigitByte(c):
		case c == 'j' || c == 'J':
			next = rsImag
		default:
			return s, false
		}
	default: // rsImag: nothing continues it
		return s, false
	}
	s.st = next
	return s, true
}

// quote opens a string with quote c, keeping the prefix's flags.
func (s ReprState) quote(c byte) ReprState {
	if s.st == rsPrefixB || s.st == rsPrefixR || s.st == rsPrefixBR {
		s.flag &= fBytes | fRaw
	} else {
		s.flag = 0
	}
	if c == '"' {
		s.flag |= fDouble
	}
	s.st = rsStr
	return s
}

// stringChar reports whether c may stand in a one-line string.
func (s ReprState) stringChar(c byte) bool {
	switch {
	case c == '\n' || c == '\r' || c == 0:
		return false
	case c == ReprNonASCII:
		return s.flag&fBytes == 0
	}
	return true
}

// close closes the innermost container with c, where it may close here
// (open: right after an opening bracket or a comma).
func (s ReprState) close(c byte, open bool) (ReprState, bool) {
	if s.depth == 0 {
		return s, false
	}
	switch k := s.top(); {
	case c == ')' && (k == kParen || k == kCall), c == ']' && k == kList:
	case c == '}' && (k == kSet || k == kBrace || k == kDictValue || k == kDictKey && open):
	default:
		return s, false
	}
	return s.pop()
}

// Complete reports whether the repr may end here.
func (s ReprState) Complete() bool {
	if s.mk == mkDone {
		return true
	}
	if s.depth > 0 {
		return false
	}
	switch s.st {
	case rsAfter, rsAfterNum, rsImag:
		return true
	case rsZero, rsInt, rsFrac, rsExpDigits:
		return s.flag&fRHS == 0
	case rsName:
		_, ok := s.endName()
		return ok
	}
	return false
}

// Fits reports whether the repr, n bytes long so far (a character's bytes
// still to come included), can still be completed within MaxRepr bytes:
// by the value itself, or (in the repr grammar) by the marker of a cut
// repr, which may start until byte 240.
func (s ReprState) Fits(n int) bool {
	if s.mk != mkNone && n+markerNeed[s.mk] <= MaxRepr {
		return true
	}
	if s.st == rsDead {
		return false
	}
	if n+needBound <= MaxRepr || !s.lit && n <= truncKeep {
		return true
	}
	return n+s.need() <= MaxRepr
}

// need is the fewest characters (all ASCII: bytes) that complete the value
// (not the marker): the current token's end, a value after a key, every
// closing bracket. Completion writes them.
func (s ReprState) need() int {
	var buf [needBound]byte
	return len(s.completion(buf[:0]))
}

// Completion returns the shortest text that completes the repr from s, n
// bytes long so far, within MaxRepr bytes: the value's own completion
// where it fits, else (in the repr grammar, where a value that long would
// have been cut) the marker of a cut repr, after what brings the repr to
// the bytes where the marker may start; nil where nothing completes it.
func (s ReprState) Completion(n int) []byte {
	if s.mk != mkNone && (s.st == rsDead || n+s.need() > MaxRepr) {
		if n+markerNeed[s.mk] > MaxRepr {
			return nil
		}
		return []byte("...[+1]")[7-markerNeed[s.mk]:]
	}
	if s.st == rsDead {
		return nil
	}
	if n+s.need() <= MaxRepr || s.lit {
		return s.completion([]byte{})
	}
	if n > truncKeep {
		return nil
	}
	var b []byte
	for n+len(b) < markerFrom {
		padded := false
		for _, c := range []byte(" a0n.") {
			if next, ok := s.step(c); ok {
				s, b, padded = next, append(b, c), true
				break
			}
		}
		if !padded {
			return nil
		}
	}
	return append(b, "...[+1]"...)
}

// completion appends the shortest completion of the value to b.
func (s ReprState) completion(b []byte) []byte {
	j := func() {
		if s.flag&fRHS != 0 {
			b = append(b, 'j')
		}
	}
	switch s.st {
	case rsValue, rsSign:
		b = append(b, '0')
	case rsComplex:
		b = append(b, "0j"...)
	case rsZero, rsInt, rsFrac, rsExpDigits:
		j()
	case rsZeroNZ:
		if s.flag&fRHS != 0 {
			b = append(b, 'j')
		} else {
			b = append(b, '.')
		}
	case rsDotLead, rsExp, rsExpSign:
		b = append(b, '0')
		j()
	case rsPrefixB, rsPrefixR, rsPrefixU, rsPrefixBR:
		b = append(b, "''"...)
	case rsStr, rsStrEsc, rsStrHex:
		if s.st == rsStrEsc {
			b = append(b, 'n')
		}
		if s.st == rsStrHex {
			for range s.count {
				b = append(b, '0')
			}
		}
		if s.flag&fDouble != 0 {
			b = append(b, '"')
		} else {
			b = append(b, '\'')
		}
	case rsWord:
		b = append(b, litWords[s.count>>4][s.count&15:]...)
	case rsName:
		if _, ok := s.endName(); !ok {
			w, i := s.count>>4, s.count&15
			switch {
			case s.flag&fRHS != 0: // infj or nanj
				b = append(b, reprWords[w][i:]...)
				if w == wordInf || w == wordNan {
					b = append(b, 'j')
				}
			case s.flag&fSigned != 0, w != wordNone && len(reprWords[w])-int(i) < 2:
				b = append(b, reprWords[w][i:]...)
			default: // a call: name()
				b = append(b, "()"...)
			}
		}
	case rsNameDot, rsAngleStart:
		b = append(b, 'a')
	case rsDots2:
		b = append(b, '.')
	}
	stack := s.stack
	for d := range int(s.depth) {
		switch stack & 15 {
		case kParen, kCall, kTParen:
			b = append(b, ')')
		case kList, kTBrack:
			b = append(b, ']')
		case kDictKey:
			// A key still needs its value; the innermost may instead close after a comma.
			if !(d == 0 && s.st == rsOpen) {
				b = append(b, ":0"...)
			}
			b = append(b, '}')
		case kSet, kDictValue, kBrace, kTBrace:
			b = append(b, '}')
		case kAngle:
			b = append(b, '>')
		}
		stack >>= 4
	}
	return b
}

// ReprPlain says which characters leave a position as it is wherever
// they come (inside a string, or the text of <...>), so that a decoder
// may take the tokens made only of them without reading each: the
// context-independent tokens.
type ReprPlain uint8

const (
	// PlainNone: every character counts.
	PlainNone ReprPlain = iota
	// PlainSingle: inside a '...' string: printable ASCII but '\'' and '\\'.
	PlainSingle
	// PlainDouble: inside a "..." string: printable ASCII but '"' and '\\'.
	PlainDouble
	// PlainText: inside <...>: printable ASCII but quotes, brackets, '<',
	// '>' and '\\'.
	PlainText
)

// Plain says which characters leave s as it is (ReprPlain). It holds for
// a character at byte at when the marker cannot start there (at < 237).
func (s ReprState) Plain() ReprPlain {
	if s.mk != mkNone {
		return PlainNone
	}
	switch s.st {
	case rsStr:
		if s.flag&fDouble != 0 {
			return PlainDouble
		}
		return PlainSingle
	case rsText:
		return PlainText
	}
	return PlainNone
}

// ReprIdent says which identifier tokens a position takes whatever they
// are: a decoder may take them whole without reading each.
type ReprIdent uint8

const (
	// IdentNone: every token counts.
	IdentNone ReprIdent = iota
	// IdentWords: every word ([A-Za-z_][A-Za-z0-9_]*, ASCII) is taken,
	// and no word after a space (" word").
	IdentWords
	// IdentSpaced: every word, with or without one space before it, is
	// taken.
	IdentSpaced
)

// Ident says which words s takes whatever they are (ReprIdent), for a
// word that starts before byte MarkerFrom and ends by it.
func (s ReprState) Ident() ReprIdent {
	if s.lit || s.mk != mkNone {
		return IdentNone
	}
	switch s.st {
	case rsValue, rsOpen: // a name starts: None, Counter(, deque([1], maxlen=3)
		return IdentSpaced
	case rsName:
		if s.flag&(fSigned|fRHS) == 0 {
			return IdentWords
		}
	case rsNameDot, rsAngleStart, rsPrefixB, rsPrefixR, rsPrefixU, rsPrefixBR:
		return IdentWords
	}
	return IdentNone
}

// MarkerFrom is the first byte at which the marker of a cut repr may start:
// a character before it never starts one.
const MarkerFrom = markerFrom

// ReprNeedBound is more than the characters a value can need to complete:
// where its length plus this is at most MaxRepr, the room left is no
// constraint on what may come next.
const ReprNeedBound = needBound
