// gpu-cache style kernel (teg accuracy suite; our own code). Every block of 256 threads re-reads
// the same float buffer of n floats, coalesced: thread t sums B[t], B[t+256], B[t+512], ...
// `per_sweep` loads per thread make one sweep (n = 256 * per_sweep), repeated `sweeps` times.
extern "C" __global__ void cache_sum(const float *B, float *out, int per_sweep, int sweeps) {
    float s0 = 0.f, s1 = 0.f;
    for (int r = 0; r < sweeps; r++) {
        const float *p = B + threadIdx.x;
        int k = 0;
        for (; k + 1 < per_sweep; k += 2) {
            s0 += p[0];
            s1 += p[256];
            p += 512;
        }
        if (k < per_sweep) s0 += p[0];
    }
    float s = s0 + s1;
    if (s == 1.2345f) out[threadIdx.x] = s;   // never true: keeps the loads alive
}
