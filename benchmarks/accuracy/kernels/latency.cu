// gpu-latency style pointer chase (teg accuracy suite; our own code). One block; every thread
// follows the same randomly shuffled chain of pointers (int64 elements 64 B apart; each holds the
// device address of the next). `warm` loads walk the chain (warm-up), then `timed` loads are
// timed between two clock reads, the way the benchmark times its loop.
#include <cstdint>
extern "C" __global__ void chase(const int64_t *buf, int64_t *out, int warm, int timed) {
    const int64_t *p = buf;
    for (int k = 0; k < warm; k++) p = (const int64_t *)*p;
    long long t0 = clock64();
    for (int k = 0; k < timed; k++) p = (const int64_t *)*p;
    long long t1 = clock64();
    if (threadIdx.x == 0) { out[0] = (int64_t)p; out[1] = t1 - t0; }
}
