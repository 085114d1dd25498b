// Shared-memory races (fragsim run --check: race), each kernel with its correct twin (_ok).  A line
// marked "BUG <kind>" is where the finding must point.

// two warps: each thread reads the word the other warp wrote (read-after-write, no barrier)
extern "C" __global__ void race_raw_bug(float *out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = t;
    out[t] = s[(t + 32) % 64];  // BUG race
}

extern "C" __global__ void race_raw_ok(float *out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    out[t] = s[(t + 32) % 64];
}

// two warps, a loop over tiles without the barrier that ends each iteration: the next tile's store
// overwrites what the other warp may still read (write-after-read)
extern "C" __global__ void race_war_bug(const float *in, float *out, int iters) {
    __shared__ float s[64];
    int t = threadIdx.x;
    float acc = 0.f;
    for (int k = 0; k < iters; ++k) {
        s[t] = in[k * 64 + t];  // BUG race
        __syncthreads();
        acc += s[63 - t];
    }
    out[t] = acc;
}

extern "C" __global__ void race_war_ok(const float *in, float *out, int iters) {
    __shared__ float s[64];
    int t = threadIdx.x;
    float acc = 0.f;
    for (int k = 0; k < iters; ++k) {
        s[t] = in[k * 64 + t];
        __syncthreads();
        acc += s[63 - t];
        __syncthreads();
    }
    out[t] = acc;
}

// one warp: lanes read what other lanes wrote with no __syncwarp between
extern "C" __global__ void race_warp_bug(float *out) {
    __shared__ float s[32];
    int t = threadIdx.x;
    s[t] = t;
    out[t] = s[31 - t];  // BUG race
}

extern "C" __global__ void race_warp_ok(float *out) {
    __shared__ float s[32];
    int t = threadIdx.x;
    s[t] = t;
    __syncwarp();
    out[t] = s[31 - t];
}

// two warps: every thread stores its own index into one word (write-after-write); the twin stores
// one value from every thread, which racecheck does not report
extern "C" __global__ void race_waw_bug(int *out) {
    __shared__ int s[1];
    s[0] = threadIdx.x;  // BUG race
    __syncthreads();
    out[threadIdx.x] = s[0];
}

extern "C" __global__ void race_waw_ok(int *out) {
    __shared__ int s[1];
    s[0] = 7;
    __syncthreads();
    out[threadIdx.x] = s[0];
}
