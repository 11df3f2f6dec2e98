// nn: teg's own program reproducing Rodinia 3.1 nn (nearest neighbours: the distance of every
// hurricane record to a target position on the GPU, the k smallest picked on the host) as measured on
// the Quadro GV100 (hyfiss_gv100_apps.csv, app "nn", run as `./nn filelist -r 5 -lat 30 -lng 90` with
// the four cane4_*.db files, 42,764 records). Written from reading
// src/cuda/rodinia/3.1/cuda/nn/{nn_cuda.cu,hurricane_gen.c,gen_dataset.sh} (accel-sim/gpu-app-collection
// @ 52c11fbc).
//
// Same as the measured run: 42,764 (latitude, longitude) float pairs in an array of structs, one
// launch of euclid, 256 threads per block, the grid computed as published (blocks = ceil(records /
// 256), split over y only beyond the x limit): 168 x 1; each thread reads its record's two floats and
// stores sqrt((lat - x)^2 + (lng - y)^2) (an IEEE square root); the host copies the distances back and
// selects the 5 nearest records.
// Inputs: the record files are not public and their values reach no branch (a zero distance, which
// would take the square root's slow path, has probability ~1e-7 per record); the records are generated
// in host code the way hurricane_gen.c makes them (latitude 7 + k % 63 plus a fraction, longitude
// k % 358 plus a fraction, one decimal as the files print them), from a fixed seed.
// Differs: `-n N` (default 42764) generates the records instead of reading a file list; the
// device limits used for the grid are the published code's values for this GPU class (256 threads,
// maxGridSize.x = 2^31 - 1) instead of a cudaGetDeviceProperties query; `--check` compares the
// distances and the selection with a host computation.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define THREADS_PER_BLOCK 256
#define MAX_GRID_X 2147483647ul

typedef struct latLong {
    float lat;
    float lng;
} LatLong;

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "nn: %s failed: %s\n", #call, cudaGetErrorString(e_));                 \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void euclid(LatLong *d_locations, float *d_distances, int numRecords, float lat, float lng)
{
    int id = blockDim.x * (gridDim.x * blockIdx.y + blockIdx.x) + threadIdx.x;
    if (id >= numRecords) return;
    const LatLong *p = d_locations + id;
    float dlat = lat - p->lat, dlng = lng - p->lng;
    d_distances[id] = sqrtf(dlat * dlat + dlng * dlng);
}

static uint64_t rng_state;
static uint32_t next_u32()   // SplitMix64, upper half
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (uint32_t)(z >> 33);   // 31 bits, like rand()
}

int main(int argc, char **argv)
{
    int n = 42764, k = 5;
    float lat = 0, lng = 0;
    bool check = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) k = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-lat") && i + 1 < argc) lat = atof(argv[++i]);
        else if (!strcmp(argv[i], "-lng") && i + 1 < argc) lng = atof(argv[++i]);
        else if (!strcmp(argv[i], "--check")) check = true;
        else { fprintf(stderr, "usage: nn [-n RECORDS] [-r K] [-lat X] [-lng Y] [--check]\n"); return 2; }
    }
    if (n < 1 || k < 1) { fprintf(stderr, "nn: -n and -r must be positive\n"); return 2; }
    if (k > n) k = n;
    LatLong *loc = (LatLong *)malloc(n * sizeof(LatLong));
    rng_state = 4;
    for (int i = 0; i < n; i++) {   // "%5.1f" of (7 + r % 63) + r / 2^31, read back with atof
        double la = 7 + next_u32() % 63;
        la += next_u32() / 2147483648.0;
        double lo = next_u32() % 358;
        lo += next_u32() / 2147483648.0;
        loc[i].lat = (float)(round(la * 10) / 10);
        loc[i].lng = (float)(round(lo * 10) / 10);
    }

    unsigned long blocks = (n + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;
    unsigned long grid_y = (blocks + MAX_GRID_X - 1) / MAX_GRID_X;
    unsigned long grid_x = (blocks + grid_y - 1) / grid_y;
    LatLong *d_loc;
    float *d_dist;
    CK(cudaMalloc(&d_loc, n * sizeof(LatLong)));
    CK(cudaMalloc(&d_dist, n * sizeof(float)));
    CK(cudaMemcpy(d_loc, loc, n * sizeof(LatLong), cudaMemcpyHostToDevice));
    euclid<<<dim3(grid_x, grid_y), THREADS_PER_BLOCK>>>(d_loc, d_dist, n, lat, lng);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    float *dist = (float *)malloc(n * sizeof(float));
    CK(cudaMemcpy(dist, d_dist, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaFree(d_loc));
    CK(cudaFree(d_dist));

    // the k nearest, by repeated selection as published (ties keep the earlier record)
    int *order = (int *)malloc(n * sizeof(int));
    float *d = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) order[i] = i, d[i] = dist[i];
    for (int i = 0; i < k; i++) {
        int best = i;
        for (int j = i; j < n; j++)
            if (d[j] < d[best]) best = j;
        float td = d[i]; d[i] = d[best]; d[best] = td;
        int to = order[i]; order[i] = order[best]; order[best] = to;
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += dist[i];
    printf("nn: %d records, grid %lux%lu, checksum %.9e\n", n, grid_x, grid_y, sum);
    for (int i = 0; i < k; i++)
        printf("  %5.1f %5.1f --> distance %f\n", loc[order[i]].lat, loc[order[i]].lng, d[i]);
    int rc = 0;
    if (check) {
        int bad = 0;
        for (int i = 0; i < n; i++) {
            double want = sqrt(((double)lat - loc[i].lat) * ((double)lat - loc[i].lat) +
                               ((double)lng - loc[i].lng) * ((double)lng - loc[i].lng));
            if (fabs(dist[i] - want) > 1e-6 * fmax(1.0, want)) bad++;
        }
        for (int i = 1; i < k; i++) bad += d[i] < d[i - 1];
        printf("check: %s (%d distances differ)\n", bad ? "FAIL" : "PASS", bad);
        rc = bad ? 1 : 0;
    }
    free(loc); free(dist); free(order); free(d);
    return rc;
}
