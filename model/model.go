package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/weights"
)

// Model is a loaded LLaMA-architecture decoder. It is immutable after
// construction and safe for concurrent use: each Session holds its own
// activations and KV cache, on the model's device.
type Model struct {
	cfg   Config
	dev   Device
	owned bool // dev was created by the model, which closes it
	w     *Weights
	res   Resident  // w on dev
	src   io.Closer // the checkpoint the weights alias, closed by Close
	eos   []int     // end-of-sequence ids from config.json

	closeOnce sync.Once
	closeErr  error

	// batchLogits holds DecodeBatch's flat logits buffers (*[]float32)
	// between calls.
	batchLogits sync.Pool
}

// Options tune how a model is built.
type Options struct {
	// Device computes the forward pass; nil means a CPU with Threads
	// threads, owned (and closed) by the model.
	Device Device
	// CloseDevice gives Device to the model: it is closed by the model's
	// Close, or by New, NewRandom or Load when they fail.
	CloseDevice bool
	// Threads for the default CPU device; ≤ 0 means one per core.
	Threads int
	// Context, when > 0, caps the longest sequence below the config's, to
	// save the RoPE table and bound the cache.
	Context int
	// FastBF16 makes the default CPU device NewCPUFast: BF16 products
	// round activations to BF16 (faster prefill, slightly less exact).
	FastBF16 bool
	// Memory bounds the model's Footprint (what it allocates for itself
	// and one session at its full context), checked before allocating any
	// of it; 0 means the memory this process may use (the machine's, or
	// its control group's limit), negative no check.
	Memory int64
}

// failed closes a device given to the model that could not be built and
// returns err (joined with any failure to close).
func (o Options) failed(err error) error {
	if o.CloseDevice && o.Device != nil {
		err = errors.Join(err, o.Device.Close())
	}
	return err
}

// Source yields named tensors; *weights.Checkpoint and *weights.File
// satisfy it.
type Source interface {
	Tensor(name string) (*weights.Tensor, error)
}

// Load opens the Hugging Face checkpoint in dir (config.json plus
// safetensors) and binds its weights. The model keeps the checkpoint mapped
// until Close.
func Load(ctx context.Context, dir string, opts Options) (*Model, error) {
	ck, err := weights.Open(dir)
	if err != nil {
		return nil, opts.failed(fmt.Errorf("model: load %s: %w", dir, err))
	}
	return FromCheckpoint(ctx, ck, opts)
}

// FromCheckpoint binds the weights of an opened checkpoint (weights.Open,
// or weights.OpenFS for one embedded in the binary), refusing one that
// holds tensors this architecture does not use. The model owns ck: its
// Close closes it, and so does FromCheckpoint when it fails.
func FromCheckpoint(ctx context.Context, ck *weights.Checkpoint, opts Options) (*Model, error) {
	dir := ck.Dir
	cfg, err := FromWeights(ck.Config)
	if err != nil {
		ck.Close()
		return nil, opts.failed(fmt.Errorf("model: load %s: %w", dir, err))
	}
	m, err := New(ctx, cfg, ck, opts)
	if err != nil {
		ck.Close()
		return nil, fmt.Errorf("model: load %s: %w", dir, err)
	}
	// A tensor nobody bound (a bias, an extra norm) means the checkpoint is
	// not the architecture computed here: refuse rather than run it wrongly.
	var extra []string
	for _, n := range ck.Unused() {
		if strings.HasSuffix(n, "rotary_emb.inv_freq") || n == weights.LMHead && cfg.TieWordEmbeddings {
			continue
		}
		extra = append(extra, n)
	}
	if len(extra) > 0 {
		m.Close()
		ck.Close()
		if len(extra) > 5 {
			extra = append(extra[:5], fmt.Sprintf("and %d more", len(extra)-5))
		}
		return nil, fmt.Errorf("model: load %s: tensors this architecture does not use: %s", dir, strings.Join(extra, ", "))
	}
	m.src = ck
	m.eos = append([]int(nil), ck.Config.EOSTokenIDs...)
	return m, nil
}

