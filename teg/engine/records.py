"""What the engine records for the reports people look at (``teg estimate --timeline``, ``--view
instructions``), beyond the cycle count and the stall breakdown: the layouts of the record arrays
and the small jitted helpers the loop of :mod:`teg.engine.core` calls to fill them.

Nothing here runs unless the run asks for it: the scalar ``records`` is a set of bits,
``REC_ROWS`` (per dynamic row: issue cycle, the wait before it split by cause, scheduler and unit
copy; per memory transaction: its L2-slice and DRAM-channel arrival, start and end of service)
and ``REC_PCS`` (per static instruction: the warps' waits before issue by cause, and the SM stall
cycles the stall breakdown charged while waiting on it).

A row's wait ``[since, issue)`` (``since``: the cycle the instruction became the warp's next one)
is cut into four consecutive segments, each named by a stall cause of :mod:`teg.engine.codes`:

* ``[since, end1)`` — the first cause of the warp's dependency time ``t_dep`` (``c1``: a producer's
  dependency class, the same-warp latency, a barrier, ``cache_miss`` …), up to the producer's
  conflict- and queue-free time (the split the stall breakdown uses);
* ``[end1, end2)`` — its second cause (``c2``: ``bank_conflict``, ``channel_queue``, ``l2_queue`` …)
  until ``t_dep``;
* ``[end2, end3)`` — ``unit_busy`` or ``mem_pipe_full`` (``c3``) until the unit copy the instruction
  takes (or the memory-pipeline slot / MSHR entry) was free;
* ``[end3, issue)`` — ``scheduler``: eligible, waiting its turn while the scheduler issued others.

Boundaries are whole cycles (``ceil``) clamped into order, so the segments and the issue cycle
itself tile a warp's life from its launch to its last issue without gap or overlap.
"""

from __future__ import annotations

import math

from teg.jit import njit

from teg.engine.codes import MEM_PIPE, SCHEDULER, UNIT_BUSY
from teg.jit import inner

REC_ROWS = 1        # ``records`` bit: per-row and per-transaction records
REC_PCS = 2         # ``records`` bit: per-instruction waits and charged stall cycles

# per dynamic row, float64 [N, NTL] (-1 where never written)
TL_ISSUE, TL_SINCE, TL_END1, TL_END2, TL_END3, TL_C1, TL_C2, TL_C3, TL_SCHED, TL_COPY = range(10)
NTL = 10
# per memory transaction, float64 [M, NTX] (-1 where it did not reach that level: an L1 hit has no
# slice, an L2 hit no channel): the slice or channel, arrival, start and end of service
TX_SLICE, TX_SL_ARRIVE, TX_SL_START, TX_SL_END = range(4)
TX_CHAN, TX_CH_ARRIVE, TX_CH_START, TX_CH_END = range(4, 8)
NTX = 8
# per static instruction, int64 [2, S + 1, NUM_CAUSES]: PC_WAIT the warps' waits before issue by
# cause (cycles summed over executions), PC_STALL the SM cycles the stall breakdown charged to a
# wait on the instruction (row S: charged while no instruction was waited on — no warp resident)
PC_WAIT, PC_STALL = 0, 1


@njit(cache=True)
def _clamp(x, lo, hi):
    """``x`` limited to ``[lo, hi]`` (``lo`` wins when ``lo > hi``)."""
    if x > hi:
        x = hi
    if x < lo:
        x = lo
    return x


@inner()
def record_issue(rows, pcc, row, s, g, t, since, tdep, split, c1, c2, unit_free, copy, pipe_free):
    """Record the issue of dynamic ``row`` (static ``s``) by scheduler ``g`` at cycle ``t``: its
    wait ``[since, t)`` cut at ``ceil(split)``, ``ceil(tdep)`` and the later of ``unit_free`` (the
    taken unit copy ``copy`` was free from then) and ``pipe_free`` (memory-pipeline slot or MSHR
    entry; -inf when not needed) into causes ``c1``, ``c2``, ``unit_busy``/``mem_pipe_full`` and
    ``scheduler`` (module docstring). Writes ``rows[row]`` when ``rows`` has rows, adds the
    segments to ``pcc[PC_WAIT, s]`` when ``pcc`` has rows."""
    td = _clamp(math.ceil(tdep), since, t)
    e1 = _clamp(math.ceil(split), since, td)
    c3 = UNIT_BUSY
    res = unit_free
    if pipe_free > res:
        res = pipe_free
        c3 = MEM_PIPE
    e3 = _clamp(math.ceil(res), td, t) if res > -1e300 else td
    if rows.shape[0] > 0:
        rows[row, TL_ISSUE] = t
        rows[row, TL_SINCE] = since
        rows[row, TL_END1] = e1
        rows[row, TL_END2] = td
        rows[row, TL_END3] = e3
        rows[row, TL_C1] = c1
        rows[row, TL_C2] = c2
        rows[row, TL_C3] = c3
        rows[row, TL_SCHED] = g
        rows[row, TL_COPY] = copy
    if pcc.shape[1] > 0:
        pcc[PC_WAIT, s, c1] += int(e1 - since)
        pcc[PC_WAIT, s, c2] += int(td - e1)
        pcc[PC_WAIT, s, c3] += int(e3 - td)
        pcc[PC_WAIT, s, SCHEDULER] += int(t - e3)


@inner()
def record_level(tx_rec, j, col, where, arrive, start, end):
    """Transaction ``j`` reached an L2 slice (``col = TX_SLICE``) or a DRAM channel
    (``col = TX_CHAN``) ``where`` at ``arrive``, was served from ``start`` to ``end``."""
    tx_rec[j, col] = where
    tx_rec[j, col + 1] = arrive
    tx_rec[j, col + 2] = start
    tx_rec[j, col + 3] = end


def with_records(inp, timeline: bool | None = None, instructions: bool | None = None):
    """A shallow copy of the :class:`~teg.engine.lowered.EngineInput` ``inp`` (arrays shared) whose
    run records its rows and transactions (``timeline``) and/or its per-instruction waits and
    charged stall cycles (``instructions``); None leaves a setting as it is."""
    from teg.engine.lowered import with_scalars

    bits = inp.scalars.records
    for bit, on in ((REC_ROWS, timeline), (REC_PCS, instructions)):
        if on is not None:
            bits = (bits | bit) if on else (bits & ~bit)
    return with_scalars(inp, records=bits)
