// gpu-cache experiment (teg accuracy suite; our own code, written from the facts listed in
// benchmarks/accuracy/README.md, "cache": te42kyfo/gpu-benches 266497d, cuda-cache/main.cu, the
// code that produced the A100 80 GB and H100 PCIe files). The launch is ONE block of 256 threads per
// SM; every block reads the same buffer of 256 * P doubles (P = kB / 2 loads per thread per sweep),
// coalesced: a sweep is thread t adding B[t + 256 k], k = 0 .. P-1, into ONE double accumulator
// (a dependent DADD chain), the sweep loop unrolled completely for P < 64 and 32 times otherwise;
// each sweep starts by advancing the buffer pointer by `zero` (0 at run time: the loads are not
// loop-invariant) and ends by multiplying the sum by 1.3. One kernel per measured set size
// (cache_sum_<kB>), as the benchmark instantiates one per size.
//
// A launch executes `loads` loads per thread starting at sweep position `start`, wrapping at the
// end of the buffer (a time window of the benchmark's 1e8 / N + 2 sweeps); `start` is 0 when
// `mult` is 0 (every SM at the same phase, as the benchmark starts), otherwise block b starts at
// (q * P) / gridDim.x with q = (b * mult) mod gridDim.x (phases spread evenly over the sweep).

template <int P>
__device__ __forceinline__ double sweep(const double *p, double s) {
#pragma unroll(P >= 64 ? 32 : P)
    for (int k = 0; k < P; k++) s += p[256 * k];
    return s;
}

// loads from .. to-1 of one sweep: a window's partial first or last sweep. Whole groups of 32 loads
// (the unrolled loop that the old version ran for every load: nvcc keeps about 8 loads in flight
// per warp, as in the sweep loop), then the rest (0-31) in groups of 8 predicated loads, each group
// issued before its adds: a runtime remainder loop (what the old version compiled to for the rest)
// waits for each load before issuing the next, one L2 round trip per load, which the measured
// code, whose sweep has a compile-time tail, never does. __launch_bounds__(256, 8) below keeps the
// kernel at the 32 registers nvcc chose before these groups (without it sm_90 takes 40 and its
// unrolled loop issues 12 loads ahead instead of 8-9)
__device__ __forceinline__ double part(const double *p, int from, int to, double s) {
    int k = from + ((to - from) & ~31);
#pragma unroll 32
    for (int i = from; i < k; i++) s += p[256 * i];
#pragma unroll 1
    for (; k < to; k += 8) {
        double v[8];
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = k + j < to ? p[256 * (k + j)] : 0.0;
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (k + j < to) s += v[j];
    }
    return s;
}

template <int P>
__device__ __forceinline__ double window(const double *p, int zero, int start, int loads) {
    double s = 0.0;
    if (start > 0 || loads < P) {               // the window begins (or ends) inside a sweep
        int end = start + loads < P ? start + loads : P;
        s = part(p, start, end, s);
        if (end < P) return s;
        s *= 1.3;
        loads -= end - start;
    }
    for (; loads >= P; loads -= P) {            // whole sweeps, as the benchmark's loop body
        p += zero;
        s = sweep<P>(p, s);
        s *= 1.3;
    }
    if (loads > 0) {                            // a partial last sweep
        p += zero;
        s = part(p, 0, loads, s);
    }
    return s;
}

#define CACHE_SUM(KB)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256, 8) cache_sum_##KB(const double *B, double *out, int zero, int loads, int mult) { \
        const int P = KB / 2;                                                                          \
        unsigned q = (blockIdx.x * (unsigned)mult) % gridDim.x;                                        \
        int start = (int)((q * (unsigned)P) / gridDim.x);                                              \
        double s = window<P>(B + threadIdx.x, zero, start, loads);                                     \
        if (s == 1233.0) out[threadIdx.x] = s;   /* never true: keeps the loads alive */              \
    }

// the set sizes the suite runs (kB = N * 8 / 1024 of the measured series N = 256, 512, 768, ...
// then 1.17x steps): its sample, every 4th measured size per GPU and the last (run.py `_sampled`),
// the --quick sizes (16, 4044) and those the tests use (20); add a size here (and rebuild with
// make.sh) to run another measured row
CACHE_SUM(2) CACHE_SUM(12) CACHE_SUM(16) CACHE_SUM(20) CACHE_SUM(28) CACHE_SUM(44) CACHE_SUM(60)
CACHE_SUM(76) CACHE_SUM(92) CACHE_SUM(108) CACHE_SUM(124) CACHE_SUM(204) CACHE_SUM(384)
CACHE_SUM(716) CACHE_SUM(1576) CACHE_SUM(2956) CACHE_SUM(4044) CACHE_SUM(5540) CACHE_SUM(10380)
CACHE_SUM(19456) CACHE_SUM(36456) CACHE_SUM(68320)
