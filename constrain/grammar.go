package constrain

import (
	"math/bits"

	"github.com/ndbg/ndbg/dsl"
)

// pos is a position in the grammar of one frame (docs/dsl.md):
//
//	frame  = "<|end_of_text|>"
//	       | ("<|call_sep|>" | "<|line_sep|>") locals "<|action_sep|>" line "<|frame_sep|>"
//	       | ("<|return_sep|>" | "<|exception_sep|>") "<|action_sep|>" line "<|arg_sep|>" string "<|frame_sep|>"
//	locals = "{}" | "{" name ": " value { ", " name ": " value } "}"
//	name   = '"' one of the scope's names '"'     value = string   (".." where the ".." rule allows)
//	line   = one of the candidate source lines, with its "\n"
type pos uint8

const (
	pEvent      pos = iota // an event token, or <|end_of_text|>
	pLocalsOpen            // '{'
	pFirstName             // '"' (a name) or '}' (no locals)
	pName                  // inside a name: walking the names trie
	pColon                 // ':'
	pColonSpace            // ' '
	pValueOpen             // '"'
	pValue                 // inside a value string
	pAfterValue            // ',' or '}'
	pCommaSpace            // ' '
	pNameOpen              // '"'
	pActionSep             // <|action_sep|>
	pLine                  // inside the source line: walking a lines trie
	pArgSep                // <|arg_sep|>
	pArgOpen               // '"'
	pArg                   // inside the value string of a return or exception
	pFrameSep              // <|frame_sep|>
	pDone                  // the frame is complete
)

// Substates of a JSON string (canonical Python json.dumps, ensure_ascii).
const (
	sPlain   uint8 = iota // printable ASCII, a backslash, or the closing quote
	sEscape               // after '\'
	sHex1                 // \u, expecting hex digit 1..4
	sHex2                 //
	sHex3                 //
	sHex4                 //
	sLowBS                // after a high surrogate: '\'
	sLowU                 // 'u'
	sLowHex1              // low surrogate digits 1..4
	sLowHex2              //
	sLowHex3              //
	sLowHex4              //
)

// Content of a value so far, to recognize the two-byte value "..".
const (
	dEmpty uint8 = iota
	dOne
	dTwo
	dOther
)

// State is the position of a frame being decoded. It is a small comparable
// value: it keys the mask cache, and a matcher's history is a slice of them.
type State struct {
	pos   pos
	event dsl.Event
	sub   uint8 // string substate (sPlain...)
	dots  uint8 // value content so far (dEmpty...)
	lt    bool  // the previous string byte was '<' ("<|" never occurs in content)
	// dotsOK: the value being read is a local's that the ".." rule may
	// write (its first bytes may be "..", which is no repr).
	dotsOK bool
	rules  int16  // the frame's rules (Program.rules)
	trie   int16  // the names or lines trie being walked
	node   int32  // node in that trie
	name   int16  // the name whose value is being read
	n      int16  // decoded length of the string so far, in bytes
	cu     uint16 // the \u code unit being read
	used   nameSet
	dot    nameSet // names written ".."
	// r reads a value's decoded text (literal.go): the repr grammar, or the
	// literal grammar where a Python literal is asked for; zero elsewhere.
	r dsl.ReprState
}

// nameSet is a set of a program's local names, by index (at most 256).
type nameSet [4]uint64

func (s nameSet) has(i int) bool { return s[i>>6]&(1<<(i&63)) != 0 }
func (s *nameSet) add(i int)     { s[i>>6] |= 1 << (i & 63) }
func (s nameSet) sub(o nameSet) bool {
	return s[0]&^o[0] == 0 && s[1]&^o[1] == 0 && s[2]&^o[2] == 0 && s[3]&^o[3] == 0
}
func (s nameSet) minus(o nameSet) nameSet {
	return nameSet{s[0] &^ o[0], s[1] &^ o[1], s[2] &^ o[2], s[3] &^ o[3]}
}
func (s nameSet) empty() bool { return s == nameSet{} }

const maxNames = 256

