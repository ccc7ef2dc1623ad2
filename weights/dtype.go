package weights

import (
	"fmt"
	"math"

	"github.com/ndbg/ndbg/kernels"
)

// DType is the element type of a tensor: the floating-point types a LLaMA
// checkpoint uses, plus I32 and I64 for auxiliary data such as token ids in
// test references.
type DType uint8

// Supported element types. The zero value is invalid so that an
// uninitialised Tensor is caught by validation.
const (
	F32 DType = iota + 1
	F16
	BF16
	I32
	I64
	// Q8_0 and the types after it are llama.cpp's block-quantized formats
	// (package kernels has their layouts), read from GGUF files: a tensor's
	// last dimension is a whole number of blocks.
	Q8_0
	Q4_0
	Q5_0
	Q4_K
	Q6_K
	// U8 is raw bytes: how a safetensors file holds the rows of a
	// block-quantized tensor, which the format has no dtype for (see
	// QuantizedKeyPrefix); a U8 tensor without that mark is loaded as U8.
	U8
)

// Quantized reports whether d is a block-quantized type.
func (d DType) Quantized() bool { return d >= Q8_0 && d <= Q6_K }

// Kernels returns the kernels.DType of d's elements: F32, BF16 or a
// quantized type (ok false for F16, I32, I64 and invalid dtypes).
func (d DType) Kernels() (kernels.DType, bool) {
	switch d {
	case F32:
		return kernels.F32, true
	case BF16:
		return kernels.BF16, true
	case Q8_0:
		return kernels.Q8_0, true
	case Q4_0:
		return kernels.Q4_0, true
	case Q5_0:
		return kernels.Q5_0, true
	case Q4_K:
		return kernels.Q4_K, true
	case Q6_K:
		return kernels.Q6_K, true
	}
	return 0, false
}

// FromKernels is the DType of a kernels.DType (0, invalid, for an unknown one).
func FromKernels(k kernels.DType) DType {
	for _, d := range []DType{F32, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K} {
		if kd, _ := d.Kernels(); kd == k {
			return d
		}
	}
	return 0
}

// Bytes returns the size of n elements of d in bytes, false when n is not
// a whole number of d's blocks or the size overflows.
func (d DType) Bytes(n int) (int, bool) {
	if d.Quantized() {
		k, _ := d.Kernels()
		bl := k.BlockLen()
		if n < 0 || n%bl != 0 || n/bl > math.MaxInt/k.BlockBytes() {
			return 0, false
		}
		return k.RowBytes(n), true
	}
	if d.Size() == 0 || n < 0 || n > math.MaxInt/d.Size() {
		return 0, false
	}
	return n * d.Size(), true
}

// Size returns the number of bytes of one element, or 0 for an invalid
// DType and the quantized ones (see Bytes).
func (d DType) Size() int {
	switch d {
	case I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	case U8:
		return 1
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 }

// String returns the safetensors name of the dtype ("F32", "BF16", ...).
func (d DType) String() string {
	switch d {
	case F32:
		return "F32"
	case F16:
		return "F16"
	case BF16:
		return "BF16"
	case I32:
		return "I32"
	case I64:
		return "I64"
	case U8:
		return "U8"
	}
	if k, ok := d.Kernels(); ok {
		return k.String()
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// isKnownUnsupported reports whether s is a dtype defined by the
// safetensors format that this package deliberately does not load, so the
// error can say so.
func isKnownUnsupported(s string) bool {
	switch s {
	case "BOOL", "I8", "U16", "I16", "U32", "U64", "F64",
		"F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64":
		return true
	}
	return false
}

// ParseDType maps a safetensors dtype name to a DType. Names that the format
// defines but this package does not load get an error saying so.
func ParseDType(s string) (DType, error) {
	switch s {
	case "F32":
		return F32, nil
	case "F16":
		return F16, nil
	case "BF16":
		return BF16, nil
	case "I32":
		return I32, nil
	case "I64":
		return I64, nil
	case "U8":
		return U8, nil
	}
	if isKnownUnsupported(s) {
		return 0, fmt.Errorf("unsupported dtype %q (only F32, F16, BF16, I32, I64 and U8 are loaded)", s)
	}
	return 0, fmt.Errorf("unknown dtype %q", truncate(s, 32))
}

// truncate shortens untrusted strings before they go into error messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
