"""From the rows the interpreter records (warp, instruction, mask, address count per row, and the
addresses) to trace columns: one jitted pass that groups the rows by warp and expands each row's
static columns (PC, opcode, registers, width, immediate) from its instruction.

Grouping is a counting sort over the warps the rows belong to (stable: each warp's rows keep
their execution order), O(rows + warps); the addresses of a row move with it. It holds no GIL,
so the worker threads of a launch expand their own blocks' rows.

``static=False`` leaves the static columns (opcode, registers, width, immediate) unwritten: a
sink whose writer stores them once per pc (:meth:`teg.trace.native.KernelWriter.promise_static_by_pc`)
needs only the pc of each row, and writing 38 of a row's 62 bytes only to collapse them again per
frame was about a third of the expansion's time. ``gather=True`` leaves the addresses where the
interpreter recorded them and gives each row's offset there: copying them (117 bytes a row on a
matmul) was two thirds of what was left.
"""

from __future__ import annotations

import numpy as np

from teg.jit import njit


@njit(cache=True, nogil=True)
def expand(rw, ri, rm, rna, addrs, nw, ins_addr, opc, dst, src, mem_width, imm, static, gather):
    """``(warp, block, pc, opcode, mask, dst, src, mem_width, imm, n_addr, addresses)`` of the rows
    ``rw/ri/rm/rna`` (warp, instruction, mask, address count) with ``addrs`` the rows' addresses
    in recording order, grouped by warp (``nw`` warps per block), in new arrays (the static
    columns of no rows unless ``static``; with ``gather``, each row's offset in ``addrs`` in
    place of the addresses)."""
    n = rw.shape[0]
    total = 0
    for i in range(n):
        total += rna[i]
    ns = n if static else 0
    warp = np.empty(n, np.int32)
    block = np.empty(n, np.int32)
    pc = np.empty(n, np.int64)
    opcode = np.empty(ns, np.int32)
    mask = np.empty(n, np.uint32)
    d = np.empty((ns, dst.shape[1]), np.int16)
    s = np.empty((ns, src.shape[1]), np.int16)
    mw = np.empty(ns, np.int16)
    im = np.empty(ns, np.int64)
    na = np.empty(n, np.int64)
    out = np.empty(n if gather else total, np.uint64)
    expand_into(rw, ri, rm, rna, addrs, nw, ins_addr, opc, dst, src, mem_width, imm,
                warp, block, pc, opcode, mask, d, s, mw, im, na, out, static, gather)
    return warp, block, pc, opcode, mask, d, s, mw, im, na, out


@njit(cache=True, nogil=True)
def expand_into(rw, ri, rm, rna, addrs, nw, ins_addr, opc, dst, src, mem_width, imm,
                warp, block, pc, opcode, mask, d, s, mw, im, na, out, static, gather):
    """:func:`expand` into given arrays (at least as long as the rows and their addresses: a sink
    that does not keep what it is handed reuses one set for every chunk of a launch, so the
    memory is not faulted in afresh each time; the static ones untouched unless ``static``).
    ``gather``: ``out`` (at least as long as the rows) receives each row's offset in ``addrs``
    instead of its addresses (:class:`teg.trace.codec.Gathered`: the writer reads them there)."""
    n = rw.shape[0]
    wlo = 0
    whi = -1
    if n:
        wlo = rw[0]
        whi = rw[0]
        for i in range(n):
            w = rw[i]
            if w < wlo:
                wlo = w
            if w > whi:
                whi = w
    nb = whi - wlo + 1
    rstart = np.zeros(nb + 1, np.int64)       # first output row of each warp
    astart = np.zeros(nb + 1, np.int64)       # first output address of each warp
    for i in range(n):
        k = rw[i] - wlo
        rstart[k + 1] += 1
        astart[k + 1] += rna[i]
    wblock = np.empty(nb, np.int32)           # the block of each warp (one division per warp, not per row)
    for k in range(nb):
        rstart[k + 1] += rstart[k]
        astart[k + 1] += astart[k]
        wblock[k] = (wlo + k) // nw
    a_in = 0
    for i in range(n):
        k = rw[i] - wlo
        j = rstart[k]
        rstart[k] = j + 1
        ins = ri[i]
        warp[j] = rw[i]
        block[j] = wblock[k]
        pc[j] = ins_addr[ins]
        mask[j] = rm[i]
        if static:
            opcode[j] = opc[ins]
            for c in range(dst.shape[1]):
                d[j, c] = dst[ins, c]
            for c in range(src.shape[1]):
                s[j, c] = src[ins, c]
            mw[j] = mem_width[ins]
            im[j] = imm[ins]
        c_n = rna[i]
        na[j] = c_n
        if gather:
            out[j] = a_in
        else:
            a_out = astart[k]
            for q in range(c_n):
                out[a_out + q] = addrs[a_in + q]
            astart[k] = a_out + c_n
        a_in += c_n
