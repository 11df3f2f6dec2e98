// gramschmidt: teg's own program reproducing PolyBench/GPU 1.0 Gram-Schmidt (QR by modified
// Gram-Schmidt) as measured on the Quadro GV100 (hyfiss_gv100_apps.csv, app "gramschmidt"). Written
// from reading src/cuda/polybench-gpu-1.0/CUDA/GRAMSCHM/gramschmidt.cu (accel-sim/gpu-app-collection
// @ 52c11fbc).
//
// Same as the measured run: M = N = 2048, A[i][j] = (i+1)(j+1)/(M+1); for each column k three launches
// of 256-thread blocks, each followed by a synchronisation: gramschmidt_kernel1 (grid 1; thread 0
// alone computes the norm of column k, reading it down the rows, and writes R[k][k]),
// gramschmidt_kernel2 (grid 8; Q[i][k] = A[i][k] / R[k][k], one row per thread) and
// gramschmidt_kernel3 (grid 8; thread j > k projects column j on q_k, accumulating R[k][j] in global
// memory, then subtracts the projection from column j of A, element by element in global memory).
// Differs: the sheet has only the first column's three launches, so the measured run is
// `--launches 3` (the published program runs 3 x 2048); R and Q start as zeros copied from the host
// (published: left uninitialised; every element read is written first); `--check` compares A, R and
// Q with a CPU reference of the same steps (double precision), for the first column only (A has
// rank 1, so later columns are rounding noise).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define M 2048
#define N 2048
#define THREADS 256

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "gramschmidt: %s failed: %s\n", #call, cudaGetErrorString(e_));        \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// R[k][k] = || A[:, k] ||, by thread 0 of the grid. The loop is unrolled 16 times, as the measured
// CUDA 11.8 sm_70 binary's was (its 4,946 warp instructions fit 128 iterations of 16 loads, 16
// FFMAs and about 5 loop instructions, 4,736, plus the 8 warps' prologue; 64 times, nvcc 13's own
// choice, would give about 4,370): the loads one iteration keeps in flight bound this loop.
__global__ void gramschmidt_kernel1(float *a, float *r, float *q, int k)
{
    if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
    float sq = 0.0f;
#pragma unroll 16
    for (int i = 0; i < M; i++) sq += a[i * N + k] * a[i * N + k];
    r[k * N + k] = sqrtf(sq);
}

// Q[:, k] = A[:, k] / R[k][k]
__global__ void gramschmidt_kernel2(float *a, float *r, float *q, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M) q[i * N + k] = a[i * N + k] / r[k * N + k];
}

// For j > k: R[k][j] = Q[:, k] . A[:, j]; A[:, j] -= Q[:, k] R[k][j]. R[k][j] lives in global memory:
// stored at every step of the dot product, and re-read at every step of the update after the first
// (a store to A may change it as far as the compiler knows). The first update step uses the value
// just stored, as the measured CUDA 11.8 binary does (nvcc 13 would re-read it there too: one more
// load per warp).
__global__ void gramschmidt_kernel3(float *a, float *r, float *q, int k)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j <= k || j >= N) return;
    float dot = 0.0f;
    r[k * N + j] = dot;
    for (int i = 0; i < M; i++) {
        dot += q[i * N + k] * a[i * N + j];
        r[k * N + j] = dot;
    }
    a[j] -= q[k] * dot;
    for (int i = 1; i < M; i++) a[i * N + j] -= q[i * N + k] * r[k * N + j];
}

// The same steps for columns 0 .. cols-1 in double precision (the last one possibly partial).
static void reference(double *A, double *R, double *Q, int launches)
{
    for (int k = 0; 3 * k < launches; k++) {
        double s = 0;
        for (int i = 0; i < M; i++) s += A[i * N + k] * A[i * N + k];
        R[k * N + k] = sqrt(s);
        if (3 * k + 1 >= launches) break;
        for (int i = 0; i < M; i++) Q[i * N + k] = A[i * N + k] / R[k * N + k];
        if (3 * k + 2 >= launches) break;
        for (int j = k + 1; j < N; j++) {
            double d = 0;
            for (int i = 0; i < M; i++) d += Q[i * N + k] * A[i * N + j];
            R[k * N + j] = d;
            for (int i = 0; i < M; i++) A[i * N + j] -= Q[i * N + k] * d;
        }
    }
}

