"""The jitted SASS interpreter: runs every block of a launch over the lowered code table and
appends one trace row per warp-level dynamic instruction.

State per warp: a register file ``regs[warp, row, lane]`` (uint32; rows in :mod:`teg.emu.ops`),
predicate lane masks ``pm[warp, slot]``, per-lane PC / state / wait mask, convergence-barrier masks
``bar[warp, 0…15]``. Every instruction executes for all 32 lanes of the current lane group in one
compiled loop.

Divergence (Volta+ independent thread scheduling, convergence barriers):

* the warp runs one *group* of lanes that share a PC; after a control instruction (BRA, BSYNC,
  EXIT, CALL, RET, BAR, WARPSYNC) the next group is the set of runnable lanes with the **lowest PC**,
  so lanes meeting at one PC merge and the side of a branch that jumps forward waits for the other;
* ``BSSY Bx`` stores the group's mask in ``Bx``; a lane reaching ``BSYNC Bx`` waits until every
  non-exited lane of ``Bx`` is waiting at that BSYNC, then they continue together (``BREAK Bx`` takes
  lanes out of ``Bx``); ``WARPSYNC mask`` waits the same way for the lanes of ``mask``;
* ``BAR.SYNC`` blocks the group until all non-exited threads of the block arrive; warps of a block
  run one after another, each until it exits or blocks on the barrier.

Each execution of an instruction by a group is one row (as NVBit records it): the mask is the
group's lanes whose guard predicate is true (0 when none is, the row is still recorded), and memory
rows add the address of every lane of the mask, in lane order. Shared addresses are offsets in the
block's shared window, local addresses offsets in the thread's local window, global addresses device
addresses.
"""

from __future__ import annotations

import math

import numpy as np

from teg.emu import ops as O
from teg.emu.numerics import (M32, adjust_f64, bits_of_f32, bits_of_f32_as, bits_of_f64, f2h, f2i, f32_bits_as, f32_of,
                              f64_of, fma, fma32,
                              fma_f32_bits, ftz32, h2f, round_f32_bits, round_int, s32)
from teg.jit import njit

FULL = 0xFFFFFFFF

# lane states
RUN, EXITED, WAITSYNC, WAITBAR = 0, 1, 2, 3

# run_warps / run_blocks status codes (err[0])
ST_OK, ST_BAR, ST_FULL = 0, 1, 2
E_UNSUPPORTED, E_GLOBAL, E_SHARED, E_LOCAL, E_DEADLOCK, E_ALIGN, E_CONST, E_RETURN = 10, 11, 12, 13, 14, 15, 16, 17


# ---- bit and comparison primitives --------------------------------------------------------------

@njit(cache=True)
def _popc(x):
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F
    return ((x * 0x01010101) & M32) >> 24


@njit(cache=True)
def _lut3(lut, a, b, c):
    """LOP3/PLOP3 truth table: bit ``i`` of ``lut`` (i = 4·a + 2·b + c) is the result for that
    combination of input bits, so the result is the OR of the minterms ``lut`` selects."""
    r = 0
    for i in range(8):
        if (lut >> i) & 1:
            r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return r & M32


@njit(cache=True)
def _cmp(code, lt, eq, gt, nan):
    """Comparison ``code`` (see ops.CMP) from the three-way outcome (or NaN)."""
    if code == 0:
        return False
    if code == 15:
        return True
    if code == 7:
        return not nan
    if code == 8:
        return nan
    if nan:
        return code >= 9
    base = code - 8 if code >= 9 else code
    if base == 1:
        return lt
    if base == 2:
        return eq
    if base == 3:
        return lt or eq
    if base == 4:
        return gt
    if base == 5:
        return not eq
    return gt or eq


@njit(cache=True)
def _bool(op, a, b):
    if op == 0:
        return a and b
    if op == 1:
        return a or b
    return a != b


@njit(cache=True, inline="always")
def _lowest_lane(mask):
    """Index of the lowest set lane of ``mask`` (0 when the mask is empty)."""
    for l in range(32):
        if (mask >> l) & 1:
            return l
    return 0


# ---- operand access: how every executor reads and writes the lowered operands --------------------

@njit(cache=True)
def _opnd(okind, oreg, oval, oflag, pc, j):
    """Operand ``j`` of instruction ``pc`` as lowered: its kind, register row or predicate slot, raw
    value and flags."""
    return okind[pc, j], oreg[pc, j], oval[pc, j], oflag[pc, j]


@njit(cache=True)
def _mods(code, pc):
    """Modifier slots m0…m4 of instruction ``pc`` (their meaning per operation: lower._decode)."""
    return code[pc, O.C_M], code[pc, O.C_M + 1], code[pc, O.C_M + 2], code[pc, O.C_M + 3], code[pc, O.C_M + 4]


@njit(cache=True)
def _u32(regs, w, l, k, r, v):
    """32-bit source operand of lane ``l``: register row ``r`` when ``k`` is K_REG, else the low 32
    bits of the immediate ``v``."""
    return np.int64(regs[w, r, l]) if k == O.K_REG else v & M32


@njit(cache=True)
def _pair(regs, w, r, l):
    """The 64-bit register pair R(r+1):R(r) of lane ``l`` (low word in row ``r``)."""
    return np.int64(regs[w, r, l]) | (np.int64(regs[w, r + 1, l]) << 32)


@njit(cache=True)
def _u64(regs, w, l, k, r, v):
    """64-bit source operand of lane ``l``: a register pair when ``k`` is K_REG, else the immediate."""
    return _pair(regs, w, r, l) if k == O.K_REG else v


_SIGN64 = np.int64(-(1 << 63))     # the int64 sign bit


@njit(cache=True)
def _u64z(regs, w, l, k, r, v):
    """:func:`_u64` with RZ / URZ read as a zero pair (the row after RZ is another register)."""
    if k == O.K_REG and (r == O.RZ_ROW or r == O.URZ_ROW):
        return np.int64(0)
    return _u64(regs, w, l, k, r, v)


@njit(cache=True)
def _put(regs, w, r, l, v):
    """Write the low 32 bits of ``v`` to row ``r`` of lane ``l``; writes to RZ/URZ are dropped."""
    if r != O.RZ_ROW and r != O.URZ_ROW:
        regs[w, r, l] = np.uint32(v & M32)


@njit(cache=True)
def _put64(regs, w, r, l, v):
    """Write the 64-bit ``v`` to the register pair R(r+1):R(r) of lane ``l`` (dropped for RZ/URZ)."""
    if r != O.RZ_ROW and r != O.URZ_ROW:
        regs[w, r, l] = np.uint32(v & M32)
        regs[w, r + 1, l] = np.uint32((v >> 32) & M32)


@njit(cache=True)
def _putw(regs, w, r, l, v, width):
    """Write a ``width``-byte result: a register pair for 8 bytes, else one register."""
    if width == 8:
        _put64(regs, w, r, l, v)
    else:
        _put(regs, w, r, l, v)


@njit(cache=True)
def _plane(pm, w, slot, flag):
    """Lane mask of predicate ``slot``, complemented for ``!P``."""
    return ~pm[w, slot] & FULL if flag & O.F_NOT else pm[w, slot]


@njit(cache=True)
def _carry_in(pm, w, k, slot, flag):
    """Optional carry-in predicate operand (IADD3, IMAD.X, LEA.X): its lane mask, 0 when absent."""
    return _plane(pm, w, slot, flag) if k == O.K_PRED else 0


@njit(cache=True)
def _set_pred(pm, w, slot, bits, ex):
    """Predicate write: ``slot`` takes ``bits`` in the lanes of ``ex`` and keeps its other lanes;
    writes to PT/UPT are dropped."""
    if slot != O.PT_SLOT and slot != O.UPT_SLOT:
        pm[w, slot] = (pm[w, slot] & ~ex & FULL) | (bits & ex)


@njit(cache=True)
def _set_pred_opnd(okind, oreg, pm, w, pc, j, bits, ex):
    """Predicate write to operand ``j`` when that operand is present (optional predicate results such
    as IADD3's carry-outs or ISETP's second result)."""
    if okind[pc, j] == O.K_PRED:
        _set_pred(pm, w, oreg[pc, j], bits, ex)


@njit(cache=True)
def _fmod(x, flag):
    """Apply operand modifiers |x| and -x to a float."""
    if flag & O.F_ABS:
        x = abs(x)
    if flag & O.F_NEG:
        x = -x
    return x


@njit(cache=True)
def _imod(x, flag):
    """Apply integer operand modifiers: -x (two's complement), ~x (bitwise not), |x|."""
    if flag & O.F_ABS:
        x = abs(s32(x)) & M32
    if flag & O.F_NEG:
        x = (-x) & M32
    if flag & O.F_NOT:
        x = (~x) & M32
    return x


@njit(cache=True)
def _f32src(bits, flag, ftz, su, sf):
    """A float32 source operand from its bits: ``|x|``/``-x`` applied, denormals flushed with ``.FTZ``."""
    x = _fmod(f32_of(bits, su, sf), flag)
    return ftz32(x) if ftz else x


@njit(cache=True, inline="always")
def _fsrc(bits, width, flag, ftz, su, sf, sq, sd):
    """A float source operand of ``width`` bytes (F2F/F2I: 8 double, 2 half, else single) with its
    modifiers applied; ``.FTZ`` flushes single-precision denormals."""
    if width == 8:
        return _fmod(f64_of(bits, sq, sd), flag)
    if width == 2:
        return _fmod(h2f(bits & 0xFFFF), flag)
    return _f32src(bits & M32, flag, ftz, su, sf)


@njit(cache=True, inline="always")
def _fbits(x, width, rnd, su, sf, sq, sd):
    """Bits of ``x`` as a float of ``width`` bytes (I2F/F2F results): double, half (nearest even) or
    single rounded with mode ``rnd``."""
    if width == 8:
        return bits_of_f64(x, sq, sd)
    if width == 2:
        return f2h(x)
    return round_f32_bits(x, rnd, su, sf)


@njit(cache=True)
def _sat(x):
    """``.SAT``: clamp to [0, 1], NaN → 0."""
    return 0.0 if x != x or x < 0.0 else (1.0 if x > 1.0 else x)


@njit(cache=True)
def _minmax(x, y, take_min, order_zeros):
    """FMNMX/DMNMX: the smaller (``take_min``) or larger operand; a NaN operand yields the other;
    with ``order_zeros`` (FMNMX) −0 counts as smaller than +0."""
    if x != x:
        return y
    if y != y:
        return x
    if take_min:
        return x if x < y or (order_zeros and x == y and math.copysign(1.0, x) < 0) else y
    return x if x > y or (order_zeros and x == y and math.copysign(1.0, x) > 0) else y


@njit(cache=True)
def _half_pair(x, flag, su, sf):
    """The two fp16 lanes of a 32-bit operand after its swizzle (``.H0_H0``/``.H1_H1``) and
    ``-``/``|…|`` modifiers, as float64 (lo, hi); a ``.F32`` operand is one float32 used for both."""
    if flag & O.F_F32:
        v = _f32src(x, flag, 0, su, sf)
        return v, v
    lo = h2f(x & 0xFFFF)
    hi = h2f((x >> 16) & 0xFFFF)
    if flag & O.F_H0H0:
        hi = lo
    elif flag & O.F_H1H1:
        lo = hi
    return _fmod(lo, flag), _fmod(hi, flag)


# ---- memory --------------------------------------------------------------------------------------

@njit(cache=True)
def _mem_fault(err, code, ins, tid, addr):
    err[0] = code
    err[1] = ins
    err[2] = tid
    err[3] = addr


@njit(cache=True)
def _gofs(addr, width, alo, ahi):
    """Offset of a global access in the heap, or -1 when it is not inside one allocation. The
    ranges ``[alo[j], ahi[j])``, ``j >= 1``, are ascending and disjoint (``alo[0] == ahi[0]`` is the
    heap's base): a binary search finds the last one starting at or below ``addr`` (a program
    under ``teg trace app`` may hold hundreds of allocations)."""
    lo = 1
    hi = alo.shape[0] - 1
    j = 0
    while lo <= hi:
        mid = (lo + hi) >> 1
        if alo[mid] <= addr:
            j = mid
            lo = mid + 1
        else:
            hi = mid - 1
    if j > 0 and addr + width <= ahi[j]:
        return addr - alo[0]
    return -1


@njit(cache=True)
def _load(m8, m32, off, width, typ):
    """Load ``width`` bytes at byte offset ``off`` (aligned) as raw bits; sub-word loads sign/zero
    extend by ``typ``. Returns up to 64 bits; 128-bit loads copy words directly."""
    if width == 4:
        return np.int64(m32[off >> 2])
    if width == 8:
        return np.int64(m32[off >> 2]) | (np.int64(m32[(off >> 2) + 1]) << 32)
    if width == 1:
        v = np.int64(m8[off])
        if typ == O.T_S8 and v >= 0x80:
            v -= 0x100
        return v & M32
    v = np.int64(m8[off]) | (np.int64(m8[off + 1]) << 8)
    if typ == O.T_S16 and v >= 0x8000:
        v -= 0x10000
    return v & M32


@njit(cache=True)
def _store(m8, m32, off, width, v):
    if width == 4:
        m32[off >> 2] = np.uint32(v & M32)
    elif width == 8:
        m32[off >> 2] = np.uint32(v & M32)
        m32[(off >> 2) + 1] = np.uint32((v >> 32) & M32)
    elif width == 1:
        m8[off] = np.uint8(v & 0xFF)
    else:
        m8[off] = np.uint8(v & 0xFF)
        m8[off + 1] = np.uint8((v >> 8) & 0xFF)


@njit(cache=True)
def _sreg(which, tid, tx, ty, tz, cx, cy, cz, lane, clock):
    """Special register ``which`` (ops.SREGS numbering): thread/block index, lane id and lane
    masks (EQ, LT, LE, GT, GE), the clock (rows traced so far), 0 (SMID, CgaCtaId), 1 (NSMID),
    the warp id."""
    if which == 0:
        return tx
    if which == 1:
        return ty
    if which == 2:
        return tz
    if which == 3:
        return cx
    if which == 4:
        return cy
    if which == 5:
        return cz
    if which == 6:
        return lane
    if which == 7:
        return 1 << lane
    if which == 8:
        return (1 << lane) - 1
    if which == 9:
        return (1 << (lane + 1)) - 1
    if which == 10:
        return (FULL << (lane + 1)) & M32
    if which == 11:
        return (FULL << lane) & M32
    if which == 12:
        return clock & M32
    if which == 13:
        return (clock >> 32) & M32
    if which == 15:
        return 1
    if which == 16:
        return tid >> 5
    return 0


