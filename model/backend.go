package model

import (
	"math"

	"github.com/ndbg/ndbg/kernels"
)

// Backend is the compute boundary of the forward pass: the few dense ops
// that carry nearly all of the work. The model code around it (embedding
// lookup, RoPE, residual adds, the KV-cache bookkeeping) stays on the host.
// A GPU backend implements these five methods over its own copies of the
// weights (keyed by *kernels.Mat) and reports device errors from MatMul or
// Sync; it does not need a tensor abstraction.
//
// Implementations must be safe for concurrent use by several sessions.
type Backend interface {
	// Name identifies the backend in logs and benchmarks ("cpu/avx512").
	Name() string
	// MatMul sets dst (n × w.Rows) = x (n × w.Cols) · Wᵀ.
	MatMul(dst, x []float32, n int, w *kernels.Mat) error
	// RMSNorm normalises each of the n rows of x (width len(weight)) into
	// dst: x / sqrt(mean(x²) + eps) · weight.
	RMSNorm(dst, x []float32, n int, weight []float32, eps float32)
	// SwiGLU sets dst (n × ffn) to silu(gate) · up, where row i of gu holds
	// gate then up (2·ffn values).
	SwiGLU(dst, gu []float32, n, ffn int)
	// Attention computes causal (optionally sliding-window) attention for n
	// queries at positions pos0 … pos0+n-1 over layer's keys and values in
	// kv, which already hold those positions. q and dst are n × Heads ×
	// HeadDim; query head h reads KV head h / (Heads/KVHeads).
	Attention(dst, q []float32, a AttentionSpec, kv *Cache)
	// Sync waits for queued work and returns the first error since the last
	// Sync (nil for the CPU, where every op completes synchronously).
	Sync() error
	// Close releases the backend's threads or device resources.
	Close() error
}

// AttentionSpec describes one attention call.
type AttentionSpec struct {
	Layer, N, Pos0 int
	Heads, KVHeads int
	HeadDim        int
	Window         int // 0: full causal; W: keys at positions > p-W only
}

// CPU is the Backend on this machine's cores, built on package kernels.
type CPU struct {
	k    kernels.Backend
	pool *kernels.Pool
}

// NewCPU returns a CPU backend running on threads threads (≤ 0: one per
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

// NewCPUWith returns a CPU backend using the given kernels implementation
// (for example kernels.Generic(), to compare against the reference code).
func NewCPUWith(k kernels.Backend, threads int) *CPU {
	return &CPU{k: k, pool: kernels.NewPool(threads)}
}

// Name returns "cpu/" and the kernels' instruction set.
func (c *CPU) Name() string { return "cpu/" + c.k.Name() }

// Threads returns the number of threads the backend computes on.
func (c *CPU) Threads() int { return c.pool.Threads() }

// MatMul implements Backend.
func (c *CPU) MatMul(dst, x []float32, n int, w *kernels.Mat) error {
	return c.k.MatMul(c.pool, dst, x, n, w)
}

// RMSNorm implements Backend.
func (c *CPU) RMSNorm(dst, x []float32, n int, weight []float32, eps float32) {
	d := len(weight)
	for i := 0; i < n; i++ {
		c.k.RMSNorm(dst[i*d:(i+1)*d], x[i*d:(i+1)*d], weight, eps)
	}
}

// SwiGLU implements Backend.
func (c *CPU) SwiGLU(dst, gu []float32, n, ffn int) {
	for i := 0; i < n; i++ {
		row := gu[i*2*ffn : (i+1)*2*ffn]
		c.k.SwiGLU(dst[i*ffn:(i+1)*ffn], row[:ffn], row[ffn:])
	}
}

// Attention implements Backend. Work is split over (query, KV head)
// pairs; each pair walks its visible keys block by block for the query
// heads that share that KV head (GQA): scores of a block's keys in one
// strided DotRows call per head, a numerically stable softmax per head, and
// the weighted sum of values in one AxpyRows call per block and head.
func (c *CPU) Attention(dst, q []float32, a AttentionSpec, kv *Cache) {
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

// Sync implements Backend; CPU ops are synchronous.
func (c *CPU) Sync() error { return nil }

// Close stops the worker threads.
func (c *CPU) Close() error {
	c.pool.Close()
	return nil
}
