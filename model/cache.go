package model

import (
	"fmt"
	"sync/atomic"
)

// blockLen is the number of positions per KV-cache block. Blocks are the
// unit of sharing between forked caches and of copy-on-write.
const blockLen = 32

// kvBlock holds keys and values of blockLen consecutive positions for every
// layer, laid out layer × {K, V} × position × kvDim.
//
// A block is either private (owned by one Cache, writable) or frozen
// (shared by several caches, never written again). Fork freezes; a write
// into a frozen block first copies it.
type kvBlock struct {
	data   []float32
	frozen atomic.Bool
}

// Cache is the CPU device's KV cache: for each layer and each position,
// the key and value rows (KVHeads × HeadDim, after RoPE for keys) of the
// tokens seen so far.
//
// Caches fork cheaply: Fork returns a cache that shares every block with its
// parent, so a program's source is computed once and each debugging step or
// session continues from it privately; only the partly filled last block is
// copied, and only when either side writes to it. Truncate rolls a cache
// back to an earlier position. A Cache is not safe for concurrent use, but
// forks of one cache may be used concurrently with each other and with
// their parent.
type Cache struct {
	layers, kvDim int
	blocks        []*kvBlock
	n             int // positions filled
}

func newCache(layers, kvDim int) *Cache {
	return &Cache{layers: layers, kvDim: kvDim}
}

// Len returns the number of cached positions.
func (c *Cache) Len() int { return c.n }

// Fork returns a cache holding the same positions that shares all of c's
// storage. Neither c nor the fork sees the other's later writes.
func (c *Cache) Fork() *Cache {
	for _, b := range c.blocks {
		b.frozen.Store(true)
	}
	return &Cache{layers: c.layers, kvDim: c.kvDim, blocks: append([]*kvBlock(nil), c.blocks...), n: c.n}
}

// Truncate drops every position ≥ n, so the next token is written at n.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.n {
		return fmt.Errorf("model: truncate to %d, cache holds %d positions", n, c.n)
	}
	nb := (n + blockLen - 1) / blockLen
	for i := nb; i < len(c.blocks); i++ {
		c.blocks[i] = nil
	}
	c.blocks = c.blocks[:nb]
	c.n = n
	return nil
}

func (c *Cache) blockSize() int { return c.layers * 2 * blockLen * c.kvDim }

// grow makes positions [c.n, c.n+k) writable and counts them as filled:
// frozen blocks in that range are copied, missing blocks allocated.
func (c *Cache) grow(k int) {
	end := c.n + k
	first := c.n / blockLen
	for b := first; b*blockLen < end; b++ {
		switch {
		case b == len(c.blocks):
			c.blocks = append(c.blocks, &kvBlock{data: make([]float32, c.blockSize())})
		case c.blocks[b].frozen.Load():
			nb := &kvBlock{data: make([]float32, c.blockSize())}
			copy(nb.data, c.blocks[b].data)
			c.blocks[b] = nb
		}
	}
	c.n = end
}

// row returns the key (kv = 0) or value (kv = 1) row of layer l at pos.
func (c *Cache) row(l, kv, pos int) []float32 {
	b := c.blocks[pos/blockLen]
	off := ((l*2+kv)*blockLen + pos%blockLen) * c.kvDim
	return b.data[off : off+c.kvDim]
}

// Key returns the cached key row (all KV heads) of layer l at position pos.
// It must not be modified.
func (c *Cache) Key(l, pos int) []float32 { return c.row(l, 0, pos) }

// Value returns the cached value row of layer l at position pos. It must not
// be modified.
func (c *Cache) Value(l, pos int) []float32 { return c.row(l, 1, pos) }

// span returns, for layer l, the key (kv = 0) or value rows of the block
// holding pos, as one slice of blockLen × kvDim starting at the block's first
// position, so attention can walk a block without per-position lookups.
func (c *Cache) span(l, kv, pos int) []float32 {
	b := c.blocks[pos/blockLen]
	off := (l*2 + kv) * blockLen * c.kvDim
	return b.data[off : off+blockLen*c.kvDim]
}
