// lud: teg's own program reproducing Rodinia 3.1 lud (blocked LU decomposition without pivoting,
// in place) as measured on the Quadro GV100 (hyfiss_gv100_apps.csv, app "lud", run as
// `./lud_cuda -i 2048.dat`, built with -use_fast_math). Written from reading
// src/cuda/rodinia/3.1/cuda/lud/cuda/{lud.cu,lud_kernel.cu,Makefile} and lud/common/common.c
// (accel-sim/gpu-app-collection @ 52c11fbc).
//
// Same as the measured run: a 2048 x 2048 float matrix, blocks of 16; for offset = 0, 16, ..., 2016
// three launches: lud_diagonal (1 block of 16 threads: the 16 x 16 diagonal block is loaded row by
// row into shared memory, factored in place there, rows 1..15 written back), lud_perimeter (127 - k
// blocks of 32 threads: threads 0-15 load the upper half of the diagonal block and the block of rows
// to the right, threads 16-31 the lower half and the block of columns below; then the first half
// solves for the U row panel, the second for the L column panel with a division by the diagonal,
// both write back) and lud_internal ((127 - k)^2 blocks of 16 x 16: one 16 x 16 trailing block per
// block, both panels staged in shared memory, one fused update per element); then one last
// lud_diagonal. The matrix is copied in before and out after the launches; -use_fast_math as in
// Rodinia's Makefile (the divisions become reciprocal and multiply: no value-dependent path).
// lud_perimeter's triangular loops carry `#pragma unroll` (see there): nvcc 13 leaves them rolled, at
// 2.15 x the measured instruction count; unrolled they come to 0.69 x.
// Inputs: 2048.dat is not public (Rodinia's generator seeds with the time); the matrix is generated
// in host code from a fixed seed, strictly diagonally dominant so that LU without pivoting is stable.
// Differs: `-s N` generates the matrix instead of reading a file; `--launches N` stops after N kernel
// launches (the sheet keeps the first 100 of 382); `--check` compares the result with a host version
// of the same launches (double precision) and, after a full run, checks that L U reproduces A.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define BS 16
#define DEFAULT_SEED 2048

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "lud: %s failed: %s\n", #call, cudaGetErrorString(e_));                \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// Factor the diagonal block at (offset, offset) in shared memory; one thread per column.
__global__ void lud_diagonal(float *m, int matrix_dim, int offset)
{
    __shared__ float blk[BS][BS];
    int tx = threadIdx.x;
    float *src = m + offset * matrix_dim + offset;
    for (int r = 0; r < BS; r++) {
        blk[r][tx] = src[tx];
        src += matrix_dim;
    }
    __syncthreads();
    for (int i = 0; i < BS - 1; i++) {
        if (tx > i) {            // column i of L: row tx
            for (int j = 0; j < i; j++) blk[tx][i] -= blk[tx][j] * blk[j][i];
            blk[tx][i] /= blk[i][i];
        }
        __syncthreads();
        if (tx > i) {            // row i + 1 of U: column tx
            for (int j = 0; j < i + 1; j++) blk[i + 1][tx] -= blk[i + 1][j] * blk[j][tx];
        }
        __syncthreads();
    }
    float *dst = m + (offset + 1) * matrix_dim + offset;   // row 0 is unchanged
    for (int r = 1; r < BS; r++) {
        dst[tx] = blk[r][tx];
        dst += matrix_dim;
    }
}

