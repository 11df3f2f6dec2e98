"""Numba formatter of Accel-Sim instruction lines (the inverse of :mod:`teg.trace.scanner`).

``format_rows`` writes rows ``r0 … r1-1`` of a kernel's columns as ``.traceg`` instruction lines
into a byte buffer and stops early when the buffer is nearly full (the caller writes the buffer out
and calls again from the returned row). Line layout, as the tracer prints it (every field followed
by one space)::

    [tb_x tb_y tb_z warp (version < 3)] [line_num] PC MASK ND REGS OPCODE NS REGS [0 (v6 GMMA)]
    MEMW [1 base stride | 2 base deltas…] [IMM (version ≥ 5, or non-zero)]

Registers are what the NVBit tracer prints (:mod:`teg.trace.nvbit_view`): general registers only,
at most one destination and ``MAX_SRC`` sources, so that Accel-Sim's parser accepts every row.
Addresses are encoded as the tracer does (``tracer_tool.cu`` base_stride / base_delta): mode 1
when the active lanes form one contiguous run of ≥ 2 lanes with one 32-bit stride (``1 0x0 0`` for
no active lane), otherwise mode 2 with one delta per further active lane.
"""

from __future__ import annotations

import numpy as np

from teg.jit import njit

ROW_ROOM = 2048          # bytes reserved per row besides its opcode text
MAX_SRC = 4              # sources per row Accel-Sim's trace parser accepts (trace_parser.h MAX_SRC)
ERR_ADDR_COUNT = 1       # a memory row whose address count differs from popcount(mask)

_NO_LANES = np.frombuffer(b"1 0x0 0 ", np.uint8).copy()
_INT64_MIN_DIGITS = np.frombuffer(b"9223372036854775808", np.uint8).copy()


@njit(cache=True, inline="always")
def _put(buf, p, c):
    buf[p] = c
    return p + 1


@njit(cache=True)
def _dec(buf, p, v):
    """Signed decimal."""
    if v < 0:
        p = _put(buf, p, 45)
        if v == -9223372036854775807 - 1:       # |INT64_MIN| does not fit: print its digits directly
            for k in range(_INT64_MIN_DIGITS.shape[0]):
                p = _put(buf, p, _INT64_MIN_DIGITS[k])
            return p
        v = -v
    tmp = np.empty(20, np.uint8)
    n = 0
    while True:
        tmp[n] = 48 + v % 10
        n += 1
        v //= 10
        if v == 0:
            break
    for k in range(n - 1, -1, -1):
        p = _put(buf, p, tmp[k])
    return p


@njit(cache=True)
def _hex(buf, p, v, min_digits):
    """Lower-case hex of the 64-bit pattern of ``v`` with at least ``min_digits`` digits."""
    top = 15
    while top > 0 and ((v >> (4 * top)) & 15) == 0:
        top -= 1
    top = max(top, min_digits - 1)
    for k in range(top, -1, -1):
        d = (v >> (4 * k)) & 15
        p = _put(buf, p, 48 + d if d < 10 else 87 + d)
    return p


@njit(cache=True)
def _reg(buf, p, rid):
    """Register name of a flat id (teg.sass.registers); -1 prints as R255 (a zero register)."""
    if rid < 0:
        base, a, b = 0, 82, 0
        rid = 255
    elif rid < 256:
        base, a, b = 0, 82, 0          # R
    elif rid < 264:
        base, a, b = 256, 80, 0        # P
    elif rid < 328:
        base, a, b = 264, 85, 82       # UR
    elif rid < 336:
        base, a, b = 328, 85, 80       # UP
    else:
        base, a, b = 336, 65, 0        # A
    p = _put(buf, p, a)
    if b:
        p = _put(buf, p, b)
    return _dec(buf, p, rid - base)


@njit(cache=True)
def _dst_field(buf, p, regs):
    """``1 R<n> `` for the first general register of a destination list (ids 0 … 255; 255 = RZ in
    a tracer view), else ``0 ``: the tracer prints at most one destination, never P/UR/UP."""
    for k in range(regs.shape[0]):
        if 0 <= regs[k] < 256:
            p = _put(buf, p, 49)
            p = _put(buf, p, 32)
            p = _reg(buf, p, regs[k])
            return _put(buf, p, 32)
    p = _put(buf, p, 48)
    return _put(buf, p, 32)


