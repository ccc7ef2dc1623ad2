package kernels

import (
	"errors"
	"fmt"
	"math"
)

// DType is the element type of a weight matrix.
type DType uint8

const (
	// F32 is IEEE-754 binary32.
	F32 DType = iota
	// BF16 is bfloat16: the upper 16 bits of a binary32.
	BF16
)

// String returns "F32" or "BF16".
func (d DType) String() string {
	switch d {
	case F32:
		return "F32"
	case BF16:
		return "BF16"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size is the size of one element in bytes (0 for an unknown DType).
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case BF16:
		return 2
	}
	return 0
}

// Mat is a row-major weight matrix W of Rows × Cols: Rows is the number of
// output features, Cols the number of input features. Element (r, c) is
// F32[r*Cols+c] when DType is F32, or BF16[r*Cols+c] when DType is BF16.
type Mat struct {
	Rows, Cols int
	DType      DType
	F32        []float32
	BF16       []uint16
}

// ErrShape is returned (wrapped) when operands have inconsistent sizes.
var ErrShape = errors.New("kernels: bad shape")

// Check reports whether m is well formed: non-negative sizes, a known DType
// and a backing slice of at least Rows*Cols elements.
func (m *Mat) Check() error {
	if m == nil {
		return fmt.Errorf("%w: nil matrix", ErrShape)
	}
	if m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("%w: %d×%d matrix", ErrShape, m.Rows, m.Cols)
	}
	if m.Cols > 0 && m.Rows > math.MaxInt/m.Cols {
		return fmt.Errorf("%w: %d×%d matrix overflows", ErrShape, m.Rows, m.Cols)
	}
	size := m.Rows * m.Cols
	switch m.DType {
	case F32:
		if len(m.F32) < size {
			return fmt.Errorf("%w: %d×%d F32 matrix has %d elements", ErrShape, m.Rows, m.Cols, len(m.F32))
		}
	case BF16:
		if len(m.BF16) < size {
			return fmt.Errorf("%w: %d×%d BF16 matrix has %d elements", ErrShape, m.Rows, m.Cols, len(m.BF16))
		}
	default:
		return fmt.Errorf("%w: unknown dtype %v", ErrShape, m.DType)
	}
	return nil
}

// Row returns row r of m widened to float32 in dst[:Cols]. It returns nil
// (and writes nothing) when m is malformed (see Check), r is out of range or
// dst is shorter than Cols.
func (m *Mat) Row(dst []float32, r int) []float32 {
	if m.Check() != nil || r < 0 || r >= m.Rows || len(dst) < m.Cols {
		return nil
	}
	dst = dst[:m.Cols]
	off := r * m.Cols
	if m.DType == BF16 {
		BF16ToF32Slice(dst, m.BF16[off:off+m.Cols])
	} else {
		copy(dst, m.F32[off:off+m.Cols])
	}
	return dst
}

// PrepareMatMul is the preamble every implementation of MatMul (this
// package's, the GPU's) runs: it validates the operands (an error wrapping
// ErrShape, dst untouched) and computes the empty products itself (n or
// w.Rows zero: nothing; w.Cols zero: dst's rows are zeros), reporting
// done when nothing is left to compute.
func PrepareMatMul(dst, x []float32, n int, w *Mat) (done bool, err error) {
	if err := w.Check(); err != nil {
		return false, err
	}
	if n < 0 {
		return false, fmt.Errorf("%w: n = %d", ErrShape, n)
	}
	if w.Cols > 0 && n > math.MaxInt/w.Cols || w.Rows > 0 && n > math.MaxInt/w.Rows {
		return false, fmt.Errorf("%w: n = %d overflows", ErrShape, n)
	}
	if len(x) < n*w.Cols {
		return false, fmt.Errorf("%w: x has %d elements, want %d×%d", ErrShape, len(x), n, w.Cols)
	}
	if len(dst) < n*w.Rows {
		return false, fmt.Errorf("%w: dst has %d elements, want %d×%d", ErrShape, len(dst), n, w.Rows)
	}
	if n == 0 || w.Rows == 0 {
		return true, nil
	}
	if w.Cols == 0 {
		clear(dst[:n*w.Rows])
		return true, nil
	}
	return false, nil
}

// BF16ToF32 widens a bfloat16 to float32 (exact).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 rounds f to the nearest bfloat16, ties to even. NaNs stay NaN
// (quietened, sign kept); values beyond the BF16 range round to ±Inf.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToF32Slice sets dst[i] = BF16ToF32(src[i]) for i < min(len(dst), len(src)).
func BF16ToF32Slice(dst []float32, src []uint16) {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// F32ToBF16Slice sets dst[i] = F32ToBF16(src[i]) for i < min(len(dst), len(src)).
func F32ToBF16Slice(dst []uint16, src []float32) {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, f := range src {
		dst[i] = F32ToBF16(f)
	}
}
