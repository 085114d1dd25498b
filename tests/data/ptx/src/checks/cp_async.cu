// cp.async data used before it lands, and landed data read by other threads without a barrier
// (fragsim run --check: cp_async_in_flight, race), each kernel with its correct twin (_ok).  A line
// marked "BUG <kind>" is where the finding must point.  Two warps, in: 64 int4.

__device__ __forceinline__ void copy16(void *dst, const void *src) {
    unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
}

extern "C" __global__ void cp_async_early_bug(const int4 *in, int4 *out) {
    __shared__ int4 buf[64];
    int t = threadIdx.x;
    copy16(buf + t, in + t);
    int4 v = buf[t];  // BUG cp_async_in_flight
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    out[t] = v;
}

// a thread's own copy is visible to it after its wait: no barrier needed
extern "C" __global__ void cp_async_early_ok(const int4 *in, int4 *out) {
    __shared__ int4 buf[64];
    int t = threadIdx.x;
    copy16(buf + t, in + t);
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    int4 v = buf[t];
    out[t] = v;
}

// another thread's copy needs its wait and then a barrier
extern "C" __global__ void cp_async_barrier_bug(const int4 *in, int4 *out) {
    __shared__ int4 buf[64];
    int t = threadIdx.x;
    copy16(buf + t, in + t);
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    out[t] = buf[63 - t];  // BUG race
}

extern "C" __global__ void cp_async_barrier_ok(const int4 *in, int4 *out) {
    __shared__ int4 buf[64];
    int t = threadIdx.x;
    copy16(buf + t, in + t);
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    out[t] = buf[63 - t];
}
