// gru: teg's own program reproducing Tango's GRU as measured on the Quadro GV100
// (hyfiss_gv100_apps.csv, app "GRU"). Written from reading Tango/GPU/GRU/gru_kernel.cu and
// gru_host.cu (hnts03/gpu_bench_cuda_11.3 @ ce96174f).
//
// Same as the measured run: one GRU cell of 100 units and a 1-element input, run twice
// (x = 0.98, then x = 0.88 on the state the first step left); GPU_forward_pass_gru on one block of
// 10x10 threads, unit index = threadIdx.x * blockDim.x + threadIdx.y; each thread walks the 100
// recurrent weights of its unit for the z and r gates (h(t-1) and both weight columns read from
// global memory every iteration), stores r into a 100-float shared array, synchronises, walks the
// 100 weights of the candidate (r from shared memory, h(t-1) and Uh from global memory), and
// writes its new state. hard_sigmoid compares and scales in double (the published literals are
// doubles), tanh is the single-precision one, as there.
// Differs: the weight files (data/*.txt) are not public and the published host leaves the weight
// buffers uninitialised when they are missing; here every weight and bias is a small deterministic
// value (|w| <= 0.05, from a fixed-seed LCG), so every gate input stays inside hard_sigmoid's
// linear segment and tanh's small-argument path, the path zero weights would take. The state
// buffer, never initialised in the published host, starts at zero. `--check` compares both steps
// with a CPU reference (relative 1e-5) that reads only the old state.
// A data race kept from the kernel as read: no barrier separates the candidate loop, which reads
// every unit's h[i], from each thread's store of its own h[u], so a warp that finishes early
// overwrites states a slower warp of the block has yet to read. On the GPU the block's four warps
// run interleaved and read the old states (the native H200 run prints checksum 1.663394e-02, as
// the reference); teg's emulator runs a block's warps one after the other between barriers, so
// warps 1-3 read the states warp 0 already wrote: checksum 8.383683e-03 and `--check` fails (160 of
// 200 values). The instructions and memory requests do not depend on it (every gate input stays in
// hard_sigmoid's linear segment either way); a __syncthreads() before the store gives 1.663395e-02
// under the emulator, but adds a barrier the measured kernel does not have.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define UNITS 100

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "gru: %s failed: %s\n", #call, cudaGetErrorString(e_));                \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// Piecewise-linear sigmoid: 0 below -2.5, 1 above 2.5, 0.2 x + 0.5 between (double arithmetic).
__device__ __host__ inline float hard_sigmoid(float v)
{
    if (v < -2.5) return 0;
    if (v > 2.5) return 1;
    return 0.2 * v + 0.5;
}

// One GRU step for unit u (one thread per unit):
//   z = hsig(x Wz + h.Uz + bz), r = hsig(x Wr + h.Ur + br), c = tanh(x Wh + (r*h).Uh + bh),
//   h'[u] = (1 - z) h[u] + z c.   Recurrent weights are [i][u] (column u walked with stride 100).
__global__ void GPU_forward_pass_gru(float *x, float *h, float *wh, float *wr, float *wz, float *bh, float *br,
                                     float *bz, float *uh, float *ur, float *uz)
{
    __shared__ float r_gate[UNITS];
    int u = threadIdx.x * blockDim.x + threadIdx.y;
    float acc_z = 0.0, acc_r = 0.0, acc_h = 0.0;
    for (int i = 0; i < UNITS; i++) {
        acc_z += h[i] * uz[u + UNITS * i];
        acc_r += h[i] * ur[u + UNITS * i];
    }
    float z = hard_sigmoid(x[0] * wz[u] + acc_z + bz[u]);
    r_gate[u] = hard_sigmoid(x[0] * wr[u] + acc_r + br[u]);
    __syncthreads();
    for (int i = 0; i < UNITS; i++) acc_h += r_gate[i] * h[i] * uh[u + UNITS * i];
    float c = tanh(x[0] * wh[u] + acc_h + bh[u]);
    h[u] = (1 - z) * h[u] + z * c;
}

