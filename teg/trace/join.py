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
    pos = np.searchsorted(saddr, pcs)
    pos_c = np.minimum(pos, saddr.shape[0] - 1)
    hit = saddr[pos_c] == pcs
    if not hit.all():
        i = int(np.argmin(hit))
        raise TraceMismatchError(f"{where}: trace PC 0x{int(pcs[i]):04x} (row {i}, opcode {kt.opcodes[int(kt.opcode[i])]}) "
                                 "is not an instruction address of the program — trace from a different binary?")
    idx = order[pos_c].astype(np.int32)
    nops = max(len(kt.opcodes), 1)
    key = idx.astype(np.int64) * nops + np.asarray(kt.opcode, np.int64)
    uniq, first = np.unique(key, return_index=True)
    bad = []
    for k, f in zip(uniq.tolist(), first.tolist()):
        s, o = divmod(k, nops)
        static = program.instructions[s].opcode
        if not opcodes_agree(kt.opcodes[o], static):
            bad.append((f, s, o))
    if bad:
        f, s, o = min(bad)
        raise TraceMismatchError(f"{where}: at PC 0x{int(pcs[f]):04x} (row {f}) the trace executes {kt.opcodes[o]} but the "
                                 f"SASS has {program.instructions[s].opcode} — trace from a different binary?")
    return idx
