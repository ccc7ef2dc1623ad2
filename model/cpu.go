package model

import (
	"math"

	"github.com/ndbg/ndbg/kernels"
)

// CPU is the Device on this machine's cores, built on package kernels:
// weights are used in place (aliasing the checkpoint's mapping where
// possible), and each sequence's KV cache is a Cache, whose forks share
// blocks copy-on-write.
type CPU struct {
	k    kernels.Impl
	pool *kernels.Pool
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
	return &cpuResident{c: c, cfg: cfg, w: w}, nil
}

// Close stops the worker threads.
func (c *CPU) Close() error {
	c.pool.Close()
	return nil
}

type cpuResident struct {
	c   *CPU
	cfg Config
	w   *Weights
}

func (r *cpuResident) NewSeq() Seq {
	return &cpuSeq{r: r, cache: newCache(r.cfg.NumHiddenLayers, r.cfg.KVDim())}
}

func (r *cpuResident) Close() error { return nil }

// cpuSeq is a sequence on the CPU: a block KV cache and host activations,
// grown to the largest chunk seen.
type cpuSeq struct {
	r     *cpuResident
	cache *Cache
	rows  int // activation capacity in rows
	act   [NumActs][]float32
	err   error
}

func (s *cpuSeq) Len() int { return s.cache.Len() }

func (s *cpuSeq) Reserve(n int) {
	if n > s.rows {
		s.rows = n
		for a := range s.act {
			s.act[a] = make([]float32, n*Act(a).Width(&s.r.cfg))
		}
	}
	s.cache.grow(n)
}

// rowsOf returns the first n rows of activation a.
func (s *cpuSeq) rowsOf(a Act, n int) []float32 { return s.act[a][:n*a.Width(&s.r.cfg)] }

func (s *cpuSeq) Embed(tokens []int) {
	x, h := s.act[ActX], s.r.cfg.HiddenSize
	for i, t := range tokens {
		s.r.w.Embed.Row(x[i*h:(i+1)*h], t)
	}
}

