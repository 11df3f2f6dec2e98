"""Scaling sweeps (TEG §5, Tables 2–5 and Figures 4–7): the same kernel with N concurrent warps
(or B concurrent blocks) on one SM, each warp running one trace warp's instruction stream.

Throughput is work-normalized: ``instructions / cycles`` (every warp does its stream's work, so
more warps do more work); ``speedup`` is that throughput over the first point's (1 warp).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from teg.engine.lower import lower
from teg.engine.options import Options
from teg.engine.run import run


@dataclass(frozen=True)
class SweepRow:
    warps: int
    blocks: int | None
    cycles: int
    instructions: int
    throughput: float        # warp instructions per cycle
    speedup: float           # throughput / throughput of the first row
    meta: dict = field(default_factory=dict, compare=False, repr=False)   # the run's (lowering's) meta
    stalls: dict = field(default_factory=dict, compare=False, repr=False)  # the run's stall breakdown

    def to_dict(self) -> dict:
        return {"warps": self.warps, "blocks": self.blocks, "cycles": self.cycles,
                "instructions": self.instructions, "throughput": self.throughput, "speedup": self.speedup}


def sweep(program, kernel_trace, machine, options: Options | None = None, warps=None, blocks=None) -> list[SweepRow]:
    """One row per value of ``warps`` (N warps on one SM) or of ``blocks`` (B blocks on one SM)."""
    options = options or Options()
    if (warps is None) == (blocks is None):
        raise ValueError("sweep: give exactly one of warps or blocks")
    points = [int(x) for x in (warps if warps is not None else blocks)]
    rows = []
    first = None
    for p in points:
        opt = replace(options, warps=p, blocks=None) if warps is not None else replace(options, warps=None, blocks=p,
                                                                                         blocks_per_sm=p)
        inp = lower(program, kernel_trace, machine, opt)
        r = run(inp)
        thr = r.instructions / r.cycles if r.cycles else 0.0
        if first is None:
            first = thr
        rows.append(SweepRow(warps=int(inp.meta["warps"]), blocks=None if warps is not None else p, cycles=r.cycles,
                             instructions=r.instructions, throughput=thr, speedup=thr / first if first else 0.0,
                             meta=r.meta, stalls=r.stalls))
    return rows
