//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"gorgonia.org/cu"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/weights"
)

// Model is a LLaMA-architecture decoder that runs its whole forward pass
// on the GPU: embedding lookup, every layer (RMSNorm, fused QKV product,
// RoPE and the KV-cache write, attention, output projection, residual adds,
// SwiGLU MLP), final norm and head. Only token ids go in and logits (or,
// with Session.Greedy, one sampled token id) come out, so it avoids the
// per-op copies of Backend, which model.Backend's host-slice interface
// forces.
//
// It is the design the model package should reach through an optional
// device-forward interface (see README.md); until then it binds weights
// itself, from the same Hugging Face tensor names as model.New
// (NewModel), or fills random ones on the device (NewRandomModel).
type Model struct {
	b      *Backend
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

// ModelOptions configure NewModel and NewRandomModel.
type ModelOptions struct {
	// Context, when > 0, caps the longest sequence below the config's (the
	// RoPE tables and each session's cache are sized by it). The default
	// is min(config's context, 8192).
	Context int
}

func (o ModelOptions) context(cfg *model.Config) int {
	c := min(cfg.Context, 8192)
	if o.Context > 0 {
		c = min(cfg.Context, o.Context)
	}
	return c
}

// Config returns the model's configuration (Context as capped).
func (m *Model) Config() model.Config { return m.cfg }

// newModelShell validates cfg, uploads the RoPE tables and returns a model
// whose weights the caller fills (context current).
func newModelShell(b *Backend, cfg model.Config, opts ModelOptions) (*Model, error) {
	cfg.Context = opts.context(&cfg)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.HeadDim > 256 {
		return nil, fmt.Errorf("cuda: head dim %d > 256 not supported by attn_partial_1", cfg.HeadDim)
	}
	m := &Model{b: b, cfg: cfg, layers: make([]devLayer, cfg.Layers)}
	cos, sin := RopeTables(&cfg, cfg.Context)
	var err error
	if m.cos, err = m.upload(cos, "rope cos"); err != nil {
		return nil, m.free(err)
	}
	if m.sin, err = m.upload(sin, "rope sin"); err != nil {
		return nil, m.free(err)
	}
	return m, nil
}

// alloc allocates a buffer the model owns (context current).
func (m *Model) alloc(bytes int64, what string) (devPtr, error) {
	buf, err := alloc(bytes, what)
	if err != nil {
		return 0, err
	}
	m.owned = append(m.owned, buf)
	return buf.ptr, nil
}

func (m *Model) upload(v []float32, what string) (devPtr, error) {
	p, err := m.alloc(int64(4*len(v)), what)
	if err != nil {
		return 0, err
	}
	return p, upload(p, v, what)
}

// free releases everything the model owns and returns err joined with
// any failure (context current).
func (m *Model) free(err error) error {
	errs := []error{err}
	for i := range m.owned {
		errs = append(errs, m.owned[i].free())
	}
	m.owned = nil
	return errors.Join(errs...)
}

// NewModel uploads the weights of cfg from src (Hugging Face names, as
// model.New binds them: BF16 stays BF16, other float types become F32) to
// b's GPU. The q/k/v and gate/up matrices are stacked on the device so
// each layer does one product for each pair, like the CPU engine.
func NewModel(b *Backend, cfg model.Config, src model.Source, opts ModelOptions) (*Model, error) {
	var m *Model
	err := b.d.do(func() error {
		var err error
		if m, err = newModelShell(b, cfg, opts); err != nil {
			return err
		}
		c := &m.cfg
		H, Q, KV, F, V := c.Hidden, c.QDim(), c.KVDim(), c.FFN, c.Vocab
		vec := func(name string, n int) (devPtr, error) {
			t, err := tensor(src, name, n)
			if err != nil {
				return 0, err
			}
			v, err := t.F32()
			if err != nil {
				return 0, fmt.Errorf("tensor %s: %w", name, err)
			}
			return m.upload(v, name)
		}
		mat := func(cols int, names []string, rows []int) (devMat, error) {
			ts := make([]*weights.Tensor, len(names))
			total := 0
			for i, name := range names {
				t, err := tensor(src, name, rows[i], cols)
				if err != nil {
					return devMat{}, err
				}
				ts[i] = t
				total += rows[i]
			}
			dt := kernels.F32
			if ts[0].DType == weights.BF16 {
				dt = kernels.BF16
			}
			for i, t := range ts {
				if (t.DType == weights.BF16) != (dt == kernels.BF16) {
					return devMat{}, fmt.Errorf("tensor %s is %v, %s is %v: a stacked matrix needs one dtype", names[i], t.DType, names[0], ts[0].DType)
				}
			}
			p, err := m.alloc(int64(total)*int64(cols)*int64(dt.Size()), names[0])
			if err != nil {
				return devMat{}, err
			}
			off := int64(0)
			for i, t := range ts {
				if dt == kernels.BF16 {
					v, err := t.BF16()
					if err != nil {
						return devMat{}, fmt.Errorf("tensor %s: %w", names[i], err)
					}
					err = upload(p+cu.DevicePtr(off), v, names[i])
					if err != nil {
						return devMat{}, err
					}
					off += int64(2 * len(v))
				} else {
					v, err := t.F32()
					if err != nil {
						return devMat{}, fmt.Errorf("tensor %s: %w", names[i], err)
					}
					if err := upload(p+cu.DevicePtr(off), v, names[i]); err != nil {
						return devMat{}, err
					}
					off += int64(4 * len(v))
				}
			}
			return devMat{ptr: p, rows: total, cols: cols, dt: dt}, nil
		}
		one := func(name string, rows, cols int) (devMat, error) {
			return mat(cols, []string{name}, []int{rows})
		}
		if m.embed, err = one("model.embed_tokens.weight", V, H); err != nil {
			return m.free(err)
		}
		m.head = m.embed
		if !c.TiedEmbeddings {
			if m.head, err = one("lm_head.weight", V, H); err != nil {
				return m.free(err)
			}
		}
		if m.norm, err = vec("model.norm.weight", H); err != nil {
			return m.free(err)
		}
		for l := range m.layers {
			lw := &m.layers[l]
			name := func(s string) string { return fmt.Sprintf("model.layers.%d.%s", l, s) }
			steps := []func() error{
				func() (e error) { lw.attnNorm, e = vec(name("input_layernorm.weight"), H); return },
				func() (e error) { lw.ffnNorm, e = vec(name("post_attention_layernorm.weight"), H); return },
				func() (e error) {
					lw.qkv, e = mat(H, []string{name("self_attn.q_proj.weight"), name("self_attn.k_proj.weight"),
						name("self_attn.v_proj.weight")}, []int{Q, KV, KV})
					return
				},
				func() (e error) { lw.o, e = one(name("self_attn.o_proj.weight"), H, Q); return },
				func() (e error) {
					lw.gateUp, e = mat(H, []string{name("mlp.gate_proj.weight"), name("mlp.up_proj.weight")}, []int{F, F})
					return
				},
				func() (e error) { lw.down, e = one(name("mlp.down_proj.weight"), H, F); return },
			}
			for _, step := range steps {
				if err := step(); err != nil {
					return m.free(err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: loading model: %w", err)
	}
	return m, nil
}

// tensor fetches name from src and checks its shape and values.
func tensor(src model.Source, name string, shape ...int) (*weights.Tensor, error) {
	t, err := src.Tensor(name)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	if len(t.Shape) != len(shape) {
		return nil, fmt.Errorf("tensor %s has shape %v, want %v", name, t.Shape, shape)
	}
	for i := range shape {
		if t.Shape[i] != shape[i] {
			return nil, fmt.Errorf("tensor %s has shape %v, want %v", name, t.Shape, shape)
		}
	}
	if err := weights.CheckFinite(context.Background(), 0, t); err != nil {
		return nil, err
	}
	return t, nil
}

// NewRandomModel builds a model of shape cfg with random BF16 weights
// filled on the device (uniform in ±1/sqrt(cols) for matrices, 1 ± 0.1 for
// norms, as model.NewRandom, though not the same values), for benchmarks of
// models whose weights would not fit in host memory comfortably.
func NewRandomModel(b *Backend, cfg model.Config, seed uint64, opts ModelOptions) (*Model, error) {
	var m *Model
	err := b.d.do(func() error {
		var err error
		if m, err = newModelShell(b, cfg, opts); err != nil {
			return err
		}
		c := &m.cfg
		H, Q, KV, F, V := c.Hidden, c.QDim(), c.KVDim(), c.FFN, c.Vocab
		stream := seed * 1000003
		fill := func(kernel string, p devPtr, n int64, lo, hi float32) error {
			stream++
			blocks := int(min(int64(ceilDiv(int(min(n, math.MaxInt32)), 256)), int64(32*max(m.b.d.sms, 1))))
			return m.b.d.launch(kernel, grid1(blocks), [3]int{256, 1, 1}, 0, p, n, uint32(stream), uint32(stream>>32), lo, hi)
		}
		mat := func(rows, cols int) (devMat, error) {
			n := int64(rows) * int64(cols)
			p, err := m.alloc(2*n, "random weights")
			if err != nil {
				return devMat{}, err
			}
			s := float32(1 / math.Sqrt(float64(cols)))
			return devMat{ptr: p, rows: rows, cols: cols, dt: kernels.BF16}, fill("fill_uniform_bf16_1", p, n, -s, s)
		}
		vec := func(n int) (devPtr, error) {
			p, err := m.alloc(int64(4*n), "random norm")
			if err != nil {
				return 0, err
			}
			return p, fill("fill_uniform_f32_1", p, int64(n), 0.9, 1.1)
		}
		if m.embed, err = mat(V, H); err != nil {
			return m.free(err)
		}
		m.head = m.embed
		if !c.TiedEmbeddings {
			if m.head, err = mat(V, H); err != nil {
				return m.free(err)
			}
		}
		if m.norm, err = vec(H); err != nil {
			return m.free(err)
		}
		for l := range m.layers {
			lw := &m.layers[l]
			var errs [6]error
			lw.attnNorm, errs[0] = vec(H)
			lw.ffnNorm, errs[1] = vec(H)
			lw.qkv, errs[2] = mat(Q+2*KV, H)
			lw.o, errs[3] = mat(H, Q)
			lw.gateUp, errs[4] = mat(2*F, H)
			lw.down, errs[5] = mat(H, F)
			if err := errors.Join(errs[:]...); err != nil {
				return m.free(err)
			}
		}
		if err := syncDevice("random weights"); err != nil {
			return m.free(err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: random model: %w", err)
	}
	return m, nil
}

// WeightBytes returns the bytes of weights one decode step reads (every
// layer matrix and the head), as model.Model.WeightBytes.
func (m *Model) WeightBytes() int64 {
	size := func(w devMat) int64 { return int64(w.rows) * int64(w.cols) * int64(w.dt.Size()) }
	n := size(m.head)
	for _, l := range m.layers {
		n += size(l.qkv) + size(l.o) + size(l.gateUp) + size(l.down)
	}
	return n
}

// Close frees the model's device memory. Its sessions must be closed
// first (they are not tracked).
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	return m.b.d.do(func() error { return m.free(nil) })
}

// sessionChunk is the most tokens one batched pass takes; longer prompts
// are cut into chunks of this size (like model's maxChunk).
const sessionChunk = 256

// Session is one sequence on a Model: a device KV cache of Context
// positions (layer × {K, V} × position × kv_dim, float32) and activation
// buffers for a chunk. Fork copies the filled part of the cache on the
// device; Truncate rolls back. A Session is not safe for concurrent use;
// several sessions of one model may run concurrently (their device work is
// serialised).
type Session struct {
	m      *Model
	n      int
	tokens []int
	kv     buffer
	act    buffer
	part   scratch
	// views into act
	x, xb, qkv, q, att, gu, ffn, tmp, logits, ids, tok, mask devPtr
}

// NewSession allocates a session's cache and buffers on the device.
func (m *Model) NewSession() (*Session, error) {
	s := &Session{m: m}
	s.part.what = "attention partials"
	err := m.b.d.do(func() error {
		c := &m.cfg
		var err error
		if s.kv, err = alloc(int64(c.Layers)*2*int64(c.Context)*int64(c.KVDim())*4, "KV cache"); err != nil {
			return err
		}
		C := sessionChunk
		H, Q, KV, F, V := c.Hidden, c.QDim(), c.KVDim(), c.FFN, c.Vocab
		sizes := []int{C * H, C * H, C * (Q + 2*KV), C * Q, C * Q, C * 2 * F, C * F, C * H, C * V, C, 1, ceilDiv(V, 32)}
		total := 0
		for _, n := range sizes {
			total += (n + 63) &^ 63 // 256-byte aligned views
		}
		if s.act, err = alloc(int64(4*total), "activations"); err != nil {
			return errors.Join(err, s.kv.free())
		}
		views := []*devPtr{&s.x, &s.xb, &s.qkv, &s.q, &s.att, &s.gu, &s.ffn, &s.tmp, &s.logits, &s.ids, &s.tok, &s.mask}
		off := 0
		for i, n := range sizes {
			*views[i] = s.act.ptr + devPtr(4*off)
			off += (n + 63) &^ 63
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: new session: %w", err)
	}
	return s, nil
}

// Len returns the number of cached positions.
func (s *Session) Len() int { return s.n }

// Tokens returns the tokens whose keys and values are cached.
func (s *Session) Tokens() []int { return s.tokens[:s.n] }

// layerKV returns the device addresses of layer l's key and value rows.
func (s *Session) layerKV(l int) (k, v devPtr) {
	c := &s.m.cfg
	block := int64(c.Context) * int64(c.KVDim()) * 4
	base := s.kv.ptr + devPtr(int64(2*l)*block)
	return base, base + devPtr(block)
}

// Forward appends tokens to the sequence and returns logits: of every new
// position (len(tokens) × Vocab) when all, else of the last one.
func (s *Session) Forward(tokens []int, all bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("cuda: forward of no tokens")
	}
	V := s.m.cfg.Vocab
	rows := 1
	if all {
		rows = len(tokens)
	}
	out := make([]float32, rows*V)
	err := s.run(tokens, func(done, n int, last bool) error {
		if all {
			if err := s.head(n, n); err != nil {
				return err
			}
			return download(out[done*V:(done+n)*V], s.logits, "logits")
		}
		if !last {
			return nil
		}
		if err := s.head(n, 1); err != nil {
			return err
		}
		return download(out, s.logits, "logits")
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Greedy appends tokens and returns the most likely next token, computed
// on the device (argmax_1) after masking the logits with mask (a bitset
// over the vocabulary, bit i%32 of word i/32; nil allows every token).
// Only the token id crosses back to the host.
func (s *Session) Greedy(tokens []int, mask []uint32) (int, error) {
	V := s.m.cfg.Vocab
	if len(tokens) == 0 {
		return 0, errors.New("cuda: greedy step of no tokens")
	}
	if mask != nil && len(mask) < ceilDiv(V, 32) {
		return 0, fmt.Errorf("cuda: mask of %d words for %d tokens", len(mask), V)
	}
	var next [1]int32
	err := s.run(tokens, func(done, n int, last bool) error {
		if !last {
			return nil
		}
		if err := s.head(n, 1); err != nil {
			return err
		}
		d := s.m.b.d
		if mask != nil {
			if err := upload(s.mask, mask[:ceilDiv(V, 32)], "mask"); err != nil {
				return err
			}
			if err := d.launch("apply_mask_1", grid1(ceilDiv(V, 256)), [3]int{256, 1, 1}, 0, s.logits, s.mask, V); err != nil {
				return err
			}
		}
		if err := d.launch("argmax_1", grid1(1), [3]int{1024, 1, 1}, 0, s.tok, s.logits, V); err != nil {
			return err
		}
		return download(next[:], s.tok, "token")
	})
	return int(next[0]), err
}

// run checks tokens, then runs them through every layer in chunks with the
// device lock held, calling after(done, n, last) after each chunk.
func (s *Session) run(tokens []int, after func(done, n int, last bool) error) error {
	c := &s.m.cfg
	if s.n+len(tokens) > c.Context {
		return fmt.Errorf("cuda: %d + %d tokens exceed the context of %d", s.n, len(tokens), c.Context)
	}
	for i, t := range tokens {
		if t < 0 || t >= c.Vocab {
			return fmt.Errorf("cuda: token %d at %d outside the vocabulary of %d", t, i, c.Vocab)
		}
	}
	start := s.n
	err := s.m.b.d.do(func() error {
		for done := 0; done < len(tokens); {
			n := min(sessionChunk, len(tokens)-done)
			if err := s.layers(tokens[done : done+n]); err != nil {
				return err
			}
			if err := after(done, n, done+n == len(tokens)); err != nil {
				return err
			}
			done += n
		}
		return syncDevice("forward")
	})
	if err != nil {
		s.n = start // the cache rows past start are garbage: roll back
		return fmt.Errorf("cuda: forward at position %d: %w", start, err)
	}
	s.tokens = append(s.tokens[:start], tokens...)
	return nil
}

// layers embeds n ≤ sessionChunk tokens at position s.n and runs them
// through every layer, leaving the residual stream in s.x and advancing
// s.n (device lock held).
func (s *Session) layers(tokens []int) error {
	m, d, c := s.m, s.m.b.d, &s.m.cfg
	n := len(tokens)
	H, Q, KV, F := c.Hidden, c.QDim(), c.KVDim(), c.FFN
	ids := make([]int32, n)
	for i, t := range tokens {
		ids[i] = int32(t)
	}
	if err := upload(s.ids, ids, "token ids"); err != nil {
		return err
	}
	embed := "embed_bf16_1"
	if m.embed.dt == kernels.F32 {
		embed = "embed_f32_1"
	}
	if err := d.launch(embed, grid1(n), [3]int{256, 1, 1}, 0, s.x, m.embed.ptr, s.ids, H); err != nil {
		return err
	}
	pos0 := s.n
	block := [3]int{256, 1, 1}
	for l := range m.layers {
		lw := &m.layers[l]
		kc, vc := s.layerKV(l)
		slots := Q/2 + KV/2 + KV
		a := model.AttentionSpec{Layer: l, N: n, Pos0: pos0, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Window: c.Window(l)}
		steps := []func() error{
			func() error { return d.launch("rmsnorm_1", grid1(n), block, 0, s.xb, s.x, lw.attnNorm, H, c.NormEps) },
			func() error { return m.matmul(s.qkv, s.xb, n, lw.qkv) },
			func() error {
				return d.launch("qkv_rope_1", grid1(ceilDiv(n*slots, 256)), block, 0, s.q, kc, vc, s.qkv, m.cos, m.sin,
					n, c.Heads, c.KVHeads, c.HeadDim, pos0)
			},
			func() error { return d.attention(&s.part, s.att, s.q, kc, vc, a, 0) },
			func() error { return m.matmul(s.tmp, s.att, n, lw.o) },
			func() error { return d.launch("add_1", grid1(ceilDiv(n*H, 256)), block, 0, s.x, s.x, s.tmp, n*H) },
			func() error { return d.launch("rmsnorm_1", grid1(n), block, 0, s.xb, s.x, lw.ffnNorm, H, c.NormEps) },
			func() error { return m.matmul(s.gu, s.xb, n, lw.gateUp) },
			func() error { return d.launch("swiglu_rows_1", grid1(ceilDiv(n*F, 256)), block, 0, s.ffn, s.gu, n, F) },
			func() error { return m.matmul(s.tmp, s.ffn, n, lw.down) },
			func() error { return d.launch("add_1", grid1(ceilDiv(n*H, 256)), block, 0, s.x, s.x, s.tmp, n*H) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("layer %d: %w", l, err)
			}
		}
	}
	s.n += n
	return nil
}

// head computes logits of the last rows of the n rows in s.x into s.logits
// (device lock held).
func (s *Session) head(n, rows int) error {
	m, c := s.m, &s.m.cfg
	H := c.Hidden
	x := s.x + devPtr(4*(n-rows)*H)
	if err := m.b.d.launch("rmsnorm_1", grid1(rows), [3]int{256, 1, 1}, 0, s.xb, x, m.norm, H, c.NormEps); err != nil {
		return err
	}
	return m.matmul(s.logits, s.xb, rows, m.head)
}

// matmul launches y = x · Wᵀ with the kernel Backend would choose.
func (m *Model) matmul(y, x devPtr, n int, w devMat) error {
	return m.b.d.launchMatMul(m.b.pickMatMul(n, w.dt), y, x, w.ptr, n, w.rows, w.cols)
}

// Truncate drops every position ≥ n.
func (s *Session) Truncate(n int) error {
	if n < 0 || n > s.n {
		return fmt.Errorf("cuda: truncate to %d, cache holds %d positions", n, s.n)
	}
	s.n = n
	return nil
}

// Fork returns a new session holding a device copy of s's cached
// positions (cuMemcpyDtoD of the filled rows of every layer).
func (s *Session) Fork() (*Session, error) {
	f, err := s.m.NewSession()
	if err != nil {
		return nil, err
	}
	c := &s.m.cfg
	bytes := int64(s.n) * int64(c.KVDim()) * 4
	err = s.m.b.d.do(func() error {
		if bytes == 0 {
			return nil
		}
		for l := 0; l < c.Layers; l++ {
			sk, sv := s.layerKV(l)
			fk, fv := f.layerKV(l)
			if err := cu.MemcpyDtoD(fk, sk, bytes); err != nil {
				return fmt.Errorf("cuda: cuMemcpyDtoD (fork, layer %d keys): %w", l, err)
			}
			if err := cu.MemcpyDtoD(fv, sv, bytes); err != nil {
				return fmt.Errorf("cuda: cuMemcpyDtoD (fork, layer %d values): %w", l, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	f.n = s.n
	f.tokens = append([]int(nil), s.tokens[:s.n]...)
	return f, nil
}

// Close frees the session's device memory.
func (s *Session) Close() error {
	return s.m.b.d.do(func() error {
		return errors.Join(s.kv.free(), s.act.free(), s.part.free())
	})
}
