"""The dynamic side of a kernel launch: ``KernelTrace`` (columnar, one row per dynamic warp
instruction) and ``Trace`` (the kernels of one traced run).

Rows are grouped by warp: all rows of warp ``w`` are ``warp_start[w]:warp_start[w+1]`` in dynamic
execution order, warps ordered by (linear block id, warp-in-block). Memory addresses live in a
ragged column: the addresses of row ``i`` are ``addresses[addr_start[i]:addr_start[i+1]]``, one per
*active* lane in lane order (lane positions follow from ``mask``); non-memory rows have none.

Register ids use the flat space of :mod:`teg.sass.registers` (-1 = padding / RZ).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from teg.trace.errors import KernelNotFoundError

MAX_TRACE_DST = 4   # tracer ≤ v5 prints ≤ 1; v6 may list several (R/UR/P/UP)
MAX_TRACE_SRC = 8   # tracer ≤ v5 prints ≤ 5 GPR sources


# CUDA's launch limits (every architecture since Kepler; earlier ones are stricter): a grid of at most
# 2^31-1 x 65535 x 65535 blocks, a block of at most 1024 x 1024 x 64 threads and 1024 in all
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024


def launch_problem(grid, block) -> str | None:
    """What makes ``grid`` x ``block`` (three integers each) a launch no GPU runs, or None."""
    for what, dims, limit in (("grid", grid, MAX_GRID), ("block", block, MAX_BLOCK)):
        if len(dims) != 3 or any(isinstance(d, bool) or not isinstance(d, int) for d in dims):
            return f"{what} dimensions {tuple(dims)!r}: expected three integers"
        if min(dims) < 1 or any(d > m for d, m in zip(dims, limit)):
            return f"{what} dimensions {tuple(dims)}: each must be between 1 and {limit} (CUDA's launch limits)"
    if block[0] * block[1] * block[2] > MAX_THREADS_PER_BLOCK:
        return f"block dimensions {tuple(block)}: more than {MAX_THREADS_PER_BLOCK} threads in a block"
    return None


@dataclass
class KernelInfo:
    """Launch metadata (the ``-key = value`` header of an Accel-Sim ``.traceg``)."""

    name: str
    kernel_id: int = 0
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    shmem: int = 0
    nregs: int = 0
    binary_version: int = 0
    stream: int = 0
    shmem_base: int = 0
    local_base: int = 0
    tracer_version: int = 0
    nvbit_version: str = ""
    lineinfo: bool = False

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_block(self) -> int:
        return (self.threads_per_block + 31) // 32

    @property
    def num_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def suggested_machine(self) -> str | None:
        """Machine table suggested by the binary version (70 → sm_70 …), None if unknown."""
        return {70: "sm_70", 72: "sm_70", 75: "sm_70", 80: "sm_80", 86: "sm_86", 87: "sm_86",
                89: "sm_86", 90: "sm_90"}.get(self.binary_version)


@dataclass
class KernelTrace:
    """Columnar dynamic instruction stream of one kernel launch."""

    info: KernelInfo
    opcodes: list[str]               # string table: full opcode text with modifiers
    warp: np.ndarray                 # int32 [N]  global warp id = block_row * warps_per_block + warp_in_block
    block: np.ndarray                # int32 [N]  linear block id (z*gy*gx + y*gx + x)
    pc: np.ndarray                   # int64 [N]  byte offset of the instruction in the function
    opcode: np.ndarray               # int32 [N]  index into ``opcodes``
    mask: np.ndarray                 # uint32 [N] active (and guard-true) lanes
    dst: np.ndarray                  # int16 [N, MAX_TRACE_DST], -1 padded
    src: np.ndarray                  # int16 [N, MAX_TRACE_SRC], -1 padded
    mem_width: np.ndarray            # int16 [N]  bytes per lane, 0 for non-memory rows
    imm: np.ndarray                  # int64 [N]  trailing immediate (0 when absent)
    addr_start: np.ndarray           # int64 [N+1] CSR offsets into ``addresses``
    addresses: np.ndarray            # uint64 [M]
    warp_start: np.ndarray           # int64 [W+1] CSR offsets of each warp's rows
    warp_block: np.ndarray           # int32 [W] linear block id of each warp
    block_xyz: np.ndarray            # int32 [B, 3] ``thread block = x,y,z`` of each block present
    line_num: np.ndarray | None = None   # int32 [N] source line (lineinfo traces)
    extras: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return int(self.pc.shape[0])

    @property
    def num_warps(self) -> int:
        return int(self.warp_start.shape[0] - 1)

    def warp_rows(self, w: int) -> slice:
        return slice(int(self.warp_start[w]), int(self.warp_start[w + 1]))

    def row_addresses(self, i: int) -> np.ndarray:
        return self.addresses[self.addr_start[i]:self.addr_start[i + 1]]


@dataclass
class Trace:
    """All traced kernels of one run, plus the host→device copies listed in ``kernelslist.g``."""

    kernels: list[KernelTrace]
    memcpy: list[tuple[int, int]] = field(default_factory=list)   # (device address, bytes)
    source: str = ""

    def __iter__(self) -> Iterator[KernelTrace]:
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def kernel(self, name: str | None = None) -> KernelTrace:
        """The one kernel whose id or name is ``name``, else whose name contains it (the only
        kernel if None). A ``name`` that several kernels answer to (two launches of one kernel, or
        a substring of several names) is a :class:`teg.trace.errors.KernelNotFoundError` listing them by id."""
        if name is None:
            if len(self.kernels) != 1:
                raise KernelNotFoundError(f"{self.source}: {len(self.kernels)} kernels; choose one with --kernel")
            return self.kernels[0]
        by_id = [k for k in self.kernels if name == str(k.info.kernel_id)]
        hits = by_id or [k for k in self.kernels if name == k.info.name] or \
            [k for k in self.kernels if name in k.info.name]
        if not hits:
            raise KernelNotFoundError(f"{self.source}: no kernel matching {name!r}")
        if len(hits) > 1:
            shown = ", ".join(f"{k.info.kernel_id} ({k.info.name})" for k in hits[:8])
            more = f" and {len(hits) - 8} more" if len(hits) > 8 else ""
            raise KernelNotFoundError(f"{self.source}: {name!r} matches {len(hits)} kernels: id {shown}{more}; "
                              "choose one with --kernel ID")
        return hits[0]
