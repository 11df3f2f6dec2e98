// gaussian: teg's own program reproducing Rodinia 3.1 gaussian (Gaussian elimination without
// pivoting, forward phase on the GPU) as measured on the Quadro GV100 (hyfiss_gv100_apps.csv, app
// "gaussian", run as `./gaussian -f matrix1024.txt`). Written from reading
// src/cuda/rodinia/3.1/cuda/gaussian/gaussian.cu and its Makefile (accel-sim/gpu-app-collection @
// 52c11fbc) and Rodinia's data/gaussian/matrixGenerator.py.
//
// Same as the measured run: a 1024 x 1024 float system; for t = 0 .. Size-2 two launches, each followed
// by a synchronisation: Fan1 (grid 8 of 128 threads, one row below the pivot per thread:
// m[row][t] = a[row][t] / a[t][t], an IEEE division) and Fan2 (grid 64 x 64 of 16 x 16 threads, x = row
// below the pivot, y = column from the pivot: a[row][col] -= m[row][t] a[t][col], and for y == 0 also
// b[row] -= m[row][t] b[t]). m is copied in as zeros; m, a, b are copied back and the back substitution
// runs on the host.
// Inputs: matrix1024.txt is not public; the matrix is generated the way matrixGenerator.py makes it
// (every entry and every solution component k/10 for k uniform in -10..10, b = A x), from a fixed seed.
// The values reach the kernels' execution only through Fan1's division: a lane whose numerator is
// zero takes the division's slow path (FCHK; Nsight Compute's Fan1 rows show it: 28 x 44 extra warp
// instructions at t = 0 and 8 x 44 at t = 1, none after). The default seed was chosen so that the
// generated matrix has a zero numerator in exactly 28 of Fan1's 32 warps at t = 0, 8 at t = 1 and none
// for t = 2 .. 49, like the measured input.
// Differs: `-s N` generates the matrix instead of reading a file; `--launches N` stops after N kernel
// launches (the sheet keeps 100: t = 0 .. 49); `--check` compares m, a and b with a host reference of
// the same steps (fused multiply-adds, IEEE division: bit-equal expected) and, after a full run, the
// solution with the generated one.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define FAN1_THREADS 128
#define FAN2_SIDE 16
#define DEFAULT_SEED 334

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "gaussian: %s failed: %s\n", #call, cudaGetErrorString(e_));           \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// Multipliers of column t: one row below the pivot per thread.
__global__ void Fan1(float *m_cuda, float *a_cuda, int Size, int t)
{
    unsigned below = blockIdx.x * blockDim.x + threadIdx.x;
    if (below >= (unsigned)(Size - 1 - t)) return;
    unsigned row_start = Size * (below + t + 1);  // unsigned offset of the row, then + t as an int
    float *m_row = m_cuda + row_start, *a_row = a_cuda + row_start;
    m_row[t] = a_row[t] / a_cuda[Size * t + t];
}

// Eliminate column t from the rows below the pivot; column y == 0 also updates the right-hand side.
__global__ void Fan2(float *m_cuda, float *a_cuda, float *b_cuda, int Size, int j1, int t)
{
    unsigned below = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned right = blockIdx.y * blockDim.y + threadIdx.y;
    if (below >= (unsigned)(Size - 1 - t)) return;
    if (right >= (unsigned)(Size - t)) return;
    unsigned row = below + t + 1, col = right + t;
    a_cuda[Size * row + col] -= m_cuda[Size * row + t] * a_cuda[Size * t + col];
    if (right == 0) b_cuda[row] -= m_cuda[Size * row + col] * b_cuda[t];
}

// SplitMix64: the generator's stream of integers k in -10 .. 10.
static uint64_t rng_state;
static int next_tenths()
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (int)(z % 21) - 10;
}

// matrixGenerator.py's recipe: the solution first, then the matrix row by row, then b = A x summed
// in double (the file holds the decimal values; reading them with %f rounds each to float).
static void generate(int n, uint64_t seed, float *a, float *b, float *x)
{
    rng_state = seed;
    double *xd = (double *)malloc(n * sizeof(double));
    int *k = (int *)malloc((size_t)n * n * sizeof(int));
    for (int i = 0; i < n; i++) xd[i] = next_tenths() / 10.0;
    for (size_t i = 0; i < (size_t)n * n; i++) k[i] = next_tenths();
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++) s += (k[(size_t)i * n + j] / 10.0) * xd[j];
        b[i] = (float)s;
        x[i] = (float)xd[i];
    }
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = (float)(k[i] / 10.0);
    free(xd);
    free(k);
}

