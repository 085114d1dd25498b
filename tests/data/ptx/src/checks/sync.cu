// .sync.aligned instructions executed by part of a warp, a member mask naming lanes that do not
// execute, barriers in divergent code (fragsim run --check: divergent), each kernel with its correct
// twin (_ok).  A line marked "BUG <kind>" is where the finding must point.
#define MMA(c0, c1, c2, c3, a0, a1, a2, a3, b0, b1)                                                  \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, " \
                 "{%8, %9}, {%0, %1, %2, %3};"                                                        \
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)                                             \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))

// one warp: mma.sync by lanes 0-15 only
extern "C" __global__ void mma_partial_bug(const unsigned *a, const unsigned *b, float *d) {
    int lane = threadIdx.x;
    unsigned a0 = a[lane * 4], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
    unsigned b0 = b[lane * 2], b1 = b[lane * 2 + 1];
    float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
    if (lane < 16) MMA(c0, c1, c2, c3, a0, a1, a2, a3, b0, b1);  // BUG divergent
    d[lane * 4] = c0, d[lane * 4 + 1] = c1, d[lane * 4 + 2] = c2, d[lane * 4 + 3] = c3;
}

extern "C" __global__ void mma_partial_ok(const unsigned *a, const unsigned *b, float *d) {
    int lane = threadIdx.x;
    unsigned a0 = a[lane * 4], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
    unsigned b0 = b[lane * 2], b1 = b[lane * 2 + 1];
    float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
    MMA(c0, c1, c2, c3, a0, a1, a2, a3, b0, b1);
    d[lane * 4] = c0, d[lane * 4 + 1] = c1, d[lane * 4 + 2] = c2, d[lane * 4 + 3] = c3;
}

// one warp: a full member mask from the lanes 0-15 of an if
extern "C" __global__ void shfl_mask_bug(int *out) {
    int lane = threadIdx.x, v = lane * 3;
    if (lane < 16) v = __shfl_sync(0xffffffffu, v, lane + 1);  // BUG divergent
    out[lane] = v;
}

extern "C" __global__ void shfl_mask_ok(int *out) {
    int lane = threadIdx.x, v = lane * 3;
    if (lane < 16) v = __shfl_sync(0x0000ffffu, v, (lane + 1) % 16);
    out[lane] = v;
}

// two warps: warp 1 splits between two __syncthreads
extern "C" __global__ void bar_divergent_bug(int *out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    if (t < 48) {
        s[t] = 1;
        __syncthreads();  // BUG divergent
        out[t] = s[t ^ 1];
    } else {
        s[t] = 2;
        __syncthreads();  // BUG divergent
        out[t] = s[t ^ 1] * 3;
    }
}

extern "C" __global__ void bar_divergent_ok(int *out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = t < 48 ? 1 : 2;
    __syncthreads();
    out[t] = t < 48 ? s[t ^ 1] : s[t ^ 1] * 3;
}

// one warp: __syncwarp() (all 32 lanes) reached by lanes 0-15 only
extern "C" __global__ void syncwarp_partial_bug(int *out) {
    __shared__ int s[32];
    int lane = threadIdx.x;
    s[lane] = lane;
    if (lane < 16) __syncwarp();  // BUG divergent
    out[lane] = s[lane ^ 1];
}

extern "C" __global__ void syncwarp_partial_ok(int *out) {
    __shared__ int s[32];
    int lane = threadIdx.x;
    s[lane] = lane;
    __syncwarp();
    out[lane] = s[lane ^ 1];
}
