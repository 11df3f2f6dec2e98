// teg validation suite, group "teg_app": the application cases of the TEG report §5 rewritten for
// this project: C = A·Bᵀ with its shared-memory bank conflict and the padded fix (§5.1), the
// array-of-structures vs structure-of-arrays gather of the Hopping_Matrix lesson (§5.2), a matrix
// transpose naive vs through shared memory, and a block reduction.
#include "teg_timing.cuh"

// ---- C = A·Bᵀ ------------------------------------------------------------------------------
// buf = [B: 32 x K floats][A: rows x K floats], K = p0 (a multiple of 32). Warp g of the GPU
// computes C(g, 0..31) = sum_k A(g, k) B(j, k) with lane j. Per 32-wide k-tile every warp stages
// its own copy of the B tile in shared memory (so each warp has the same work at every warp
// count, as in TEG §5.1) and its A row; lane j then reads Bs[j][k]: with the row length 32 all
// lanes hit bank k (32-way conflict), with PAD = 1 the row length 33 spreads them over all banks
// (TEG §5.1, Table 2 vs Table 3). Blocks hold at most 8 warps (34 KB of shared memory).
template <int PAD>
__device__ __forceinline__ void teg_matmul_abt(u64* timing, u64* out, const float* buf, long long K) {
    __shared__ float Bs[8][32][32 + PAD];
    __shared__ float As[8][32];
    const unsigned lane = threadIdx.x & 31, warp = teg_thread_linear() / 32;
    const unsigned long long row = teg_global_thread() / 32;
    const float* B = buf;
    const float* A = buf + 32 * K + row * K;
    float acc = 0.0f;
    TEG_BEGIN();
    for (long long k0 = 0; k0 < K; k0 += 32) {
#pragma unroll
        for (int r = 0; r < 32; ++r) Bs[warp][r][lane] = B[r * K + k0 + lane];
        As[warp][lane] = A[k0 + lane];
        __syncwarp();
#pragma unroll 8
        for (int k = 0; k < 32; ++k) acc += As[warp][k] * Bs[warp][lane][k];
        __syncwarp();
    }
    TEG_END(teg_bits(acc));
}

TEG_KERNEL_BLOCK(matmul_abt_conflict, 256) { teg_matmul_abt<0>(timing, out, (const float*)buf, p0); }
TEG_KERNEL_BLOCK(matmul_abt_padded, 256) { teg_matmul_abt<1>(timing, out, (const float*)buf, p0); }

// ---- AoS vs SoA gather (Hopping_Matrix) --------------------------------------------------------
// A site holds a spinor (12 complex = 24 floats) and a gauge link (3x3 complex = 18 floats):
// 42 floats. Thread t processes sites s = it * p1 + t (p1 = threads on the GPU), it < p0, wrapped
// to 2^18 sites. AoS: site s at buf + 42 s (a warp's lanes 168 B apart: uncoalesced).
// SoA: component c of site s at buf + c * 2^18 + s (coalesced). Work: the link times each of
// the spinor's 4 colour vectors (U·ψ, 36 complex multiply-adds).
#define TEG_SITES (1u << 18)
#define TEG_SITE_FLOATS 42

template <bool AOS>
__device__ __forceinline__ float teg_site_load(const float* buf, unsigned s, unsigned c) {
    return AOS ? buf[(unsigned long long)s * TEG_SITE_FLOATS + c] : buf[(unsigned long long)c * TEG_SITES + s];
}