// binder fetches tensors from a Source, checking presence, shape and
// element type and collecting every problem so that one error lists them
// all; then (once all are there and the model fits in memory) converts
// them.
type binder struct {
	src    Source
	errs   []error
	bound  []*weights.Tensor          // checked for NaN and Inf once all are bound
	byName map[string]*weights.Tensor // the bound tensors
}

// tensor binds the named tensor after checking that it has shape and a
// floating-point element type.
func (b *binder) tensor(name string, shape ...int) *weights.Tensor {
	t, err := b.src.Tensor(name)
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("tensor %s: %w", name, err))
		return nil
	}
	if !slices.Equal(t.Shape, shape) {
		b.errs = append(b.errs, fmt.Errorf("tensor %s has shape %v, want %v", name, t.Shape, shape))
		return nil
	}
	if !t.DType.IsFloat() && !t.DType.Quantized() {
		b.errs = append(b.errs, fmt.Errorf("tensor %s is %s, not a floating-point or quantized type", name, t.DType))
		return nil
	}
	b.bound = append(b.bound, t)
	b.byName[name] = t
	return t
}

// copied returns the bytes that binding the bound tensors of a model of
// shape cfg copies (the fused QKV and gate/up matrices unless all their
// parts are quantized, F16 widened to F32, the norms, and the packed
// copies newModel makes of quantized matrices within packBudget), and the
// element type of its attention projections (which the CPU's KV cache
// takes).
func (b *binder) copied(cfg *Config) (int64, kernels.DType) {
	size := func(names ...string) int64 { // one matrix made of names, stacked
		var n, elem int64 = 0, 2
		allQuant := true
		for _, name := range names {
			t := b.byName[name]
			n = addSat(n, int64(t.NumElements()))
			if t.DType != weights.BF16 {
				elem = 4
			}
			allQuant = allQuant && t.DType.Quantized()
		}
		if allQuant {
			return 0 // the parts of one matrix, aliasing the checkpoint (stack)
		}
		return mulSat(n, elem)
	}
	var n, quantized int64
	qkvDType := kernels.BF16
	for name, t := range b.byName {
		switch {
		case len(t.Shape) == 1:
			n = addSat(n, mulSat(int64(t.NumElements()), 4)) // a norm, cloned
		case t.DType == weights.F16:
			n = addSat(n, mulSat(int64(t.NumElements()), 4)) // widened; fused ones are counted below instead
		case t.DType.Quantized() && (name != weights.EmbedTokens || cfg.TieWordEmbeddings):
			quantized = addSat(quantized, int64(len(t.Data)))
		}
		if strings.HasSuffix(name, weights.QProj) && (t.DType == weights.F32 || t.DType == weights.F16) {
			qkvDType = kernels.F32 // else BF16 or quantized: the same KV cache (KVCacheDType)
		}
	}
	if quantized <= packBudget {
		n = addSat(n, quantized) // packed copies, about the size of the blocks
	}
	for l := range cfg.NumHiddenLayers {
		name := func(suffix string) string { return weights.LayerTensor(l, suffix) }
		n = addSat(n, size(name(weights.QProj), name(weights.KProj), name(weights.VProj)))
		n = addSat(n, size(name(weights.GateProj), name(weights.UpProj)))
	}
	return n, qkvDType
}

// vec converts a bound 1-D tensor to float32, copied.
func (b *binder) vec(name string) []float32 {
	v, err := b.byName[name].F32()
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("tensor %s: %w", name, err))
		return nil
	}
	return slices.Clone(v) // small; do not alias the mapping
}

