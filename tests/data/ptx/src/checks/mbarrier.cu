// mbarriers and bulk copies (sm_90a; cp.async.bulk is the copy TMA makes, without a tensor map):
// data read before its copy completes, a wait for the wrong phase parity, an expect_tx the copies
// never complete, a bulk copy to global memory reading stores no fence.proxy.async made visible to
// it (fragsim run --check: cp_async_in_flight, deadlock, proxy_fence), each with its correct twin
// (_ok).  A line marked "BUG <kind>" is where the finding must point.  Two warps; `in` has 256
// floats, `out` 64.
#include <cstdint>

__device__ __forceinline__ uint32_t smem(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void init(uint64_t *bar) {
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(bar)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
}

// thread 0 arrives on `bar` expecting `expect` bytes and copies `bytes` of `in` into `buf`
__device__ __forceinline__ void load(float *buf, const float *in, uint32_t bytes, uint32_t expect, uint64_t *bar) {
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)), "r"(expect)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(smem(buf)), "l"(in), "r"(bytes), "r"(smem(bar))
                     : "memory");
    }
}

// spins until the phase of `parity` of `bar` has completed
__device__ __forceinline__ void wait(uint64_t *bar, uint32_t parity) {
    uint32_t done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done)
                     : "r"(smem(bar)), "r"(parity)
                     : "memory");
}

extern "C" __global__ void bulk_ok(const float *in, float *out) {
    __shared__ __align__(128) float buf[256];
    __shared__ __align__(8) uint64_t bar;
    int t = threadIdx.x;
    init(&bar);
    load(buf, in, 1024, 1024, &bar);
    wait(&bar, 0);
    out[t] = buf[255 - t];
}

// reads the copy's bytes before waiting for them
extern "C" __global__ void bulk_early_bug(const float *in, float *out) {
    __shared__ __align__(128) float buf[256];
    __shared__ __align__(8) uint64_t bar;
    int t = threadIdx.x;
    init(&bar);
    load(buf, in, 1024, 1024, &bar);
    float v = buf[255 - t];  // BUG cp_async_in_flight
    wait(&bar, 0);
    out[t] = v;
}

// waits for parity 1: the phase before the first, which counts as completed -- the wait passes at once
// if the copy has not landed, or waits for a second phase that never comes if it has (fragsim lands it)
extern "C" __global__ void bulk_parity_bug(const float *in, float *out) {
    __shared__ __align__(128) float buf[256];
    __shared__ __align__(8) uint64_t bar;
    int t = threadIdx.x;
    init(&bar);
    load(buf, in, 1024, 1024, &bar);
    wait(&bar, 1);  // BUG deadlock
    out[t] = buf[255 - t];
}

// expects 16 bytes more than it copies: the phase never completes
extern "C" __global__ void bulk_tx_bug(const float *in, float *out) {
    __shared__ __align__(128) float buf[256];
    __shared__ __align__(8) uint64_t bar;
    int t = threadIdx.x;
    init(&bar);
    load(buf, in, 1024, 1040, &bar);
    wait(&bar, 0);  // BUG deadlock
    out[t] = buf[255 - t];
}

// thread 0 copies what every thread stored to `out` (cp.async.bulk shared -> global)
__device__ __forceinline__ void store_out(float *out, const float *buf) {
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;" ::"l"(out), "r"(smem(buf))
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

extern "C" __global__ void bulk_store_ok(const float *in, float *out) {
    __shared__ __align__(128) float buf[64];
    int t = threadIdx.x;
    buf[t] = in[t] * 2.f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    store_out(out, buf);
}

// no fence.proxy.async between the stores and the bulk copy that reads them
extern "C" __global__ void bulk_store_proxy_bug(const float *in, float *out) {
    __shared__ __align__(128) float buf[64];
    int t = threadIdx.x;
    buf[t] = in[t] * 2.f;
    __syncthreads();
    store_out(out, buf);  // BUG proxy_fence
}
