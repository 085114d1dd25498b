// Fragment-tracing test kernel (fragsim.trace_fragments): the wgmma of ../wgmma_desc.cu over a
// whole K = 64 -- one warpgroup computes D (64x64, f32) = A (64x64 bf16, K-major) * B (Bt: 64x64
// bf16, K-major) with four wgmma.mma_async m64n64k16, both operands read from shared memory
// (128-byte swizzle) through descriptors whose start advances 32 bytes per k-step.
// -DBUG=... injects one mistake into the descriptors.
#include <cuda_bf16.h>
#include <cstdint>

#define OK 0
#define NOSWIZZLE 1    // A's descriptor says no swizzle; the tile is stored with the 128-byte one
#define SBO 2          // B's stride byte offset is 512 (4 rows) instead of 1024 (8 rows of 128 bytes)
#define ADVANCE 3      // A's start advances 16 bytes per k-step (K in elements) instead of 32
#ifndef BUG
#define BUG OK
#endif

__device__ __forceinline__ uint64_t desc(const void *p, int lbo, int sbo, int swizzle128) {
    uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    uint64_t d = (a & 0x3FFFF) >> 4;
    d |= (uint64_t)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (uint64_t)((sbo & 0x3FFFF) >> 4) << 32;
    if (swizzle128) d |= (uint64_t)1 << 62;
    return d;
}

__device__ __forceinline__ void wgmma(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
          "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(accumulate));
}

__global__ void wgmma_trace(const __nv_bfloat16 *A, const __nv_bfloat16 *Bt, float *D) {
    __shared__ __align__(1024) __nv_bfloat16 sa[64 * 64];
    __shared__ __align__(1024) __nv_bfloat16 sb[64 * 64];
    int t = threadIdx.x;
    for (int i = t; i < 64 * 64; i += 128) {
        int r = i / 64, c = i % 64;
        int chunk = (c / 8) ^ (r % 8);
        sa[r * 64 + chunk * 8 + c % 8] = A[i];
        sb[r * 64 + chunk * 8 + c % 8] = Bt[i];
    }
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;");
    float d[32];
    for (int i = 0; i < 32; ++i) d[i] = 0.f;
    asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
    for (int k = 0; k < 4; ++k) {
#if BUG == ADVANCE
        uint64_t da = desc(sa + k * 8, 16, 1024, 1);
#elif BUG == NOSWIZZLE
        uint64_t da = desc(sa + k * 16, 16, 1024, 0);
#else
        uint64_t da = desc(sa + k * 16, 16, 1024, 1);
#endif
#if BUG == SBO
        uint64_t db = desc(sb + k * 16, 16, 512, 1);
#else
        uint64_t db = desc(sb + k * 16, 16, 1024, 1);
#endif
        wgmma(d, da, db, k > 0);
    }
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    int warp = t / 32, lane = t % 32;
    for (int i = 0; i < 16; ++i) {
        int r = warp * 16 + lane / 4 + (i % 2) * 8;
        int c = (i / 2) * 8 + (lane % 4) * 2;
        D[r * 64 + c] = d[2 * i];
        D[r * 64 + c + 1] = d[2 * i + 1];
    }
}
