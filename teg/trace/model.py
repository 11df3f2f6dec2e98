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

MAX_TRACE_DST = 4   # tracer ≤ v5 prints ≤ 1; v6 may list several (R/UR/P/UP)
MAX_TRACE_SRC = 8   # tracer ≤ v5 prints ≤ 5 GPR sources


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
        """The kernel whose mangled or demangled name contains ``name`` (the only one if None)."""
        if name is None:
            if len(self.kernels) != 1:
                raise LookupError(f"{self.source}: {len(self.kernels)} kernels; choose one with --kernel")
            return self.kernels[0]
        exact = [k for k in self.kernels if name == k.info.name or name == str(k.info.kernel_id)]
        hits = exact or [k for k in self.kernels if name in k.info.name]
        if not hits:
            raise LookupError(f"{self.source}: no kernel matching {name!r}")
        return hits[0]
