// Tensor-core matrix product for prefill: dst (n × rows) = x (n × cols) · Wᵀ
// with W bf16 (rows × cols, row-major), x and dst float32, float32
// accumulation. Needs sm_80 (bf16 wmma). CPU reference: refMatMul in
// kernels/kerneltest (float64) and kernels.Generic().MatMul.
//
// Tiling: a block of 4 warps computes a 64 (tokens) × 64 (weight rows) tile
// of dst; each warp owns a 32 × 32 quarter as 2 × 2 wmma 16×16×16
// accumulators. K advances 32 at a time through shared memory: x is rounded
// to bf16 while staged, W is copied as is; both are zero-padded at the
// edges, so any n, rows and cols work (no alignment needed).
//
// gemm_bf16_1: x rounded to bf16 (one mma per step). Error ~ 2^-9 relative
//   per product: NMSE ≈ 1e-6, the usual bf16 GEMM accuracy.
// gemm_bf16_2: x split as hi + lo, two bf16 numbers (hi = bf16(x),
//   lo = bf16(x - hi)), and two mmas per step: x·W is then exact to about
//   2^-17 relative, matching a float32 GEMM (NMSE ≈ 1e-10) at twice the
//   tensor work; prefill has tensor throughput to spare, so this is the
//   default and passes the 1e-7 conformance limit. The lo pass uses W with
//   non-finite entries zeroed, so an Inf weight gives ±Inf, not NaN.
#include "common.cuh"
#include <mma.h>
using namespace nvcuda;

#define BM 64   // tokens per block
#define BN 64   // weight rows per block
#define BK 32   // k per stage
#define PAD 8   // bf16 padding per shared row (bank conflicts; keeps 16-byte rows)

template <bool SPLIT>
__device__ __forceinline__ void gemm_bf16_body(float* __restrict__ dst, const float* __restrict__ x,
                                               const uint16_t* __restrict__ w, int n, int rows, int cols) {
    __shared__ __align__(32) __nv_bfloat16 xs_hi[BM][BK + PAD];
    __shared__ __align__(32) __nv_bfloat16 xs_lo[SPLIT ? BM : 1][BK + PAD];
    __shared__ __align__(32) __nv_bfloat16 ws[BN][BK + PAD];
    // For the lo pass, W with its infinities and NaNs zeroed: hi·Inf already
    // gives the right ±Inf (or NaN), and lo·Inf, of the opposite sign when
    // hi rounded x up, would turn it into NaN.
    __shared__ __align__(32) __nv_bfloat16 wsf[SPLIT ? BN : 1][BK + PAD];
    __shared__ __align__(32) float out[4][16][16 + 4];

    int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.f);

    for (int k0 = 0; k0 < cols; k0 += BK) {
        // Stage x: 64 × 32 floats, 128 threads, 16 each.
        for (int e = tid; e < BM * BK; e += blockDim.x) {
            int i = e / BK, k = e % BK;
            int gi = m0 + i, gk = k0 + k;
            float v = (gi < n && gk < cols) ? x[(size_t)gi * cols + gk] : 0.f;
            __nv_bfloat16 hi = __float2bfloat16_rn(v);
            xs_hi[i][k] = hi;
            if (SPLIT) {
                float h = __bfloat162float(hi);
                // An infinite hi leaves nothing to add (and x - hi would be NaN).
                xs_lo[i][k] = __float2bfloat16_rn(isfinite(h) ? v - h : 0.f);
            }
        }
        for (int e = tid; e < BN * BK; e += blockDim.x) {
            int j = e / BK, k = e % BK;
            int gj = n0 + j, gk = k0 + k;
            uint16_t b = (gj < rows && gk < cols) ? w[(size_t)gj * cols + gk] : (uint16_t)0;
            ws[j][k] = *reinterpret_cast<__nv_bfloat16*>(&b);
            if (SPLIT) {
                uint16_t f = (b & 0x7f80u) == 0x7f80u ? (uint16_t)0 : b;
                wsf[j][k] = *reinterpret_cast<__nv_bfloat16*>(&f);
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[2], bf[2];
#pragma unroll
            for (int j = 0; j < 2; j++) {
                wmma::load_matrix_sync(b[j], &ws[wn + j * 16][kk], BK + PAD);
                if (SPLIT) wmma::load_matrix_sync(bf[j], &wsf[wn + j * 16][kk], BK + PAD);
            }
#pragma unroll
            for (int i = 0; i < 2; i++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
                wmma::load_matrix_sync(a, &xs_hi[wm + i * 16][kk], BK + PAD);
#pragma unroll
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a, b[j], acc[i][j]);
                if (SPLIT) {
                    wmma::load_matrix_sync(a, &xs_lo[wm + i * 16][kk], BK + PAD);
#pragma unroll
                    for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a, bf[j], acc[i][j]);
                }
            }
        }
        __syncthreads();
    }
    // Write back through shared memory, one 16×16 fragment at a time, with
    // bounds checks (dst is not padded).
#pragma unroll
    for (int i = 0; i < 2; i++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            wmma::store_matrix_sync(&out[warp][0][0], acc[i][j], 16 + 4, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                int ii = e / 16, jj = e % 16;
                int gi = m0 + wm + i * 16 + ii, gj = n0 + wn + j * 16 + jj;
                if (gi < n && gj < rows) dst[(size_t)gi * rows + gj] = out[warp][ii][jj];
            }
            __syncwarp();
        }
    }
}

extern "C" __global__ void __launch_bounds__(128) gemm_bf16_1(float* dst, const float* x, const uint16_t* w, int n, int rows, int cols) {
    gemm_bf16_body<false>(dst, x, w, n, rows, cols);
}

extern "C" __global__ void __launch_bounds__(128) gemm_bf16_2(float* dst, const float* x, const uint16_t* w, int n, int rows, int cols) {
    gemm_bf16_body<true>(dst, x, w, n, rows, cols);
}
