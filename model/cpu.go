package model

import (
	"fmt"
	"math"
	"sync"

	"github.com/ndbg/ndbg/internal/freelist"
	"github.com/ndbg/ndbg/kernels"
)

// CPU is the Device on this machine's cores, built on package kernels:
// weights are used in place (aliasing the checkpoint's mapping where
// possible), and each sequence's KV cache is a Cache, whose forks share
// blocks copy-on-write.
type CPU struct {
	k    kernels.Impl
	pool *kernels.Pool
	// scratch holds *[]float32 buffers of attention (scores, decode
	// chunks' partial outputs) between calls: a batched step of 8
	// sessions otherwise allocates and zeroes them a hundred times.
	scratch sync.Pool
}

// NewCPU returns a CPU device running on threads threads (≤ 0: one per
// core) with the fastest kernels the CPU supports that keep activations in
// float32 (kernels.Native).
func NewCPU(threads int) *CPU {
	return &CPU{k: kernels.Native(), pool: kernels.NewPool(threads)}
}

// NewCPUFast is NewCPU with kernels.Fast: on CPUs with AVX-512 BF16, matrix
// products with BF16 weights round the activations to BF16 as well (about
// twice the prefill FLOP rate, NMSE ≤ 1e-5 per product instead of 1e-7).
func NewCPUFast(threads int) *CPU {
	return &CPU{k: kernels.Fast(), pool: kernels.NewPool(threads)}
}

// NewCPUWith returns a CPU device using the given kernels implementation
// (for example kernels.Generic(), to compare against the reference code).
func NewCPUWith(k kernels.Impl, threads int) *CPU {
	return &CPU{k: k, pool: kernels.NewPool(threads)}
}

// Name returns "cpu/" and the kernels' instruction set.
func (c *CPU) Name() string { return "cpu/" + c.k.Name() }

// Threads returns the number of threads the device computes on.
func (c *CPU) Threads() int { return c.pool.Threads() }

// Load implements Device: the weights stay where they are.
func (c *CPU) Load(cfg Config, w *Weights) (Resident, error) {
	r := &cpuResident{c: c, cfg: cfg, w: w, pool: newBlockPool(poolBytes)}
	r.acts.sets.Max = actPoolBytes
	return r, nil
}

// Close stops the worker threads.
func (c *CPU) Close() error {
	c.pool.Close()
	return nil
}

type cpuResident struct {
	c    *CPU
	cfg  Config
	w    *Weights
	pool *blockPool // the KV-cache blocks its sequences have given back
	acts actPool    // the activations of batches done and sequences closed
}

func (r *cpuResident) NewSeq() Seq {
	return &cpuSeq{cpuRows: cpuRows{r: r}, cache: newCache(r.cfg.NumHiddenLayers, r.cfg.KVDim(), r.cfg.HeadDim, r.kvDType(), r.pool)}
}

// kvDType is the element type of the model's KV caches (KVCacheDType of
// its attention projections' type).
func (r *cpuResident) kvDType() kernels.DType {
	if len(r.w.Layers) == 0 {
		return kernels.F32
	}
	return KVCacheDType(r.w.Layers[0].QKV.DType)
}

// KVCacheDType is the element type of the KV cache of a model whose
// attention projections are of type qkv: F32 for F32 projections (and F16
// ones, widened to F32 at load), whose products keep every bit; BF16 for
// BF16 and quantized ones, whose keys and values already carry a rounding
// of that size (llama.cpp keeps an F16 cache by default for the same
// reason). Half the bytes: decode's attention reads the whole cache for
// every token, as much as the weights of a small model at a few hundred
// positions.
func KVCacheDType(qkv kernels.DType) kernels.DType {
	if qkv == kernels.BF16 || qkv.Quantized() {
		return kernels.BF16
	}
	return kernels.F32
}

func (r *cpuResident) Close() error { return nil }

// NewBatch implements BatchResident.
func (r *cpuResident) NewBatch(seqs []Seq) Batch {
	b := &cpuBatch{cpuRows: cpuRows{r: r}, seqs: make([]*cpuSeq, len(seqs))}
	for i, q := range seqs {
		cs, ok := q.(*cpuSeq)
		if !ok || cs.r != r {
			b.err = fmt.Errorf("model: batch row %d: a sequence of another model or device", i)
			return b
		}
		b.seqs[i] = cs
	}
	b.size(len(seqs))
	return b
}

