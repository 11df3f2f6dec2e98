"""Byte-level scanner for the body of an Accel-Sim ``.traceg`` (numba).

The scanner walks a ``uint8`` buffer that holds whole lines (it always ends with ``\\n``) and fills
preallocated output columns, one row per instruction line. It is resumable: it stops before a
line whose output would not fit (rows, addresses, warp or block records) and returns the offset
of that line; the caller flushes the outputs and calls again. All parsing state that spans lines
(current thread block, warp, ``insts =`` count, line number) lives in the ``st`` int64 array, so
one kernel's text can be fed chunk by chunk.

Grammar (docs/formats.md, "Accel-Sim reader"; the writer tracer_tool.cu and the reader
trace_parser.cc of accel-sim-framework)::

    #BEGIN_TB | #END_TB | thread block = x,y,z | cluster id = x,y,z | cluster cta = x,y,z
    cluster rank = r | warp = j | insts = n | blank | instruction line
    instruction := [tbx tby tbz warp  (version < 3)] [line_num (lineinfo)] PC MASK
                   ND ND*REG OPCODE NS NS*REG [GMMA_COMMIT (v6, "GMMA" in opcode)]
                   MEMW [MODE ADDRESSES (MEMW > 0)] [IMM] [IMM2 (v6)] [Val ... | NoVal (v6)]

Opcodes are interned in an open-addressing hash table (FNV-1a over the opcode bytes, verified
byte by byte against a pool), so the per-row opcode column is an integer id.
"""

from __future__ import annotations

import numpy as np

from teg.jit import njit

# ---- state slots -------------------------------------------------------------------------------
S_LINE = 0          # 1-based number of the line about to be read
S_VERSION = 1       # tracer version (int)
S_LINEINFO = 2      # 1 when lines start with a source line number
S_GX, S_GY, S_GZ = 3, 4, 5
S_WPB = 6           # warps per block
S_IN_TB = 7         # inside #BEGIN_TB … #END_TB
S_BROW = 8          # row (0-based, file order) of the current block; -1 before the first
S_BX, S_BY, S_BZ = 9, 10, 11
S_BLIN = 12         # linear id of the current block
S_BEMIT = 13        # current block record emitted
S_CID = 14          # cluster id x,y,z (14, 15, 16)
S_CCTA = 17         # cluster cta x,y,z (17, 18, 19)
S_CRANK = 20
S_WARP = 21         # warp-in-block of the open warp, -1 none
S_EXPECT = 22       # its ``insts =`` value, -1 before the ``insts`` line
S_SEEN = 23         # instruction lines read for it
S_INSTS_LINE = 24   # line of its ``insts =``
S_ERR = 25
S_ERR_LINE = 26
S_ERR_POS = 27      # buffer offset of the offending line
S_ERR_ARG = 28
S_NROWS = 29        # outputs filled in this call
S_NADDR = 30
S_NWREC = 31
S_NBREC = 32
S_NOPS = 33         # interned opcodes
S_POOL = 34         # bytes used in the opcode pool
S_HAS_CLUSTER = 35  # any cluster line seen
S_ERR_ARG2 = 36
S_WARP_LINE = 37    # line of the open warp's ``warp =``
NSTATE = 40

# ---- error codes (messages in teg.trace.accelsim) -----------------------------------------------
E_SYNTAX = 1        # cannot parse the line
E_MODE = 2          # unknown address mode (arg)
E_TMA_MODE = 3      # TMA address mode 3/4 (arg)
E_TMA_OP = 4        # TMA opcode with a memory block
E_COUNT = 5         # insts = arg2 but arg lines
E_OUTSIDE = 6       # instruction line outside a warp
E_NREGS = 7         # too many registers (arg)
E_REG = 8           # register out of range
E_WARP_RANGE = 9    # warp arg out of range
E_GRID = 10         # block outside grid
E_WARP_ORDER = 11   # warp ids not increasing (arg)
E_TB_NEST = 12      # #BEGIN_TB inside a TB / #END_TB outside / structure line outside a TB
E_OPTABLE = 13      # too many distinct opcodes
E_HEADER = 14       # header line in the body
E_MASK = 15         # mask wider than 32 bits

MAX_DST = 4
MAX_SRC = 8

# block record columns: row, x, y, z, linear, cid xyz, ccta xyz, crank
BREC = 12
# warp record columns: global warp id, insts
WREC = 2

_SP, _TAB, _CR, _NL = 32, 9, 13, 10


