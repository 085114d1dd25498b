// Bulk copies without a tensor map, and the mbarrier forms the GEMM does not use.  Each CTA (128
// threads) takes a chunk of up to 1024 words of `in`:
// - thread 0 copies it into shared memory with cp.async.bulk (global -> shared, complete_tx on an
//   mbarrier after mbarrier.arrive.expect_tx); every thread spins on
//   mbarrier.test_wait.parity until the phase completes;
// - every thread writes res[i] = in[i] * 3 + 1 to shared memory, arrives on a second mbarrier (128
//   arrivals) and waits for it with mbarrier.try_wait on the state its arrive returned;
// - thread 0 copies res to `out` (cp.async.bulk shared -> global, .bulk_group) and adds res[0..3]
//   into sums[0..3] (cp.reduce.async.bulk .add.u32), commits, waits for the group, and invalidates
//   both mbarriers;
// - lanes 5..31 of warp 1 elect a leader (elect.sync, member mask 0xffffffe0): leaders[cta] is its lane.
// `n` is a multiple of 4 (bulk copies move multiples of 16 bytes).
#include <cstdint>

namespace {  // names of their own: ptx_kernels builds every kernel of src/ as one unit
constexpr int BULK_THREADS = 128, BULK_CHUNK = 1024;

__device__ __forceinline__ uint32_t bulk_smem(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
}  // namespace

extern "C" __global__ void __launch_bounds__(BULK_THREADS)
tma_bulk(const uint32_t *in, uint32_t *out, uint32_t *sums, uint32_t *leaders, int n) {
    __shared__ __align__(128) uint32_t buf[BULK_CHUNK];
    __shared__ __align__(128) uint32_t res[BULK_CHUNK];
    __shared__ __align__(8) uint64_t loaded, written;
    const int t = threadIdx.x, base = blockIdx.x * BULK_CHUNK;
    const int count = min(BULK_CHUNK, n - base);
    const uint32_t bytes = count * 4;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bulk_smem(&loaded)));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bulk_smem(&written)), "r"(BULK_THREADS));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (t / 32 == 1 && t % 32 >= 5) {
        uint32_t lane, elected;
        asm volatile("{\n.reg .pred p;\nelect.sync %0|p, 0xffffffe0;\nselp.u32 %1, 1, 0, p;\n}"
                     : "=r"(lane), "=r"(elected));
        if (elected) leaders[blockIdx.x] = lane;
    }
    if (t == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bulk_smem(&loaded)), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(bulk_smem(buf)), "l"(in + base), "r"(bytes), "r"(bulk_smem(&loaded)) : "memory");
    }
    uint32_t ready = 0;
    while (!ready)
        asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(ready) : "r"(bulk_smem(&loaded)) : "memory");
    for (int i = t; i < count; i += BULK_THREADS) res[i] = buf[i] * 3u + 1u;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    uint64_t state;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(bulk_smem(&written)) : "memory");
    asm volatile("{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT;\n}"
                 :: "r"(bulk_smem(&written)), "l"(state) : "memory");
    __syncthreads();           // every thread is past its waits before the mbarriers are invalidated
    if (t == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     :: "l"(out + base), "r"(bulk_smem(res)), "r"(bytes) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%0], [%1], 16;"
                     :: "l"(sums), "r"(bulk_smem(res)) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
        asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(bulk_smem(&loaded)) : "memory");
        asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(bulk_smem(&written)) : "memory");
    }
}
