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
		p.Closable = st.sub == sPlain && (st.r.Complete() || st.pos == pValue && st.dots == dTwo)
	}
	if st.pos == pFrameSep && (st.event == dsl.Return || st.event == dsl.Exception) {
		p.Part = PartValue // the return value's <|frame_sep|>: it ends the value
	}
	return p
}

// FillCloseMask is FillMask restricted to the tokens that end the current
// value string soonest: those that follow the shortest text completing its
// repr (the repr grammar's Completion: closing quotes and brackets, the
// digit an exponent lacks, ...) and then its closing '"', the tokens that
// end a value the model keeps extending. It reports false, and leaves mask
// as FillMask does, where the value cannot end that way (inside a JSON
// escape, or no allowed token follows that text).
func (m *Matcher) FillCloseMask(mask []uint64) bool {
	m.FillMask(mask)
	end := m.p.closeText(m.st)
	if end == nil {
		return false
	}
	closing := make([]uint64, len(mask))
	any := false
	for wi, w := range mask {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			w &= w - 1
			t := m.p.vocab.tokens[wi*64+b]
			if k := min(len(t), len(end)); k > 0 && string(t[:k]) == string(end[:k]) {
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

// closeText is the JSON text that ends the value string at st soonest:
// the end of a JSON escape under way (the character the repr's completion
// needs, or the first escape that leaves it completable), then the
// shortest completion of its repr, escaped, and the closing '"'; nil
// outside a value string.
func (p *Program) closeText(st State) []byte {
	if st.pos != pValue && st.pos != pArg {
		return nil
	}
	var end []byte
	for i := 0; st.sub != sPlain; i++ {
		if i == maxEscape {
			return nil
		}
		next, ok := st, false
		for _, b := range p.escapeOrder(st) {
			if next, ok = p.step(st, b); ok {
				end = append(end, b)
				break
			}
		}
		if !ok {
			return nil
		}
		st = next
	}
	var rest []byte
	switch {
	case st.r.Complete():
	case st.pos == pValue && st.dots == dTwo: // ".."
	case st.pos == pValue && st.dots == dOne && st.r.Completion(int(st.n)) == nil: // "." of ".."
		rest = []byte{'.'}
	default:
		if rest = st.r.Completion(int(st.n)); rest == nil {
			return nil
		}
	}
	for _, c := range rest {
		if c == '"' || c == '\\' {
			end = append(end, '\\')
		}
		end = append(end, c)
	}
	return append(end, '"')
}

// maxEscape is the longest JSON escape: a surrogate pair after its '\\'.
const maxEscape = 11

// escapeOrder is the order closeText tries the bytes that go on with a
// JSON escape under way: after '\\', the character the repr's completion
// starts with where it is one that needs the escape, then the short
// escapes; hex digits; the low half's "\\u".
func (p *Program) escapeOrder(st State) []byte {
	switch st.sub {
	case sEscape:
		order := []byte{'"', '\\', 't', 'b', 'f', 'n', 'r', 'u'}
		if c := st.r.Completion(int(st.n)); len(c) > 0 && c[0] == '\\' {
			order[0], order[1] = '\\', '"'
		}
		return order
	case sLowBS:
		return []byte{'\\'}
	case sLowU:
		return []byte{'u'}
	}
	return []byte("0123456789abcdef")
}

// Finish is the number of bytes, in JSON text, that end the value string
// at the matcher's position soonest (closeText: the JSON escape under way,
// its repr's shortest completion and the closing quote); 0 outside a value
// string.
func (m *Matcher) Finish() int { return len(m.p.closeText(m.st)) }
