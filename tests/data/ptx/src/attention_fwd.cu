// A FlashAttention-2-style forward pass: one CTA of 64 threads per (batch * head, 64-query tile), one
// query row per thread; K and V tiles of 32 keys staged in shared memory; an online softmax (running
// max m and sum l, exp2f of scores pre-scaled by softmax_scale * log2(e), the accumulator rescaled by
// exp2f(m_old - m_new)); O = acc / l and LSE = m * ln(2) + logf(l) per row.  Plain FMA loops (no
// tensor cores); Q, K, V, O of shape [bh, seq, D] in f32 or f16 (f32 accumulation); causal (key j
// attends to query i iff j <= i) when the argument says so.  Built with --use_fast_math:
// ex2.approx.ftz.f32, lg2.approx.ftz.f32, div.approx.ftz.f32 / rcp.approx.ftz.f32.
// ptx: attention_fwd.sm90a.ptx -arch=sm_90a --use_fast_math
#include <cuda_fp16.h>

#define ATT_BM 64
#define ATT_BN 32
#define ATT_D 32

__device__ __forceinline__ float att_load(const float *p) { return *p; }
__device__ __forceinline__ float att_load(const __half *p) { return __half2float(*p); }
__device__ __forceinline__ void att_store(float *p, float v) { *p = v; }
__device__ __forceinline__ void att_store(__half *p, float v) { *p = __float2half_rn(v); }

template <typename T>
__device__ void attention_tile(const T *Q, const T *K, const T *V, T *O, float *lse, int seq_q, int seq_k,
                               float softmax_scale, int causal) {
    __shared__ float Ks[ATT_BN][ATT_D];
    __shared__ float Vs[ATT_BN][ATT_D];
    int bh = blockIdx.y, i = blockIdx.x * ATT_BM + threadIdx.x;
    const T *q = Q + ((long)bh * seq_q + i) * ATT_D;
    const T *k = K + (long)bh * seq_k * ATT_D;
    const T *v = V + (long)bh * seq_k * ATT_D;
    float scale_log2 = softmax_scale * 1.4426950408889634f;
    float qr[ATT_D], acc[ATT_D];
    for (int d = 0; d < ATT_D; ++d) {
        qr[d] = i < seq_q ? att_load(q + d) * scale_log2 : 0.f;
        acc[d] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    int kend = seq_k;
    if (causal) kend = min(seq_k, (blockIdx.x + 1) * ATT_BM);     // no key past the tile's last query
    for (int k0 = 0; k0 < kend; k0 += ATT_BN) {
        __syncthreads();
        for (int e = threadIdx.x; e < ATT_BN * ATT_D; e += blockDim.x) {
            int r = e / ATT_D, c = e % ATT_D, j = k0 + r;
            Ks[r][c] = j < seq_k ? att_load(k + (long)j * ATT_D + c) : 0.f;
            Vs[r][c] = j < seq_k ? att_load(v + (long)j * ATT_D + c) : 0.f;
        }
        __syncthreads();
        float s[ATT_BN];
        float mt = m;
        for (int r = 0; r < ATT_BN; ++r) {
            float dot = 0.f;
            for (int d = 0; d < ATT_D; ++d) dot = fmaf(qr[d], Ks[r][d], dot);
            int j = k0 + r;
            s[r] = (j >= seq_k || (causal && j > i)) ? -INFINITY : dot;
            mt = fmaxf(mt, s[r]);
        }
        // a row that has seen only masked keys keeps m = -inf: subtract 0 instead (no inf - inf)
        float base = mt == -INFINITY ? 0.f : mt;
        float corr = exp2f(m - base);
        l *= corr;
        for (int d = 0; d < ATT_D; ++d) acc[d] *= corr;
        for (int r = 0; r < ATT_BN; ++r) {
            float p = exp2f(s[r] - base);
            l += p;
            for (int d = 0; d < ATT_D; ++d) acc[d] = fmaf(p, Vs[r][d], acc[d]);
        }
        m = mt;
    }
    if (i >= seq_q) return;
    float inv = 1.0f / l;
    T *o = O + ((long)bh * seq_q + i) * ATT_D;
    for (int d = 0; d < ATT_D; ++d) att_store(o + d, acc[d] * inv);
    lse[(long)bh * seq_q + i] = m * 0.6931471805599453f + logf(l);
}

extern "C" __global__ void attention_fwd_f32(const float *Q, const float *K, const float *V, float *O, float *lse,
                                             int seq_q, int seq_k, float softmax_scale, int causal) {
    attention_tile(Q, K, V, O, lse, seq_q, seq_k, softmax_scale, causal);
}

extern "C" __global__ void attention_fwd_f16(const __half *Q, const __half *K, const __half *V, __half *O,
                                             float *lse, int seq_q, int seq_k, float softmax_scale, int causal) {
    attention_tile(Q, K, V, O, lse, seq_q, seq_k, softmax_scale, causal);
}
