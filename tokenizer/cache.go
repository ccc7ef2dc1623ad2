package tokenizer

import (
	"hash/maphash"
	"sync/atomic"
)

// cacheSlots is the number of entries of the pre-token cache (a power of 2).
const cacheSlots = 1 << 16

// cacheEntry maps one pre-token to its ids. Short words and id lists live
// inside the entry, so that caching a word costs one allocation. It is
// immutable once published.
type cacheEntry struct {
	wlen  int32
	nids  int32
	wbuf  [24]byte // the word when it fits
	ibuf  [6]int32 // the ids when they fit
	wlong string   // the word otherwise
	ilong []int32  // the ids otherwise
}

func (e *cacheEntry) matches(w string) bool {
	if int(e.wlen) != len(w) {
		return false
	}
	if len(w) <= len(e.wbuf) {
		return string(e.wbuf[:len(w)]) == w
	}
	return e.wlong == w
}

func (e *cacheEntry) ids() []int32 {
	if e.ilong != nil {
		return e.ilong
	}
	return e.ibuf[:e.nids]
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

// get returns the cached ids of w; the slice must not be modified.
func (c *wordCache) get(w string) ([]int32, bool) {
	if e := c.slot(w).Load(); e != nil && e.matches(w) {
		return e.ids(), true
	}
	return nil, false
}

// put caches a copy of w and ids.
func (c *wordCache) put(w string, ids []int32) {
	e := &cacheEntry{wlen: int32(len(w)), nids: int32(len(ids))}
	if len(w) <= len(e.wbuf) {
		copy(e.wbuf[:], w)
	} else {
		e.wlong = string([]byte(w))
	}
	if len(ids) <= len(e.ibuf) {
		copy(e.ibuf[:], ids)
	} else {
		e.ilong = append([]int32(nil), ids...)
	}
	c.slot(w).Store(e)
}
