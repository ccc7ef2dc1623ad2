package weights

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/x448/float16"

	"github.com/ndbg/ndbg/kernels"
)

// Tensor is one named tensor: its element type, its shape (row-major, the
// last dimension contiguous) and its raw little-endian bytes. A Tensor
// returned by a File or Checkpoint aliases the read-only file mapping: Data
// must not be modified and is valid until the owner is closed. A Tensor built
// by the caller (for WriteSafetensors) owns whatever Data it was given.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NumElements returns the product of the dimensions (1 for a scalar).
func (t *Tensor) NumElements() int {
	n, _ := numElements(t.Shape)
	return n
}

// validate checks that Data has exactly the length Shape and DType imply
// (for a quantized dtype: a last dimension of whole blocks).
func (t *Tensor) validate() error {
	if t.DType.Size() == 0 && !t.DType.Quantized() {
		return fmt.Errorf("tensor %q: invalid dtype %v", t.Name, t.DType)
	}
	if len(t.Shape) > maxDims {
		return fmt.Errorf("tensor %q: %d dimensions, at most %d supported", t.Name, len(t.Shape), maxDims)
	}
	n, ok := numElements(t.Shape)
	if !ok {
		return fmt.Errorf("tensor %q: invalid shape %v", t.Name, t.Shape)
	}
	if t.DType.Quantized() {
		k, _ := t.DType.Kernels()
		if len(t.Shape) == 0 || t.Shape[len(t.Shape)-1]%k.BlockLen() != 0 {
			return fmt.Errorf("tensor %q: shape %v of %s: the last dimension is not whole blocks of %d", t.Name, t.Shape, t.DType, k.BlockLen())
		}
	}
	want, ok := t.DType.Bytes(n)
	if !ok {
		return fmt.Errorf("tensor %q: invalid shape %v", t.Name, t.Shape)
	}
	if len(t.Data) != want {
		return fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, have %d", t.Name, t.Shape, t.DType, want, len(t.Data))
	}
	return nil
}

// validateFloat is validate plus a check that the dtype is floating point
// or quantized.
func (t *Tensor) validateFloat() error {
	if err := t.validate(); err != nil {
		return err
	}
	if !t.DType.IsFloat() && !t.DType.Quantized() {
		return fmt.Errorf("tensor %q is %s, not floating point", t.Name, t.DType)
	}
	return nil
}

// Int64s returns the elements of an I32, I64 or U8 tensor as int64 (a new
// slice); floating-point tensors are an error.
func (t *Tensor) Int64s() ([]int64, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	out := make([]int64, t.NumElements())
	switch t.DType {
	case I64:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
	case I32:
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	case U8:
		for i := range out {
			out[i] = int64(t.Data[i])
		}
	default:
		return nil, fmt.Errorf("tensor %q is %s, not an integer type", t.Name, t.DType)
	}
	return out, nil
}

// F32 returns the elements as float32. For an F32 tensor whose data is
// 4-byte aligned the result aliases Data (zero-copy, read-only when Data is
// mapped from a file); otherwise the values are converted into a new slice.
// BF16 and F16 are widened exactly, quantized tensors dequantized; integer
// tensors are an error.
func (t *Tensor) F32() ([]float32, error) {
	if err := t.validateFloat(); err != nil {
		return nil, err
	}
	n := t.NumElements()
	if t.DType.Quantized() {
		k, _ := t.DType.Kernels()
		out := make([]float32, n)
		if err := kernels.DequantizeRow(k, out, t.Data); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		return out, nil
	}
	if t.DType == F32 && n > 0 && hostLittleEndian() && uintptr(unsafe.Pointer(&t.Data[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&t.Data[0])), n), nil
	}
	out := make([]float32, n)
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case BF16:
		if u, ok := t.uint16View(); ok {
			for i, b := range u {
				out[i] = math.Float32frombits(uint32(b) << 16)
			}
			break
		}
		for i := range out {
			out[i] = kernels.BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case F16:
		for i := range out {
			out[i] = float16.Frombits(binary.LittleEndian.Uint16(t.Data[2*i:])).Float32()
		}
	}
	return out, nil
}

// BF16 returns the elements as bfloat16 bit patterns. For a BF16 tensor
// whose data is 2-byte aligned the result aliases Data (zero-copy); F32 and
// F16 tensors are converted with round-to-nearest-even, as PyTorch's
// .to(torch.bfloat16) does.
func (t *Tensor) BF16() ([]uint16, error) {
	if err := t.validateFloat(); err != nil {
		return nil, err
	}
	n := t.NumElements()
	if t.DType == BF16 {
		if u, ok := t.uint16View(); ok {
			return u, nil
		}
		out := make([]uint16, n)
		for i := range out {
			out[i] = binary.LittleEndian.Uint16(t.Data[2*i:])
		}
		return out, nil
	}
	f, err := t.F32()
	if err != nil {
		return nil, err
	}
	out := make([]uint16, n)
	for i, v := range f {
		out[i] = kernels.F32ToBF16(v)
	}
	return out, nil
}