template <bool AOS>
__device__ __forceinline__ void teg_hopping(u64* timing, u64* out, const float* buf, long long iters, long long total) {
    const unsigned long long t = teg_global_thread();
    float sum = 0.0f;
    TEG_BEGIN();
    for (long long it = 0; it < iters; ++it) {
        const unsigned s = (unsigned)((it * total + t) & (TEG_SITES - 1));
        float u[18], psi[24];
#pragma unroll
        for (int c = 0; c < 18; ++c) u[c] = teg_site_load<AOS>(buf, s, 24 + c);
#pragma unroll
        for (int c = 0; c < 24; ++c) psi[c] = teg_site_load<AOS>(buf, s, c);
#pragma unroll
        for (int spin = 0; spin < 4; ++spin) {
#pragma unroll
            for (int i = 0; i < 3; ++i) {
                float re = 0.0f, im = 0.0f;
#pragma unroll
                for (int j = 0; j < 3; ++j) {
                    const float ur = u[2 * (3 * i + j)], ui = u[2 * (3 * i + j) + 1];
                    const float pr = psi[2 * (3 * spin + j)], pi = psi[2 * (3 * spin + j) + 1];
                    re += ur * pr - ui * pi;
                    im += ur * pi + ui * pr;
                }
                sum += re * im;
            }
        }
    }
    TEG_END(teg_bits(sum));
}

TEG_KERNEL_BLOCK(hopping_aos, 256) { teg_hopping<true>(timing, out, (const float*)buf, p0, p1); }
TEG_KERNEL_BLOCK(hopping_soa, 256) { teg_hopping<false>(timing, out, (const float*)buf, p0, p1); }

// ---- transpose ---------------------------------------------------------------------------------
// buf = [in: 1024 x 4096 floats][out: 4096 x 1024 floats at float offset 2^22]. Warp g transposes
// tile g mod 4096 (32 x 32): naive reads rows (coalesced) and writes columns (32 sectors per
// store); the shared version stages the tile in a padded [32][33] per-warp buffer so both the
// global reads and writes are coalesced. Blocks hold at most 8 warps (33 KB of shared memory).
#define TEG_TR_W 4096u
#define TEG_TR_H 1024u

template <bool SHARED>
__device__ __forceinline__ void teg_transpose(u64* timing, u64* out, float* buf) {
    __shared__ float tiles[8][32][33];
    const unsigned lane = threadIdx.x & 31, warp = teg_thread_linear() / 32;
    const unsigned tile = (unsigned)((teg_global_thread() / 32) & 4095u);
    const unsigned r0 = 32u * (tile / (TEG_TR_W / 32)), c0 = 32u * (tile % (TEG_TR_W / 32));
    const float* in = buf;
    float* dst = buf + (1u << 22);
    float last = 0.0f;
    TEG_BEGIN();
    for (unsigned r = 0; r < 32; ++r) {
        const float v = in[(unsigned long long)(r0 + r) * TEG_TR_W + c0 + lane];
        if (SHARED) tiles[warp][r][lane] = v;
        else dst[(unsigned long long)(c0 + lane) * TEG_TR_H + r0 + r] = v;
        last = v;
    }
    if (SHARED) {
        __syncwarp();
        for (unsigned c = 0; c < 32; ++c) dst[(unsigned long long)(c0 + c) * TEG_TR_H + r0 + lane] = tiles[warp][lane][c];
    }
    TEG_END(teg_bits(last));
}

TEG_KERNEL_BLOCK(transpose_naive, 256) { teg_transpose<false>(timing, out, (float*)buf); }
TEG_KERNEL_BLOCK(transpose_shared, 256) { teg_transpose<true>(timing, out, (float*)buf); }

// ---- reduction ---------------------------------------------------------------------------------
// Each thread sums p0 coalesced floats (element it * p1 + t, p1 = threads on the GPU, wrapped to
// 2^22), then the block reduces in shared memory (tree with barriers down to one warp) and the
// last warp with shuffles.
TEG_KERNEL(reduce_block) {
    __shared__ float partial[1024];
    const float* x = (const float*)buf;
    const unsigned tid = teg_thread_linear(), n = teg_block_threads();
    const unsigned long long t = teg_global_thread();
    float s = 0.0f;
    TEG_BEGIN();
    for (long long it = 0; it < p0; ++it) s += x[(it * p1 + t) & ((1u << 22) - 1)];
    partial[tid] = s;
    __syncthreads();
    for (unsigned half = n / 2; half >= 32; half /= 2) {
        if (tid < half) partial[tid] += partial[tid + half];
        __syncthreads();
    }
    if (tid < 32) {
        s = partial[tid];
        for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
    }
    TEG_END(teg_bits(s));
}
