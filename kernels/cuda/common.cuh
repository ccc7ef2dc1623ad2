// Shared helpers for the ndbg CUDA kernels. Every kernel is extern "C" so
// the Go side finds it by name in the PTX module; scalar parameters are int
// or float (the Go launcher passes each in an 8-byte slot, low bytes first).
#pragma once
#include <cuda_bf16.h>
#include <stdint.h>

#define NDBG_NAN __int_as_float(0x7fc00000)
#define NDBG_NEG_INF __int_as_float(0xff800000)

// bf16 → f32 is exact: the bf16 bits are the upper half of the f32.
__device__ __forceinline__ float bf2f(uint16_t h) { return __uint_as_float(((uint32_t)h) << 16); }

// Sum over the 32 lanes of a warp (every lane gets the total).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// NaN-propagating max: a NaN on either side wins (fmaxf would drop it).
__device__ __forceinline__ float nan_max(float a, float b) {
    if (a != a || b != b) return NDBG_NAN;
    return a > b ? a : b;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Block-wide sum for blockDim.x ≤ 1024 (a multiple of 32); scratch holds 32
// floats. Every thread gets the total.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[w] = v;
    __syncthreads();
    v = lane < nw ? scratch[lane] : 0.f;
    return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[w] = v;
    __syncthreads();
    v = lane < nw ? scratch[lane] : NDBG_NEG_INF;
    return warp_max(v);
}
