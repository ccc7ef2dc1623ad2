//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/ndbg/ndbg/kernels"
)

// Ops adapts the GPU's kernels to kerneltest.Ops (the interface of
// package kernels), so the implementation-agnostic conformance suite runs
// against the GPU. Every call copies its operands to the device and back;
// it is for checking, not for speed. The pool argument is ignored. Calls
// without an error result record the first failure, which Err returns,
// and leave NaN in their outputs. An Ops is not safe for concurrent use.
type Ops struct {
	g    *GPU
	x, y scratch
	err  error
}

// Ops returns a kerneltest adapter of g.
func (g *GPU) Ops() *Ops {
	return &Ops{g: g, x: scratch{what: "operand"}, y: scratch{what: "result"}}
}

// Err returns and clears the first error recorded since the last call.
func (o *Ops) Err() error {
	err := o.err
	o.err = nil
	return err
}

// fail records err as the first error since the last Err.
func (o *Ops) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

func fillNaN(x []float32) {
	nan := float32(math.NaN())
	for i := range x {
		x[i] = nan
	}
}

// MatMul implements kerneltest.Ops with the kernel the GPU's forward pass
// would choose.
func (o *Ops) MatMul(_ *kernels.Pool, dst, x []float32, n int, w *kernels.Mat) error {
	return o.MatMulWith("", dst, x, n, w)
}

// MatMulWith is MatMul with the named kernel ("" for the GPU's choice),
// for tests of the variants. It uploads w on every call.
func (o *Ops) MatMulWith(kernel string, dst, x []float32, n int, w *kernels.Mat) error {
	if done, err := kernels.PrepareMatMul(dst, x, n, w); done || err != nil {
		return err
	}
	if n > math.MaxInt32/w.Cols || n > math.MaxInt32/w.Rows {
		return fmt.Errorf("%w: n = %d too large for the GPU kernels", kernels.ErrShape, n)
	}
	if kernel == "" {
		kernel = o.g.pickMatMul(n, w.DType)
	}
	err := o.g.d.do(func() (err error) {
		size := int64(w.Rows) * int64(w.Cols) * int64(w.DType.Size())
		wb, err := alloc(size, "weights")
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, wb.free()) }()
		if w.DType == kernels.BF16 {
			err = upload(wb.ptr, w.BF16[:w.Rows*w.Cols], "weights")
		} else {
			err = upload(wb.ptr, w.F32[:w.Rows*w.Cols], "weights")
		}
		if err != nil {
			return err
		}
		xp, err := o.x.need(int64(4 * n * w.Cols))
		if err != nil {
			return err
		}
		yp, err := o.y.need(int64(4 * n * w.Rows))
		if err != nil {
			return err
		}
		if err := upload(xp, x[:n*w.Cols], "x"); err != nil {
			return err
		}
		if err := o.g.d.launchMatMul(kernel, yp, xp, wb.ptr, n, w.Rows, w.Cols); err != nil {
			return err
		}
		return download(dst[:n*w.Rows], yp, "dst")
	})
	if err != nil {
		return fmt.Errorf("cuda: matmul %s %d×%d·%d×%dᵀ: %w", kernel, n, w.Cols, w.Rows, w.Cols, err)
	}
	return nil
}

// Close frees the adapter's device buffers.
func (o *Ops) Close() error {
	return o.g.d.do(func() error { return errors.Join(o.x.free(), o.y.free()) })
}

// run uploads the inputs, launches, and downloads out (the last operand
// named by outIdx), recording failures.
func (o *Ops) run(what string, out []float32, ins [][]float32, outIdx int, launch func(ptrs []devPtr) error) {
	if len(out) == 0 {
		return
	}
	err := o.g.d.do(func() error {
		bufs := make([]buffer, len(ins))
		defer func() {
			for i := range bufs {
				_ = bufs[i].free()
			}
		}()
		ptrs := make([]devPtr, len(ins))
		for i, in := range ins {
			b, err := alloc(int64(4*len(in)), what)
			if err != nil {
				return err
			}
			bufs[i] = b
			ptrs[i] = b.ptr
			if err := upload(b.ptr, in, what); err != nil {
				return err
			}
		}
		if err := launch(ptrs); err != nil {
			return err
		}
		if err := syncDevice(what); err != nil {
			return err
		}
		return download(out, ptrs[outIdx], what)
	})
	if err != nil {
		fillNaN(out)
		o.fail(fmt.Errorf("cuda: %s: %w", what, err))
	}
}

const threads = 256

