// mvt: teg's own program reproducing PolyBench/GPU 1.0 MVT (x1 += A y1, x2 += A^T y2) as measured
// on the Quadro GV100 (hyfiss_gv100_apps.csv, app "mvt"). Written from reading
// src/cuda/polybench-gpu-1.0/CUDA/MVT/mvt.cu (accel-sim/gpu-app-collection @ 52c11fbc).
//
// Same as the measured run: N = 4096, A[i][j] = ij/N, x1[i] = i/N, x2[i] = (i+1)/N, y1[i] = (i+3)/N,
// y2[i] = (i+4)/N; two launches back to back (no synchronisation between them), grid 16 of 256
// threads: mvt_kernel1 walks row i of A per thread (lanes 4096 floats apart), mvt_kernel2 walks
// column i (consecutive lanes read consecutive elements). Each thread accumulates into its x element
// in global memory (read once, stored on every step of the loop).
// Differs: nothing in the launches; `--check` compares x1 and x2 with a CPU reference in double
// precision (relative tolerance 1e-4).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define N 4096
#define THREADS 256

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "mvt: %s failed: %s\n", #call, cudaGetErrorString(e_));                \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// x1[i] += sum_j a[i][j] * y_1[j]
__global__ void mvt_kernel1(float *a, float *x1, float *y_1)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    for (int j = 0; j < N; j++) x1[i] += a[i * N + j] * y_1[j];
}

// x2[i] += sum_j a[j][i] * y_2[j]
__global__ void mvt_kernel2(float *a, float *x2, float *y_2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    for (int j = 0; j < N; j++) x2[i] += a[j * N + i] * y_2[j];
}

static int compare(const char *name, const float *got, const double *want)
{
    int bad = 0;
    for (int x = 0; x < N; x++)
        if (fabs(got[x] - want[x]) > 1e-4 * fmax(fabs(want[x]), 1.0)) bad++;
    if (bad) printf("check: %s has %d of %d values outside 1e-4 relative\n", name, bad, N);
    return bad;
}

int main(int argc, char **argv)
{
    bool check = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--check")) check = true;
        else { fprintf(stderr, "usage: mvt [--check]\n"); return 2; }
    }
    float *A = (float *)malloc(sizeof(float) * N * N);
    float *x1 = (float *)malloc(sizeof(float) * N), *x2 = (float *)malloc(sizeof(float) * N);
    float *y1 = (float *)malloc(sizeof(float) * N), *y2 = (float *)malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        x1[i] = ((float)i) / N;
        x2[i] = ((float)i + 1) / N;
        y1[i] = ((float)i + 3) / N;
        y2[i] = ((float)i + 4) / N;
        for (int j = 0; j < N; j++) A[i * N + j] = ((float)i * j) / N;
    }
    float *dA, *dx1, *dx2, *dy1, *dy2;
    CK(cudaMalloc(&dA, sizeof(float) * N * N));
    CK(cudaMalloc(&dx1, sizeof(float) * N));
    CK(cudaMalloc(&dx2, sizeof(float) * N));
    CK(cudaMalloc(&dy1, sizeof(float) * N));
    CK(cudaMalloc(&dy2, sizeof(float) * N));
    CK(cudaMemcpy(dA, A, sizeof(float) * N * N, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx1, x1, sizeof(float) * N, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx2, x2, sizeof(float) * N, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy1, y1, sizeof(float) * N, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy2, y2, sizeof(float) * N, cudaMemcpyHostToDevice));
    int grid = (N + THREADS - 1) / THREADS;
    mvt_kernel1<<<grid, THREADS>>>(dA, dx1, dy1);
    mvt_kernel2<<<grid, THREADS>>>(dA, dx2, dy2);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    float *o1 = (float *)malloc(sizeof(float) * N), *o2 = (float *)malloc(sizeof(float) * N);
    CK(cudaMemcpy(o1, dx1, sizeof(float) * N, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o2, dx2, sizeof(float) * N, cudaMemcpyDeviceToHost));
    CK(cudaFree(dA));
    CK(cudaFree(dx1));
    CK(cudaFree(dx2));
    CK(cudaFree(dy1));
    CK(cudaFree(dy2));

    double sum = 0;
    for (int x = 0; x < N; x++) sum += (double)o1[x] + o2[x];
    printf("mvt: 2 launches, checksum %.6e\n", sum);
    int rc = 0;
    if (check) {
        double *r1 = (double *)malloc(sizeof(double) * N), *r2 = (double *)malloc(sizeof(double) * N);
        for (int i = 0; i < N; i++) { r1[i] = x1[i]; r2[i] = x2[i]; }
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                r1[i] += (double)A[i * N + j] * y1[j];
                r2[j] += (double)A[i * N + j] * y2[i];
            }
        int bad = compare("x1", o1, r1) + compare("x2", o2, r2);
        printf("check: %s\n", bad ? "FAIL" : "PASS");
        rc = bad ? 1 : 0;
        free(r1);
        free(r2);
    }
    free(A); free(x1); free(x2); free(y1); free(y2); free(o1); free(o2);
    return rc;
}