def _pat(s: str) -> np.ndarray:
    return np.frombuffer(s.encode(), np.uint8).copy()


P_BEGIN = _pat("#BEGIN_TB")
P_END = _pat("#END_TB")
P_THREAD = _pat("thread block")
P_CID = _pat("cluster id")
P_CCTA = _pat("cluster cta")
P_CRANK = _pat("cluster rank")
P_WARP = _pat("warp")
P_INSTS = _pat("insts")
P_GMMA = _pat("GMMA")
P_VAL = _pat("Val")
P_NOVAL = _pat("NoVal")
TMA_NAMES = ("UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UBLKCP", "UBLKPF", "UBLKRED")
P_TMA = _pat("".join(TMA_NAMES))
P_TMA_OFF = np.cumsum([0] + [len(n) for n in TMA_NAMES]).astype(np.int64)


@njit(cache=True, inline="always")
def _is_ws(c):
    return c == _SP or c == _TAB or c == _CR


@njit(cache=True, inline="always")
def _skip(buf, i, le):
    while i < le and (buf[i] == _SP or buf[i] == _TAB):
        i += 1
    return i


@njit(cache=True, inline="always")
def _tok_end(buf, i, le):
    """True when position ``i`` ends a token (space or end of line)."""
    return i >= le or buf[i] == _SP or buf[i] == _TAB


@njit(cache=True)
def _starts(buf, i, le, pat):
    n = pat.shape[0]
    if le - i < n:
        return False
    for k in range(n):
        if buf[i + k] != pat[k]:
            return False
    return True


@njit(cache=True)
def _contains(buf, s, e, pat):
    n = pat.shape[0]
    for i in range(s, e - n + 1):
        ok = True
        for k in range(n):
            if buf[i + k] != pat[k]:
                ok = False
                break
        if ok:
            return True
    return False


@njit(cache=True)
def _dec(buf, i, le):
    """Signed decimal token at ``i`` → (value, next index, ok)."""
    neg = False
    if i < le and (buf[i] == 45 or buf[i] == 43):   # - +
        neg = buf[i] == 45
        i += 1
    start = i
    v = 0
    while i < le and 48 <= buf[i] <= 57:
        v = v * 10 + (buf[i] - 48)
        i += 1
    # v < 0: the digits wrapped past 2**63 - 1 (int64 arithmetic), a value no column holds
    if i == start or i - start > 19 or v < 0 or not _tok_end(buf, i, le):
        return 0, i, False
    return (-v if neg else v), i, True


@njit(cache=True)
def _hex(buf, i, le):
    """Hex token (optional 0x) → (value as int64 bit pattern, next index, digits, ok)."""
    if i + 1 < le and buf[i] == 48 and (buf[i + 1] == 120 or buf[i + 1] == 88):
        i += 2
    start = i
    v = 0
    while i < le:
        c = buf[i]
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            break
        v = (v << 4) | d
        i += 1
    nd = i - start
    if nd == 0 or nd > 16 or not _tok_end(buf, i, le):
        return 0, i, nd, False
    return v, i, nd, True


@njit(cache=True)
def _reg_list(buf, i, le, out, r, cap):
    """A register count followed by that many register tokens (the ``dest_num [reg_dests]`` and
    ``src_num [reg_srcs]`` fields) into row ``r`` of ``out`` (-1 padded). Returns (count, next
    index, error code or 0, error argument)."""
    n, i, ok = _dec(buf, i, le)
    if not ok or n < 0:
        return 0, i, E_SYNTAX, 0
    if n > cap:
        return n, i, E_NREGS, n
    for k in range(cap):
        out[r, k] = -1
    for k in range(n):
        i = _skip(buf, i, le)
        rid, i, rs = _reg(buf, i, le)
        if rs != 0:
            return n, i, (E_SYNTAX if rs == 1 else E_REG), 0
        out[r, k] = rid
    return n, i, 0, 0


@njit(cache=True)
def _reg(buf, i, le):
    """Register token R<n>/UR<n>/P<n>/UP<n> → (flat id or -1 for RZ/URZ/PT/UPT, next, status)
    with status 0 ok, 1 syntax, 2 out of range (teg.sass.registers id space)."""
    base = 0
    count = 255
    zero = 255
    c = buf[i] if i < le else 0
    if c == 82:                                   # R
        i += 1
    elif c == 80:                                 # P
        base, count, zero = 256, 7, 7
        i += 1
    elif c == 85 and i + 1 < le and buf[i + 1] == 82:   # UR
        base, count, zero = 264, 63, 63
        i += 2
    elif c == 85 and i + 1 < le and buf[i + 1] == 80:   # UP
        base, count, zero = 328, 7, 7
        i += 2
    else:
        return 0, i, 1
    start = i
    n = 0
    while i < le and 48 <= buf[i] <= 57:
        n = n * 10 + (buf[i] - 48)
        i += 1
    if i == start or i - start > 4 or not _tok_end(buf, i, le):
        return 0, i, 1
    if n == zero:
        return -1, i, 0
    if n > count:
        return 0, i, 2
    return base + n, i, 0


