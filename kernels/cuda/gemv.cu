// Matrix-vector products for decode (and small batches): dst (n × rows) =
// x (n × cols) · Wᵀ, W row-major rows × cols, activations float32.
//
// Decode is memory-bound: every weight byte is read once per token, so the
// kernels aim at DRAM bandwidth. CPU reference: kernels.Generic().MatMul
// (package kernels) and refMatMul in kernels/kerneltest.
//
// gemv_bf16_1: one warp per weight row; each lane reads 16 bytes (8 bf16)
//   per step with a vectorized load when cols % 8 == 0 (else a scalar loop),
//   and accumulates up to NT = 8 tokens at once so a weight row read from
//   DRAM serves 8 tokens; grid.y walks groups of 8 tokens. 8 warps per block.
// gemv_f32_1: the same for float32 weights (float4 loads when cols % 4 == 0).
#include "common.cuh"

#define NT 8

template <int UNROLL>
__device__ __forceinline__ void gemv_bf16_body(float* __restrict__ dst, const float* __restrict__ x,
                                               const uint16_t* __restrict__ w, int n, int rows, int cols) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int r = blockIdx.x * (blockDim.x >> 5) + warp;
    int t0 = blockIdx.y * NT;
    if (r >= rows) return;
    int nt = min(NT, n - t0);
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.f;
    const uint16_t* wr = w + (size_t)r * cols;
    const float* xs = x + (size_t)t0 * cols;
    if ((cols & 7) == 0) {
        const uint4* w4 = reinterpret_cast<const uint4*>(wr);
#pragma unroll(UNROLL)
        for (int c8 = lane; c8 < cols / 8; c8 += 32) {
            uint4 p = __ldg(w4 + c8);
            float wf[8];
            wf[0] = __uint_as_float(p.x << 16); wf[1] = __uint_as_float(p.x & 0xffff0000u);
            wf[2] = __uint_as_float(p.y << 16); wf[3] = __uint_as_float(p.y & 0xffff0000u);
            wf[4] = __uint_as_float(p.z << 16); wf[5] = __uint_as_float(p.z & 0xffff0000u);
            wf[6] = __uint_as_float(p.w << 16); wf[7] = __uint_as_float(p.w & 0xffff0000u);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                if (t < nt) {
                    const float4* xv = reinterpret_cast<const float4*>(xs + (size_t)t * cols + c8 * 8);
                    float4 a = xv[0], b = xv[1];
                    acc[t] += a.x * wf[0] + a.y * wf[1] + a.z * wf[2] + a.w * wf[3] +
                              b.x * wf[4] + b.y * wf[5] + b.z * wf[6] + b.w * wf[7];
                }
            }
        }
    } else {
        for (int c = lane; c < cols; c += 32) {
            float wf = bf2f(wr[c]);
#pragma unroll
            for (int t = 0; t < NT; t++)
                if (t < nt) acc[t] += xs[(size_t)t * cols + c] * wf;
        }
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
        float s = warp_sum(acc[t]);
        if (lane == 0 && t < nt) dst[(size_t)(t0 + t) * rows + r] = s;
    }
}

extern "C" __global__ void gemv_bf16_1(float* __restrict__ dst, const float* __restrict__ x,
                                       const uint16_t* __restrict__ w, int n, int rows, int cols) {
    gemv_bf16_body<1>(dst, x, w, n, rows, cols);
}

extern "C" __global__ void gemv_bf16_2(float* __restrict__ dst, const float* __restrict__ x,
                                       const uint16_t* __restrict__ w, int n, int rows, int cols) {
    gemv_bf16_body<4>(dst, x, w, n, rows, cols);
}

extern "C" __global__ void gemv_f32_1(float* __restrict__ dst, const float* __restrict__ x,
                                      const float* __restrict__ w, int n, int rows, int cols) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int r = blockIdx.x * (blockDim.x >> 5) + warp;
    int t0 = blockIdx.y * NT;
    if (r >= rows) return;
    int nt = min(NT, n - t0);
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.f;
    const float* wr = w + (size_t)r * cols;
    const float* xs = x + (size_t)t0 * cols;
    if ((cols & 3) == 0) {
        const float4* w4 = reinterpret_cast<const float4*>(wr);
        for (int c4 = lane; c4 < cols / 4; c4 += 32) {
            float4 p = __ldg(w4 + c4);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                if (t < nt) {
                    float4 a = reinterpret_cast<const float4*>(xs + (size_t)t * cols)[c4];
                    acc[t] += a.x * p.x + a.y * p.y + a.z * p.z + a.w * p.w;
                }
            }
        }
    } else {
        for (int c = lane; c < cols; c += 32) {
            float wf = wr[c];
#pragma unroll
            for (int t = 0; t < NT; t++)
                if (t < nt) acc[t] += xs[(size_t)t * cols + c] * wf;
        }
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
        float s = warp_sum(acc[t]);
        if (lane == 0 && t < nt) dst[(size_t)(t0 + t) * rows + r] = s;
    }
}
