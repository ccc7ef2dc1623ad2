package sample

import "math/bits"

// Mask is a set of allowed token ids over a vocabulary of fixed size, one
// bit per token: the form in which a constrained decoder hands its verdict
// to the sampler. The zero Mask has no room; use NewMask.
type Mask struct {
	words []uint64
	n     int
}

// NewMask returns a mask over n tokens with none allowed.
func NewMask(n int) *Mask {
	return &Mask{words: make([]uint64, (n+63)/64), n: n}
}

// Len returns the vocabulary size the mask covers.
func (m *Mask) Len() int { return m.n }

// Allow marks token id as allowed; ids outside [0, Len) are ignored.
func (m *Mask) Allow(id int) {
	if uint(id) < uint(m.n) {
		m.words[id>>6] |= 1 << (uint(id) & 63)
	}
}

// Disallow marks token id as not allowed.
func (m *Mask) Disallow(id int) {
	if uint(id) < uint(m.n) {
		m.words[id>>6] &^= 1 << (uint(id) & 63)
	}
}

// Allowed reports whether id is allowed (false outside [0, Len)).
func (m *Mask) Allowed(id int) bool {
	return uint(id) < uint(m.n) && m.words[id>>6]&(1<<(uint(id)&63)) != 0
}

// Reset disallows every token.
func (m *Mask) Reset() { clear(m.words) }

// AllowAll allows every token.
func (m *Mask) AllowAll() {
	for i := range m.words {
		m.words[i] = ^uint64(0)
	}
	if r := m.n & 63; r != 0 {
		m.words[len(m.words)-1] = (1 << uint(r)) - 1
	}
}

// Count returns the number of allowed tokens.
func (m *Mask) Count() int {
	c := 0
	for _, w := range m.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// Only returns the one token the mask allows, if it allows exactly one:
// a token that needs no model to choose it.
func (m *Mask) Only() (int, bool) {
	id := -1
	for wi, w := range m.words {
		switch {
		case w == 0:
		case id >= 0 || w&(w-1) != 0:
			return 0, false
		default:
			id = wi*64 + bits.TrailingZeros64(w)
		}
	}
	return id, id >= 0
}

// Words exposes the bitset (bit i%64 of word i/64 is token i) so that a
// constrained decoder can fill it wholesale, e.g. by OR-ing precomputed
// per-state masks.
func (m *Mask) Words() []uint64 { return m.words }