// rope splits one row of the fused q, k, v projection at position p: the
// queries, rotated, into q; the key, rotated (in place in qkv), and the
// value into kv's row p of layer.
func (r *cpuResident) rope(q, qkv []float32, kv *Cache, layer, p int) {
	c := &r.cfg
	Q, KV := c.QDim(), c.KVDim()
	r.w.Rope.Rotate(q, qkv[:Q], c.NumAttentionHeads, p)
	k, v := qkv[Q:Q+KV], qkv[Q+KV:Q+2*KV]
	r.w.Rope.Rotate(k, k, c.NumKeyValueHeads, p)
	kv.setRow(layer, 0, p, k)
	kv.setRow(layer, 1, p, v)
}

// attentionSpec returns the attention call of n rows of layer from pos0.
func (r *cpuResident) attentionSpec(layer, pos0, n int) AttentionSpec {
	c := &r.cfg
	return AttentionSpec{Layer: layer, N: n, Pos0: pos0,
		Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim, Window: c.Window(layer)}
}

// cpuRows are the host activations of a CPU pass (a sequence's or a
// batch's), grown to the most rows seen, and the ops that work row by row
// on them alone.
type cpuRows struct {
	r    *cpuResident
	rows int // activation capacity in rows
	act  [NumActs][]float32
	err  error
}

// size makes room for n rows of every activation: those of a pass done
// (the resident's acts) when it has as many, else new ones, its own going
// to the pool for a smaller pass.
func (s *cpuRows) size(n int) {
	if n <= s.rows {
		return
	}
	s.release()
	if act, rows := s.r.acts.take(n); rows > 0 {
		s.act, s.rows = act, rows
		return
	}
	s.rows = n
	for a := range s.act {
		s.act[a] = make([]float32, n*Act(a).Width(&s.r.cfg))
	}
}

// release gives s's activations to the resident's pool (acts) for the
// next pass and leaves s without any.
func (s *cpuRows) release() {
	if s.rows > 0 {
		s.r.acts.put(s.act, s.rows)
	}
	s.act, s.rows = [NumActs][]float32{}, 0
}

// actPool keeps the activations of a resident's passes done (batches,
// cpuBatch.release) and sequences closed (cpuSeq.Close), up to
// actPoolBytes of them, for the next pass that needs more rows than it
// has (cpuRows.size): a step of 8 sessions of 134m allocated and zeroed
// 1.5 MB, and a new session's 128-token prefill of 34m touched about 6 MB
// for the first time, half of its time (freelist). Safe for concurrent
// use.
type actPool struct{ sets freelist.List[actSet] }

// actSet is a set of activations of rows rows (cpuRows.act).
type actSet struct {
	act  [NumActs][]float32
	rows int
}

// actPoolBytes is the most an actPool keeps (the 1.8b preset's 256-row
// prefill takes about 25 MB).
const actPoolBytes = 64 << 20

// take returns a set of at least n rows, the most recently put, and its
// rows; rows 0 when there is none.
func (p *actPool) take(n int) (act [NumActs][]float32, rows int) {
	set, _ := p.sets.Take(func(s actSet) bool { return s.rows >= n })
	return set.act, set.rows
}

// put keeps act (rows rows of activations) unless the pool is full.
func (p *actPool) put(act [NumActs][]float32, rows int) {
	var b int64
	for _, a := range act {
		b += int64(len(a)) * 4
	}
	p.sets.Put(actSet{act, rows}, b)
}

// rowsOf returns the first n rows of activation a.
func (s *cpuRows) rowsOf(a Act, n int) []float32 { return s.act[a][:n*a.Width(&s.r.cfg)] }

func (s *cpuRows) Embed(tokens []int) {
	x, h := s.act[ActX], s.r.cfg.HiddenSize
	for i, t := range tokens {
		s.r.w.Embed.Row(x[i*h:(i+1)*h], t)
	}
}

func (s *cpuRows) layerMat(l int, p Param) *kernels.Mat {
	lw := &s.r.w.Layers[l]
	switch p {
	case QKV:
		return lw.QKV
	case O:
		return lw.O
	case GateUp:
		return lw.GateUp
	}
	return lw.Down
}

