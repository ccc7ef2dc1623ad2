package kernels

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// DType is the element type of a weight matrix.
type DType uint8

const (
	// F32 is IEEE-754 binary32.
	F32 DType = iota
	// BF16 is bfloat16: the upper 16 bits of a binary32.
	BF16
	// Q8_0 and the types after it are llama.cpp's block-quantized formats
	// (quant.go has their layouts): blocks of 32 values with an 8-bit
	// quant each and one F16 scale.
	Q8_0
	// Q4_0 is blocks of 32 4-bit quants with one F16 scale.
	Q4_0
	// Q5_0 is blocks of 32 5-bit quants with one F16 scale (what llama.cpp's
	// Q4_K_M mix falls back to for rows that are not whole Q4_K blocks).
	Q5_0
	// Q4_K is super-blocks of 256 4-bit quants, eight sub-blocks with 6-bit
	// scales and mins, two F16 super-scales.
	Q4_K
	// Q6_K is super-blocks of 256 6-bit quants, sixteen sub-blocks with 8-bit
	// scales, one F16 super-scale.
	Q6_K
)

// String returns "F32", "BF16", or the quantized type's llama.cpp name
// ("Q8_0", "Q4_K", ...).
func (d DType) String() string {
	switch d {
	case F32:
		return "F32"
	case BF16:
		return "BF16"
	case Q8_0:
		return "Q8_0"
	case Q4_0:
		return "Q4_0"
	case Q5_0:
		return "Q5_0"
	case Q4_K:
		return "Q4_K"
	case Q6_K:
		return "Q6_K"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Bytes is the size of a rows × cols matrix of d in bytes (0 when cols is
// not a whole number of d's blocks or d is unknown).
func (d DType) Bytes(rows, cols int) int64 { return int64(rows) * int64(d.RowBytes(cols)) }

// Size is the size of one element in bytes: 4 for F32, 2 for BF16, 0 for
// the quantized types (whose elements are fractions of a block: see
// BlockBytes and RowBytes) and an unknown DType.
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
// F32[r*Cols+c] when DType is F32, or BF16[r*Cols+c] when DType is BF16;
// for a quantized DType, row r is the blocks Q[r*RowBytes : (r+1)*RowBytes]
// (RowBytes = DType.RowBytes(Cols); Cols a multiple of DType.BlockLen()).
//
// A Mat with Parts is the stack of its parts by rows (all of Cols columns,
// quantized, of any quantized types, none with parts of its own, their
// Rows summing to Rows); its DType, F32, BF16 and Q are not used. It lets
// a fused projection (q, k and v; gate and up) of differently quantized
// tensors be one matrix whose parts alias a mapped file, as llama.cpp's
// Q4_K_M files mix Q4_K and Q6_K within a layer.
type Mat struct {
	Rows, Cols int
	DType      DType
	F32        []float32
	BF16       []uint16
	Q          []byte
	Parts      []*Mat

	// pk, set by Pack, holds a quantized matrix's rows again, packed for
	// the AVX-512 outer-product kernels (quantpack.go).
	pk []byte
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
	if m.Parts != nil {
		return m.checkParts()
	}
	size := m.Rows * m.Cols
	if m.DType.Quantized() {
		rb := m.DType.RowBytes(m.Cols)
		switch {
		case m.Cols%m.DType.BlockLen() != 0:
			return fmt.Errorf("%w: %d×%d %v matrix: %d columns are not whole blocks of %d", ErrShape, m.Rows, m.Cols, m.DType, m.Cols, m.DType.BlockLen())
		case rb > 0 && m.Rows > math.MaxInt/rb:
			return fmt.Errorf("%w: %d×%d matrix overflows", ErrShape, m.Rows, m.Cols)
		case len(m.Q) < m.Rows*rb:
			return fmt.Errorf("%w: %d×%d %v matrix has %d bytes, want %d", ErrShape, m.Rows, m.Cols, m.DType, len(m.Q), m.Rows*rb)
		}
		return nil
	}
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

// checkParts is Check for a Mat with Parts.
func (m *Mat) checkParts() error {
	rows := 0
	for i, p := range m.Parts {
		switch {
		case p == nil:
			return fmt.Errorf("%w: part %d of a %d×%d matrix is nil", ErrShape, i, m.Rows, m.Cols)
		case p.Parts != nil:
			return fmt.Errorf("%w: part %d of a %d×%d matrix has parts of its own", ErrShape, i, m.Rows, m.Cols)
		case !p.DType.Quantized():
			return fmt.Errorf("%w: part %d of a %d×%d matrix is %v, not quantized", ErrShape, i, m.Rows, m.Cols, p.DType)
		case p.Cols != m.Cols:
			return fmt.Errorf("%w: part %d has %d columns, the matrix %d", ErrShape, i, p.Cols, m.Cols)
		}
		if err := p.Check(); err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
		if p.Rows > math.MaxInt-rows {
			return fmt.Errorf("%w: parts of a %d×%d matrix overflow", ErrShape, m.Rows, m.Cols)
		}
		rows += p.Rows
	}
	if rows != m.Rows {
		return fmt.Errorf("%w: parts of a %d×%d matrix have %d rows", ErrShape, m.Rows, m.Cols, rows)
	}
	return nil
}

// Bytes is the size of m's weights in bytes (its parts' together).
func (m *Mat) Bytes() int64 {
	if m.Parts != nil {
		var n int64
		for _, p := range m.Parts {
			n += p.Bytes()
		}
		return n
	}
	return m.DType.Bytes(m.Rows, m.Cols)
}

// part returns the part of m holding row r and r's index in it (m itself
// when m has no parts).
func (m *Mat) part(r int) (*Mat, int) {
	for _, p := range m.Parts {
		if r < p.Rows {
			return p, r
		}
		r -= p.Rows
	}
	return m, r
}

// Row returns row r of m widened to float32 in dst[:Cols] (dequantized
// for a quantized matrix). It returns nil (and writes nothing) when m is
// malformed (see Check), r is out of range or dst is shorter than Cols.
func (m *Mat) Row(dst []float32, r int) []float32 {
	if m.Check() != nil || r < 0 || r >= m.Rows || len(dst) < m.Cols {
		return nil
	}
	m, r = m.part(r)
	dst = dst[:m.Cols]
	if m.DType.Quantized() {
		rb := m.DType.RowBytes(m.Cols)
		dequantRow(m.DType, dst, m.Q[r*rb:(r+1)*rb])
		return dst
	}
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

// Prefetch asks the CPU to bring s's memory into its caches and returns at
// once, for memory that a computation will read soon and that is likely
// cold: decode attention's keys and values, which the weights read since
// the previous token have pushed out, laid out in runs of a few KiB that
// the hardware prefetchers do not follow across.
func Prefetch[E uint16 | float32](s []E) {
	if len(s) == 0 {
		return
	}
	prefetchRange((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// BF16ToF32Slice sets dst[i] = BF16ToF32(src[i]) for i < min(len(dst), len(src)).
func BF16ToF32Slice(dst []float32, src []uint16) {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// F32ToBF16Slice sets dst[i] = F32ToBF16(src[i]) for i < min(len(dst), len(src)),
// 16 at a time by a vector kernel where the CPU has AVX2 (the KV cache's
// new rows go through here: a scalar loop was 5% of a batched decode
// step's CPU time), the rest in Go.
func F32ToBF16Slice(dst []uint16, src []float32) {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	done := f32ToBF16Vec(dst, src)
	for i, f := range src[done:] {
		dst[done+i] = F32ToBF16(f)
	}
}
