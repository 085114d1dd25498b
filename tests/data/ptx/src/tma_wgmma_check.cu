// tma_wgmma.cu with its descriptor side and its shared-memory placement as -D knobs, for the injected
// mismatches of fragsim.check_tma_wgmma (gpu_check/ptx_kernels.py, --forms tma_check; src/build.sh builds
// one PTX per variant).  Defaults are tma_wgmma.cu's right configuration:
//   DESC_SBO   descriptor SBO in bytes (1024)          DESC_SWZ  descriptor swizzle code (1 = 128B)
//   KADV       bytes added to the start per k16 step (32)  BASE_OFF descriptor base offset (0)
//   SHIFT      bytes the stage buffers start past a 1024-byte boundary (0; a multiple of 128)
//   TRANS_B    imm-trans-b (0)
// The tensor maps' swizzle comes from the host.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>

#ifndef DESC_SBO
#define DESC_SBO 1024
#endif
#ifndef DESC_SWZ
#define DESC_SWZ 1
#endif
#ifndef KADV
#define KADV 32
#endif
#ifndef BASE_OFF
#define BASE_OFF 0
#endif
#ifndef SHIFT
#define SHIFT 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif

namespace tma_check {
constexpr int BM = 64, BN = 64, BK = 64, STAGES = 2, THREADS = 128;
constexpr uint32_t STAGE_BYTES = (BM + BN) * BK * sizeof(__nv_bfloat16);

__device__ __forceinline__ uint32_t smem(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// A wgmma matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t desc(uint32_t addr) {
    uint64_t d = (addr & 0x3FFFF) >> 4;
    d |= (uint64_t)(16 >> 4) << 16;          // LBO: unused for swizzled K-major operands
    d |= (uint64_t)(DESC_SBO >> 4) << 32;    // SBO
    d |= (uint64_t)BASE_OFF << 49;
    d |= (uint64_t)DESC_SWZ << 62;
    return d;
}

__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred done;\nWAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void load(const CUtensorMap *map, uint32_t dst, uint32_t bar, int x, int y) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        :: "r"(dst), "l"(map), "r"(bar), "r"(x), "r"(y) : "memory");
}

__device__ __forceinline__ void fill(const CUtensorMap *a, const CUtensorMap *b, uint32_t sa, uint32_t sb,
                                     uint32_t bar, int k, int m0, int n0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(STAGE_BYTES) : "memory");
    load(a, sa, bar, k, m0);
    load(b, sb, bar, k, n0);
}

__device__ __forceinline__ void mma(float (&d)[32], uint64_t da, uint64_t db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, 1, 1, 1, 0, %34;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
          "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "n"(TRANS_B));
}
}  // namespace tma_check
using namespace tma_check;

extern "C" __global__ void __launch_bounds__(THREADS)
tma_wgmma_check(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, float *D, int M, int N,
          int K) {
    __shared__ __align__(1024) unsigned char raw[STAGES * STAGE_BYTES + SHIFT];
    __nv_bfloat16 *sA[STAGES], *sB[STAGES];
    for (int s = 0; s < STAGES; ++s) {
        sA[s] = reinterpret_cast<__nv_bfloat16 *>(raw + SHIFT + s * STAGE_BYTES);
        sB[s] = sA[s] + BM * BK;
    }
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const int t = threadIdx.x, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;
    if (t == 0) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem(&full[s])));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(&empty[s])), "r"(THREADS));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmA) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(&tmB) : "memory");
    }
    __syncthreads();
    if (t == 0)
        for (int s = 0; s < STAGES && s < ktiles; ++s)
            fill(&tmA, &tmB, smem(sA[s]), smem(sB[s]), smem(&full[s]), s * BK, m0, n0);
    float d[32];
    for (int i = 0; i < 32; ++i) d[i] = 0.f;
    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        const uint32_t parity = (kt / STAGES) & 1;
        wait(smem(&full[s]), parity);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (int k = 0; k < BK / 16; ++k)
            mma(d, desc(smem(sA[s]) + KADV * k), desc(smem(sB[s]) + KADV * k));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem(&empty[s])) : "memory");
        if (t == 0 && kt + STAGES < ktiles) {
            wait(smem(&empty[s]), parity);
            fill(&tmA, &tmB, smem(sA[s]), smem(sB[s]), smem(&full[s]), (kt + STAGES) * BK, m0, n0);
        }
    }
    const int warp = t / 32, lane = t % 32;
    for (int i = 0; i < 16; ++i) {
        const int r = m0 + warp * 16 + lane / 4 + (i % 2) * 8;
        const int c = n0 + (i / 2) * 8 + (lane % 4) * 2;
        if (r < M && c < N) D[(size_t)r * N + c] = d[2 * i];
        if (r < M && c + 1 < N) D[(size_t)r * N + c + 1] = d[2 * i + 1];
    }
}
