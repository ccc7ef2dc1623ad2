package constrain

import "sort"

// trie is a small byte trie over a set of keys (a scope's local names, a set
// of candidate source lines). A key ends where a node carries a value >= 0.
type trie struct {
	nodes []trieNode
}

type trieNode struct {
	kids  []edge  // sorted by byte
	value int32   // the key's value where a key ends here, else -1
	below nameSet // the values of the keys below (for name tries, whose values are name indices < maxNames)
}

func newTrie(keys [][]byte, values []int32) *trie {
	t := &trie{nodes: []trieNode{{value: -1}}}
	for i, k := range keys {
		n := int32(0)
		v := values[i]
		for _, b := range k {
			if v >= 0 && v < maxNames {
				t.nodes[n].below.add(int(v))
			}
			c, ok := t.child(n, b)
			if !ok {
				t.nodes = append(t.nodes, trieNode{value: -1})
				c = int32(len(t.nodes) - 1)
				kids := append(t.nodes[n].kids, edge{b, c})
				sort.Slice(kids, func(i, j int) bool { return kids[i].b < kids[j].b })
				t.nodes[n].kids = kids
			}
			n = c
		}
		t.nodes[n].value = v
		if v >= 0 && v < maxNames {
			t.nodes[n].below.add(int(v))
		}
	}
	return t
}

func (t *trie) child(n int32, b byte) (int32, bool) {
	for _, e := range t.nodes[n].kids {
		if e.b == b {
			return e.child, true
		}
	}
	return 0, false
}
