package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// cacheSlots is the number of entries of the pre-token cache (a power of 2).
const cacheSlots = 1 << 16

// cacheEntry is immutable once published.
type cacheEntry struct {
	word string
	ids  []int32
}

// wordCache remembers the ids of pre-tokens: source code and traces repeat
// identifiers and indentation constantly. It is a direct-mapped table of
// atomic pointers, so concurrent Encode calls share it without locks; a
// colliding word simply replaces the older one.
type wordCache struct {
	seed  maphash.Seed
	slots []atomic.Pointer[cacheEntry]
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[cacheEntry], cacheSlots)}
}

func (c *wordCache) slot(w string) *atomic.Pointer[cacheEntry] {
	return &c.slots[maphash.String(c.seed, w)&(cacheSlots-1)]
}

func (c *wordCache) get(w string) ([]int32, bool) {
	if e := c.slot(w).Load(); e != nil && e.word == w {
		return e.ids, true
	}
	return nil, false
}

func (c *wordCache) put(w string, ids []int32) {
	c.slot(w).Store(&cacheEntry{word: strings.Clone(w), ids: ids})
}