@njit(cache=True)
def _src_field(buf, p, regs):
    """``n R… `` with the first ``MAX_SRC`` general-register or zero (-1) entries of a source list,
    up to the last real register (zero registers before it as R255); P/UR/UP/A ids are left out."""
    kept = np.empty(MAX_SRC, np.int64)
    n = 0
    last = -1
    for k in range(regs.shape[0]):
        rid = regs[k]
        if rid >= 256:
            continue
        if n == MAX_SRC:
            break
        kept[n] = rid
        if rid >= 0:
            last = n
        n += 1
    p = _dec(buf, p, last + 1)
    p = _put(buf, p, 32)
    for k in range(last + 1):
        p = _reg(buf, p, kept[k])
        p = _put(buf, p, 32)
    return p


@njit(cache=True)
def _contiguous(m):
    low = m & -m
    return m != 0 and ((m + low) & m) == 0


@njit(cache=True)
def format_rows(buf, r0, r1, version, lineinfo, prefix, warp_in_block, pc, mask, opc, dst, src, mem_width, imm,
                addr_start, addresses, line_num, op_pool, op_off, op_gmma, view_pc, view_regs, err):
    """Format rows ``r0 … r1-1``; return (bytes written, next row). ``prefix`` = block x,y,z.
    Registers: a row whose PC is in ``view_pc`` (sorted) prints that row of ``view_regs``
    (destination, then sources: :mod:`teg.trace.nvbit_view`), any other row its ``dst``/``src``
    reduced the same way (general registers only, one destination, ``MAX_SRC`` sources)."""
    p = 0
    cap = buf.shape[0]
    r = r0
    nview = view_pc.shape[0]
    while r < r1:
        o = opc[r]
        if p + ROW_ROOM + (op_off[o + 1] - op_off[o]) > cap:
            break
        if version < 3:
            for k in range(3):
                p = _dec(buf, p, prefix[k])
                p = _put(buf, p, 32)
            p = _dec(buf, p, warp_in_block)
            p = _put(buf, p, 32)
        if lineinfo:
            p = _dec(buf, p, line_num[r])
            p = _put(buf, p, 32)
        p = _hex(buf, p, pc[r], 4)
        p = _put(buf, p, 32)
        m = np.int64(mask[r])
        p = _hex(buf, p, m, 8)
        p = _put(buf, p, 32)
        vi = np.searchsorted(view_pc, pc[r]) if nview else 0
        if nview and vi < nview and view_pc[vi] == pc[r]:
            rd, rs = view_regs[vi, :1], view_regs[vi, 1:]
        else:
            rd, rs = dst[r], src[r]
        p = _dst_field(buf, p, rd)
        for k in range(op_off[o], op_off[o + 1]):
            p = _put(buf, p, op_pool[k])
        p = _put(buf, p, 32)
        p = _src_field(buf, p, rs)
        if op_gmma[o]:
            p = _put(buf, p, 48)
            p = _put(buf, p, 32)
        w = mem_width[r]
        p = _dec(buf, p, w)
        p = _put(buf, p, 32)
        if w > 0:
            s, e = addr_start[r], addr_start[r + 1]
            k = e - s
            cnt = 0
            mm = m
            while mm:
                mm &= mm - 1
                cnt += 1
            if k != cnt:
                err[0] = ERR_ADDR_COUNT
                err[1] = r
                return p, r
            if k == 0:
                for q in range(_NO_LANES.shape[0]):
                    p = _put(buf, p, _NO_LANES[q])
            else:
                stride = addresses[s + 1] - addresses[s] if k >= 2 else 0
                uniform = k >= 2 and _contiguous(m) and -2147483648 <= stride <= 2147483647
                for j in range(s + 2, e):
                    if not uniform:
                        break
                    if addresses[j] - addresses[j - 1] != stride:
                        uniform = False
                p = _put(buf, p, 49 if uniform else 50)
                p = _put(buf, p, 32)
                p = _put(buf, p, 48)
                p = _put(buf, p, 120)
                p = _hex(buf, p, addresses[s], 1)
                p = _put(buf, p, 32)
                if uniform:
                    p = _dec(buf, p, stride)
                    p = _put(buf, p, 32)
                else:
                    for j in range(s + 1, e):
                        p = _dec(buf, p, addresses[j] - addresses[j - 1])
                        p = _put(buf, p, 32)
        if version >= 5 or imm[r] != 0:
            p = _dec(buf, p, imm[r])
            p = _put(buf, p, 32)
        p = _put(buf, p, 10)
        r += 1
    return p, r