@njit(cache=True)
def _triple(buf, i, le):
    """``= a,b,c`` → (a, b, c, ok)."""
    i = _skip(buf, i, le)
    if i >= le or buf[i] != 61:
        return 0, 0, 0, False
    i = _skip(buf, i + 1, le)
    vals = np.zeros(3, np.int64)
    for k in range(3):
        i = _skip(buf, i, le)
        start = i
        v = 0
        while i < le and 48 <= buf[i] <= 57:
            v = v * 10 + (buf[i] - 48)
            i += 1
        if i == start:
            return 0, 0, 0, False
        vals[k] = v
        i = _skip(buf, i, le)
        if k < 2:
            if i >= le or buf[i] != 44:
                return 0, 0, 0, False
            i += 1
    if _skip(buf, i, le) != le:
        return 0, 0, 0, False
    return vals[0], vals[1], vals[2], True


@njit(cache=True)
def _single(buf, i, le):
    """``= n`` → (n, ok)."""
    i = _skip(buf, i, le)
    if i >= le or buf[i] != 61:
        return 0, False
    i = _skip(buf, i + 1, le)
    v, i, ok = _dec(buf, i, le)
    if not ok or _skip(buf, i, le) != le:
        return 0, False
    return v, True


@njit(cache=True)
def _intern(buf, s, e, st, hkeys, hvals, pool, pool_off, opflags):
    """Id of the opcode text ``buf[s:e]`` (new ids appended to the pool); -1 when full."""
    h = -3750763034362895579   # FNV-1a 64 offset basis (as int64)
    for k in range(s, e):
        h = (h ^ buf[k]) * 1099511628211
    mask = hkeys.shape[0] - 1
    idx = h & mask
    while hvals[idx] != -1:
        if hkeys[idx] == h:
            oid = hvals[idx]
            ps = pool_off[oid]
            if pool_off[oid + 1] - ps == e - s:
                same = True
                for k in range(e - s):
                    if pool[ps + k] != buf[s + k]:
                        same = False
                        break
                if same:
                    return oid
        idx = (idx + 1) & mask
    oid = st[S_NOPS]
    used = st[S_POOL]
    if oid + 1 >= pool_off.shape[0] or used + (e - s) > pool.shape[0] or 2 * (oid + 1) > hkeys.shape[0]:
        return -1
    for k in range(e - s):
        pool[used + k] = buf[s + k]
    pool_off[oid + 1] = used + (e - s)
    st[S_POOL] = used + (e - s)
    st[S_NOPS] = oid + 1
    hkeys[idx] = h
    hvals[idx] = oid
    flags = 0
    if _contains(buf, s, e, P_GMMA):
        flags |= 1
    for t in range(P_TMA_OFF.shape[0] - 1):
        if _contains(buf, s, e, P_TMA[P_TMA_OFF[t]:P_TMA_OFF[t + 1]]):
            flags |= 2
    opflags[oid] = flags
    return oid


@njit(cache=True)
def _close_warp(st, line):
    """Check the open warp's line count against its ``insts =``; False (error set) on mismatch."""
    if st[S_WARP] >= 0 and st[S_EXPECT] < 0:
        st[S_ERR] = E_TB_NEST
        st[S_ERR_LINE] = st[S_WARP_LINE]
        st[S_ERR_ARG] = 4
        return False
    if st[S_WARP] >= 0 and st[S_EXPECT] != st[S_SEEN]:
        st[S_ERR] = E_COUNT
        st[S_ERR_LINE] = st[S_INSTS_LINE] if st[S_INSTS_LINE] > 0 else line
        st[S_ERR_ARG] = st[S_SEEN]
        st[S_ERR_ARG2] = st[S_EXPECT]
        return False
    st[S_WARP] = -1
    st[S_EXPECT] = -1
    st[S_SEEN] = 0
    return True