func (s *cpuRows) RMSNorm(dst, src Act, n, layer int, p Param) {
	w := s.r.w.Layers[layer].AttnNorm
	if p == FFNNorm {
		w = s.r.w.Layers[layer].FFNNorm
	}
	s.rmsNorm(s.act[dst], s.act[src], n, w)
}

func (s *cpuRows) rmsNorm(dst, x []float32, n int, w []float32) {
	d, eps := len(w), float32(s.r.cfg.RMSNormEps)
	s.forRows(n, d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s.r.c.k.RMSNorm(dst[i*d:(i+1)*d], x[i*d:(i+1)*d], w, eps)
		}
	})
}

func (s *cpuRows) MatMul(dst, src Act, n, layer int, p Param) {
	if s.err != nil {
		return
	}
	s.err = s.r.c.k.MatMul(s.r.c.pool, s.act[dst], s.act[src], n, s.layerMat(layer, p))
}

func (s *cpuRows) Add(dst, src Act, n int) {
	d, x, h := s.rowsOf(dst, n), s.rowsOf(src, n), dst.Width(&s.r.cfg)
	s.forRows(n, h, func(lo, hi int) {
		kernels.Add(d[lo*h:hi*h], d[lo*h:hi*h], x[lo*h:hi*h])
	})
}

// SwiGLU runs the rows of a prompt in parallel (an exp per element: 112 µs
// a layer on one Zen 3 core for 128 rows of 34m, longer than the pool's
// workers spin between the two products around it); a decode row stays on
// the caller.
func (s *cpuRows) SwiGLU(n int) {
	ffn := s.r.cfg.IntermediateSize
	gu, dst := s.act[ActGU], s.act[ActFFN]
	s.forRows(n, ffn, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := gu[i*2*ffn : (i+1)*2*ffn]
			s.r.c.k.SwiGLU(dst[i*ffn:(i+1)*ffn], row[:ffn], row[ffn:])
		}
	})
}

// forRows calls fn over disjoint row ranges covering [0, n), rows being
// width elements long: on the caller alone when n·width is below
// rowParallelElems (decode), else split over the pool in chunks of about
// that many elements. A prompt's row-wise ops (norms, RoPE, residual adds,
// SwiGLU) thus run on every thread, and between the matrix products the
// pool's workers find the next job while they still spin, rather than
// blocking during a serial stretch and being woken (on a VM, or with
// another process on their core, a wake-up costs tens of microseconds or
// more).
func (s *cpuRows) forRows(n, width int, fn func(lo, hi int)) {
	if n*width < rowParallelElems {
		fn(0, n)
		return
	}
	s.r.c.pool.For(n, max(1, rowParallelElems/width), fn)
}

// rowParallelElems is the size (rows × width) of a row-wise op from which
// forRows splits it over the pool, in chunks of about this many elements.
const rowParallelElems = 1 << 14

func (s *cpuRows) Logits(dst []float32, n, rows int) {
	if s.err != nil {
		return
	}
	h := s.r.cfg.HiddenSize
	xb := s.act[ActXB]
	s.rmsNorm(xb, s.act[ActX][(n-rows)*h:], rows, s.r.w.Norm)
	s.err = s.r.c.k.MatMul(s.r.c.pool, dst, xb, rows, s.r.w.Head)
}

func (s *cpuRows) Err() error { return s.err }

// cpuSeq is a sequence on the CPU: a block KV cache and host activations.
type cpuSeq struct {
	cpuRows
	cache *Cache
}

func (s *cpuSeq) Len() int { return s.cache.Len() }

func (s *cpuSeq) Reserve(n int) {
	s.size(n)
	s.cache.grow(n)
}

func (s *cpuSeq) RoPE(layer, pos0, n int) {
	c := &s.r.cfg
	Q, W := c.QDim(), c.QDim()+2*c.KVDim()
	qkv, q := s.act[ActQKV], s.act[ActQ]
	s.forRows(n, W, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s.r.rope(q[i*Q:(i+1)*Q], qkv[i*W:(i+1)*W], s.cache, layer, pos0+i)
		}
	})
}

