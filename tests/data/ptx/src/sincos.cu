// Rotary position embedding and the MUFU's functions elementwise.
// rope: x [tokens, dim] rotated pairwise (x[2i], x[2i+1]) by theta = pos[t] * inv_freq(i) with
// inv_freq(i) = base^(-2i/dim); mode 0: inv_freq = __expf(-2i/dim * __logf(base)), __sinf/__cosf;
// mode 1: inv_freq = exp2f(-2i/dim * __log2f(base)), sincosf; mode 2: sinf and cosf.
// mufu_map: out[f][i] = f(x[i]) for __sinf, __cosf, __log2f, __expf, exp2f, __logf, __fdividef(1, x),
// rsqrtf, sqrtf, __powf(|x|, y).  half_ex2: hexp2 of halves and bfloat16s, and ex2.approx.f16,
// .f16x2, .ftz.bf16, .ftz.bf16x2 (inline asm: CUDA 13's hexp2 computes in f32).
// Built with --use_fast_math (sin/cos/lg2/ex2 .approx.ftz.f32 ...); the .default build without it
// gives the forms without .ftz for the intrinsics (sinf/cosf/sqrtf/exp2f then follow their own paths).
// ptx: sincos.sm90a.ptx -arch=sm_90a --use_fast_math
// ptx: sincos.default.sm90a.ptx -arch=sm_90a
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void rope(const float *x, const float *pos, float *y, int tokens, int dim, float base,
                                int mode) {
    int t = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;     // pair i of token t
    if (t >= tokens || 2 * i >= dim) return;
    float e = -(float)(2 * i) / dim;
    float s, c, theta;
    if (mode == 0) {
        theta = pos[t] * __expf(e * __logf(base));
        s = __sinf(theta);
        c = __cosf(theta);
    } else if (mode == 1) {
        theta = pos[t] * exp2f(e * __log2f(base));
        sincosf(theta, &s, &c);
    } else {
        theta = pos[t] * __expf(e * __logf(base));
        s = sinf(theta);
        c = cosf(theta);
    }
    const float *xr = x + (long)t * dim;
    float *yr = y + (long)t * dim;
    float a = xr[2 * i], b = xr[2 * i + 1];
    yr[2 * i] = a * c - b * s;
    yr[2 * i + 1] = a * s + b * c;
}

extern "C" __global__ void mufu_map(const float *x, const float *p, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[0 * n + i] = __sinf(v);
    out[1 * n + i] = __cosf(v);
    out[2 * n + i] = __log2f(v);
    out[3 * n + i] = __expf(v);
    out[4 * n + i] = exp2f(v);
    out[5 * n + i] = __logf(v);
    out[6 * n + i] = __fdividef(1.0f, v);
    out[7 * n + i] = rsqrtf(v);
    out[8 * n + i] = sqrtf(v);
    out[9 * n + i] = __powf(fabsf(v), p[i]);
}

extern "C" __global__ void half_ex2(const __half *h, const __nv_bfloat16 *bf, __half *out_h,
                                         __nv_bfloat16 *out_bf, int n) {
    // rows of out_h / out_bf: hexp2 (an f32 ex2 and a rounding fma), ex2.approx.f16 / .ftz.bf16, and the
    // x2 form on the pair (x[i], x[n - 1 - i]): its low and its high half
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned short a = __half_as_ushort(h[i]), b = __half_as_ushort(h[n - 1 - i]), r;
    unsigned pair = a | (unsigned)b << 16, r2;
    out_h[i] = hexp2(h[i]);
    asm("ex2.approx.f16 %0, %1;" : "=h"(r) : "h"(a));
    out_h[n + i] = __ushort_as_half(r);
    asm("ex2.approx.f16x2 %0, %1;" : "=r"(r2) : "r"(pair));
    out_h[2 * n + i] = __ushort_as_half((unsigned short)r2);
    out_h[3 * n + i] = __ushort_as_half((unsigned short)(r2 >> 16));
    a = __bfloat16_as_ushort(bf[i]);
    b = __bfloat16_as_ushort(bf[n - 1 - i]);
    pair = a | (unsigned)b << 16;
    out_bf[i] = hexp2(bf[i]);
    asm("ex2.approx.ftz.bf16 %0, %1;" : "=h"(r) : "h"(a));
    out_bf[n + i] = __ushort_as_bfloat16(r);
    asm("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(r2) : "r"(pair));
    out_bf[2 * n + i] = __ushort_as_bfloat16((unsigned short)r2);
    out_bf[3 * n + i] = __ushort_as_bfloat16((unsigned short)(r2 >> 16));
}
