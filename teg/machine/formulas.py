"""Quantities derived from a machine table (the table holds only the measured/published inputs)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from teg.machine.model import Machine


def c_mem_from(bandwidth_gbs: float, dram_latency: float, pipelines: float, warp_size: int,
               ele_size: int, clock_mhz: float) -> float:
    """Concurrent memory transactions one memory pipeline must hold to reach peak bandwidth.

    TEG report §3.2.4 (Little's law)::

        N_TPC * N_warp * ele_size * C_mem / (mem_latency / Clk) = B_peak
        C_mem = B_peak * mem_latency / (N_TPC * N_warp * ele_size * Clk)

    with B_peak in bytes/s (``bandwidth_gbs * 1e9``), mem_latency in cycles, Clk in Hz
    (``clock_mhz * 1e6``), N_TPC the number of memory pipelines and one transaction = one warp
    instruction moving ``N_warp * ele_size`` bytes. GT200 (141.7 GB/s, 440 cycles, 10 TPCs, 32,
    8 B, 1296 MHz) gives 18.8 — "C_mem ≈ 18" for double in the report.
    """
    if min(bandwidth_gbs, dram_latency, pipelines, warp_size, ele_size, clock_mhz) <= 0:
        raise ValueError("c_mem inputs must be positive")
    return (bandwidth_gbs * 1e9 * dram_latency) / (pipelines * warp_size * ele_size * clock_mhz * 1e6)


def c_mem(machine: "Machine", ele_size: int) -> float:
    """:func:`c_mem_from` with the machine's inputs: N_TPC = num_sms / memory.sms_per_pipeline."""
    pipelines = machine.num_sms / machine.memory.sms_per_pipeline
    return c_mem_from(machine.memory.bandwidth_gbs, machine.memory.dram_latency, pipelines,
                      machine.warp_size, ele_size, machine.clock_mhz)


def c_mem_slots(value: float) -> int:
    """Whole transaction slots from a C_mem value: ``floor`` (the report rounds 18.8 down to 18),
    at least 1."""
    return max(1, math.floor(value))
