// gpu-stream style kernels (teg accuracy suite; our own code, written from the experiment's
// description in benchmarks/accuracy/README.md). One double per thread,
// i = threadIdx.x + blockIdx.x * blockDim.x; the launch pins 2 blocks per SM (in the suite through
// Options(blocks_per_sm=2), standing in for the benchmark's unused 768-double shared array).
#include <cstdint>

extern "C" __global__ void stream_init(double *A, int64_t n) {
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i < n) A[i] = 0.23;
}

extern "C" __global__ void stream_read(double *A, const double *B, int64_t n) {
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i < n) {
        double t = B[i];
        if (t == 123.0) A[i] = t;          // never true: keeps the load alive
    }
}

extern "C" __global__ void stream_scale(double *A, const double *B, int64_t n) {
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i < n) A[i] = 1.2 * B[i];
}

extern "C" __global__ void stream_triad(double *A, const double *B, const double *C, int64_t n) {
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i < n) A[i] = 1.2 * B[i] + C[i];
}

// 1-D 3-point stencil on B (the "1pt" kernel: radius 1)
extern "C" __global__ void stream_1pt(double *A, const double *B, int64_t n) {
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= 1 && i < n - 1) A[i] = 0.5 * B[i - 1] - B[i] + 0.5 * B[i + 1];
}

// 1-D 5-point stencil on B (the "3pt" kernel: radius 2)
extern "C" __global__ void stream_3pt(double *A, const double *B, int64_t n) {
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= 2 && i < n - 2)
        A[i] = 0.25 * B[i - 2] + 0.5 * B[i - 1] - B[i] + 0.5 * B[i + 1] + 0.25 * B[i + 2];
}
