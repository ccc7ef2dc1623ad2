package model

import (
	"fmt"
	"sync/atomic"

	"github.com/ndbg/ndbg/internal/freelist"
	"github.com/ndbg/ndbg/kernels"
)

// blockLen is the number of positions per KV-cache block. Blocks are the
// unit of sharing between forked caches and of copy-on-write.
const blockLen = 32

// kvBlock holds keys and values of blockLen consecutive positions for every
// layer, laid out layer × {K, V} × KV head × position × headDim (each
// head's rows of a block contiguous: attention walks one head at a time,
// and a pass over contiguous rows measured 12-20% faster for batched
// decode at 1000 positions than rows kvDim apart), in f32 or, in a BF16
// cache, bf16 (the other is nil).
//
// A block is either private (owned by one Cache, writable) or frozen
// (shared by several caches, never written again). Fork freezes; a write
// into a frozen block first copies it.
type kvBlock struct {
	f32  []float32
	bf16 []uint16
	// keysT[l] reports that layer l's keys are transposed (headRows):
	// only ever in a block that holds all blockLen positions for every
	// cache that holds it.
	keysT  []bool
	frozen atomic.Bool
}

// Cache is the CPU device's KV cache: for each layer and each position,
// the key and value rows (KVHeads × HeadDim, after RoPE for keys) of the
// tokens seen so far.
//
// A model with BF16 or quantized weights keeps its keys and values in BF16
// (each row rounded to nearest even as it is written; KVCacheDType), an
// F32 model in F32: decode
// attention streams the whole cache for every token, and for many sessions
// at long contexts that read, not the weights, bounds the step; BF16 halves
// it. This is what PyTorch does for a BF16 model (K and V in the model's
// dtype; llama.cpp keeps F16). Attention reads the BF16 rows in place
// (kernels' DotRowsBF16, AxpyRowsBF16 and AxpyRowsManyBF16, the keys of a
// full block transposed: headRows); queries, scores and outputs stay
// float32.
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
	headDim       int           // kvDim is KV heads × headDim
	dtype         kernels.DType // F32 or BF16
	blocks        []*kvBlock
	n             int // positions filled
	// pool, when not nil, is where private blocks go when Truncate drops
	// them or release frees them, and where new blocks come from (see
	// blockPool).
	pool *blockPool
	// scratch16 and scratch32 are transposeKeys' copies of a head's keys.
	scratch16 []uint16
	scratch32 []float32
}

// blockPool keeps the KV-cache blocks that the caches of one model have
// dropped (Truncate) or freed (Session.Close), up to a number of bytes,
// for the next block any of those caches needs: a fresh 134m block (1.2
// MB) costs 5.7 ms of page faults on the benchmark machines (freelist),
// more than a decode step. A decoder that rolls back after every frame and
// decodes the next (the neural debugger does), or a new session of the
// same model, then writes into memory it has touched before. Safe for
// concurrent use; a nil *blockPool keeps nothing.
type blockPool struct{ blocks freelist.List[*kvBlock] }

// poolBytes is the most a model's blockPool keeps.
const poolBytes = 256 << 20

// newBlockPool returns a pool that keeps up to maxBytes of blocks.
func newBlockPool(maxBytes int64) *blockPool {
	p := &blockPool{}
	p.blocks.Max = maxBytes
	return p
}

// get returns a kept block, or nil when there is none.
func (p *blockPool) get() *kvBlock {
	if p == nil {
		return nil
	}
	b, _ := p.blocks.Take(nil)
	return b
}

// put keeps b, a private block nothing else refers to, unless the pool is
// full.
func (p *blockPool) put(b *kvBlock) {
	if p == nil || b.frozen.Load() {
		return
	}
	p.blocks.Put(b, b.bytes())
}

func (b *kvBlock) bytes() int64 { return int64(len(b.f32))*4 + int64(len(b.bf16))*2 }

// newCache returns an empty cache of rows of kvDim elements (KV heads of
// headDim) of dtype dt (F32 or BF16) for layers layers.
func newCache(layers, kvDim, headDim int, dt kernels.DType, pool *blockPool) *Cache {
	return &Cache{layers: layers, kvDim: kvDim, headDim: headDim, dtype: dt, pool: pool}
}

// DType returns the element type of the cached rows (KVCacheDType).
func (c *Cache) DType() kernels.DType { return c.dtype }

// Len returns the number of cached positions.
func (c *Cache) Len() int { return c.n }

// Fork returns a cache holding the same positions that shares all of c's
// storage. Neither c nor the fork sees the other's later writes.
func (c *Cache) Fork() *Cache {
	for _, b := range c.blocks {
		b.frozen.Store(true)
	}
	return &Cache{layers: c.layers, kvDim: c.kvDim, headDim: c.headDim, dtype: c.dtype, blocks: append([]*kvBlock(nil), c.blocks...), n: c.n, pool: c.pool}
}