// step consumes one byte of an ordinary token.
func (p *Program) step(st State, b byte) (State, bool) {
	switch st.pos {
	case pLocalsOpen:
		return st.expect(b, '{', pFirstName)
	case pFirstName:
		switch b {
		case '"':
			r := p.rules[st.rules]
			if r.events[st.event].names.minus(st.used).empty() {
				return st, false
			}
			st.pos, st.trie, st.node = pName, r.events[st.event].nameTrie, 0
			return st, true
		case '}':
			st.pos = pActionSep
			return st, true
		}
		return st, false
	case pName:
		t := p.tries[st.trie]
		c, ok := t.child(st.node, b)
		if !ok {
			return st, false
		}
		if v := t.nodes[c].value; v >= 0 { // b was the closing quote
			used := st.used
			used.add(int(v))
			if st.used.has(int(v)) || !p.compatible(st, used, st.dot) {
				return st, false
			}
			st.used = used
			st.pos, st.name = pColon, int16(v)
			return st, true
		}
		if !p.canAddNameFrom(st, t.nodes[c].below) {
			return st, false
		}
		st.node = c
		return st, true
	case pColon:
		return st.expect(b, ':', pColonSpace)
	case pColonSpace:
		return st.expect(b, ' ', pValueOpen)
	case pValueOpen:
		lit := p.literalAt(st)
		st, ok := st.expect(b, '"', pValue)
		st.sub, st.dots, st.n, st.lt, st.r = sPlain, dEmpty, 0, false, dsl.ReprStart(lit)
		st.dotsOK = p.rules[st.rules].events[st.event].dotNames.has(int(st.name))
		return st, ok
	case pValue, pArg:
		return p.stepString(st, b)
	case pAfterValue:
		switch b {
		case ',':
			if !p.canAddName(st) {
				return st, false
			}
			st.pos = pCommaSpace
			return st, true
		case '}':
			st.pos = pActionSep
			return st, true
		}
		return st, false
	case pCommaSpace:
		return st.expect(b, ' ', pNameOpen)
	case pNameOpen:
		if b != '"' {
			return st, false
		}
		st.pos, st.trie, st.node = pName, p.rules[st.rules].events[st.event].nameTrie, 0
		return st, true
	case pLine:
		t := p.tries[st.trie]
		c, ok := t.child(st.node, b)
		if !ok {
			return st, false
		}
		st.node = c
		if t.nodes[c].value >= 0 { // the line's "\n"
			if st.event == dsl.Call || st.event == dsl.Line {
				st.pos = pFrameSep
			} else {
				st.pos = pArgSep
			}
		}
		return st, true
	case pArgOpen:
		lit := p.literalAt(st)
		st, ok := st.expect(b, '"', pArg)
		st.sub, st.dots, st.n, st.lt, st.r = sPlain, dEmpty, 0, false, dsl.ReprStart(lit)
		return st, ok
	}
	return st, false // positions that take only special tokens
}

func (st State) expect(b, want byte, next pos) (State, bool) {
	if b != want {
		return st, false
	}
	st.pos = next
	return st, true
}

// stepString consumes one byte inside a JSON string value.
func (p *Program) stepString(st State, b byte) (State, bool) {
	switch st.sub {
	case sPlain:
		switch {
		case b == '"':
			return p.closeString(st)
		case b == '\\':
			// An escape starts only where some escape can end well (room
			// included), so no escape is left unfinishable.
			if !p.canEscape(st) {
				return st, false
			}
			st.sub, st.lt = sEscape, false
			return st, true
		case b >= 0x20 && b < 0x7f:
			if st.lt && b == '|' {
				return st, false
			}
			st.lt = b == '<'
			at := int(st.n)
			st, ok := st.grow(1, b == '.')
			if !ok {
				return st, false
			}
			return p.reprChar(st, b, at, 0)
		}
		return st, false
	case sEscape:
		switch b {
		case '"', '\\', 'n', 'r', 't', 'b', 'f':
			st.sub = sPlain
			return p.growChar(st, 1, jsonEscaped[b], 0)
		case 'u':
			if !p.canCode(st, 0, 0xffff) {
				return st, false
			}
			st.sub, st.cu = sHex1, 0
			return st, true
		}
		return st, false
	case sHex1, sHex2, sHex3, sHex4, sLowHex1, sLowHex2, sLowHex3, sLowHex4:
		d, ok := hexValue(b)
		if !ok {
			return st, false
		}
		st.cu = st.cu<<4 | uint16(d)
		// The digits read so far must leave a valid completion.
		left := 3 - int((st.sub-sHex1)%(sLowHex1-sHex1)) // digits still to come
		lo, hi := uint32(st.cu)<<(4*left), uint32(st.cu)<<(4*left)|(1<<(4*left)-1)
		if st.sub >= sLowHex1 {
			if hi < 0xdc00 || lo > 0xdfff {
				return st, false
			}
		} else if !escapable(lo, hi) || !p.canCode(st, lo, hi) {
			return st, false
		}
		switch st.sub {
		case sHex4:
			return p.finishEscape(st)
		case sLowHex4:
			if st.cu < 0xdc00 || st.cu > 0xdfff {
				return st, false
			}
			st.sub = sPlain
			return st.grow(2, false) // the pair's high half counted 2 already (and fed the automaton)
		}
		st.sub++
		return st, true
	case sLowBS:
		if b != '\\' {
			return st, false
		}
		st.sub = sLowU
		return st, true
	case sLowU:
		if b != 'u' {
			return st, false
		}
		st.sub, st.cu = sLowHex1, 0
		return st, true
	}
	return st, false
}

// finishEscape checks a complete \uXXXX: canonical json.dumps escapes only
// what it must, with the short forms where they exist.
func (p *Program) finishEscape(st State) (State, bool) {
	r := st.cu
	switch {
	case r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return st, false
	case r >= 0x20 && r < 0x7f:
		return st, false
	case r >= 0xdc00 && r <= 0xdfff:
		return st, false
	case r >= 0xd800 && r <= 0xdbff:
		st.sub = sLowBS
		return p.growChar(st, 2, dsl.ReprNonASCII, 2) // the low half's 2 bytes are still to come
	case r < 0x80:
		st.sub = sPlain
		return p.growChar(st, 1, byte(r), 0)
	case r < 0x800:
		st.sub = sPlain
		return p.growChar(st, 2, dsl.ReprNonASCII, 0)
	}
	st.sub = sPlain
	return p.growChar(st, 3, dsl.ReprNonASCII, 0)
}