// F16 returns the elements as IEEE half-precision bit patterns: zero-copy
// for an aligned F16 tensor, otherwise converted with round-to-nearest-even.
func (t *Tensor) F16() ([]uint16, error) {
	if err := t.validateFloat(); err != nil {
		return nil, err
	}
	n := t.NumElements()
	if t.DType == F16 {
		if u, ok := t.uint16View(); ok {
			return u, nil
		}
		out := make([]uint16, n)
		for i := range out {
			out[i] = binary.LittleEndian.Uint16(t.Data[2*i:])
		}
		return out, nil
	}
	f, err := t.F32()
	if err != nil {
		return nil, err
	}
	out := make([]uint16, n)
	for i, v := range f {
		out[i] = float16.Fromfloat32(v).Bits()
	}
	return out, nil
}

// uint16View returns Data as []uint16 without copying when the host is
// little-endian and Data is 2-byte aligned.
func (t *Tensor) uint16View() ([]uint16, bool) {
	if len(t.Data) < 2 || !hostLittleEndian() || uintptr(unsafe.Pointer(&t.Data[0]))%2 != 0 {
		return nil, false
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&t.Data[0])), len(t.Data)/2), true
}

// CheckFinite returns an error naming the tensor and its first element that
// is NaN or infinite; integer tensors pass. It is CheckFinite(ctx, 1, t).
func (t *Tensor) CheckFinite() error { return CheckFinite(context.Background(), 1, t) }

// finiteChunk is how many bytes of a tensor one CheckFinite task scans.
const finiteChunk = 4 << 20

