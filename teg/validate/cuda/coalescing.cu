// teg validation suite, group "coalescing": one warp-wide 4-byte global load per step whose lanes
// are p0 words apart and shifted by p1 words (TEG report §3.3.4; 32 B sectors on sm_70+):
// p0 = 0 -> 1 sector per request, 1 -> 4, 2 -> 8, 4 -> 16, >= 8 -> 32; p1 = 1 with p0 = 1 -> 5.
// Each warp of a block owns a region; loads go through L2 (ld.global.cg), the region is
// warmed by an untimed pass. 32 loads per warp, independent (accumulated; up to 8 in flight).
#include "teg_timing.cuh"

#define TEG_COAL_STEPS 32

TEG_KERNEL(coal_ldg) {
    const unsigned lane = threadIdx.x & 31, warp = teg_thread_linear() / 32;
    const unsigned* region = (const unsigned*)buf + (unsigned long long)warp * (TEG_COAL_STEPS * 32 * 32 + 64);
    const unsigned long long step_words = 32ull * (p0 > 0 ? p0 : 1);
    unsigned acc = 0, v;
    for (int i = 0; i < TEG_COAL_STEPS; ++i) {
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(region + i * step_words + lane * p0 + p1));
        acc += v;
    }
    teg_consume(acc);
    TEG_BEGIN();
#pragma unroll 8
    for (int i = 0; i < TEG_COAL_STEPS; ++i) {
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(region + i * step_words + lane * p0 + p1));
        acc += v;
    }
    TEG_END(acc);
}
