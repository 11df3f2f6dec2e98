// gpu-stream style kernels (teg accuracy suite; our own code, written from the experiment's
// description in benchmarks/accuracy/README.md). One double per thread,
// i = threadIdx.x + blockIdx.x * blockDim.x. As in the benchmark, every kernel declares a 768-double
// shared array that it touches only when `never` (0 at run time) is set, and the suite launches
// it with a 9 % preferred shared-memory carveout (Options(shared_carveout=9)): 6 KB + the driver's
// 1 KB per block in a 16 KB carveout pins 2 blocks per SM.
#include <cstdint>

#define SPOILER __shared__ double spoiler[768]; if (never) spoiler[threadIdx.x] = (double)n
#define SPOIL(i) if (never) A[i] = spoiler[(threadIdx.x + 1) % 768]

extern "C" __global__ void stream_init(double *A, int64_t n, int never) {
    SPOILER;
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i < n) A[i] = 0.23;
    SPOIL(i);
}

extern "C" __global__ void stream_read(double *A, const double *B, int64_t n, int never) {
    SPOILER;
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i < n) {
        double t = B[i];
        if (t == 123.0) A[i] = t;          // never true: keeps the load alive
    }
    SPOIL(i);
}

extern "C" __global__ void stream_scale(double *A, const double *B, int64_t n, int never) {
    SPOILER;
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i < n) A[i] = 1.2 * B[i];
    SPOIL(i);
}

extern "C" __global__ void stream_triad(double *A, const double *B, const double *C, int64_t n, int never) {
    SPOILER;
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i < n) A[i] = 1.2 * B[i] + C[i];
    SPOIL(i);
}

// 1-D 3-point stencil on B (the "1pt" kernel: radius 1)
extern "C" __global__ void stream_1pt(double *A, const double *B, int64_t n, int never) {
    SPOILER;
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= 1 && i < n - 1) A[i] = 0.5 * B[i - 1] - B[i] + 0.5 * B[i + 1];
    SPOIL(i);
}

// 1-D 5-point stencil on B (the "3pt" kernel: radius 2)
extern "C" __global__ void stream_3pt(double *A, const double *B, int64_t n, int never) {
    SPOILER;
    int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x;
    if (i >= 2 && i < n - 2)
        A[i] = 0.25 * B[i - 2] + 0.5 * B[i - 1] - B[i] + 0.5 * B[i + 1] + 0.25 * B[i + 2];
    SPOIL(i);
}