func (s *cpuSeq) Attention(layer, pos0, n int) {
	s.cache.keysToColumns(layer, pos0, pos0+n)
	s.r.c.attention(s.act[ActAtt], s.act[ActQ], s.r.attentionSpec(layer, pos0, n),
		func(t int) (*Cache, int) { return s.cache, pos0 + t })
}

func (s *cpuSeq) Truncate(n int) error {
	if err := s.cache.Truncate(n); err != nil {
		return err
	}
	s.err = nil
	return nil
}

func (s *cpuSeq) Fork() Seq { return &cpuSeq{cpuRows: cpuRows{r: s.r}, cache: s.cache.Fork()} }

// Close gives the sequence's KV-cache blocks and activations back to the
// model (blockPool, acts).
func (s *cpuSeq) Close() error {
	s.cache.release()
	s.cpuRows.release()
	return nil
}

// cpuBatch is a Batch on the CPU: row i is the last reserved position of
// seqs[i], whose KV cache RoPE writes and Attention reads.
type cpuBatch struct {
	cpuRows
	seqs []*cpuSeq
}

// release gives the batch's activations back to its Resident for the next
// batch (DecodeBatch calls it when the step is done); the batch must not
// be used afterwards.
func (b *cpuBatch) release() {
	b.cpuRows.release()
}

func (b *cpuBatch) RoPE(layer, _, n int) {
	c := &b.r.cfg
	Q, W := c.QDim(), c.QDim()+2*c.KVDim()
	qkv, q := b.act[ActQKV], b.act[ActQ]
	for i, s := range b.seqs[:n] {
		b.r.rope(q[i*Q:(i+1)*Q], qkv[i*W:(i+1)*W], s.cache, layer, s.Len()-1)
	}
}

// Attention runs a batch of at least a row per thread through
// decodeAttention (a task per row, reading each block's keys and values for
// every head in turn), fewer rows through attention, which splits them over
// KV heads. Both compute the same sums in the same order. On 8 BF16
// sessions at 1000 positions (the default model's shape, three alternating
// rounds, load 4-6), a decode step's fastest time on one thread was 5.6-6.9
// ms against 8.7-9.8 (CPU time 7.0-9.0 against 11-14 ms); on two threads
// within the noise (4.9-6.9 against 3.5-6.3 ms).
func (b *cpuBatch) Attention(layer, _, n int) {
	a := b.r.attentionSpec(layer, 0, n)
	for _, s := range b.seqs[:n] {
		s.cache.keysToColumns(layer, s.Len()-1, s.Len())
	}
	row := func(t int) (*Cache, int) { s := b.seqs[t]; return s.cache, s.Len() - 1 }
	if n >= b.r.c.pool.Threads() {
		b.r.c.decodeAttention(b.act[ActAtt], b.act[ActQ], a, row)
		return
	}
	b.r.c.attention(b.act[ActAtt], b.act[ActQ], a, row)
}

// AttentionSpec describes one attention call.
type AttentionSpec struct {
	Layer, N, Pos0 int
	Heads, KVHeads int
	HeadDim        int
	Window         int // 0: full causal; W: keys at positions > p-W only
}

