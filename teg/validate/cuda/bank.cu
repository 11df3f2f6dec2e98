// teg validation suite, group "bank": shared-memory bank conflicts (TEG report §3.3.3).
// Word w holds the shared address of word w + 1; lane l starts at word l * p0, so in every step
// the 32 lanes read words l * p0 + k: with 32 banks of 4 B, a stride p0 = 2^j (j <= 5) puts
// 2^j distinct words in one bank (2^j-way conflict), an odd stride none. Dependent chase
// (latency of a conflicted LDS) — the slope over the conflict degree is the wavefront cost.
#include "teg_timing.cuh"

template <int N>
__device__ __forceinline__ void teg_bank_chase(u64* timing, u64* out, long long stride_words) {
    __shared__ unsigned words[2048];
    const unsigned base = (unsigned)__cvta_generic_to_shared(words);
    for (unsigned w = teg_thread_linear(); w < 2048; w += teg_block_threads())
        words[w] = base + 4u * ((w + 1u) & 2047u);
    __syncthreads();
    unsigned p = base + 4u * (unsigned)(((threadIdx.x & 31) * stride_words) & 2047);
    TEG_BEGIN();
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));
    TEG_END(p);
}

TEG_KERNEL(bank_lds_n32) { teg_bank_chase<32>(timing, out, p0); }
TEG_KERNEL(bank_lds_n64) { teg_bank_chase<64>(timing, out, p0); }
