package constrain

import "github.com/ndbg/ndbg/dsl"

// Every value a frame writes (a local's, the return or exception value) is
// a repr: its decoded text is read, character by character, by the repr
// grammar of package dsl (dsl.ReprState, the automaton dsl.CheckRepr runs),
// so that a model writes only what CheckRepr accepts: closed strings,
// balanced brackets, the forms CPython prints, never the DSL's ".." marker
// (which the frame grammar offers apart, where the ".." rule allows it) or
// a source line's text. Where Context.Literals asks for it (CRUXEval's
// answers: the arguments at a call, the value at a return) the value must
// be a Python literal, the same automaton's literal grammar (ast.literal_eval's
// language as repr writes it: no names, calls but set(), attributes,
// subscripts or operators but one sign and a complex's + or -, so that
// "__import__('sys').exit(0)" is refused at its first byte; syntax only:
// an unhashable key ({[1]: 2}) passes and fails where the value is
// evaluated).
//
// The automaton reads the decoded characters of the value's JSON string:
// ASCII as itself, any other character as dsl.ReprNonASCII. Each character
// must leave the value completable within dsl.MaxRepr bytes (ReprState.Fits),
// so no value is left unfinishable.

// literalAt reports whether the value opening at st (pValueOpen or
// pArgOpen) must be a literal.
func (p *Program) literalAt(st State) bool {
	if !p.rules[st.rules].literals {
		return false
	}
	return st.pos == pValueOpen && st.event == dsl.Call || st.pos == pArgOpen && st.event == dsl.Return
}

// reprChar feeds one decoded character c of the value, which starts at
// byte at of it, to the repr automaton; later counts bytes of c still to
// come (a surrogate pair's low half), which the room left must hold. Where
// the repr grammar refuses c, only the DSL's ".." may go on: the first two
// bytes of a local's value are '.', and the ".." rule may write that name.
func (p *Program) reprChar(st State, c byte, at, later int) (State, bool) {
	r, ok := st.r.Step(c, at)
	switch {
	case ok && r.Fits(int(st.n)+later):
	case !ok && st.dotsOK && (st.dots == dOne || st.dots == dTwo):
	default:
		return st, false
	}
	st.r = r
	return st, true
}

// canCode reports whether some character that a \uXXXX escape with a code
// unit in [lo, hi] writes may come next in the value, room included: a
// JSON escape starts only where it can end well.
func (p *Program) canCode(st State, lo, hi uint32) bool {
	takes := func(k int, c byte, later int) bool {
		_, ok := p.growChar(st, k, c, later)
		return ok
	}
	// The controls without a short escape (written \n, ... instead) read
	// alike in the repr grammar (string content only; NUL nowhere): one
	// stands for all.
	for r := max(lo, 1); r <= min(hi, 0x7f); r++ {
		short := r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f'
		if (r < 0x20 || r == 0x7f) && !short {
			if takes(1, 0x01, 0) {
				return true
			}
			break
		}
		if r == 0x1f {
			r = 0x7e // on to DEL
		}
	}
	overlaps := func(a, b uint32) bool { return lo <= b && hi >= a }
	return overlaps(0x80, 0x7ff) && takes(2, dsl.ReprNonASCII, 0) ||
		(overlaps(0x800, 0xd7ff) || overlaps(0xe000, 0xffff)) && takes(3, dsl.ReprNonASCII, 0) ||
		overlaps(0xd800, 0xdbff) && takes(2, dsl.ReprNonASCII, 2)
}

// canEscape reports whether some JSON escape may come next in the value:
// a short one (\" \\ \n \r \t \b \f) or a \uXXXX.
func (p *Program) canEscape(st State) bool {
	for _, c := range []byte{'"', '\\', '\n', '\r', '\t', '\b', '\f'} {
		if _, ok := p.growChar(st, 1, c, 0); ok {
			return true
		}
	}
	return p.canCode(st, 0, 0xffff)
}

// growChar adds a decoded character of k bytes, which the repr automaton
// reads as c, with later bytes of it still to come.
func (p *Program) growChar(st State, k int, c byte, later int) (State, bool) {
	at := int(st.n)
	st, ok := st.grow(k, false)
	if !ok {
		return st, false
	}
	return p.reprChar(st, c, at, later)
}
