// Shared memory read before anything wrote it (fragsim run --check continue,uninitialized:
// uninitialized) and its correct twin (_ok).  A line marked "BUG <kind>" is where the finding must
// point.  One warp.

extern "C" __global__ void uninit_bug(float *out) {
    __shared__ float s[33];
    int t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    out[t] = s[t] + s[t + 1];  // BUG uninitialized
}

extern "C" __global__ void uninit_ok(float *out) {
    __shared__ float s[33];
    int t = threadIdx.x;
    s[t] = t;
    if (t == 0) s[32] = 0.f;
    __syncthreads();
    out[t] = s[t] + s[t + 1];
}
