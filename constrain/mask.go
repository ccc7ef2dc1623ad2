package constrain

// mask returns the allowed-token bitset of a state, from the cache or
// computed: special tokens one by one, ordinary tokens by walking the
// vocabulary trie in lockstep with the grammar, pruning every subtree whose
// prefix the grammar rejects. Inside a string, the tokens made only of
// string content are accepted whatever the context, so their precomputed
// set is taken whole and only the tokens holding a quote or a backslash are
// walked (XGrammar's split into context-independent and uncertain tokens).
func (p *Program) mask(st State) []uint64 {
	key := st
	// Inside a literal every byte counts, and the room it needs to end.
	inString := (st.pos == pValue || st.pos == pArg) && st.sub == sPlain && st.lit == litOff
	farFromLimit := int(st.n)+p.vocab.maxLen <= maxReprBytes && st.lit == litOff
	if farFromLimit {
		key.n = 0 // no token can reach the bound: the length does not matter
	}
	p.mu.RLock()
	m, ok := p.masks[key]
	p.mu.RUnlock()
	if ok {
		return m
	}
	v := p.vocab
	m = make([]uint64, (v.size+63)/64)
	for id, name := range v.bySpec {
		if _, ok := p.stepSpecial(st, name); ok {
			m[id>>6] |= 1 << (id & 63)
		}
	}
	if inString && farFromLimit {
		content := v.content
		if st.lt {
			content = v.contentNoBar
		}
		for i, w := range content {
			m[i] |= w
		}
		p.walk(&v.quoted, 0, st, m)
	} else {
		p.walk(&v.all, 0, st, m)
	}
	p.mu.Lock()
	if len(p.masks) < maxMasks {
		p.masks[key] = m
	}
	p.mu.Unlock()
	return m
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
