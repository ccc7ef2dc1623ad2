package tokenizer

import "container/heap"

// bpeLong is the BPE merge loop for long words: a doubly linked list of
// symbols and a heap of candidate merges ordered by (rank, position), as in
// Hugging Face's Word::merge_all. It gives the same result as the quadratic
// loop in bpe.
func (t *Tokenizer) bpeLong(syms []int32) []int32 {
	n := len(syms)
	prev := make([]int, n)
	next := make([]int, n)
	alive := make([]bool, n)
	for i := range syms {
		prev[i], next[i], alive[i] = i-1, i+1, true
	}
	next[n-1] = -1
	h := &mergeHeap{}
	push := func(i int) {
		j := next[i]
		if i < 0 || j < 0 {
			return
		}
		if r, ok := t.merges[pairKey(syms[i], syms[j])]; ok {
			heap.Push(h, candidate{pos: i, rank: r.rank, id: r.id, left: syms[i], right: syms[j]})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(i)
	}
	for h.Len() > 0 {
		c := heap.Pop(h).(candidate)
		i := c.pos
		j := next[i]
		// Skip stale candidates: a side was merged away or changed.
		if !alive[i] || j < 0 || syms[i] != c.left || syms[j] != c.right {
			continue
		}
		syms[i] = c.id
		alive[j] = false
		next[i] = next[j]
		if next[j] >= 0 {
			prev[next[j]] = i
		}
		if p := prev[i]; p >= 0 {
			push(p)
		}
		push(i)
	}
	out := syms[:0]
	for i := 0; i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

type candidate struct {
	pos         int
	rank        int32
	id          int32
	left, right int32
}

type mergeHeap []candidate

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].pos < h[b].pos
}
func (h mergeHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
