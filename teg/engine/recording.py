"""A run's records read by name: :class:`Recording` wraps the arrays :mod:`teg.engine.records` lays
out (per row, per transaction, per static instruction) with accessors named after what they hold,
so that the views (the timeline, the instruction view) never index a record column themselves."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teg.engine.records import (PC_STALL, PC_WAIT, TL_C1, TL_C2, TL_C3, TL_COPY, TL_END1, TL_END2, TL_END3, TL_ISSUE,
                                TL_SCHED, TL_SINCE, TX_CH_ARRIVE, TX_CH_END, TX_CH_START, TX_CHAN, TX_SL_ARRIVE,
                                TX_SL_END, TX_SL_START, TX_SLICE)


@dataclass(frozen=True)
class Service:
    """The transactions that reached one level of the memory system (the L2 slices, the DRAM
    channels): their indexes ``tx``, the slice or channel ``where``, and the cycles each
    ``arrive``-d, ``start``-ed and ``end``-ed service."""

    tx: np.ndarray
    where: np.ndarray
    arrive: np.ndarray
    start: np.ndarray
    end: np.ndarray


@dataclass(frozen=True)
class Recording:
    """What a run recorded (:func:`teg.engine.records.with_records`), read by name.

    ``rows`` [N, NTL] and ``tx`` [M, NTX] (``timeline``), ``pcs`` [2, S + 1, causes]
    (``instructions``); None where the run did not record them. ``schedulers`` is per SM, and
    ``bank_conflicts`` whether the run modelled shared-memory bank conflicts (the wavefronts a row
    occupied its unit for)."""

    rows: np.ndarray | None
    tx: np.ndarray | None
    pcs: np.ndarray | None
    schedulers: int
    bank_conflicts: bool

    # ---- per dynamic row ------------------------------------------------------------------------

    @property
    def has_rows(self) -> bool:
        return self.rows is not None

    def issue(self, rows=slice(None)) -> np.ndarray:
        """The issue cycle of ``rows`` (-1: never issued)."""
        return self.rows[rows, TL_ISSUE]

    def issued(self) -> np.ndarray:
        """The rows that issued, in row order."""
        return np.nonzero(self.rows[:, TL_ISSUE] >= 0)[0]

    def since(self, rows) -> np.ndarray:
        """The cycle each of ``rows`` became its warp's next instruction (its wait began)."""
        return self.rows[rows, TL_SINCE]

    def scheduler(self, rows) -> np.ndarray:
        """The scheduler (its index over the GPU) that issued each of ``rows``."""
        return self.rows[rows, TL_SCHED].astype(np.int64)

    def sm(self, rows) -> np.ndarray:
        """The SM each of ``rows`` issued on."""
        return self.scheduler(rows) // self.schedulers

    def unit_copy(self, rows) -> np.ndarray:
        """The copy of its functional unit each of ``rows`` took (-1: none)."""
        return self.rows[rows, TL_COPY].astype(np.int64)

    def wait_bounds(self, rows) -> np.ndarray:
        """[len(rows), 5]: each row's wait cut at since, end1, end2, end3 and its issue cycle
        (:mod:`teg.engine.records`: the four consecutive segments)."""
        return self.rows[rows][:, [TL_SINCE, TL_END1, TL_END2, TL_END3, TL_ISSUE]]

    def wait_causes(self, rows) -> np.ndarray:
        """[len(rows), 3]: the stall-cause codes of each row's first three wait segments (the fourth
        is always ``scheduler``)."""
        return self.rows[rows][:, [TL_C1, TL_C2, TL_C3]].astype(np.int64)

    # ---- per memory transaction -----------------------------------------------------------------

    def _service(self, cols) -> Service:
        where, arrive, start, end = cols
        sel = np.nonzero(self.tx[:, where] >= 0)[0]
        return Service(tx=sel, where=self.tx[sel, where].astype(np.int64), arrive=self.tx[sel, arrive],
                       start=self.tx[sel, start], end=self.tx[sel, end])

    def l2_slices(self) -> Service:
        """The transactions an L2 slice served (an L1 hit, or no slices modelled: none)."""
        return self._service((TX_SLICE, TX_SL_ARRIVE, TX_SL_START, TX_SL_END))

    def dram_channels(self) -> Service:
        """The transactions a DRAM channel served (an L2 hit: none)."""
        return self._service((TX_CHAN, TX_CH_ARRIVE, TX_CH_START, TX_CH_END))

    # ---- per static instruction -----------------------------------------------------------------

    def pc_waits(self) -> np.ndarray:
        """[S + 1, causes]: the warps' waits before issuing each static instruction, by cause
        (cycles summed over executions)."""
        return self.pcs[PC_WAIT]

    def pc_stalls(self) -> np.ndarray:
        """[S + 1, causes]: the SM cycles the stall breakdown charged while warps waited on each
        static instruction (row S: with no instruction waited on)."""
        return self.pcs[PC_STALL]


def recording(result, inp) -> Recording:
    """The records of ``result``, the run of ``inp`` (:class:`teg.engine.lowered.EngineInput`)."""
    return Recording(rows=result.row_record, tx=result.tx_record, pcs=result.pc_causes,
                     schedulers=int(inp.scalars.schedulers), bank_conflicts=bool(inp.scalars.bank_conflicts))