@njit(cache=True)
def _atomic(op, typ, width, old, a, b, su, sf, sq, sd):
    """New memory value of an atomic ``op`` on ``old`` with operands a (and b for CAS)."""
    if op == 0:   # ADD
        if typ == O.T_F32:
            return bits_of_f32(f32_of(old, su, sf) + f32_of(a, su, sf), su, sf)
        if typ == O.T_F64:
            return bits_of_f64(f64_of(old, sq, sd) + f64_of(a, sq, sd), sq, sd)
        return (old + a) & (M32 if width == 4 else -1)
    if op == 1 or op == 2:   # MIN / MAX
        if typ == O.T_F32:
            x, y = f32_of(old, su, sf), f32_of(a, su, sf)
            return a if ((y < x) if op == 1 else (y > x)) else old
        if typ == O.T_S32:
            x, y = s32(old), s32(a)
        elif typ == O.T_S64 or typ == O.T_U64:
            x, y = old, a
            if typ == O.T_U64:
                x, y = old ^ (-0x8000000000000000), a ^ (-0x8000000000000000)
        else:
            x, y = old & M32, a & M32
        return a if ((y < x) if op == 1 else (y > x)) else old
    if op == 3:   # INC: (old >= a) ? 0 : old + 1
        return 0 if (old & M32) >= (a & M32) else (old + 1) & M32
    if op == 4:   # DEC: (old == 0 || old > a) ? a : old - 1
        return a if ((old & M32) == 0 or (old & M32) > (a & M32)) else (old - 1) & M32
    if op == 5:
        return old & a
    if op == 6:
        return old | a
    if op == 7:
        return old ^ a
    if op == 8:
        return a
    if op == 9 or op == 11:   # CAS / CAST: compare a, swap in b
        return b if old == a else old
    return (old + 1) & M32   # POPC.INC: one per lane


# ---- executors: one SASS operation for the lanes of ``ex`` ---------------------------------------
# Common arguments: pc (instruction index), w (warp), ex (lanes that execute: active, guard true;
# all lanes for uniform instructions), m (the row's mask), code (the code table), okind, oreg,
# oval, oflag (the lowered operands), regs, pm. Operand slots are the canonical ones of lower._canonicalize.
# The hottest executors (IMAD, ISETP, FADD/FMUL/FFMA, S2R, LDC, LD/ST/ATOM) spell their per-lane
# operand reads and writes out: written with the helpers above their lane loops measured 8-10%
# slower (benchmarks/emu_speed.py), more than the shared form is worth on the interpreter's main path.

