package tokenizer

// bpeLong is the BPE merge loop for long words: a doubly linked list of
// symbols and a heap of candidate merges ordered by (rank, position), as in
// Hugging Face's Word::merge_all. It gives the same result as the quadratic
// loop in bpe, in O(n log n).
func (t *Tokenizer) bpeLong(syms []int32) []int32 {
	n := len(syms)
	prev := make([]int32, n)
	next := make([]int32, n)
	for i := range syms {
		prev[i], next[i] = int32(i-1), int32(i+1)
	}
	next[n-1] = -1
	h := make(mergeHeap, 0, n)
	push := func(i int32) {
		if i < 0 || next[i] < 0 {
			return
		}
		if r, ok := t.merges[pairKey(syms[i], syms[next[i]])]; ok {
			h.push(candidate{key: uint64(r.rank)<<32 | uint64(i), id: r.id})
		}
	}
	for i := int32(0); i+1 < int32(n); i++ {
		push(i)
	}
	for len(h) > 0 {
		c := h.pop()
		i := int32(c.key)
		j := next[i]
		// Skip stale candidates: i was merged into its left neighbour
		// (prev is then -2), or the pair at i changed since the push.
		if prev[i] == -2 || j < 0 {
			continue
		}
		r, ok := t.merges[pairKey(syms[i], syms[j])]
		if !ok || r.id != c.id || uint64(r.rank) != c.key>>32 {
			continue
		}
		syms[i] = c.id
		prev[j] = -2
		next[i] = next[j]
		if next[j] >= 0 {
			prev[next[j]] = i
		}
		push(prev[i])
		push(i)
	}
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

// candidate is a possible merge of the pair starting at position
// uint32(key) with rank key>>32; comparing keys orders by (rank, position).
type candidate struct {
	key uint64
	id  int32
}

// mergeHeap is a binary min-heap of candidates, typed to avoid
// container/heap's boxing.
type mergeHeap []candidate

func (h *mergeHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[i].key >= s[p].key {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap) pop() candidate {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].key < s[m].key {
			m = l
		}
		if r < len(s) && s[r].key < s[m].key {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
