// RMSNorm, one 128-thread CTA per row: y = x * rsqrtf(mean(x^2) + eps) * w.  The sum of squares
// reduces with shfl.xor butterflies and the warps' partials in shared memory; mean = sum / cols.
// Built with --use_fast_math: rsqrt.approx.ftz.f32, the mean's division div.approx.ftz.f32; without
// it (the .default build) rsqrtf is still rsqrt.approx.f32 (not ftz) and the division div.rn.f32.
// ptx: rmsnorm.sm90a.ptx -arch=sm_90a --use_fast_math
// ptx: rmsnorm.default.sm90a.ptx -arch=sm_90a

__global__ void rmsnorm(const float *x, const float *w, float *y, int cols, float eps) {
    __shared__ float red[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    const float *xr = x + (long)blockIdx.x * cols;
    float *yr = y + (long)blockIdx.x * cols;
    float ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) ss = fmaf(xr[c], xr[c], ss);
    for (int d = 16; d > 0; d /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, d);
    if (lane == 0) red[warp] = ss;
    __syncthreads();
    ss = 0.f;
    for (int i = 0; i < nw; ++i) ss += red[i];
    float r = rsqrtf(ss / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] * r * w[c];
}
