// Inline-asm statements written over several lines, as kernels write ldmatrix and mma: nvcc -lineinfo
// puts the .loc of each at its last operand (its last line); fragsim reports the line it starts on.
#include <cstdint>

__global__ void inline_asm(const uint32_t *in, uint32_t *out) {
    __shared__ __align__(16) uint32_t s[64];
    int t = threadIdx.x;
    s[t] = in[t];
    s[t + 32] = in[t + 32];
    __syncthreads();
    uint32_t a, b, c, d;
    uint32_t p = static_cast<uint32_t>(__cvta_generic_to_shared(&s[(t % 16) * 4]));
    asm volatile(  // the template on the next line (and a "(" in this comment
        "ld.shared.v2.b32 {%0, %1}, [%2];"
        : "=r"(a), "=r"(b)
        : "r"(p));
    __asm__ __volatile__ ("ld.shared.b32 %0, [%1+8];" : "=r"(c) : "r"(p));
    asm volatile("{\n\t"
                 ".reg .b32 t;\n\t"
                 "ld.shared.b32 t, [%1+12];  // \")\" in the template\n\t"
                 "add.u32 %0, t, 1;\n\t"
                 "}"
                 : "=r"(d)
                 : "r"(p)
                 : "memory");
    asm volatile("bar.warp.sync -1;"
    );
    out[t] = a + b + c + d;
}
