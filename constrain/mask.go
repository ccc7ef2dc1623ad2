package constrain

import "github.com/ndbg/ndbg/dsl"

// mask returns the allowed-token bitset of a state, from the cache or
// computed: special tokens one by one, ordinary tokens by walking the
// vocabulary trie in lockstep with the grammar, pruning every subtree whose
// prefix the grammar rejects. Inside a value's string the tokens without a
// '"' or '\\' never leave it, so which of them are allowed depends on the
// value's state alone: they come from the vocabulary's value masks
// (valueMask, shared by every program), and only the tokens holding a
// quote or a backslash are walked from the whole state.
func (p *Program) mask(st State) []uint64 {
	key := st
	v := p.vocab
	value := st.pos == pValue || st.pos == pArg
	if !value || far(st, v.maxLen) {
		key.n = 0 // no token reaches where the length matters
	}
	p.mu.RLock()
	m, ok := p.masks[key]
	p.mu.RUnlock()
	if ok {
		return m
	}
	m = make([]uint64, (v.size+63)/64)
	if value {
		copy(m, p.valueMask(st, false))
		orSet(m, p.valueMask(st, true))
		p.walk(&v.quoted, 0, st, m)
	} else {
		for id, name := range v.bySpec {
			if _, ok := p.stepSpecial(st, name); ok {
				m[id>>6] |= 1 << (id & 63)
			}
		}
		p.walk(&v.all, 0, st, m)
	}
	p.mu.Lock()
	if len(p.masks) < maxMasks {
		p.masks[key] = m
	}
	p.mu.Unlock()
	return m
}

// far reports whether no token of at most maxLen bytes, from a value's
// state st, reaches the bytes where the marker of a cut repr may start
// (dsl.MarkerFrom) or where the room left counts: the value's length so
// far does not change what such a token may be.
func far(st State, maxLen int) bool {
	n := int(st.n) + maxLen
	return n <= dsl.MarkerFrom && (!st.r.Literal() || n+dsl.ReprNeedBound <= dsl.MaxRepr)
}

// valueState is the part of a value's state that decides which tokens
// without '"' and '\\' may come: the value's, not the frame's.
func valueState(st State) State {
	return State{pos: pValue, sub: st.sub, dots: st.dots, dotsOK: st.dotsOK, lt: st.lt, n: st.n, cu: st.cu, r: st.r}
}

// valueMask returns the tokens of one length class (long) without '"' and
// '\\' that the value's state st allows, from the vocabulary's cache or
// computed. Where the repr grammar takes plain characters whatever comes
// around them (dsl.ReprPlain: inside a string of the repr, or the text of a
// <...> form), the tokens made only of them are taken whole from their
// precomputed set and only the others are walked (XGrammar's split into
// context-independent and uncertain tokens).
func (p *Program) valueMask(st State, long bool) []uint64 {
	v := p.vocab
	c := &v.short
	if long {
		c = &v.long
	}
	st = valueState(st)
	isFar := far(st, c.maxLen)
	if isFar {
		st.n = 0
	}
	key := valueKey{st, long}
	v.vmu.RLock()
	m, ok := v.values[key]
	v.vmu.RUnlock()
	if ok {
		return m
	}
	m = make([]uint64, (v.size+63)/64)
	plain := dsl.PlainNone
	if st.sub == sPlain && isFar {
		plain = st.r.Plain()
	}
	ident := dsl.IdentNone
	if st.sub == sPlain && isFar {
		ident = st.r.Ident()
	}
	switch {
	case plain == dsl.PlainNone && ident != dsl.IdentNone:
		orSet(m, c.words)
		if ident == dsl.IdentSpaced {
			orSet(m, c.spaced)
		}
		p.walk(&c.others, 0, st, m)
	case plain == dsl.PlainNone:
		p.walk(&c.unquoted, 0, st, m)
	case plain == dsl.PlainDouble:
		orLt(m, c.content, c.contentNoBar, st.lt)
	case plain == dsl.PlainSingle:
		orLt(m, c.contentNoApos, c.contentNoAposNoBar, st.lt)
		p.walk(&c.apos, 0, st, m)
	case plain == dsl.PlainText:
		orSet(m, c.contentText) // no '<' just before: it would have opened a form
		p.walk(&c.textual, 0, st, m)
	}
	v.vmu.Lock()
	if len(v.values) < maxValueMasks {
		v.values[key] = m
	}
	v.vmu.Unlock()
	return m
}

// orSet adds set to m.
func orSet(m, set []uint64) {
	for i, w := range set {
		m[i] |= w
	}
}

// orLt adds set, or noBar after a '<' (lt), where "<|" must not come, to m.
func orLt(m, set, noBar []uint64, lt bool) {
	if lt {
		set = noBar
	}
	orSet(m, set)
}

// walk marks every token below trie node n whose bytes the grammar accepts
// from st.
func (p *Program) walk(t *vocabTrie, n int32, st State, m []uint64) {
	for _, e := range t.edges[t.first[n]:t.first[n+1]] {
		next, ok := p.step(st, e.b)
		if !ok {
			continue
		}
		if id := t.tokenAt[e.child]; id >= 0 {
			m[id>>6] |= 1 << (id & 63)
		}
		p.walk(t, e.child, next, m)
	}
}