// The same step on the CPU, computed for all units from the old state before any is replaced
// (what the GPU's interleaved warps read in practice; the kernel itself does not guarantee it: the
// race above).
static void reference_step(float xv, float *h, const float *wh, const float *wr, const float *wz, const float *bh,
                           const float *br, const float *bz, const float *uh, const float *ur, const float *uz)
{
    float z[UNITS], r[UNITS], out[UNITS];
    for (int u = 0; u < UNITS; u++) {
        float az = 0, ar = 0;
        for (int i = 0; i < UNITS; i++) {
            az += h[i] * uz[u + UNITS * i];
            ar += h[i] * ur[u + UNITS * i];
        }
        z[u] = hard_sigmoid(xv * wz[u] + az + bz[u]);
        r[u] = hard_sigmoid(xv * wr[u] + ar + br[u]);
    }
    for (int u = 0; u < UNITS; u++) {
        float ah = 0;
        for (int i = 0; i < UNITS; i++) ah += r[i] * h[i] * uh[u + UNITS * i];
        float c = tanhf(xv * wh[u] + ah + bh[u]);
        out[u] = (1 - z[u]) * h[u] + z[u] * c;
    }
    memcpy(h, out, sizeof out);
}

static unsigned lcg_state = 12345u;
static float small_weight()   // uniform in [-0.05, 0.05)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return ((lcg_state >> 8) / 16777216.0f - 0.5f) * 0.1f;
}

int main(int argc, char **argv)
{
    bool check = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--check")) check = true;
        else { fprintf(stderr, "usage: gru [--check]\n"); return 2; }
    }
    // Buffers in the published order: Wh, bh, Uh, Wr, br, Ur, Wz, bz, Uz.
    const int nv[9] = {UNITS, UNITS, UNITS * UNITS, UNITS, UNITS, UNITS * UNITS, UNITS, UNITS, UNITS * UNITS};
    float *host[9], *dev[9];
    for (int b = 0; b < 9; b++) {
        host[b] = (float *)malloc(nv[b] * sizeof(float));
        for (int k = 0; k < nv[b]; k++) host[b][k] = small_weight();
        CK(cudaMalloc(&dev[b], nv[b] * sizeof(float)));
        CK(cudaMemcpy(dev[b], host[b], nv[b] * sizeof(float), cudaMemcpyHostToDevice));
    }
    float *d_x, *d_h;
    CK(cudaMalloc(&d_x, sizeof(float)));
    CK(cudaMalloc(&d_h, UNITS * sizeof(float)));
    CK(cudaMemset(d_h, 0, UNITS * sizeof(float)));

    const float xs[2] = {0.98f, 0.88f};
    float states[2][UNITS];
    dim3 grid(1, 1, 1), block(10, 10);
    for (int step = 0; step < 2; step++) {
        CK(cudaMemcpy(d_x, &xs[step], sizeof(float), cudaMemcpyHostToDevice));
        GPU_forward_pass_gru<<<grid, block>>>(d_x, d_h, dev[0], dev[3], dev[6], dev[1], dev[4], dev[7], dev[2],
                                              dev[5], dev[8]);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(states[step], d_h, UNITS * sizeof(float), cudaMemcpyDeviceToHost));
    }
    double sum = 0;
    for (int u = 0; u < UNITS; u++) sum += states[1][u];
    printf("gru: 2 launches, checksum %.6e\n", sum);
    int rc = 0;
    if (check) {
        float h[UNITS] = {0};
        int bad = 0;
        for (int step = 0; step < 2; step++) {
            reference_step(xs[step], h, host[0], host[3], host[6], host[1], host[4], host[7], host[2], host[5],
                           host[8]);
            for (int u = 0; u < UNITS; u++)
                bad += !(fabsf(states[step][u] - h[u]) <= 1e-5f * fmaxf(1.0f, fabsf(h[u])));
        }
        printf("check: %s (%d of %d values differ)\n", bad ? "FAIL" : "PASS", bad, 2 * UNITS);
        rc = bad ? 1 : 0;
    }
    for (int b = 0; b < 9; b++) {
        CK(cudaFree(dev[b]));
        free(host[b]);
    }
    CK(cudaFree(d_x));
    CK(cudaFree(d_h));
    return rc;
}
