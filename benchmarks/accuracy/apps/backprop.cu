// backprop: teg's own program reproducing Rodinia 3.1 backprop (one training step of a two-layer
// perceptron; the input layer's forward pass and weight update on the GPU) as measured on the Quadro
// GV100 (hyfiss_gv100_apps.csv, app "backprop", run as `./backprop 65536`). Written from reading
// src/cuda/rodinia/3.1/cuda/backprop/{backprop_cuda.cu,backprop_cuda_kernel.cu,backprop.c,backprop.h,
// facetrain.c,imagenet.c} (accel-sim/gpu-app-collection @ 52c11fbc).
//
// Same as the measured run: 65,536 inputs, 16 hidden units, 1 output; weights (65,537 x 17, row-major,
// row = input unit, column = hidden unit) and inputs drawn with the C library's rand() after srand(7)
// in the published order; two launches, grid 1 x 4096 of 16 x 16 threads (block = 16 input units):
// bpnn_layerforward_CUDA (column tx == 0 stages the block's inputs in shared memory, every thread
// its weight, products reduced over the 16 rows by a halving tree whose step is computed with
// __log2f / __powf as published; the products overwrite the weights and one partial sum per (block,
// hidden unit) is stored) and, after the host has finished the forward pass and the error terms,
// bpnn_adjust_weights_cuda (momentum update of every weight and its previous change, in double
// precision as the published 0.3 constants make it, plus the bias row by block 0's first row).
// Host flow as published: the weights are copied in again before the second launch.
// Differs: no files; `--check` compares the partial sums and the updated weights with host
// computations (relative tolerance 1e-5).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define WIDTH 16
#define HEIGHT 16
#define ETA 0.3
#define MOMENTUM 0.3

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "backprop: %s failed: %s\n", #call, cudaGetErrorString(e_));           \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// Weighted inputs of one block of 16 input units, summed per hidden unit.
__global__ void bpnn_layerforward_CUDA(float *input_cuda, float *output_hidden_cuda, float *input_hidden_cuda,
                                       float *hidden_partial_sum, int in, int hid)
{
    __shared__ float node[HEIGHT];
    __shared__ float prod[HEIGHT][WIDTH];
    int by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    int w_at = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);   // weight (input, hidden)
    int in_at = HEIGHT * by + ty + 1;                                            // input unit
    if (tx == 0) node[ty] = input_cuda[in_at];
    __syncthreads();
    prod[ty][tx] = input_hidden_cuda[w_at];
    __syncthreads();
    prod[ty][tx] = prod[ty][tx] * node[ty];
    __syncthreads();
    for (int level = 1; level <= __log2f(HEIGHT); level++) {   // rows ty and ty + stride/2 combine
        int stride = __powf(2, level);
        if (ty % stride == 0) prod[ty][tx] = prod[ty][tx] + prod[ty + stride / 2][tx];
        __syncthreads();
    }
    input_hidden_cuda[w_at] = prod[ty][tx];
    __syncthreads();
    if (tx == 0) hidden_partial_sum[by * hid + ty] = prod[tx][ty];
}

// w += eta delta_hidden ly + momentum oldw; oldw = that change (the bias row by block 0's first row).
__global__ void bpnn_adjust_weights_cuda(float *delta, int hid, float *ly, int in, float *w, float *oldw)
{
    int by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    int w_at = (hid + 1) * HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);
    int y_at = HEIGHT * by + ty + 1;
    int x_at = tx + 1;
    w[w_at] += ((ETA * delta[x_at] * ly[y_at]) + (MOMENTUM * oldw[w_at]));
    oldw[w_at] = ((ETA * delta[x_at] * ly[y_at]) + (MOMENTUM * oldw[w_at]));
    __syncthreads();
    if (ty == 0 && by == 0) {
        w[x_at] += ((ETA * delta[x_at]) + (MOMENTUM * oldw[x_at]));
        oldw[x_at] = ((ETA * delta[x_at]) + (MOMENTUM * oldw[x_at]));
    }
}

// ---- host: the network, the host's part of the step ----

static float uniform01() { return (float)rand() / RAND_MAX; }
static float squash(float x) { return 1.0 / (1.0 + exp(-x)); }

