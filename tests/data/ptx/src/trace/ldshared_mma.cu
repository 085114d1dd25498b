// Fragment-tracing test kernel (fragsim.trace_fragments): mma.sync m16n8k16 f16 fed by plain
// ld.shared.b32 -- each lane reads its own fragment registers as the PTX ISA's fragment map
// places them.  D = A * B^T (A: MxK, Bt: NxK f16 row-major; D f32) in 16x64 tiles, 2 warps per
// CTA, each warp 4 n-tiles of 8; the tiles staged in shared memory row by row with 8 halves of
// padding (pitch BK + 8).  -DBUG=... injects one mistake.
#include <cuda_fp16.h>
#include <cstdint>

#define OK 0
#define PITCH 1        // the fragment reads step BK halves per row; the tile's rows are BK + 8 apart
#define KHALVES 2      // a0/a1 read k 8..15 and a2/a3 k 0..7
#define OFF8 3         // a1 reads row g instead of g + 8
#ifndef BUG
#define BUG OK
#endif

#define BM 16
#define BN 64
#define BK 32
#define P (BK + 8)
#if BUG == PITCH
#define RP BK
#else
#define RP P
#endif

__global__ void __launch_bounds__(64) ldshared_mma(const half *A, const half *Bt, float *D, int M, int N, int K) {
    __shared__ __align__(16) half sa[BM * P];
    __shared__ __align__(16) half sb[BN * P];
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int g = lane / 4, t = lane % 4;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK / 2; i += 64) {
            int r = i / (BK / 2), c = (i % (BK / 2)) * 2;
            *(uint32_t *)&sa[r * P + c] = *(const uint32_t *)&A[(size_t)(m0 + r) * K + k0 + c];
        }
        for (int i = tid; i < BN * BK / 2; i += 64) {
            int r = i / (BK / 2), c = (i % (BK / 2)) * 2;
            *(uint32_t *)&sb[r * P + c] = *(const uint32_t *)&Bt[(size_t)(n0 + r) * K + k0 + c];
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t a[4];
#if BUG == KHALVES
            int lo = kk + 8, hi = kk;
#else
            int lo = kk, hi = kk + 8;
#endif
#if BUG == OFF8
            int g8 = g;
#else
            int g8 = g + 8;
#endif
            a[0] = *(const uint32_t *)&sa[g * RP + lo + 2 * t];
            a[1] = *(const uint32_t *)&sa[g8 * RP + lo + 2 * t];
            a[2] = *(const uint32_t *)&sa[g * RP + hi + 2 * t];
            a[3] = *(const uint32_t *)&sa[g8 * RP + hi + 2 * t];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                int n = warp * 32 + j * 8 + g;
                uint32_t b0 = *(const uint32_t *)&sb[n * RP + kk + 2 * t];
                uint32_t b1 = *(const uint32_t *)&sb[n * RP + kk + 8 + 2 * t];
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                             "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                             : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        int c = n0 + warp * 32 + j * 8 + 2 * t;
        D[(size_t)(m0 + g) * N + c] = acc[j][0];
        D[(size_t)(m0 + g) * N + c + 1] = acc[j][1];
        D[(size_t)(m0 + g + 8) * N + c] = acc[j][2];
        D[(size_t)(m0 + g + 8) * N + c + 1] = acc[j][3];
    }
}