// |got - want| <= 1e-3 |want| + 1e-5 scale: A's columns j > k cancel to rounding noise of A's size.
static int compare(const char *name, const float *got, const double *want, size_t n, double scale)
{
    size_t bad = 0;
    for (size_t x = 0; x < n; x++)
        if (fabs(got[x] - want[x]) > 1e-3 * fabs(want[x]) + 1e-5 * scale) bad++;
    if (bad) printf("check: %s has %zu of %zu values outside tolerance\n", name, bad, n);
    return bad != 0;
}

int main(int argc, char **argv)
{
    int launches = 3 * N;
    bool check = false;
    for (int x = 1; x < argc; x++) {
        if (!strcmp(argv[x], "--check")) check = true;
        else if (!strcmp(argv[x], "--launches") && x + 1 < argc) launches = atoi(argv[++x]);
        else { fprintf(stderr, "usage: gramschmidt [--launches N] [--check]\n"); return 2; }
    }
    if (launches < 0 || launches > 3 * N) { fprintf(stderr, "gramschmidt: --launches must be 0..%d\n", 3 * N); return 2; }
    if (check && launches > 3) {
        // PolyBench's A has rank 1: after the first column every column is rounding noise, which the
        // device and the host round differently; only the first column's steps can be compared.
        fprintf(stderr, "gramschmidt: --check needs --launches <= 3 (A has rank 1)\n");
        return 2;
    }
    size_t n = (size_t)M * N;
    float *A = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) A[i * N + j] = ((float)(i + 1) * (j + 1)) / (M + 1);

    float *dA, *dR, *dQ;
    CK(cudaMalloc(&dA, n * sizeof(float)));
    CK(cudaMalloc(&dR, n * sizeof(float)));
    CK(cudaMalloc(&dQ, n * sizeof(float)));
    CK(cudaMemcpy(dA, A, n * sizeof(float), cudaMemcpyHostToDevice));
    float *zeros = (float *)calloc(n, sizeof(float));
    CK(cudaMemcpy(dR, zeros, n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dQ, zeros, n * sizeof(float), cudaMemcpyHostToDevice));
    free(zeros);
    int grid = (N + THREADS - 1) / THREADS;
    int done = 0;
    for (int k = 0; k < N && done < launches; k++) {
        gramschmidt_kernel1<<<1, THREADS>>>(dA, dR, dQ, k);
        CK(cudaDeviceSynchronize());
        if (++done == launches) break;
        gramschmidt_kernel2<<<grid, THREADS>>>(dA, dR, dQ, k);
        CK(cudaDeviceSynchronize());
        if (++done == launches) break;
        gramschmidt_kernel3<<<grid, THREADS>>>(dA, dR, dQ, k);
        CK(cudaDeviceSynchronize());
        ++done;
    }
    CK(cudaGetLastError());
    float *oA = (float *)malloc(n * sizeof(float)), *oR = (float *)malloc(n * sizeof(float));
    float *oQ = (float *)malloc(n * sizeof(float));
    CK(cudaMemcpy(oA, dA, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(oR, dR, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(oQ, dQ, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(dA));
    CK(cudaFree(dR));
    CK(cudaFree(dQ));

    double sum = 0;
    for (size_t x = 0; x < n; x++) sum += (double)oA[x] + oR[x] + oQ[x];
    printf("gramschmidt: %d launches, checksum %.6e\n", done, sum);
    int rc = 0;
    if (check) {
        double *rA = (double *)malloc(n * sizeof(double));
        double *rR = (double *)calloc(n, sizeof(double)), *rQ = (double *)calloc(n, sizeof(double));
        for (size_t x = 0; x < n; x++) rA[x] = A[x];
        reference(rA, rR, rQ, done);
        double scale = 0;
        for (size_t x = 0; x < n; x++) scale = fmax(scale, fabs((double)A[x]));
        int bad = compare("A", oA, rA, n, scale) + compare("R", oR, rR, n, 1.0) + compare("Q", oQ, rQ, n, 1.0);
        printf("check: %s\n", bad ? "FAIL" : "PASS");
        rc = bad ? 1 : 0;
        free(rA); free(rR); free(rQ);
    }
    free(A); free(oA); free(oR); free(oQ);
    return rc;
}
