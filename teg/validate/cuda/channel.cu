// teg validation suite, group "channel": DRAM channel skew (TEG report §3.3.5). Every warp reads
// whole 128 B lines (lane l reads word l); its k-th line is line index L = k * p1 + global warp,
// placed at byte offset (L * p0) mod 2^28 + 2^20 * floor(L * p0 / 2^28). p0 = 128: consecutive lines,
// spread over all channels; p0 = a large power of two: every line maps to the same channel under
// a linear 256 B interleave (the real address hash is unpublished; the measurement says whether
// the hardware camps). p1 = the number of warps on the whole GPU (so one SM's lines do not depend
// on the grid it was traced in). Cold: the harness flushes L2 before each launch.
#include "teg_timing.cuh"

#define TEG_CHANNEL_STEPS 16

TEG_KERNEL(channel_ldg) {
    const unsigned lane = threadIdx.x & 31;
    const unsigned long long gwarp = teg_global_thread() / 32;
    const unsigned char* base = (const unsigned char*)buf;
    unsigned acc = 0, v;
    TEG_BEGIN();
#pragma unroll
    for (int k = 0; k < TEG_CHANNEL_STEPS; ++k) {
        const unsigned long long off = ((unsigned long long)k * p1 + gwarp) * (unsigned long long)p0;
        const unsigned long long pos = (off & ((1ull << 28) - 1)) + (off >> 28 << 20);
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(base + pos + 4 * lane));
        acc += v;
    }
    TEG_END(acc);
}
