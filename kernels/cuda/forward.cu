// Kernels of the device-resident forward pass (cuda.Model): the glue
// between the matrix products that package model does on the host when it
// drives a Backend op by op. CPU references: model.Session.step (the QKV
// split, RoPE and cache writes) and model.NewRandom (random weights).
#include "common.cuh"

// qkv_rope_1: splits the fused QKV projection of n tokens (rows of width
// W = Q + 2·KV: q heads, then k heads, then v heads) into
//   q      (n × Q, contiguous), rotated by RoPE at positions pos0 + t,
//   kcache row pos0 + t (rotated keys), vcache row pos0 + t (values),
// with cos/sin tables (positions × hd/2) and the rotate_half pairing.
// One thread per (token, slot): slots are the Q/2 query pairs, the KV/2
// key pairs, then the KV value elements.
extern "C" __global__ void qkv_rope_1(float* __restrict__ q, float* __restrict__ kcache, float* __restrict__ vcache,
                                      const float* __restrict__ qkv, const float* __restrict__ cosT,
                                      const float* __restrict__ sinT, int n, int heads, int kv_heads, int hd, int pos0) {
    int half = hd / 2;
    int Q = heads * hd, KV = kv_heads * hd, W = Q + 2 * KV;
    int slots = Q / 2 + KV / 2 + KV;
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)n * slots) return;
    int t = e / slots, c = e % slots;
    int pos = pos0 + t;
    const float* row = qkv + (size_t)t * W;
    if (c < Q / 2 + KV / 2) {
        bool isQ = c < Q / 2;
        int cc = isQ ? c : c - Q / 2;
        int h = cc / half, i = cc % half;
        const float* src = row + (isQ ? 0 : Q) + h * hd;
        float* dst = isQ ? q + (size_t)t * Q + h * hd : kcache + (size_t)pos * KV + h * hd;
        float co = cosT[(size_t)pos * half + i], si = sinT[(size_t)pos * half + i];
        float a = src[i], b = src[i + half];
        dst[i] = a * co - b * si;
        dst[i + half] = b * co + a * si;
    } else {
        int j = c - Q / 2 - KV / 2;
        vcache[(size_t)pos * KV + j] = row[Q + KV + j];
    }
}

// Random weights on the device, so the 32b benchmark needs neither 64 GB of
// host memory nor the upload: a counter-based hash (splitmix64) of
// (seed, index) gives uniform values in [lo, hi). Not the stream of
// model.NewRandom (which runs a PCG per matrix on the host); the
// distribution is the same.
__device__ __forceinline__ float hash_uniform(unsigned long long seed, size_t i) {
    unsigned long long z = seed * 0x9e3779b97f4a7c15ull + (unsigned long long)i;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f); // 24 bits → [0, 1)
}

// fill_uniform_bf16_1: w[i] = bf16(lo + (hi - lo)·u(seed, i)). The seed is
// passed as two 32-bit halves.
extern "C" __global__ void fill_uniform_bf16_1(uint16_t* w, long long n, unsigned int seed_lo, unsigned int seed_hi, float lo, float hi) {
    unsigned long long seed = ((unsigned long long)seed_hi << 32) | seed_lo;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += (size_t)gridDim.x * blockDim.x) {
        __nv_bfloat16 b = __float2bfloat16_rn(lo + (hi - lo) * hash_uniform(seed, i));
        w[i] = *reinterpret_cast<uint16_t*>(&b);
    }
}

// fill_uniform_f32_1: x[i] = lo + (hi - lo)·u(seed, i).
extern "C" __global__ void fill_uniform_f32_1(float* x, long long n, unsigned int seed_lo, unsigned int seed_hi, float lo, float hi) {
    unsigned long long seed = ((unsigned long long)seed_hi << 32) | seed_lo;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = lo + (hi - lo) * hash_uniform(seed, i);
}
