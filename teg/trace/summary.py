"""Per-kernel trace statistics for ``teg trace info``: launch geometry, dynamic instruction mix by
unit class, memory instructions by space, average active lanes and 32-byte sectors per request.

Definitions:
* *active lanes* of a row = popcount(mask); the average is over all rows;
* *sectors per request* (transactions per request) of a global memory row with ≥1 active lane =
  number of distinct 32-byte sectors ``[a // 32, (a + width - 1) // 32]`` over its active lanes'
  addresses ``a`` (the sector-based coalescing rule of sm_70+: CUDA C++ Best Practices
  Guide, "Coalesced Access to Global Memory", one 32-byte transaction per sector touched);
* *global requests* (Nsight Compute's ``GMEM read/write requests``) = global memory rows with ≥1
  active lane, split into loads, stores and atomics by the opcode's kind;
* memory *space* and *unit class* come from the machine table's opcode classification
  (:meth:`teg.machine.Machine.classify`); opcodes the table does not know are listed as unknown.
"""

from __future__ import annotations

import numpy as np

from teg import TegError
from teg.jit import njit
from teg.trace.model import KernelTrace

SECTOR_BYTES = 32


def popcount32(mask: np.ndarray) -> np.ndarray:
    """Set bits of each uint32 (numpy ≥ 2 ``bitwise_count``, else a byte lookup table)."""
    m = np.asarray(mask, np.uint32)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(m).astype(np.int64)
    table = np.array([bin(i).count("1") for i in range(256)], np.int64)
    b = m.view(np.uint8).reshape(-1, 4)
    return table[b].sum(axis=1)


@njit(cache=True)
def _sectors_per_row(rows, addr_start, addresses, width, out):
    """Distinct ``SECTOR_BYTES`` sectors touched by each listed row (CSR addresses)."""
    buf = np.empty(128, np.uint64)
    for k in range(rows.shape[0]):
        i = rows[k]
        s, e = addr_start[i], addr_start[i + 1]
        w = np.uint64(max(int(width[i]), 1))
        n = 0
        for j in range(s, e):
            a = addresses[j]
            first = a // np.uint64(SECTOR_BYTES)
            last = (a + w - np.uint64(1)) // np.uint64(SECTOR_BYTES)
            q = first
            while q <= last and n < buf.shape[0]:
                buf[n] = q
                n += 1
                q += np.uint64(1)
        if n == 0:
            out[k] = 0
            continue
        v = np.sort(buf[:n])
        c = 1
        for j in range(1, n):
            if v[j] != v[j - 1]:
                c += 1
        out[k] = c


def sectors_per_request(kt: KernelTrace, rows: np.ndarray) -> np.ndarray:
    """Distinct 32-byte sectors of each row in ``rows`` (see the module docstring)."""
    rows = np.asarray(rows, np.int64)
    out = np.zeros(rows.shape[0], np.int64)
    if rows.shape[0]:
        _sectors_per_row(rows, np.asarray(kt.addr_start), np.asarray(kt.addresses), np.asarray(kt.mem_width), out)
    return out


def kernel_summary(kt: KernelTrace, machine=None) -> dict:
    """JSON-ready statistics of one kernel. ``machine`` (a :class:`teg.machine.Machine`) gives unit
    classes and memory spaces; without it those two sections are omitted (``classified: false``)."""
    info = kt.info
    n = kt.num_rows
    opc = np.asarray(kt.opcode)
    per_op = np.bincount(opc, minlength=len(kt.opcodes)) if n else np.zeros(len(kt.opcodes), np.int64)
    lanes = popcount32(np.asarray(kt.mask)) if n else np.zeros(0, np.int64)
    memrow = np.asarray(kt.mem_width) > 0
    mem_per_op = np.bincount(opc[memrow], minlength=len(kt.opcodes)) if n else per_op
    d: dict = {
        "name": info.name, "id": info.kernel_id, "grid": list(info.grid), "block": list(info.block),
        "blocks": int(kt.block_xyz.shape[0]), "warps": kt.num_warps, "warp_instructions": n,
        "shmem": info.shmem, "nregs": info.nregs, "binary_version": info.binary_version,
        "tracer_version": info.tracer_version, "suggested_machine": suggest_machine(info),
        "avg_active_lanes": float(lanes.mean()) if n else 0.0,
        "memory_instructions": int(memrow.sum()),
        "opcodes": {kt.opcodes[i]: int(c) for i, c in sorted(enumerate(per_op.tolist()), key=lambda t: -t[1]) if c},
    }
    if machine is None:
        d["classified"] = False
        return d
    d["classified"] = True
    d["machine"] = machine.name
    mix: dict[str, int] = {}
    spaces: dict[str, int] = {}
    unknown: list[str] = []
    space_of_op: list[str] = []
    kind_of_op: list[str] = []
    for i, op in enumerate(kt.opcodes):
        oi = machine.classify(op)
        if oi is None:
            unknown.append(op)
            cls, space, kind = "unknown", "unknown", "unknown"
        else:
            cls, space, kind = oi.unit_class, oi.space, oi.kind
        space_of_op.append(space)
        kind_of_op.append(kind)
        if per_op[i]:
            mix[cls] = mix.get(cls, 0) + int(per_op[i])
        if mem_per_op[i]:
            spaces[space] = spaces.get(space, 0) + int(mem_per_op[i])
    d["mix"] = dict(sorted(mix.items(), key=lambda t: -t[1]))
    d["memory_by_space"] = dict(sorted(spaces.items(), key=lambda t: -t[1]))
    d["unknown_opcodes"] = sorted(unknown)
    glob_op = np.array([s == "global" for s in space_of_op] + [False], bool)
    rows = np.flatnonzero(memrow & glob_op[opc] & (lanes > 0)) if n else np.zeros(0, np.int64)
    sec = sectors_per_request(kt, rows)
    d["global_requests"] = int(rows.shape[0])
    row_kind = np.array(kind_of_op + ["none"])[opc[rows]] if rows.shape[0] else np.zeros(0, str)
    d["global_load_requests"] = int((row_kind == "load").sum())
    d["global_store_requests"] = int((row_kind == "store").sum())
    d["global_atomic_requests"] = int((row_kind == "atomic").sum())
    if rows.shape[0]:
        hist = np.bincount(sec)
        d["sectors_per_request"] = {"mean": float(sec.mean()), "min": int(sec.min()), "max": int(sec.max()),
                                    "total": int(sec.sum()),
                                    "histogram": {str(k): int(v) for k, v in enumerate(hist.tolist()) if v}}
    return d


def suggest_machine(info) -> str | None:
    """Machine table for the binary version: ``teg.machine.for_arch`` when available."""
    if info.binary_version <= 0:
        return None
    try:
        from teg.machine import for_arch
    except ImportError:     # machine tables not installed: the header's own suggestion
        return info.suggested_machine()
    try:
        return for_arch(info.binary_version)
    except TegError:        # no table related to this SM version
        return None