// attention computes causal (optionally sliding-window) attention for the
// a.N query rows of q: row t is at position pos and reads layer a.Layer of
// the cache kv, as row(t) gives them (a sequence's rows are consecutive
// positions of one cache, a Batch's rows each the last of its own), and
// that cache already holds the row's key and value. q and dst are a.N ×
// Heads × HeadDim; query head h reads KV head h / (Heads/KVHeads); a.Pos0
// is not used.
//
// One query row (decode) of at least decodeAttentionBlocks blocks goes to
// decodeAttention, which splits the row's positions into chunks instead
// (every head per key row read) and merges the chunks' softmaxes. For more
// rows, or a shorter one, work is split over (query, KV head) pairs, the last queries (the most keys, causal) handed out first so that
// no thread is left with a long chunk at the end; each pair walks its
// visible keys block by block for the query heads that share that KV head
// (GQA): scores of a block's keys in one call per head (Cache.dotKeys:
// AxpyRows over a full block's transposed keys, DotRows over the rows of
// one still filling), a numerically stable softmax per head, and the
// weighted sum of values in one AxpyRows call per block and head
// (Cache.axpyValues; the BF16 kernels on a BF16 cache).
func (c *CPU) attention(dst, q []float32, a AttentionSpec, row func(t int) (kv *Cache, pos int)) {
	if a.N <= decodeAttentionRows { // decode: split over positions, not heads
		_, pos := row(0)
		first := 0
		if a.Window > 0 {
			first = max(0, pos-a.Window+1)
		}
		if pos/blockLen-first/blockLen+1 >= decodeAttentionBlocks {
			c.decodeAttention(dst, q, a, row)
			return
		}
	}
	hd := a.HeadDim
	group := a.Heads / a.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	total := a.N * a.KVHeads
	grain := max(1, total/(4*c.pool.Threads()))
	width, keys := 0, 0 // the longest span of keys, and the keys of all rows
	for t := range a.N {
		_, pos := row(t)
		width = max(width, pos+1)
		keys += pos + 1
	}
	if work := a.Heads * keys * hd; work < 1<<14 {
		grain = total // too little to pay for waking another thread
	}
	c.pool.For(total, grain, func(lo, hi int) {
		scoresBuf := c.floats(group * width)
		defer c.scratch.Put(scoresBuf)
		scores := (*scoresBuf)[:group*width]
		for i := total - hi; i < total-lo; i++ {
			t, g := i/a.KVHeads, i%a.KVHeads
			kv, pos := row(t)
			first := 0
			if a.Window > 0 {
				first = max(0, pos-a.Window+1)
			}
			span := pos + 1 - first
			qrow := q[t*a.Heads*hd:]
			if a.N <= decodeAttentionRows {
				// Decode: this head's values, wanted after its keys, and
				// the next head's keys are cold (see prefetchHead).
				kv.prefetchHead(a.Layer, 1, g, first, pos+1)
				if g+1 < a.KVHeads {
					kv.prefetchHead(a.Layer, 0, g+1, first, pos+1)
				}
			}
			for p := first; p <= pos; {
				end := min(pos+1, (p/blockLen+1)*blockLen)
				for k := 0; k < group; k++ {
					h := g*group + k
					sc := scores[k*width+p-first : k*width+end-first]
					kv.dotKeys(c.k, sc, qrow[h*hd:(h+1)*hd], a.Layer, g, p)
				}
				p = end
			}
			for k := 0; k < group; k++ {
				row := scores[k*width : k*width+span]
				c.k.Scale(row, scale)
				c.k.Softmax(row)
				h := g*group + k
				clear(dst[(t*a.Heads+h)*hd : (t*a.Heads+h+1)*hd])
			}
			for p := first; p <= pos; {
				end := min(pos+1, (p/blockLen+1)*blockLen)
				for k := 0; k < group; k++ {
					h := g*group + k
					kv.axpyValues(c.k, dst[(t*a.Heads+h)*hd:(t*a.Heads+h+1)*hd], scores[k*width+p-first:k*width+end-first], a.Layer, g, p)
				}
				p = end
			}
		}
	})
}

// decodeAttentionRows is the most query rows of one sequence that
// attention hands to decodeAttention: a single session's decode step.
// (A Batch of sessions, one row each, calls decodeAttention itself when it
// has a row per thread.)
const decodeAttentionRows = 1

// minChunkBlocks is the fewest blocks of a decodeAttention chunk (it makes
// a chunk per thread and row, of at least this many blocks): every chunk
// costs a softmax per head and a merge, and below 8 blocks (256 positions)
// two chunks measured slower than one.
const minChunkBlocks = 8

// decodeAttentionBlocks is the fewest cache blocks of a decode row that
// decodeAttention takes: below, its chunks of at least minChunkBlocks
// leave it one chunk, one thread, while the split over KV heads gives
// every thread work (34m at 128 positions, 2 threads: 74 against 120 µs
// for F32 keys and values, 72 against 104 for BF16; one thread within
// noise; BenchmarkAttentionDecode under chrt, three alternating rounds).
const decodeAttentionBlocks = 2 * minChunkBlocks

// floats returns a buffer of at least n floats (its whole capacity, the
// contents stale) from c.scratch, for the caller to Put back.
func (c *CPU) floats(n int) *[]float32 { return pooledFloats(&c.scratch, n) }

