// Sampling helpers on the device, so a decode step can stay there: greedy
// argmax over logits and a token mask (a bitset from constrained decoding)
// applied to logits. CPU references: cuda/ref.go (RefArgmax, RefApplyMask).
#include "common.cuh"

// argmax_1: one block per row of d logits; out[row] = the index of the
// largest value, the lowest index on ties; NaNs are skipped (an all-NaN row
// gives 0).
extern "C" __global__ void argmax_1(int* out, const float* x, int d) {
    __shared__ float sv[32];
    __shared__ int si[32];
    const float* xr = x + (size_t)blockIdx.x * d;
    float best = NDBG_NEG_INF;
    int bi = -1;
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        float f = xr[i];
        if (f == f && (bi < 0 || f > best)) { best = f; bi = i; }
    }
    // Warp reduce: larger value wins, then lower index; -1 means none.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, best, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oi >= 0 && (bi < 0 || ov > best || (ov == best && oi < bi))) { best = ov; bi = oi; }
    }
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    if (lane == 0) { sv[w] = best; si[w] = bi; }
    __syncthreads();
    if (threadIdx.x == 0) {
        float b = NDBG_NEG_INF;
        int idx = -1;
        for (int k = 0; k < nw; k++)
            if (si[k] >= 0 && (idx < 0 || sv[k] > b || (sv[k] == b && si[k] < idx))) { b = sv[k]; idx = si[k]; }
        out[blockIdx.x] = idx < 0 ? 0 : idx;
    }
}

// apply_mask_1: logits[i] = -Inf where bit i of mask is 0 (bit i is bit
// i % 32 of word i / 32), for i < d; allowed logits are left as they are.
extern "C" __global__ void apply_mask_1(float* logits, const uint32_t* __restrict__ mask, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < d && !((mask[i >> 5] >> (i & 31)) & 1u)) logits[i] = NDBG_NEG_INF;
}
