// mm3: teg's own program reproducing PolyBench/GPU 1.0 3mm as measured on the Quadro GV100
// (hyfiss_gv100_apps.csv, app "3mm"). Written from reading src/cuda/polybench-gpu-1.0/CUDA/3MM/3mm.cu
// (accel-sim/gpu-app-collection @ 52c11fbc).
//
// Same as the measured run: G = (A B)(C D) with 512 x 512 float matrices initialised by PolyBench's
// formulas; three launches mm3_kernel1 (E += A B), mm3_kernel2 (F += C D), mm3_kernel3 (G += E F), each
// grid 16x64 of 32x8 threads, one output element per thread (j along x, i along y). Each thread
// accumulates straight into its output element in global memory (the output may alias the inputs as
// far as the compiler knows, so the element is stored on every step of the k loop and read once);
// the host synchronises after every launch.
// Differs: E, F, G start as zeros (the published host copies uninitialised buffers); `--check`
// compares G with a CPU reference (relative tolerance: the device fuses multiply-adds).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define NI 512
#define NJ 512
#define NK 512
#define NL 512
#define NM 512
#define BX 32
#define BY 8

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "mm3: %s failed: %s\n", #call, cudaGetErrorString(e_));                \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// Z (rows x cols) += X (rows x inner) * Y (inner x cols), one element per thread, accumulated in place.
__device__ __forceinline__ void accumulate_product(float *X, float *Y, float *Z, int rows, int cols, int inner)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= rows || col >= cols) return;
    for (int k = 0; k < inner; k++) Z[row * cols + col] += X[row * inner + k] * Y[k * cols + col];
}

__global__ void mm3_kernel1(float *A, float *B, float *E) { accumulate_product(A, B, E, NI, NJ, NK); }
__global__ void mm3_kernel2(float *C, float *D, float *F) { accumulate_product(C, D, F, NJ, NL, NM); }
__global__ void mm3_kernel3(float *E, float *F, float *G) { accumulate_product(E, F, G, NI, NL, NJ); }

static void cpu_product(const float *X, const float *Y, float *Z, int rows, int cols, int inner)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float s = 0.f;
            for (int k = 0; k < inner; k++) s += X[r * inner + k] * Y[k * cols + c];
            Z[r * cols + c] = s;
        }
}

static float *alloc_host(size_t n) { return (float *)calloc(n, sizeof(float)); }

int main(int argc, char **argv)
{
    bool check = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--check")) check = true;
        else { fprintf(stderr, "usage: mm3 [--check]\n"); return 2; }
    }
    float *A = alloc_host(NI * NK), *B = alloc_host(NK * NJ), *C = alloc_host(NJ * NM), *D = alloc_host(NM * NL);
    float *E = alloc_host(NI * NJ), *F = alloc_host(NJ * NL), *G = alloc_host(NI * NL);
    for (int i = 0; i < NI; i++)
        for (int k = 0; k < NK; k++) A[i * NK + k] = ((float)i * k) / NI;
    for (int k = 0; k < NK; k++)
        for (int j = 0; j < NJ; j++) B[k * NJ + j] = ((float)k * (j + 1)) / NJ;
    for (int j = 0; j < NJ; j++)
        for (int m = 0; m < NM; m++) C[j * NM + m] = ((float)j * (m + 3)) / NL;
    for (int m = 0; m < NM; m++)
        for (int l = 0; l < NL; l++) D[m * NL + l] = ((float)m * (l + 2)) / NK;

    float *dA, *dB, *dC, *dD, *dE, *dF, *dG;
    struct { float **d; float *h; size_t n; } bufs[] = {
        {&dA, A, NI * NK}, {&dB, B, NK * NJ}, {&dC, C, NJ * NM}, {&dD, D, NM * NL},
        {&dE, E, NI * NJ}, {&dF, F, NJ * NL}, {&dG, G, NI * NL}};
    for (auto &b : bufs) CK(cudaMalloc(b.d, b.n * sizeof(float)));
    for (auto &b : bufs) CK(cudaMemcpy(*b.d, b.h, b.n * sizeof(float), cudaMemcpyHostToDevice));

    dim3 block(BX, BY);
    dim3 grid1((NJ + BX - 1) / BX, (NI + BY - 1) / BY);
    dim3 grid2((NL + BX - 1) / BX, (NJ + BY - 1) / BY);
    dim3 grid3((NL + BX - 1) / BX, (NI + BY - 1) / BY);
    mm3_kernel1<<<grid1, block>>>(dA, dB, dE);
    CK(cudaDeviceSynchronize());
    mm3_kernel2<<<grid2, block>>>(dC, dD, dF);
    CK(cudaDeviceSynchronize());
    mm3_kernel3<<<grid3, block>>>(dE, dF, dG);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    float *out = alloc_host(NI * NL);
    CK(cudaMemcpy(out, dG, NI * NL * sizeof(float), cudaMemcpyDeviceToHost));
    for (auto &b : bufs) CK(cudaFree(*b.d));

    double sum = 0;
    for (int x = 0; x < NI * NL; x++) sum += out[x];
    printf("mm3: 3 launches, checksum %.6e\n", sum);
    int rc = 0;
    if (check) {
        cpu_product(A, B, E, NI, NJ, NK);
        cpu_product(C, D, F, NJ, NL, NM);
        cpu_product(E, F, G, NI, NL, NJ);
        int bad = 0;
        for (int x = 0; x < NI * NL; x++)
            if (fabsf(out[x] - G[x]) > 1e-4f * fmaxf(fabsf(G[x]), 1.f)) bad++;
        printf("check: %s (%d of %d values outside 1e-4 relative)\n", bad ? "FAIL" : "PASS", bad, NI * NL);
        rc = bad ? 1 : 0;
    }
    for (auto &b : bufs) free(b.h);
    free(out);
    return rc;
}