// pooledFloats returns a *[]float32 from p (which holds only those) of at
// least n floats, its whole capacity and the contents stale, for the
// caller to Put back.
func pooledFloats(p *sync.Pool, n int) *[]float32 {
	b, _ := p.Get().(*[]float32)
	if b == nil {
		b = new([]float32)
	}
	if cap(*b) < n {
		*b = make([]float32, n)
	}
	*b = (*b)[:cap(*b)]
	return b
}

// decodeAttention is attention for decode rows: one session's, or one per
// session of a Batch. It splits the work over (row, chunk of positions)
// pairs rather than over heads: a chunk is a run of whole cache blocks
// (one per thread and row, or one per row when there is a row per
// thread), and its task reads each block's keys, then its values, for
// every head while the block is in cache, instead of every head task
// walking the whole cache.
//
// Rows of a Batch whose caches share their first blocks (forks of one
// prompt: the same frozen blocks) read those blocks in one task for all of
// them (sharedGroups): each block's keys and values are read, and widened,
// once for every query, the scores and the weighted values small matrix
// products (kernels' AxpyRowsMany) instead of one matrix-vector product per
// row; the rest of each row, its own blocks, is a chunk of its own.
//
// Each task computes, for every query head, the scores of its chunk's
// visible keys, their softmax within the chunk and the chunk's softmax-
// weighted sum of values, and keeps the chunk's score maximum m and
// exponent sum l; a row's chunks are then merged (split-K "flash
// decoding"): chunk c's output is weighted by l_c·exp(m_c − M) over the sum
// of those weights, M the row's largest score.
func (c *CPU) decodeAttention(dst, q []float32, a AttentionSpec, row func(t int) (kv *Cache, pos int)) {
	hd := a.HeadDim
	group := a.Heads / a.KVHeads
	qDim := a.Heads * hd
	scale := float32(1 / math.Sqrt(float64(hd)))
	// Each row's visible positions [first, pos], its blocks, and its tasks:
	// task i of all rows belongs to the row t with taskStart[t] ≤ i <
	// taskStart[t+1]. A row in a shared group has two: the group's (its
	// first) and its own blocks' (own[t] on).
	type span struct{ first, pos, blocks int }
	spans := make([]span, a.N)
	taskStart := make([]int, a.N+1)
	keys := 0
	for t := range a.N {
		_, pos := row(t)
		first := 0
		if a.Window > 0 {
			first = max(0, pos-a.Window+1)
		}
		spans[t] = span{first, pos, pos/blockLen - first/blockLen + 1}
		keys += pos + 1 - first
	}
	chunks := c.pool.Threads()
	if a.Heads*keys*hd < 1<<16 || a.N >= chunks {
		// Too little to pay for waking another thread, or a row per
		// thread already (a Batch): one chunk per row, no merge.
		chunks = 1
	}
	var groups []sharedGroup
	own := make([]int, a.N) // the first block of each row's own chunks
	if chunks == 1 && a.Window == 0 {
		groups = sharedGroups(a.N, a.Layer, row)
		for _, g := range groups {
			for _, t := range g.rows {
				own[t] = g.blocks
			}
		}
	}
	for t, sp := range spans {
		n := max(1, min(chunks, sp.blocks/minChunkBlocks))
		if own[t] > 0 {
			n = 2
		}
		taskStart[t+1] = taskStart[t] + n
	}
	tasks := taskStart[a.N]
	// Per task: the chunk's output for every head (qDim), then each head's
	// score maximum and exponent sum.
	part := qDim + 2*a.Heads
	partialBuf := c.floats(tasks * part)
	defer c.scratch.Put(partialBuf)
	partial := (*partialBuf)[:tasks*part]
	clear(partial) // the chunks' outputs are sums
	// Jobs: the shared groups first, then the rows' tasks but those
	// (each grouped row's first) that a group computes.
	type rowTask struct{ t, i int }
	var rowTasks []rowTask
	for t := range a.N {
		first := taskStart[t]
		if own[t] > 0 {
			first++ // the group's
		}
		for i := first; i < taskStart[t+1]; i++ {
			rowTasks = append(rowTasks, rowTask{t, i})
		}
	}
	c.pool.For(len(groups)+len(rowTasks), 1, func(lo, hi int) {
		scoresBuf := c.floats(0)
		defer c.scratch.Put(scoresBuf)
		scores := *scoresBuf
		for job := lo; job < hi; job++ {
			if job < len(groups) {
				c.sharedAttention(partial, part, taskStart, q, a, groups[job], row)
				continue
			}
			t, i := rowTasks[job-len(groups)].t, rowTasks[job-len(groups)].i
			kv, _ := row(t)
			sp := spans[t]
			// The task's blocks [b0, b1) of the row's, split evenly; a
			// grouped row's own task the blocks after the group's.
			b0f := sp.first / blockLen
			nt, j := taskStart[t+1]-taskStart[t], i-taskStart[t]
			b0, b1 := b0f+j*sp.blocks/nt, b0f+(j+1)*sp.blocks/nt
			if own[t] > 0 {
				b0, b1 = own[t], sp.pos/blockLen+1
			}
			p0, p1 := max(sp.first, b0*blockLen), min(sp.pos+1, b1*blockLen)
			n := p1 - p0
			if len(scores) < a.Heads*n {
				scores = make([]float32, a.Heads*n)
				*scoresBuf = scores
			}
			out := partial[i*part : i*part+qDim]
			ml := partial[i*part+qDim : (i+1)*part]
			qrow := q[t*qDim : (t+1)*qDim]
			kv.prefetchHead(a.Layer, 0, 0, p0, min(p1, (p0/blockLen+1)*blockLen))
			for p := p0; p < p1; {
				end := min(p1, (p/blockLen+1)*blockLen)
				for h := range a.Heads {
					if h%group == 0 {
						kv.prefetchAhead(a.Layer, 0, h/group, p, p0, p1)
					}
					kv.dotKeys(c.k, scores[h*n+p-p0:h*n+end-p0], qrow[h*hd:(h+1)*hd], a.Layer, h/group, p)
				}
				p = end
			}
			c.k.Scale(scores[:a.Heads*n], scale)
			for h := range a.Heads {
				c.chunkSoftmax(scores[h*n:(h+1)*n], ml[2*h:2*h+2], nt > 1)
			}
			for p := p0; p < p1; {
				end := min(p1, (p/blockLen+1)*blockLen)
				for h := range a.Heads {
					if h%group == 0 {
						kv.prefetchAhead(a.Layer, 1, h/group, p, p0, p1)
					}
					kv.axpyValues(c.k, out[h*hd:(h+1)*hd], scores[h*n+p-p0:h*n+end-p0], a.Layer, h/group, p)
				}
				p = end
			}
		}
	})
	for t := range a.N {
		tasks := partial[taskStart[t]*part : taskStart[t+1]*part]
		rowDst := dst[t*qDim : (t+1)*qDim]
		if len(tasks) == part {
			copy(rowDst, tasks[:qDim])
			continue
		}
		for h := range a.Heads {
			d := rowDst[h*hd : (h+1)*hd]
			top := float32(math.Inf(-1))
			for o := 0; o < len(tasks); o += part {
				top = max(top, tasks[o+qDim+2*h])
			}
			var sum float64
			for o := 0; o < len(tasks); o += part {
				ml := tasks[o+qDim+2*h:]
				w := float64(ml[1]) * math.Exp(float64(ml[0]-top))
				ml[1] = float32(w)
				sum += w
			}
			clear(d)
			for o := 0; o < len(tasks); o += part {
				w := tasks[o+qDim+2*h+1]
				c.k.Axpy(d, float32(float64(w)/sum), tasks[o+h*hd:o+(h+1)*hd])
			}
		}
	}
}

