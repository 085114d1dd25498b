// wgmma (sm_90a): accumulators or shared operands used while the wgmma is in flight, a missing
// wgmma.fence, a descriptor reading past shared memory or setting bits no field uses, operands
// stored without a fence.proxy.async or without a barrier (fragsim run --check: wgmma_in_flight,
// wgmma_fence, out_of_bounds, invalid_descriptor, proxy_fence, race), and the correct kernel
// (wgmma_ok).  A line marked "BUG <kind>" is where the finding must point.  One warpgroup (128 threads): D (64x8, f32) = A (64x16, bf16) *
// B (16x8, bf16), both K-major in shared memory without swizzle (core matrices 8 rows x 16 bytes,
// LBO = 128 bytes along K, SBO = 256 bytes along M/N).
#include <cstdint>

__device__ __forceinline__ uint64_t desc(const void *p) {
    uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    return ((a & 0x3FFFF) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
}

#define WGMMA(d, da, db)                                                                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"                                        \
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, " \
                 "1, 1, 0, 0;\n}\n"                                                                 \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                   \
                 : "l"(da), "l"(db), "r"(1))
// pins the accumulators' zeros before the fence (CUTLASS's warpgroup_fence_operand)
#define PIN(d) asm volatile("" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])::"memory")
#define FENCE() asm volatile("wgmma.fence.sync.aligned;" ::: "memory")
#define COMMIT() asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory")
#define WAIT() asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory")

// every thread stores its part of A and B; then (SYNC) a barrier and (PROXY) a fence.proxy.async,
// which makes the stores visible to wgmma's reads (the async proxy)
template <bool SYNC = true, bool PROXY = true>
__device__ __forceinline__ void stage(const unsigned short *A, const unsigned short *Bt, unsigned short *sa,
                                      unsigned short *sb) {
    int t = threadIdx.x;
    for (int i = t; i < 64 * 16; i += 128) {
        int r = i / 16, k = i % 16;
        sa[(r / 8) * 128 + (k / 8) * 64 + (r % 8) * 8 + k % 8] = A[i];
    }
    for (int i = t; i < 8 * 16; i += 128) {
        int r = i / 16, k = i % 16;
        sb[(k / 8) * 64 + r * 8 + k % 8] = Bt[i];
    }
    if (SYNC) __syncthreads();
    if (PROXY) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void store(float *D, const float *d) {
    for (int i = 0; i < 4; ++i) D[threadIdx.x * 4 + i] = d[i];
}

extern "C" __global__ void wgmma_ok(const unsigned short *A, const unsigned short *Bt, float *D) {
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    stage(A, Bt, sa, sb);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    PIN(d);
    FENCE();
    WGMMA(d, desc(sa), desc(sb));
    COMMIT();
    WAIT();
    PIN(d);
    store(D, d);
}

extern "C" __global__ void wgmma_acc_bug(const unsigned short *A, const unsigned short *Bt, float *D) {
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    stage(A, Bt, sa, sb);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    PIN(d);
    FENCE();
    WGMMA(d, desc(sa), desc(sb));
    COMMIT();
    D[512 + threadIdx.x] = d[0];  // BUG wgmma_in_flight
    WAIT();
    PIN(d);
    store(D, d);
}

extern "C" __global__ void wgmma_smem_bug(const unsigned short *A, const unsigned short *Bt, float *D) {
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    stage(A, Bt, sa, sb);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    PIN(d);
    FENCE();
    WGMMA(d, desc(sa), desc(sb));
    COMMIT();
    sb[threadIdx.x] = 0;  // BUG wgmma_in_flight
    WAIT();
    PIN(d);
    store(D, d);
}

extern "C" __global__ void wgmma_fence_bug(const unsigned short *A, const unsigned short *Bt, float *D) {
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    stage(A, Bt, sa, sb);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    PIN(d);
    WGMMA(d, desc(sa), desc(sb));  // BUG wgmma_fence
    COMMIT();
    WAIT();
    PIN(d);
    store(D, d);
}

// B's descriptor starts 2 KiB past sb: the 256 bytes it reads lie beyond the CTA's shared memory
extern "C" __global__ void wgmma_desc_bug(const unsigned short *A, const unsigned short *Bt, float *D) {
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    stage(A, Bt, sa, sb);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    PIN(d);
    FENCE();
    WGMMA(d, desc(sa), desc(sb) + (2048 >> 4));  // BUG out_of_bounds
    COMMIT();
    WAIT();
    PIN(d);
    store(D, d);
}

// B's descriptor sets bit 46, which no field of a wgmma descriptor uses
extern "C" __global__ void wgmma_bits_bug(const unsigned short *A, const unsigned short *Bt, float *D) {
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    stage(A, Bt, sa, sb);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    PIN(d);
    FENCE();
    WGMMA(d, desc(sa), desc(sb) | (uint64_t(1) << 46));  // BUG invalid_descriptor
    COMMIT();
    WAIT();
    PIN(d);
    store(D, d);
}

// the stores reach wgmma through the generic proxy only: no fence.proxy.async after them
extern "C" __global__ void wgmma_proxy_bug(const unsigned short *A, const unsigned short *Bt, float *D) {
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    stage<true, false>(A, Bt, sa, sb);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    PIN(d);
    FENCE();
    WGMMA(d, desc(sa), desc(sb));  // BUG proxy_fence
    COMMIT();
    WAIT();
    PIN(d);
    store(D, d);
}

// each thread fences its own stores, but no barrier orders the other warps' stores before the wgmma
extern "C" __global__ void wgmma_race_bug(const unsigned short *A, const unsigned short *Bt, float *D) {
    __shared__ __align__(128) unsigned short sa[64 * 16];
    __shared__ __align__(128) unsigned short sb[8 * 16];
    stage<false, true>(A, Bt, sa, sb);
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    PIN(d);
    FENCE();
    WGMMA(d, desc(sa), desc(sb));  // BUG race
    COMMIT();
    WAIT();
    PIN(d);
    store(D, d);
}
