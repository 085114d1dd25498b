// A kernel calling a non-inlined device function that returns a value, with a per-thread stack
// array indexed by data (so it lives in .local memory).
__device__ __noinline__ float poly(const float *coef, int n, float x) {
    float y = 0.f;
    for (int i = n - 1; i >= 0; --i) y = y * x + coef[i];
    return y;
}

__global__ void devfunc_local(const float *x, const int *perm, float *out, int n) {
    float coef[8];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int k = 0; k < 8; ++k) coef[k] = x[(i + k) % n];
    coef[perm[i] & 7] += 1.f;
    out[i] = poly(coef, 8, x[i]);
}
