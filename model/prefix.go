package model

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"sync"
)

// PrefixCache keeps sessions that have consumed a given token prefix (a
// program's source, a prompt header) and hands out forks of them, so the
// prefix is computed once however many debugging steps or users start from
// it. Concurrent requests for the same prefix wait for one computation.
// Entries are evicted least recently used beyond a fixed count. Safe for
// concurrent use.
type PrefixCache struct {
	m   *Model
	max int

	mu      sync.Mutex
	entries map[string]*list.Element // key → element holding *prefixEntry
	lru     *list.List               // front: most recently used
}

type prefixEntry struct {
	key   string
	ready chan struct{} // closed once s or err is set
	s     *Session      // never used directly: only forked
	err   error
}

// NewPrefixCache returns a cache of at most maxEntries prefixes (≥ 1).
func NewPrefixCache(m *Model, maxEntries int) *PrefixCache {
	return &PrefixCache{m: m, max: max(1, maxEntries), entries: map[string]*list.Element{}, lru: list.New()}
}

func prefixKey(tokens []int) string {
	b := make([]byte, 0, 4*len(tokens))
	for _, t := range tokens {
		b = binary.LittleEndian.AppendUint32(b, uint32(t))
	}
	return string(b)
}

// Fork returns a new session that has consumed prefix (Last() holds the
// logits after it), computing the prefix only if no cached session has it.
// A failed computation is not cached.
func (c *PrefixCache) Fork(ctx context.Context, prefix []int) (*Session, error) {
	if len(prefix) == 0 {
		return nil, errors.New("model: prefix cache: empty prefix")
	}
	key := prefixKey(prefix)
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*prefixEntry)
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			return nil, e.err
		}
		return e.s.Fork(), nil
	}
	e := &prefixEntry{key: key, ready: make(chan struct{})}
	c.entries[key] = c.lru.PushFront(e)
	c.mu.Unlock()

	s := c.m.NewSession()
	_, err := s.Forward(ctx, prefix, false)
	if err != nil {
		e.err = err
		c.mu.Lock()
		if el, ok := c.entries[key]; ok && el.Value == e {
			c.lru.Remove(el)
			delete(c.entries, key)
		}
		c.mu.Unlock()
		close(e.ready)
		return nil, err
	}
	e.s = s
	f := s.Fork() // freezes the shared blocks before anyone else forks
	close(e.ready)
	c.mu.Lock()
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*prefixEntry).key)
	}
	c.mu.Unlock()
	return f, nil
}

// Len returns the number of cached prefixes.
func (c *PrefixCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
