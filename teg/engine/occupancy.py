"""Occupancy: how many blocks of a kernel are resident on one SM at once (CUDA occupancy
calculation from the machine table's limits). More blocks than fit run in waves."""

from __future__ import annotations

import math
from dataclasses import dataclass

from teg import TegError
from teg.machine.model import Machine


class OccupancyError(TegError):
    """A block that cannot run on the SM at all (too many threads, registers or shared memory)."""


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and the limit that decided it."""

    blocks: int
    warps_per_block: int
    limiter: str
    by_limit: dict

    @property
    def warps(self) -> int:
        return self.blocks * self.warps_per_block

    def to_dict(self) -> dict:
        return {"blocks_per_sm": self.blocks, "warps_per_sm": self.warps, "limiter": self.limiter,
                "by_limit": dict(self.by_limit)}


def occupancy(machine: Machine, threads_per_block: int, regs_per_thread: int = 0,
              shmem_per_block: int = 0, carveout: int | None = None) -> Occupancy:
    """Blocks per SM = min over the limits (0 registers / 0 shared = not limiting):

    * warps: ``max_warps // warps_per_block``; threads: ``max_threads // threads_per_block``;
    * blocks: ``max_blocks``;
    * registers: per-warp allocation ``ceil(regs * warp_size / reg_alloc_unit) * reg_alloc_unit``
      (``reg_alloc_per: block``: per block), ``registers // that`` warps (blocks);
    * shared memory: ``size_per_sm // (ceil(shmem / alloc_unit) * alloc_unit + reserved_per_block)``
      (the driver's reservation per block, 1 KB on sm_80+: CUDA-PG); with a ``carveout`` (bytes,
      :func:`preferred_carveout`) that capacity instead of ``size_per_sm``, and it limits blocks
      without shared memory too (their reservation).
    """
    lim = machine.limits
    ws = machine.warp_size
    if threads_per_block < 1:
        raise OccupancyError(f"block of {threads_per_block} threads")
    if threads_per_block > lim.max_threads_per_block:
        raise OccupancyError(f"block of {threads_per_block} threads exceeds the {lim.max_threads_per_block}-thread "
                             f"limit of {machine.name}")
    wpb = math.ceil(threads_per_block / ws)
    by = {"warps": lim.max_warps // wpb, "threads": lim.max_threads // threads_per_block, "blocks": lim.max_blocks}
    if regs_per_thread > 0:
        if regs_per_thread > lim.max_regs_per_thread:
            raise OccupancyError(f"{regs_per_thread} registers per thread exceed the {lim.max_regs_per_thread} "
                                 f"of {machine.name}")
        unit = lim.reg_alloc_unit
        if lim.reg_alloc_per == "block":
            per_block = math.ceil(regs_per_thread * threads_per_block / unit) * unit
            by["registers"] = lim.registers // per_block
        else:
            per_warp = math.ceil(regs_per_thread * ws / unit) * unit
            by["registers"] = (lim.registers // per_warp) // wpb
    if shmem_per_block > 0:
        sh = machine.shared
        if shmem_per_block > sh.max_per_block:
            raise OccupancyError(f"{shmem_per_block} bytes of shared memory per block exceed the "
                                 f"{sh.max_per_block} of {machine.name}")
        by["shared_memory"] = (carveout if carveout is not None else sh.size_per_sm) // \
            shared_per_block(machine, shmem_per_block)
    elif carveout is not None and machine.shared.reserved_per_block:
        by["shared_memory"] = carveout // shared_per_block(machine, 0)
    limiter = min(by, key=lambda k: by[k])
    blocks = by[limiter]
    if blocks < 1:
        raise OccupancyError(f"a block ({threads_per_block} threads, {regs_per_thread} registers/thread, "
                             f"{shmem_per_block} B shared) does not fit on one SM of {machine.name} ({limiter})")
    return Occupancy(blocks=blocks, warps_per_block=wpb, limiter=limiter, by_limit=by)


def shared_per_block(machine: Machine, shmem_per_block: int) -> int:
    """Shared memory one resident block holds: its allocation rounded up to the allocation unit,
    plus the driver's reservation (``shared.reserved_per_block``)."""
    sh = machine.shared
    return math.ceil(shmem_per_block / sh.alloc_unit) * sh.alloc_unit + sh.reserved_per_block


def preferred_carveout(machine: Machine, percent: float, shmem_per_block: int) -> int:
    """The carveout (bytes) the driver gives a kernel that sets
    ``cudaFuncAttributePreferredSharedMemoryCarveout`` to ``percent`` of ``shared.size_per_sm``:
    the supported capacity (``memory.l1.shared_carveouts_kb``) nearest to it (ties: the larger),
    raised to the smallest that holds one block. "Nearest" is inferred from gpu-stream's launches
    (te42kyfo/gpu-benches cdcc732: a 6 KB shared array plus the 1 KB reservation; 4 % gives one
    block per SM, 9 % two, on A100 (9 % = 14.8 KB → 16) and H100 PCIe (9 % = 20.5 KB → 16, not
    32: four blocks, which the benchmark would have flagged))."""
    l1 = machine.memory.l1
    if l1 is None or not l1.shared_carveouts:
        raise OccupancyError(f"{machine.name} has no configurable L1/shared split (no shared_carveouts_kb)")
    want = percent / 100.0 * machine.shared.size_per_sm
    near = min(l1.shared_carveouts, key=lambda c: (abs(c - want), -c))
    one = shared_per_block(machine, shmem_per_block)
    return next((c for c in l1.shared_carveouts if c >= max(near, one)), l1.shared_carveouts[-1])


def l1_data_bytes(machine: Machine, threads_per_block: int, regs_per_thread: int, shmem_per_block: int,
                  resident: int, carveout: int | None = None) -> int:
    """The L1 data capacity left to a kernel beside its shared memory (0 with no L1).

    A unified L1/shared array (``memory.l1.shared_carveouts_kb``, sm_70+) is split per kernel by
    the driver, which "configures the shared memory capacity for each kernel to avoid shared
    memory occupancy bottlenecks" (Volta/Ampere tuning guides): it takes the smallest supported
    carveout that holds ``shared_per_block`` for as many blocks as the other limits (threads,
    warps, blocks, registers) let reside, or the largest one; the L1 keeps the rest. A kernel of
    64-thread blocks without shared memory on sm_80 reserves 32 blocks x 1 KB: a 32 KB carveout
    and a 160 KB L1 (te42kyfo gpu-latency: the A100 L1 misses from ~160 kB, the H100's from
    ~230 kB = 256 - 32). A ``carveout`` the kernel asked for (:func:`preferred_carveout`)
    replaces the driver's choice. Without carveouts the L1 loses what the ``resident`` blocks
    allocate.
    """
    l1 = machine.memory.l1
    if l1 is None:
        return 0
    if carveout is not None:
        return l1.size_bytes - carveout
    if not l1.shared_carveouts:
        return l1.size_bytes - resident * (shared_per_block(machine, shmem_per_block) if shmem_per_block else 0)
    try:
        blocks = occupancy(machine, threads_per_block, regs_per_thread).blocks
    except OccupancyError:
        blocks = resident       # no launch shape the driver could size (SASS only): the simulated blocks
    need = blocks * shared_per_block(machine, shmem_per_block)
    carveout = next((c for c in l1.shared_carveouts if c >= need), l1.shared_carveouts[-1])
    return l1.size_bytes - carveout