@njit(cache=True)
def _x_mov(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """MOV d, a; MOV.64 (sm_120, m0 = 8) moves a register pair or a 64-bit immediate."""
    k1, r1, v1, _ = _opnd(okind, oreg, oval, oflag, pc, 1)
    r0 = oreg[pc, 0]
    wide = code[pc, O.C_M] == 8
    zero = k1 == O.K_REG and (r1 == O.RZ_ROW or r1 == O.URZ_ROW)
    for l in range(32):
        if (ex >> l) & 1:
            if wide:
                _put64(regs, w, r0, l, 0 if zero else _u64(regs, w, l, k1, r1, v1))
            else:
                _put(regs, w, r0, l, _u32(regs, w, l, k1, r1, v1))


@njit(cache=True)
def _x_iadd3(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """IADD3 d, a, b, c (slots d, a, b, c, po0, po1, ci0, ci1): d = a + b + c + ci0 + ci1 mod 2³²
    (``-x`` two's, ``~x`` one's complement); po0 is set when the sum carries at least 1 out of bit
    31, po1 when it carries 2."""
    r0 = oreg[pc, 0]
    k6, r6, _, f6 = _opnd(okind, oreg, oval, oflag, pc, 6)
    k7, r7, _, f7 = _opnd(okind, oreg, oval, oflag, pc, 7)
    ci0 = _carry_in(pm, w, k6, r6, f6)
    ci1 = _carry_in(pm, w, k7, r7, f7)
    po0, po1 = 0, 0
    if code[pc, O.C_M + 1] == 1:
        # IADD.64 / UIADD3.64 (sm_100+): the same sum over register pairs, carries out of bit 63
        # (summed as two 32-bit halves so that nothing overflows int64)
        for l in range(32):
            if (ex >> l) & 1:
                lo, hi = 0, 0
                for j in range(3):
                    kj, rj, vj, fj = _opnd(okind, oreg, oval, oflag, pc, 1 + j)
                    x = _u64z(regs, w, l, kj, rj, vj)
                    if fj & O.F_NEG or fj & O.F_NOT:
                        x = ~x
                        lo += 1 if fj & O.F_NEG else 0
                    lo += x & M32
                    hi += (x >> 32) & M32
                lo += ((ci0 >> l) & 1) + ((ci1 >> l) & 1)
                hi += lo >> 32
                carry = hi >> 32
                if carry >= 1:
                    po0 |= 1 << l
                if carry >= 2:
                    po1 |= 1 << l
                _put64(regs, w, r0, l, ((hi & M32) << 32) | (lo & M32))
        _set_pred_opnd(okind, oreg, pm, w, pc, 4, po0, ex)
        _set_pred_opnd(okind, oreg, pm, w, pc, 5, po1, ex)
        return
    for l in range(32):
        if (ex >> l) & 1:
            s = 0
            for j in range(3):
                kj, rj, vj, fj = _opnd(okind, oreg, oval, oflag, pc, 1 + j)
                x = _u32(regs, w, l, kj, rj, vj)
                if fj & O.F_NEG:
                    x = (~x & M32) + 1
                elif fj & O.F_NOT:
                    x = ~x & M32
                s += x
            s += ((ci0 >> l) & 1) + ((ci1 >> l) & 1)
            carry = s >> 32
            if carry >= 1:
                po0 |= 1 << l
            if carry >= 2:
                po1 |= 1 << l
            _put(regs, w, r0, l, s)
    _set_pred_opnd(okind, oreg, pm, w, pc, 4, po0, ex)
    _set_pred_opnd(okind, oreg, pm, w, pc, 5, po1, ex)


@njit(cache=True)
def _x_viadd(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """VIADD d, a, b: d = a + b mod 2³²."""
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            a = _imod(_u32(regs, w, l, k1, r1, v1), f1)
            b = _imod(_u32(regs, w, l, k2, r2, v2), f2)
            _put(regs, w, r0, l, a + b)


@njit(cache=True)
def _x_imad(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """IMAD d, a, b, c (slots d, a, b, c, po, ci; m0 0 lo / 1 .HI / 2 .WIDE, m1 .U32, m2 .X):
    d = a·b + c (+ ci with .X) — the low word with carry-out po; .WIDE the 64-bit product plus the
    pair c into the pair d; .HI bits 63…32 of a·b + the pair c."""
    m0, m1, m2, _, _ = _mods(code, pc)
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    k5, r5, _, f5 = _opnd(okind, oreg, oval, oflag, pc, 5)
    r0 = oreg[pc, 0]
    ci = _carry_in(pm, w, k5, r5, f5) if m2 else 0
    po = 0
    for l in range(32):
        if (ex >> l) & 1:
            a = np.int64(regs[w, r1, l]) if k1 == O.K_REG else v1 & M32
            b = np.int64(regs[w, r2, l]) if k2 == O.K_REG else v2 & M32
            a = _imod(a, f1)
            b = _imod(b, f2)
            if m0 == 2:
                if k3 == O.K_REG:
                    c = np.int64(regs[w, r3, l]) | (np.int64(regs[w, r3 + 1, l]) << 32)
                else:
                    c = v3
                if f3 & O.F_NEG:
                    c = -c
                if m1:
                    p = a * b
                else:
                    p = s32(a) * s32(b)
                res = p + c + ((ci >> l) & 1)
                ua = (p & M32) + (c & M32)
                if ((((p >> 32) & M32) + ((c >> 32) & M32) + (ua >> 32)) >> 32) & 1:
                    po |= 1 << l
                if r0 != O.RZ_ROW and r0 != O.URZ_ROW:
                    regs[w, r0, l] = np.uint32(res & M32)
                    regs[w, r0 + 1, l] = np.uint32((res >> 32) & M32)
            elif m0 == 1:
                # IMAD.HI: the addend is the register pair c+1:c; result = bits 63…32 of a*b + c64
                if k3 == O.K_REG:
                    c = (np.int64(regs[w, r3, l]) | (np.int64(regs[w, r3 + 1, l]) << 32)) if r3 != O.RZ_ROW else 0
                else:
                    c = v3
                p = a * b if m1 else s32(a) * s32(b)
                res = ((p + c + ((ci >> l) & 1)) >> 32) & M32
                if r0 != O.RZ_ROW and r0 != O.URZ_ROW:
                    regs[w, r0, l] = np.uint32(res)
            else:
                c = np.int64(regs[w, r3, l]) if k3 == O.K_REG else v3 & M32
                c = _imod(c, f3)
                full = (a * b & M32) + c + ((ci >> l) & 1)
                if full >> 32:
                    po |= 1 << l
                if r0 != O.RZ_ROW and r0 != O.URZ_ROW:
                    regs[w, r0, l] = np.uint32(full & M32)
    if okind[pc, 4] == O.K_PRED:
        slot = oreg[pc, 4]
        if slot != O.PT_SLOT and slot != O.UPT_SLOT:
            pm[w, slot] = (pm[w, slot] & ~ex & FULL) | (po & ex)
    return 0


@njit(cache=True)
def _x_lea(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """LEA d, a, b[, c], shift (slots d, a, b, c, shift, po, ci; m0 .HI, m2 .SX32; .X is the carry-in
    ci): d = (a << shift) + b + ci; .HI shifts the pair c:a and keeps its high word (.SX32: the
    sign extension of a). A negated ``-a`` (not .HI) is the two's complement of the shifted word as
    IADD3 takes it, ``~(a << shift) + 1`` with its +1 in the 33-bit sum, so the carry-out is set
    when ``a << shift`` is 0: nvcc's 64-bit ``p - x`` (``LEA d, P, -lo, b, s`` then ``IADD3.X``/
    ``IMAD.X`` with ``~hi``) needs that carry; a negated ``-b`` likewise."""
    m0, _, m2, _, _ = _mods(code, pc)
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, _ = _opnd(okind, oreg, oval, oflag, pc, 3)
    k6, r6, _, f6 = _opnd(okind, oreg, oval, oflag, pc, 6)
    r0 = oreg[pc, 0]
    ci = _carry_in(pm, w, k6, r6, f6)
    sh = oval[pc, 4] & 31
    po = 0
    neg_a = (f1 & O.F_NEG) != 0 and not m0
    for l in range(32):
        if (ex >> l) & 1:
            a = _u32(regs, w, l, k1, r1, v1) if neg_a else _imod(_u32(regs, w, l, k1, r1, v1), f1)
            b = _u32(regs, w, l, k2, r2, v2)
            b = (~b & M32) + 1 if f2 & O.F_NEG else _imod(b, f2)
            c = _u32(regs, w, l, k3, r3, v3)
            if m0:
                if m2:
                    x = (s32(a) >> (32 - sh)) & M32 if sh > 0 else (M32 if s32(a) < 0 else 0)
                else:
                    x = ((((c & M32) << 32) | a) << sh >> 32) & M32 if sh < 32 else 0
            else:
                x = (a << sh) & M32
                if neg_a:
                    x = (~x & M32) + 1
            s = x + b + ((ci >> l) & 1)
            if s >> 32:
                po |= 1 << l
            _put(regs, w, r0, l, s)
    _set_pred_opnd(okind, oreg, pm, w, pc, 5, po, ex)


@njit(cache=True)
def _x_lop3(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """LOP3 d, a, b, c, lut[, pd] (slots d, a, b, c, lut, pd): d = lut(a, b, c) bitwise; pd is set
    where the result is non-zero."""
    k0, r0, _, _ = _opnd(okind, oreg, oval, oflag, pc, 0)
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    lut = oval[pc, 4] & 0xFF
    pd = 0
    for l in range(32):
        if (ex >> l) & 1:
            res = _lut3(lut, _imod(_u32(regs, w, l, k1, r1, v1), f1), _imod(_u32(regs, w, l, k2, r2, v2), f2),
                        _imod(_u32(regs, w, l, k3, r3, v3), f3))
            if res != 0:
                pd |= 1 << l
            if k0 == O.K_REG:
                _put(regs, w, r0, l, res)
    _set_pred_opnd(okind, oreg, pm, w, pc, 5, pd, ex)


@njit(cache=True)
def _x_plop3(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """PLOP3 pd, pq, a, b, c, lut1, lut2: pd = lut1(a, b, c), pq = lut2(a, b, c) on predicates."""
    pa = _plane(pm, w, oreg[pc, 2], oflag[pc, 2])
    pb = _plane(pm, w, oreg[pc, 3], oflag[pc, 3])
    pc_ = _plane(pm, w, oreg[pc, 4], oflag[pc, 4])
    for j in range(2):
        _set_pred_opnd(okind, oreg, pm, w, pc, j, _lut3(oval[pc, 5 + j] & 0xFF, pa, pb, pc_), ex)


@njit(cache=True)
def _x_shf(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """SHF d, lo, shift, hi (m0 .L, m1 .HI, m2 signed, m3 64-bit type, m4 .W): shift the pair
    hi:lo left or right (arithmetically when signed) and keep the low or high word; .W wraps the
    shift to 5 bits, otherwise it clamps at the type's width."""
    m0, m1, m2, m3, m4 = _mods(code, pc)
    k1, r1, v1, _ = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, _ = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, _ = _opnd(okind, oreg, oval, oflag, pc, 3)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            lo = _u32(regs, w, l, k1, r1, v1)
            s = _u32(regs, w, l, k2, r2, v2)
            hi = _u32(regs, w, l, k3, r3, v3)
            if m4:
                s = s & 31
            else:
                lim = 64 if m3 else 32
                s = lim if s > lim else s
            val = (hi << 32) | lo
            if m0:
                res = (val << s) if s < 64 else 0
            elif m2:
                res = ((s32(hi) << 32) | lo) >> (s if s < 64 else 63)
            else:
                res = np.int64(np.uint64(val) >> np.uint64(s)) if s < 64 else 0
            _put(regs, w, r0, l, (res >> 32) if m1 else res)


@njit(cache=True)
def _x_imnmx(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """IMNMX d, a, b, p and VIADDMNMX d, a, b, c, p (sm_90, the add-then-clamp of CUDA's __viaddmax /
    __viaddmin), m0 .U32: d = min(x, y) where p is true, max(x, y) elsewhere, with x, y = a, b for
    IMNMX and a + b mod 2³², c for VIADDMNMX, compared as signed (unsigned with .U32) 32-bit
    integers."""
    m0 = code[pc, O.C_M]
    wide = code[pc, O.C_M + 1] == 1         # IMNMX.S64 / .U64: register pairs
    add = code[pc, O.C_OP] == O.OP_VIADDMNMX
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    _, rp, _, fp = _opnd(okind, oreg, oval, oflag, pc, 4 if add else 3)
    r0 = oreg[pc, 0]
    take_min = _plane(pm, w, rp, fp)
    for l in range(32):
        if (ex >> l) & 1:
            if wide:
                x, y = _u64z(regs, w, l, k1, r1, v1), _u64z(regs, w, l, k2, r2, v2)
                if m0:          # unsigned: compare with the sign bits flipped
                    lt = (x ^ _SIGN64) < (y ^ _SIGN64)
                else:
                    lt = x < y
                _put64(regs, w, r0, l, (x if lt else y) if (take_min >> l) & 1 else (y if lt else x))
                continue
            a = _imod(_u32(regs, w, l, k1, r1, v1), f1)
            b = _imod(_u32(regs, w, l, k2, r2, v2), f2)
            if add:
                a = (a + b) & M32
                b = _imod(_u32(regs, w, l, k3, r3, v3), f3)
            x, y = (a, b) if m0 else (s32(a), s32(b))
            res = (x if x < y else y) if (take_min >> l) & 1 else (x if x > y else y)
            _put(regs, w, r0, l, res)


@njit(cache=True)
def _x_popc(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """POPC (bit count), IABS (|a|), BREV (bit reverse), FLO (m0 .SH, m1 signed: index of the
    highest set bit — of ~a for a negative signed a —, 0xFFFFFFFF when none; .SH counts from bit
    31) of d, a."""
    op = code[pc, O.C_OP]
    m0, m1, _, _, _ = _mods(code, pc)
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            a = _imod(_u32(regs, w, l, k1, r1, v1), f1)
            if op == O.OP_POPC:
                res = _popc(a)
            elif op == O.OP_IABS:
                res = abs(s32(a))
            elif op == O.OP_BREV:
                res = 0
                for j in range(32):
                    res |= ((a >> j) & 1) << (31 - j)
            else:
                x = ~a & M32 if m1 and s32(a) < 0 else a
                res = M32
                for j in range(31, -1, -1):
                    if (x >> j) & 1:
                        res = j
                        break
                if m0 and res != M32:
                    res = 31 - res
            _put(regs, w, r0, l, res)


@njit(cache=True)
def _x_bmsk(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """BMSK d, pos, width: ``width`` ones starting at bit ``pos`` (``.W`` wraps both to 5 bits,
    else they clamp at 32); SGXT d, a, bits: sign- (``.U32``: zero-) extend the low ``bits``."""
    op = code[pc, O.C_OP]
    m0, m1, _, _, _ = _mods(code, pc)
    k1, r1, v1, _ = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, _ = _opnd(okind, oreg, oval, oflag, pc, 2)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            a = _u32(regs, w, l, k1, r1, v1)
            b = _u32(regs, w, l, k2, r2, v2)
            if op == O.OP_BMSK:
                pos = a & 31 if m0 else (a if a < 32 else 32)
                width = b & 31 if m0 else (b if b < 32 else 32)
                res = ((1 << width) - 1) << pos
            else:
                bits = b & 31 if m1 else (b if b < 32 else 32)
                if bits == 0:
                    res = 0
                elif bits >= 32:
                    res = a
                else:
                    res = a & ((1 << bits) - 1)
                    if not m0 and (res >> (bits - 1)) & 1:
                        res |= (M32 << bits) & M32
            _put(regs, w, r0, l, res)


@njit(cache=True)
def _half_of(regs, w, r, l, i):
    """fp16 element ``i`` of a fragment held two per register from row ``r`` (element 2j in the low
    half of R(r+j)), as float64."""
    return h2f((np.int64(regs[w, r + i // 2, l]) >> (16 * (i & 1))) & 0xFFFF)


@njit(cache=True)
def _x_hmma(pc, w, code, oreg, regs, su, sf, fs):
    """HMMA.16816 / HMMA.1688 (D = A·B + C, fp16 inputs, F32 or F16 accumulators) for the whole warp,
    with the fragment layouts of PTX ``mma.m16n8k16`` / ``mma.m16n8k8``: lane ``l`` holds, with
    g = l/4 and t = l%4, A elements (g or g+8, 2t+j [+8]), B elements (2t+j [+8], g) and C/D
    elements (g or g+8, 2t+j). Products are summed in double precision and rounded once. ``fs``: 512
    doubles of scratch for A (16×16), B (16×8) and C (16×8), row-major one after another (the
    interpreter allocates nothing per instruction)."""
    k = code[pc, O.C_M]
    f32acc = code[pc, O.C_M + 1]
    rd, ra, rb, rc = oreg[pc, 0], oreg[pc, 1], oreg[pc, 2], oreg[pc, 3]
    for i in range(512):
        fs[i] = 0.0
    for l in range(32):
        g = l >> 2
        t = l & 3
        for i in range(k // 2):
            fs[(g + (8 if (i % 4) >= 2 else 0)) * 16 + 2 * t + (i & 1) + (8 if i >= 4 else 0)] = _half_of(regs, w, ra, l, i)
        for i in range(k // 4):
            fs[256 + (2 * t + (i & 1) + (8 if i >= 2 else 0)) * 8 + g] = _half_of(regs, w, rb, l, i)
        if rc != O.RZ_ROW:
            for i in range(4):
                if f32acc:
                    v = f32_of(np.int64(regs[w, rc + i, l]), su, sf)
                else:
                    v = _half_of(regs, w, rc, l, i)
                fs[384 + (g + (8 if i >= 2 else 0)) * 8 + 2 * t + (i & 1)] = v
    for l in range(32):
        g = l >> 2
        t = l & 3
        packed = 0
        for i in range(4):
            row = g + (8 if i >= 2 else 0)
            col = 2 * t + (i & 1)
            acc = fs[384 + row * 8 + col]
            for j in range(k):
                acc += fs[row * 16 + j] * fs[256 + j * 8 + col]
            if f32acc:
                _put(regs, w, rd + i, l, bits_of_f32(acc, su, sf))
            else:
                packed |= f2h(acc) << (16 * (i & 1))
                if i & 1:
                    _put(regs, w, rd + i // 2, l, packed)
                    packed = 0


@njit(cache=True)
def _x_prmt(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """PRMT d, a, sel, b (default mode): byte j of d is byte sel.nibble[j] & 7 of the pair b:a,
    replicated sign bit when the nibble's bit 3 is set."""
    k1, r1, v1, _ = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, _ = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, _ = _opnd(okind, oreg, oval, oflag, pc, 3)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            sel = _u32(regs, w, l, k2, r2, v2)
            src = (_u32(regs, w, l, k3, r3, v3) << 32) | _u32(regs, w, l, k1, r1, v1)
            res = 0
            for j in range(4):
                nib = (sel >> (4 * j)) & 0xF
                byte = (src >> (8 * (nib & 7))) & 0xFF
                if nib & 8:
                    byte = 0xFF if byte & 0x80 else 0
                res |= byte << (8 * j)
            _put(regs, w, r0, l, res)


@njit(cache=True)
def _x_sel(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """SEL/FSEL d, a, b, p: d = p ? a : b (FSEL's ``-x`` flips the sign bit)."""
    fsel = code[pc, O.C_OP] == O.OP_FSEL
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    _, r3, _, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    r0 = oreg[pc, 0]
    p = _plane(pm, w, r3, f3)
    for l in range(32):
        if (ex >> l) & 1:
            a = _u32(regs, w, l, k1, r1, v1)
            b = _u32(regs, w, l, k2, r2, v2)
            if fsel:
                if f1 & O.F_NEG:
                    a ^= 0x80000000
                if f2 & O.F_NEG:
                    b ^= 0x80000000
            else:
                a = _imod(a, f1)
                b = _imod(b, f2)
            _put(regs, w, r0, l, a if (p >> l) & 1 else b)


@njit(cache=True)
def _x_isetp(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd):
    """ISETP/FSETP/DSETP pd, pq, a, b, pin[, pex] (m0 comparison, m1 boolean, m2 .U32, m3 .EX,
    m4 .FTZ): c = a cmp b; pd = c bool pin, pq = ¬c bool pin. Floats compare unordered-aware;
    ISETP.EX compares the high words of a multi-word value, ``pex`` being the lower words' result."""
    op = code[pc, O.C_OP]
    m0, m1, m2, m3, m4 = _mods(code, pc)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    pin = _plane(pm, w, oreg[pc, 4], oflag[pc, 4])
    pex = _plane(pm, w, oreg[pc, 5], oflag[pc, 5]) if m3 else 0
    rp, rq = 0, 0
    for l in range(32):
        if (ex >> l) & 1:
            nan = False
            if op == O.OP_DSETP:
                if k2 == O.K_REG:
                    a = np.int64(regs[w, r2, l]) | (np.int64(regs[w, r2 + 1, l]) << 32)
                else:
                    a = v2
                if k3 == O.K_REG:
                    b = np.int64(regs[w, r3, l]) | (np.int64(regs[w, r3 + 1, l]) << 32)
                else:
                    b = v3
                x = _fmod(f64_of(a, sq, sd), f2)
                y = _fmod(f64_of(b, sq, sd), f3)
                nan = x != x or y != y
            else:
                a = np.int64(regs[w, r2, l]) if k2 == O.K_REG else v2 & M32
                b = np.int64(regs[w, r3, l]) if k3 == O.K_REG else v3 & M32
                if op == O.OP_FSETP:
                    x = _fmod(f32_of(a, su, sf), f2)
                    y = _fmod(f32_of(b, su, sf), f3)
                    if m4:
                        x = ftz32(x)
                        y = ftz32(y)
                    nan = x != x or y != y
                else:
                    a = _imod(a, f2)
                    b = _imod(b, f3)
                    if m2:
                        x, y = np.float64(a), np.float64(b)
                    else:
                        x, y = np.float64(s32(a)), np.float64(s32(b))
            lt, eq, gt = x < y, x == y, x > y
            if m3 and op == O.OP_ISETP:
                prev = (pex >> l) & 1 == 1
                base = m0
                if base == 2:
                    c = eq and prev
                elif base == 5:
                    c = (not eq) or prev
                elif base == 1 or base == 4:
                    c = (lt if base == 1 else gt) or (eq and prev)
                elif base == 3 or base == 6:
                    c = (lt if base == 3 else gt) or (eq and prev)
                else:
                    c = _cmp(m0, lt, eq, gt, False)
            else:
                c = _cmp(m0, lt, eq, gt, nan)
            pi = (pin >> l) & 1 == 1
            if _bool(m1, c, pi):
                rp |= 1 << l
            if _bool(m1, not c, pi):
                rq |= 1 << l
    s0 = oreg[pc, 0]
    if okind[pc, 0] == O.K_PRED and s0 != O.PT_SLOT and s0 != O.UPT_SLOT:
        pm[w, s0] = (pm[w, s0] & ~ex & FULL) | (rp & ex)
    s1 = oreg[pc, 1]
    if okind[pc, 1] == O.K_PRED and s1 != O.PT_SLOT and s1 != O.UPT_SLOT:
        pm[w, s1] = (pm[w, s1] & ~ex & FULL) | (rq & ex)
    return 0


@njit(cache=True)
def _pr_mask(regs, w, l, k, r, v):
    """The mask operand of P2R/R2P: the immediate when one is given, else the register."""
    return v & M32 if k == O.K_IMM else np.int64(regs[w, r, l])


@njit(cache=True)
def _x_p2r(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """P2R d, PR, a, mask: d = (a & ~mask) | (P6…P0 as bits 6…0 & mask) (UP6…UP0 for a uniform d)."""
    k2, r2, v2, _ = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, _ = _opnd(okind, oreg, oval, oflag, pc, 3)
    r0 = oreg[pc, 0]
    base = O.UP_SLOT0 if r0 >= O.UR_ROW0 else 0
    for l in range(32):
        if (ex >> l) & 1:
            bits = 0
            for j in range(7):
                bits |= ((pm[w, base + j] >> l) & 1) << j
            a = _u32(regs, w, l, k2, r2, v2)
            mk = _pr_mask(regs, w, l, k3, r3, v3)
            _put(regs, w, r0, l, (a & ~mk) | (bits & mk))


@njit(cache=True)
def _x_r2p(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """R2P PR, a, mask: Pj = bit j of a for every bit j (0…6) set in mask; the others keep."""
    k1, r1, v1, _ = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, _ = _opnd(okind, oreg, oval, oflag, pc, 2)
    for j in range(7):
        newbits = 0
        for l in range(32):
            if (ex >> l) & 1:
                a = _u32(regs, w, l, k1, r1, v1)
                if (_pr_mask(regs, w, l, k2, r2, v2) >> j) & 1:
                    newbits |= ((a >> j) & 1) << l
                else:
                    newbits |= ((pm[w, j] >> l) & 1) << l
        _set_pred(pm, w, j, newbits, ex)


@njit(cache=True)
def _x_fadd(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd):
    """FADD d = a + b, FMUL d = a·b·2^m3 (.D2/.D4/.D8: m3 = -1/-2/-3, .M2/.M4/.M8: 1/2/3; the exact
    product is scaled, then rounded once), FFMA d = a·b + c (fused: one rounding,
    numerics.fma_f32_bits) in float32 (m0 rounding, m1 .FTZ on inputs and result, m2 .SAT). A
    float32 sum or product is computed exactly in double (53 >= 2*24 + 2 bits), so rounding it to
    float32 is the only rounding."""
    op = code[pc, O.C_OP]
    m0, m1, m2, m3, _ = _mods(code, pc)
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            a = np.int64(regs[w, r1, l]) if k1 == O.K_REG else v1 & M32
            b = np.int64(regs[w, r2, l]) if k2 == O.K_REG else v2 & M32
            x = _fmod(f32_of(a, su, sf), f1)
            y = _fmod(f32_of(b, su, sf), f2)
            if m1:
                x = ftz32(x)
                y = ftz32(y)
            if op == O.OP_FADD:
                res = round_f32_bits(x + y, m0, su, sf)
            elif op == O.OP_FMUL:
                res = round_f32_bits(x * y * (2.0 ** m3), m0, su, sf)
            else:
                c = np.int64(regs[w, r3, l]) if k3 == O.K_REG else v3 & M32
                z = _fmod(f32_of(c, su, sf), f3)
                if m1:
                    z = ftz32(z)
                res = fma_f32_bits(x, y, z, m0, su, sf, sq, sd)
            if m1 or m2:
                fr = f32_of(res, su, sf)
                if m1:
                    fr = ftz32(fr)
                if m2:
                    fr = 0.0 if fr != fr or fr < 0.0 else (1.0 if fr > 1.0 else fr)
                res = bits_of_f32(fr, su, sf)
            if r0 != O.RZ_ROW and r0 != O.URZ_ROW:
                regs[w, r0, l] = np.uint32(res)
    return 0


@njit(cache=True)
def _x_fmnmx(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf):
    """FMNMX d, a, b, p: float32 min where p is true, max elsewhere."""
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    _, r3, _, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    r0 = oreg[pc, 0]
    p = _plane(pm, w, r3, f3)
    for l in range(32):
        if (ex >> l) & 1:
            x = _f32src(_u32(regs, w, l, k1, r1, v1), f1, 0, su, sf)
            y = _f32src(_u32(regs, w, l, k2, r2, v2), f2, 0, su, sf)
            _put(regs, w, r0, l, bits_of_f32(_minmax(x, y, (p >> l) & 1, True), su, sf))


@njit(cache=True)
def _x_mufu(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd):
    """MUFU.fn d, a (m0 = fn, ops.MUFU), computed in double precision and rounded once; RCP64H /
    RSQ64H take and give the high word of a double."""
    m0 = code[pc, O.C_M]
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            a = _u32(regs, w, l, k1, r1, v1)
            if m0 == 7 or m0 == 8:   # RCP64H / RSQ64H: high word of a double
                x = _fmod(f64_of(a << 32, sq, sd), f1)
                y = 1.0 / x if m0 == 7 else (1.0 / math.sqrt(x) if x > 0 else (np.inf if x == 0 else np.nan))
                res = bits_of_f64(y, sq, sd) >> 32
            else:
                x = _f32src(a, f1, 0, su, sf)
                if m0 == 0:
                    y = 1.0 / x if x != 0 else math.copysign(np.inf, x)
                elif m0 == 1:
                    y = 1.0 / math.sqrt(x) if x > 0 else (math.copysign(np.inf, x) if x == 0 else np.nan)
                elif m0 == 2:
                    y = math.sqrt(x) if x >= 0 else np.nan
                elif m0 == 3:
                    y = 2.0 ** x if x < 1024 else np.inf
                elif m0 == 4:
                    y = math.log2(x) if x > 0 else (-np.inf if x == 0 else np.nan)
                elif m0 == 5:
                    y = math.sin(x * 2.0 * math.pi) if abs(x) != np.inf else np.nan
                elif m0 == 6:
                    y = math.cos(x * 2.0 * math.pi) if abs(x) != np.inf else np.nan
                else:
                    y = math.tanh(x)
                res = bits_of_f32(y, su, sf)
            _put(regs, w, r0, l, res)


@njit(cache=True)
def _x_fchk(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """FCHK pd, a, b: true when a/b needs the slow path (special operands, a zero or denormal
    numerator or divisor, or an exponent difference the fast reciprocal path cannot handle). A zero
    numerator must go there: the fast path's first product a*rcp(b) is added to +0 (RZ), which turns
    0 / negative into +0 instead of -0; Nsight Compute's counts of Rodinia gaussian's Fan1 show the
    extra instructions (44 per warp whose column holds a zero), and on an H200 0/1.4 and -0/1.4 cost
    252 cycles per dependent division against 49 for 1/1.4 (2^-103/1.4: 263)."""
    k1, r1, v1, _ = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, _ = _opnd(okind, oreg, oval, oflag, pc, 2)
    res = 0
    for l in range(32):
        if (ex >> l) & 1:
            a = _u32(regs, w, l, k1, r1, v1)
            b = _u32(regs, w, l, k2, r2, v2)
            ea = (a >> 23) & 0xFF
            eb = (b >> 23) & 0xFF
            slow = eb == 0 or eb == 255 or ea == 255 or ea == 0
            if not slow:
                diff = ea - eb
                slow = diff >= 126 or diff <= -126 or eb >= 253 or ea <= 24
            if slow:
                res |= 1 << l
    _set_pred(pm, w, oreg[pc, 0], res, ex)


@njit(cache=True)
def _x_f2f(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd):
    """Conversions d, a: I2F (m0 dst bytes, m1 src bytes, m2 signed, m3 rounding), F2I (m0 dst
    bytes, m1 signed, m2 src bytes, m3 rounding, m4 .FTZ), FRND (m0 rounding, m1 .F64: round to an
    integral float), F2F (m0 dst bytes, m1 src bytes, m2 rounding, m3 .FTZ). 8-byte results fill a
    register pair."""
    op = code[pc, O.C_OP]
    m0, m1, m2, m3, m4 = _mods(code, pc)
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            a = _u64(regs, w, l, k1, r1, v1)
            width = 4
            if op == O.OP_I2F:
                if m1 == 8:
                    x = np.float64(a) if m2 else (np.float64(a) if a >= 0 else np.float64(a & 0x7FFFFFFFFFFFFFFF) + 9.223372036854775808e18)
                else:
                    bits = a & ((1 << (8 * m1)) - 1)
                    if m2 and bits >> (8 * m1 - 1):
                        bits -= 1 << (8 * m1)
                    x = np.float64(bits)
                out = _fbits(x, m0, m3, su, sf, sq, sd)
                width = m0
            elif op == O.OP_F2I:
                out = f2i(_fsrc(a, m2, f1, m4, su, sf, sq, sd), m3, m0, m1)
                width = m0
            elif op == O.OP_FRND:
                width = 8 if m1 else 4
                x = round_int(_fsrc(a, width, f1, 0, su, sf, sq, sd), m0)
                out = bits_of_f64(x, sq, sd) if m1 else bits_of_f32(x, su, sf)
            else:
                out = _fbits(_fsrc(a, m1, f1, m3, su, sf, sq, sd), m0, m2, su, sf, sq, sd)
                if m3 and m0 != 8 and m0 != 2:
                    out = bits_of_f32(ftz32(f32_of(out, su, sf)), su, sf)
                width = m0
            _putw(regs, w, r0, l, out, width)


@njit(cache=True)
def _x_dadd(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, sq, sd):
    """DADD/DMUL/DFMA/DMNMX on register pairs (m0 rounding): the double result is rounded to
    nearest, then moved one ulp as the exact residual of the operation and the mode require."""
    op = code[pc, O.C_OP]
    m0 = code[pc, O.C_M]
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    r0 = oreg[pc, 0]
    p = _plane(pm, w, r3, f3) if op == O.OP_DMNMX else 0
    for l in range(32):
        if (ex >> l) & 1:
            x = _fmod(f64_of(_u64(regs, w, l, k1, r1, v1), sq, sd), f1)
            y = _fmod(f64_of(_u64(regs, w, l, k2, r2, v2), sq, sd), f2)
            if op == O.OP_DADD:
                d = x + y
                bb = d - x
                resid = (x - (d - bb)) + (y - bb)
            elif op == O.OP_DMUL:
                d = x * y
                resid = fma(x, y, -d)
            elif op == O.OP_DFMA:
                z = _fmod(f64_of(_u64(regs, w, l, k3, r3, v3), sq, sd), f3)
                d = fma(x, y, z)
                resid = fma(x, y, z - d) if m0 != 0 else 0.0
            else:
                resid = 0.0
                d = _minmax(x, y, (p >> l) & 1, False)
            if m0 != 0 and d == d and abs(d) != np.inf:
                d = adjust_f64(d, resid, m0)
            _put64(regs, w, r0, l, bits_of_f64(d, sq, sd))


@njit(cache=True)
def _x_hadd2(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf):
    """HADD2/HMUL2/HFMA2 d, a, b[, c] on fp16 pairs (m0 .F32: the low lane as one float32, m2
    .SAT): each half is computed exactly (or fused) in double precision and rounded once."""
    op = code[pc, O.C_OP]
    m0, _, m2, _, _ = _mods(code, pc)
    k1, r1, v1, f1 = _opnd(okind, oreg, oval, oflag, pc, 1)
    k2, r2, v2, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, f3 = _opnd(okind, oreg, oval, oflag, pc, 3)
    r0 = oreg[pc, 0]
    for l in range(32):
        if (ex >> l) & 1:
            al, ah = _half_pair(_u32(regs, w, l, k1, r1, v1), f1, su, sf)
            bl, bh = _half_pair(_u32(regs, w, l, k2, r2, v2), f2, su, sf)
            if op == O.OP_HADD2:
                dl, dh = al + bl, ah + bh
            elif op == O.OP_HMUL2:
                dl, dh = al * bl, ah * bh
            else:
                cl, ch = _half_pair(_u32(regs, w, l, k3, r3, v3), f3, su, sf)
                dl, dh = fma(al, bl, cl), fma(ah, bh, ch)
            if m2:
                dl, dh = _sat(dl), _sat(dh)
            _put(regs, w, r0, l, bits_of_f32(dl, su, sf) if m0 else f2h(dl) | (f2h(dh) << 16))


@njit(cache=True)
def _x_s2r(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, block_xyz, cx, cy, cz, cnt):
    """S2R/S2UR d, SR and CS2R d, SR (m0 = 8: the 64-bit pair, e.g. SR_CLOCKLO:HI; SRZ reads 0)."""
    op = code[pc, O.C_OP]
    m0 = code[pc, O.C_M]
    k1 = okind[pc, 1]
    r0 = oreg[pc, 0]
    v1 = oval[pc, 1]
    bx, by = block_xyz[0], block_xyz[1]
    for l in range(32):
        if (ex >> l) & 1:
            t = w * 32 + l
            tx = t % bx
            ty = (t // bx) % by
            tz = t // (bx * by)
            v = _sreg(v1, t, tx, ty, tz, cx, cy, cz, l, cnt[0] + cnt[2]) if k1 == O.K_SREG else 0
            if op == O.OP_CS2R and v1 == 14:
                v = 0
            if r0 != O.RZ_ROW and r0 != O.URZ_ROW:
                regs[w, r0, l] = np.uint32(v & M32)
                if op == O.OP_CS2R and m0 == 8:
                    hi = _sreg(13, t, tx, ty, tz, cx, cy, cz, l, cnt[0] + cnt[2]) if v1 == 12 else 0
                    regs[w, r0 + 1, l] = np.uint32(hi)
    return 0


@njit(cache=True)
def _x_ldc(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, cb32, err):
    """LDC d, c[bank][off] (resolved to an immediate at launch) or c[0][R+off] (bounds checked;
    m0 bytes: 1, 2, 4, 8, or 16 into four registers, the form LDCU.128 is lowered to). Returns 0,
    or the error code after recording the fault."""
    m0 = code[pc, O.C_M]
    k1 = okind[pc, 1]
    r0 = oreg[pc, 0]
    r1 = oreg[pc, 1]
    v1 = oval[pc, 1]
    f1 = oflag[pc, 1]
    # d, c[bank][off] (resolved to an immediate) or c[bank][R+off]
    for l in range(32):
        if (ex >> l) & 1:
            if k1 == O.K_CIDX:
                bank = f1 >> 24
                off = np.int64(regs[w, r1, l]) + v1
                if bank != 0 or off < 0 or off + m0 > cb32.shape[0] * 4 or off % 4 != 0 and m0 >= 4:
                    _mem_fault(err, E_CONST, pc, w * 32 + l, off)
                    return err[0]
                if m0 == 16:
                    if r0 != O.RZ_ROW and r0 != O.URZ_ROW:
                        for q in range(4):
                            regs[w, r0 + q, l] = cb32[(off >> 2) + q]
                    continue
                if m0 >= 4:
                    lo = np.int64(cb32[off >> 2])
                    hi = np.int64(cb32[(off >> 2) + 1]) if m0 == 8 else 0
                else:
                    word = np.int64(cb32[off >> 2]) >> (8 * (off & 3))
                    lo = word & (0xFF if m0 == 1 else 0xFFFF)
                    hi = 0
            else:
                lo = v1 & M32
                hi = (v1 >> 32) & M32
            if r0 != O.RZ_ROW and r0 != O.URZ_ROW:
                regs[w, r0, l] = np.uint32(lo)
                if m0 == 8:
                    regs[w, r0 + 1, l] = np.uint32(hi)
    return 0


@njit(cache=True)
def _x_shfl(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, v0, v1):
    """SHFL.mode pd, d, a, b, c (m0 0 IDX, 1 UP, 2 DOWN, 3 BFLY): d = a of the source lane chosen by
    b within the segment and clamp that c encodes; pd is true where that lane is in range (else the
    lane reads its own a)."""
    m0 = code[pc, O.C_M]
    k2, r2, v2, _ = _opnd(okind, oreg, oval, oflag, pc, 2)
    k3, r3, v3, _ = _opnd(okind, oreg, oval, oflag, pc, 3)
    k4, r4, v4, _ = _opnd(okind, oreg, oval, oflag, pc, 4)
    r1 = oreg[pc, 1]
    pd = 0
    for l in range(32):
        v0[l] = _u32(regs, w, l, k2, r2, v2)
    for l in range(32):
        if (ex >> l) & 1:
            b = _u32(regs, w, l, k3, r3, v3) & 0x1F
            c = _u32(regs, w, l, k4, r4, v4)
            segmask = (c >> 8) & 0x1F
            min_lane = l & segmask
            max_lane = min_lane | (c & 0x1F & ~segmask)
            if m0 == 1:
                j = l - b
                ok = j >= max_lane
            else:
                j = l + b if m0 == 2 else (l ^ b if m0 == 3 else min_lane | (b & ~segmask & 0x1F))
                ok = j <= max_lane
            if ok:
                pd |= 1 << l
            v1[l] = v0[(j if ok else l) & 31]
    for l in range(32):
        if (ex >> l) & 1:
            _put(regs, w, r1, l, v1[l])
    _set_pred_opnd(okind, oreg, pm, w, pc, 0, pd, ex)


@njit(cache=True)
def _x_vote(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """VOTE/VOTEU.mode d, pd, pin (m0 ANY/ALL/EQ) over the lanes that execute (active and guard
    true): d = the ballot of pin, pd = the vote; VOTEU writes every lane of its uniform results."""
    m0 = code[pc, O.C_M]
    k0, r0, _, _ = _opnd(okind, oreg, oval, oflag, pc, 0)
    _, r2, _, f2 = _opnd(okind, oreg, oval, oflag, pc, 2)
    ballot = _plane(pm, w, r2, f2) & m
    if m0 == 0:
        res = ballot != 0
    elif m0 == 1:
        res = ballot == m
    else:
        res = ballot == 0 or ballot == m
    wr = (FULL if m != 0 else 0) if code[pc, O.C_UNIFORM] else m
    if k0 == O.K_REG:
        for l in range(32):
            if (wr >> l) & 1:
                _put(regs, w, r0, l, ballot)
    _set_pred_opnd(okind, oreg, pm, w, pc, 1, FULL if res else 0, wr)


@njit(cache=True)
def _x_redux(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """REDUX.op d, a (m0 SUM/MIN/MAX/AND/OR/XOR, m1 signed): the reduction of a over the lanes of
    ``m`` into the uniform register d."""
    m0, m1, _, _, _ = _mods(code, pc)
    r0, r1 = oreg[pc, 0], oreg[pc, 1]
    acc = 0
    first = True
    for l in range(32):
        if (m >> l) & 1:
            a = np.int64(regs[w, r1, l])
            x = s32(a) if m1 else a
            if first:
                acc = x
                first = False
            elif m0 == 0:
                acc = (acc + x) & M32
            elif m0 == 1:
                acc = x if x < acc else acc
            elif m0 == 2:
                acc = x if x > acc else acc
            elif m0 == 3:
                acc &= x
            elif m0 == 4:
                acc |= x
            else:
                acc ^= x
    if m != 0:
        for l in range(32):
            _put(regs, w, r0, l, acc)


@njit(cache=True)
def _x_r2ur(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm):
    """R2UR d, a: the uniform register d takes a from the lowest lane of ``m``."""
    k1, r1, v1, _ = _opnd(okind, oreg, oval, oflag, pc, 1)
    r0 = oreg[pc, 0]
    if m != 0 and r0 != O.URZ_ROW:
        a = _u32(regs, w, _lowest_lane(m), k1, r1, v1)
        for l in range(32):
            regs[w, r0, l] = np.uint32(a)


@njit(cache=True)
def _x_ld(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd, g8, g32, alo, ahi, s8, s32_, l8, l32, local_size, rows_na, addrs, cnt, err):
    """LD/ST (m0 space, m1 load type, m2 bytes), ATOM/RED (m0 space, m1 operation, m2 type, m3
    bytes, m4 returns the old value) and LDGSTS (global → shared copy) for the lanes of ``m``, in
    lane order; every lane's address is appended to the trace row. Operand slots — LD: d, mem;
    ST: mem, src; ATOM: d, pd, mem, a, b; LDGSTS: mem (shared), mem (global). Returns 0, or the
    error code after recording the fault."""
    op = code[pc, O.C_OP]
    m0, m1, m2, m3, m4 = _mods(code, pc)
    k0, r0, _, _ = _opnd(okind, oreg, oval, oflag, pc, 0)
    k1, r1, v1, _ = _opnd(okind, oreg, oval, oflag, pc, 1)
    mk = 2 if op == O.OP_ATOM else (1 if op == O.OP_LD or op == O.OP_LDGSTS else 0)
    mr, mv, mf = oreg[pc, mk], oval[pc, mk], oflag[pc, mk]
    space = m0 if op != O.OP_LDGSTS else O.SP_GLOBAL
    width = m2 if op != O.OP_ATOM else m3
    uro = (mf >> O.F_UREG_SHIFT) & 0x3FF
    sc = (mf >> O.F_SCALE_SHIFT) & 0xF
    nrow = cnt[0] - 1
    pd = 0
    for l in range(32):
        if not (m >> l) & 1:
            continue
        if mr == O.RZ_ROW:
            addr = 0
        elif mf & O.F_WIDE:
            addr = np.int64(regs[w, mr, l]) | (np.int64(regs[w, mr + 1, l]) << 32)
        else:
            addr = np.int64(regs[w, mr, l])
        addr = (addr << sc) + mv
        if uro != 0:
            ur = uro - 1
            if space == O.SP_GLOBAL and ur + 1 < O.URZ_SINK and ur != O.URZ_ROW:
                addr += np.int64(regs[w, ur, l]) | (np.int64(regs[w, ur + 1, l]) << 32)
            else:
                addr += np.int64(regs[w, ur, l])
        if space != O.SP_GLOBAL:
            addr &= M32
        t = w * 32 + l
        na = cnt[1]
        addrs[na] = np.uint64(addr)
        cnt[1] = na + 1
        rows_na[nrow] += 1
        if addr % (width if width <= 16 else 16) != 0:
            _mem_fault(err, E_ALIGN, pc, t, addr)
            return err[0]
        if space == O.SP_GLOBAL:
            off = _gofs(addr, width, alo, ahi)
            if off < 0:
                _mem_fault(err, E_GLOBAL, pc, t, addr)
                return err[0]
            mem8, mem32 = g8, g32
        elif space == O.SP_SHARED:
            if addr + width > s8.shape[0]:
                _mem_fault(err, E_SHARED, pc, t, addr)
                return err[0]
            off = addr
            mem8, mem32 = s8, s32_
        else:
            if addr + width > local_size:
                _mem_fault(err, E_LOCAL, pc, t, addr)
                return err[0]
            off = t * local_size + addr
            mem8, mem32 = l8, l32
        if op == O.OP_LD:
            typ = m1
            if width <= 8:
                v = _load(mem8, mem32, off, width, typ)
                if r0 != O.RZ_ROW:
                    regs[w, r0, l] = np.uint32(v & M32)
                    if width == 8:
                        regs[w, r0 + 1, l] = np.uint32((v >> 32) & M32)
            else:
                for j in range(4):
                    if r0 != O.RZ_ROW:
                        regs[w, r0 + j, l] = mem32[(off >> 2) + j]
        elif op == O.OP_ST:
            if width <= 8:
                if k1 == O.K_REG:
                    v = np.int64(regs[w, r1, l])
                    if width == 8:
                        v |= np.int64(regs[w, r1 + 1, l]) << 32
                else:
                    v = v1
                _store(mem8, mem32, off, width, v)
            else:
                for j in range(4):
                    mem32[(off >> 2) + j] = regs[w, r1 + j, l] if r1 != O.RZ_ROW else np.uint32(0)
        elif op == O.OP_LDGSTS:
            # shared destination (operand 0) ← global source (operand 1)
            sa = (np.int64(regs[w, r0, l]) if r0 != O.RZ_ROW else 0)
            so = (oflag[pc, 0] >> O.F_UREG_SHIFT) & 0x3FF
            if so != 0:
                sa += np.int64(regs[w, so - 1, l])
            sa = ((sa << ((oflag[pc, 0] >> O.F_SCALE_SHIFT) & 0xF)) + oval[pc, 0]) & M32
            if sa + width > s8.shape[0] or sa % width != 0:
                _mem_fault(err, E_SHARED, pc, t, sa)
                return err[0]
            for j in range(width // 4):
                s32_[(sa >> 2) + j] = g32[(off >> 2) + j]
        else:
            k3_, r3_, v3_ = okind[pc, 3], oreg[pc, 3], oval[pc, 3]
            k4_, r4_, v4_ = okind[pc, 4], oreg[pc, 4], oval[pc, 4]
            if k3_ == O.K_REG:
                a = np.int64(regs[w, r3_, l])
                if width == 8:
                    a |= np.int64(regs[w, r3_ + 1, l]) << 32
            else:
                a = v3_ if width == 8 else v3_ & M32
            if k4_ == O.K_REG:
                b = np.int64(regs[w, r4_, l])
                if width == 8:
                    b |= np.int64(regs[w, r4_ + 1, l]) << 32
            else:
                b = v4_ if width == 8 else v4_ & M32
            old = _load(mem8, mem32, off, width, O.T_U32)
            new = _atomic(m1, m2, width, old, a, b, su, sf, sq, sd)
            _store(mem8, mem32, off, width, new)
            if m1 == 11:
                # CAST.SPIN: compare-and-store whose result is the success flag (1/0)
                if old == a:
                    pd |= 1 << l
                if r0 != O.RZ_ROW and k0 == O.K_REG:
                    regs[w, r0, l] = np.uint32(1 if old == a else 0)
            elif m4 and r0 != O.RZ_ROW and k0 == O.K_REG:
                regs[w, r0, l] = np.uint32(old & M32)
                if width == 8:
                    regs[w, r0 + 1, l] = np.uint32((old >> 32) & M32)
    if op == O.OP_ATOM and okind[pc, 1] == O.K_PRED:
        s1 = oreg[pc, 1]
        if s1 != O.PT_SLOT:
            pm[w, s1] = (pm[w, s1] & ~m & FULL) | (pd & m)
    return 0


# ---- specialised forms: branch-free lane loops over resolved operands (lower.specialize) ----------
# Every source is ``regs[row] | imm`` (an immediate reads the zero rows), its modifier
# ``(x ^ xor) + add``; results are computed for all 32 lanes into ``tmp`` and written in the
# lanes of ``ex`` (a destination of RZ is the junk rows), so the lane loops vectorise. Each form
# gives the general executor's result bit for bit; where it cannot (a NaN float result, an
# address that is misaligned or leaves its window) it returns False before writing anything
# and the general executor runs the instruction instead.

@njit(cache=True, inline="always")
def _wr(regs, w, d, ex, tmp):
    """Row ``d`` takes ``tmp`` in the lanes of ``ex``."""
    if ex == FULL:
        for l in range(32):
            regs[w, d, l] = tmp[l]
    else:
        for l in range(32):
            if (ex >> l) & 1:
                regs[w, d, l] = tmp[l]


@njit(cache=True, inline="always")
def _wpred(pm, w, slot, bits, ex):
    pm[w, slot] = (pm[w, slot] & ~ex & FULL) | (bits & ex)


@njit(cache=True, inline="always")
def _opnd3(fx, pc, j):
    """Source ``j`` (0, 1, 2: a, b, c) of a form: (row, immediate, xor, add)."""
    return fx[pc, O.FX_A + j], fx[pc, O.FX_IA + j], fx[pc, O.FX_XA + j], fx[pc, O.FX_NA + j]


@njit(cache=True, inline="always")
def _v32(regs, w, l, r, i, x, a):
    """A 32-bit source of lane ``l`` from its (row, immediate, xor, add), masked to 32 bits."""
    return (((np.int64(regs[w, r, l]) | i) ^ x) + a) & M32


@njit(cache=True, inline="always")
def _f_mov(regs, w, fx, pc, ex, tmp, tmp2, wide):
    """MOV / LDC of a resolved constant: 32 bits, or a pair (MOV.64, LDC.64); both words are read
    before either is written."""
    ra, ia, d = fx[pc, O.FX_A], fx[pc, O.FX_IA], fx[pc, O.FX_D]
    hi = (ia >> 32) & M32
    for l in range(32):
        tmp[l] = (np.int64(regs[w, ra, l]) | ia) & M32
    if wide:
        for l in range(32):
            tmp2[l] = np.int64(regs[w, ra + 1, l]) | hi
    _wr(regs, w, d, ex, tmp)
    if wide:
        _wr(regs, w, d + 1, ex, tmp2)


@njit(cache=True, inline="always")
def _f_iadd3(regs, pm, w, fx, pc, ex, tmp):
    ci0 = (pm[w, fx[pc, O.FX_Q0]] ^ fx[pc, O.FX_QX0]) & FULL
    ci1 = (pm[w, fx[pc, O.FX_Q1]] ^ fx[pc, O.FX_QX1]) & FULL
    ra, rb, rc = fx[pc, O.FX_A], fx[pc, O.FX_B], fx[pc, O.FX_C]
    ia, ib, ic = fx[pc, O.FX_IA], fx[pc, O.FX_IB], fx[pc, O.FX_IC]
    xa, xb, xc = fx[pc, O.FX_XA], fx[pc, O.FX_XB], fx[pc, O.FX_XC]
    na, nb, nc = fx[pc, O.FX_NA], fx[pc, O.FX_NB], fx[pc, O.FX_NC]
    po0 = 0
    po1 = 0
    for l in range(32):
        s = (((np.int64(regs[w, ra, l]) | ia) ^ xa) + na + ((np.int64(regs[w, rb, l]) | ib) ^ xb) + nb
             + ((np.int64(regs[w, rc, l]) | ic) ^ xc) + nc + ((ci0 >> l) & 1) + ((ci1 >> l) & 1))
        tmp[l] = s & M32
        carry = s >> 32
        po0 |= (1 if carry >= 1 else 0) << l
        po1 |= (1 if carry >= 2 else 0) << l
    _wr(regs, w, fx[pc, O.FX_D], ex, tmp)
    _wpred(pm, w, fx[pc, O.FX_P0], po0, ex)
    _wpred(pm, w, fx[pc, O.FX_P1], po1, ex)


@njit(cache=True, inline="always")
def _f_imad(regs, pm, w, fx, pc, ex, tmp):
    """IMAD (low word): (a·b mod 2³²) + c + ci, carry-out po."""
    ci = (pm[w, fx[pc, O.FX_Q0]] ^ fx[pc, O.FX_QX0]) & FULL
    ra, ia, xa, na = _opnd3(fx, pc, 0)
    rb, ib, xb, nb = _opnd3(fx, pc, 1)
    rc, ic, xc, nc = _opnd3(fx, pc, 2)
    po = 0
    for l in range(32):
        a = _v32(regs, w, l, ra, ia, xa, na)
        b = _v32(regs, w, l, rb, ib, xb, nb)
        c = _v32(regs, w, l, rc, ic, xc, nc)
        full = ((a * b) & M32) + c + ((ci >> l) & 1)
        tmp[l] = full & M32
        po |= (1 if (full >> 32) != 0 else 0) << l
    _wr(regs, w, fx[pc, O.FX_D], ex, tmp)
    _wpred(pm, w, fx[pc, O.FX_P0], po, ex)


@njit(cache=True, inline="always")
def _f_imadw(regs, pm, w, fx, pc, ex, tmp, tmp2, unsigned):
    """IMAD.WIDE[.U32]: the 64-bit product plus the pair (or 64-bit immediate) c into a pair."""
    ci = (pm[w, fx[pc, O.FX_Q0]] ^ fx[pc, O.FX_QX0]) & FULL
    ra, ia, xa, na = _opnd3(fx, pc, 0)
    rb, ib, xb, nb = _opnd3(fx, pc, 1)
    rc, ic, xc, nc = _opnd3(fx, pc, 2)
    po = 0
    for l in range(32):
        a = _v32(regs, w, l, ra, ia, xa, na)
        b = _v32(regs, w, l, rb, ib, xb, nb)
        c = ((np.int64(regs[w, rc, l]) | (np.int64(regs[w, rc + 1, l]) << 32) | ic) ^ xc) + nc
        p = a * b if unsigned else s32(a) * s32(b)
        res = p + c + ((ci >> l) & 1)
        ua = (p & M32) + (c & M32)
        po |= ((((p >> 32) & M32) + ((c >> 32) & M32) + (ua >> 32)) >> 32 & 1) << l
        tmp[l] = res & M32
        tmp2[l] = (res >> 32) & M32
    d = fx[pc, O.FX_D]
    _wr(regs, w, d, ex, tmp)
    _wr(regs, w, d + 1, ex, tmp2)
    _wpred(pm, w, fx[pc, O.FX_P0], po, ex)


@njit(cache=True, inline="always")
def _f_lea(regs, pm, w, fx, pc, ex, tmp, hi):
    """LEA (a << s) + b + ci (-a: the complement of the shifted word) and LEA.HI (the high word of
    the pair c:a shifted left), carry-out po."""
    ci = (pm[w, fx[pc, O.FX_Q0]] ^ fx[pc, O.FX_QX0]) & FULL
    sh = fx[pc, O.FX_K]
    ra, ia, xa, na = fx[pc, O.FX_A], fx[pc, O.FX_IA], fx[pc, O.FX_XA], fx[pc, O.FX_NA]
    rb, ib, xb, nb = fx[pc, O.FX_B], fx[pc, O.FX_IB], fx[pc, O.FX_XB], fx[pc, O.FX_NB]
    rc, ic = fx[pc, O.FX_C], fx[pc, O.FX_IC]
    po = 0
    for l in range(32):
        a = np.int64(regs[w, ra, l]) | ia
        if hi:
            a = ((a ^ xa) + na) & M32
            x = ((((np.int64(regs[w, rc, l]) | ic) << 32) | a) << sh >> 32) & M32
        else:
            x = (((a << sh) & M32) ^ xa) + na
        s = x + ((np.int64(regs[w, rb, l]) | ib) ^ xb) + nb + ((ci >> l) & 1)
        tmp[l] = s & M32
        po |= (1 if (s >> 32) != 0 else 0) << l
    _wr(regs, w, fx[pc, O.FX_D], ex, tmp)
    _wpred(pm, w, fx[pc, O.FX_P0], po, ex)


@njit(cache=True, inline="always")
def _f_lop3(regs, pm, w, fx, pc, ex, tmp):
    """LOP3: each set bit i of the LUT adds the minterm (a or ~a)&(b or ~b)&(c or ~c) of i."""
    lut = fx[pc, O.FX_K]
    ra, ia, xa, aa = _opnd3(fx, pc, 0)
    rb, ib, xb, ab = _opnd3(fx, pc, 1)
    rc, ic, xc, ac = _opnd3(fx, pc, 2)
    pd = 0
    for l in range(32):
        a = _v32(regs, w, l, ra, ia, xa, aa)
        b = _v32(regs, w, l, rb, ib, xb, ab)
        c = _v32(regs, w, l, rc, ic, xc, ac)
        na, nb, nc = a ^ M32, b ^ M32, c ^ M32
        r = ((na & nb & nc) & -(lut & 1)) | ((na & nb & c) & -((lut >> 1) & 1)) \
            | ((na & b & nc) & -((lut >> 2) & 1)) | ((na & b & c) & -((lut >> 3) & 1)) \
            | ((a & nb & nc) & -((lut >> 4) & 1)) | ((a & nb & c) & -((lut >> 5) & 1)) \
            | ((a & b & nc) & -((lut >> 6) & 1)) | ((a & b & c) & -((lut >> 7) & 1))
        tmp[l] = r
        pd |= (1 if r != 0 else 0) << l
    _wr(regs, w, fx[pc, O.FX_D], ex, tmp)
    _wpred(pm, w, fx[pc, O.FX_P0], pd, ex)


@njit(cache=True, inline="always")
def _f_shf(regs, w, fx, pc, ex, tmp):
    """SHF (the general executor's arithmetic, per lane without branches on the form)."""
    k = fx[pc, O.FX_K]
    left, high, signed, wide64, wrap = k & 1, (k >> 1) & 1, (k >> 2) & 1, (k >> 3) & 1, (k >> 4) & 1
    lim = 64 if wide64 else 32
    ra, ia, xa, na = _opnd3(fx, pc, 0)
    rb, ib, xb, nb = _opnd3(fx, pc, 1)
    rc, ic, xc, nc = _opnd3(fx, pc, 2)
    for l in range(32):
        lo = _v32(regs, w, l, ra, ia, xa, na)
        s = _v32(regs, w, l, rb, ib, xb, nb)
        hi = _v32(regs, w, l, rc, ic, xc, nc)
        if wrap:
            s = s & 31
        else:
            s = lim if s > lim else s
        val = (hi << 32) | lo
        if left:
            res = (val << s) if s < 64 else 0
        elif signed:
            res = ((s32(hi) << 32) | lo) >> (s if s < 64 else 63)
        else:
            res = np.int64(np.uint64(val) >> np.uint64(s)) if s < 64 else 0
        tmp[l] = ((res >> 32) if high else res) & M32
    _wr(regs, w, fx[pc, O.FX_D], ex, tmp)


@njit(cache=True, inline="always")
def _f_isetp(regs, pm, w, fx, pc, ex):
    """ISETP (not .EX): c = a cmp b (signed: the sign bits flipped, then compared unsigned);
    pd = c bool pin, pq = ¬c bool pin."""
    bits, bop = fx[pc, O.FX_K], fx[pc, O.FX_K2]
    flip = 0 if fx[pc, O.FX_K3] else 0x80000000
    lt_on, eq_on, gt_on = -(bits & 1), -((bits >> 1) & 1), -((bits >> 2) & 1)
    ra, ia, xa, na = _opnd3(fx, pc, 0)
    rb, ib, xb, nb = _opnd3(fx, pc, 1)
    cm = 0
    for l in range(32):
        a = _v32(regs, w, l, ra, ia, xa, na) ^ flip
        b = _v32(regs, w, l, rb, ib, xb, nb) ^ flip
        c = ((-1 if a < b else 0) & lt_on) | ((-1 if a == b else 0) & eq_on) | ((-1 if a > b else 0) & gt_on)
        cm |= (c & 1) << l
    pin = (pm[w, fx[pc, O.FX_Q0]] ^ fx[pc, O.FX_QX0]) & FULL
    nc = ~cm & FULL
    if bop == 0:
        rp, rq = cm & pin, nc & pin
    elif bop == 1:
        rp, rq = cm | pin, nc | pin
    else:
        rp, rq = cm ^ pin, nc ^ pin
    _wpred(pm, w, fx[pc, O.FX_P0], rp, ex)
    _wpred(pm, w, fx[pc, O.FX_P1], rq, ex)


@njit(cache=True, inline="always")
def _f_sel(regs, pm, w, fx, pc, ex, tmp):
    p = (pm[w, fx[pc, O.FX_Q0]] ^ fx[pc, O.FX_QX0]) & FULL
    ra, ia, xa, na = _opnd3(fx, pc, 0)
    rb, ib, xb, nb = _opnd3(fx, pc, 1)
    for l in range(32):
        a = _v32(regs, w, l, ra, ia, xa, na)
        b = _v32(regs, w, l, rb, ib, xb, nb)
        tmp[l] = a if (p >> l) & 1 else b
    _wr(regs, w, fx[pc, O.FX_D], ex, tmp)


@njit(cache=True, inline="always")
def _vf(regs, w, l, r, i, x, a):
    """Float32 source of lane ``l``: |x| (``a`` clears the sign bit) then -x (``x`` flips it), as
    interp._fmod."""
    return f32_bits_as(((np.int64(regs[w, r, l]) | i) & a) ^ x)


@njit(cache=True, inline="always")
def _nan_lanes(tmp):
    """Lanes of ``tmp`` (float32 bit patterns) that hold a NaN."""
    nan = 0
    for l in range(32):
        nan |= (1 if (tmp[l] & 0x7FFFFFFF) > 0x7F800000 else 0) << l
    return nan


@njit(cache=True, inline="always")
def _f_float(regs, w, fx, pc, ex, tmp, form):
    """FADD / FMUL / FFMA, round to nearest, no .FTZ/.SAT/scale: float32 arithmetic and fma are
    correctly rounded, as the general executor's exact-in-double results rounded once. A NaN
    result returns False (its payload follows the general executor's operand order).

    One lane loop per form, and for sources that are plain registers (no immediate, no -x or |x|:
    the common case) one that reads them as float32 directly; a NaN is detected with an OR over
    the lanes (``(bits & 0x7fffffff) + 0x7fffff`` reaches bit 31 exactly for a NaN), its lanes
    found only then. All of it vectorises without per-lane branches."""
    ra, ia, xa, na = _opnd3(fx, pc, 0)
    rb, ib, xb, nb = _opnd3(fx, pc, 1)
    rc, ic, xc, nc = _opnd3(fx, pc, 2)
    plain = (ia | ib | xa | xb) == 0 and (na & nb) == 0xFFFFFFFF
    if form == O.F_FFMA:
        plain = plain and (ic | xc) == 0 and nc == 0xFFFFFFFF
    anynan = 0
    if plain and form == O.F_FFMA:
        for l in range(32):
            bits = bits_of_f32_as(fma32(f32_bits_as(regs[w, ra, l]), f32_bits_as(regs[w, rb, l]),
                                        f32_bits_as(regs[w, rc, l])))
            tmp[l] = bits
            anynan |= (bits & 0x7FFFFFFF) + 0x7FFFFF
    elif plain and form == O.F_FADD:
        for l in range(32):
            bits = bits_of_f32_as(f32_bits_as(regs[w, ra, l]) + f32_bits_as(regs[w, rb, l]))
            tmp[l] = bits
            anynan |= (bits & 0x7FFFFFFF) + 0x7FFFFF
    elif plain:
        for l in range(32):
            bits = bits_of_f32_as(f32_bits_as(regs[w, ra, l]) * f32_bits_as(regs[w, rb, l]))
            tmp[l] = bits
            anynan |= (bits & 0x7FFFFFFF) + 0x7FFFFF
    elif form == O.F_FFMA:
        for l in range(32):
            bits = bits_of_f32_as(fma32(_vf(regs, w, l, ra, ia, xa, na), _vf(regs, w, l, rb, ib, xb, nb),
                                        _vf(regs, w, l, rc, ic, xc, nc)))
            tmp[l] = bits
            anynan |= (bits & 0x7FFFFFFF) + 0x7FFFFF
    elif form == O.F_FADD:
        for l in range(32):
            bits = bits_of_f32_as(_vf(regs, w, l, ra, ia, xa, na) + _vf(regs, w, l, rb, ib, xb, nb))
            tmp[l] = bits
            anynan |= (bits & 0x7FFFFFFF) + 0x7FFFFF
    else:
        for l in range(32):
            bits = bits_of_f32_as(_vf(regs, w, l, ra, ia, xa, na) * _vf(regs, w, l, rb, ib, xb, nb))
            tmp[l] = bits
            anynan |= (bits & 0x7FFFFFFF) + 0x7FFFFF
    if anynan & 0x80000000 and _nan_lanes(tmp) & ex:
        return False
    _wr(regs, w, fx[pc, O.FX_D], ex, tmp)
    return True


@njit(cache=True, inline="always")
def _f_mem(regs, w, fx, pc, m, g8, g32, alo, ahi, s8, s32_, l8, l32, local_size, addrs, nadr, store):
    """LD / ST of 1, 2, 4, 8 or 16 bytes per lane (global, shared or local) for the lanes of ``m``:
    the addresses are computed and appended at ``addrs[nadr:]`` first; if every one is aligned and
    inside one allocation (global) or the window, the lanes are loaded or stored in lane order and
    the number of addresses is returned, else -1 with nothing changed (the general executor then
    reports the fault where it happens)."""
    if m == FULL:
        return _f_mem_full(regs, w, fx, pc, g8, g32, alo, ahi, s8, s32_, l8, l32, local_size, addrs, nadr, store)
    space, width, typ = fx[pc, O.FX_K], fx[pc, O.FX_K2], fx[pc, O.FX_K3]
    ra, wide, sc, off0 = fx[pc, O.FX_A], fx[pc, O.FX_XA], fx[pc, O.FX_NA], fx[pc, O.FX_IA]
    ru, upair = fx[pc, O.FX_B], fx[pc, O.FX_XB]
    amask = (width if width <= 16 else 16) - 1
    n = 0
    bad = 0
    lo_a = np.int64(0)
    hi_a = np.int64(0)
    for l in range(32):
        if (m >> l) & 1:
            addr = np.int64(regs[w, ra, l])
            if wide:
                addr |= np.int64(regs[w, ra + 1, l]) << 32
            addr = (addr << sc) + off0
            u = np.int64(regs[w, ru, l])
            if upair:
                u |= np.int64(regs[w, ru + 1, l]) << 32
            addr += u
            if space != O.SP_GLOBAL:
                addr &= M32
            addrs[np.uint64(nadr + n)] = np.uint64(addr)
            if n == 0:
                lo_a = addr
                hi_a = addr
            else:
                lo_a = min(lo_a, addr)
                hi_a = max(hi_a, addr)
            n += 1
            bad |= addr & amask
    if n == 0:
        return 0
    if bad:
        return -1
    if space == O.SP_GLOBAL:
        j = _alloc_of(lo_a, alo)
        if j <= 0 or hi_a + width > ahi[j]:
            return -1
        base = alo[0]
        mem8, mem32 = g8, g32
    elif space == O.SP_SHARED:
        if hi_a + width > s8.shape[0]:
            return -1
        base = 0
        mem8, mem32 = s8, s32_
    else:
        if hi_a + width > local_size:
            return -1
        base = 0
        mem8, mem32 = l8, l32
    d = fx[pc, O.FX_D]
    rc, ic = fx[pc, O.FX_C], fx[pc, O.FX_IC]
    k = 0
    for l in range(32):
        if (m >> l) & 1:
            off = np.int64(addrs[np.uint64(nadr + k)]) - base
            k += 1
            if space == O.SP_LOCAL:
                off += (w * 32 + l) * local_size
            q = np.uint64(off >> 2)     # unsigned: no wrap-around (in range after the checks)
            if store:
                if width == 4:
                    mem32[q] = np.uint32((np.int64(regs[w, rc, l]) | ic) & M32)
                elif width == 8:
                    mem32[q] = np.uint32((np.int64(regs[w, rc, l]) | ic) & M32)
                    mem32[q + np.uint64(1)] = np.uint32((np.int64(regs[w, rc + 1, l]) | (ic >> 32)) & M32)
                elif width == 16:
                    for j in range(4):
                        mem32[q + np.uint64(j)] = regs[w, rc + j, l]
                else:
                    _store(mem8, mem32, off, width, np.int64(regs[w, rc, l]) | ic)
            else:
                if width == 4:
                    regs[w, d, l] = mem32[q]
                elif width == 8:
                    regs[w, d, l] = mem32[q]
                    regs[w, d + 1, l] = mem32[q + np.uint64(1)]
                elif width == 16:
                    for j in range(4):
                        regs[w, d + j, l] = mem32[q + np.uint64(j)]
                else:
                    regs[w, d, l] = np.uint32(_load(mem8, mem32, off, width, typ) & M32)
    return n


@njit(cache=True, inline="always")
def _f_mem_full(regs, w, fx, pc, g8, g32, alo, ahi, s8, s32_, l8, l32, local_size, addrs, nadr, store):
    """:func:`_f_mem` for a full warp (all 32 lanes): the same addresses, checks, result and
    lane order, in branch-free lane loops (the pair halves and the uniform register selected by
    masks, not branches) that the compiler vectorises."""
    space, width, typ = fx[pc, O.FX_K], fx[pc, O.FX_K2], fx[pc, O.FX_K3]
    ra, wide, sc, off0 = fx[pc, O.FX_A], fx[pc, O.FX_XA], fx[pc, O.FX_NA], fx[pc, O.FX_IA]
    ru, upair = fx[pc, O.FX_B], fx[pc, O.FX_XB]
    amask = (width if width <= 16 else 16) - 1
    hia = -np.int64(wide)                 # all ones when the base is a pair
    hiu = -np.int64(upair)
    keep = np.int64(-1) if space == O.SP_GLOBAL else np.int64(M32)
    ra2 = ra + wide                       # ra itself when not a pair (its high word then masked off)
    ru2 = ru + upair
    # indexes into addrs and memory are unsigned (np.uint64): numba then skips the negative-index
    # wrap-around, which per lane turned the contiguous stores into scatters (they are in range:
    # nadr is a count, and a memory index is used only after the window checks below)
    at = np.uint64(nadr)
    lo_a = np.int64(0x7FFFFFFFFFFFFFFF)
    hi_a = np.int64(-0x8000000000000000)
    bad = np.int64(0)
    if space == O.SP_GLOBAL:
        for l in range(32):
            addr = np.int64(regs[w, ra, l]) | ((np.int64(regs[w, ra2, l]) << 32) & hia)
            u = np.int64(regs[w, ru, l]) | ((np.int64(regs[w, ru2, l]) << 32) & hiu)
            a = (((addr << sc) + off0) + u) & keep
            addrs[at + np.uint64(l)] = np.uint64(a)
            lo_a = min(lo_a, a)
            hi_a = max(hi_a, a)
            bad |= a & amask
    else:
        # a shared or local address is the low 32 bits of the sum, which the high words of a pair
        # base or uniform register (bits 32 and up once shifted) do not reach: one row each
        for l in range(32):
            a = ((np.int64(regs[w, ra, l]) << sc) + off0 + np.int64(regs[w, ru, l])) & M32
            addrs[at + np.uint64(l)] = np.uint64(a)
            lo_a = min(lo_a, a)
            hi_a = max(hi_a, a)
            bad |= a & amask
    if bad:
        return -1
    if space == O.SP_GLOBAL:
        j = _alloc_of(lo_a, alo)
        if j <= 0 or hi_a + width > ahi[j]:
            return -1
        base = alo[0]
        mem8, mem32 = g8, g32
        lstep = 0
    elif space == O.SP_SHARED:
        if hi_a + width > s8.shape[0]:
            return -1
        base = 0
        mem8, mem32 = s8, s32_
        lstep = 0
    else:
        if hi_a + width > local_size:
            return -1
        base = 0
        mem8, mem32 = l8, l32
        lstep = local_size
    d = fx[pc, O.FX_D]
    rc, ic = fx[pc, O.FX_C], fx[pc, O.FX_IC]
    lbase = w * 32 * lstep - base
    if not store and width == 4:
        for l in range(32):
            regs[w, d, l] = mem32[np.uint64((np.int64(addrs[at + np.uint64(l)]) + lbase + l * lstep) >> 2)]
    elif not store and width == 8:
        for l in range(32):
            q = np.uint64((np.int64(addrs[at + np.uint64(l)]) + lbase + l * lstep) >> 2)
            regs[w, d, l] = mem32[q]
            regs[w, d + 1, l] = mem32[q + np.uint64(1)]
    elif not store and width == 16:
        for l in range(32):
            q = np.uint64((np.int64(addrs[at + np.uint64(l)]) + lbase + l * lstep) >> 2)
            regs[w, d, l] = mem32[q]
            regs[w, d + 1, l] = mem32[q + np.uint64(1)]
            regs[w, d + 2, l] = mem32[q + np.uint64(2)]
            regs[w, d + 3, l] = mem32[q + np.uint64(3)]
    elif store and width == 4:
        for l in range(32):
            mem32[np.uint64((np.int64(addrs[at + np.uint64(l)]) + lbase + l * lstep) >> 2)] = \
                np.uint32((np.int64(regs[w, rc, l]) | ic) & M32)
    else:
        for l in range(32):
            off = np.int64(addrs[at + np.uint64(l)]) + lbase + l * lstep
            q = np.uint64(off >> 2)
            if store:
                if width == 8:
                    mem32[q] = np.uint32((np.int64(regs[w, rc, l]) | ic) & M32)
                    mem32[q + np.uint64(1)] = np.uint32((np.int64(regs[w, rc + 1, l]) | (ic >> 32)) & M32)
                elif width == 16:
                    for j in range(4):
                        mem32[q + np.uint64(j)] = regs[w, rc + j, l]
                else:
                    _store(mem8, mem32, off, width, np.int64(regs[w, rc, l]) | ic)
            else:
                regs[w, d, l] = np.uint32(_load(mem8, mem32, off, width, typ) & M32)
    return 32


@njit(cache=True)
def _alloc_of(addr, alo):
    """Index of the last allocation starting at or below ``addr`` (0: below every allocation)."""
    lo = 1
    hi = alo.shape[0] - 1
    j = 0
    while lo <= hi:
        mid = (lo + hi) >> 1
        if alo[mid] <= addr:
            j = mid
            lo = mid + 1
        else:
            hi = mid - 1
    return j


@njit(cache=True)
def _pick(w, lane_pc, lane_st, lane_wait):
    """Next lane group of warp ``w``: first release BSYNC/WARPSYNC waits whose lanes have all
    arrived (or exited), then take the runnable lanes at the lowest PC. Returns (pc, mask, others):
    mask is -1 for a deadlock, -2 when the remaining lanes wait on BAR.SYNC, -3 when all have
    exited; others the runnable lanes outside the group."""
    exited = 0
    runnable = 0
    waiting = 0
    for l in range(32):
        st = lane_st[w, l]
        if st == EXITED:
            exited |= 1 << l
        elif st == RUN:
            runnable |= 1 << l
        elif st == WAITSYNC:
            waiting |= 1 << l
    if waiting != 0:
        for l in range(32):
            if (waiting >> l) & 1:
                pc_w = lane_pc[w, l]
                at = 0
                for k in range(32):
                    if (waiting >> k) & 1 and lane_pc[w, k] == pc_w:
                        at |= 1 << k
                need = lane_wait[w, l] & ~exited & FULL
                if (need & ~at) == 0:
                    for k in range(32):
                        if (at >> k) & 1:
                            lane_st[w, k] = RUN
                            lane_pc[w, k] = pc_w + 1
                    runnable |= at
                    waiting &= ~at
    if runnable == 0:
        if waiting != 0:
            return 0, -1, 0
        for l in range(32):
            if lane_st[w, l] == WAITBAR:
                return 0, -2, 0
        return 0, -3, 0
    pc = 1 << 40
    for l in range(32):
        if (runnable >> l) & 1 and lane_pc[w, l] < pc:
            pc = lane_pc[w, l]
    gmask = 0
    for l in range(32):
        if (runnable >> l) & 1 and lane_pc[w, l] == pc:
            gmask |= 1 << l
    return pc, gmask, runnable & ~gmask


@njit(cache=True, _nrt=False)
def run_warps(code, fx, okind, oreg, oval, oflag, regs, pm, lane_pc, lane_st, lane_wait, bar, grp, wstat, ins_addr,
              block_xyz, grid_xyz, blk, nthreads, nw, g8, g32, alo, ahi, s8, s32_, l8, l32, local_size,
              cb32, rows_w, rows_i, rows_m, rows_na, addrs, cnt, err, su, sf, sq, sd, tmp, tmp2, fs, record):
    """Run the ``nw`` warps of block ``blk`` until every lane has exited (ST_OK), the trace buffers
    are full (ST_FULL, resumable: ``wstat`` and ``grp`` say where) or an error (err[0] ≥ 10). The
    warps run in turn (``wstat[w]`` 0), each until it exits (2) or waits on BAR.SYNC (1); when no
    warp can run, the barrier releases the waiting ones and the round starts again from warp 0.
    One call per block: switching warps costs no call (the ~45 array arguments were pushed on every
    BAR.SYNC and exit, about 6 % of the interpreter's time on the tiled matmul).

    Instructions with a specialised form (``fx``, :func:`teg.emu.lower.specialize`) run on their
    branch-free lane loops, the others on the general executors. A uniform branch taken (or not)
    by every runnable lane keeps the group without rescheduling. ``record`` False: rows are
    counted (``cnt[0]``) but nothing is stored (an untraced launch).

    Compiled without numba's reference counting (``_nrt=False``, which the functions it calls
    inherit): every array it touches belongs to :func:`run_blocks`, which outlives the call, and
    nothing here allocates (scratch comes in as ``tmp``, ``tmp2``, ``fs``). With counting, each
    call of a helper with array arguments cost two atomic operations per array — measured as a
    quarter of the interpreter's time on the tiled matmul."""
    cx = blk % grid_xyz[0]
    cy = (blk // grid_xyz[0]) % grid_xyz[1]
    cz = blk // (grid_xyz[0] * grid_xyz[1])
    cap_rows = rows_w.shape[0]
    cap_addr = addrs.shape[0]
    n_ins = code.shape[0]
    nrow = cnt[0]
    nadr = cnt[1]
    while True:
        for w in range(nw):
            if wstat[w] != 0:      # exited (2) or waiting on BAR.SYNC (1)
                continue
            row_warp = blk * nw + w
            while True:
                if grp[w, 1] != 0:     # resume the group a full trace buffer interrupted
                    pc = grp[w, 0]
                    gmask = grp[w, 1]
                    grp[w, 1] = 0
                    others = 0
                    for l in range(32):
                        if lane_st[w, l] == RUN:
                            others |= 1 << l
                    others &= ~gmask
                else:
                    pc, gmask, others = _pick(w, lane_pc, lane_st, lane_wait)
                    if gmask < 0:
                        if gmask == -1:
                            cnt[0] = nrow
                            cnt[1] = nadr
                            _mem_fault(err, E_DEADLOCK, lane_pc[w, 0], w * 32, 0)
                            return err[0]
                        wstat[w] = 1 if gmask == -2 else 2      # waits on BAR.SYNC / every lane exited
                        break
                # ---- run the group straight until a control instruction ----
                while True:
                    if pc < 0 or pc >= n_ins:
                        cnt[0] = nrow
                        cnt[1] = nadr
                        _mem_fault(err, E_RETURN, pc if pc < n_ins else n_ins - 1, w * 32, pc)
                        return err[0]
                    if nrow >= cap_rows or nadr + 64 > cap_addr:
                        grp[w, 0] = pc
                        grp[w, 1] = gmask
                        cnt[0] = nrow
                        cnt[1] = nadr
                        return ST_FULL
                    form = fx[pc, O.FX_OP]
                    g = pm[w, np.uint64(code[pc, O.C_GUARD])]     # unsigned: no wrap-around
                    if code[pc, O.C_GINV]:
                        g = ~g & FULL
                    m = gmask & g
                    r = nrow
                    if record:
                        ur = np.uint64(r)     # a count: unsigned, so numba adds no wrap-around per array
                        rows_w[ur] = row_warp
                        rows_i[ur] = pc
                        rows_m[ur] = np.uint32(m)
                        rows_na[ur] = 0
                    nrow = r + 1
                    ex = m
                    if code[pc, O.C_UNIFORM]:
                        ex = FULL if g == FULL or (g & gmask) != 0 else 0
                    if form != O.F_GENERAL:
                        if form == O.F_FFMA or form == O.F_FADD or form == O.F_FMUL:
                            if _f_float(regs, w, fx, pc, ex, tmp, form):
                                pc += 1
                                continue
                        elif form == O.F_IADD3:
                            _f_iadd3(regs, pm, w, fx, pc, ex, tmp)
                            pc += 1
                            continue
                        elif form == O.F_LD or form == O.F_ST:
                            na = _f_mem(regs, w, fx, pc, m, g8, g32, alo, ahi, s8, s32_, l8, l32, local_size, addrs, nadr,
                                        form == O.F_ST)
                            if na >= 0:
                                if record:
                                    rows_na[np.uint64(r)] = na
                                    nadr += na
                                pc += 1
                                continue
                        elif form == O.F_IMAD:
                            _f_imad(regs, pm, w, fx, pc, ex, tmp)
                            pc += 1
                            continue
                        elif form == O.F_MOV or form == O.F_MOV64:
                            _f_mov(regs, w, fx, pc, ex, tmp, tmp2, form == O.F_MOV64)
                            pc += 1
                            continue
                        elif form == O.F_ISETP:
                            _f_isetp(regs, pm, w, fx, pc, ex)
                            pc += 1
                            continue
                        elif form == O.F_LEA or form == O.F_LEAHI:
                            _f_lea(regs, pm, w, fx, pc, ex, tmp, form == O.F_LEAHI)
                            pc += 1
                            continue
                        elif form == O.F_LOP3:
                            _f_lop3(regs, pm, w, fx, pc, ex, tmp)
                            pc += 1
                            continue
                        elif form == O.F_IMADW or form == O.F_IMADWU:
                            _f_imadw(regs, pm, w, fx, pc, ex, tmp, tmp2, form == O.F_IMADWU)
                            pc += 1
                            continue
                        elif form == O.F_SHF:
                            _f_shf(regs, w, fx, pc, ex, tmp)
                            pc += 1
                            continue
                        elif form == O.F_SEL:
                            _f_sel(regs, pm, w, fx, pc, ex, tmp)
                            pc += 1
                            continue
                        elif form == O.F_BRA:
                            if others == 0 and (m == gmask or m == 0):
                                pc = code[pc, O.C_TARGET] if m != 0 else pc + 1
                                continue
                        elif form == O.F_NOP:
                            pc += 1
                            continue
                    # ---- the general executors ----
                    op = code[pc, O.C_OP]
                    if op < 0:
                        cnt[0] = nrow - 1      # the instruction is not recorded
                        cnt[1] = nadr
                        _mem_fault(err, E_UNSUPPORTED, pc, w * 32, 0)
                        return err[0]
                    cnt[0] = nrow              # the general executors read and advance the counts there
                    cnt[1] = nadr
                    # operands the control instructions below read (the other operations decode their own)
                    m0 = code[pc, O.C_M]
                    k0, k1 = okind[pc, 0], okind[pc, 1]
                    r0, r1 = oreg[pc, 0], oreg[pc, 1]
                    v1 = oval[pc, 1]
                    nxt = pc + 1

                    if op == O.OP_MOV:
                        _x_mov(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_IADD3:
                        _x_iadd3(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_VIADD:
                        _x_viadd(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_IMAD:
                        _x_imad(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_LEA:
                        _x_lea(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_LOP3:
                        _x_lop3(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_PLOP3:
                        _x_plop3(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_SHF:
                        _x_shf(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_IMNMX or op == O.OP_VIADDMNMX:
                        _x_imnmx(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_POPC or op == O.OP_FLO or op == O.OP_BREV or op == O.OP_IABS:
                        _x_popc(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_BMSK or op == O.OP_SGXT:
                        _x_bmsk(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_HMMA:
                        _x_hmma(pc, w, code, oreg, regs, su, sf, fs)
                    elif op == O.OP_PRMT:
                        _x_prmt(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_SEL or op == O.OP_FSEL:
                        _x_sel(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_ISETP or op == O.OP_FSETP or op == O.OP_DSETP:
                        _x_isetp(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd)
                    elif op == O.OP_P2R:
                        _x_p2r(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_R2P:
                        _x_r2p(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_FADD or op == O.OP_FMUL or op == O.OP_FFMA:
                        _x_fadd(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd)
                    elif op == O.OP_FMNMX:
                        _x_fmnmx(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf)
                    elif op == O.OP_MUFU:
                        _x_mufu(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd)
                    elif op == O.OP_FCHK:
                        _x_fchk(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_F2F or op == O.OP_I2F or op == O.OP_F2I or op == O.OP_FRND:
                        _x_f2f(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd)
                    elif op == O.OP_DADD or op == O.OP_DMUL or op == O.OP_DFMA or op == O.OP_DMNMX:
                        _x_dadd(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, sq, sd)
                    elif op == O.OP_HADD2 or op == O.OP_HMUL2 or op == O.OP_HFMA2:
                        _x_hadd2(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf)
                    elif op == O.OP_S2R or op == O.OP_CS2R:
                        _x_s2r(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, block_xyz, cx, cy, cz, cnt)
                    elif op == O.OP_LDC:
                        st = _x_ldc(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, cb32, err)
                        if st != 0:
                            return st
                    elif op == O.OP_SHFL:
                        _x_shfl(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, tmp, tmp2)
                    elif op == O.OP_VOTE:
                        _x_vote(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_REDUX:
                        _x_redux(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_R2UR:
                        _x_r2ur(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm)
                    elif op == O.OP_LD or op == O.OP_ST or op == O.OP_ATOM or op == O.OP_LDGSTS:
                        st = _x_ld(pc, w, ex, m, code, okind, oreg, oval, oflag, regs, pm, su, sf, sq, sd, g8, g32, alo, ahi, s8, s32_, l8, l32,
                                   local_size, rows_na, addrs, cnt, err)
                        if st != 0:
                            return st
                    elif op == O.OP_NOP:
                        pass  # NOP-like opcodes (lower.py _NOPS): no architectural effect
                    elif op == O.OP_BSSY:
                        bar[w, oval[pc, 0] & 15] = m
                    elif op == O.OP_BMOV:
                        # BMOV.32 Bx, R (restore a convergence barrier) / BMOV.32[.CLEAR] R, Bx (save it)
                        if k0 == O.K_BAR:
                            if m != 0:
                                bar[w, oval[pc, 0] & 15] = (np.int64(regs[w, r1, _lowest_lane(m)]) if k1 == O.K_REG else v1) & FULL
                        else:
                            bi = oval[pc, 1] & 15
                            if r0 != O.RZ_ROW:
                                for l in range(32):
                                    if (m >> l) & 1:
                                        regs[w, r0, l] = np.uint32(bar[w, bi])
                            if m0 and m != 0:
                                bar[w, bi] = 0
                    elif op == O.OP_BREAK:
                        bar[w, oval[pc, 0] & 15] &= ~m & FULL
                    else:
                        # instructions that end the straight run: update lane PCs, then reschedule
                        if op == O.OP_BRA or op == O.OP_CALL:
                            # taken lanes jump to the target (CALL.REL: the callee), the others fall through
                            tgt = code[pc, O.C_TARGET]
                            if op == O.OP_BRA and m0 == 0 and k0 == O.K_PRED:
                                # BRA.U !UP0, target (sm_100+): the condition is an operand, not a guard
                                m &= _plane(pm, w, r0, oflag[pc, 0])
                            if op == O.OP_BRA and m0 == 1:
                                # BRA.DIV mask: taken by all lanes when some lane of mask is not in the group
                                alive = 0
                                for l in range(32):
                                    if lane_st[w, l] != EXITED:
                                        alive |= 1 << l
                                want = (np.int64(regs[w, r0, 0]) if k0 == O.K_REG else oval[pc, 0]) & FULL
                                if oflag[pc, 0] & O.F_NOT:
                                    want = ~want & FULL
                                m = m if (want & alive & ~gmask) != 0 else 0
                            for l in range(32):
                                if (gmask >> l) & 1:
                                    lane_pc[w, l] = tgt if (m >> l) & 1 else nxt
                        elif op == O.OP_EXIT:
                            for l in range(32):
                                if (gmask >> l) & 1:
                                    if (m >> l) & 1:
                                        lane_st[w, l] = EXITED
                                    else:
                                        lane_pc[w, l] = nxt
                        elif op == O.OP_BSYNC or op == O.OP_WARPSYNC:
                            if op == O.OP_BSYNC:
                                need = bar[w, oval[pc, 0] & 15]
                            elif m0:
                                need = FULL
                            else:
                                need = (np.int64(regs[w, r0, _lowest_lane(gmask)]) if k0 == O.K_REG else oval[pc, 0]) & FULL
                            for l in range(32):
                                if (gmask >> l) & 1:
                                    lane_pc[w, l] = pc
                                    if (m >> l) & 1 and (need >> l) & 1:
                                        lane_st[w, l] = WAITSYNC
                                        lane_wait[w, l] = need
                                    else:
                                        lane_pc[w, l] = nxt
                        elif op == O.OP_BAR:
                            for l in range(32):
                                if (gmask >> l) & 1:
                                    lane_pc[w, l] = nxt
                                    if (m >> l) & 1:
                                        lane_st[w, l] = WAITBAR
                        elif op == O.OP_RET:
                            # RET.REL R: the register holds the return byte address; map it to an index
                            for l in range(32):
                                if (gmask >> l) & 1:
                                    if (m >> l) & 1:
                                        ra = np.int64(regs[w, r0, l])
                                        idx = -1
                                        for j in range(ins_addr.shape[0]):
                                            if ins_addr[j] == ra:
                                                idx = j
                                                break
                                        if idx < 0:
                                            _mem_fault(err, E_RETURN, pc, w * 32 + l, ra)
                                            return err[0]
                                        lane_pc[w, l] = idx
                                    else:
                                        lane_pc[w, l] = nxt
                        else:
                            _mem_fault(err, E_UNSUPPORTED, pc, w * 32, 0)
                            return err[0]
                        break
                    nrow = cnt[0]
                    nadr = cnt[1]
                    pc = nxt
        waiting = False
        for w in range(nw):
            if wstat[w] == 1:
                waiting = True
        if not waiting:
            cnt[0] = nrow
            cnt[1] = nadr
            return ST_OK
        for w in range(nw):     # every live thread reached BAR.SYNC: release the barrier
            if wstat[w] == 1:
                wstat[w] = 0
                for l in range(32):
                    if lane_st[w, l] == WAITBAR:
                        lane_st[w, l] = RUN


@njit(cache=True, nogil=True, _nrt=False)
def run_blocks(code, fx, okind, oreg, oval, oflag, ins_addr, grid_xyz, block_xyz, nblocks, g8, g32, alo, ahi,
               s8, s32_, l8, l32, local_size, cb32, regs, pm, lane_pc, lane_st, lane_wait, bar, grp, wstat,
               sched, rows_w, rows_i, rows_m, rows_na, addrs, cnt, err, su, sf, sq, sd, tmp, tmp2, fs, record):
    """Run blocks ``sched[0]…nblocks-1`` (one after another; warps of a block round-robin between
    BAR.SYNC barriers). Returns ST_OK when done, ST_FULL when a trace buffer filled (hand the rows
    on or grow the buffers, and call again: all state lives in the arguments) or an error code
    (details in ``err``). Holds no GIL: launches' block ranges run in threads, each with its own
    state arrays (the global memory is shared).

    Scratch comes from the caller (``su``/``sf`` one uint32 and its float32 view, ``sq``/``sd``
    one int64 and its float64 view, ``tmp``/``tmp2`` 32 int64, ``fs`` 512 float64), so that this
    loop, like :func:`run_warps`, is compiled without numba's reference counting (``_nrt=False``):
    each call of ``run_warps`` would otherwise count a reference to each of its ~35 arrays."""
    nthreads = block_xyz[0] * block_xyz[1] * block_xyz[2]
    nw = (nthreads + 31) // 32
    while sched[0] < nblocks:
        blk = sched[0]
        if sched[1] == 0:    # start the block: fresh predicates, lanes, barriers, shared memory
            for w in range(nw):
                for s in range(pm.shape[1]):
                    pm[w, s] = 0
                pm[w, O.PT_SLOT] = FULL
                pm[w, O.UPT_SLOT] = FULL
                for l in range(32):
                    lane_pc[w, l] = 0
                    lane_st[w, l] = RUN if w * 32 + l < nthreads else EXITED
                    lane_wait[w, l] = 0
                for b in range(16):
                    bar[w, b] = 0
                grp[w, 1] = 0
                wstat[w] = 0
            for i in range(s8.shape[0]):
                s8[i] = 0
            sched[1] = 1
        st = run_warps(code, fx, okind, oreg, oval, oflag, regs, pm, lane_pc, lane_st, lane_wait, bar, grp, wstat,
                       ins_addr, block_xyz, grid_xyz, blk, nthreads, nw, g8, g32, alo, ahi, s8, s32_, l8, l32,
                       local_size, cb32, rows_w, rows_i, rows_m, rows_na, addrs, cnt, err, su, sf, sq, sd, tmp, tmp2,
                       fs, record)
        if st != ST_OK:
            return st
        sched[0] = blk + 1
        sched[1] = 0
    return ST_OK