int main(int argc, char **argv)
{
    bool check = false;
    int in = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) check = true;
        else if (in < 0 && atoi(argv[i]) > 0) in = atoi(argv[i]);
        else in = -2;
    }
    if (in <= 0 || in % 16) {
        fprintf(stderr, "usage: backprop <input units, a multiple of 16> [--check]\n");
        return 2;
    }
    const int hid = 16, out = 1;
    size_t nw = (size_t)(in + 1) * (hid + 1);
    // bpnn_create then load, drawing in the published order
    srand(7);
    float *w_in = (float *)malloc(nw * sizeof(float));           // (in+1) x (hid+1)
    float *w_hid = (float *)malloc((hid + 1) * (out + 1) * sizeof(float));
    for (size_t i = 0; i < nw; i++) w_in[i] = uniform01();
    for (int i = 0; i < (hid + 1) * (out + 1); i++) w_hid[i] = uniform01();
    float *prev_in = (float *)calloc(nw, sizeof(float));
    float *prev_hid = (float *)calloc((hid + 1) * (out + 1), sizeof(float));
    float target[2] = {0.1f, 0.1f};
    float *units_in = (float *)calloc(in + 1, sizeof(float));
    for (int k = 1; k <= in; k++) units_in[k] = uniform01();
    float units_hid[17], units_out[2], delta_out[2], delta_hid[17];

    int blocks = in / 16;
    dim3 grid(1, blocks), threads(16, 16);
    float *partial = (float *)malloc(blocks * WIDTH * sizeof(float));
    float *d_input, *d_out_hidden, *d_w, *d_partial, *d_delta, *d_prev;
    CK(cudaMalloc(&d_input, (in + 1) * sizeof(float)));
    CK(cudaMalloc(&d_out_hidden, (hid + 1) * sizeof(float)));
    CK(cudaMalloc(&d_w, nw * sizeof(float)));
    CK(cudaMalloc(&d_partial, blocks * WIDTH * sizeof(float)));
    CK(cudaMemcpy(d_input, units_in, (in + 1) * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_w, w_in, nw * sizeof(float), cudaMemcpyHostToDevice));
    bpnn_layerforward_CUDA<<<grid, threads>>>(d_input, d_out_hidden, d_w, d_partial, in, hid);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    CK(cudaMemcpy(partial, d_partial, blocks * WIDTH * sizeof(float), cudaMemcpyDeviceToHost));
    for (int j = 1; j <= hid; j++) {
        float sum = 0;
        for (int b = 0; b < blocks; b++) sum += partial[b * hid + j - 1];
        sum += w_in[j];
        units_hid[j] = (float)(1.0 / (1.0 + exp(-sum)));
    }
    // hidden -> output forward, error terms, hidden -> output update (host, as published)
    units_hid[0] = 1.0f;
    for (int j = 1; j <= out; j++) {
        float s = 0;
        for (int k = 0; k <= hid; k++) s += w_hid[k * (out + 1) + j] * units_hid[k];
        units_out[j] = squash(s);
    }
    for (int j = 1; j <= out; j++) {
        float o = units_out[j];
        delta_out[j] = o * (1.0 - o) * (target[j] - o);
    }
    delta_hid[0] = 0;
    for (int j = 1; j <= hid; j++) {
        float h = units_hid[j], s = 0;
        for (int k = 1; k <= out; k++) s += delta_out[k] * w_hid[j * (out + 1) + k];
        delta_hid[j] = h * (1.0 - h) * s;
    }
    for (int j = 1; j <= out; j++)
        for (int k = 0; k <= hid; k++) {
            float dw = ETA * delta_out[j] * units_hid[k] + MOMENTUM * prev_hid[k * (out + 1) + j];
            w_hid[k * (out + 1) + j] += dw;
            prev_hid[k * (out + 1) + j] = dw;
        }

    CK(cudaMalloc(&d_delta, (hid + 1) * sizeof(float)));
    CK(cudaMalloc(&d_prev, nw * sizeof(float)));
    CK(cudaMemcpy(d_delta, delta_hid, (hid + 1) * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_prev, prev_in, nw * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_w, w_in, nw * sizeof(float), cudaMemcpyHostToDevice));
    bpnn_adjust_weights_cuda<<<grid, threads>>>(d_delta, hid, d_input, in, d_w, d_prev);
    CK(cudaGetLastError());
    float *w_new = (float *)malloc(nw * sizeof(float)), *prev_new = (float *)malloc(nw * sizeof(float));
    CK(cudaMemcpy(units_in, d_input, (in + 1) * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(w_new, d_w, nw * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(prev_new, d_prev, nw * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(d_input));
    CK(cudaFree(d_out_hidden));
    CK(cudaFree(d_w));
    CK(cudaFree(d_partial));
    CK(cudaFree(d_prev));
    CK(cudaFree(d_delta));

    double sum = 0;
    for (size_t i = 0; i < nw; i++) sum += w_new[i];
    for (int b = 0; b < blocks * WIDTH; b++) sum += partial[b];
    printf("backprop: %d inputs, 2 launches, checksum %.9e\n", in, sum);
    int rc = 0;
    if (check) {
        size_t bad = 0;
        for (int b = 0; b < blocks; b++)           // partial sums of the forward pass
            for (int j = 1; j <= hid; j++) {
                double s = 0;
                for (int r = 0; r < HEIGHT; r++) {
                    int k = b * HEIGHT + r + 1;
                    s += (double)w_in[(size_t)k * (hid + 1) + j] * units_in[k];
                }
                if (fabs(partial[b * hid + j - 1] - s) > 1e-5 * fmax(1.0, fabs(s))) bad++;
            }
        for (int k = 0; k <= in; k++)              // the update of every weight but column 0
            for (int j = 1; j <= hid; j++) {
                double ly = k == 0 ? 1.0 : units_in[k];
                double dw = ETA * delta_hid[j] * ly + MOMENTUM * prev_in[(size_t)k * (hid + 1) + j];
                size_t at = (size_t)k * (hid + 1) + j;
                if (fabs(w_new[at] - (w_in[at] + dw)) > 1e-5 * fmax(1.0, fabs(w_in[at] + dw))) bad++;
                if (fabs(prev_new[at] - dw) > 1e-5 * fmax(1e-3, fabs(dw))) bad++;
            }
        printf("check: %s (%zu values differ)\n", bad ? "FAIL" : "PASS", bad);
        rc = bad ? 1 : 0;
    }
    free(w_in); free(w_hid); free(prev_in); free(prev_hid); free(units_in); free(partial); free(w_new); free(prev_new);
    return rc;
}
