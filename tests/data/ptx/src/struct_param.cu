// A kernel taking a struct by value (a .b8 [N] parameter): y = alpha * x + beta, per element,
// with the coefficients, a half-precision offset and the length in one struct.
#include <cuda_fp16.h>

struct Params {
    float alpha;
    half offset;
    int n;
    double beta;
    float pad[3];
};

__global__ void struct_param(Params p, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.alpha * x[i] + (float)p.beta + __half2float(p.offset) + p.pad[i % 3];
}
