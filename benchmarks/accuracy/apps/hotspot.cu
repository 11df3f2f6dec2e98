// hotspot: teg's own program reproducing Rodinia 3.1 hotspot (transient chip temperature on a grid,
// several time steps per launch in a shared-memory "pyramid") as measured on the Quadro GV100
// (hyfiss_gv100_apps.csv, app "hotspot", run as `./hotspot 512 2 2 temp_1024 power_1024 output.out`).
// Written from reading src/cuda/rodinia/3.1/cuda/hotspot/hotspot.cu (accel-sim/gpu-app-collection @
// 52c11fbc).
//
// Same as the measured run: a 512 x 512 grid, pyramid height 2, 2 simulated steps: one launch of
// calculate_temp, grid 43 x 43 of 16 x 16 threads; each block loads a 16 x 16 tile of temperature
// and power (the threads whose cell is inside the grid), advances it `iteration` steps in shared
// memory (a 5-point stencil whose neighbours are clamped to the valid part of the tile; the update
// mixes float and double arithmetic as published: the `2.0 *` terms promote it to double), the tile
// shrinking by one cell per side per step, and writes the inner cells it computed. The chip constants
// (Cap, Rx, Ry, Rz, step) are computed on the host as published.
// Inputs: temp_1024 / power_1024 are not public and their values reach no branch: the temperature
// and power grids are generated in host code (fixed seed), near 323 K and in [0, 1e-3) W.
// Differs: takes `<grid size> <pyramid height> <steps>` and generates the inputs instead of reading
// two files, and writes no output file (prints a checksum); `--check` compares the result with a host
// version of the same steps on the whole grid (relative tolerance 1e-6).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define BLOCK_SIZE 16
#define MAX_PD (3.0e6)            // maximum power density (W/m^2)
#define PRECISION 0.001           // required precision in degrees
#define SPEC_HEAT_SI 1.75e6
#define K_SI 100
#define FACTOR_CHIP 0.5           // capacitance fitting factor

static const float t_chip = 0.0005f, chip_height = 0.016f, chip_width = 0.016f;

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "hotspot: %s failed: %s\n", #call, cudaGetErrorString(e_));            \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

#define INSIDE(x, lo, hi) ((x) >= (lo) && (x) <= (hi))

// One cell's explicit update (published expression and precision: double from the 2.0 terms on).
__host__ __device__ inline float cell_update(float t, float pw, float n, float s, float e, float w,
                                             float step_div_cap, float rx_1, float ry_1, float rz_1)
{
    const float amb_temp = 80.0f;
    return t + step_div_cap * (pw + (s + n - 2.0 * t) * ry_1 + (e + w - 2.0 * t) * rx_1 + (amb_temp - t) * rz_1);
}

