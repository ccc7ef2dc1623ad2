// Causal attention over a KV cache, with grouped-query heads (query head h
// reads KV head h / (heads/kv_heads)) and optional sliding windows (the
// query at position p sees keys at positions > p - window only).
//
// Layout: q and dst are n × heads × hd (float32), for queries at positions
// pos0 … pos0+n-1. k and v hold rows of kv_heads × hd for positions
// kpos0 … (row r is position kpos0 + r), so a caller may pass only the rows
// the queries can see. CPU reference: model.CPU.Attention and
// cuda/ref.go's RefAttention.
//
// attn_partial_1 + attn_combine_1 (split-K, "flash decoding"): grid.x walks
//   the (query, head) pairs and grid.y splits each one's visible keys into
//   `splits` contiguous chunks, so a single decode query over a long context
//   still fills the GPU. In a block of 4 warps, each warp takes every 4th
//   key of its chunk: the lanes hold hd/32 elements of q, a warp-wide sum
//   gives the score, and an online softmax (running max m, sum l and
//   weighted values acc) absorbs it. The 4 warps merge in shared memory
//   and write (m, l, acc) for their chunk; attn_combine_1 merges the chunks:
//   out = Σ e^(m_s - M) acc_s / Σ e^(m_s - M) l_s. hd ≤ 256.
//   Prefill uses the same kernels with splits = 1 (one pass per query; a
//   tiled tensor-core flash-attention kernel is the next variant to write).
#include "common.cuh"

#define AW 4        // warps per block
#define MAXE 8      // hd / 32 elements per lane at most (hd ≤ 256)

extern "C" __global__ void __launch_bounds__(128) attn_partial_1(
    float* __restrict__ part_m, float* __restrict__ part_l, float* __restrict__ part_acc,
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
    int n, int heads, int kv_heads, int hd, int pos0, int kpos0, int window, int splits, float scale) {
    __shared__ float sm[AW], sl[AW];
    __shared__ float sacc[AW][MAXE * 32];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int th = blockIdx.x, s = blockIdx.y;
    int t = th / heads, h = th % heads;
    int g = h / (heads / kv_heads);
    int kvdim = kv_heads * hd;
    int pos = pos0 + t;
    int first = window > 0 ? max(0, pos - window + 1) : 0;
    int span = pos + 1 - first;
    int chunk = (span + splits - 1) / splits;
    int lo = first + s * chunk, hi = min(pos + 1, lo + chunk);

    float qv[MAXE], acc[MAXE];
    const float* qr = q + (size_t)th * hd;
#pragma unroll
    for (int e = 0; e < MAXE; e++) {
        int d = lane + 32 * e;
        qv[e] = d < hd ? qr[d] * scale : 0.f;
        acc[e] = 0.f;
    }
    float m = NDBG_NEG_INF, l = 0.f;
    for (int j = lo + warp; j < hi; j += AW) {
        const float* kr = k + (size_t)(j - kpos0) * kvdim + g * hd;
        const float* vr = v + (size_t)(j - kpos0) * kvdim + g * hd;
        float sc = 0.f;
#pragma unroll
        for (int e = 0; e < MAXE; e++) {
            int d = lane + 32 * e;
            if (d < hd) sc += qv[e] * kr[d];
        }
        sc = warp_sum(sc);
        float mn = nan_max(m, sc);
        float corr = expf(m - mn), p = expf(sc - mn);
        l = l * corr + p;
#pragma unroll
        for (int e = 0; e < MAXE; e++) {
            int d = lane + 32 * e;
            if (d < hd) acc[e] = acc[e] * corr + p * vr[d];
        }
        m = mn;
    }
    if (lane == 0) { sm[warp] = m; sl[warp] = l; }
#pragma unroll
    for (int e = 0; e < MAXE; e++) sacc[warp][lane + 32 * e] = acc[e];
    __syncthreads();
    float M = NDBG_NEG_INF;
    for (int w = 0; w < AW; w++) M = nan_max(M, sm[w]);
    size_t slot = (size_t)th * splits + s;
    if (threadIdx.x == 0) {
        float L = 0.f;
        for (int w = 0; w < AW; w++) L += sm[w] == NDBG_NEG_INF ? 0.f : sl[w] * expf(sm[w] - M);
        part_m[slot] = M;
        part_l[slot] = L;
    }
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0.f;
        for (int w = 0; w < AW; w++) a += sm[w] == NDBG_NEG_INF ? 0.f : sacc[w][d] * expf(sm[w] - M);
        part_acc[slot * hd + d] = a;
    }
}

extern "C" __global__ void attn_combine_1(float* __restrict__ dst, const float* __restrict__ part_m,
                                          const float* __restrict__ part_l, const float* __restrict__ part_acc,
                                          int hd, int splits) {
    int th = blockIdx.x;
    const float* pm = part_m + (size_t)th * splits;
    const float* pl = part_l + (size_t)th * splits;
    float M = NDBG_NEG_INF;
    for (int s = 0; s < splits; s++) M = nan_max(M, pm[s]);
    float L = 0.f;
    for (int s = 0; s < splits; s++) L += pm[s] == NDBG_NEG_INF ? 0.f : pl[s] * expf(pm[s] - M);
    float inv = 1.f / L;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0.f;
        for (int s = 0; s < splits; s++)
            a += pm[s] == NDBG_NEG_INF ? 0.f : part_acc[((size_t)th * splits + s) * hd + d] * expf(pm[s] - M);
        dst[(size_t)th * hd + d] = a * inv;
    }
}