// jsonEscaped is the character each short JSON escape stands for.
var jsonEscaped = [256]byte{'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f'}

// grow adds k decoded bytes to the string, within dsl.MaxRepr, and tracks
// whether the content is still a prefix of "..".
func (st State) grow(k int, dot bool) (State, bool) {
	if int(st.n)+k > dsl.MaxRepr {
		return st, false
	}
	st.n += int16(k)
	if dot && st.dots < dTwo {
		st.dots++
	} else {
		st.dots = dOther
	}
	return st, true
}

// closeString ends a value (or the return value) at its closing quote: a
// complete repr, or a local's "..".
func (p *Program) closeString(st State) (State, bool) {
	if !st.r.Complete() && !(st.pos == pValue && st.dots == dTwo) {
		return st, false
	}
	st.r, st.dotsOK = dsl.ReprState{}, false
	if st.pos == pArg {
		st.pos = pFrameSep
		return st, true
	}
	if st.dots == dTwo {
		dot := st.dot
		dot.add(int(st.name))
		if !p.rules[st.rules].events[st.event].dotNames.has(int(st.name)) || !p.compatible(st, st.used, dot) {
			return st, false
		}
		st.dot = dot
	}
	st.pos = pAfterValue
	return st, true
}

// escapable reports whether some code unit in [lo, hi] is written as a
// \uXXXX escape by json.dumps and may stand alone (a high surrogate is
// completed by its low half).
func escapable(lo, hi uint32) bool {
	inside := func(a, b uint32) bool { return lo >= a && hi <= b }
	if inside(0x20, 0x7e) || inside(0xdc00, 0xdfff) {
		return false
	}
	if lo == hi {
		switch lo {
		case '\n', '\r', '\t', '\b', '\f':
			return false
		}
	}
	return true
}

func hexValue(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10, true
	}
	return 0, false
}

// stepSpecial consumes a special token (by its text).
func (p *Program) stepSpecial(st State, tok string) (State, bool) {
	r := p.rules[st.rules]
	switch st.pos {
	case pEvent:
		if tok == tokEnd {
			if !r.end {
				return st, false
			}
			st.pos = pDone
			return st, true
		}
		e, ok := eventOfToken(tok)
		if !ok || !r.events[e].allowed {
			return st, false
		}
		st.event = e
		if e == dsl.Call || e == dsl.Line {
			st.pos = pLocalsOpen
		} else {
			st.pos = pActionSep
		}
		return st, true
	case pActionSep:
		if tok != tokActionSep {
			return st, false
		}
		id, ok := p.lineTrie(st)
		if !ok {
			return st, false
		}
		st.pos, st.trie, st.node = pLine, id, 0
		return st, true
	case pArgSep:
		if tok != tokArgSep {
			return st, false
		}
		st.pos = pArgOpen
		return st, true
	case pFrameSep:
		if tok != tokFrameSep {
			return st, false
		}
		st.pos = pDone
		return st, true
	}
	return st, false
}

func eventOfToken(tok string) (dsl.Event, bool) {
	switch tok {
	case tokCallSep:
		return dsl.Call, true
	case tokLineSep:
		return dsl.Line, true
	case tokReturnSep:
		return dsl.Return, true
	case tokExceptionSep:
		return dsl.Exception, true
	}
	return 0, false
}

// forced returns the only byte, or the only special token, the grammar
// allows next; ok is false where there is a choice (or at the end).
func (p *Program) forced(st State) (b byte, special string, ok bool) {
	r := p.rules[st.rules]
	switch st.pos {
	case pEvent:
		only := ""
		count := 0
		if r.end {
			only, count = tokEnd, 1
		}
		for e := dsl.Call; e <= dsl.Exception; e++ {
			if r.events[e].allowed {
				only, count = e.Token(), count+1
			}
		}
		return 0, only, count == 1
	case pLocalsOpen:
		return '{', "", true
	case pFirstName:
		if !p.canAddName(st) {
			return '}', "", true
		}
	case pName, pLine:
		if st.pos == pLine { // a name's trie may hold names already used
			if n := p.tries[st.trie].nodes[st.node]; len(n.kids) == 1 {
				return n.kids[0].b, "", true
			}
		}
	case pColon:
		return ':', "", true
	case pColonSpace, pCommaSpace:
		return ' ', "", true
	case pValueOpen, pNameOpen, pArgOpen:
		return '"', "", true
	case pAfterValue:
		if !p.canAddName(st) {
			return '}', "", true
		}
	case pActionSep:
		return 0, tokActionSep, true
	case pArgSep:
		return 0, tokArgSep, true
	case pFrameSep:
		return 0, tokFrameSep, true
	}
	return 0, "", false
}

func (s nameSet) count() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
}