// Panels next to the diagonal block: block b handles the U block to the right (columns
// offset + 16(b+1) ...) with threads 0-15 and the L block below (rows offset + 16(b+1) ...) with
// threads 16-31.
__global__ void lud_perimeter(float *m, int matrix_dim, int offset)
{
    __shared__ float dia[BS][BS];
    __shared__ float urow[BS][BS];
    __shared__ float lcol[BS][BS];
    int panel = offset + (blockIdx.x + 1) * BS;
    if (threadIdx.x < BS) {
        int c = threadIdx.x;
        for (int r = 0; r < BS / 2; r++) dia[r][c] = m[(offset + r) * matrix_dim + offset + c];
        for (int r = 0; r < BS; r++) urow[r][c] = m[(offset + r) * matrix_dim + panel + c];
    } else {
        int c = threadIdx.x - BS;
        for (int r = BS / 2; r < BS; r++) dia[r][c] = m[(offset + r) * matrix_dim + offset + c];
        for (int r = 0; r < BS; r++) lcol[r][c] = m[(panel + r) * matrix_dim + offset + c];
    }
    __syncthreads();
    // The triangular solves are unrolled: the measured CUDA 11.8 binary executes 1,149 warp
    // instructions per block, between nvcc 13's rolled loops (2,471: the running element goes through
    // shared memory on every step) and fully unrolled ones (795).
    if (threadIdx.x < BS) {      // U panel, column c: forward substitution with the unit lower part
        int c = threadIdx.x;
#pragma unroll
        for (int r = 1; r < BS; r++)
#pragma unroll
            for (int j = 0; j < r; j++) urow[r][c] -= dia[r][j] * urow[j][c];
    } else {                     // L panel, row c: solve against the upper part, divide by the diagonal
        int c = threadIdx.x - BS;
#pragma unroll
        for (int i = 0; i < BS; i++) {
#pragma unroll
            for (int j = 0; j < i; j++) lcol[c][i] -= lcol[c][j] * dia[j][i];
            lcol[c][i] /= dia[i][i];
        }
    }
    __syncthreads();
    if (threadIdx.x < BS) {
        int c = threadIdx.x;
        for (int r = 1; r < BS; r++) m[(offset + r) * matrix_dim + panel + c] = urow[r][c];
    } else {
        int c = threadIdx.x - BS;
        for (int r = 0; r < BS; r++) m[(panel + r) * matrix_dim + offset + c] = lcol[r][c];
    }
}

// Trailing update of one 16 x 16 block: m[row][col] -= L panel row . U panel column.
__global__ void lud_internal(float *m, int matrix_dim, int offset)
{
    __shared__ float urow[BS][BS];
    __shared__ float lcol[BS][BS];
    int row0 = offset + (blockIdx.y + 1) * BS;
    int col0 = offset + (blockIdx.x + 1) * BS;
    int tx = threadIdx.x, ty = threadIdx.y;
    urow[ty][tx] = m[(offset + ty) * matrix_dim + col0 + tx];
    lcol[ty][tx] = m[(row0 + ty) * matrix_dim + offset + tx];
    __syncthreads();
    float dot = 0;
    for (int i = 0; i < BS; i++) dot += lcol[ty][i] * urow[i][tx];
    m[(row0 + ty) * matrix_dim + col0 + tx] -= dot;
}

// ---- host ----

static uint64_t rng_state;
static double next_uniform()   // SplitMix64 -> [0, 1)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (z >> 11) * (1.0 / 9007199254740992.0);
}

// A strictly diagonally dominant matrix (off-diagonal entries in [0, 1), diagonal n + [0, 1)), so that
// LU without pivoting is stable.
static void generate(int n, uint64_t seed, float *a)
{
    rng_state = seed;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double u = next_uniform();
            a[(size_t)i * n + j] = (float)(i == j ? n + u : u);
        }
}

// The launches' arithmetic on the host in double precision, launch by launch.
static void reference(int n, int launches, double *x)
{
    int done = 0;
    for (int off = 0;; off += BS) {
        bool last = off >= n - BS;
        if (done++ == launches) return;
        for (int i = off; i < off + BS; i++)           // diagonal block, in place (Doolittle)
            for (int r = i + 1; r < off + BS; r++) {
                double l = x[(size_t)r * n + i] / x[(size_t)i * n + i];
                x[(size_t)r * n + i] = l;
                for (int c = i + 1; c < off + BS; c++) x[(size_t)r * n + c] -= l * x[(size_t)i * n + c];
            }
        if (last || done++ == launches) return;
        for (int c = off + BS; c < n; c++)              // U panel: unit lower solve
            for (int r = off + 1; r < off + BS; r++)
                for (int j = off; j < r; j++) x[(size_t)r * n + c] -= x[(size_t)r * n + j] * x[(size_t)j * n + c];
        for (int r = off + BS; r < n; r++)              // L panel: upper solve
            for (int i = off; i < off + BS; i++) {
                for (int j = off; j < i; j++) x[(size_t)r * n + i] -= x[(size_t)r * n + j] * x[(size_t)j * n + i];
                x[(size_t)r * n + i] /= x[(size_t)i * n + i];
            }
        if (done++ == launches) return;
        for (int r = off + BS; r < n; r++)              // trailing update
            for (int j = off; j < off + BS; j++) {
                double l = x[(size_t)r * n + j];
                for (int c = off + BS; c < n; c++) x[(size_t)r * n + c] -= l * x[(size_t)j * n + c];
            }
    }
}

