// bicg: teg's own program reproducing PolyBench/GPU 1.0 BiCG (the two matrix-vector products of
// the BiCGStab kernel) as measured on the Quadro GV100 (hyfiss_gv100_apps.csv, app "bicg"). Written
// from reading src/cuda/polybench-gpu-1.0/CUDA/BICG/bicg.cu (accel-sim/gpu-app-collection @ 52c11fbc).
//
// Same as the measured run: NX = NY = 4096, A[i][j] = ij/NX, r[i] = p[i] = i*pi; two launches, grid
// 16 of 256 threads: bicg_kernel1 computes s = A^T r with one column j per thread (consecutive lanes
// read consecutive elements of a row), bicg_kernel2 computes q = A p with one row i per thread
// (lanes 4096 floats apart). Both zero their output element, then accumulate into it in global
// memory (stored on every step of the loop, read once); the host synchronises after each launch.
// Differs: nothing in the launches; `--check` compares s and q with a CPU reference in double
// precision (relative tolerance 1e-4).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define NX 4096
#define NY 4096
#define THREADS 256
#define PI_VALUE 3.14159265358979323846

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "bicg: %s failed: %s\n", #call, cudaGetErrorString(e_));               \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// s[j] = sum_i A[i][j] * r[i]: thread j walks down column j.
__global__ void bicg_kernel1(float *A, float *r, float *s)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= NY) return;
    s[j] = 0.0f;
    for (int i = 0; i < NX; i++) s[j] += A[i * NY + j] * r[i];
}

// q[i] = sum_j A[i][j] * p[j]: thread i walks along row i.
__global__ void bicg_kernel2(float *A, float *p, float *q)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= NX) return;
    q[i] = 0.0f;
    for (int j = 0; j < NY; j++) q[i] += A[i * NY + j] * p[j];
}

static int compare(const char *name, const float *got, const double *want, int n)
{
    int bad = 0;
    for (int x = 0; x < n; x++)
        if (fabs(got[x] - want[x]) > 1e-4 * fmax(fabs(want[x]), 1.0)) bad++;
    if (bad) printf("check: %s has %d of %d values outside 1e-4 relative\n", name, bad, n);
    return bad;
}

int main(int argc, char **argv)
{
    bool check = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--check")) check = true;
        else { fprintf(stderr, "usage: bicg [--check]\n"); return 2; }
    }
    float *A = (float *)malloc(sizeof(float) * NX * NY);
    float *r = (float *)malloc(sizeof(float) * NX), *p = (float *)malloc(sizeof(float) * NY);
    float *s = (float *)calloc(NY, sizeof(float)), *q = (float *)calloc(NX, sizeof(float));
    for (int i = 0; i < NX; i++) {
        r[i] = (float)(i * PI_VALUE);
        for (int j = 0; j < NY; j++) A[i * NY + j] = ((float)i * j) / NX;
    }
    for (int j = 0; j < NY; j++) p[j] = (float)(j * PI_VALUE);

    float *dA, *dr, *ds, *dp, *dq;
    CK(cudaMalloc(&dA, sizeof(float) * NX * NY));
    CK(cudaMalloc(&dr, sizeof(float) * NX));
    CK(cudaMalloc(&ds, sizeof(float) * NY));
    CK(cudaMalloc(&dp, sizeof(float) * NY));
    CK(cudaMalloc(&dq, sizeof(float) * NX));
    CK(cudaMemcpy(dA, A, sizeof(float) * NX * NY, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dr, r, sizeof(float) * NX, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ds, s, sizeof(float) * NY, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dp, p, sizeof(float) * NY, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dq, q, sizeof(float) * NX, cudaMemcpyHostToDevice));
    bicg_kernel1<<<(NY + THREADS - 1) / THREADS, THREADS>>>(dA, dr, ds);
    CK(cudaDeviceSynchronize());
    bicg_kernel2<<<(NX + THREADS - 1) / THREADS, THREADS>>>(dA, dp, dq);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    CK(cudaMemcpy(s, ds, sizeof(float) * NY, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(q, dq, sizeof(float) * NX, cudaMemcpyDeviceToHost));
    CK(cudaFree(dA));
    CK(cudaFree(dr));
    CK(cudaFree(ds));
    CK(cudaFree(dp));
    CK(cudaFree(dq));

    double sum = 0;
    for (int x = 0; x < NY; x++) sum += s[x];
    for (int x = 0; x < NX; x++) sum += q[x];
    printf("bicg: 2 launches, checksum %.6e\n", sum);
    int rc = 0;
    if (check) {
        double *rs = (double *)calloc(NY, sizeof(double)), *rq = (double *)calloc(NX, sizeof(double));
        for (int i = 0; i < NX; i++)
            for (int j = 0; j < NY; j++) {
                rs[j] += (double)A[i * NY + j] * r[i];
                rq[i] += (double)A[i * NY + j] * p[j];
            }
        int bad = compare("s", s, rs, NY) + compare("q", q, rq, NX);
        printf("check: %s\n", bad ? "FAIL" : "PASS");
        rc = bad ? 1 : 0;
        free(rs);
        free(rq);
    }
    free(A); free(r); free(p); free(s); free(q);
    return rc;
}