// chunkSoftmax turns a chunk's scores of one query head (already scaled by
// 1/√headDim) into the chunk's softmax; when the row's chunks are merged
// it keeps the chunk's score maximum and exponent sum in ml (NaN where any
// score is NaN, which the merge then spreads).
func (c *CPU) chunkSoftmax(sc, ml []float32, merged bool) {
	if !merged {
		c.k.Softmax(sc)
		return
	}
	m, sum := c.k.SoftmaxParts(sc)
	ml[0], ml[1] = m, float32(sum)
}

// sharedGroup is a set of a Batch's rows whose caches share their first
// blocks (the same frozen blocks), each of them before every row's last.
type sharedGroup struct {
	rows   []int
	blocks int
}

// sharedGroups returns the groups of at least two of the n rows that share
// at least their first block: rows with the same first block, and the
// number of leading blocks all of them share and see whole (every one
// before each row's last, which RoPE has just made private) with layer
// l's keys transposed (all such blocks, as keysToColumns leaves them).
func sharedGroups(n, l int, row func(t int) (*Cache, int)) []sharedGroup {
	var groups []sharedGroup
	taken := make([]bool, n)
	for t := range n {
		kv, pos := row(t)
		if taken[t] || pos < blockLen || !kv.blocks[0].keysT[l] {
			continue
		}
		g := sharedGroup{rows: []int{t}, blocks: pos / blockLen}
		for u := t + 1; u < n; u++ {
			kv2, pos2 := row(u)
			if taken[u] || pos2 < blockLen || kv2.blocks[0] != kv.blocks[0] {
				continue
			}
			shared := 1
			for shared < min(g.blocks, pos2/blockLen) && kv2.blocks[shared] == kv.blocks[shared] && kv.blocks[shared].keysT[l] {
				shared++
			}
			g.rows, g.blocks = append(g.rows, u), shared
			taken[u] = true
		}
		if len(g.rows) > 1 {
			groups = append(groups, g)
		}
	}
	return groups
}