// release gives c's private blocks to its pool and empties c, which must
// not be used again.
func (c *Cache) release() {
	for i, b := range c.blocks {
		c.pool.put(b)
		c.blocks[i] = nil
	}
	c.blocks, c.n = nil, 0
}

// Truncate drops every position ≥ n, so the next token is written at n.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.n {
		return fmt.Errorf("model: truncate to %d, cache holds %d positions", n, c.n)
	}
	nb := (n + blockLen - 1) / blockLen
	for i := nb; i < len(c.blocks); i++ {
		c.pool.put(c.blocks[i])
		c.blocks[i] = nil
	}
	c.blocks = c.blocks[:nb]
	c.n = n
	if n%blockLen != 0 && !c.blocks[nb-1].frozen.Load() {
		c.keysToRows(nb - 1) // partly filled again (a frozen one: when grow copies it)
	}
	return nil
}

func (c *Cache) blockSize() int { return c.layers * 2 * blockLen * c.kvDim }

// newBlock returns a private block, a copy of from's data when from is
// not nil: one from c's pool when it has one (its rows are stale, but rows
// past c.n are never read: attention reads only positions written before
// the query's), else a new zeroed one.
func (c *Cache) newBlock(from *kvBlock) *kvBlock {
	b := c.pool.get()
	if b == nil || b.bytes() != int64(c.blockSize()*c.dtype.Size()) {
		b = &kvBlock{}
		if c.dtype == kernels.BF16 {
			b.bf16 = make([]uint16, c.blockSize())
		} else {
			b.f32 = make([]float32, c.blockSize())
		}
		b.keysT = make([]bool, c.layers)
	}
	clear(b.keysT)
	if from != nil {
		copy(b.f32, from.f32)
		copy(b.bf16, from.bf16)
		copy(b.keysT, from.keysT)
	}
	return b
}

// grow makes positions [c.n, c.n+k) writable and counts them as filled:
// frozen blocks in that range are copied, missing blocks allocated.
func (c *Cache) grow(k int) {
	end := c.n + k
	first := c.n / blockLen
	for b := first; b*blockLen < end; b++ {
		switch {
		case b == len(c.blocks):
			c.blocks = append(c.blocks, c.newBlock(nil))
		case c.blocks[b].frozen.Load():
			// A copy to write into: it holds fewer than blockLen of c's
			// positions, so its keys go back to rows.
			c.blocks[b] = c.newBlock(c.blocks[b])
			c.keysToRows(b)
		}
	}
	c.n = end
}

// headRows returns where the keys (kv = 0) or values (kv = 1) of KV head
// g of layer l start in a block, and where they end. Within a block, each
// layer's keys and values are laid out head by head, so that attention,
// which walks one head at a time, reads them contiguously: a head's values
// position by position (blockLen rows of headDim), and its keys likewise
// while the block fills, then, once it holds all blockLen positions
// (keysToColumns), transposed: element by element, headDim rows of
// blockLen (element e of the key at position p at e·blockLen +
// p%blockLen). Transposed, a query's scores against a block's keys are a
// sum of rows scaled by the query's elements (kernels' AxpyRows), all
// blockLen lanes at once, instead of a dot product per key reduced across
// its vector's lanes; and the queries of several sessions that share a
// block are a small matrix product (AxpyRowsMany). A block that is still
// filling keeps rows: a new key is one row written, where a transposed
// block takes a write into each of headDim cache lines (cold after a
// step's weights have gone through the cache), and attention reads only
// its filled rows.
func (c *Cache) headRows(l, kv, g int) (start, end int) {
	head := (l*2+kv)*blockLen*c.kvDim + g*blockLen*c.headDim
	return head, head + blockLen*c.headDim
}

// setRow writes the key (kv = 0) or value (kv = 1) row (all KV heads) of
// layer l at pos, rounding it to BF16 in a BF16 cache. pos must be
// writable (grown).
func (c *Cache) setRow(l, kv, pos int, row []float32) {
	b := c.blocks[pos/blockLen]
	hd, p := c.headDim, pos%blockLen
	if kv == 0 && b.keysT[l] {
		// Only a block that is filling is written (Truncate and grow turn
		// one back to rows); should a full one be, its keys go back to rows
		// first, which attention reads as rows until the block fills again.
		c.transposeKeys(b, l, false)
	}
	for g := range c.kvDim / hd {
		o, _ := c.headRows(l, kv, g)
		o += p * hd
		if b.bf16 != nil {
			kernels.F32ToBF16Slice(b.bf16[o:o+hd], row[g*hd:(g+1)*hd])
		} else {
			copy(b.f32[o:o+hd], row[g*hd:(g+1)*hd])
		}
	}
}

