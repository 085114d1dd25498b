// Sum and max of an f32 array: warp butterflies with shfl.sync, per-block shared partials,
// atomics into global results; a ballot counts the negative elements.
#include <cstdint>

__global__ void reduce_shfl(const float *x, int n, float *sum, unsigned *count_neg, int *max_bits) {
    __shared__ float partial[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    unsigned neg = __ballot_sync(0xffffffffu, v < 0.f);
    int m = i < n ? __float_as_int(v) : INT32_MIN;
    for (int d = 16; d > 0; d /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, d);
        m = max(m, __shfl_down_sync(0xffffffffu, m, d));
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        partial[warp] = v;
        atomicAdd(count_neg, __popc(neg));
        atomicMax(max_bits, m);
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? partial[lane] : 0.f;
        for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
        if (lane == 0) atomicAdd(sum, v);
    }
}
