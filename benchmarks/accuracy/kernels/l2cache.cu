// gpu-l2-cache experiment (teg accuracy suite; our own code, written from the facts listed in
// benchmarks/accuracy/README.md, "l2": te42kyfo/gpu-benches gpu-l2-cache/main.cu at the commits that
// produced the measured files). Blocks of 1024 threads; with R = the number of slices in the buffer
// (the benchmark's blockRun), block b reads the chunks (b mod R) + R * i, i = 0, 1, ..., of the
// buffer, coalesced (thread t reads element t of a chunk), into ONE double accumulator, then
// multiplies it by 1.3. A block's slice is therefore spread over the whole buffer in chunks R
// chunks apart, and consecutive blocks read neighbouring chunks. 64 doubles per thread = 512 kB
// per block; the loop has a constant trip count and no unroll pragma (nvcc's choice, as there).
//   l2_add: one load per iteration, 8 kB chunks, a DADD chain (the H100 PCIe file, 2023-11-02).
//   l2_fma: two loads per iteration, 1024 doubles (8 kB) apart, 16 kB chunks, a DFMA chain
//           s = B[i] * B[i + 1024] + s (the A100 80 GB file, 2024-04-03).

template <int N>
__device__ __forceinline__ double add_chain(const double *B, int R) {
    double s = 0.0;
    const int r = blockIdx.x % R;
    for (int i = 0; i < N; i++) s += B[(i * R + r) * 1024 + threadIdx.x];
    return s;
}

template <int N>
__device__ __forceinline__ double fma_chain(const double *B, int R) {
    double s = 0.0;
    const int r = blockIdx.x % R;
    for (int i = 0; i < N / 2; i++) {
        int e = (i * R + r) * 2048 + threadIdx.x;
        s += B[e] * B[e + 1024];
    }
    return s;
}

extern "C" __global__ void l2_add(const double *B, double *out, int slices) {
    double s = add_chain<64>(B, slices) * 1.3;
    if (s == 23.12) out[threadIdx.x] = s;       // never true: keeps the loads alive
}

extern "C" __global__ void l2_fma(const double *B, double *out, int slices) {
    double s = fma_chain<64>(B, slices) * 1.3;
    if (s == 23.12) out[threadIdx.x] = s;
}
