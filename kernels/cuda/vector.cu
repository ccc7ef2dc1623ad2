// Row-wise and element-wise ops: RMSNorm, SwiGLU, softmax, RoPE, embedding
// lookup, and the small BLAS-1 ops of the kernels conformance suite (dot,
// axpy, scale, add, dot_rows, axpy_rows). CPU references: package kernels
// (Generic backend), model's ropeTable.rotate, and cuda/ref.go.
#include "common.cuh"

// rmsnorm_1: one block per row; dst = x / sqrt(mean(x²) + eps) · weight.
// dst may be x.
extern "C" __global__ void rmsnorm_1(float* dst, const float* x, const float* __restrict__ weight, int d, float eps) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * d;
    float* dr = dst + (size_t)blockIdx.x * d;
    float s = 0.f;
    for (int i = threadIdx.x; i < d; i += blockDim.x) s += xr[i] * xr[i];
    s = block_sum(s, scratch);
    float scale = rsqrtf(s / (float)d + eps);
    for (int i = threadIdx.x; i < d; i += blockDim.x) dr[i] = xr[i] * scale * weight[i];
}

__device__ __forceinline__ float silu(float g) { return g / (1.f + expf(-g)); }

// swiglu_rows_1: the model's layout, row i of gu = gate (ffn) then up (ffn);
// dst (n × ffn) = silu(gate) · up. One thread per output element.
extern "C" __global__ void swiglu_rows_1(float* dst, const float* gu, int n, int ffn) {
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)n * ffn) return;
    size_t i = e / ffn, j = e % ffn;
    const float* row = gu + i * 2 * ffn;
    dst[e] = silu(row[j]) * row[ffn + j];
}

// swiglu_1: dst[i] = silu(gate[i]) · up[i] (the kernels.Ops form).
extern "C" __global__ void swiglu_1(float* dst, const float* gate, const float* up, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = silu(gate[i]) * up[i];
}

// softmax_1: one block per row of length d, in place, numerically stable;
// a NaN anywhere makes the row NaN, -Inf entries give 0.
extern "C" __global__ void softmax_1(float* x, int d) {
    __shared__ float scratch[32];
    float* xr = x + (size_t)blockIdx.x * d;
    float m = NDBG_NEG_INF;
    for (int i = threadIdx.x; i < d; i += blockDim.x) m = nan_max(m, xr[i]);
    m = block_max(m, scratch);
    float s = 0.f;
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        float e = expf(xr[i] - m);
        xr[i] = e;
        s += e;
    }
    s = block_sum(s, scratch);
    float inv = 1.f / s;
    for (int i = threadIdx.x; i < d; i += blockDim.x) xr[i] *= inv;
}

// rope_1: rotary embedding in Hugging Face's rotate_half convention, in
// place on x (n × heads × hd) for positions pos0 … pos0+n-1, with cos/sin
// tables (context × hd/2) precomputed on the host (llama3 scaling included):
//   x'[i] = x[i]·cos − x[i+h]·sin,  x'[i+h] = x[i+h]·cos + x[i]·sin.
// One thread per (token, head, pair).
extern "C" __global__ void rope_1(float* x, const float* __restrict__ cosT, const float* __restrict__ sinT,
                                  int n, int heads, int hd, int pos0) {
    int half = hd / 2;
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)n * heads * half) return;
    int i = e % half;
    size_t th = e / half;
    int t = th / heads;
    float* v = x + th * hd;
    size_t p = (size_t)(pos0 + t) * half + i;
    float c = cosT[p], s = sinT[p];
    float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
}

// embed_bf16_1 / embed_f32_1: dst (n × d) = rows ids[i] of the embedding
// table. Ids are checked on the host. One block per token.
extern "C" __global__ void embed_bf16_1(float* dst, const uint16_t* __restrict__ table, const int* ids, int d) {
    const uint16_t* row = table + (size_t)ids[blockIdx.x] * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x) dst[(size_t)blockIdx.x * d + i] = bf2f(row[i]);
}

extern "C" __global__ void embed_f32_1(float* dst, const float* __restrict__ table, const int* ids, int d) {
    const float* row = table + (size_t)ids[blockIdx.x] * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x) dst[(size_t)blockIdx.x * d + i] = row[i];
}

// add_1: dst = a + b (dst may alias either).
extern "C" __global__ void add_1(float* dst, const float* a, const float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = a[i] + b[i];
}

// scale_1: x *= a.
extern "C" __global__ void scale_1(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

// axpy_1: dst += a·x.
extern "C" __global__ void axpy_1(float* dst, float a, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] += a * x[i];
}

// dot_rows_1: dst[j] = Σ_c x[c] · m[j·stride + c], one warp per row j
// (Dot is the one-row case).
extern "C" __global__ void dot_rows_1(float* dst, const float* x, const float* m, int rows, int width, int stride) {
    int j = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (j >= rows) return;
    const float* mr = m + (size_t)j * stride;
    float s = 0.f;
    for (int c = lane; c < width; c += 32) s += x[c] * mr[c];
    s = warp_sum(s);
    if (lane == 0) dst[j] = s;
}

// axpy_rows_1: dst[c] += Σ_j a[j] · m[j·stride + c], one thread per column,
// walking the rows in order.
extern "C" __global__ void axpy_rows_1(float* dst, const float* a, const float* m, int rows, int width, int stride) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= width) return;
    float s = dst[c];
    for (int j = 0; j < rows; j++) s += a[j] * m[(size_t)j * stride + c];
    dst[c] = s;
}