// readRow returns a float32 copy of the key (kv = 0) or value row of layer
// l at pos (BF16 rows widened exactly).
func (c *Cache) readRow(l, kv, pos int) []float32 {
	b := c.blocks[pos/blockLen]
	hd, p := c.headDim, pos%blockLen
	out := make([]float32, c.kvDim)
	for g := range c.kvDim / hd {
		o, _ := c.headRows(l, kv, g)
		dst := out[g*hd : (g+1)*hd]
		switch {
		case kv == 0 && b.keysT[l] && b.bf16 != nil:
			for e := range dst {
				dst[e] = kernels.BF16ToF32(b.bf16[o+e*blockLen+p])
			}
		case kv == 0 && b.keysT[l]:
			for e := range dst {
				dst[e] = b.f32[o+e*blockLen+p]
			}
		case b.bf16 != nil:
			kernels.BF16ToF32Slice(dst, b.bf16[o+p*hd:o+(p+1)*hd])
		default:
			copy(dst, b.f32[o+p*hd:o+(p+1)*hd])
		}
	}
	return out
}

// Key returns a float32 copy of the cached key row (all KV heads) of layer l
// at position pos.
func (c *Cache) Key(l, pos int) []float32 { return c.readRow(l, 0, pos) }

// Value returns a float32 copy of the cached value row of layer l at
// position pos.
func (c *Cache) Value(l, pos int) []float32 { return c.readRow(l, 1, pos) }

// dotKeys sets dst[j] = q · K[p+j] for the keys K of KV head g of layer l
// from position p on, all in p's block (the scores of one query head
// against a run of keys): a dot product per key row while the block
// fills; in a full block, whose keys are transposed (headRows), the scores
// of all its positions as Σ_e q[e] · (row e of the head's keys), and the
// ones asked for copied out.
func (c *Cache) dotKeys(k kernels.Impl, dst, q []float32, l, g, p int) {
	b := c.blocks[p/blockLen]
	o, end := c.headRows(l, 0, g)
	if !b.keysT[l] {
		o += p % blockLen * c.headDim
		if b.bf16 != nil {
			k.DotRowsBF16(dst, q, b.bf16[o:end], c.headDim)
			return
		}
		k.DotRows(dst, q, b.f32[o:end], c.headDim)
		return
	}
	var all [blockLen]float32
	scores := all[:]
	if len(dst) == blockLen {
		scores = dst
		clear(scores)
	}
	if b.bf16 != nil {
		k.AxpyRowsBF16(scores, q, b.bf16[o:end], blockLen)
	} else {
		k.AxpyRows(scores, q, b.f32[o:end], blockLen)
	}
	if len(dst) < blockLen {
		copy(dst, all[p%blockLen:])
	}
}

// keysToColumns transposes layer l's keys in every private block that
// position p0 to p1-1 filled (their last position among them): RoPE has
// written those positions of layer l, and attention is about to read them
// (cpuSeq.Attention, cpuBatch.Attention). A frozen block is shared, and
// is left as it is.
func (c *Cache) keysToColumns(l, p0, p1 int) {
	for last := p0/blockLen*blockLen + blockLen - 1; last < p1; last += blockLen {
		if b := c.blocks[last/blockLen]; !b.keysT[l] && !b.frozen.Load() {
			c.transposeKeys(b, l, true)
		}
	}
}

// keysToRows turns the transposed keys of block i (private) back into
// rows, every layer: the block is filling again (Truncate, grow).
func (c *Cache) keysToRows(i int) {
	b := c.blocks[i]
	for l, t := range b.keysT {
		if t {
			c.transposeKeys(b, l, false)
		}
	}
}

// transposeKeys turns layer l's keys in b from rows into columns (toT) or
// back, and records it.
func (c *Cache) transposeKeys(b *kvBlock, l int, toT bool) {
	hd := c.headDim
	rows, cols := blockLen, hd // the source's shape
	if !toT {
		rows, cols = hd, blockLen
	}
	for g := range c.kvDim / hd {
		o, end := c.headRows(l, 0, g)
		if b.bf16 != nil {
			c.scratch16 = transpose(b.bf16[o:end], rows, cols, c.scratch16)
		} else {
			c.scratch32 = transpose(b.f32[o:end], rows, cols, c.scratch32)
		}
	}
	b.keysT[l] = toT
}

