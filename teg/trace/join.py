"""Joining a trace with its SASS: map every trace PC to the static instruction at that address.

Rule for opcode agreement (NVBit prints the opcode through its own disassembler, the SASS comes
from cuobjdump/nvdisasm): the trace opcode and the static opcode agree when their full texts are
equal, or, failing that, when their base opcodes (text before the first ``.``) are equal — the two
disassemblers may spell or omit default modifiers differently, but never disagree on the
operation. A PC that is not an instruction address, or a differing base opcode, means the trace
was taken from a different binary.
"""

from __future__ import annotations

import numpy as np

from teg.jit import njit
from teg.sass.program import Program
from teg.trace.errors import TraceMismatchError
from teg.trace.model import KernelTrace


def opcodes_agree(trace_op: str, static_op: str) -> bool:
    """The join rule above: equal full text, else equal base opcode."""
    return trace_op == static_op or trace_op.split(".", 1)[0] == static_op.split(".", 1)[0]


def join(kt: KernelTrace, program: Program) -> np.ndarray:
    """Static instruction index (int32) of every trace row; raises :class:`TraceMismatchError`
    naming the first (in row order) PC that is not in ``program`` or whose opcode disagrees."""
    addr = np.array([ins.address for ins in program.instructions], np.int64)
    order = np.argsort(addr, kind="stable")
    saddr = addr[order]
    pcs = np.asarray(kt.pc)
    where = f"kernel {kt.info.name or kt.info.kernel_id} vs SASS {program.name}" + (f" ({program.source})" if program.source else "")
    n = pcs.shape[0]
    if n == 0:
        return np.zeros(0, np.int32)
    if saddr.shape[0] == 0:
        raise TraceMismatchError(f"{where}: the program has no instructions but the trace has {n} rows")
    # static index of every row and the first row of every (static index, opcode) pair, in one
    # jitted pass: PCs looked up in a table over the program's address span (a binary search
    # when that span is too sparse for a table)
    first_of = np.zeros(saddr.shape[0], bool)
    first_of[0] = True
    first_of[1:] = saddr[1:] != saddr[:-1]          # equal addresses: the lowest index (stable sort)
    span = int(saddr[-1] - saddr[0]) + 1
    if span <= max(1 << 20, 64 * saddr.shape[0]):
        table = np.full(span, -1, np.int32)
        table[saddr[first_of] - saddr[0]] = order[first_of]
    else:
        table = np.zeros(0, np.int32)
    nops = max(len(kt.opcodes), 1)
    S = len(program.instructions)
    # first row of each (static index, opcode) pair; too many pairs for a table: sorted keys below
    pair_first = np.full(S * nops if S * nops <= (1 << 22) else 0, -1, np.int64)
    idx = np.empty(n, np.int32)
    miss = _join_rows(np.asarray(pcs, np.int64), np.asarray(kt.opcode, np.int32), np.int64(saddr[0]), table,
                      saddr, order.astype(np.int32), np.int64(nops), pair_first, idx)
    if miss >= 0:
        i = int(miss)
        raise TraceMismatchError(f"{where}: trace PC 0x{int(pcs[i]):04x} (row {i}, opcode {kt.opcodes[int(kt.opcode[i])]}) "
                                 "is not an instruction address of the program — trace from a different binary?")
    if pair_first.shape[0]:
        keys = np.nonzero(pair_first >= 0)[0]
        firsts = pair_first[keys]
    else:
        keys, firsts = np.unique(idx.astype(np.int64) * nops + np.asarray(kt.opcode, np.int64), return_index=True)
    bad = []
    for k, f in zip(keys.tolist(), firsts.tolist()):
        s, o = divmod(k, nops)
        static = program.instructions[s].opcode
        if not opcodes_agree(kt.opcodes[o], static):
            bad.append((f, s, o))
    if bad:
        f, s, o = min(bad)
        raise TraceMismatchError(f"{where}: at PC 0x{int(pcs[f]):04x} (row {f}) the trace executes {kt.opcodes[o]} but the "
                                 f"SASS has {program.instructions[s].opcode} — trace from a different binary?")
    return idx


@njit(cache=True)
def _join_rows(pcs, opcode, base, table, saddr, order, nops, pair_first, idx):
    """Fill ``idx`` (static index of every row) and ``pair_first[s * nops + o]`` (first row of
    each pair, when the table is given); returns the first row whose PC is not an instruction
    address, or -1."""
    L = table.shape[0]
    S = saddr.shape[0]
    track = pair_first.shape[0] > 0
    for i in range(pcs.shape[0]):
        pc = pcs[i]
        if L > 0:
            off = pc - base
            if off < 0 or off >= L:
                return i
            s = table[off]
            if s < 0:
                return i
        else:
            lo = 0
            hi = S
            while lo < hi:             # leftmost position with saddr[pos] >= pc
                mid = (lo + hi) >> 1
                if saddr[mid] < pc:
                    lo = mid + 1
                else:
                    hi = mid
            if lo >= S or saddr[lo] != pc:
                return i
            s = order[lo]
        idx[i] = s
        if track:
            k = np.int64(s) * nops + opcode[i]
            if pair_first[k] < 0:
                pair_first[k] = i
    return -1


def distinct_pcs(pc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(pc, return_index=True, return_inverse=True)`` for a trace's PC column — the
    sorted distinct PCs, the first row of each and every row's position among them (int32) — by a
    table over the PC span in one jitted pass instead of sorting the rows."""
    pc = np.asarray(pc, np.int64)
    n = pc.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32)
    lo, hi = int(pc.min()), int(pc.max())
    span = hi - lo + 1
    if span > max(1 << 22, n):            # too sparse for a table: sort
        pcs, first, inv = np.unique(pc, return_index=True, return_inverse=True)
        return pcs, first, inv.astype(np.int32)
    first_row = np.full(span, -1, np.int64)
    _first_rows(pc, lo, first_row)
    present = np.nonzero(first_row >= 0)[0]
    rank = np.full(span, -1, np.int32)
    rank[present] = np.arange(present.shape[0], dtype=np.int32)
    inv = np.empty(n, np.int32)
    _ranks(pc, lo, rank, inv)
    return present + lo, first_row[present], inv


@njit(cache=True)
def _first_rows(pc, lo, first_row):
    for i in range(pc.shape[0]):
        off = pc[i] - lo
        if first_row[off] < 0:
            first_row[off] = i


@njit(cache=True)
def _ranks(pc, lo, rank, inv):
    for i in range(pc.shape[0]):
        inv[i] = rank[pc[i] - lo]