@njit(cache=True)
def _emit_block(st, brec):
    n = st[S_NBREC]
    brec[n, 0] = st[S_BROW]
    brec[n, 1] = st[S_BX]
    brec[n, 2] = st[S_BY]
    brec[n, 3] = st[S_BZ]
    brec[n, 4] = st[S_BLIN]
    for k in range(3):
        brec[n, 5 + k] = st[S_CID + k]
        brec[n, 8 + k] = st[S_CCTA + k]
    brec[n, 11] = st[S_CRANK]
    st[S_NBREC] = n + 1
    st[S_BEMIT] = 1


@njit(cache=True)
def _fail(st, code, line, pos, arg):
    st[S_ERR] = code
    st[S_ERR_LINE] = line
    st[S_ERR_POS] = pos
    st[S_ERR_ARG] = arg
    return pos


@njit(cache=True)
def scan(buf, pos, end, st,
         o_warp, o_block, o_pc, o_opc, o_mask, o_dst, o_src, o_memf, o_imm, o_line, o_nad, o_addr,
         wrec, brec, hkeys, hvals, pool, pool_off, opflags):
    """Parse lines of ``buf[pos:end]`` (``buf[end-1] == '\\n'``); return the offset reached."""
    rcap = o_pc.shape[0]
    acap = o_addr.shape[0]
    version = st[S_VERSION]
    lineinfo = st[S_LINEINFO]
    while pos < end:
        line = st[S_LINE]
        e = pos
        while buf[e] != _NL:
            e += 1
        le = e
        while le > pos and _is_ws(buf[le - 1]):
            le -= 1
        i = _skip(buf, pos, le)
        if i == le:
            st[S_LINE] = line + 1
            pos = e + 1
            continue
        c = buf[i]
        if c == 35:                                          # '#'
            if _starts(buf, i, le, P_BEGIN) and _skip(buf, i + 9, le) == le:
                if st[S_IN_TB] == 1:
                    return _fail(st, E_TB_NEST, line, pos, 0)
                st[S_IN_TB] = 1
                st[S_BROW] += 1
                st[S_BEMIT] = 0
                st[S_BX] = -1
                st[S_WARP] = -1
                st[S_EXPECT] = -1
                st[S_SEEN] = 0
                for k in range(7):
                    st[S_CID + k] = 0
            elif _starts(buf, i, le, P_END) and _skip(buf, i + 7, le) == le:
                if st[S_IN_TB] == 0 or st[S_BX] < 0:
                    return _fail(st, E_TB_NEST, line, pos, 1)
                if st[S_NBREC] >= brec.shape[0]:
                    return pos
                if not _close_warp(st, line):
                    st[S_ERR_POS] = pos
                    return pos
                if st[S_BEMIT] == 0:
                    _emit_block(st, brec)
                st[S_IN_TB] = 0
            # any other '#' line is a comment
        elif c == 116 and _starts(buf, i, le, P_THREAD):    # thread block = x,y,z
            x, y, z, ok = _triple(buf, i + 12, le)
            if not ok:
                return _fail(st, E_SYNTAX, line, pos, 0)
            if st[S_IN_TB] == 0 or st[S_BX] >= 0:
                return _fail(st, E_TB_NEST, line, pos, 2)
            if x >= st[S_GX] or y >= st[S_GY] or z >= st[S_GZ]:
                return _fail(st, E_GRID, line, pos, 0)
            st[S_BX] = x
            st[S_BY] = y
            st[S_BZ] = z
            st[S_BLIN] = (z * st[S_GY] + y) * st[S_GX] + x
        elif c == 99 and (_starts(buf, i, le, P_CID) or _starts(buf, i, le, P_CCTA)):   # cluster id/cta
            slot = S_CID if buf[i + 8] == 105 else S_CCTA
            off = 10 if slot == S_CID else 11
            x, y, z, ok = _triple(buf, i + off, le)
            if not ok:
                return _fail(st, E_SYNTAX, line, pos, 0)
            if st[S_IN_TB] == 0 or st[S_BEMIT] == 1:
                return _fail(st, E_TB_NEST, line, pos, 2)
            st[slot] = x
            st[slot + 1] = y
            st[slot + 2] = z
            st[S_HAS_CLUSTER] = 1
        elif c == 99 and _starts(buf, i, le, P_CRANK):
            r, ok = _single(buf, i + 12, le)
            if not ok:
                return _fail(st, E_SYNTAX, line, pos, 0)
            if st[S_IN_TB] == 0 or st[S_BEMIT] == 1:
                return _fail(st, E_TB_NEST, line, pos, 2)
            st[S_CRANK] = r
            st[S_HAS_CLUSTER] = 1
        elif c == 119 and _starts(buf, i, le, P_WARP):      # warp = j
            j, ok = _single(buf, i + 4, le)
            if not ok:
                return _fail(st, E_SYNTAX, line, pos, 0)
            if st[S_IN_TB] == 0 or st[S_BX] < 0:
                return _fail(st, E_TB_NEST, line, pos, 2)
            if st[S_NBREC] >= brec.shape[0] or st[S_NWREC] >= wrec.shape[0]:
                return pos
            prev = st[S_WARP]
            if not _close_warp(st, line):
                st[S_ERR_POS] = pos
                return pos
            if j < 0 or j >= st[S_WPB]:
                return _fail(st, E_WARP_RANGE, line, pos, j)
            if j <= prev:
                return _fail(st, E_WARP_ORDER, line, pos, j)
            if st[S_BEMIT] == 0:
                _emit_block(st, brec)
            st[S_WARP] = j
            st[S_WARP_LINE] = line
            st[S_EXPECT] = -1
            st[S_SEEN] = 0
        elif c == 105 and _starts(buf, i, le, P_INSTS):     # insts = n
            n, ok = _single(buf, i + 5, le)
            if not ok or n < 0:
                return _fail(st, E_SYNTAX, line, pos, 0)
            if st[S_WARP] < 0 or st[S_EXPECT] >= 0:
                return _fail(st, E_TB_NEST, line, pos, 3)
            w = st[S_NWREC]
            wrec[w, 0] = st[S_BROW] * st[S_WPB] + st[S_WARP]
            wrec[w, 1] = n
            st[S_NWREC] = w + 1
            st[S_EXPECT] = n
            st[S_SEEN] = 0
            st[S_INSTS_LINE] = line
        elif c == 45:                                        # '-' header line
            return _fail(st, E_HEADER, line, pos, 0)
        else:                                                # instruction line
            r = st[S_NROWS]
            na = st[S_NADDR]
            if r >= rcap or na + 32 > acap:
                return pos
            if st[S_WARP] < 0 or st[S_EXPECT] < 0:
                return _fail(st, E_OUTSIDE, line, pos, 0)
            if st[S_SEEN] >= st[S_EXPECT]:
                st[S_ERR_ARG2] = st[S_EXPECT]
                return _fail(st, E_COUNT, st[S_INSTS_LINE], pos, -1)
            ok = True
            if version < 3:                                  # tb x, y, z, warp prefix
                for k in range(4):
                    v, i, ok = _dec(buf, i, le)
                    if not ok:
                        return _fail(st, E_SYNTAX, line, pos, 0)
                    i = _skip(buf, i, le)
            ln = 0
            if lineinfo:
                ln, i, ok = _dec(buf, i, le)
                if not ok:
                    return _fail(st, E_SYNTAX, line, pos, 0)
                i = _skip(buf, i, le)
            pc, i, nd, ok = _hex(buf, i, le)
            if not ok:
                return _fail(st, E_SYNTAX, line, pos, 0)
            i = _skip(buf, i, le)
            mask, i, nd, ok = _hex(buf, i, le)
            if not ok:
                return _fail(st, E_SYNTAX, line, pos, 0)
            if nd > 8:
                return _fail(st, E_MASK, line, pos, 0)
            i = _skip(buf, i, le)
            ndst, i, err, arg = _reg_list(buf, i, le, o_dst, r, MAX_DST)
            if err != 0:
                return _fail(st, err, line, pos, arg)
            i = _skip(buf, i, le)
            os_ = i
            if i >= le or not (65 <= buf[i] <= 90 or 97 <= buf[i] <= 122):
                return _fail(st, E_SYNTAX, line, pos, 0)
            while i < le and not (buf[i] == _SP or buf[i] == _TAB):
                i += 1
            oid = _intern(buf, os_, i, st, hkeys, hvals, pool, pool_off, opflags)
            if oid < 0:
                return _fail(st, E_OPTABLE, line, pos, 0)
            i = _skip(buf, i, le)
            nsrc, i, err, arg = _reg_list(buf, i, le, o_src, r, MAX_SRC)
            if err != 0:
                return _fail(st, err, line, pos, arg)
            i = _skip(buf, i, le)
            if version >= 6 and (opflags[oid] & 1):           # GMMA commit flag
                v, i, ok = _dec(buf, i, le)
                if not ok:
                    return _fail(st, E_SYNTAX, line, pos, 0)
                i = _skip(buf, i, le)
            memw, i, ok = _dec(buf, i, le)
            if not ok or memw < 0:
                return _fail(st, E_SYNTAX, line, pos, 0)
            nad = 0
            if memw > 0:
                if opflags[oid] & 2:
                    return _fail(st, E_TMA_OP, line, pos, 0)
                i = _skip(buf, i, le)
                mode, i, ok = _dec(buf, i, le)
                if not ok:
                    return _fail(st, E_SYNTAX, line, pos, 0)
                m = mask & 0xFFFFFFFF
                cnt = 0
                while m:
                    m &= m - 1
                    cnt += 1
                if mode == 0:                                # list: one address per active lane
                    for k in range(cnt):
                        i = _skip(buf, i, le)
                        a, i, nd, ok = _hex(buf, i, le)
                        if not ok:
                            return _fail(st, E_SYNTAX, line, pos, 0)
                        o_addr[na + k] = a
                    nad = cnt
                elif mode == 1:                              # base + stride
                    i = _skip(buf, i, le)
                    a, i, nd, ok = _hex(buf, i, le)
                    if not ok:
                        return _fail(st, E_SYNTAX, line, pos, 0)
                    i = _skip(buf, i, le)
                    stride, i, ok = _dec(buf, i, le)
                    if not ok:
                        return _fail(st, E_SYNTAX, line, pos, 0)
                    for k in range(cnt):
                        o_addr[na + k] = a + k * stride
                    nad = cnt
                elif mode == 2:                              # base + (popcount - 1) deltas
                    i = _skip(buf, i, le)
                    a, i, nd, ok = _hex(buf, i, le)
                    if not ok:
                        return _fail(st, E_SYNTAX, line, pos, 0)
                    if cnt > 0:
                        o_addr[na] = a
                    for k in range(1, cnt):
                        i = _skip(buf, i, le)
                        dlt, i, ok = _dec(buf, i, le)
                        if not ok:
                            return _fail(st, E_SYNTAX, line, pos, 0)
                        a = a + dlt
                        o_addr[na + k] = a
                    nad = cnt
                elif mode == 3 or mode == 4:
                    return _fail(st, E_TMA_MODE, line, pos, mode)
                else:
                    return _fail(st, E_MODE, line, pos, mode)
            i = _skip(buf, i, le)
            imm = 0
            if i < le:
                if version < 4:                              # no immediate column before tracer v4
                    return _fail(st, E_SYNTAX, line, pos, 0)
                imm, i, ok = _dec(buf, i, le)
                if not ok:
                    return _fail(st, E_SYNTAX, line, pos, 0)
                i = _skip(buf, i, le)
            if version >= 6 and i < le:
                if 48 <= buf[i] <= 57 or buf[i] == 45:        # imm2
                    v, i, ok = _dec(buf, i, le)
                    if not ok:
                        return _fail(st, E_SYNTAX, line, pos, 0)
                    i = _skip(buf, i, le)
                if _starts(buf, i, le, P_NOVAL) and _tok_end(buf, i + 5, le):
                    i = _skip(buf, i + 5, le)
                elif _starts(buf, i, le, P_VAL) and _tok_end(buf, i + 3, le):
                    i = _skip(buf, i + 3, le)
                    for k in range(ndst + nsrc):          # per register: k values (1 or 32)
                        nv, i, ok = _dec(buf, i, le)
                        if not ok or not (nv == 1 or nv == 32):
                            return _fail(st, E_SYNTAX, line, pos, 0)
                        for q in range(nv):
                            i = _skip(buf, i, le)
                            v, i, nd, ok = _hex(buf, i, le)
                            if not ok:
                                return _fail(st, E_SYNTAX, line, pos, 0)
                        i = _skip(buf, i, le)
            if i < le:
                return _fail(st, E_SYNTAX, line, pos, 0)
            o_warp[r] = st[S_BROW] * st[S_WPB] + st[S_WARP]
            o_block[r] = st[S_BLIN]
            o_pc[r] = pc
            o_opc[r] = oid
            o_mask[r] = mask
            o_memf[r] = 1 if memw > 0 else 0
            o_imm[r] = imm
            o_line[r] = ln
            o_nad[r] = nad
            st[S_NROWS] = r + 1
            st[S_NADDR] = na + nad
            st[S_SEEN] += 1
        st[S_LINE] = line + 1
        pos = e + 1
    return pos
