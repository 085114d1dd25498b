// Row softmax, one warp per row (4 rows per 128-thread CTA): max with shfl.xor butterflies,
// exp2f((x - max) * log2(e)), sum with butterflies, then the row times 1/sum (mode 0), __fdividef
// (mode 1) or divided by sum (mode 2).  Built with --use_fast_math: exp2f is ex2.approx.ftz.f32, the
// division div.approx.ftz.f32 / rcp.approx.ftz.f32; with -prec-div=false alone the forms without .ftz
// (ex2.approx.f32, rcp.approx.f32, div.full.f32, div.approx.f32), by default rcp.rn/div.rn besides.
// ptx: softmax_fast.sm90a.ptx -arch=sm_90a --use_fast_math
// ptx: softmax_fast.precdiv.sm90a.ptx -arch=sm_90a -prec-div=false
// ptx: softmax_fast.default.sm90a.ptx -arch=sm_90a

extern "C" __global__ void softmax_warp(const float *x, float *y, int rows, int cols, int mode) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row = blockIdx.x * (blockDim.x / 32) + warp;
    if (row >= rows) return;
    const float *xr = x + (long)row * cols;
    float *yr = y + (long)row * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    for (int d = 16; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
    const float log2e = 1.4426950408889634f;
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) {
        float e = exp2f((xr[c] - m) * log2e);
        yr[c] = e;
        s += e;
    }
    for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
    float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32) {
        float e = yr[c];
        yr[c] = mode == 0 ? e * inv : mode == 1 ? __fdividef(e, s) : e / s;
    }
}

// One CTA per row: per-warp butterflies, then the warps' partials through shared memory.
extern "C" __global__ void softmax_block(const float *x, float *y, int cols) {
    __shared__ float red[32];
    __shared__ float bcast;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    const float *xr = x + (long)blockIdx.x * cols;
    float *yr = y + (long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    for (int d = 16; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
    if (lane == 0) red[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = lane < nw ? red[lane] : -INFINITY;
        for (int d = 16; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
        if (lane == 0) bcast = m;
    }
    __syncthreads();
    m = bcast;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += exp2f((xr[c] - m) * 1.4426950408889634f);
    for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
    __syncthreads();
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < nw ? red[lane] : 0.f;
        for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
        if (lane == 0) bcast = __fdividef(1.0f, s);
    }
    __syncthreads();
    float inv = bcast;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = exp2f((xr[c] - m) * 1.4426950408889634f) * inv;
}
