// Fragment-tracing test kernel (fragsim.trace_fragments): the HGEMM of ../hgemm_cpasync.cu
// (D = A * B^T, A: MxK and Bt: NxK f16 row-major, D f32; 4 warps per 64x64 tile; cp.async into a
// Swizzle<3,4,3>-style XOR layout; ldmatrix.x4 for A and for two n-tiles of B; mma.sync m16n8k16),
// with one mistake injected by -DBUG=...; BUG=0 is the correct kernel.  LAYOUT_PAD lays the tiles
// out with a 16-byte padding per row (pitch BK + 8 halves) instead of the swizzle.  B_KN takes B as
// K x N (row-major, n contiguous): its tile holds k rows of n, read by ldmatrix .trans.
#include <cuda_fp16.h>
#include <cstdint>

#define OK 0
#define TRANS 1        // A's ldmatrix has a .trans it must not have
#define KHALVES 2      // A's lanes 16-31 address k 0..7, lanes 0-15 k 8..15
#define X4HALVES 3     // B's ldmatrix.x4: lanes 0-15 address the second n-tile, lanes 16-31 the first
#define OFF8 4         // A's lanes 8-15 and 24-31 address rows 0..7 of the fragment again
#define NOSWIZZLE 5    // the ldmatrix addresses leave out the swizzle the copies apply
#define PITCH 6        // (LAYOUT_PAD) the ldmatrix addresses step 64 halves per row, the copies 72
#define KSTEP 7        // B's ldmatrix forgets the k-step kk: every mma gets B's k 0..15
#define STORE 8        // the epilogue swaps the two row halves of each accumulator fragment
#define NOTRANS 9      // (B_KN) B's ldmatrix lacks the .trans its n-contiguous tile needs
#ifndef BUG
#define BUG OK
#endif

#define BM 64
#define BN 64
#define BK 64
#ifdef LAYOUT_PAD
#define PITCH_H (BK + 8)
__device__ __forceinline__ uint32_t at(int row, int col) { return (row * PITCH_H + col) * 2; }
#if BUG == PITCH
__device__ __forceinline__ uint32_t rd(int row, int col) { return (row * BK + col) * 2; }
#else
#define rd at
#endif
#else
#define PITCH_H BK
__device__ __forceinline__ uint32_t at(int row, int col) {     // col in halves, returns byte offset
    int chunk = (col / 8) ^ (row % 8);
    return row * BK * 2 + chunk * 16 + (col % 8) * 2;
}
#if BUG == NOSWIZZLE
__device__ __forceinline__ uint32_t rd(int row, int col) { return row * BK * 2 + col * 2; }
#else
#define rd at
#endif
#endif

__device__ __forceinline__ void cp16(uint32_t dst, const void *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(bytes));
}

__global__ void __launch_bounds__(128) ldsm_gemm(const half *A, const half *Bt, float *D, int M, int N, int K) {
    // Bt: B as N x K (row-major), or with B_KN B itself as K x N
    extern __shared__ __align__(128) unsigned char smem[];
    uint32_t sa = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    uint32_t sb = sa + BM * PITCH_H * 2;
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[2][4][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int c = tid; c < BM * BK / 8; c += 128) {
            int r = c / (BK / 8), col = (c % (BK / 8)) * 8;
            cp16(sa + at(r, col), A + (size_t)(m0 + r) * K + k0 + col, (m0 + r < M) ? 16 : 0);
#ifdef B_KN
            cp16(sb + at(r, col), Bt + (size_t)(k0 + r) * N + n0 + col, (n0 + col < N) ? 16 : 0);
#else
            cp16(sb + at(r, col), Bt + (size_t)(n0 + r) * K + k0 + col, (n0 + r < N) ? 16 : 0);
#endif
        }
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t a[2][4], b[4][2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
#if BUG == OFF8
                int r = (warp / 2) * 32 + i * 16 + lane % 8;
#else
                int r = (warp / 2) * 32 + i * 16 + lane % 16;
#endif
#if BUG == KHALVES
                uint32_t p = sa + rd(r, kk + (1 - lane / 16) * 8);
#else
                uint32_t p = sa + rd(r, kk + (lane / 16) * 8);
#endif
#if BUG == TRANS
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3]) : "r"(p));
#else
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3]) : "r"(p));
#endif
            }
#pragma unroll
            for (int j = 0; j < 4; j += 2) {
                // matrices 0, 1: n-tile j (k 0..7, 8..15); 2, 3: n-tile j + 1
#ifdef B_KN
                // the tile's rows are k: lane l addresses row k = kk + l % 16 of n-tile j + l / 16
                uint32_t q = sb + rd(kk + lane % 16, (warp % 2) * 32 + (j + lane / 16) * 8);
#if BUG == NOTRANS
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(b[j][0]), "=r"(b[j][1]), "=r"(b[j + 1][0]), "=r"(b[j + 1][1]) : "r"(q));
#else
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(b[j][0]), "=r"(b[j][1]), "=r"(b[j + 1][0]), "=r"(b[j + 1][1]) : "r"(q));
#endif
                continue;
#endif
#if BUG == X4HALVES
                int nt = j + 1 - lane / 16;
#else
                int nt = j + lane / 16;
#endif
                int r = (warp % 2) * 32 + nt * 8 + lane % 8;
#if BUG == KSTEP
                uint32_t p = sb + rd(r, ((lane / 8) % 2) * 8);
#else
                uint32_t p = sb + rd(r, kk + ((lane / 8) % 2) * 8);
#endif
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(b[j][0]), "=r"(b[j][1]), "=r"(b[j + 1][0]), "=r"(b[j + 1][1]) : "r"(p));
            }
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                                 : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]),
                                   "+f"(acc[i][j][3])
                                 : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]),
                                   "r"(b[j][0]), "r"(b[j][1]));
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
#if BUG == STORE
                int r = m0 + (warp / 2) * 32 + i * 16 + lane / 4 + (1 - h) * 8;
#else
                int r = m0 + (warp / 2) * 32 + i * 16 + lane / 4 + h * 8;
#endif
                int c = n0 + (warp % 2) * 32 + j * 8 + (lane % 4) * 2;
                if (r < M && c + 1 < N) {
                    D[(size_t)r * N + c] = acc[i][j][2 * h];
                    D[(size_t)r * N + c + 1] = acc[i][j][2 * h + 1];
                }
            }
}