// mat converts a bound rows × cols tensor, keeping BF16 as BF16 and
// quantized types as they are (zero-copy, aliasing the checkpoint), F32 as
// F32; F16 is widened to F32.
func (b *binder) mat(name string) *kernels.Mat {
	t := b.byName[name]
	m := &kernels.Mat{Rows: t.Shape[0], Cols: t.Shape[1]}
	var err error
	switch kd, _ := t.DType.Kernels(); {
	case t.DType.Quantized():
		m.DType, m.Q = kd, t.Data
		err = m.Check()
	case t.DType == weights.BF16:
		m.DType = kernels.BF16
		m.BF16, err = t.BF16()
	default:
		m.DType = kernels.F32
		m.F32, err = t.F32()
	}
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("tensor %s: %w", name, err))
		return nil
	}
	return m
}

// stack concatenates matrices of equal Cols by rows into one matrix. All
// BF16 stays BF16, in a new matrix; quantized matrices (all of them
// quantized) become the parts of a matrix that aliases them (kernels.Mat's
// Parts: a Q4_K_M file mixes Q4_K and Q6_K in one projection, and a copy
// of a 32B model's would not fit beside the mapping); any other mix is
// widened to F32. A new matrix asks for huge pages
// (kernels.AdviseHugePages): decode streams all of it every token.
func stack(ms ...*kernels.Mat) *kernels.Mat {
	rows, cols := 0, ms[0].Cols
	allBF16, allQuant := true, true
	for _, m := range ms {
		rows += m.Rows
		allBF16 = allBF16 && m.DType == kernels.BF16
		allQuant = allQuant && m.DType.Quantized()
	}
	out := &kernels.Mat{Rows: rows, Cols: cols}
	if allQuant {
		out.DType = ms[0].DType
		out.Parts = ms
		return out
	}
	if allBF16 {
		out.DType = kernels.BF16
		out.BF16 = make([]uint16, 0, rows*cols)
		kernels.AdviseHugePages(out.BF16[:rows*cols])
		for _, m := range ms {
			out.BF16 = append(out.BF16, m.BF16[:m.Rows*cols]...)
		}
		return out
	}
	out.DType = kernels.F32
	out.F32 = make([]float32, 0, rows*cols)
	kernels.AdviseHugePages(out.F32[:rows*cols])
	for _, m := range ms {
		off := len(out.F32)
		out.F32 = out.F32[:off+m.Rows*cols]
		for r := range m.Rows {
			m.Row(out.F32[off+r*cols:off+(r+1)*cols], r)
		}
	}
	return out
}

// New binds the weights of a model of shape cfg from src, by the Hugging
// Face tensor names of package weights' table (weights.EmbedTokens,
// weights.LayerTensor(l, weights.QProj), …; lm_head unless tied). Every
// tensor is checked for presence, shape, a floating-point type and finite
// values (a NaN or Inf weight would turn every logit into NaN; the check
// reads each weight once, on opts.Threads goroutines); the error lists all
// that are wrong. Nothing is allocated before the model's Footprint is
// found to fit in opts.Memory. Weights not fused at load alias src, which
// must stay open while the model is used.
func New(ctx context.Context, cfg Config, src Source, opts Options) (_ *Model, err error) {
	defer func() {
		if err != nil {
			err = opts.failed(err)
		}
	}()
	if opts.Context > 0 && opts.Context < cfg.MaxPositionEmbeddings {
		cfg.MaxPositionEmbeddings = opts.Context
	}
	if err := Check(&cfg); err != nil {
		return nil, err
	}
	b := &binder{src: src, byName: map[string]*weights.Tensor{}}
	for _, s := range weights.LlamaTensors(&cfg) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("model: binding weights: %w", err)
		}
		b.tensor(s.Name, s.Shape...)
		if len(b.errs) > 20 {
			break
		}
	}
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("model: %d weight problem(s): %w", len(b.errs), errors.Join(b.errs...))
	}
	copied, dt := b.copied(&cfg)
	if err := checkMemory(&cfg, FootprintOf(&cfg, dt, copied, opts.Threads), opts.Memory); err != nil {
		return nil, err
	}
	if err := weights.CheckFinite(ctx, opts.Threads, b.bound...); err != nil {
		return nil, fmt.Errorf("model: 1 weight problem(s): %w", err)
	}
	embed := b.mat(weights.EmbedTokens)
	head := embed
	if !cfg.TieWordEmbeddings {
		head = b.mat(weights.LMHead)
	}
	norm := b.vec(weights.FinalNorm)
	layers := make([]LayerWeights, cfg.NumHiddenLayers)
	for l := range layers {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("model: binding weights: %w", err)
		}
		lw := &layers[l]
		name := func(suffix string) string { return weights.LayerTensor(l, suffix) }
		lw.AttnNorm = b.vec(name(weights.InputNorm))
		lw.FFNNorm = b.vec(name(weights.PostNorm))
		q, k, v := b.mat(name(weights.QProj)), b.mat(name(weights.KProj)), b.mat(name(weights.VProj))
		lw.O = b.mat(name(weights.OProj))
		gate, up := b.mat(name(weights.GateProj)), b.mat(name(weights.UpProj))
		lw.Down = b.mat(name(weights.DownProj))
		if len(b.errs) > 0 {
			break
		}
		lw.QKV = stack(q, k, v)
		lw.GateUp = stack(gate, up)
	}
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("model: %d weight problem(s): %w", len(b.errs), errors.Join(b.errs...))
	}
	return newModel(cfg, &Weights{Embed: embed, Head: head, Norm: norm, Layers: layers}, opts)
}

