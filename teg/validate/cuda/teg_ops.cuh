// teg validation suite: one dependent step per opcode class, written in PTX so that the compiler
// front end cannot fold or reassociate a chain. Each op names the SASS it is expected to become;
// tests/test_validate_suite.py checks the SASS of every chain kernel (count between the clock reads).
#pragma once
#include "teg_timing.cuh"

// Each op: T (register type), make(double) (operand from a kernel argument), step(x, a, b)
// (one dependent instruction or, for pairs, the documented sequence), and SASS (expected opcodes).

struct OpFADD {  // FADD
    typedef float T;
    static __device__ __forceinline__ T make(double v) { return (float)v; }
    static __device__ __forceinline__ T step(T x, T a, T) {
        asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
        return x;
    }
};

struct OpFMUL {  // FMUL
    typedef float T;
    static __device__ __forceinline__ T make(double v) { return (float)v; }
    static __device__ __forceinline__ T step(T x, T a, T) {
        asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(a));
        return x;
    }
};

struct OpFFMA {  // FFMA
    typedef float T;
    static __device__ __forceinline__ T make(double v) { return (float)v; }
    static __device__ __forceinline__ T step(T x, T a, T b) {
        asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
        return x;
    }
};

struct OpIMAD {  // IMAD
    typedef unsigned T;
    static __device__ __forceinline__ T make(double v) { return (unsigned)(long long)v; }
    static __device__ __forceinline__ T step(T x, T a, T b) {
        asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
        return x;
    }
};

struct OpIADD3 {  // IADD3 (x = x + a + b: one three-input add)
    typedef unsigned T;
    static __device__ __forceinline__ T make(double v) { return (unsigned)(long long)v; }
    static __device__ __forceinline__ T step(T x, T a, T b) {
        // x - a + b: the subtraction keeps ptxas from merging two steps into a single IADD3
        asm volatile("{ .reg .u32 t; sub.u32 t, %0, %1; add.u32 %0, t, %2; }" : "+r"(x) : "r"(a), "r"(b));
        return x;
    }
};

struct OpLOP3 {  // LOP3 ((x & a) ^ b)
    typedef unsigned T;
    static __device__ __forceinline__ T make(double v) { return (unsigned)(long long)v; }
    static __device__ __forceinline__ T step(T x, T a, T b) {
        asm volatile("lop3.b32 %0, %0, %1, %2, 0x6A;" : "+r"(x) : "r"(a), "r"(b));
        return x;
    }
};

struct OpMUFU_RSQ {  // MUFU.RSQ
    typedef float T;
    static __device__ __forceinline__ T make(double v) { return (float)v; }
    static __device__ __forceinline__ T step(T x, T, T) {
        asm volatile("rsqrt.approx.ftz.f32 %0, %0;" : "+f"(x));
        return x;
    }
};

struct OpMUFU_EX2 {  // MUFU.EX2
    typedef float T;
    static __device__ __forceinline__ T make(double v) { return (float)v; }
    static __device__ __forceinline__ T step(T x, T, T) {
        asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x));
        return x;
    }
};

struct OpDADD {  // DADD
    typedef double T;
    static __device__ __forceinline__ T make(double v) { return v; }
    static __device__ __forceinline__ T step(T x, T a, T) {
        asm volatile("add.rn.f64 %0, %0, %1;" : "+d"(x) : "d"(a));
        return x;
    }
};

struct OpDFMA {  // DFMA
    typedef double T;
    static __device__ __forceinline__ T make(double v) { return v; }
    static __device__ __forceinline__ T step(T x, T a, T b) {
        asm volatile("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x) : "d"(a), "d"(b));
        return x;
    }
};

struct OpHFMA2 {  // HFMA2 (packed half2 in a 32-bit register)
    typedef unsigned T;
    static __device__ __forceinline__ T make(double v) {
        // binary16 bits by integer arithmetic (truncating; valid for |v| in [2^-14, 2^16), which
        // the suite's operands are), both halves the same: keeps conversion instructions out of
        // the kernel (the timing does not depend on the value)
        const unsigned f = __float_as_uint((float)v);
        const unsigned h = ((f >> 16) & 0x8000u) | ((((f >> 23) - 112u) & 31u) << 10) | ((f >> 13) & 0x3ffu);
        return h | (h << 16);
    }
    static __device__ __forceinline__ T step(T x, T a, T b) {
        asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
        return x;
    }
};

struct OpF2I_I2F {  // F2I then I2F (a conversion pair: float -> int -> float)
    typedef float T;
    static __device__ __forceinline__ T make(double v) { return (float)v; }
    static __device__ __forceinline__ T step(T x, T, T) {
        asm volatile("{ .reg .s32 t; cvt.rni.s32.f32 t, %0; cvt.rn.f32.s32 %0, t; }" : "+f"(x));
        return x;
    }
};

struct OpF2F_PAIR {  // F2F.F64.F32 then F2F.F32.F64 (widen then narrow)
    typedef float T;
    static __device__ __forceinline__ T make(double v) { return (float)v; }
    static __device__ __forceinline__ T step(T x, T, T) {
        asm volatile("{ .reg .f64 t; cvt.f64.f32 t, %0; cvt.rn.f32.f64 %0, t; }" : "+f"(x));
        return x;
    }
};

// x[0..K) independent accumulators, N dependent steps each, all K interleaved per step.
template <class Op, int N, int K>
__device__ __forceinline__ u64 teg_chains(u64* timing, u64* out, double a_, double b_) {
    typedef typename Op::T T;
    const T a = Op::make(a_), b = Op::make(b_);
    T x[K];
#pragma unroll
    for (int k = 0; k < K; ++k) x[k] = Op::make(a_ + 0.001 * (teg_thread_linear() + k));
    TEG_BEGIN();
#pragma unroll
    for (int i = 0; i < N; ++i) {
#pragma unroll
        for (int k = 0; k < K; ++k) x[k] = Op::step(x[k], a, b);
    }
    u64 r = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) r ^= teg_bits(x[k]);
    TEG_END(r);
    return r;
}