// transpose transposes the rows × cols matrix m in place through a copy in
// scratch (grown when short, and returned for the next call).
func transpose[E uint16 | float32](m []E, rows, cols int, scratch []E) []E {
	if cap(scratch) < len(m) {
		scratch = make([]E, len(m))
	}
	src := scratch[:len(m)]
	copy(src, m)
	for r := range rows {
		col := m[r:]
		for c, v := range src[r*cols : (r+1)*cols] {
			col[c*rows] = v
		}
	}
	return scratch
}

// prefetchHead asks for the key (kv = 0) or value rows of KV head g of
// layer l at positions [p0, p1) to be brought into the cache
// (kernels.Prefetch): decode attention's rows are cold, pushed out by the
// weights read since the last token, and each head's rows of a block are
// a run of a few KiB that the hardware prefetchers do not follow into the
// next one. Only the rows asked for, but a block's transposed keys whole
// (each row of them holds every position).
func (c *Cache) prefetchHead(l, kv, g, p0, p1 int) {
	for p := p0; p < p1; {
		b := c.blocks[p/blockLen]
		end := min(p1, (p/blockLen+1)*blockLen)
		o, oEnd := c.headRows(l, kv, g)
		if kv == 1 || !b.keysT[l] {
			o, oEnd = o+p%blockLen*c.headDim, o+((end-1)%blockLen+1)*c.headDim
		}
		if b.bf16 != nil {
			kernels.Prefetch(b.bf16[o:oEnd])
		} else {
			kernels.Prefetch(b.f32[o:oEnd])
		}
		p = end
	}
}

// prefetchAhead is prefetchHead for the run a decode task reads after KV
// head g's rows (keys, kv = 0, or values) of p's block: a task over
// [p0, p1) reads each block's keys head by head, then each block's values
// the same way. Asking one head ahead (a few KiB) keeps the lines coming
// without pushing out those in use.
func (c *Cache) prefetchAhead(l, kv, g, p, p0, p1 int) {
	end := min(p1, (p/blockLen+1)*blockLen)
	switch {
	case g+1 < c.kvDim/c.headDim:
		c.prefetchHead(l, kv, g+1, p, end)
	case end < p1:
		c.prefetchHead(l, kv, 0, end, min(p1, (end/blockLen+1)*blockLen))
	case kv == 0:
		c.prefetchHead(l, 1, 0, p0, min(p1, (p0/blockLen+1)*blockLen))
	}
}

// axpyValues adds Σ_j a[j] · V[p+j] to dst for the rows of KV head g of
// layer l's values V from position p on, all in p's block (one head's
// softmax-weighted sum over a run of values).
func (c *Cache) axpyValues(k kernels.Impl, dst, a []float32, l, g, p int) {
	b := c.blocks[p/blockLen]
	o, end := c.headRows(l, 1, g)
	o += p % blockLen * c.headDim
	if b.bf16 != nil {
		k.AxpyRowsBF16(dst, a, b.bf16[o:end], c.headDim)
		return
	}
	k.AxpyRows(dst, a, b.f32[o:end], c.headDim)
}

// dotKeysMany is dotKeys for G queries, query i's head at q[i·ldq:]
// (HeadDim elements), against every position of block b's keys of KV head
// g of layer l: dst[i·ldd + j] += the score of query i at position j of
// the block (dst cleared by the caller), the keys read once for all G.
func (c *Cache) dotKeysMany(k kernels.Impl, dst []float32, ldd int, q []float32, ldq, G, l, g, b int) {
	blk := c.blocks[b]
	o, end := c.headRows(l, 0, g)
	q = q[:(G-1)*ldq+c.headDim] // the transposed keys' rows: HeadDim of them
	if blk.bf16 != nil {
		k.AxpyRowsManyBF16(dst, ldd, blockLen, q, ldq, G, blk.bf16[o:end], blockLen)
		return
	}
	k.AxpyRowsMany(dst, ldd, blockLen, q, ldq, G, blk.f32[o:end], blockLen)
}

// axpyValuesMany is axpyValues for G rows of weights, row i's at w[i·ldw:]
// (a weight for each position of the block), over every position of block
// b's values of KV head g of layer l: dst[i·ldd + e] += Σ_j w[i·ldw + j] ·
// V[j][e], the values read once for all G.
func (c *Cache) axpyValuesMany(k kernels.Impl, dst []float32, ldd int, w []float32, ldw, G, l, g, b int) {
	blk := c.blocks[b]
	o, end := c.headRows(l, 1, g)
	w = w[:(G-1)*ldw+blockLen]
	if blk.bf16 != nil {
		k.AxpyRowsManyBF16(dst, ldd, c.headDim, w, ldw, G, blk.bf16[o:end], c.headDim)
		return
	}
	k.AxpyRowsMany(dst, ldd, c.headDim, w, ldw, G, blk.f32[o:end], c.headDim)
}
