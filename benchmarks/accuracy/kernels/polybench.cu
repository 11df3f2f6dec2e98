// PolyBench/GPU kernels as run on the Quadro GV100 rows (teg accuracy suite; our own code written
// from the algorithms: 3mm, bicg, mvt, gramschmidt, 3DConvolution; float data, 32x8 thread blocks
// for the 2-D kernels, 256-thread blocks for the 1-D ones, as the NCU rows' block limits show).

// 3mm: one matrix product C[i][j] = sum_k A[i][k] * B[k][j] (launched 3 times: E=AB, F=CD, G=EF).
// The accumulation goes through memory (C may alias A/B), as in PolyBench/GPU.
extern "C" __global__ void mm3_kernel(const float *A, const float *B, float *C, int ni, int nj, int nk) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < ni && j < nj) {
        C[i * nj + j] = 0.f;
        for (int k = 0; k < nk; k++) C[i * nj + j] += A[i * nk + k] * B[k * nj + j];
    }
}

// bicg, launch 0: s[j] = sum_i r[i] * A[i][j]  (threads over j: coalesced rows of A)
extern "C" __global__ void bicg_s(const float *A, const float *r, float *s, int nx, int ny) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < ny) {
        s[j] = 0.f;
        for (int i = 0; i < nx; i++) s[j] += r[i] * A[i * ny + j];
    }
}

// bicg, launch 1: q[i] = sum_j A[i][j] * p[j]  (threads over i: one row per thread). `lda` is
// the row pitch (PolyBench: lda = ny); the accuracy suite runs a short loop (ny) over rows of the
// full pitch, so that the lanes' addresses are as far apart as in the measured run.
extern "C" __global__ void bicg_q(const float *A, const float *p, float *q, int nx, int ny, int lda) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nx) {
        q[i] = 0.f;
        for (int j = 0; j < ny; j++) q[i] += A[i * lda + j] * p[j];
    }
}

// mvt (a is n x m with row pitch lda; PolyBench: m = lda = n), launch 0: x1[i] += sum_j a[i][j] * y1[j]
extern "C" __global__ void mvt_x1(const float *a, float *x1, const float *y1, int n, int m, int lda) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = 0; j < m; j++) x1[i] += a[i * lda + j] * y1[j];
}

// mvt (a is m x n), launch 1: x2[i] += sum_j a[j][i] * y2[j]
extern "C" __global__ void mvt_x2(const float *a, float *x2, const float *y2, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = 0; j < m; j++) x2[i] += a[j * n + i] * y2[j];
}

// gramschmidt, column k: norm (one thread), normalise column k, update columns j > k.
extern "C" __global__ void gs_norm(const float *a, float *r, int m, int n, int k) {
    if (blockIdx.x * blockDim.x + threadIdx.x == 0) {
        float nrm = 0.f;
        for (int i = 0; i < m; i++) nrm += a[i * n + k] * a[i * n + k];
        r[k * n + k] = sqrtf(nrm);
    }
}

extern "C" __global__ void gs_scale(const float *a, const float *r, float *q, int m, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) q[i * n + k] = a[i * n + k] / r[k * n + k];
}

extern "C" __global__ void gs_update(float *a, float *r, const float *q, int m, int n, int k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > k && j < n) {
        r[k * n + j] = 0.f;
        for (int i = 0; i < m; i++) r[k * n + j] += q[i * n + k] * a[i * n + j];
        for (int i = 0; i < m; i++) a[i * n + j] -= q[i * n + k] * r[k * n + j];
    }
}

// 3DConvolution: one launch per plane i (1 <= i < ni-1); 11 distinct taps of A.
extern "C" __global__ void conv3d(const float *A, float *B, int ni, int nj, int nk, int i) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    const float c11 = 2.f, c12 = -3.f, c13 = 4.f, c21 = 5.f, c22 = 6.f, c23 = 7.f,
                c31 = -8.f, c32 = -9.f, c33 = 10.f;
    if (i > 0 && i < ni - 1 && j > 0 && j < nj - 1 && k > 0 && k < nk - 1) {
        int P = nj * nk;
#define AT(di, dj, dk) A[(i + (di)) * P + (j + (dj)) * nk + (k + (dk))]
        B[i * P + j * nk + k] =
            (c11 + c21 + c31) * AT(-1, -1, -1) + (c13 + c23 + c33) * AT(1, -1, -1)
          + c12 * AT(0, -1, 0) + c22 * AT(0, 0, 0) + c32 * AT(0, 1, 0)
          + c11 * AT(-1, -1, 1) + c13 * AT(1, -1, 1) + c21 * AT(-1, 0, 1)
          + c23 * AT(1, 0, 1) + c31 * AT(-1, 1, 1) + c33 * AT(1, 1, 1);
#undef AT
    }
}
