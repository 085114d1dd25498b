// HGEMM D = A * B^T (A: MxK, Bt: NxK, both f16 row-major; D f32) with 4 warps per 64x64 tile,
// cp.async 16-byte copies into shared memory laid out with a Swizzle<3,3,3>-style XOR
// (16-byte chunk index ^= row % 8 within each 128-byte row), ldmatrix, mma.sync m16n8k16.
#include <cuda_fp16.h>
#include <cstdint>

#define BM 64
#define BN 64
#define BK 64

__device__ __forceinline__ uint32_t swz(int row, int col) {   // col in halves, returns byte offset
    int chunk = (col / 8) ^ (row % 8);
    return row * BK * 2 + chunk * 16 + (col % 8) * 2;
}

__device__ __forceinline__ void cp16(uint32_t dst, const void *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(bytes));
}

__global__ void __launch_bounds__(128) hgemm_cpasync(const half *A, const half *Bt, float *D,
                                                     int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    uint32_t sa = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    uint32_t sb = sa + BM * BK * 2;
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[2][4][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int c = tid; c < BM * BK / 8; c += 128) {
            int r = c / (BK / 8), col = (c % (BK / 8)) * 8;
            int ok = (m0 + r < M) ? 16 : 0;
            cp16(sa + swz(r, col), A + (size_t)(m0 + r) * K + k0 + col, ok);
            ok = (n0 + r < N) ? 16 : 0;
            cp16(sb + swz(r, col), Bt + (size_t)(n0 + r) * K + k0 + col, ok);
        }
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t a[2][4], b[4][2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                int r = (warp / 2) * 32 + i * 16 + lane % 16;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                             : "r"(sa + swz(r, kk + (lane / 16) * 8)));
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                int r = (warp % 2) * 32 + j * 8 + lane % 8;
                asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                             : "=r"(b[j][0]), "=r"(b[j][1])
                             : "r"(sb + swz(r, kk + ((lane / 8) % 2) * 8)));
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
                int r = m0 + (warp / 2) * 32 + i * 16 + lane / 4 + h * 8;
                int c = n0 + (warp % 2) * 32 + j * 8 + (lane % 4) * 2;
                if (r < M && c + 1 < N) {
                    D[(size_t)r * N + c] = acc[i][j][2 * h];
                    D[(size_t)r * N + c + 1] = acc[i][j][2 * h + 1];
                }
            }
}
