// One warp computes D (16x8, f32) = A (16xK, bf16, row-major) * B (Kx8, bf16, stored as B^T: 8xK)
// with ldmatrix + mma.sync.m16n8k16, staging each 16-wide K slice through shared memory.
#include <cuda_bf16.h>
#include <cstdint>

__global__ void mma_1warp(const __nv_bfloat16 *A, const __nv_bfloat16 *Bt, float *D, int K) {
    __shared__ __align__(16) __nv_bfloat16 sa[16 * 16];
    __shared__ __align__(16) __nv_bfloat16 sb[8 * 16];
    int lane = threadIdx.x;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = lane; i < 16 * 16; i += 32) sa[i] = A[(i / 16) * K + k0 + i % 16];
        for (int i = lane; i < 8 * 16; i += 32) sb[i] = Bt[(i / 16) * K + k0 + i % 16];
        __syncwarp();
        uint32_t a[4], b[2];
        uint32_t pa = static_cast<uint32_t>(__cvta_generic_to_shared(&sa[(lane % 16) * 16 + (lane / 16) * 8]));
        uint32_t pb = static_cast<uint32_t>(__cvta_generic_to_shared(&sb[(lane % 8) * 16 + ((lane / 8) % 2) * 8]));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(pa));
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                     : "=r"(b[0]), "=r"(b[1]) : "r"(pb));
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        __syncwarp();
    }
    int row = lane / 4, col = (lane % 4) * 2;
    D[row * 8 + col] = acc[0];
    D[row * 8 + col + 1] = acc[1];
    D[(row + 8) * 8 + col] = acc[2];
    D[(row + 8) * 8 + col + 1] = acc[3];
}
