package constrain

import (
	"math/bits"

	"github.com/ndbg/ndbg/dsl"
)

// Part is the part of a frame a decoding position belongs to: what a token
// that starts there decides. The neural backend sums each part's token
// probabilities into the confidence of that field of the state.
type Part uint8

// The parts of a frame.
const (
	// PartEvent: the event token (or <|end_of_text|>).
	PartEvent Part = iota
	// PartLocal: a local's name or value, or the punctuation after a value
	// (whether another local follows).
	PartLocal
	// PartLine: the line (<|action_sep|> and the source line).
	PartLine
	// PartValue: the return or exception value.
	PartValue
	// PartFrame: the opening brace, the closing <|frame_sep|>, or a frame
	// already done.
	PartFrame
)

// Position says where the next token of a frame starts.
type Position struct {
	Part Part
	// Local is the index of the local (in the order the frame writes them,
	// which is State.Locals') at PartLocal.
	Local int
	// InString is true inside a value string (a local's or the return
	// value), after its opening quote; Len is then its decoded length so
	// far in bytes, at most dsl.MaxRepr.
	InString bool
	Len      int
	// Closable is true inside a value string where a '"' may come next:
	// the value may end here (a literal, where one is asked for, complete).
	Closable bool
}

// Position reports where the next token starts.
func (m *Matcher) Position() Position {
	st := m.st
	var p Position
	switch st.pos {
	case pEvent:
		p.Part = PartEvent
	case pLocalsOpen, pDone, pFrameSep:
		p.Part = PartFrame
	case pFirstName, pName, pNameOpen:
		p.Part, p.Local = PartLocal, st.used.count() // the next local: its name is not complete yet
	case pColon, pColonSpace, pValueOpen, pValue, pAfterValue, pCommaSpace:
		p.Part, p.Local = PartLocal, st.used.count()-1
	case pActionSep, pLine:
		p.Part = PartLine
	case pArgSep, pArgOpen, pArg:
		p.Part = PartValue
	}
	if st.pos == pValue || st.pos == pArg {
		p.InString, p.Len = true, int(st.n)
		p.Closable = st.sub == sPlain && st.n > 0 && st.litEnd()
	}
	if st.pos == pFrameSep && (st.event == dsl.Return || st.event == dsl.Exception) {
		p.Part = PartValue // the return value's <|frame_sep|>: it ends the value
	}
	return p
}

// FillCloseMask is FillMask restricted to the tokens that start by closing
// the current value string (a '"' first): the tokens that end a value the
// model keeps extending. It reports false, and leaves mask as FillMask
// does, where the value cannot end here (no allowed token closes it).
func (m *Matcher) FillCloseMask(mask []uint64) bool {
	m.FillMask(mask)
	if !m.Position().Closable {
		return false
	}
	closing := make([]uint64, len(mask))
	any := false
	for wi, w := range mask {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			w &= w - 1
			if t := m.p.vocab.tokens[wi*64+b]; len(t) > 0 && t[0] == '"' {
				closing[wi] |= 1 << b
				any = true
			}
		}
	}
	if any {
		copy(mask, closing)
	}
	return any
}
