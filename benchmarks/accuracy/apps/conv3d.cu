// conv3d: teg's own program reproducing PolyBench/GPU 1.0 3DConvolution as measured on the Quadro
// GV100 (hyfiss_gv100_apps.csv, app "3DConvolution"). Written from reading
// src/cuda/polybench-gpu-1.0/CUDA/3DCONV/3DConvolution.cu (accel-sim/gpu-app-collection @ 52c11fbc).
//
// Same as the measured run: a 256^3 float volume A (value i%12 + 2(j%7) + 3(k%13)), one launch of
// convolution3D_kernel(A, B, i) per interior plane i = 1 .. 254, grid 8x32 of 32x8 threads (k along x,
// j along y), the same 15-term stencil over 11 distinct taps of A (each term's coefficient and the
// summation order as published, so the taps that repeat are loaded once), one store of B per interior
// point; the host copies A and B in, launches, synchronises and copies B back.
// Differs: B's initial contents are zeros (the published host copies an uninitialised buffer);
// `--launches N` stops after N launches (the sheet keeps the first 100); `--check` compares the
// interior planes computed against a CPU reference (exact: the data and coefficients are small
// integers).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define NI 256
#define NJ 256
#define NK 256
#define BX 32
#define BY 8

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "conv3d: %s failed: %s\n", #call, cudaGetErrorString(e_));             \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// The 15 terms in published order: coefficient and offset (di, dj, dk) of the tap.
struct Term { float c; int di, dj, dk; };
#define C11 2.f
#define C12 -3.f
#define C13 4.f
#define C21 5.f
#define C22 6.f
#define C23 7.f
#define C31 -8.f
#define C32 -9.f
#define C33 10.f
#define TERMS                                                                                      \
    {C11, -1, -1, -1}, {C13, 1, -1, -1}, {C21, -1, -1, -1}, {C23, 1, -1, -1}, {C31, -1, -1, -1},   \
    {C33, 1, -1, -1},  {C12, 0, -1, 0},  {C22, 0, 0, 0},     {C32, 0, 1, 0},   {C11, -1, -1, 1},   \
    {C13, 1, -1, 1},   {C21, -1, 0, 1},  {C23, 1, 0, 1},     {C31, -1, 1, 1},  {C33, 1, 1, 1}
#define NTERMS 15

__device__ __host__ inline int at(int i, int j, int k) { return (i * NJ + j) * NK + k; }

__global__ void convolution3D_kernel(float *A, float *B, int i)
{
    const Term terms[NTERMS] = {TERMS};
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    bool inside = i < NI - 1 && j < NJ - 1 && k < NK - 1 && i > 0 && j > 0 && k > 0;
    if (!inside) return;
    float acc = terms[0].c * A[at(i + terms[0].di, j + terms[0].dj, k + terms[0].dk)];
#pragma unroll
    for (int t = 1; t < NTERMS; t++)
        acc = acc + terms[t].c * A[at(i + terms[t].di, j + terms[t].dj, k + terms[t].dk)];
    B[at(i, j, k)] = acc;
}

static void reference_plane(const float *A, float *B, int i)
{
    const Term terms[NTERMS] = {TERMS};
    for (int j = 1; j < NJ - 1; j++)
        for (int k = 1; k < NK - 1; k++) {
            float acc = terms[0].c * A[at(i + terms[0].di, j + terms[0].dj, k + terms[0].dk)];
            for (int t = 1; t < NTERMS; t++)
                acc = acc + terms[t].c * A[at(i + terms[t].di, j + terms[t].dj, k + terms[t].dk)];
            B[at(i, j, k)] = acc;
        }
}

int main(int argc, char **argv)
{
    int launches = NI - 2;
    bool check = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--check")) check = true;
        else if (!strcmp(argv[a], "--launches") && a + 1 < argc) launches = atoi(argv[++a]);
        else { fprintf(stderr, "usage: conv3d [--launches N] [--check]\n"); return 2; }
    }
    if (launches < 0 || launches > NI - 2) { fprintf(stderr, "conv3d: --launches must be 0..%d\n", NI - 2); return 2; }

    size_t n = (size_t)NI * NJ * NK;
    float *A = (float *)malloc(n * sizeof(float));
    float *B = (float *)calloc(n, sizeof(float));
    for (int i = 0; i < NI; i++)
        for (int j = 0; j < NJ; j++)
            for (int k = 0; k < NK; k++) A[at(i, j, k)] = (float)(i % 12 + 2 * (j % 7) + 3 * (k % 13));

    float *dA, *dB;
    CK(cudaMalloc(&dA, n * sizeof(float)));
    CK(cudaMalloc(&dB, n * sizeof(float)));
    CK(cudaMemcpy(dA, A, n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B, n * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(BX, BY);
    dim3 grid((NK + BX - 1) / BX, (NJ + BY - 1) / BY);
    for (int i = 1; i <= launches; i++) convolution3D_kernel<<<grid, block>>>(dA, dB, i);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    float *out = (float *)malloc(n * sizeof(float));
    CK(cudaMemcpy(out, dB, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(dA));
    CK(cudaFree(dB));

    double sum = 0;
    for (size_t x = 0; x < n; x++) sum += out[x];
    printf("conv3d: %d launches, checksum %.6e\n", launches, sum);
    int rc = 0;
    if (check) {
        float *ref = (float *)calloc(n, sizeof(float));
        for (int i = 1; i <= launches; i++) reference_plane(A, ref, i);
        size_t bad = 0;
        for (size_t x = 0; x < n; x++) bad += out[x] != ref[x];
        printf("check: %s (%zu of %zu values differ)\n", bad ? "FAIL" : "PASS", bad, n);
        rc = bad ? 1 : 0;
        free(ref);
    }
    free(A);
    free(B);
    free(out);
    return rc;
}
