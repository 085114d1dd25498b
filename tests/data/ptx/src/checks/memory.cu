// Out-of-bounds and misaligned accesses (fragsim run --check: out_of_bounds, misaligned), each kernel
// with its correct twin (_ok).  A line marked "BUG <kind>" is where the finding must point.
#include <cstdint>

// one block of 64 threads, n = 32: in has n floats
extern "C" __global__ void oob_global_bug(const float *in, float *out, int n) {
    int i = threadIdx.x;
    if (i <= n) {
        float x = in[i];  // BUG out_of_bounds
        out[i] = x;
    }
}

extern "C" __global__ void oob_global_ok(const float *in, float *out, int n) {
    int i = threadIdx.x;
    if (i < n) {
        float x = in[i];
        out[i] = x;
    }
}

// one block of 64 threads, 64 * 4 bytes of dynamic shared memory
extern "C" __global__ void oob_shared_bug(float *out) {
    extern __shared__ float buf[];
    int i = threadIdx.x;
    buf[i] = i;
    __syncthreads();
    out[i] = buf[i + 1];  // BUG out_of_bounds
}

extern "C" __global__ void oob_shared_ok(float *out) {
    extern __shared__ float buf[];
    int i = threadIdx.x;
    buf[i] = i;
    __syncthreads();
    out[i] = buf[(i + 1) % blockDim.x];
}

// one warp; in has 4 * 32 + 4 floats, out 32 float4
extern "C" __global__ void misaligned_global_bug(const float *in, float4 *out) {
    const float4 *p = reinterpret_cast<const float4 *>(in + 1);
    out[threadIdx.x] = p[threadIdx.x];  // BUG misaligned
}

extern "C" __global__ void misaligned_global_ok(const float *in, float4 *out) {
    const float4 *p = reinterpret_cast<const float4 *>(in + 4);
    out[threadIdx.x] = p[threadIdx.x];
}

// one warp: ldmatrix .x1 rows 16 bytes apart, but 8 bytes off their alignment
extern "C" __global__ void ldmatrix_misaligned_bug(unsigned *out) {
    __shared__ __align__(16) unsigned short tile[8 * 16];
    int t = threadIdx.x;
    for (int i = t; i < 8 * 16; i += 32) tile[i] = i;
    __syncwarp();
    unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(tile + (t % 8) * 16 + 4));
    unsigned r;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r) : "r"(addr));  // BUG misaligned
    out[t] = r;
}

extern "C" __global__ void ldmatrix_misaligned_ok(unsigned *out) {
    __shared__ __align__(16) unsigned short tile[8 * 16];
    int t = threadIdx.x;
    for (int i = t; i < 8 * 16; i += 32) tile[i] = i;
    __syncwarp();
    unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(tile + (t % 8) * 16));
    unsigned r;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r) : "r"(addr));
    out[t] = r;
}

// one warp: 16-byte cp.async copies whose shared destinations are 8 bytes off
extern "C" __global__ void cp_async_misaligned_bug(const int4 *in, int4 *out) {
    __shared__ __align__(16) char buf[32 * 16 + 16];
    int t = threadIdx.x;
    unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(buf + t * 16 + 8));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(in + t) : "memory");  // BUG misaligned
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    out[t] = reinterpret_cast<int4 *>(buf)[t];
}

extern "C" __global__ void cp_async_misaligned_ok(const int4 *in, int4 *out) {
    __shared__ __align__(16) char buf[32 * 16 + 16];
    int t = threadIdx.x;
    unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(buf + t * 16));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(in + t) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    out[t] = reinterpret_cast<int4 *>(buf)[t];
}
