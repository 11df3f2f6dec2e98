"""Validation of a native trace as it is loaded: the ``meta.json`` entries (types, names, ranges a
real launch reaches) and the columns (dtypes and shapes, CSR offsets that increase, register ids,
widths and block ids in range, one address per active lane), so that a damaged or hand-edited
trace is refused with the member and row at fault instead of crashing, hanging or silently
changing the engine's estimate.

Column checks read each column once in blocks of :data:`BLOCK_ROWS` rows (the columns are
memory-mapped: memory stays flat in the trace length). Problems are
:class:`~teg.trace.errors.TraceFormatError` with the kernel's folder or member as location.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from teg.sass.registers import NUM_REG_IDS
from teg.trace.errors import TraceFormatError
from teg.trace.model import KernelInfo, KernelTrace, launch_problem
from teg.trace.npyread import release

BLOCK_ROWS = 1 << 20
MAX_MEM_WIDTH = 32          # bytes per lane: 256-bit accesses are the widest any SASS prints
MAX_PC = (1 << 32) - 1      # byte offset inside one function (teg.sass.parser.MAX_ADDRESS)
MAX_NREGS = 255             # registers per thread of every architecture
MAX_SHMEM = 1 << 24         # shared bytes per block (228 kB on Hopper; room for any future part)
_DIR_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_U64 = (0, (1 << 64) - 1)
# KernelInfo integer fields: (lowest, highest)
INFO_RANGES = {"kernel_id": (0, (1 << 63) - 1), "shmem": (0, MAX_SHMEM), "nregs": (0, MAX_NREGS),
              "binary_version": (0, 1000), "stream": _U64, "shmem_base": _U64, "local_base": _U64,
              "tracer_version": (0, 100)}
# extras teg itself writes: name → trailing shape (rows = blocks)
_BLOCK_EXTRAS = {"cluster_id": (3,), "cluster_cta": (3,), "cluster_rank": ()}


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def count(entry: dict, key: str, where: str, required: bool = True) -> int | None:
    """Entry ``key`` as a non-negative integer (None when absent and not ``required``)."""
    if key not in entry and not required:
        return None
    v = entry.get(key)
    if not _is_int(v) or v < 0:
        raise TraceFormatError(f"meta \"{key}\" must be a non-negative integer, got {v!r}", where)
    return v


def kernel_entry(k: Any, where: str) -> None:
    """Types of one ``meta["kernels"]`` entry: ``dir`` a plain folder name, counts non-negative
    integers, ``opcodes`` a list of strings, ``line_num`` a boolean, ``extras`` names."""
    if not isinstance(k, dict):
        raise TraceFormatError(f"kernel entry must be a mapping, got {type(k).__name__}", where)
    d = k.get("dir")
    if not isinstance(d, str) or not _DIR_NAME.match(d) or d in (".", ".."):
        raise TraceFormatError(f"kernel \"dir\" must be a plain folder name, got {d!r}", where)
    for key in ("rows", "warps", "blocks", "addresses"):
        count(k, key, where, required=False)
    ops = k.get("opcodes")
    if not isinstance(ops, list) or not all(isinstance(o, str) and o for o in ops):
        raise TraceFormatError("kernel \"opcodes\" must be a list of opcode names", where)
    if not isinstance(k.get("line_num", False), bool):
        raise TraceFormatError(f"kernel \"line_num\" must be true or false, got {k.get('line_num')!r}", where)
    extras = k.get("extras", [])
    if not isinstance(extras, list) or not all(isinstance(e, str) and _DIR_NAME.match(e) for e in extras):
        raise TraceFormatError("kernel \"extras\" must be a list of column names", where)
    if not isinstance(k.get("info"), dict):
        raise TraceFormatError("kernel \"info\" must be a mapping", where)


def kernel_info(d: dict, where: str) -> KernelInfo:
    """A :class:`KernelInfo` from its JSON form, every field of the right type and in range (grid
    and block within CUDA's launch limits, at most 255 registers …)."""
    name = d.get("name")
    if not isinstance(name, str):
        raise TraceFormatError(f"info \"name\" must be a string, got {name!r}", where)
    kw: dict[str, Any] = {"name": name}
    for key, (lo, hi) in INFO_RANGES.items():
        if key in d:
            v = d[key]
            if not _is_int(v) or not lo <= v <= hi:
                raise TraceFormatError(f"info \"{key}\" must be an integer in [{lo}, {hi}], got {v!r}", where)
            kw[key] = v
    dims = {}
    for key in ("grid", "block"):
        v = d.get(key, [1, 1, 1])
        if not isinstance(v, list):
            raise TraceFormatError(f"info \"{key}\" must be a list of three integers, got {v!r}", where)
        dims[key] = tuple(v)
    problem = launch_problem(dims["grid"], dims["block"])
    if problem:
        raise TraceFormatError(f"info: {problem}", where)
    kw.update(dims)
    if "nvbit_version" in d:
        if not isinstance(d["nvbit_version"], str):
            raise TraceFormatError("info \"nvbit_version\" must be a string", where)
        kw["nvbit_version"] = d["nvbit_version"]
    if "lineinfo" in d:
        if not isinstance(d["lineinfo"], bool):
            raise TraceFormatError("info \"lineinfo\" must be true or false", where)
        kw["lineinfo"] = d["lineinfo"]
    return KernelInfo(**kw)


def memcpy_list(meta: dict, where: str) -> list[tuple[int, int]]:
    """``meta["memcpy"]``: pairs of (device address, bytes), 64-bit unsigned integers."""
    out = []
    for m in meta.get("memcpy", []) if isinstance(meta.get("memcpy", []), list) else [None]:
        if not (isinstance(m, list) and len(m) == 2 and all(_is_int(x) and _U64[0] <= x <= _U64[1] for x in m)):
            raise TraceFormatError(f"meta \"memcpy\" entries must be [address, bytes] integers, got {m!r}", where)
        out.append((m[0], m[1]))
    return out


def column_layout(kt: KernelTrace, columns: dict[str, tuple[str, tuple[int, ...]]], where: str) -> None:
    """Every column has its dtype and ``(rows, *inner)`` shape (before any length is compared)."""
    for name, (dt, inner) in columns.items():
        a = kt.line_num if name == "line_num" else getattr(kt, name)
        if a is None:
            continue
        if a.dtype != np.dtype(dt) or a.ndim != 1 + len(inner) or a.shape[1:] != inner:
            raise TraceFormatError(f"column {name} has dtype {a.dtype} shape {a.shape}, expected {dt} "
                                   f"(rows{''.join(f', {x}' for x in inner)})", where)


def _blocks(a: np.ndarray):
    """(first row, block) pairs over ``a`` in blocks of :data:`BLOCK_ROWS` rows; a memory-mapped
    block's pages are released once it has been checked (:func:`teg.trace.npyread.release`)."""
    for s in range(0, a.shape[0], BLOCK_ROWS):
        view = a[s:s + BLOCK_ROWS]
        yield s, np.asarray(view)
        release(view)


def first_outside(a: np.ndarray, lo: int, hi: int) -> int | None:
    """First row of ``a`` holding a value outside ``[lo, hi]``, or None."""
    for s, blk in _blocks(a):
        if blk.size and (blk.min() < lo or blk.max() > hi):
            bad = (blk < lo) | (blk > hi)
            return s + int(np.flatnonzero(bad.reshape(blk.shape[0], -1).any(axis=1))[0])
    return None


def first_decrease(a: np.ndarray) -> int | None:
    """First index ``i`` with ``a[i] < a[i-1]``, or None."""
    prev = None
    for s, blk in _blocks(a):
        if not blk.size:
            continue
        if prev is not None and blk[0] < prev:
            return s
        d = np.flatnonzero(blk[1:] < blk[:-1])
        if d.size:
            return s + int(d[0]) + 1
        prev = blk[-1]
    return None


def _lane_mismatch(addr_start: np.ndarray, mask: np.ndarray) -> int | None:
    """First row whose address count is neither 0 nor its number of active lanes, or None."""
    from teg.trace.summary import popcount32

    n = mask.shape[0]
    for s in range(0, n, BLOCK_ROWS):
        e = min(n, s + BLOCK_ROWS)
        na = np.diff(np.asarray(addr_start[s:e + 1], np.int64))
        lanes = popcount32(np.asarray(mask[s:e]))
        release(addr_start[s:e + 1])
        release(mask[s:e])
        bad = np.flatnonzero((na != 0) & (na != lanes))
        if bad.size:
            return s + int(bad[0])
    return None


def column_values(kt: KernelTrace, where: str) -> None:
    """Value ranges of the columns (after :func:`column_layout` and the length checks)."""
    info = kt.info
    gx, gy, gz = info.grid
    num_blocks = min(gx * gy * gz, 2**31 - 1)
    checks = (
        ("pc", kt.pc, 0, MAX_PC, "instruction byte offsets"),
        ("opcode", kt.opcode, 0, len(kt.opcodes) - 1, "ids of the kernel's opcode table"),
        ("warp", kt.warp, 0, max(kt.num_warps - 1, 0), "warp ids of the trace"),
        ("block", kt.block, 0, num_blocks - 1, f"linear block ids of the grid {info.grid}"),
        ("dst", kt.dst, -1, NUM_REG_IDS - 1, "register ids (-1 for none)"),
        ("src", kt.src, -1, NUM_REG_IDS - 1, "register ids (-1 for none)"),
        ("mem_width", kt.mem_width, 0, MAX_MEM_WIDTH, "bytes per lane"),
        ("warp_block", kt.warp_block, 0, num_blocks - 1, f"linear block ids of the grid {info.grid}"),
        ("line_num", kt.line_num, 0, 2**31 - 1, "source lines"),
    )
    for name, a, lo, hi, what in checks:
        if a is None:
            continue
        r = first_outside(a, lo, hi)
        if r is not None:
            raise TraceFormatError(f"column {name}, row {r}: {np.asarray(a[r]).tolist()!r} is not in [{lo}, {hi}] "
                                   f"({what})", where)
    for name, a in (("warp_start", kt.warp_start), ("addr_start", kt.addr_start)):
        r = first_decrease(a)
        if r is not None:
            raise TraceFormatError(f"column {name} decreases at entry {r} (offsets must not decrease)", where)
    for axis, g in enumerate(info.grid):
        r = first_outside(kt.block_xyz[:, axis], 0, g - 1)
        if r is not None:
            raise TraceFormatError(f"column block_xyz, block {r}: {kt.block_xyz[r].tolist()} is outside the grid "
                                   f"{info.grid}", where)
    r = _lane_mismatch(kt.addr_start, kt.mask)
    if r is not None:
        raise TraceFormatError(f"row {r}: {int(kt.addr_start[r + 1] - kt.addr_start[r])} addresses for "
                               f"{bin(int(kt.mask[r])).count('1')} active lanes", where)
    nb = kt.block_xyz.shape[0]
    for name, inner in _BLOCK_EXTRAS.items():
        a = kt.extras.get(name)
        if a is not None and (a.ndim != 1 + len(inner) or a.shape[1:] != inner or a.shape[0] != nb
                              or a.dtype.kind not in "iu"):
            raise TraceFormatError(f"extra column {name} has dtype {a.dtype} shape {a.shape}, expected integers "
                                   f"({nb}{''.join(f', {x}' for x in inner)})", where)