__global__ void calculate_temp(int iteration, float *power, float *temp_src, float *temp_dst, int grid_cols,
                               int grid_rows, int border_cols, int border_rows, float Cap, float Rx, float Ry,
                               float Rz, float step, float time_elapsed)
{
    __shared__ float tile_t[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float tile_p[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float next_t[BLOCK_SIZE][BLOCK_SIZE];
    float step_div_cap = step / Cap;
    float rx_1 = 1 / Rx, ry_1 = 1 / Ry, rz_1 = 1 / Rz;
    int tx = threadIdx.x, ty = threadIdx.y;
    int inner = BLOCK_SIZE - iteration * 2;          // cells each block finally owns per side
    int y0 = inner * blockIdx.y - border_rows;       // tile origin in the grid (may be negative)
    int x0 = inner * blockIdx.x - border_cols;
    int y = y0 + ty, x = x0 + tx;
    int index = grid_cols * y + x;
    if (INSIDE(y, 0, grid_rows - 1) && INSIDE(x, 0, grid_cols - 1)) {
        tile_t[ty][tx] = temp_src[index];
        tile_p[ty][tx] = power[index];
    }
    __syncthreads();
    // the part of the tile inside the grid
    int ymin = y0 < 0 ? -y0 : 0;
    int ymax = y0 + BLOCK_SIZE - 1 > grid_rows - 1 ? BLOCK_SIZE - 1 - (y0 + BLOCK_SIZE - grid_rows) : BLOCK_SIZE - 1;
    int xmin = x0 < 0 ? -x0 : 0;
    int xmax = x0 + BLOCK_SIZE - 1 > grid_cols - 1 ? BLOCK_SIZE - 1 - (x0 + BLOCK_SIZE - grid_cols) : BLOCK_SIZE - 1;
    int yn = ty - 1 < ymin ? ymin : ty - 1, ys = ty + 1 > ymax ? ymax : ty + 1;
    int xw = tx - 1 < xmin ? xmin : tx - 1, xe = tx + 1 > xmax ? xmax : tx + 1;
    bool computed;
    for (int i = 0; i < iteration; i++) {
        computed = false;
        if (INSIDE(tx, i + 1, BLOCK_SIZE - i - 2) && INSIDE(ty, i + 1, BLOCK_SIZE - i - 2) &&
            INSIDE(tx, xmin, xmax) && INSIDE(ty, ymin, ymax)) {
            computed = true;
            next_t[ty][tx] = cell_update(tile_t[ty][tx], tile_p[ty][tx], tile_t[yn][tx], tile_t[ys][tx],
                                         tile_t[ty][xe], tile_t[ty][xw], step_div_cap, rx_1, ry_1, rz_1);
        }
        __syncthreads();
        if (i == iteration - 1) break;
        if (computed) tile_t[ty][tx] = next_t[ty][tx];
        __syncthreads();
    }
    if (computed) temp_dst[index] = next_t[ty][tx];
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

// One simulated step on the whole grid (edges clamp to the cell itself), as the kernel computes it.
static void reference_step(const float *t, const float *p, float *out, int rows, int cols, float sdc, float rx_1,
                           float ry_1, float rz_1)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            int n = r > 0 ? r - 1 : r, s = r < rows - 1 ? r + 1 : r;
            int w = c > 0 ? c - 1 : c, e = c < cols - 1 ? c + 1 : c;
            out[r * cols + c] = cell_update(t[r * cols + c], p[r * cols + c], t[n * cols + c], t[s * cols + c],
                                            t[r * cols + e], t[r * cols + w], sdc, rx_1, ry_1, rz_1);
        }
}

int main(int argc, char **argv)
{
    bool check = false;
    int pos[3], npos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) check = true;
        else if (npos < 3 && atoi(argv[i]) > 0) pos[npos++] = atoi(argv[i]);
        else npos = 99;
    }
    if (npos != 3) {
        fprintf(stderr, "usage: hotspot <grid rows/cols> <pyramid height> <steps> [--check]\n");
        return 2;
    }
    int rows = pos[0], cols = pos[0], pyramid = pos[1], total = pos[2];
    int border = pyramid;                            // EXPAND_RATE / 2 cells per step
    int inner = BLOCK_SIZE - 2 * pyramid;
    if (inner <= 0) { fprintf(stderr, "hotspot: pyramid height must be below %d\n", BLOCK_SIZE / 2); return 2; }
    int block_cols = (cols + inner - 1) / inner, block_rows = (rows + inner - 1) / inner;
    size_t n = (size_t)rows * cols;
    float *temp = (float *)malloc(n * sizeof(float)), *pw = (float *)malloc(n * sizeof(float));
    float *out = (float *)calloc(n, sizeof(float));
    rng_state = 1024;
    for (size_t i = 0; i < n; i++) temp[i] = (float)(323.0 + 10.0 * next_uniform());
    for (size_t i = 0; i < n; i++) pw[i] = (float)(1e-3 * next_uniform());

    float *d_temp[2], *d_power;
    CK(cudaMalloc(&d_temp[0], n * sizeof(float)));
    CK(cudaMalloc(&d_temp[1], n * sizeof(float)));
    CK(cudaMemcpy(d_temp[0], temp, n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_power, n * sizeof(float)));
    CK(cudaMemcpy(d_power, pw, n * sizeof(float), cudaMemcpyHostToDevice));

    float grid_height = chip_height / rows, grid_width = chip_width / cols;
    float Cap = FACTOR_CHIP * SPEC_HEAT_SI * t_chip * grid_width * grid_height;
    float Rx = grid_width / (2.0 * K_SI * t_chip * grid_height);
    float Ry = grid_height / (2.0 * K_SI * t_chip * grid_width);
    float Rz = t_chip / (K_SI * grid_height * grid_width);
    float max_slope = MAX_PD / (FACTOR_CHIP * t_chip * SPEC_HEAT_SI);
    float step = PRECISION / max_slope;
    float time_elapsed = 0.001f;
    dim3 block(BLOCK_SIZE, BLOCK_SIZE), grid(block_cols, block_rows);
    int src = 1, dst = 0, launches = 0;
    for (float t = 0; t < total; t += pyramid) {     // a float counter, as published
        int tmp = src;
        src = dst;
        dst = tmp;
        int steps = pyramid < total - t ? pyramid : (int)(total - t);
        calculate_temp<<<grid, block>>>(steps, d_power, d_temp[src], d_temp[dst], cols, rows, border, border, Cap, Rx,
                                        Ry, Rz, step, time_elapsed);
        launches++;
    }
    CK(cudaGetLastError());
    CK(cudaMemcpy(out, d_temp[dst], n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(d_temp[0]));
    CK(cudaFree(d_temp[1]));
    CK(cudaFree(d_power));

    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += out[i];
    printf("hotspot: %dx%d, %d steps in %d launches, checksum %.9e\n", rows, cols, total, launches, sum);
    int rc = 0;
    if (check) {
        float *a = (float *)malloc(n * sizeof(float)), *b = (float *)malloc(n * sizeof(float));
        memcpy(a, temp, n * sizeof(float));
        float sdc = step / Cap, rx_1 = 1 / Rx, ry_1 = 1 / Ry, rz_1 = 1 / Rz;
        for (int s = 0; s < total; s++) {
            reference_step(a, pw, b, rows, cols, sdc, rx_1, ry_1, rz_1);
            float *x = a;
            a = b;
            b = x;
        }
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += !(fabsf(out[i] - a[i]) <= 1e-6f * fabsf(a[i]));
        printf("check: %s (%zu of %zu cells differ by more than 1e-6 relative)\n", bad ? "FAIL" : "PASS", bad, n);
        rc = bad ? 1 : 0;
        free(a);
        free(b);
    }
    free(temp);
    free(pw);
    free(out);
    return rc;
}
