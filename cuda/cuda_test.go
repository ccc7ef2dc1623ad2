//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/kernels/kerneltest"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/weights"
)

// Note: gorgonia.org/cu's init exits the process (status 1, "Error in
// initialization") when cuInit fails, before any test runs. On a machine
// whose driver initialises but has no usable GPU, New fails and every test
// skips with the reason.

var (
	testBackend *Backend
	testErr     error
)

func TestMain(m *testing.M) {
	testBackend, testErr = New(Options{})
	code := m.Run()
	if testBackend != nil {
		if err := testBackend.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func backend(t *testing.T) *Backend {
	t.Helper()
	if testErr != nil {
		t.Skipf("no usable GPU: %v", testErr)
	}
	return testBackend
}

// checkedOps fails the test on any recorded device error after each op.
type checkedOps struct {
	*Ops
	t *testing.T
}

func (c checkedOps) after() {
	c.t.Helper()
	if err := c.Err(); err != nil {
		c.t.Fatal(err)
	}
}

func (c checkedOps) Dot(a, b []float32) float32 { defer c.after(); return c.Ops.Dot(a, b) }
func (c checkedOps) Axpy(d []float32, a float32, x []float32) {
	defer c.after()
	c.Ops.Axpy(d, a, x)
}
func (c checkedOps) Scale(x []float32, a float32) { defer c.after(); c.Ops.Scale(x, a) }
func (c checkedOps) Add(d, a, b []float32)        { defer c.after(); c.Ops.Add(d, a, b) }
func (c checkedOps) RMSNorm(d, x, w []float32, eps float32) {
	defer c.after()
	c.Ops.RMSNorm(d, x, w, eps)
}
func (c checkedOps) Softmax(x []float32)      { defer c.after(); c.Ops.Softmax(x) }
func (c checkedOps) SwiGLU(d, g, u []float32) { defer c.after(); c.Ops.SwiGLU(d, g, u) }
func (c checkedOps) DotRows(d, x, m []float32, s int) {
	defer c.after()
	c.Ops.DotRows(d, x, m, s)
}
func (c checkedOps) AxpyRows(d, a, m []float32, s int) {
	defer c.after()
	c.Ops.AxpyRows(d, a, m, s)
}

// TestConformance runs package kernels' conformance suite on the GPU.
func TestConformance(t *testing.T) {
	b := backend(t)
	kerneltest.TestAll(t, checkedOps{b.Ops(), t})
}

func nmse(got []float32, ref []float64) float64 {
	v, ok, first := kerneltest.NMSE(got, ref)
	if !ok {
		return math.Inf(1) + float64(first)
	}
	return v
}

func randF32(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(scale * (2*r.Float64() - 1))
	}
	return x
}

// TestGEMMVariants checks every matmul kernel against the float64
// reference on the same BF16 weights: the float32-exact ones at 1e-7, the
// bf16-activation GEMM at 1e-5.
func TestGEMMVariants(t *testing.T) {
	b := backend(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, rows, cols int }{{1, 4096, 4096}, {7, 100, 333}, {16, 64, 64}, {100, 257, 1000}, {513, 130, 4099}} {
		w := &kernels.Mat{Rows: c.rows, Cols: c.cols, DType: kernels.BF16, BF16: make([]uint16, c.rows*c.cols)}
		kernels.F32ToBF16Slice(w.BF16, randF32(r, c.rows*c.cols, 1))
		x := randF32(r, c.n*c.cols, 1)
		ref := make([]float64, c.n*c.rows)
		for i := 0; i < c.n; i++ {
			for j := 0; j < c.rows; j++ {
				var s float64
				for k := 0; k < c.cols; k++ {
					s += float64(x[i*c.cols+k]) * float64(kernels.BF16ToF32(w.BF16[j*c.cols+k]))
				}
				ref[i*c.rows+j] = s
			}
		}
		for kernel, limit := range map[string]float64{"gemv_bf16_1": 1e-7, "gemv_bf16_2": 1e-7, "gemm_bf16_1": 1e-5, "gemm_bf16_2": 1e-7} {
			dst := make([]float32, c.n*c.rows)
			err := b.d.do(func() error { return b.matMulLocked(dst, x, c.n, w, kernel) })
			require.NoError(t, err)
			e := nmse(dst, ref)
			t.Logf("%s n=%d %dx%d: NMSE %.3g", kernel, c.n, c.rows, c.cols, e)
			require.LessOrEqual(t, e, limit, "%s n=%d %dx%d", kernel, c.n, c.rows, c.cols)
		}
	}
}

// TestAttentionKernel checks the split-K attention against RefAttention
// over prefill and decode shapes, GQA and sliding windows, with the key
// rows starting at kpos0 as the backend uploads them.
func TestAttentionKernel(t *testing.T) {
	b := backend(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ n, pos0, heads, kv, hd, window int }{
		{1, 0, 4, 2, 64, 0}, {1, 4000, 32, 8, 128, 0}, {1, 4000, 32, 8, 128, 512},
		{37, 0, 8, 2, 64, 0}, {64, 100, 6, 3, 96, 16}, {5, 9, 2, 1, 32, 0}, {3, 70, 4, 4, 256, 0}, {2, 3, 2, 1, 40, 0},
	} {
		name := fmt.Sprintf("n=%d/pos0=%d/h=%d/kv=%d/hd=%d/w=%d", c.n, c.pos0, c.heads, c.kv, c.hd, c.window)
		kpos0 := 0
		if c.window > 0 {
			kpos0 = max(0, c.pos0-c.window+1)
		}
		rows := c.pos0 + c.n - kpos0
		kvDim := c.kv * c.hd
		q := randF32(r, c.n*c.heads*c.hd, 2)
		k := randF32(r, rows*kvDim, 2)
		v := randF32(r, rows*kvDim, 1)
		ref := RefAttention(q, k, v, c.n, c.heads, c.kv, c.hd, c.pos0, kpos0, c.window)
		out := make([]float32, len(ref))
		a := model.AttentionSpec{N: c.n, Pos0: c.pos0, Heads: c.heads, KVHeads: c.kv, HeadDim: c.hd, Window: c.window}
		err := b.d.do(func() error {
			bufs := make([]buffer, 4)
			defer func() {
				for i := range bufs {
					_ = bufs[i].free()
				}
			}()
			for i, s := range [][]float32{q, k, v, out} {
				var err error
				if bufs[i], err = alloc(int64(4*len(s)), "test"); err != nil {
					return err
				}
				if err := upload(bufs[i].ptr, s, "test"); err != nil {
					return err
				}
			}
			if err := b.d.attention(&b.pBuf, bufs[3].ptr, bufs[0].ptr, bufs[1].ptr, bufs[2].ptr, a, kpos0); err != nil {
				return err
			}
			return download(out, bufs[3].ptr, "out")
		})
		require.NoError(t, err, name)
		e := nmse(out, ref)
		t.Logf("%s: NMSE %.3g", name, e)
		require.LessOrEqual(t, e, 1e-7, name)
	}
}

// TestSmallKernels checks RoPE, embedding lookup, argmax and the token
// mask against the references in ref.go.
func TestSmallKernels(t *testing.T) {
	b := backend(t)
	r := rand.New(rand.NewPCG(5, 6))
	cfg, err := model.Preset("1.8b")
	require.NoError(t, err)
	cfg.RopeScaling = &model.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192}
	const n, pos0 = 5, 30000
	cos, sin := RopeTables(&cfg, pos0+n)
	x := randF32(r, n*cfg.Heads*cfg.HeadDim, 1)
	want := append([]float32(nil), x...)
	RefRoPE(want, cos, sin, n, cfg.Heads, cfg.HeadDim, pos0)

	const vocab, d = 50000, 96
	table := &kernels.Mat{Rows: vocab, Cols: d, DType: kernels.BF16, BF16: make([]uint16, vocab*d)}
	kernels.F32ToBF16Slice(table.BF16, randF32(r, vocab*d, 1))
	ids := []int32{0, 49999, 17, 17}
	logits := randF32(r, 3*vocab, 5)
	logits[vocab+123] = 100 // a clear winner in row 1
	mask := make([]uint32, ceilDiv(vocab, 32))
	for i := range mask {
		mask[i] = r.Uint32()
	}

	gotX := append([]float32(nil), x...)
	gotEmb := make([]float32, len(ids)*d)
	gotArg := make([]int32, 3)
	gotMasked := append([]float32(nil), logits[:vocab]...)
	err = b.d.do(func() error {
		var bufs []buffer
		defer func() {
			for i := range bufs {
				_ = bufs[i].free()
			}
		}()
		var allocErr error
		up := func(bytes int) devPtr {
			bb, err := alloc(int64(bytes), "test")
			if err != nil && allocErr == nil {
				allocErr = err
			}
			bufs = append(bufs, bb)
			return bb.ptr
		}
		xp, cp, sp := up(4*len(gotX)), up(4*len(cos)), up(4*len(sin))
		tp, ip, ep := up(2*len(table.BF16)), up(4*len(ids)), up(4*len(gotEmb))
		lp, ap, mp := up(4*len(logits)), up(4*3), up(4*len(mask))
		if allocErr != nil {
			return allocErr
		}
		for _, e := range []error{upload(xp, gotX, "x"), upload(cp, cos, "cos"), upload(sp, sin, "sin"),
			upload(tp, table.BF16, "table"), upload(ip, ids, "ids"), upload(lp, logits, "logits"), upload(mp, mask, "mask")} {
			if e != nil {
				return e
			}
		}
		pairs := n * cfg.Heads * cfg.HeadDim / 2
		if err := b.d.launch("rope_1", grid1(ceilDiv(pairs, 256)), [3]int{256, 1, 1}, 0, xp, cp, sp, n, cfg.Heads, cfg.HeadDim, pos0); err != nil {
			return err
		}
		if err := b.d.launch("embed_bf16_1", grid1(len(ids)), [3]int{128, 1, 1}, 0, ep, tp, ip, d); err != nil {
			return err
		}
		if err := b.d.launch("argmax_1", grid1(3), [3]int{1024, 1, 1}, 0, ap, lp, vocab); err != nil {
			return err
		}
		if err := b.d.launch("apply_mask_1", grid1(ceilDiv(vocab, 256)), [3]int{256, 1, 1}, 0, lp, mp, vocab); err != nil {
			return err
		}
		for _, e := range []error{download(gotX, xp, "x"), download(gotEmb, ep, "emb"), download(gotArg, ap, "argmax"),
			download(gotMasked, lp, "masked")} {
			if e != nil {
				return e
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.InDeltaSlice(t, want, gotX, 1e-5, "rope")
	for i, id := range ids {
		for j := 0; j < d; j++ {
			require.Equal(t, kernels.BF16ToF32(table.BF16[int(id)*d+j]), gotEmb[i*d+j], "embedding")
		}
	}
	for row := 0; row < 3; row++ {
		require.Equal(t, int32(RefArgmax(logits[row*vocab:(row+1)*vocab])), gotArg[row], "argmax row %d", row)
	}
	require.Equal(t, int32(vocab+123-vocab), gotArg[1])
	wantMasked := append([]float32(nil), logits[:vocab]...)
	RefApplyMask(wantMasked, mask)
	require.Equal(t, wantMasked, gotMasked, "mask")
}

// TestLogitsMatchCPU runs a small random model (GQA, a sliding-window
// layer, llama3 RoPE scaling, BF16 weights) on the CPU engine and on the
// GPU backend: prefill of a prompt longer than the GEMM threshold, then
// greedy decode steps, a Fork and a Truncate. Logits must agree to NMSE ≤
// 1e-3 (they agree far better: every kernel is float32-accurate).
func TestLogitsMatchCPU(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	cfg := model.Config{Hidden: 256, Layers: 3, Heads: 8, KVHeads: 2, HeadDim: 32, FFN: 512, Vocab: 1000,
		NormEps: 1e-5, RopeTheta: 500000, Context: 512, Windows: []int{0, 24, 0},
		RopeScaling: &model.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 64}}
	cpuModel, err := model.NewRandom(ctx, cfg, kernels.BF16, 7, model.Options{Threads: 2})
	require.NoError(t, err)
	defer cpuModel.Close()
	gpuModel := cpuModel.WithBackend(b)

	r := rand.New(rand.NewPCG(8, 9))
	prompt := make([]int, 70)
	for i := range prompt {
		prompt[i] = r.IntN(cfg.Vocab)
	}
	cs, gs := cpuModel.NewSession(), gpuModel.NewSession()
	compare := func(what string, c, g []float32) {
		t.Helper()
		ref := make([]float64, len(c))
		for i, v := range c {
			ref[i] = float64(v)
		}
		e := nmse(g, ref)
		t.Logf("%s: NMSE %.3g", what, e)
		require.LessOrEqual(t, e, 1e-3, what)
	}
	cl, err := cs.Forward(ctx, prompt, true)
	require.NoError(t, err)
	gl, err := gs.Forward(ctx, prompt, true)
	require.NoError(t, err)
	compare("prefill (all rows)", cl, gl)
	tok := RefArgmax(cl[len(cl)-cfg.Vocab:])
	for step := 0; step < 8; step++ {
		cl, err = cs.Forward(ctx, []int{tok}, false)
		require.NoError(t, err)
		gl, err = gs.Forward(ctx, []int{tok}, false)
		require.NoError(t, err)
		compare(fmt.Sprintf("decode step %d", step), cl, gl)
		tok = RefArgmax(cl)
	}
	// Roll back into the window and continue on a fork.
	require.NoError(t, cs.Truncate(50))
	require.NoError(t, gs.Truncate(50))
	cf, gf := cs.Fork(), gs.Fork()
	cl, err = cf.Forward(ctx, prompt[:20], false)
	require.NoError(t, err)
	gl, err = gf.Forward(ctx, prompt[:20], false)
	require.NoError(t, err)
	compare("fork after truncate", cl, gl)
	require.NoError(t, b.Sync())
}

// TestOutOfMemoryIsAnError asks for more memory than any GPU has.
func TestOutOfMemoryIsAnError(t *testing.T) {
	b := backend(t)
	err := b.d.do(func() error {
		buf, err := alloc(1<<50, "huge")
		if err == nil {
			_ = buf.free()
		}
		return err
	})
	require.ErrorIs(t, err, ErrOutOfMemory)
}

// mapSource is an in-memory model.Source.
type mapSource map[string]*weights.Tensor

func (s mapSource) Tensor(name string) (*weights.Tensor, error) {
	t, ok := s[name]
	if !ok {
		return nil, fmt.Errorf("no tensor %s", name)
	}
	return t, nil
}

// randomSource returns random weights of cfg under Hugging Face names.
func randomSource(t *testing.T, cfg model.Config, dt weights.DType, seed uint64) mapSource {
	r := rand.New(rand.NewPCG(seed, 1))
	src := mapSource{}
	add := func(name string, scale float64, base float32, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := randF32(r, n, scale)
		for i := range v {
			v[i] += base
		}
		tdt := dt
		if len(shape) == 1 {
			tdt = weights.F32
		}
		tn, err := weights.NewTensor(name, tdt, shape, v)
		require.NoError(t, err)
		src[name] = &tn
	}
	H, Q, KV, F, V := cfg.Hidden, cfg.QDim(), cfg.KVDim(), cfg.FFN, cfg.Vocab
	add("model.embed_tokens.weight", 1, 0, V, H)
	if !cfg.TiedEmbeddings {
		add("lm_head.weight", 1/math.Sqrt(float64(H)), 0, V, H)
	}
	add("model.norm.weight", 0.1, 1, H)
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", 0.1, 1, H)
		add(p+"post_attention_layernorm.weight", 0.1, 1, H)
		add(p+"self_attn.q_proj.weight", 1/math.Sqrt(float64(H)), 0, Q, H)
		add(p+"self_attn.k_proj.weight", 1/math.Sqrt(float64(H)), 0, KV, H)
		add(p+"self_attn.v_proj.weight", 1/math.Sqrt(float64(H)), 0, KV, H)
		add(p+"self_attn.o_proj.weight", 1/math.Sqrt(float64(Q)), 0, H, Q)
		add(p+"mlp.gate_proj.weight", 1/math.Sqrt(float64(H)), 0, F, H)
		add(p+"mlp.up_proj.weight", 1/math.Sqrt(float64(H)), 0, F, H)
		add(p+"mlp.down_proj.weight", 1/math.Sqrt(float64(F)), 0, H, F)
	}
	return src
}

// TestDeviceModelMatchesCPU runs the whole-forward-on-device Model and the
// CPU engine on the same weights (BF16 and F32, tied and untied heads,
// GQA, a sliding-window layer, llama3 RoPE scaling): a prefill longer than
// a chunk, decode steps, Fork, Truncate, and Greedy with a token mask.
func TestDeviceModelMatchesCPU(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	for _, tc := range []struct {
		dt   weights.DType
		tied bool
	}{{weights.BF16, false}, {weights.F32, true}} {
		t.Run(fmt.Sprintf("%v/tied=%v", tc.dt, tc.tied), func(t *testing.T) {
			cfg := model.Config{Hidden: 256, Layers: 3, Heads: 8, KVHeads: 2, HeadDim: 32, FFN: 512, Vocab: 1000,
				NormEps: 1e-5, RopeTheta: 500000, Context: 1024, Windows: []int{0, 40, 0}, TiedEmbeddings: tc.tied,
				RopeScaling: &model.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 64}}
			src := randomSource(t, cfg, tc.dt, 11)
			cpu, err := model.New(ctx, cfg, src, model.Options{Threads: 2})
			require.NoError(t, err)
			defer cpu.Close()
			gpu, err := NewModel(b, cfg, src, ModelOptions{})
			require.NoError(t, err)
			defer func() { require.NoError(t, gpu.Close()) }()

			compare := func(what string, c, g []float32) {
				t.Helper()
				ref := make([]float64, len(c))
				for i, v := range c {
					ref[i] = float64(v)
				}
				e := nmse(g, ref)
				t.Logf("%s: NMSE %.3g", what, e)
				require.LessOrEqual(t, e, 1e-3, what)
			}
			r := rand.New(rand.NewPCG(12, 13))
			prompt := make([]int, 300) // more than one 256-token chunk
			for i := range prompt {
				prompt[i] = r.IntN(cfg.Vocab)
			}
			cs := cpu.NewSession()
			gs, err := gpu.NewSession()
			require.NoError(t, err)
			defer func() { require.NoError(t, gs.Close()) }()
			cl, err := cs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			gl, err := gs.Forward(prompt, true)
			require.NoError(t, err)
			compare("prefill", cl, gl)
			tok := RefArgmax(cl[len(cl)-cfg.Vocab:])
			for step := 0; step < 6; step++ {
				cl, err = cs.Forward(ctx, []int{tok}, false)
				require.NoError(t, err)
				gl, err = gs.Forward([]int{tok}, false)
				require.NoError(t, err)
				compare(fmt.Sprintf("decode %d", step), cl, gl)
				tok = RefArgmax(cl)
			}
			require.Equal(t, cs.Tokens(), gs.Tokens())

			// Fork, roll the fork back into the window, continue both.
			gf, err := gs.Fork()
			require.NoError(t, err)
			defer func() { require.NoError(t, gf.Close()) }()
			cf := cs.Fork()
			require.NoError(t, cf.Truncate(280))
			require.NoError(t, gf.Truncate(280))
			cl, err = cf.Forward(ctx, prompt[:30], false)
			require.NoError(t, err)
			gl, err = gf.Forward(prompt[:30], false)
			require.NoError(t, err)
			compare("fork+truncate", cl, gl)
			cl, err = cs.Forward(ctx, []int{tok}, false)
			require.NoError(t, err)
			gl, err = gs.Forward([]int{tok}, false)
			require.NoError(t, err)
			compare("parent after fork", cl, gl)

			// Greedy with a mask: the device argmax of the masked logits.
			mask := make([]uint32, ceilDiv(cfg.Vocab, 32))
			for i := range mask {
				mask[i] = r.Uint32()
			}
			cl, err = cs.Forward(ctx, []int{7}, false)
			require.NoError(t, err)
			RefApplyMask(cl, mask)
			got, err := gs.Greedy([]int{7}, mask)
			require.NoError(t, err)
			require.Equal(t, RefArgmax(cl), got, "greedy with mask")
		})
	}
}

// TestRandomModelRuns builds a device-random model and decodes a few
// tokens (finite logits, deterministic across sessions).
func TestRandomModelRuns(t *testing.T) {
	b := backend(t)
	cfg, err := model.Preset("34m")
	require.NoError(t, err)
	m, err := NewRandomModel(b, cfg, 1, ModelOptions{Context: 256})
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()
	var first []int
	for run := 0; run < 2; run++ {
		s, err := m.NewSession()
		require.NoError(t, err)
		toks := []int{1, 2, 3}
		for i := 0; i < 5; i++ {
			next, err := s.Greedy(toks, nil)
			require.NoError(t, err)
			toks = []int{next}
		}
		logits, err := s.Forward([]int{4}, false)
		require.NoError(t, err)
		for _, v := range logits {
			require.False(t, math.IsNaN(float64(v)) || math.IsInf(float64(v), 0))
		}
		if run == 0 {
			first = s.Tokens()
		} else {
			require.Equal(t, first, s.Tokens())
		}
		require.NoError(t, s.Close())
	}
}

// TestConcurrentSessions runs sessions of one model on one Backend from
// several goroutines (model.Backend must be safe for concurrent use) and
// checks each gets the logits it gets alone.
func TestConcurrentSessions(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	cfg, err := model.Preset("tiny")
	require.NoError(t, err)
	cpuModel, err := model.NewRandom(ctx, cfg, kernels.BF16, 3, model.Options{Threads: 1})
	require.NoError(t, err)
	defer cpuModel.Close()
	m := cpuModel.WithBackend(b)
	prompts := [][]int{{1, 2, 3, 4, 5}, {9, 8, 7}, {100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117}}
	alone := make([][]float32, len(prompts))
	for i, p := range prompts {
		alone[i], err = m.NewSession().Forward(ctx, p, false)
		require.NoError(t, err)
	}
	errs := make(chan error, len(prompts)*4)
	for rep := 0; rep < 4; rep++ {
		for i, p := range prompts {
			go func() {
				got, err := m.NewSession().Forward(ctx, p, false)
				if err == nil {
					for j := range got {
						if got[j] != alone[i][j] {
							err = fmt.Errorf("prompt %d: logit %d = %v, alone %v", i, j, got[j], alone[i][j])
							break
						}
					}
				}
				errs <- err
			}()
		}
	}
	for range len(prompts) * 4 {
		require.NoError(t, <-errs)
	}
}
