// Plain tiled SGEMM C = A * B (row-major f32), 16x16 threads, each thread one output, through
// shared-memory tiles read with ld.shared (the "direct" GEMM, no tensor cores).
#define T 16

__global__ void gemm_ldshared(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float ta[T][T + 1];
    __shared__ float tb[T][T];
    int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += T) {
        ta[threadIdx.y][threadIdx.x] = (r < M && k0 + threadIdx.x < K) ? A[r * K + k0 + threadIdx.x] : 0.f;
        tb[threadIdx.y][threadIdx.x] = (c < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + c] : 0.f;
        __syncthreads();
        for (int k = 0; k < T; ++k) acc = fmaf(ta[threadIdx.y][k], tb[k][threadIdx.x], acc);
        __syncthreads();
    }
    if (r < M && c < N) C[r * N + c] = acc;
}
