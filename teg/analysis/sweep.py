"""Scaling sweeps (TEG §5, Tables 2–5 and Figures 4–7): the same kernel with N concurrent warps
(or B concurrent blocks) on one SM, each warp running one trace warp's instruction stream.

Throughput is work-normalized: ``instructions / cycles`` (every warp does its stream's work, so
more warps do more work); ``speedup`` is that throughput over the first point's (1 warp).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:          # the engine is imported when a sweep runs, not with DEFAULT_WARPS
    from teg.engine.kernel_inputs import KernelInputs
    from teg.engine.options import Options
    from teg.engine.setup import RunSetup

# TEG's scaling points (warps on one SM, TEG §5 Tables 2-5): ``teg sweep`` without --warps (up to
# what an SM of the machine holds), ``teg sweep --trace APP`` without --warps, and the warps per SM
# of a validation suite whose manifest names none (teg/validate/suite.py)
DEFAULT_WARPS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class SweepRow:
    """One point: ``warps`` on one SM (``blocks``: the blocks, in a block sweep), its cycles and
    instructions, ``throughput`` (warp instructions per cycle) and ``speedup`` (throughput over the
    first point's); the run's ``setup`` and ``stalls`` for the views."""

    warps: int
    blocks: int | None
    cycles: int
    instructions: int
    throughput: float        # warp instructions per cycle
    speedup: float           # throughput / throughput of the first row
    setup: RunSetup | None = field(default=None, compare=False, repr=False)   # the run's set-up
    stalls: dict = field(default_factory=dict, compare=False, repr=False)  # the run's stall breakdown


def sweep(inputs: KernelInputs, options: Options | None = None, warps=None, blocks=None) -> list[SweepRow]:
    """One row per value of ``warps`` (N warps on one SM) or of ``blocks`` (B blocks on one SM)."""
    from teg.engine.options import Options
    from teg.engine.runner import run_kernel

    options = options or Options()
    if (warps is None) == (blocks is None):
        raise ValueError("sweep: give exactly one of warps or blocks")
    points = [int(x) for x in (warps if warps is not None else blocks)]
    rows = []
    first = None
    for p in points:
        opt = replace(options, warps=p, blocks=None) if warps is not None else replace(options, warps=None, blocks=p,
                                                                                         blocks_per_sm=p)
        est = run_kernel(inputs, opt)
        r = est.result
        thr = r.instructions / r.cycles if r.cycles else 0.0
        if first is None:
            first = thr
        rows.append(SweepRow(warps=int(est.lowered.setup.warps), blocks=None if warps is not None else p,
                             cycles=r.cycles, instructions=r.instructions, throughput=thr,
                             speedup=thr / first if first else 0.0, setup=r.setup, stalls=r.stalls))
    return rows