// CheckFinite checks that the float tensors ts hold no NaN or infinite
// value (a diverged or corrupt checkpoint, which would otherwise load and
// turn every logit into NaN). It reads each byte once, in chunks of 4 MiB
// shared by threads threads (a kernels.Pool; ≤ 0: one per CPU). The error names every
// tensor that holds one, with its first such element.
func CheckFinite(ctx context.Context, threads int, ts ...*Tensor) error {
	type chunk struct{ t, from, to int } // a tensor's byte range
	var chunks []chunk
	for k, t := range ts {
		if err := t.validate(); err != nil {
			return err
		}
		if size, _ := finiteBits(t.DType); size > 0 || t.DType.Quantized() {
			for from := 0; from < len(t.Data); from += finiteChunk {
				chunks = append(chunks, chunk{k, from, min(from+finiteChunk, len(t.Data))})
			}
		}
	}
	first := make([]int, len(ts)) // per tensor, the first bad element's byte offset; -1: none
	for k := range first {
		first[k] = -1
	}
	var mu sync.Mutex
	pool := kernels.NewPool(threads)
	defer pool.Close()
	pool.For(len(chunks), 1, func(lo, hi int) {
		for _, c := range chunks[lo:hi] {
			if ctx.Err() != nil {
				return
			}
			size, exp := finiteBits(ts[c.t].DType)
			if ts[c.t].DType.Quantized() {
				if at := firstNonFiniteScale(ts[c.t].DType, ts[c.t].Data, c.from, c.to); at >= 0 {
					mu.Lock()
					if first[c.t] < 0 || at < first[c.t] {
						first[c.t] = at
					}
					mu.Unlock()
				}
				continue
			}
			if i := firstNonFinite(ts[c.t].Data[c.from:c.to], size, exp); i >= 0 {
				mu.Lock()
				if at := c.from + i*size; first[c.t] < 0 || at < first[c.t] {
					first[c.t] = at
				}
				mu.Unlock()
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("weights: checking for NaN and Inf: %w", err)
	}
	var errs []error
	for k, at := range first {
		if at < 0 {
			continue
		}
		t := ts[k]
		if t.DType.Quantized() {
			kd, _ := t.DType.Kernels()
			errs = append(errs, fmt.Errorf("tensor %q holds a non-finite weight: block %d of %v (%s) has a NaN or infinite scale",
				t.Name, at/kd.BlockBytes(), t.Shape, t.DType))
			continue
		}
		var v float32
		switch t.DType {
		case F32:
			v = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[at:]))
		case BF16:
			v = kernels.BF16ToF32(binary.LittleEndian.Uint16(t.Data[at:]))
		case F16:
			v = F16ToF32(binary.LittleEndian.Uint16(t.Data[at:]))
		}
		errs = append(errs, fmt.Errorf("tensor %q holds a non-finite weight: element %d of %v is %v",
			t.Name, at/t.DType.Size(), t.Shape, v))
	}
	return errors.Join(errs...)
}

// firstNonFiniteScale returns the byte offset of the first block of a
// quantized tensor's data whose first block starts in [from, to) and whose
// F16 scale (or Q4_K's scale or min) is NaN or infinite, or -1. (A block's
// values are finite exactly when its scales are.)
func firstNonFiniteScale(dt DType, data []byte, from, to int) int {
	k, _ := dt.Kernels()
	bb := k.BlockBytes()
	var offs []int // the scales' offsets in a block
	switch dt {
	case Q4_K:
		offs = []int{0, 2}
	case Q6_K:
		offs = []int{208}
	default:
		offs = []int{0}
	}
	for b := (from + bb - 1) / bb * bb; b < to && b+bb <= len(data); b += bb {
		for _, o := range offs {
			if binary.LittleEndian.Uint16(data[b+o:])&0x7c00 == 0x7c00 {
				return b
			}
		}
	}
	return -1
}

// finiteBits returns the element size of a float dtype and its exponent
// bits, all set for NaN and ±Inf; size 0 for other dtypes.
func finiteBits(dt DType) (size int, exp uint64) {
	switch dt {
	case F32:
		return 4, 0x7f800000
	case BF16:
		return 2, 0x7f80
	case F16:
		return 2, 0x7c00
	}
	return 0, 0
}

// firstNonFinite returns the index of the first little-endian element of
// size 2 or 4 bytes in data whose exponent bits (exp) are all set, or -1.
// Whole 8-byte words are tested at once: with y = (word & E) ^ E, a lane is
// zero exactly where an element has every exponent bit set, and since the
// top bit of every lane of y is clear, (y - ones) & ^y & highs is non-zero
// exactly when some lane is zero.
func firstNonFinite(data []byte, size int, exp uint64) int {
	var ones, highs, e uint64
	for lane := 0; lane < 8; lane += size {
		ones |= 1 << (8 * lane)
		highs |= 1 << (8*(lane+size) - 1)
		e |= exp << (8 * lane)
	}
	hit := func(w uint64) uint64 { y := w&e ^ e; return (y - ones) &^ y & highs }
	i := 0
	for ; i+32 <= len(data); i += 32 { // four words a round, one branch
		d := data[i : i+32]
		if hit(binary.LittleEndian.Uint64(d))|hit(binary.LittleEndian.Uint64(d[8:]))|
			hit(binary.LittleEndian.Uint64(d[16:]))|hit(binary.LittleEndian.Uint64(d[24:])) != 0 {
			break
		}
	}
	for ; i+size <= len(data); i += size {
		var v uint64
		if size == 2 {
			v = uint64(binary.LittleEndian.Uint16(data[i:]))
		} else {
			v = uint64(binary.LittleEndian.Uint32(data[i:]))
		}
		if v&exp == exp {
			return i / size
		}
	}
	return -1
}

// F16ToF32 widens an IEEE half-precision bit pattern exactly.
func F16ToF32(h uint16) float32 {
	return float16.Frombits(h).Float32()
}

// F32ToF16 rounds to the nearest half-precision value, ties to even.
func F32ToF16(f float32) uint16 {
	return float16.Fromfloat32(f).Bits()
}

// NewTensor builds a tensor of dtype dt from float32 values, converting them
// with round-to-nearest-even. It is meant for writing checkpoints (tests,
// training export); the shape must match len(vals).
func NewTensor(name string, dt DType, shape []int, vals []float32) (Tensor, error) {
	t := Tensor{Name: name, DType: dt, Shape: append([]int(nil), shape...)}
	if !dt.IsFloat() {
		return Tensor{}, fmt.Errorf("tensor %q: %v is not a floating-point dtype", name, dt)
	}
	n, ok := numElements(shape)
	if !ok || n != len(vals) {
		return Tensor{}, fmt.Errorf("tensor %q: shape %v does not hold %d values", name, shape, len(vals))
	}
	t.Data = make([]byte, n*dt.Size())
	for i, v := range vals {
		switch dt {
		case F32:
			binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(v))
		case BF16:
			binary.LittleEndian.PutUint16(t.Data[2*i:], kernels.F32ToBF16(v))
		case F16:
			binary.LittleEndian.PutUint16(t.Data[2*i:], F32ToF16(v))
		}
	}
	return t, nil
}

// NewIntTensor builds an I32 or I64 tensor from int64 values; values that
// do not fit I32 are an error.
func NewIntTensor(name string, dt DType, shape []int, vals []int64) (Tensor, error) {
	if dt != I32 && dt != I64 {
		return Tensor{}, fmt.Errorf("tensor %q: %v is not an integer dtype", name, dt)
	}
	n, ok := numElements(shape)
	if !ok || n != len(vals) {
		return Tensor{}, fmt.Errorf("tensor %q: shape %v does not hold %d values", name, shape, len(vals))
	}
	t := Tensor{Name: name, DType: dt, Shape: append([]int(nil), shape...), Data: make([]byte, n*dt.Size())}
	for i, v := range vals {
		if dt == I64 {
			binary.LittleEndian.PutUint64(t.Data[8*i:], uint64(v))
			continue
		}
		if v != int64(int32(v)) {
			return Tensor{}, fmt.Errorf("tensor %q: value %d at %d does not fit I32", name, v, i)
		}
		binary.LittleEndian.PutUint32(t.Data[4*i:], uint32(int32(v)))
	}
	return t, nil
}

// hostLittleEndian reports whether the machine stores integers
// little-endian, the byte order of safetensors data; zero-copy views are
// only valid then.
func hostLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
