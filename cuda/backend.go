//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
)

// gemmMinTokens is the smallest batch that MatMul sends to the tensor-core
// GEMM; smaller batches use the GEMV kernel, which reads each weight row
// once for up to 8 tokens.
const gemmMinTokens = 16

// Backend is model.Backend on one GPU. Weight matrices and norm vectors
// are uploaded on first use and stay resident (keyed by the host object's
// address, so the model's weights must not change while the backend is in
// use); activations are copied in and out per op, because model.Backend
// passes host slices. The KV cache stays the host model.Cache: Attention
// uploads the rows the queries can see, so Fork and Truncate keep their
// meaning unchanged.
//
// Ops that return no error (RMSNorm, SwiGLU, Attention) record the first
// failure, fill their output with NaN, and Sync returns the failure.
// A Backend is safe for concurrent use; its calls are serialised.
type Backend struct {
	d *device

	mu       sync.Mutex // guards the maps and err
	mats     map[*kernels.Mat]buffer
	vecs     map[vecKey]buffer
	err      error
	resident int64

	// Scratch buffers, used with the device lock held.
	xBuf, yBuf, kBuf, vBuf, pBuf scratch
	kStage, vStage               []float32

	// Variant choices (for benchmarks and tests of the alternatives).
	gemm string // "gemm_bf16_2" (split, float32-exact) or "gemm_bf16_1"
	gemv string // "gemv_bf16_1" or "gemv_bf16_2" (unrolled loads)
}

type vecKey struct {
	p *float32
	n int
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
// cuda tag already exits at start-up without one: see the package doc).
func New(opts Options) (*Backend, error) {
	d, err := openDevice(opts.Device)
	if err != nil {
		return nil, err
	}
	b := &Backend{d: d, mats: map[*kernels.Mat]buffer{}, vecs: map[vecKey]buffer{}, gemm: "gemm_bf16_2", gemv: "gemv_bf16_1"}
	if opts.FastGEMM {
		b.gemm = "gemm_bf16_1"
	}
	if opts.UnrolledGEMV {
		b.gemv = "gemv_bf16_2"
	}
	b.xBuf.what, b.yBuf.what, b.kBuf.what, b.vBuf.what, b.pBuf.what = "activations in", "activations out", "keys", "values", "attention partials"
	return b, nil
}

var _ model.Backend = (*Backend)(nil)

// Name returns "cuda/" and the GPU's name.
func (b *Backend) Name() string { return "cuda/" + b.d.name }

// ResidentBytes returns the bytes of weights uploaded so far.
func (b *Backend) ResidentBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resident
}

// fail records err as the first error since the last Sync.
func (b *Backend) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
}

func fillNaN(x []float32) {
	nan := float32(math.NaN())
	for i := range x {
		x[i] = nan
	}
}

// matrix returns w's device copy, uploading it on first use (context current).
func (b *Backend) matrix(w *kernels.Mat) (buffer, error) {
	b.mu.Lock()
	buf, ok := b.mats[w]
	b.mu.Unlock()
	if ok {
		return buf, nil
	}
	size := int64(w.Rows) * int64(w.Cols) * int64(w.DType.Size())
	buf, err := alloc(size, fmt.Sprintf("%d×%d %v weights", w.Rows, w.Cols, w.DType))
	if err != nil {
		return buffer{}, err
	}
	n := w.Rows * w.Cols
	if w.DType == kernels.BF16 {
		err = upload(buf.ptr, w.BF16[:n], "weights")
	} else {
		err = upload(buf.ptr, w.F32[:n], "weights")
	}
	if err != nil {
		return buffer{}, errors.Join(err, buf.free())
	}
	b.mu.Lock()
	b.mats[w] = buf
	b.resident += size
	b.mu.Unlock()
	return buf, nil
}

// vector returns the device copy of a weight vector (a norm's gains).
func (b *Backend) vector(v []float32) (buffer, error) {
	k := vecKey{unsafe.SliceData(v), len(v)}
	b.mu.Lock()
	buf, ok := b.vecs[k]
	b.mu.Unlock()
	if ok {
		return buf, nil
	}
	buf, err := alloc(int64(4*len(v)), "norm weights")
	if err != nil {
		return buffer{}, err
	}
	if err := upload(buf.ptr, v, "norm weights"); err != nil {
		return buffer{}, errors.Join(err, buf.free())
	}
	b.mu.Lock()
	b.vecs[k] = buf
	b.resident += int64(4 * len(v))
	b.mu.Unlock()
	return buf, nil
}

