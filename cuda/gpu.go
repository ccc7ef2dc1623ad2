//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gorgonia.org/cu"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
)

// gemmMinTokens is the smallest batch that a matrix product sends to the
// tensor-core GEMM; smaller batches use the GEMV kernel, which reads each
// weight row once for up to 8 tokens.
const gemmMinTokens = 16

// GPU is model.Device on one NVIDIA GPU. Load uploads a model's weights
// once; each sequence keeps its KV cache (layer × {K, V} × position ×
// kv_dim, float32, grown by doubling) and its activations in device
// memory, so a forward pass sends token ids and brings back only logits.
// A GPU is safe for concurrent use; device work is serialised.
type GPU struct {
	d    *device
	gemm string // "gemm_bf16_2" (split, float32-exact) or "gemm_bf16_1"
	gemv string // "gemv_bf16_1" or "gemv_bf16_2" (unrolled loads)
}

// Options configure New.
type Options struct {
	// Device is the GPU ordinal.
	Device int
	// FastGEMM rounds activations to bf16 in the prefill GEMM (gemm_bf16_1,
	// NMSE ≈ 1e-6 per product) instead of splitting them in two bf16 halves
	// (gemm_bf16_2, float32-accurate, twice the tensor work).
	FastGEMM bool
	// UnrolledGEMV selects gemv_bf16_2 (4 loads in flight per lane, more
	// registers) for BF16 decode instead of gemv_bf16_1.
	UnrolledGEMV bool
}

// New opens GPU opts.Device and loads the kernels. It fails with a clear
// error when there is no usable GPU (but note that a binary built with the
// cuda tag already exits at start-up without a driver: see the package
// doc).
func New(opts Options) (*GPU, error) {
	d, err := openDevice(opts.Device)
	if err != nil {
		return nil, err
	}
	g := &GPU{d: d, gemm: "gemm_bf16_2", gemv: "gemv_bf16_1"}
	if opts.FastGEMM {
		g.gemm = "gemm_bf16_1"
	}
	if opts.UnrolledGEMV {
		g.gemv = "gemv_bf16_2"
	}
	return g, nil
}

var _ model.Device = (*GPU)(nil)

// Name returns "cuda/" and the GPU's name.
func (g *GPU) Name() string { return "cuda/" + g.d.name }

// Close destroys the context; every model loaded on g must be closed
// first.
func (g *GPU) Close() error { return g.d.close() }

// pickMatMul chooses the kernel for a batch of n tokens.
func (g *GPU) pickMatMul(n int, dt kernels.DType) string {
	switch {
	case dt == kernels.F32:
		return "gemv_f32_1"
	case n >= gemmMinTokens:
		return g.gemm
	}
	return g.gemv
}

// launchMatMul launches one of the matrix kernels on device pointers:
// y (n × rows) = x (n × cols) · Wᵀ.
func (d *device) launchMatMul(kernel string, y, x, w cu.DevicePtr, n, rows, cols int) error {
	switch kernel {
	case "gemv_bf16_1", "gemv_bf16_2", "gemv_f32_1":
		const warps = 8
		return d.launch(kernel, [3]int{ceilDiv(rows, warps), ceilDiv(n, 8), 1}, [3]int{32 * warps, 1, 1}, 0,
			y, x, w, n, rows, cols)
	case "gemm_bf16_1", "gemm_bf16_2":
		return d.launch(kernel, [3]int{ceilDiv(rows, 64), ceilDiv(n, 64), 1}, [3]int{128, 1, 1}, 0,
			y, x, w, n, rows, cols)
	}
	return fmt.Errorf("unknown matmul kernel %q", kernel)
}

// attnSplits chooses how many chunks each (query, head) pair's keys are
// split into: enough blocks to cover the GPU about twice, chunks of at
// least 64 keys, at most 64 chunks.
func (d *device) attnSplits(pairs, span int) int {
	want := ceilDiv(2*max(d.sms, 1), pairs)
	return max(1, min(want, ceilDiv(span, 64), 64))
}

