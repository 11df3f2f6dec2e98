// teg validation suite, group "latency": dependent chains (TEG report §3.2.1). One step per
// instruction; chains of 32, 64 and 128 steps so that the slope over chain length gives the
// execution latency with the clock-read and barrier overhead cancelled.
#include "teg_ops.cuh"

#define TEG_CHAIN(op, OP, N)                                                                   \
    TEG_KERNEL(lat_##op##_n##N) { teg_chains<OP, N, 1>(timing, out, a, b); }
#define TEG_CHAINS(op, OP) TEG_CHAIN(op, OP, 32) TEG_CHAIN(op, OP, 64) TEG_CHAIN(op, OP, 128)

TEG_CHAINS(fadd, OpFADD)
TEG_CHAINS(fmul, OpFMUL)
TEG_CHAINS(ffma, OpFFMA)
TEG_CHAINS(imad, OpIMAD)
TEG_CHAINS(iadd3, OpIADD3)
TEG_CHAINS(lop3, OpLOP3)
TEG_CHAINS(mufu_rsq, OpMUFU_RSQ)
TEG_CHAINS(mufu_ex2, OpMUFU_EX2)
TEG_CHAINS(dadd, OpDADD)
TEG_CHAINS(dfma, OpDFMA)
TEG_CHAINS(hfma2, OpHFMA2)
TEG_CHAINS(f2i_i2f, OpF2I_I2F)
TEG_CHAINS(f2f_pair, OpF2F_PAIR)

// Shared-memory pointer chase: word w holds the shared address of word w + p0 (mod 2048 words).
// Lane l starts at word l * p1, so p1 = 1 is conflict-free and p0 = 32 keeps each lane in its
// bank. LDS with the loaded value as the next address: one LDS per step.
template <int N>
__device__ __forceinline__ void teg_lds_chase(u64* timing, u64* out, long long step_words, long long lane_words) {
    __shared__ unsigned chain[2048];
    const unsigned base = (unsigned)__cvta_generic_to_shared(chain);
    for (unsigned w = teg_thread_linear(); w < 2048; w += teg_block_threads())
        chain[w] = base + 4u * (unsigned)((w + step_words) & 2047);
    __syncthreads();
    unsigned p = base + 4u * (unsigned)(((threadIdx.x & 31) * lane_words) & 2047);
    TEG_BEGIN();
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));
    TEG_END(p);
}

#define TEG_LDS(N) TEG_KERNEL(lat_lds_n##N) { teg_lds_chase<N>(timing, out, p0, p1); }
TEG_LDS(32) TEG_LDS(64) TEG_LDS(128)

// Global pointer chase through ``buf``: the host writes a chain of 64-bit device addresses per
// block (see cases.yaml, init: chase); block g starts at byte g * p0 and follows the pointers.
// p1 = 1: one untimed warm-up pass first (L1 / L2 hits); p1 = 0: cold (the harness flushes L2
// before the launch: DRAM). .ca caches in L1, .cg only in L2. One LDG.E.64 per step.
#define TEG_LDG_CHASE(name, cop, N)                                                            \
    TEG_KERNEL(name##_n##N) {                                                                  \
        u64 p = (u64)buf + (u64)p0 * teg_block_linear();                                       \
        if (p1) {                                                                              \
            u64 q = p;                                                                         \
            for (int i = 0; i < N; ++i) asm volatile("ld.global." cop ".u64 %0, [%0];" : "+l"(q)); \
            teg_consume(q);                                                                    \
        }                                                                                      \
        TEG_BEGIN();                                                                           \
        _Pragma("unroll") for (int i = 0; i < N; ++i)                                          \
            asm volatile("ld.global." cop ".u64 %0, [%0];" : "+l"(p));                         \
        TEG_END(p);                                                                            \
    }
TEG_LDG_CHASE(lat_ldg_ca, "ca", 16) TEG_LDG_CHASE(lat_ldg_ca, "ca", 32) TEG_LDG_CHASE(lat_ldg_ca, "ca", 64)
TEG_LDG_CHASE(lat_ldg_cg, "cg", 16) TEG_LDG_CHASE(lat_ldg_cg, "cg", 32) TEG_LDG_CHASE(lat_ldg_cg, "cg", 64)

// Evicts L2 between launches of cold cases: streams p0 bytes of ``buf`` (> L2 size).
TEG_KERNEL(teg_l2_flush) {
    const unsigned long long n = (unsigned long long)p0 / 8;
    for (unsigned long long i = teg_global_thread(); i < n; i += (unsigned long long)gridDim.x * teg_block_threads())
        buf[i] = i;
    TEG_BEGIN();
    TEG_END(0);
}
