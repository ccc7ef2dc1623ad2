//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/kernels/kerneltest"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/model/modeltest"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/weights"
)

// Note: gorgonia.org/cu's init exits the process (status 1, "Error in
// initialization") when cuInit fails, before any test runs. On a machine
// whose driver initialises but has no usable GPU, New fails and every test
// skips with the reason.

var (
	testGPU *GPU
	testErr error
)

func TestMain(m *testing.M) {
	testGPU, testErr = New(Options{})
	code := m.Run()
	if testGPU != nil {
		if err := testGPU.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func gpu(t *testing.T) *GPU {
	t.Helper()
	if testErr != nil {
		t.Skipf("no usable GPU: %v", testErr)
	}
	return testGPU
}

// TestDeviceConformance runs package model's device conformance suite
// (the cases the CPU passes) on the GPU: the whole forward pass, with
// weights, KV cache and activations in device memory.
func TestDeviceConformance(t *testing.T) {
	modeltest.Run(t, gpu(t))
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
	ops := gpu(t).Ops()
	defer func() { require.NoError(t, ops.Close()) }()
	kerneltest.TestAll(t, checkedOps{ops, t})
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
	ops := gpu(t).Ops()
	defer func() { require.NoError(t, ops.Close()) }()
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
			require.NoError(t, ops.MatMulWith(kernel, dst, x, c.n, w))
			e := nmse(dst, ref)
			t.Logf("%s n=%d %dx%d: NMSE %.3g", kernel, c.n, c.rows, c.cols, e)
			require.LessOrEqual(t, e, limit, "%s n=%d %dx%d", kernel, c.n, c.rows, c.cols)
		}
	}
}

// TestAttentionKernel checks the split-K attention against kerneltest.RefAttention
// over prefill and decode shapes, GQA and sliding windows, with the key
// rows starting at kpos0.
func TestAttentionKernel(t *testing.T) {
	b := gpu(t)
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
		ref := kerneltest.RefAttention(q, k, v, c.n, c.heads, c.kv, c.hd, c.pos0, kpos0, c.window)
		out := make([]float32, len(ref))
		a := model.AttentionSpec{N: c.n, Pos0: c.pos0, Heads: c.heads, KVHeads: c.kv, HeadDim: c.hd, Window: c.window}
		err := b.d.do(func() error {
			bufs := make([]buffer, 4)
			part := scratch{what: "attention partials"}
			defer func() {
				for i := range bufs {
					_ = bufs[i].free()
				}
				_ = part.free()
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
			if err := b.d.attention(&part, bufs[3].ptr, bufs[0].ptr, bufs[1].ptr, bufs[2].ptr, a, kpos0); err != nil {
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
	b := gpu(t)
	r := rand.New(rand.NewPCG(5, 6))
	cfg, err := model.Preset("1.8b")
	require.NoError(t, err)
	cfg.RopeScaling = &weights.RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	const n, pos0 = 5, 30000
	rope := model.NewRopeTable(&cfg, pos0+n)
	cos, sin := rope.Cos, rope.Sin
	x := randF32(r, n*cfg.NumAttentionHeads*cfg.HeadDim, 1)
	want := make([]float32, len(x))
	for i := range n {
		row := i * cfg.NumAttentionHeads * cfg.HeadDim
		rope.Rotate(want[row:], x[row:], cfg.NumAttentionHeads, pos0+i)
	}

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
		pairs := n * cfg.NumAttentionHeads * cfg.HeadDim / 2
		if err := b.d.launch("rope_1", grid1(ceilDiv(pairs, 256)), [3]int{256, 1, 1}, 0, xp, cp, sp, n, cfg.NumAttentionHeads, cfg.HeadDim, pos0); err != nil {
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
		require.Equal(t, int32(sample.Argmax(logits[row*vocab:(row+1)*vocab])), gotArg[row], "argmax row %d", row)
	}
	require.Equal(t, int32(vocab+123-vocab), gotArg[1])
	wantMasked := append([]float32(nil), logits[:vocab]...)
	RefApplyMask(wantMasked, mask)
	require.Equal(t, wantMasked, gotMasked, "mask")
}

// TestOutOfMemoryIsAnError asks for more memory than any GPU has.
func TestOutOfMemoryIsAnError(t *testing.T) {
	b := gpu(t)
	err := b.d.do(func() error {
		buf, err := alloc(1<<50, "huge")
		if err == nil {
			_ = buf.free()
		}
		return err
	})
	require.ErrorIs(t, err, ErrOutOfMemory)
}