// checkMatMul mirrors kernels' operand checks.
func checkMatMul(dst, x []float32, n int, w *kernels.Mat) error {
	if err := w.Check(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%w: n = %d", kernels.ErrShape, n)
	}
	if w.Cols > 0 && n > math.MaxInt32/w.Cols || w.Rows > 0 && n > math.MaxInt32/w.Rows {
		return fmt.Errorf("%w: n = %d too large for the GPU kernels", kernels.ErrShape, n)
	}
	if len(x) < n*w.Cols {
		return fmt.Errorf("%w: x has %d elements, want %d×%d", kernels.ErrShape, len(x), n, w.Cols)
	}
	if len(dst) < n*w.Rows {
		return fmt.Errorf("%w: dst has %d elements, want %d×%d", kernels.ErrShape, len(dst), n, w.Rows)
	}
	return nil
}

// MatMul sets dst (n × w.Rows) = x (n × w.Cols) · Wᵀ: GEMV kernels for
// n < 16 or F32 weights, the tensor-core GEMM for BF16 prefill.
func (b *Backend) MatMul(dst, x []float32, n int, w *kernels.Mat) error {
	if err := checkMatMul(dst, x, n, w); err != nil {
		return err
	}
	if n == 0 || w.Rows == 0 {
		return nil
	}
	if w.Cols == 0 {
		clear(dst[:n*w.Rows])
		return nil
	}
	return b.d.do(func() error {
		if err := b.matMulLocked(dst, x, n, w, ""); err != nil {
			return fmt.Errorf("cuda: matmul %d×%d·%d×%dᵀ: %w", n, w.Cols, w.Rows, w.Cols, err)
		}
		return nil
	})
}

// matMulLocked uploads x, runs kernel (or the default choice when ""),
// downloads dst (device lock held).
func (b *Backend) matMulLocked(dst, x []float32, n int, w *kernels.Mat, kernel string) error {
	wb, err := b.matrix(w)
	if err != nil {
		return err
	}
	xp, err := b.xBuf.need(int64(4 * n * w.Cols))
	if err != nil {
		return err
	}
	yp, err := b.yBuf.need(int64(4 * n * w.Rows))
	if err != nil {
		return err
	}
	if err := upload(xp, x[:n*w.Cols], "x"); err != nil {
		return err
	}
	if kernel == "" {
		kernel = b.pickMatMul(n, w.DType)
	}
	if err := b.d.launchMatMul(kernel, yp, xp, wb.ptr, n, w.Rows, w.Cols); err != nil {
		return err
	}
	return download(dst[:n*w.Rows], yp, "dst")
}

// pickMatMul chooses the kernel for a batch of n tokens.
func (b *Backend) pickMatMul(n int, dt kernels.DType) string {
	switch {
	case dt == kernels.F32:
		return "gemv_f32_1"
	case n >= gemmMinTokens:
		return b.gemm
	}
	return b.gemv
}

// launchMatMul launches one of the matrix kernels on device pointers.
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

// RMSNorm normalises the n rows of x into dst on the device.
func (b *Backend) RMSNorm(dst, x []float32, n int, weight []float32, eps float32) {
	d := len(weight)
	if n == 0 || d == 0 {
		return
	}
	err := b.d.do(func() error {
		wb, err := b.vector(weight)
		if err != nil {
			return err
		}
		xp, err := b.xBuf.need(int64(4 * n * d))
		if err != nil {
			return err
		}
		if err := upload(xp, x[:n*d], "x"); err != nil {
			return err
		}
		if err := b.d.launch("rmsnorm_1", grid1(n), [3]int{256, 1, 1}, 0, xp, xp, wb.ptr, d, eps); err != nil {
			return err
		}
		return download(dst[:n*d], xp, "dst")
	})
	if err != nil {
		fillNaN(dst[:n*d])
		b.fail(fmt.Errorf("cuda: rmsnorm %d×%d: %w", n, d, err))
	}
}

// SwiGLU sets dst (n × ffn) = silu(gate) · up on the device, row i of gu
// holding gate then up.
func (b *Backend) SwiGLU(dst, gu []float32, n, ffn int) {
	if n == 0 || ffn == 0 {
		return
	}
	err := b.d.do(func() error {
		xp, err := b.xBuf.need(int64(4 * 2 * n * ffn))
		if err != nil {
			return err
		}
		yp, err := b.yBuf.need(int64(4 * n * ffn))
		if err != nil {
			return err
		}
		if err := upload(xp, gu[:2*n*ffn], "gate/up"); err != nil {
			return err
		}
		if err := b.d.launch("swiglu_rows_1", grid1(ceilDiv(n*ffn, 256)), [3]int{256, 1, 1}, 0, yp, xp, n, ffn); err != nil {
			return err
		}
		return download(dst[:n*ffn], yp, "dst")
	})
	if err != nil {
		fillNaN(dst[:n*ffn])
		b.fail(fmt.Errorf("cuda: swiglu %d×%d: %w", n, ffn, err))
	}
}