// packBudget is the most bytes of quantized matrices that newModel gives
// packed copies (kernels.Pack: faster prefill and decode,
// about as much memory again beside the weights): a 32B model's
// 19 GB must not double on a 24 GB machine.
const packBudget = 4 << 30

// newModel makes w resident on opts' device (a CPU of its own when none).
// Quantized matrices get their packed copies (kernels.Pack) first, on CPUs
// with the kernels that use them and within packBudget, before any device
// or session shares them.
func newModel(cfg Config, w *Weights, opts Options) (*Model, error) {
	mats := []*kernels.Mat{w.Head}
	for _, l := range w.Layers {
		mats = append(mats, l.QKV, l.O, l.GateUp, l.Down)
	}
	var total int64
	for _, m := range mats {
		total += m.Bytes()
	}
	if total <= packBudget {
		for _, m := range mats {
			kernels.Pack(m)
		}
	}
	w.Rope = NewRopeTable(&cfg, cfg.MaxPositionEmbeddings)
	m := &Model{cfg: cfg, w: w, dev: opts.Device, owned: opts.CloseDevice}
	if m.dev == nil {
		if opts.FastBF16 {
			m.dev = NewCPUFast(opts.Threads)
		} else {
			m.dev = NewCPU(opts.Threads)
		}
		m.owned = true
	}
	var err error
	if m.res, err = m.dev.Load(cfg, w); err != nil {
		err = fmt.Errorf("model: loading the weights on %s: %w", m.dev.Name(), err)
		if opts.Device == nil { // the CPU made here; a given one is closed by the caller's opts.failed
			err = errors.Join(err, m.dev.Close())
		}
		return nil, err
	}
	return m, nil
}

// NewRandom builds a model of shape cfg with random weights of the given
// dtype (for benchmarks and tests; no checkpoint needed). Matrices are
// uniform in ±1/sqrt(cols), norms near 1, so activations stay O(1).
func NewRandom(ctx context.Context, cfg Config, dt kernels.DType, seed uint64, opts Options) (_ *Model, err error) {
	defer func() {
		if err != nil {
			err = opts.failed(err)
		}
	}()
	if opts.Context > 0 && opts.Context < cfg.MaxPositionEmbeddings {
		cfg.MaxPositionEmbeddings = opts.Context
	}
	if err := Check(&cfg); err != nil {
		return nil, err
	}
	if dt != kernels.F32 && dt != kernels.BF16 {
		return nil, fmt.Errorf("model: random weights of dtype %v not supported (quantized: NewRandomQuant)", dt)
	}
	if err := checkMemory(&cfg, FootprintOf(&cfg, dt, mulSat(cfg.Params(), int64(dt.Size())), opts.Threads), opts.Memory); err != nil {
		return nil, err
	}
	w, err := randomWeights(ctx, cfg, dt, seed, opts.Threads)
	if err != nil {
		return nil, err
	}
	return newModel(cfg, w, opts)
}