static size_t count_outside(const float *got, const double *want, size_t count, double tol)
{
    size_t bad = 0;
    for (size_t i = 0; i < count; i++)
        if (!(fabs(got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])))) bad++;
    return bad;
}

// max |(L U)_ij - A_ij| / max |A_ij| for the packed factors lu (unit diagonal of L implied).
static double residual(int n, const float *lu, const float *a)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < (size_t)n * n; i++) scale = fmax(scale, fabs(a[i]));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            int kmax = i < j ? i : j;
            for (int k = 0; k <= kmax; k++)
                s += (k == i ? 1.0 : (double)lu[(size_t)i * n + k]) * lu[(size_t)k * n + j];
            worst = fmax(worst, fabs(s - a[(size_t)i * n + j]));
        }
    return worst / scale;
}

int main(int argc, char **argv)
{
    int n = 2048, launches = -1;
    uint64_t seed = DEFAULT_SEED;
    bool check = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--launches") && i + 1 < argc) launches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--check")) check = true;
        else { fprintf(stderr, "usage: lud [-s SIZE] [--seed S] [--launches N] [--check]\n"); return 2; }
    }
    if (n < BS || n % BS) { fprintf(stderr, "lud: -s must be a positive multiple of %d\n", BS); return 2; }
    int total = 3 * (n / BS - 1) + 1;
    if (launches < 0 || launches > total) launches = total;
    size_t nn = (size_t)n * n;
    float *a = (float *)malloc(nn * sizeof(float));
    generate(n, seed, a);

    float *dm;
    CK(cudaMalloc(&dm, nn * sizeof(float)));
    CK(cudaMemcpy(dm, a, nn * sizeof(float), cudaMemcpyHostToDevice));
    int done = 0, off = 0;
    for (; off < n - BS && done < launches; off += BS) {
        lud_diagonal<<<1, BS>>>(dm, n, off);
        if (++done == launches) break;
        lud_perimeter<<<(n - off) / BS - 1, 2 * BS>>>(dm, n, off);
        if (++done == launches) break;
        dim3 grid((n - off) / BS - 1, (n - off) / BS - 1), block(BS, BS);
        lud_internal<<<grid, block>>>(dm, n, off);
        ++done;
    }
    if (done < launches) {
        lud_diagonal<<<1, BS>>>(dm, n, off);
        ++done;
    }
    CK(cudaGetLastError());
    float *out = (float *)malloc(nn * sizeof(float));
    CK(cudaMemcpy(out, dm, nn * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(dm));

    double sum = 0;
    for (size_t i = 0; i < nn; i++) sum += out[i];
    printf("lud: size %d, %d launches, checksum %.6e\n", n, done, sum);
    int rc = 0;
    if (check) {
        double *x = (double *)malloc(nn * sizeof(double));
        for (size_t i = 0; i < nn; i++) x[i] = a[i];
        reference(n, done, x);
        size_t bad = count_outside(out, x, nn, 1e-4);
        printf("check: %zu of %zu values outside 1e-4 of the host's launches\n", bad, nn);
        if (done == total) {
            double r = residual(n, out, a);
            printf("check: max |LU - A| / max |A| = %.2e\n", r);
            bad += !(r < 1e-5);
        }
        printf("check: %s\n", bad ? "FAIL" : "PASS");
        rc = bad ? 1 : 0;
        free(x);
    }
    free(a);
    free(out);
    return rc;
}
