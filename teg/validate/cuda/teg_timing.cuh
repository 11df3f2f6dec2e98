// teg validation suite: common timing harness (the project's own code).
//
// Every suite kernel has the same signature (TEG_KERNEL) so one launcher serves them all:
//   timing : 4 x u64 per block  = {clock64 at start, clock64 at end, %smid, 0}
//   out    : per-thread results (keeps the measured work alive)
//   buf    : the case's data buffer (pointer chains, matrices, ...)
//   p0, p1 : integer case parameters (strides, offsets, iteration counts, ...)
//   a, b   : floating-point operands of arithmetic chains
//
// Method (TEG report §3.2.1; CUDA C++ Programming Guide, "Time Function": clock64() reads a
// per-multiprocessor counter): a block synchronises, thread 0 reads the per-SM cycle counter
// (%clock64, CS2R on sm_70+), the block runs the measured region, every thread
// stores its result to volatile shared memory — the store cannot issue before the result register
// is written, so the end read cannot be hoisted above the work — the block synchronises again and
// thread 0 reads the counter and %smid and writes the record. Counters of different SMs are not
// synchronised, so cycles are only ever subtracted within one SM.
#pragma once

typedef unsigned long long u64;

// Kernels are launched with blocks of up to 32 warps, so they are compiled for 1024 threads per
// block (at most 64 registers per thread); TEG_KERNEL_BLOCK caps the block size lower for cases
// whose manifest entry sets max_warps_per_block (then the register budget is larger).
#define TEG_KERNEL_BLOCK(name, threads)                                                       \
    extern "C" __global__ void __launch_bounds__(threads)                                     \
        name(u64* __restrict__ timing, u64* __restrict__ out, u64* __restrict__ buf,          \
             long long p0, long long p1, double a, double b)
#define TEG_KERNEL(name) TEG_KERNEL_BLOCK(name, 1024)

__device__ __forceinline__ u64 teg_clock64() {
    u64 t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}

__device__ __forceinline__ unsigned teg_smid() {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

__device__ __forceinline__ unsigned teg_block_linear() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

__device__ __forceinline__ unsigned teg_thread_linear() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

__device__ __forceinline__ unsigned teg_block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

__device__ __forceinline__ unsigned long long teg_global_thread() {
    return (unsigned long long)teg_block_linear() * teg_block_threads() + teg_thread_linear();
}

// A result must be in a register before the block's end clock is read: a volatile shared store of
// it issues only once the register is written (scoreboard), and it precedes the barrier.
__shared__ volatile u64 teg_sink_[32];

__device__ __forceinline__ void teg_consume(u64 v) { teg_sink_[threadIdx.x & 31] = v; }

#define TEG_BEGIN()                                                                           \
    __syncthreads();                                                                          \
    const u64 teg_t0_ = teg_clock64();

#define TEG_END(result)                                                                       \
    teg_consume((u64)(result));                                                               \
    __syncthreads();                                                                          \
    {                                                                                         \
        const u64 teg_t1_ = teg_clock64();                                                    \
        if (teg_thread_linear() == 0) {                                                       \
            const unsigned teg_b_ = teg_block_linear();                                       \
            timing[4 * teg_b_ + 0] = teg_t0_;                                                 \
            timing[4 * teg_b_ + 1] = teg_t1_;                                                 \
            timing[4 * teg_b_ + 2] = teg_smid();                                              \
            timing[4 * teg_b_ + 3] = 0;                                                       \
        }                                                                                     \
        out[teg_global_thread()] = (u64)(result);                                             \
    }

// Bit casts used by the arithmetic chains.
__device__ __forceinline__ u64 teg_bits(float x) { return (u64)__float_as_uint(x); }
__device__ __forceinline__ u64 teg_bits(double x) { return (u64)__double_as_longlong(x); }
__device__ __forceinline__ u64 teg_bits(unsigned x) { return (u64)x; }
__device__ __forceinline__ u64 teg_bits(int x) { return (u64)(unsigned)x; }
