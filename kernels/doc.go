// Package kernels holds the CPU compute kernels of the inference engine:
// matrix multiplication against row-major weight matrices (F32 or BF16),
// the vector helpers attention and the MLP need, BF16 conversion, a worker
// pool that shares the machine (its threads spin at most 50 µs per wait),
// and machine references
// (memory read bandwidth, FMA peak) for benchmarks.
//
// # Implementations
//
// Every operation has a plain pure-Go implementation (Generic). On amd64,
// unless built with the noasm tag, assembly kernels for AVX2+FMA and
// AVX-512F are selected at run time from the CPU's features (Native); the
// package-level functions use Native (an Impl). Impls lists every level the CPU
// can run, so tests and benchmarks can compare them; kernels/kerneltest is
// the conformance suite each of them (and the CUDA kernels) passes.
//
// # MatMul
//
// MatMul computes dst = x · Wᵀ (x is n × Cols, W is Rows × Cols, row-major).
//   - n = 1 (decode) is a matrix-vector product, memory-bound: eight weight
//     rows at a time (AVX-512; four with AVX2) against one vector of x,
//     spread over the pool in blocks of about 64 KiB of weights.
//   - small batches (batched decode: n = 2…4 with AVX-512, 2…8 with AVX2)
//     read each weight once for all rows of x: a four-vector kernel (AVX-512),
//     or one kernel per n that widens each weight vector once and multiplies
//     it into all n rows (AVX2, where the padded GEMM panel below would be
//     bound by weight broadcasts).
//   - larger n (prefill) is compute-bound: x is packed K-major into panels of
//     32 rows (16 with AVX2; a half panel for a short rest), and a register
//     tile of 12 weight rows × 32 x rows (6 × 16 with AVX2) accumulates in
//     24 vector registers, weights broadcast straight from their rows (so
//     BF16 weights are never repacked), K taken in blocks that keep the
//     panels in L2. Weight groups are spread over the pool.
//
// # Precision
//
// All arithmetic accumulates in float32. BF16 weights are widened to
// float32 exactly in registers (a BF16 value is the upper half of a float32)
// and multiplied with float32 activations, so a BF16 product differs from
// the float64 reference on the same BF16 weights only by float32 rounding
// (the conformance limit is the F32 one, NMSE ≤ 1e-7). VDPBF16PS doubles
// the BF16 FLOP rate but needs x rounded to BF16 too (8-bit mantissa: about
// 2e-3 relative error per product, NMSE ≈ 3e-6 on a product): Native does
// not use it; the opt-in implementation Fast (avx512bf16) does, for BF16 products
// with n > 4, on CPUs with AVX-512 BF16 (its bytes are hand-encoded: the Go
// assembler has no AVX512_BF16 mnemonics).
// Softmax and SwiGLU use a vectorized exp with relative error ≤ 2e-7.
//
// # Sizes
//
// Element-wise helpers work on the common prefix of their slices (like the
// built-in copy), so they never index out of range; MatMul reports bad
// sizes as an error wrapping ErrShape and writes nothing.
package kernels
