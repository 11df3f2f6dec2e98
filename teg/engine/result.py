"""``Result`` of one engine run: total cycles, the stall breakdown (one cause per cycle, summing to
the total), per-PC statistics, memory counters, the run's set-up and per-SM outcome
(:mod:`teg.engine.setup`). Its views — text and JSON side by side — are in :mod:`teg.report`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from teg.engine.codes import CAUSE_NAMES, COUNTER_NAMES
from teg.engine.setup import RunSetup, SmOutcome


@dataclass
class Result:
    """Outcome of :func:`teg.engine.run`.

    ``stalls`` maps every cause name (:data:`teg.engine.codes.CAUSE_NAMES`) to cycles; they sum to
    ``cycles``. ``pc_count`` / ``pc_wait`` are per static instruction (executions; cycles between
    becoming a warp's next instruction and issuing). ``setup`` is what lowering set up (None for an
    input built by hand without one), ``outcome`` what the run did per SM. ``timeline`` holds the
    issue cycle of every dynamic row when the run recorded it; ``order`` the dynamic rows in issue
    order (cycle, then scheduler index) when the run recorded it (``record_order``) — the input of
    a replay run. ``row_record`` / ``tx_record`` (``with_records(inp, timeline=True)``) and
    ``pc_causes`` (``with_records(inp, instructions=True)``, :func:`teg.engine.records.with_records`)
    are what the timeline and the instruction view read, through :func:`teg.engine.records.recording`.
    ``sm_cycles`` holds each SM's last completion (its writes' acknowledgements included: the
    kernel ends after them), ``sm_retired`` when each SM's last block retired (its last warp
    exited; None for a result built without it)."""

    cycles: int
    instructions: int
    stalls: dict[str, int]
    counters: dict[str, int]
    pc_count: np.ndarray
    pc_wait: np.ndarray
    sm_cycles: np.ndarray
    timeline: np.ndarray | None = None
    setup: RunSetup | None = None
    outcome: SmOutcome | None = None
    order: np.ndarray | None = None
    row_record: np.ndarray | None = field(default=None, repr=False)
    tx_record: np.ndarray | None = field(default=None, repr=False)
    pc_causes: np.ndarray | None = field(default=None, repr=False)
    sm_retired: np.ndarray | None = field(default=None, repr=False)

    @property
    def ipc(self) -> float:
        """Warp instructions per cycle over the simulated SMs."""
        return self.instructions / self.cycles if self.cycles else 0.0

    @property
    def clock_mhz(self) -> float | None:
        return self.setup.clock_mhz if self.setup is not None else None

    @property
    def time_us(self) -> float | None:
        """Time at the machine table's clock (µs)."""
        clk = self.clock_mhz
        return self.cycles / clk if clk else None

    @property
    def sm_active(self) -> float:
        """The average simulated SM's active cycles: each SM is active from the kernel's start (the
        first wave is launched at cycle 0) until its last block retired (``sm_retired``: its last
        warp exited, every result in but its writes possibly still on their way to L2 — a warp
        leaves without awaiting their acknowledgements, which count for the kernel's end only;
        ``sm_cycles`` where the result has no ``sm_retired``; an SM that ran no block: 0),
        averaged over every simulated SM — what Nsight Compute's ``sm__cycles_active.avg`` counts
        (cycles with at least one warp resident), the launch and drain excluded."""
        ends = np.asarray(self.sm_cycles if self.sm_retired is None else self.sm_retired, np.float64)
        n = int(ends.shape[0])
        return float(ends.sum() / n) if n else 0.0

    @property
    def sm_active_ratio(self) -> float:
        """:attr:`sm_active` over the kernel's cycles (launch and drain included): Nsight Compute's
        SM active / GPU active cycles (``sm__cycles_active.avg / gpc__cycles_elapsed.max``). Below
        1 by the launch and drain, by SMs that ran no block, and by SMs that finish before the last
        (load imbalance, a partial last wave); with sampled SMs, over those SMs only."""
        return self.sm_active / self.cycles if self.cycles else 0.0

    def stall_fractions(self) -> dict[str, float]:
        return {k: (v / self.cycles if self.cycles else 0.0) for k, v in self.stalls.items()}


def make_result(cycles: int, stall: np.ndarray, counters: np.ndarray, pc_count, pc_wait, sm_end,
                timeline, setup: RunSetup | None, outcome: SmOutcome, order: np.ndarray | None = None,
                sm_retired: np.ndarray | None = None, **records) -> Result:
    return Result(
        cycles=int(cycles),
        instructions=int(counters[0]),
        stalls={name: int(stall[i]) for i, name in enumerate(CAUSE_NAMES)},
        counters={name: int(counters[i]) for i, name in enumerate(COUNTER_NAMES)},
        pc_count=pc_count, pc_wait=pc_wait, sm_cycles=sm_end.astype(np.int64),
        timeline=timeline, setup=setup, outcome=outcome, order=order,
        sm_retired=sm_retired.astype(np.int64) if sm_retired is not None else None, **records)