// Dot implements kerneltest.Ops as a one-row dot_rows_1.
func (o *Ops) Dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	out := []float32{0}
	if n == 0 {
		return 0
	}
	o.run("dot", out, [][]float32{a[:n], b[:n], out}, 2, func(p []devPtr) error {
		return o.g.d.launch("dot_rows_1", grid1(1), [3]int{32, 1, 1}, 0, p[2], p[0], p[1], 1, n, n)
	})
	return out[0]
}

// Axpy implements kerneltest.Ops.
func (o *Ops) Axpy(dst []float32, a float32, x []float32) {
	n := min(len(dst), len(x))
	dst = dst[:n]
	o.run("axpy", dst, [][]float32{dst, x[:n]}, 0, func(p []devPtr) error {
		return o.g.d.launch("axpy_1", grid1(ceilDiv(n, threads)), [3]int{threads, 1, 1}, 0, p[0], a, p[1], n)
	})
}

// Scale implements kerneltest.Ops.
func (o *Ops) Scale(x []float32, a float32) {
	n := len(x)
	o.run("scale", x, [][]float32{x}, 0, func(p []devPtr) error {
		return o.g.d.launch("scale_1", grid1(ceilDiv(n, threads)), [3]int{threads, 1, 1}, 0, p[0], a, n)
	})
}

// Add implements kerneltest.Ops.
func (o *Ops) Add(dst, a, b []float32) {
	n := min(len(dst), len(a), len(b))
	dst = dst[:n]
	o.run("add", dst, [][]float32{a[:n], b[:n], dst}, 2, func(p []devPtr) error {
		return o.g.d.launch("add_1", grid1(ceilDiv(n, threads)), [3]int{threads, 1, 1}, 0, p[2], p[0], p[1], n)
	})
}

// RMSNorm implements kerneltest.Ops.
func (o *Ops) RMSNorm(dst, x, weight []float32, eps float32) {
	n := min(len(dst), len(x), len(weight))
	dst = dst[:n]
	o.run("rmsnorm", dst, [][]float32{x[:n], weight[:n]}, 0, func(p []devPtr) error {
		return o.g.d.launch("rmsnorm_1", grid1(1), [3]int{threads, 1, 1}, 0, p[0], p[0], p[1], n, eps)
	})
}

// Softmax implements kerneltest.Ops.
func (o *Ops) Softmax(x []float32) {
	n := len(x)
	o.run("softmax", x, [][]float32{x}, 0, func(p []devPtr) error {
		return o.g.d.launch("softmax_1", grid1(1), [3]int{threads, 1, 1}, 0, p[0], n)
	})
}

// SwiGLU implements kerneltest.Ops.
func (o *Ops) SwiGLU(dst, gate, up []float32) {
	n := min(len(dst), len(gate), len(up))
	dst = dst[:n]
	o.run("swiglu", dst, [][]float32{gate[:n], up[:n], dst}, 2, func(p []devPtr) error {
		return o.g.d.launch("swiglu_1", grid1(ceilDiv(n, threads)), [3]int{threads, 1, 1}, 0, p[2], p[0], p[1], n)
	})
}

// rowsFitting is how many of want rows of width elements, stride apart,
// fit in m elements (package kernels' rule).
func rowsFitting(want, stride, width, m int) int {
	if stride < 0 || want <= 0 || width > m {
		return 0
	}
	if stride == 0 {
		return want
	}
	return min(want, (m-width)/stride+1)
}

// DotRows implements kerneltest.Ops.
func (o *Ops) DotRows(dst, x, m []float32, stride int) {
	rows := rowsFitting(len(dst), stride, len(x), len(m))
	if rows == 0 {
		return
	}
	dst = dst[:rows]
	if len(x) == 0 {
		clear(dst)
		return
	}
	span := (rows-1)*stride + len(x)
	o.run("dot_rows", dst, [][]float32{x, m[:span], dst}, 2, func(p []devPtr) error {
		return o.g.d.launch("dot_rows_1", grid1(ceilDiv(rows, 8)), [3]int{256, 1, 1}, 0, p[2], p[0], p[1], rows, len(x), stride)
	})
}

// AxpyRows implements kerneltest.Ops.
func (o *Ops) AxpyRows(dst, a, m []float32, stride int) {
	rows := rowsFitting(len(a), stride, len(dst), len(m))
	if rows == 0 || len(dst) == 0 {
		return
	}
	width := len(dst)
	span := (rows-1)*stride + width
	o.run("axpy_rows", dst, [][]float32{dst, a[:rows], m[:span]}, 0, func(p []devPtr) error {
		return o.g.d.launch("axpy_rows_1", grid1(ceilDiv(width, threads)), [3]int{threads, 1, 1}, 0, p[0], p[1], p[2], rows, width, stride)
	})
}