// attention launches the split-K attention kernels on device pointers
// (device lock held); part is the scratch for the partial results; the
// rows of k and v hold positions kpos0 ….
func (d *device) attention(part *scratch, out, q, k, v cu.DevicePtr, a model.AttentionSpec, kpos0 int) error {
	if a.HeadDim > 256 || a.KVHeads <= 0 || a.Heads%a.KVHeads != 0 {
		return fmt.Errorf("unsupported attention shape: %d heads, %d KV heads, head dim %d (≤ 256)", a.Heads, a.KVHeads, a.HeadDim)
	}
	pairs := a.N * a.Heads
	span := a.Pos0 + a.N
	if a.Window > 0 {
		span = min(span, a.Window)
	}
	splits := d.attnSplits(pairs, span)
	slots := pairs * splits
	pp, err := part.need(int64(4 * slots * (a.HeadDim + 2)))
	if err != nil {
		return err
	}
	pm := pp
	pl := pp + cu.DevicePtr(4*slots)
	pacc := pp + cu.DevicePtr(8*slots)
	scale := float32(1 / math.Sqrt(float64(a.HeadDim)))
	if err := d.launch("attn_partial_1", [3]int{pairs, splits, 1}, [3]int{128, 1, 1}, 0,
		pm, pl, pacc, q, k, v, a.N, a.Heads, a.KVHeads, a.HeadDim, a.Pos0, kpos0, a.Window, splits, scale); err != nil {
		return err
	}
	return d.launch("attn_combine_1", grid1(pairs), [3]int{128, 1, 1}, 0, out, pm, pl, pacc, a.HeadDim, splits)
}

// devMat is a weight matrix on the device.
type devMat struct {
	ptr        devPtr
	rows, cols int
	dt         kernels.DType
}

type devLayer struct {
	attnNorm, ffnNorm devPtr
	qkv, o            devMat
	gateUp, down      devMat
}

// resident is a model's weights in device memory, with the RoPE tables.
type resident struct {
	g      *GPU
	cfg    model.Config
	embed  devMat
	head   devMat
	norm   devPtr
	layers []devLayer
	cos    devPtr
	sin    devPtr
	owned  []buffer

	mu     sync.Mutex
	closed bool
}