// NewRandomQuant is NewRandom's F32 weights quantized as llama.cpp's
// llama-quantize quantizes a model for the named mix ("q8_0", "q4_0",
// "q4_k_m": weights.QuantMix), each of q, k, v, gate and up in its own
// type, fused as the parts of one matrix (for tests; benchmarks read GGUF
// files, which llama.cpp reads too).
func NewRandomQuant(ctx context.Context, cfg Config, mix string, seed uint64, opts Options) (_ *Model, err error) {
	defer func() {
		if err != nil {
			err = opts.failed(err)
		}
	}()
	if opts.Context > 0 && opts.Context < cfg.MaxPositionEmbeddings {
		cfg.MaxPositionEmbeddings = opts.Context
	}
	if err := Check(&cfg); err != nil {
		return nil, err
	}
	// The F32 weights are drawn first, then quantized.
	if err := checkMemory(&cfg, FootprintOf(&cfg, kernels.F32, mulSat(cfg.Params(), 4), opts.Threads), opts.Memory); err != nil {
		return nil, err
	}
	typeOf, _, err := weights.QuantMix(&cfg, mix)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	w, err := randomWeights(ctx, cfg, kernels.F32, seed, opts.Threads)
	if err != nil {
		return nil, err
	}
	var errs []error
	// quant returns rows [r0, r1) of m in the type typeOf gives name.
	quant := func(m *kernels.Mat, r0, r1 int, name string) *kernels.Mat {
		dt := typeOf(name, []int{r1 - r0, m.Cols})
		kd, ok := dt.Kernels()
		if !ok || !kd.Quantized() {
			return &kernels.Mat{Rows: r1 - r0, Cols: m.Cols, DType: kernels.F32, F32: m.F32[r0*m.Cols : r1*m.Cols]}
		}
		q := &kernels.Mat{Rows: r1 - r0, Cols: m.Cols, DType: kd, Q: make([]byte, kd.Bytes(r1-r0, m.Cols))}
		if err := kernels.QuantizeRow(kd, q.Q, m.F32[r0*m.Cols:r1*m.Cols]); err != nil {
			errs = append(errs, fmt.Errorf("model: %s: %w", name, err))
		}
		return q
	}
	Q, KV, F := cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize
	emb := quant(w.Embed, 0, w.Embed.Rows, weights.EmbedTokens)
	if w.Head == w.Embed {
		w.Embed, w.Head = emb, emb
	} else {
		w.Embed, w.Head = emb, quant(w.Head, 0, w.Head.Rows, weights.LMHead)
	}
	for l := range w.Layers {
		lw := &w.Layers[l]
		name := func(s string) string { return weights.LayerTensor(l, s) }
		lw.QKV = stack(quant(lw.QKV, 0, Q, name(weights.QProj)), quant(lw.QKV, Q, Q+KV, name(weights.KProj)), quant(lw.QKV, Q+KV, Q+2*KV, name(weights.VProj)))
		lw.O = quant(lw.O, 0, lw.O.Rows, name(weights.OProj))
		lw.GateUp = stack(quant(lw.GateUp, 0, F, name(weights.GateProj)), quant(lw.GateUp, F, 2*F, name(weights.UpProj)))
		lw.Down = quant(lw.Down, 0, lw.Down.Rows, name(weights.DownProj))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return newModel(cfg, w, opts)
}

// randomWeights are NewRandom's weights.
func randomWeights(ctx context.Context, cfg Config, dt kernels.DType, seed uint64, threads int) (*Weights, error) {
	// Each matrix gets its own generator, so they fill in parallel (on a
	// pool of opts.Threads threads, once all are allocated).
	var fills []func()
	stream := uint64(0)
	mat := func(rows, cols int) *kernels.Mat {
		m := &kernels.Mat{Rows: rows, Cols: cols, DType: dt}
		n := rows * cols
		if dt == kernels.BF16 {
			m.BF16 = make([]uint16, n)
			kernels.AdviseHugePages(m.BF16) // before the fill faults it in
		} else {
			m.F32 = make([]float32, n)
			kernels.AdviseHugePages(m.F32) // before the fill faults it in
		}
		stream++
		rng := rand.New(rand.NewPCG(seed, stream))
		fills = append(fills, func() {
			scale := float32(2 / math.Sqrt(float64(cols)) / (1 << 24))
			for i := 0; i < n; {
				r := rng.Uint64()
				for j := 0; j < 2 && i < n; j, i = j+1, i+1 {
					v := float32(int32(r>>(40-32*j))&(1<<24-1)-(1<<23)) * scale
					if m.BF16 != nil {
						m.BF16[i] = kernels.F32ToBF16(v)
					} else {
						m.F32[i] = v
					}
				}
			}
		})
		return m
	}
	vrng := rand.New(rand.NewPCG(seed, 0))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1 + float32(vrng.Float64()-0.5)*0.2
		}
		return v
	}
	H, Q, KV, F, V := cfg.HiddenSize, cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize, cfg.VocabSize
	embed := mat(V, H)
	head := embed
	if !cfg.TieWordEmbeddings {
		head = mat(V, H)
	}
	layers := make([]LayerWeights, cfg.NumHiddenLayers)
	for l := range layers {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("model: random weights: %w", err)
		}
		layers[l] = LayerWeights{AttnNorm: vec(H), FFNNorm: vec(H),
			QKV: mat(Q+2*KV, H), O: mat(H, Q), GateUp: mat(2*F, H), Down: mat(H, F)}
	}
	pool := kernels.NewPool(threads)
	pool.For(len(fills), 1, func(lo, hi int) {
		for _, fill := range fills[lo:hi] {
			fill()
		}
	})
	pool.Close()
	return &Weights{Embed: embed, Head: head, Norm: vec(H), Layers: layers}, nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// EOS returns the end-of-sequence token ids of the checkpoint's config