func (s *cpuSeq) layerMat(l int, p Param) *kernels.Mat {
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

func (s *cpuSeq) RMSNorm(dst, src Act, n, layer int, p Param) {
	w := s.r.w.Layers[layer].AttnNorm
	if p == FFNNorm {
		w = s.r.w.Layers[layer].FFNNorm
	}
	s.rmsNorm(s.act[dst], s.act[src], n, w)
}

func (s *cpuSeq) rmsNorm(dst, x []float32, n int, w []float32) {
	d, eps := len(w), float32(s.r.cfg.RMSNormEps)
	for i := 0; i < n; i++ {
		s.r.c.k.RMSNorm(dst[i*d:(i+1)*d], x[i*d:(i+1)*d], w, eps)
	}
}

func (s *cpuSeq) MatMul(dst, src Act, n, layer int, p Param) {
	if s.err != nil {
		return
	}
	s.err = s.r.c.k.MatMul(s.r.c.pool, s.act[dst], s.act[src], n, s.layerMat(layer, p))
}

func (s *cpuSeq) RoPE(layer, pos0, n int) {
	c := &s.r.cfg
	Q, KV := c.QDim(), c.KVDim()
	W := Q + 2*KV
	qkv, q, rope := s.act[ActQKV], s.act[ActQ], s.r.w.Rope
	for i := 0; i < n; i++ {
		row := qkv[i*W : (i+1)*W]
		p := pos0 + i
		rope.Rotate(q[i*Q:(i+1)*Q], row[:Q], c.NumAttentionHeads, p)
		rope.Rotate(s.cache.row(layer, 0, p), row[Q:Q+KV], c.NumKeyValueHeads, p)
		copy(s.cache.row(layer, 1, p), row[Q+KV:])
	}
}

func (s *cpuSeq) Attention(layer, pos0, n int) {
	c := &s.r.cfg
	s.r.c.attention(s.act[ActAtt], s.act[ActQ], AttentionSpec{Layer: layer, N: n, Pos0: pos0,
		Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim, Window: c.Window(layer)}, s.cache)
}

func (s *cpuSeq) Add(dst, src Act, n int) {
	kernels.Add(s.rowsOf(dst, n), s.rowsOf(dst, n), s.rowsOf(src, n))
}

func (s *cpuSeq) SwiGLU(n int) {
	ffn := s.r.cfg.IntermediateSize
	gu, dst := s.act[ActGU], s.act[ActFFN]
	for i := 0; i < n; i++ {
		row := gu[i*2*ffn : (i+1)*2*ffn]
		s.r.c.k.SwiGLU(dst[i*ffn:(i+1)*ffn], row[:ffn], row[ffn:])
	}
}

func (s *cpuSeq) Logits(dst []float32, n, rows int) {
	if s.err != nil {
		return
	}
	h := s.r.cfg.HiddenSize
	xb := s.act[ActXB]
	s.rmsNorm(xb, s.act[ActX][(n-rows)*h:], rows, s.r.w.Norm)
	s.err = s.r.c.k.MatMul(s.r.c.pool, dst, xb, rows, s.r.w.Head)
}

func (s *cpuSeq) Err() error { return s.err }

func (s *cpuSeq) Truncate(n int) error {
	if err := s.cache.Truncate(n); err != nil {
		return err
	}
	s.err = nil
	return nil
}

func (s *cpuSeq) Fork() Seq { return &cpuSeq{r: s.r, cache: s.cache.Fork()} }

func (s *cpuSeq) Close() error { return nil }

// AttentionSpec describes one attention call.
type AttentionSpec struct {
	Layer, N, Pos0 int
	Heads, KVHeads int
	HeadDim        int
	Window         int // 0: full causal; W: keys at positions > p-W only
}

// attention computes causal (optionally sliding-window) attention for n
// queries at positions pos0 … pos0+n-1 over layer's keys and values in
// kv, which already hold those positions. q and dst are n × Heads ×
// HeadDim; query head h reads KV head h / (Heads/KVHeads).
//
// Work is split over (query, KV head) pairs; each pair walks its visible
// keys block by block for the query heads that share that KV head (GQA):
// scores of a block's keys in one strided DotRows call per head, a
// numerically stable softmax per head, and the weighted sum of values in
// one AxpyRows call per block and head.
func (c *CPU) attention(dst, q []float32, a AttentionSpec, kv *Cache) {
	hd := a.HeadDim
	group := a.Heads / a.KVHeads
	kvDim := a.KVHeads * hd
	scale := float32(1 / math.Sqrt(float64(hd)))
	total := a.N * a.KVHeads
	grain := max(1, total/(4*c.pool.Threads()))
	if work := a.N * a.Heads * (a.Pos0 + a.N) * hd; work < 1<<16 {
		grain = total // too little to pay for waking another thread
	}
	c.pool.For(total, grain, func(lo, hi int) {
		width := a.Pos0 + a.N
		scores := make([]float32, group*width)
		for i := lo; i < hi; i++ {
			t, g := i/a.KVHeads, i%a.KVHeads
			pos := a.Pos0 + t
			first := 0
			if a.Window > 0 {
				first = max(0, pos-a.Window+1)
			}
			span := pos + 1 - first
			koff := g * hd
			qrow := q[t*a.Heads*hd:]
			for p := first; p <= pos; {
				ks := kv.span(a.Layer, 0, p)
				end := min(pos+1, (p/blockLen+1)*blockLen)
				rows := ks[(p%blockLen)*kvDim+koff:]
				for k := 0; k < group; k++ {
					h := g*group + k
					sc := scores[k*width+p-first : k*width+end-first]
					c.k.DotRows(sc, qrow[h*hd:(h+1)*hd], rows, kvDim)
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
				vs := kv.span(a.Layer, 1, p)
				end := min(pos+1, (p/blockLen+1)*blockLen)
				rows := vs[(p%blockLen)*kvDim+koff:]
				for k := 0; k < group; k++ {
					h := g*group + k
					c.k.AxpyRows(dst[(t*a.Heads+h)*hd:(t*a.Heads+h+1)*hd], scores[k*width+p-first:k*width+end-first], rows, kvDim)
				}
				p = end
			}
		}
	})
}
