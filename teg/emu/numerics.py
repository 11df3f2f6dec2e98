"""Bit-exact scalar helpers for the interpreter: IEEE bit casts, fused multiply-add (LLVM's
``llvm.fma``), directed rounding of an exact double to float32, half-precision conversion with
round-to-nearest-even, denormal flushing, and saturating float→integer conversion.

All functions are numba ``njit`` and take/return int64 bit patterns or float64 values, so the
interpreter never mixes unsigned and signed numba integer types.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from teg.jit import njit

M32 = 0xFFFFFFFF
F32_MIN_NORMAL = 1.1754943508222875e-38


@intrinsic
def fma(typingctx, a, b, c):
    """Fused multiply-add ``a*b+c`` with a single rounding (float64)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()] * 3)
        fn = builder.module.declare_intrinsic("llvm.fma", [ir.DoubleType()], fnty)
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def fma32(typingctx, a, b, c):
    """Fused multiply-add of three float32 with a single rounding to float32 (``llvm.fma.f32``:
    IEEE fusedMultiplyAdd, round to nearest even); lane loops of it vectorise."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.FloatType(), [ir.FloatType()] * 3)
        fn = builder.module.declare_intrinsic("llvm.fma", [ir.FloatType()], fnty)
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def f32_bits_as(typingctx, x):
    """The float32 whose bit pattern is the low 32 bits of the integer ``x`` (a register cast, no
    memory round trip)."""
    sig = types.float32(x)

    def codegen(context, builder, signature, args):
        v = args[0]
        if v.type.width > 32:
            v = builder.trunc(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())

    return sig, codegen


@intrinsic
def bits_of_f32_as(typingctx, x):
    """The bit pattern of the float32 ``x`` as a non-negative int64."""
    sig = types.int64(types.float32)

    def codegen(context, builder, signature, args):
        return builder.zext(builder.bitcast(args[0], ir.IntType(32)), ir.IntType(64))

    return sig, codegen


@njit(cache=True)
def s32(x):
    """Low 32 bits of ``x`` as a signed value."""
    return ((x & M32) ^ 0x80000000) - 0x80000000


@njit(cache=True)
def f32_of(bits, su, sf):
    """Float32 value of a 32-bit pattern (through the scratch array ``su`` and its float view ``sf``)."""
    su[0] = np.uint32(bits & M32)
    return np.float64(sf[0])


@njit(cache=True)
def bits_of_f32(x, su, sf):
    """Bit pattern of ``x`` rounded to float32 (round to nearest even)."""
    sf[0] = np.float32(x)
    return np.int64(su[0])


@njit(cache=True)
def f64_of(bits, sq, sd):
    sq[0] = bits
    return sd[0]


@njit(cache=True)
def bits_of_f64(x, sq, sd):
    sd[0] = x
    return sq[0]


@njit(cache=True)
def ftz32(x):
    """Flush a float32 denormal to a signed zero (``.FTZ``)."""
    if x != 0.0 and abs(x) < F32_MIN_NORMAL:
        return math.copysign(0.0, x)
    return x


@njit(cache=True)
def round_f32_bits(d, mode, su, sf):
    """Round the (exact) double ``d`` to float32 with mode 0 RN, 1 RZ, 2 RM, 3 RP; returns bits."""
    b = bits_of_f32(d, su, sf)
    if mode == 0 or d != d:
        return b
    f = f32_of(b, su, sf)
    if f == d:
        return b
    mag_down = (b & 0x7FFFFFFF) != 0
    if mode == 1:
        if abs(f) > abs(d):
            return b - 1 if mag_down else b
        return b
    if (mode == 2 and f > d) or (mode == 3 and f < d):
        going_up = mode == 3
        if f == 0.0:
            return 0x00000001 if going_up else 0x80000001
        if (f > 0.0) == going_up:
            return b + 1
        return b - 1
    return b


@njit(cache=True)
def fma_f32_bits(x, y, z, mode, su, sf, sq, sd):
    """Float32 ``x*y+z`` rounded once (mode 0 RN, 1 RZ, 2 RM, 3 RP) from float32 inputs held as
    doubles. ``x*y`` is exact in double; the sum is taken in double rounded to odd (TwoSum gives the
    exact error; an inexact sum gets its last bit set, moving it toward the exact value), which
    rounds to float32 exactly as the exact value would: 53 >= 2*24 + 2 bits. (A plain double fma
    rounds twice: 2^-22 + ... cases land on a float32 tie, e.g. the refinement step of 1/0x3effffff.)"""
    p = x * y
    s = p + z
    if s != s or s - s != 0.0:        # NaN or infinite: nothing to correct
        return round_f32_bits(s, mode, su, sf)
    bp = s - z
    err = (p - bp) + (z - (s - bp))
    if err != 0.0 and s != 0.0:
        b = bits_of_f64(s, sq, sd)
        if (b & 1) == 0:
            b = b + 1 if (err > 0.0) == (s > 0.0) else b - 1
            s = f64_of(b, sq, sd)
    return round_f32_bits(s, mode, su, sf)


@njit(cache=True)
def adjust_f64(r, residual, mode):
    """Directed rounding of a float64 result ``r`` whose exact value is ``r + residual``."""
    if mode == 0 or residual == 0.0 or r != r:
        return r
    if mode == 1:
        if r > 0.0 and residual < 0.0:
            return np.nextafter(r, 0.0)
        if r < 0.0 and residual > 0.0:
            return np.nextafter(r, 0.0)
        return r
    if mode == 2 and residual < 0.0:
        return np.nextafter(r, -np.inf)
    if mode == 3 and residual > 0.0:
        return np.nextafter(r, np.inf)
    return r


@njit(cache=True)
def h2f(h):
    """IEEE half bits → float64 (exact)."""
    s = (h >> 15) & 1
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    if e == 0:
        v = m * 5.960464477539063e-08
    elif e == 31:
        v = np.inf if m == 0 else np.nan
    else:
        v = (1024 + m) * 2.0 ** (e - 25)
    return -v if s else v


@njit(cache=True)
def f2h(x):
    """float64 → IEEE half bits, round to nearest even, overflow to infinity."""
    if x != x:
        return 0x7E00
    sign = 0x8000 if (x < 0.0 or (x == 0.0 and math.copysign(1.0, x) < 0.0)) else 0
    a = abs(x)
    if a == np.inf:
        return sign | 0x7C00
    if a < 6.103515625e-05:                     # below the smallest normal: denormal grid 2^-24
        return sign | int(np.rint(a * 16777216.0))
    f, e = math.frexp(a)                        # a = f * 2^e, f in [0.5, 1)
    m = int(np.rint(a * 2.0 ** (11 - e)))       # 11 significant bits
    if m == 2048:
        m = 1024
        e += 1
    field = e - 1 + 15
    if field >= 31:
        return sign | 0x7C00
    return sign | (field << 10) | (m - 1024)


@njit(cache=True)
def round_int(d, mode):
    """Round to an integral double (staying a double, so huge values do not overflow): 0 nearest-even,
    1 toward zero, 2 down, 3 up."""
    if mode == 0:
        return np.rint(d)
    if mode == 1:
        return np.trunc(d)
    if mode == 2:
        return np.floor(d)
    return np.ceil(d)


@njit(cache=True)
def f2i(d, mode, nbytes, signed):
    """Saturating float → integer conversion (NaN → 0), returned as raw two's-complement bits."""
    if d != d:
        return 0
    r = round_int(d, mode)
    if signed:
        lo = -(2.0 ** (nbytes * 8 - 1))
        hi = 2.0 ** (nbytes * 8 - 1) - 1
    else:
        lo = 0.0
        hi = 2.0 ** (nbytes * 8) - 1
    if r <= lo:
        v = np.int64(lo) if nbytes < 8 or signed else np.int64(0)
        return v
    if r >= hi:
        if nbytes == 8:
            return np.int64(0x7FFFFFFFFFFFFFFF) if signed else np.int64(-1)
        return np.int64(hi)
    if nbytes == 8 and not signed and r >= 9.223372036854775807e18:
        return np.int64(np.uint64(r))
    return np.int64(r)