// (none for random models).
func (m *Model) EOS() []int { return m.eos }

// WithDevice returns a model sharing m's host weights that computes on
// dev (for example a CPU with another thread count, or a GPU), loading
// them there. The copy does not own dev or m's checkpoint: closing it
// releases only its resident weights, and it must not be used after m is
// closed.
func (m *Model) WithDevice(dev Device) (*Model, error) {
	res, err := dev.Load(m.cfg, m.w)
	if err != nil {
		return nil, fmt.Errorf("model: loading the weights on %s: %w", dev.Name(), err)
	}
	return &Model{cfg: m.cfg, dev: dev, w: m.w, res: res, eos: m.eos}, nil
}

// WeightDType returns the element type of the model's matrices (that of
// the output head; a checkpoint may mix, and a quantized one does: see
// WeightBytes for their size).
func (m *Model) WeightDType() kernels.DType { return m.w.Head.DType }

// Device returns the device the model computes on.
func (m *Model) Device() Device { return m.dev }

// WeightBytes returns the bytes of weights read by one decode step: every
// matrix once (the embedding row lookup is negligible unless tied, where the
// head reads it anyway).
func (m *Model) WeightBytes() int64 {
	n := m.w.Head.Bytes()
	for _, l := range m.w.Layers {
		n += l.QKV.Bytes() + l.O.Bytes() + l.GateUp.Bytes() + l.Down.Bytes()
	}
	return n
}

// Close releases the resident weights, the device (when the model
// created it) and the checkpoint mapping (when Load opened it). The model
// and its sessions must not be used afterwards.
func (m *Model) Close() error {
	m.closeOnce.Do(func() {
		errs := []error{m.res.Close()}
		if m.owned {
			errs = append(errs, m.dev.Close())
		}
		if m.src != nil {
			errs = append(errs, m.src.Close())
		}
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}
