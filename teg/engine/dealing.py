"""Which SM each block of a sampled launch runs on (``Options(sms=N)``, N < ``num_sms``): the
block → SM rule, declared once for the engine's sampled mode (:mod:`teg.engine.lower`) and for
anything that keeps only the sampled SMs' blocks of a trace while it is written (the accuracy
suite's apps runner keeps the rows of the blocks this rule deals to SMs ``0 … N-1``).

Two dealings (:data:`SAMPLINGS`), with ``G`` blocks, ``M`` = ``num_sms`` and ``R`` resident blocks
per SM (the occupancy, :func:`resident_blocks`):

* ``waves`` (the default) — what the hardware's dynamic dealing gives when the SMs are identical:
  the first wave, blocks ``j < M·R``, dealt breadth-first (block ``j`` → SM ``j mod M``, so a grid
  smaller than a wave spreads over every SM); afterwards the blocks go to the SMs in the order
  their slots free, and SMs that run the same blocks finish a wave together, all ``R`` blocks of
  one SM before the next SM's: block ``j ≥ M·R`` → SM ``((j − M·R) // R) mod M`` — ``R`` at a
  time, SM index order. A last partial wave therefore lands on the lowest SMs, whole (PolyBench
  3mm on the Quadro GV100: 1,024 blocks, 8 resident, 80 SMs: SMs 0–47 run 16 blocks in two waves,
  48–79 run 8; Nsight Compute's SM active / GPU active = 0.800 = (80 + 48) / (2 · 80) says the
  hardware did exactly that). Sampling SMs ``0 … N-1`` simulates the most loaded SMs, whose end is
  the kernel's.
* ``round-robin`` — TEG's sampling method as published: block ``j`` → SM ``j mod M`` for every
  ``j``. Every SM runs ``⌊G/M⌋`` or ``⌈G/M⌉`` blocks, so a partial last wave is spread thin over
  all SMs and runs faster than the hardware's concentrated one.

The sampled SMs' share of the DRAM bandwidth and of the L2 (:func:`sampled_share`): ``round-robin``
keeps TEG's ``N / busy`` (busy = the SMs that receive a block); ``waves`` gives them the share of
the launch's blocks they run, ``blocks on SMs 0 … N-1 / G`` — the time a bandwidth-bound launch
takes (all bytes / bandwidth) is then the same as the whole GPU's, whichever SMs carry more
blocks; with every SM running the same number of blocks it is ``N / M``."""

from __future__ import annotations

import numpy as np

SAMPLINGS = ("waves", "round-robin")


def block_sms(blocks, num_sms: int, resident: int, sampling: str = "waves") -> np.ndarray:
    """The SM (int64) of each block in ``blocks`` (linear launch indices, an int or an array), dealt
    by ``sampling`` over ``num_sms`` SMs of ``resident`` resident blocks each (module docstring).
    A block's SM depends on its own index only, not on the grid's size, so a trace written a chunk
    of blocks at a time can decide block by block which ones SMs ``0 … N-1`` run."""
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling {sampling!r}: expected one of {', '.join(SAMPLINGS)}")
    j = np.asarray(blocks, np.int64)
    m = max(int(num_sms), 1)
    if sampling == "round-robin":
        return j % m
    r = max(int(resident), 1)
    first = m * r
    return np.where(j < first, j % m, ((j - first) // r) % m)


def sampled_share(block_sm: np.ndarray, sms: int, busy: int, sampling: str = "waves") -> float:
    """The sampled SMs' share of DRAM bandwidth and L2 capacity: ``sms / busy`` for
    ``round-robin`` (TEG), for ``waves`` the fraction of the launch's blocks (``block_sm``: every
    block's SM) that SMs ``0 … sms-1`` run (module docstring)."""
    n = int(np.asarray(block_sm).shape[0])
    if sampling == "round-robin" or n == 0:
        return sms / max(busy, sms)
    return min(1.0, int(np.count_nonzero(np.asarray(block_sm) < sms)) / n)


def launch_resident(machine, info, options) -> int:
    """Resident blocks per SM of a launch (``info``: a :class:`teg.trace.model.KernelInfo`; its
    block's threads, registers and shared memory) under ``options`` (its ``shared_carveout`` and
    ``blocks_per_sm``): the ``R`` of the dealing, the engine's own (:mod:`teg.engine.lower` step 5):
    :func:`teg.engine.occupancy.occupancy`, or ``blocks_per_sm`` when given, at most the SM's warp
    slots (``limits.max_warps``) over the block's warps; at least 1. Raises
    :class:`teg.engine.occupancy.OccupancyError` for a block that fits no SM or a carveout that
    cannot be had."""
    from teg.engine.occupancy import occupancy, preferred_carveout

    threads = max(int(info.threads_per_block), 1)
    wpb = -(-threads // machine.warp_size)
    if options.blocks_per_sm is not None:
        r = int(options.blocks_per_sm)
    else:
        carveout = (None if options.shared_carveout is None
                    else preferred_carveout(machine, float(options.shared_carveout), info.shmem))
        r = occupancy(machine, threads, info.nregs, info.shmem, carveout).blocks
    return max(1, min(r, machine.limits.max_warps // wpb))
