package constrain

// Matcher follows one frame as it is decoded, token by token. It answers
// whether a token is allowed (cheap: sample first, then check that one
// token), fills the full mask of allowed tokens when needed, reports what the
// grammar forces (jump-forward), and rolls back or forks, because a debugging
// session goes back and branches. A Matcher is not safe for concurrent use;
// Fork gives each goroutine its own.
type Matcher struct {
	p    *Program
	st   State
	hist []State // the state before each accepted token
}

// Allowed reports whether token id may come next.
func (m *Matcher) Allowed(id int) bool {
	_, ok := m.p.advance(m.st, id)
	return ok
}

// Accept consumes token id; it reports false (and changes nothing) when the
// grammar does not allow it.
func (m *Matcher) Accept(id int) bool {
	st, ok := m.p.advance(m.st, id)
	if !ok {
		return false
	}
	m.hist = append(m.hist, m.st)
	m.st = st
	return true
}

// Rollback undoes the last n accepted tokens.
func (m *Matcher) Rollback(n int) {
	n = min(n, len(m.hist))
	if n <= 0 {
		return
	}
	m.st = m.hist[len(m.hist)-n]
	m.hist = m.hist[:len(m.hist)-n]
}

// Fork returns an independent copy of the matcher.
func (m *Matcher) Fork() *Matcher {
	return &Matcher{p: m.p, st: m.st, hist: append([]State(nil), m.hist...)}
}

// Done reports whether a whole frame (or <|end_of_text|>) has been accepted.
func (m *Matcher) Done() bool { return m.st.pos == pDone }

// Accepted is the number of tokens accepted so far.
func (m *Matcher) Accepted() int { return len(m.hist) }

// Forced returns what the grammar forces next, without a model: either a run
// of bytes (text) or one special token (special >= 0, text empty). Both are
// empty (special -1) where there is a choice. A special token can be fed
// without the model, saving a forward pass. Forced text is another matter:
// tokenized on its own it is usually not the tokenization the model was
// trained on (the "{" a locals object must open with is the BPE token `{"`
// together with what follows), and a model fed such tokens goes off its
// training distribution; the neural backend lets the model write it,
// token by token under the mask, instead.
func (m *Matcher) Forced() (text []byte, special int) {
	st := m.st
	for {
		b, sp, ok := m.p.forced(st)
		if !ok {
			return text, -1
		}
		if sp != "" {
			if len(text) > 0 {
				return text, -1
			}
			id, _ := m.p.vocab.Special(sp)
			return nil, id
		}
		next, ok := m.p.step(st, b)
		if !ok {
			return text, -1
		}
		text = append(text, b)
		st = next
	}
}

// ForcedSpecial returns the special token the grammar forces next (it can
// be fed without the model), or -1 where there is a choice or the grammar
// forces text: Forced's special alone, without walking the forced text, so
// that a decoder may ask at every token.
func (m *Matcher) ForcedSpecial() int {
	_, sp, ok := m.p.forced(m.st)
	if !ok || sp == "" {
		return -1
	}
	id, _ := m.p.vocab.Special(sp)
	return id
}

// FillMask sets bit id of mask (mask[id/64] bit id%64) for every allowed
// token and clears the others. mask must hold Vocab.Size() bits.
func (m *Matcher) FillMask(mask []uint64) {
	copy(mask, m.p.mask(m.st))
}

// advance consumes one token (special or ordinary) from st.
func (p *Program) advance(st State, id int) (State, bool) {
	if id < 0 || id >= p.vocab.size {
		return st, false
	}
	if name, ok := p.vocab.bySpec[id]; ok {
		return p.stepSpecial(st, name)
	}
	b := p.vocab.tokens[id]
	if b == nil {
		return st, false
	}
	for _, c := range b {
		var ok bool
		if st, ok = p.step(st, c); !ok {
			return st, false
		}
	}
	return st, true
}