// Load implements model.Device: it uploads every weight matrix (BF16
// stays BF16, F32 stays F32), the norms and the RoPE tables.
func (g *GPU) Load(cfg model.Config, w *model.Weights) (model.Resident, error) {
	if cfg.HeadDim > 256 {
		return nil, fmt.Errorf("cuda: head dim %d > 256 not supported by attn_partial_1", cfg.HeadDim)
	}
	mats := []*kernels.Mat{w.Embed, w.Head}
	for _, l := range w.Layers {
		mats = append(mats, l.QKV, l.O, l.GateUp, l.Down)
	}
	for _, m := range mats {
		if m.Parts != nil || m.DType.Quantized() {
			return nil, fmt.Errorf("cuda: quantized weights (%v) are computed on the CPU only for now", m.DType)
		}
	}
	r := &resident{g: g, cfg: cfg, layers: make([]devLayer, cfg.NumHiddenLayers)}
	err := g.d.do(func() error {
		var err error
		up := func(v []float32, what string) devPtr {
			if err != nil {
				return 0
			}
			var p devPtr
			if p, err = r.alloc(int64(4*len(v)), what); err == nil {
				err = upload(p, v, what)
			}
			return p
		}
		mat := func(m *kernels.Mat, what string) devMat {
			if err != nil {
				return devMat{}
			}
			dm := devMat{rows: m.Rows, cols: m.Cols, dt: m.DType}
			n := m.Rows * m.Cols
			if dm.ptr, err = r.alloc(int64(n)*int64(m.DType.Size()), what); err != nil {
				return devMat{}
			}
			if m.DType == kernels.BF16 {
				err = upload(dm.ptr, m.BF16[:n], what)
			} else {
				err = upload(dm.ptr, m.F32[:n], what)
			}
			return dm
		}
		r.embed = mat(w.Embed, "embedding")
		r.head = r.embed
		if w.Head != w.Embed {
			r.head = mat(w.Head, "output head")
		}
		r.norm = up(w.Norm, "final norm")
		for l := range r.layers {
			lw, dl := &w.Layers[l], &r.layers[l]
			what := fmt.Sprintf("layer %d", l)
			dl.attnNorm, dl.ffnNorm = up(lw.AttnNorm, what), up(lw.FFNNorm, what)
			dl.qkv, dl.o = mat(lw.QKV, what), mat(lw.O, what)
			dl.gateUp, dl.down = mat(lw.GateUp, what), mat(lw.Down, what)
		}
		r.cos, r.sin = up(w.Rope.Cos, "rope cos"), up(w.Rope.Sin, "rope sin")
		if err != nil {
			return r.free(err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: loading the weights: %w", err)
	}
	return r, nil
}

// alloc allocates a buffer the model owns (context current).
func (r *resident) alloc(bytes int64, what string) (devPtr, error) {
	buf, err := alloc(bytes, what)
	if err != nil {
		return 0, err
	}
	r.owned = append(r.owned, buf)
	return buf.ptr, nil
}

// free releases everything r owns and returns err joined with any
// failure (context current).
func (r *resident) free(err error) error {
	errs := []error{err}
	for i := range r.owned {
		errs = append(errs, r.owned[i].free())
	}
	r.owned = nil
	return errors.Join(errs...)
}

// Close frees the weights' device memory.
func (r *resident) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.g.d.do(func() error { return r.free(nil) })
}

// NewSeq implements model.Resident; device memory is taken by Reserve.
func (r *resident) NewSeq() model.Seq { return newSeq(r) }

// seqMem is a sequence's device memory, kept apart from the seq so that a
// cleanup can free it when the seq is garbage collected without Close.
type seqMem struct {
	kv     buffer // layer × {K, V} × kvCap × kvDim float32
	act    [model.NumActs]scratch
	part   scratch // attention partials
	ids    scratch // token ids of a chunk
	logits scratch // rows × Vocab
}

func (m *seqMem) free() error {
	errs := []error{m.kv.free(), m.part.free(), m.ids.free(), m.logits.free()}
	for i := range m.act {
		errs = append(errs, m.act[i].free())
	}
	return errors.Join(errs...)
}

// seq is one sequence on the GPU.
type seq struct {
	r       *resident
	mem     *seqMem
	cleanup runtime.Cleanup
	n       int   // positions counted
	kvCap   int   // positions the kv buffer holds
	rows    int   // activation rows reserved
	err     error // first op error since the last Truncate
	broken  error // a failed Fork: every op fails
}

func newSeq(r *resident) *seq {
	s := &seq{r: r, mem: &seqMem{}}
	s.mem.part.what, s.mem.ids.what, s.mem.logits.what = "attention partials", "token ids", "logits"
	for i := range s.mem.act {
		s.mem.act[i].what = "activations"
	}
	d := r.g.d
	s.cleanup = runtime.AddCleanup(s, func(m *seqMem) { _ = d.do(m.free) }, s.mem)
	return s
}

func (s *seq) Len() int { return s.n }

// do runs f on the device unless an earlier op failed, recording its error.
func (s *seq) do(what string, f func() error) {
	if s.err != nil {
		return
	}
	if s.broken != nil {
		s.err = s.broken
		return
	}
	if err := s.r.g.d.do(f); err != nil {
		s.err = fmt.Errorf("cuda: %s: %w", what, err)
	}
}

// layerKV returns the device addresses of layer l's key and value rows.
func (s *seq) layerKV(l int) (k, v devPtr) {
	block := int64(s.kvCap) * int64(s.r.cfg.KVDim()) * 4
	base := s.mem.kv.ptr + devPtr(int64(2*l)*block)
	return base, base + devPtr(block)
}

// growKV makes the cache hold at least need positions, doubling its
// capacity (up to the context) and copying the filled rows (context
// current).
func (s *seq) growKV(need int) error {
	if need <= s.kvCap {
		return nil
	}
	c := &s.r.cfg
	capacity := min(max(need, 2*s.kvCap, 64), c.MaxPositionEmbeddings)
	kv, err := alloc(int64(c.NumHiddenLayers)*2*int64(capacity)*int64(c.KVDim())*4, "KV cache")
	if err != nil {
		return err
	}
	old, oldCap := s.mem.kv, s.kvCap
	s.mem.kv, s.kvCap = kv, capacity
	if s.n > 0 {
		rowBytes := int64(c.KVDim()) * 4
		for l := 0; l < c.NumHiddenLayers; l++ {
			for h := int64(0); h < 2; h++ {
				src := old.ptr + devPtr((int64(2*l)+h)*int64(oldCap)*rowBytes)
				dst := kv.ptr + devPtr((int64(2*l)+h)*int64(capacity)*rowBytes)
				if err := cu.MemcpyDtoD(dst, src, int64(s.n)*rowBytes); err != nil {
					return errors.Join(fmt.Errorf("cuMemcpyDtoD (KV cache growth, layer %d): %w", l, err), old.free())
				}
			}
		}
	}
	if err := syncDevice("KV cache growth"); err != nil {
		return errors.Join(err, old.free())
	}
	return old.free()
}

func (s *seq) Reserve(n int) {
	s.do("reserve", func() error {
		if err := s.growKV(s.n + n); err != nil {
			return err
		}
		if n > s.rows {
			for a := range s.mem.act {
				if _, err := s.mem.act[a].need(int64(4 * n * model.Act(a).Width(&s.r.cfg))); err != nil {
					return err
				}
			}
			if _, err := s.mem.ids.need(int64(4 * n)); err != nil {
				return err
			}
			s.rows = n
		}
		return nil
	})
	s.n += n
}

func (s *seq) ptr(a model.Act) devPtr { return s.mem.act[a].ptr }

func (s *seq) Embed(tokens []int) {
	s.do("embedding", func() error {
		ids := make([]int32, len(tokens))
		for i, t := range tokens {
			ids[i] = int32(t)
		}
		if err := upload(s.mem.ids.ptr, ids, "token ids"); err != nil {
			return err
		}
		kernel := "embed_bf16_1"
		if s.r.embed.dt == kernels.F32 {
			kernel = "embed_f32_1"
		}
		return s.r.g.d.launch(kernel, grid1(len(tokens)), [3]int{256, 1, 1}, 0, s.ptr(model.ActX), s.r.embed.ptr, s.mem.ids.ptr, s.r.cfg.HiddenSize)
	})
}

func (s *seq) RMSNorm(dst, src model.Act, n, layer int, p model.Param) {
	w := s.r.layers[layer].attnNorm
	if p == model.FFNNorm {
		w = s.r.layers[layer].ffnNorm
	}
	s.do("rmsnorm", func() error {
		return s.r.g.d.launch("rmsnorm_1", grid1(n), [3]int{256, 1, 1}, 0, s.ptr(dst), s.ptr(src), w, s.r.cfg.HiddenSize, float32(s.r.cfg.RMSNormEps))
	})
}

func (s *seq) MatMul(dst, src model.Act, n, layer int, p model.Param) {
	lw := &s.r.layers[layer]
	w := lw.down
	switch p {
	case model.QKV:
		w = lw.qkv
	case model.O:
		w = lw.o
	case model.GateUp:
		w = lw.gateUp
	}
	s.do(fmt.Sprintf("layer %d matmul %d×%d·%d×%dᵀ", layer, n, w.cols, w.rows, w.cols), func() error {
		return s.r.g.d.launchMatMul(s.r.g.pickMatMul(n, w.dt), s.ptr(dst), s.ptr(src), w.ptr, n, w.rows, w.cols)
	})
}

func (s *seq) RoPE(layer, pos0, n int) {
	c := &s.r.cfg
	slots := c.QDim()/2 + c.KVDim()/2 + c.KVDim()
	s.do("rope", func() error {
		kc, vc := s.layerKV(layer)
		return s.r.g.d.launch("qkv_rope_1", grid1(ceilDiv(n*slots, 256)), [3]int{256, 1, 1}, 0,
			s.ptr(model.ActQ), kc, vc, s.ptr(model.ActQKV), s.r.cos, s.r.sin, n, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, pos0)
	})
}

func (s *seq) Attention(layer, pos0, n int) {
	c := &s.r.cfg
	a := model.AttentionSpec{Layer: layer, N: n, Pos0: pos0, Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads,
		HeadDim: c.HeadDim, Window: c.Window(layer)}
	s.do(fmt.Sprintf("layer %d attention (n=%d, pos0=%d)", layer, n, pos0), func() error {
		kc, vc := s.layerKV(layer)
		return s.r.g.d.attention(&s.mem.part, s.ptr(model.ActAtt), s.ptr(model.ActQ), kc, vc, a, 0)
	})
}

func (s *seq) Add(dst, src model.Act, n int) {
	m := n * dst.Width(&s.r.cfg)
	s.do("add", func() error {
		return s.r.g.d.launch("add_1", grid1(ceilDiv(m, 256)), [3]int{256, 1, 1}, 0, s.ptr(dst), s.ptr(dst), s.ptr(src), m)
	})
}

func (s *seq) SwiGLU(n int) {
	f := s.r.cfg.IntermediateSize
	s.do("swiglu", func() error {
		return s.r.g.d.launch("swiglu_rows_1", grid1(ceilDiv(n*f, 256)), [3]int{256, 1, 1}, 0, s.ptr(model.ActFFN), s.ptr(model.ActGU), n, f)
	})
}

func (s *seq) Logits(dst []float32, n, rows int) {
	c, r := &s.r.cfg, s.r
	s.do("output head", func() error {
		lp, err := s.mem.logits.need(int64(4 * rows * c.VocabSize))
		if err != nil {
			return err
		}
		x := s.ptr(model.ActX) + devPtr(4*(n-rows)*c.HiddenSize)
		xb := s.ptr(model.ActXB)
		if err := r.g.d.launch("rmsnorm_1", grid1(rows), [3]int{256, 1, 1}, 0, xb, x, r.norm, c.HiddenSize, float32(c.RMSNormEps)); err != nil {
			return err
		}
		if err := r.g.d.launchMatMul(r.g.pickMatMul(rows, r.head.dt), lp, xb, r.head.ptr, rows, r.head.rows, r.head.cols); err != nil {
			return err
		}
		return download(dst[:rows*c.VocabSize], lp, "logits")
	})
}

func (s *seq) Err() error { return s.err }

func (s *seq) Truncate(n int) error {
	if n < 0 || n > s.n {
		return fmt.Errorf("cuda: truncate to %d, cache holds %d positions", n, s.n)
	}
	s.n = n
	s.err = nil
	return nil
}

// Fork copies s's cached rows into a new sequence on the device.
func (s *seq) Fork() model.Seq {
	f := newSeq(s.r)
	if s.broken != nil {
		f.broken = s.broken
		return f
	}
	err := s.r.g.d.do(func() error {
		if err := f.growKV(s.n); err != nil {
			return err
		}
		rowBytes := int64(s.r.cfg.KVDim()) * 4
		for l := 0; l < s.r.cfg.NumHiddenLayers && s.n > 0; l++ {
			sk, sv := s.layerKV(l)
			fk, fv := f.layerKV(l)
			if err := cu.MemcpyDtoD(fk, sk, int64(s.n)*rowBytes); err != nil {
				return fmt.Errorf("cuMemcpyDtoD (fork, layer %d keys): %w", l, err)
			}
			if err := cu.MemcpyDtoD(fv, sv, int64(s.n)*rowBytes); err != nil {
				return fmt.Errorf("cuMemcpyDtoD (fork, layer %d values): %w", l, err)
			}
		}
		return nil
	})
	if err != nil {
		f.broken = fmt.Errorf("cuda: fork: %w", err)
	}
	f.n = s.n
	return f
}

// Close frees the sequence's device memory now.
func (s *seq) Close() error {
	s.cleanup.Stop()
	if err := s.r.g.d.do(s.mem.free); err != nil {
		return fmt.Errorf("cuda: closing a sequence: %w", err)
	}
	return nil
}
