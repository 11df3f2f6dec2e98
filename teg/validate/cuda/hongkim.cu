// teg validation suite, group "hongkim": the seven micro-benchmarks of Hong & Kim (ISCA'09,
// Table 4): per loop iteration MEM global loads and COMP computation instructions, FP of them
// floating point (Mb1 0/23(20), Mb2 1/17(8), Mb3 1/29(20), Mb4 2/27(12), Mb5 2/35(20),
// Mb6 4/47(20), Mb7 6/59(20)). The FP ops are FFMAs and the rest IADD3s, written in PTX so the
// counts per iteration are exact (address arithmetic and the loop add a few more). Coalesced
// (_c): thread t of the iteration reads word t; uncoalesced (_uc): word 32 t (one line per lane).
// p0 = iterations, p1 = threads on the whole GPU; the buffer wraps at 2^24 words (64 MiB).
#include "teg_timing.cuh"

template <int MEM, int COMP, int FP, int STRIDE>
__device__ __forceinline__ void teg_hongkim(u64* timing, u64* out, const unsigned* data, long long iters,
                                            long long total_threads, float fa, float fb) {
    const unsigned long long gt = teg_global_thread();
    float f0 = fa + 0.001f * threadIdx.x, f1 = fb, f2 = fa, f3 = fb;
    unsigned i0 = (unsigned)gt, i1 = 7;
    TEG_BEGIN();
    for (long long it = 0; it < iters; ++it) {
#pragma unroll
        for (int m = 0; m < MEM; ++m) {
            const unsigned long long word =
                (((unsigned long long)(it * MEM + m) * total_threads + gt) * STRIDE) & ((1ull << 24) - 1);
            unsigned v;
            asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(data + word));
            i1 += v;
        }
#pragma unroll
        for (int c = 0; c < FP; ++c) {
            if (c % 4 == 0) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(f0) : "f"(fa), "f"(fb));
            if (c % 4 == 1) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(f1) : "f"(fa), "f"(fb));
            if (c % 4 == 2) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(f2) : "f"(fa), "f"(fb));
            if (c % 4 == 3) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(f3) : "f"(fa), "f"(fb));
        }
#pragma unroll
        for (int c = FP; c < COMP; ++c)
            asm volatile("{ .reg .u32 t; sub.u32 t, %0, %1; add.u32 %0, t, %2; }" : "+r"(i0) : "r"(i1), "r"(c));
    }
    const float f = f0 + f1 + f2 + f3;
    TEG_END(teg_bits(f) ^ i0 ^ i1);
}

#define TEG_HK(mb, MEM, COMP, FP)                                                              \
    TEG_KERNEL(hk_##mb##_c) { teg_hongkim<MEM, COMP, FP, 1>(timing, out, (const unsigned*)buf, p0, p1, (float)a, (float)b); } \
    TEG_KERNEL(hk_##mb##_uc) { teg_hongkim<MEM, COMP, FP, 32>(timing, out, (const unsigned*)buf, p0, p1, (float)a, (float)b); }

TEG_HK(mb1, 0, 23, 20)
TEG_HK(mb2, 1, 17, 8)
TEG_HK(mb3, 1, 29, 20)
TEG_HK(mb4, 2, 27, 12)
TEG_HK(mb5, 2, 35, 20)
TEG_HK(mb6, 4, 47, 20)
TEG_HK(mb7, 6, 59, 20)