// sharedAttention computes, for every row of g, the first of its tasks in
// partial: attention over the g.blocks blocks its rows share, with every
// block's keys and values read once for all the rows' queries (kernels'
// AxpyRowsMany: scores = the queries times the block's transposed keys,
// outputs += the probabilities times its values, each operand read where
// it lies).
func (c *CPU) sharedAttention(partial []float32, part int, taskStart []int, q []float32, a AttentionSpec, g sharedGroup, row func(t int) (*Cache, int)) {
	hd, G := a.HeadDim, len(g.rows)
	qDim := a.Heads * hd
	scale := float32(1 / math.Sqrt(float64(hd)))
	n := g.blocks * blockLen // positions
	ldp := a.Heads * n       // a row's scores: heads × n
	group := a.Heads / a.KVHeads
	kv, _ := row(g.rows[0])
	// Scratch: the rows' queries scaled by 1/√hd (G × qDim), their scores
	// (G × heads × n) and their outputs (G × qDim).
	buf := c.floats(2*G*qDim + G*ldp)
	defer c.scratch.Put(buf)
	qs := (*buf)[:G*qDim]
	scores := (*buf)[G*qDim : G*qDim+G*ldp]
	out := (*buf)[G*qDim+G*ldp : 2*G*qDim+G*ldp]
	for i, t := range g.rows {
		copy(qs[i*qDim:(i+1)*qDim], q[t*qDim:(t+1)*qDim])
	}
	c.k.Scale(qs, scale)
	clear(scores)
	kv.prefetchHead(a.Layer, 0, 0, 0, blockLen)
	for b := range g.blocks {
		for h := range a.Heads {
			if h%group == 0 {
				kv.prefetchAhead(a.Layer, 0, h/group, b*blockLen, 0, n)
			}
			kv.dotKeysMany(c.k, scores[h*n+b*blockLen:], ldp, qs[h*hd:], qDim, G, a.Layer, h/group, b)
		}
	}
	for i, t := range g.rows {
		ml := partial[taskStart[t]*part+qDim : (taskStart[t]+1)*part]
		for h := range a.Heads {
			c.chunkSoftmax(scores[i*ldp+h*n:i*ldp+(h+1)*n], ml[2*h:2*h+2], true)
		}
	}
	clear(out)
	for b := range g.blocks {
		for h := range a.Heads {
			if h%group == 0 {
				kv.prefetchAhead(a.Layer, 1, h/group, b*blockLen, 0, n)
			}
			kv.axpyValuesMany(c.k, out[h*hd:], qDim, scores[h*n+b*blockLen:], ldp, G, a.Layer, h/group, b)
		}
	}
	for i, t := range g.rows {
		copy(partial[taskStart[t]*part:taskStart[t]*part+qDim], out[i*qDim:(i+1)*qDim])
	}
}
