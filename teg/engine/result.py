"""``Result`` of one engine run: total cycles, the stall breakdown (one cause per cycle, summing to
the total), per-PC statistics, occupancy and memory counters."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from teg.engine.codes import CAUSE_NAMES, COUNTER_NAMES


@dataclass
class Result:
    """Outcome of :func:`teg.engine.run`.

    ``stalls`` maps every cause name (:data:`teg.engine.codes.CAUSE_NAMES`) to cycles; they sum to
    ``cycles``. ``pc_count`` / ``pc_wait`` are per static instruction (executions; cycles between
    becoming a warp's next instruction and issuing). ``timeline`` holds the issue cycle of every
    dynamic row when the run recorded it; ``order`` the dynamic rows in issue order (cycle, then
    scheduler index) when the run recorded it (``record_order``) — the input of a replay run.
    ``row_record`` / ``tx_record`` (``record_timeline``) and ``pc_causes`` (``record_instructions``)
    are what the timeline and the instruction view read (layouts: :mod:`teg.engine.records`)."""

    cycles: int
    instructions: int
    stalls: dict[str, int]
    counters: dict[str, int]
    pc_count: np.ndarray
    pc_wait: np.ndarray
    sm_cycles: np.ndarray
    timeline: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    order: np.ndarray | None = None
    row_record: np.ndarray | None = field(default=None, repr=False)
    tx_record: np.ndarray | None = field(default=None, repr=False)
    pc_causes: np.ndarray | None = field(default=None, repr=False)

    @property
    def ipc(self) -> float:
        """Warp instructions per cycle over the simulated SMs."""
        return self.instructions / self.cycles if self.cycles else 0.0

    @property
    def clock_mhz(self) -> float | None:
        return self.meta.get("clock_mhz")

    @property
    def time_us(self) -> float | None:
        """Time at the machine table's clock (µs)."""
        clk = self.clock_mhz
        return self.cycles / clk if clk else None

    def stall_fractions(self) -> dict[str, float]:
        return {k: (v / self.cycles if self.cycles else 0.0) for k, v in self.stalls.items()}

    def to_dict(self) -> dict:
        """Plain-JSON view (per-PC table included when the input named its instructions)."""
        d = {
            "kernel": self.meta.get("kernel"),
            "machine": self.meta.get("machine"),
            "cycles": self.cycles,
            "time_us": self.time_us,
            "clock_mhz": self.clock_mhz,
            "instructions": self.instructions,
            "ipc": self.ipc,
            "occupancy": self.meta.get("occupancy"),
            "dependency_model": self.meta.get("dependency_model"),
            "policy": self.meta.get("policy"),
            "sms": self.meta.get("sms"),
            "dealing": self.meta.get("dealing"),
            "sm_blocks": self.meta.get("sm_blocks"),
            "waves": self.meta.get("waves"),
            "l1_bytes": self.meta.get("l1_bytes"),
            "shared_carveout_bytes": self.meta.get("shared_carveout_bytes"),
            "stalls": {k: v for k, v in self.stalls.items() if v},
            "counters": self.counters,
            "notes": self.meta.get("notes", []),
        }
        pcs = self.meta.get("pcs")
        ops = self.meta.get("opcodes")
        if pcs is not None and ops is not None:
            d["per_pc"] = [{"pc": int(pcs[i]), "opcode": ops[i], "count": int(self.pc_count[i]),
                            "wait": int(self.pc_wait[i])} for i in range(len(ops)) if self.pc_count[i]]
        return d


def make_result(cycles: int, stall: np.ndarray, counters: np.ndarray, pc_count, pc_wait, sm_end,
                timeline, meta: dict, order: np.ndarray | None = None, **records) -> Result:
    return Result(
        cycles=int(cycles),
        instructions=int(counters[0]),
        stalls={name: int(stall[i]) for i, name in enumerate(CAUSE_NAMES)},
        counters={name: int(counters[i]) for i, name in enumerate(COUNTER_NAMES)},
        pc_count=pc_count, pc_wait=pc_wait, sm_cycles=sm_end.astype(np.int64),
        timeline=timeline, meta=meta, order=order, **records)