// Attention runs causal (optionally windowed) GQA attention on the device.
// The keys and values the queries can see are gathered from the host cache
// into contiguous rows and uploaded; the split-K kernel then computes every
// (query, head) pair.
func (b *Backend) Attention(dst, q []float32, a model.AttentionSpec, kv *model.Cache) {
	nq := a.N * a.Heads * a.HeadDim
	if a.N == 0 {
		return
	}
	err := func() error {
		if a.HeadDim > 256 || a.KVHeads <= 0 || a.Heads%a.KVHeads != 0 {
			return fmt.Errorf("unsupported shape: %d heads, %d KV heads, head dim %d (≤ 256)", a.Heads, a.KVHeads, a.HeadDim)
		}
		if kv.Len() < a.Pos0+a.N {
			return fmt.Errorf("cache holds %d positions, queries reach %d", kv.Len(), a.Pos0+a.N)
		}
		kvDim := a.KVHeads * a.HeadDim
		kpos0 := 0
		if a.Window > 0 {
			kpos0 = max(0, a.Pos0-a.Window+1)
		}
		rows := a.Pos0 + a.N - kpos0
		return b.d.do(func() error {
			b.kStage = growF32(b.kStage, rows*kvDim)
			b.vStage = growF32(b.vStage, rows*kvDim)
			for r := 0; r < rows; r++ {
				copy(b.kStage[r*kvDim:(r+1)*kvDim], kv.Key(a.Layer, kpos0+r))
				copy(b.vStage[r*kvDim:(r+1)*kvDim], kv.Value(a.Layer, kpos0+r))
			}
			kp, err := b.kBuf.need(int64(4 * rows * kvDim))
			if err != nil {
				return err
			}
			vp, err := b.vBuf.need(int64(4 * rows * kvDim))
			if err != nil {
				return err
			}
			if err := upload(kp, b.kStage[:rows*kvDim], "keys"); err != nil {
				return err
			}
			if err := upload(vp, b.vStage[:rows*kvDim], "values"); err != nil {
				return err
			}
			qp, err := b.xBuf.need(int64(4 * nq))
			if err != nil {
				return err
			}
			op, err := b.yBuf.need(int64(4 * nq))
			if err != nil {
				return err
			}
			if err := upload(qp, q[:nq], "q"); err != nil {
				return err
			}
			if err := b.d.attention(&b.pBuf, op, qp, kp, vp, a, kpos0); err != nil {
				return err
			}
			return download(dst[:nq], op, "dst")
		})
	}()
	if err != nil {
		fillNaN(dst[:nq])
		b.fail(fmt.Errorf("cuda: attention layer %d (n=%d, pos0=%d): %w", a.Layer, a.N, a.Pos0, err))
	}
}

// attnSplits chooses how many chunks each (query, head) pair's keys are
// split into: enough blocks to cover the GPU about twice, chunks of at
// least 64 keys, at most 64 chunks.
func (d *device) attnSplits(pairs, span int) int {
	want := ceilDiv(2*max(d.sms, 1), pairs)
	return max(1, min(want, ceilDiv(span, 64), 64))
}

// attention launches the split-K attention kernels on device pointers
// (device lock held); part is the scratch for the partial results.
func (d *device) attention(part *scratch, out, q, k, v cu.DevicePtr, a model.AttentionSpec, kpos0 int) error {
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

func growF32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// Sync waits for the device and returns the first error since the last
// Sync (from an op without an error result, or from the device).
func (b *Backend) Sync() error {
	err := b.d.do(func() error { return syncDevice("sync") })
	b.mu.Lock()
	first := b.err
	b.err = nil
	b.mu.Unlock()
	if first != nil {
		return first
	}
	return err
}

// Close frees every device buffer and destroys the context.
func (b *Backend) Close() error {
	var errs []error
	err := b.d.do(func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		for k, buf := range b.mats {
			errs = append(errs, buf.free())
			delete(b.mats, k)
		}
		for k, buf := range b.vecs {
			errs = append(errs, buf.free())
			delete(b.vecs, k)
		}
		for _, s := range []*scratch{&b.xBuf, &b.yBuf, &b.kBuf, &b.vBuf, &b.pBuf} {
			errs = append(errs, s.free())
		}
		b.resident = 0
		return nil
	})
	errs = append(errs, err, b.d.close())
	return errors.Join(errs...)
}
