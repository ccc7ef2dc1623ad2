package tokenizer

import "sync"

// wordCacheLimit bounds the pre-token cache; it is cleared when full.
const wordCacheLimit = 1 << 17

// wordCache remembers the BPE result of pre-tokens: source code and
// traces repeat identifiers and indentation constantly.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func newWordCache() *wordCache {
	return &wordCache{m: make(map[string][]int32)}
}

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	c.mu.Lock()
	if len(c.m) >= wordCacheLimit {
		clear(c.m)
	}
	c.m[w] = ids
	c.mu.Unlock()
}
