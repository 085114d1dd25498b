// BF16 GEMM D = A * B^T (A: MxK, Bt: NxK, both bf16 row-major; D f32 row-major), the shape of a
// real tensor-core kernel: a 128x128 tile per CTA, BK = 32, 4 warps (2x2) of 64x64 each, a two-stage
// cp.async pipeline (commit_group / wait_group 1), shared rows of 64 bytes XOR-swizzled
// (16-byte chunk ^= (row / 2) % 4: the 8 rows of an ldmatrix phase hit 8 different bank groups),
// ldmatrix.x4 for A and for two 8-column slices of B, mma.sync m16n8k16 bf16 -> f32.
// K must be a multiple of 32; rows past M or N are zero-filled (cp.async src-size 0) and not stored.
#include <cuda_bf16.h>
#include <cstdint>

#define BM 128
#define BN 128
#define BK 32
#define STAGES 2

__device__ __forceinline__ uint32_t swz(int row, int col) {   // col in elements; a byte offset
    int chunk = (col / 8) ^ ((row / 2) % 4);
    return row * BK * 2 + chunk * 16 + (col % 8) * 2;
}

__device__ __forceinline__ void cp16(uint32_t dst, const void *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(bytes));
}

__device__ __forceinline__ void load_stage(uint32_t sa, uint32_t sb, const __nv_bfloat16 *A,
                                           const __nv_bfloat16 *Bt, int M, int N, int K, int m0, int n0,
                                           int k0, int tid) {
#pragma unroll
    for (int i = 0; i < BM * BK / 8 / 128; ++i) {
        int c = tid + i * 128, r = c / (BK / 8), col = (c % (BK / 8)) * 8;
        int ra = min(m0 + r, M - 1), rb = min(n0 + r, N - 1);      // in bounds even when zero-filled
        cp16(sa + swz(r, col), A + (size_t)ra * K + k0 + col, m0 + r < M ? 16 : 0);
        cp16(sb + swz(r, col), Bt + (size_t)rb * K + k0 + col, n0 + r < N ? 16 : 0);
    }
}

__global__ void __launch_bounds__(128) bgemm_128x128(const __nv_bfloat16 *A, const __nv_bfloat16 *Bt,
                                                     float *D, int M, int N, int K) {
    __shared__ __align__(128) unsigned char smem[STAGES * (BM + BN) * BK * 2];
    uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    int wm = (warp / 2) * 64, wn = (warp % 2) * 64;
    float acc[4][8][4] = {};
    int kt_count = K / BK;
    load_stage(base, base + BM * BK * 2, A, Bt, M, N, K, m0, n0, 0, tid);
    asm volatile("cp.async.commit_group;");
    for (int kt = 0; kt < kt_count; ++kt) {
        if (kt + 1 < kt_count) {
            uint32_t st = base + ((kt + 1) % STAGES) * (BM + BN) * BK * 2;
            load_stage(st, st + BM * BK * 2, A, Bt, M, N, K, m0, n0, (kt + 1) * BK, tid);
        }
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        __syncthreads();
        uint32_t sa = base + (kt % STAGES) * (BM + BN) * BK * 2, sb = sa + BM * BK * 2;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t a[4][4], b[8][2];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                int r = wm + i * 16 + lane % 16;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                             : "r"(sa + swz(r, kk + (lane / 16) * 8)));
            }
#pragma unroll
            for (int j = 0; j < 8; j += 2) {
                int r = wn + j * 8 + (lane / 16) * 8 + lane % 8;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(b[j][0]), "=r"(b[j][1]), "=r"(b[j + 1][0]), "=r"(b[j + 1][1])
                             : "r"(sb + swz(r, kk + ((lane / 8) % 2) * 8)));
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                                 : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]),
                                   "+f"(acc[i][j][3])
                                 : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]),
                                   "r"(b[j][0]), "r"(b[j][1]));
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int r = m0 + wm + i * 16 + lane / 4 + h * 8;
                int c = n0 + wn + j * 8 + (lane % 4) * 2;
                if (r < M && c + 1 < N)
                    *reinterpret_cast<float2 *>(&D[(size_t)r * N + c]) =
                        make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
            }
}