// The launches' arithmetic on the host, step by step (the device contracts a - m*b into one fused
// multiply-add and divides with IEEE rounding, so the results should be bit-equal).
static void reference(int n, int launches, float *m, float *a, float *b)
{
    for (int t = 0, done = 0; t < n - 1 && done < launches; t++) {
        for (int row = t + 1; row < n; row++) m[(size_t)n * row + t] = a[(size_t)n * row + t] / a[(size_t)n * t + t];
        if (++done == launches) break;
        for (int row = t + 1; row < n; row++) {
            float mult = m[(size_t)n * row + t];
            for (int col = t; col < n; col++)
                a[(size_t)n * row + col] = fmaf(-mult, a[(size_t)n * t + col], a[(size_t)n * row + col]);
            b[row] = fmaf(-mult, b[t], b[row]);
        }
        ++done;
    }
}

static size_t count_unequal(const float *x, const float *y, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += memcmp(&x[i], &y[i], sizeof(float)) != 0;
    return bad;
}

int main(int argc, char **argv)
{
    int n = 1024, launches = -1;
    uint64_t seed = DEFAULT_SEED;
    bool check = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--launches") && i + 1 < argc) launches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--check")) check = true;
        else { fprintf(stderr, "usage: gaussian [-s SIZE] [--seed S] [--launches N] [--check]\n"); return 2; }
    }
    if (n < 2) { fprintf(stderr, "gaussian: -s must be at least 2\n"); return 2; }
    if (launches < 0 || launches > 2 * (n - 1)) launches = 2 * (n - 1);
    size_t nn = (size_t)n * n;
    float *a = (float *)malloc(nn * sizeof(float)), *b = (float *)malloc(n * sizeof(float));
    float *x = (float *)malloc(n * sizeof(float)), *m = (float *)calloc(nn, sizeof(float));
    generate(n, seed, a, b, x);

    float *dm, *da, *db;
    CK(cudaMalloc(&dm, nn * sizeof(float)));
    CK(cudaMalloc(&da, nn * sizeof(float)));
    CK(cudaMalloc(&db, n * sizeof(float)));
    CK(cudaMemcpy(dm, m, nn * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(da, a, nn * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, n * sizeof(float), cudaMemcpyHostToDevice));
    dim3 grid1((n + FAN1_THREADS - 1) / FAN1_THREADS), block1(FAN1_THREADS);
    dim3 grid2((n + FAN2_SIDE - 1) / FAN2_SIDE, (n + FAN2_SIDE - 1) / FAN2_SIDE), block2(FAN2_SIDE, FAN2_SIDE);
    int done = 0;
    for (int t = 0; t < n - 1 && done < launches; t++) {
        Fan1<<<grid1, block1>>>(dm, da, n, t);
        CK(cudaDeviceSynchronize());
        if (++done == launches) break;
        Fan2<<<grid2, block2>>>(dm, da, db, n, n - t, t);
        CK(cudaDeviceSynchronize());
        CK(cudaGetLastError());
        ++done;
    }
    float *om = (float *)malloc(nn * sizeof(float)), *oa = (float *)malloc(nn * sizeof(float));
    float *ob = (float *)malloc(n * sizeof(float));
    CK(cudaMemcpy(om, dm, nn * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(oa, da, nn * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ob, db, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(dm));
    CK(cudaFree(da));
    CK(cudaFree(db));

    // Back substitution on the host (the upper triangle is complete only after a full run).
    double *sol = (double *)malloc(n * sizeof(double));
    for (int i = n - 1; i >= 0; i--) {
        double s = ob[i];
        for (int j = i + 1; j < n; j++) s -= (double)oa[(size_t)n * i + j] * sol[j];
        sol[i] = s / oa[(size_t)n * i + i];
    }
    double sum = 0;
    for (size_t i = 0; i < nn; i++) sum += (double)om[i] + oa[i];
    for (int i = 0; i < n; i++) sum += ob[i];
    printf("gaussian: size %d, %d launches, checksum %.6e\n", n, done, sum);
    int rc = 0;
    if (check) {
        reference(n, done, m, a, b);
        size_t bad = count_unequal(om, m, nn) + count_unequal(oa, a, nn) + count_unequal(ob, b, n);
        printf("check: %s (%zu values differ from the host's steps)\n", bad ? "FAIL" : "PASS", bad);
        if (done == 2 * (n - 1)) {
            double err = 0;
            for (int i = 0; i < n; i++) err = fmax(err, fabs(sol[i] - x[i]));
            printf("check: solution max |x - x_generated| = %.3e (no pivoting: information only)\n", err);
        }
        rc = bad ? 1 : 0;
    }
    free(a); free(b); free(x); free(m); free(om); free(oa); free(ob); free(sol);
    return rc;
}
