// LayerNorm the Triton tutorial's way (one 128-thread CTA per row): mean = sum(x) / N,
// var = sum((x - mean)^2) / N, rstd = 1 / sqrtf(var + eps), y = (x - mean) * rstd * w + b; the row's
// mean, rstd and std = sqrtf(var + eps) are written too (nvcc turns 1 / sqrtf into rsqrt.approx when
// -prec-sqrt=false; the stored std keeps a sqrt).  Four builds: the default one (sqrt.rn.f32,
// div.rn.f32, rcp.rn.f32), -prec-div=false -prec-sqrt=false (div.full.f32, sqrt.approx.f32,
// rsqrt.approx.f32: the forms without .ftz), the same with -ftz=true (div.full.ftz.f32, ...) and
// --use_fast_math (div.approx.ftz.f32, sqrt.approx.ftz.f32, rsqrt.approx.ftz.f32).
// ptx: layernorm.sm90a.ptx -arch=sm_90a
// ptx: layernorm.approx.sm90a.ptx -arch=sm_90a -prec-div=false -prec-sqrt=false
// ptx: layernorm.approx_ftz.sm90a.ptx -arch=sm_90a -ftz=true -prec-div=false -prec-sqrt=false
// ptx: layernorm.fast.sm90a.ptx -arch=sm_90a --use_fast_math

__device__ float block_sum(float v, float *red) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
    __syncthreads();                       // red is reused: the previous sum has been read
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = 0.f;
    for (int i = 0; i < nw; ++i) v += red[i];
    return v;
}

__global__ void layernorm(const float *x, const float *w, const float *b, float *y, float *mean_out,
                          float *rstd_out, float *std_out, int N, float eps) {
    __shared__ float red[32];
    const float *xr = x + (long)blockIdx.x * N;
    float *yr = y + (long)blockIdx.x * N;
    float s = 0.f;
    for (int c = threadIdx.x; c < N; c += blockDim.x) s += xr[c];
    float mean = block_sum(s, red) / N;
    float v = 0.f;
    for (int c = threadIdx.x; c < N; c += blockDim.x) {
        float d = xr[c] - mean;
        v += d * d;
    }
    float var = block_sum(v, red) / N;
    float sd = sqrtf(var + eps);
    float rstd = 1 / sd;
    for (int c = threadIdx.x; c < N; c += blockDim.x) yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rstd;
        std_out[blockIdx.x] = sd;
    }
}
