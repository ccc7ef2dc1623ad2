// Package kernels holds the CPU compute kernels of the inference engine:
// matrix multiplication against row-major weight matrices (F32 or BF16),
// the vector helpers attention and the MLP need, BF16 conversion, a worker
// pool that shares the machine without spinning, and machine references
// (memory read bandwidth, FMA peak) for benchmarks.
//
// Every operation has a plain pure-Go implementation (Generic). On amd64,
// unless built with the noasm tag, assembly kernels for AVX2+FMA and
// AVX-512F are selected at run time from the CPU's features (Native); the
// package-level functions use the best available backend.
//
// Precision: all arithmetic accumulates in float32. BF16 weights are widened
// to float32 exactly (a BF16 value is the upper half of a float32) and
// multiplied with float32 activations; the activations are never rounded to
// BF16 (VDPBF16PS would require that and lose about 3 decimal digits of x).
//
// Slice length conventions: element-wise helpers work on the common prefix
// of their slices (like the built-in copy), so they never index out of range;
// MatMul reports bad sizes as an error and writes nothing.
package kernels
