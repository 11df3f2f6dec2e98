"""``run(EngineInput) -> Result``: allocate the outputs, run the jitted loop, wrap the outcome.

The loop runs in slices: it pauses (``RUN_PAUSED``, its state kept) after a budget of steps and is
called again from Python, which is where a ``KeyboardInterrupt`` (Ctrl-C) can surface — numba's
compiled code never looks at signals, so a run of many seconds would otherwise ignore it. A step
issues at most one instruction per scheduler (and per warp); the first slice is
:data:`FIRST_ISSUES` // min(SMs × schedulers, warps) steps (a run that fits in it is one call of
the loop), and each later slice is sized from the time the previous one took to last about
:data:`SLICE_SECONDS` (at most four times the previous one's steps). Pausing changes nothing in
the results. The state (:func:`teg.engine.core.new_state`) crosses into Python once per run and
back into the loop at each call (about 40 µs each way).

SIGINT is held back (``pthread_sigmask``) while a jitted call runs: numba's compiled wrapper boxes
the run's state, named tuples, with their Python constructor, and an interrupt raised inside it
crashes the process (a segmentation fault, seen on every Ctrl-C before this); released after the
call, the signal raises ``KeyboardInterrupt`` in :func:`_run_sliced`.
"""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from teg import TegError
from teg.engine.codes import (C_STEPS, CAUSE_NAMES, COUNTER_NAMES, NO_WARP, NUM_CAUSES, RUN_BLOCK_TOO_BIG,
                              RUN_DEADLOCK, RUN_DONE, RUN_PAUSED, RUN_REPLAY_NOT_RESIDENT)
from teg.engine.core import Outputs, new_state, simulate
from teg.engine.lowered import EngineInput
from teg.engine.records import NTL, NTX, PC_STALL, REC_PCS, REC_ROWS, TL_ISSUE
from teg.engine.result import Result, make_result
from teg.engine.setup import SmOutcome
from teg.engine.static import X_DST, X_NWAW, X_SRC


FIRST_ISSUES = 1 << 17
SLICE_SECONDS = 0.1
try:    # the C function itself (signal.pthread_sigmask converts its result to enums: 8 us a pair of calls, not 1.5)
    from _signal import pthread_sigmask as _sigmask
except ImportError:     # a platform without it
    _sigmask = None
_SIGINT = {signal.SIGINT}


class EngineError(TegError):
    """The simulated kernel cannot complete (deadlock at a barrier, block too large)."""


def run(inp: EngineInput) -> Result:
    """Simulate ``inp`` with the timing model of :mod:`teg.engine.core` (deterministic)."""
    sc = inp.scalars
    record = bool(sc.records & REC_ROWS)
    attrib = bool(sc.records & REC_PCS)
    out = Outputs(
        stall=np.zeros(NUM_CAUSES, np.int64),
        pc_count=np.zeros(inp.num_static, np.int64),
        pc_wait=np.zeros(inp.num_static, np.float64),
        counters=np.zeros(len(COUNTER_NAMES), np.int64),
        timeline=np.full((inp.num_rows if record else 0, NTL), -1.0, np.float64),
        sm_end=np.zeros((sc.sms, 3), np.float64),       # last completion, blocks run, last block retired
        order_out=np.zeros(inp.num_rows if sc.record_order else 0, np.int64),
        pcc=np.zeros((2, inp.num_static + 1 if attrib else 0, NUM_CAUSES), np.int64),
        tx_rec=np.full((inp.rows.tx_addr.shape[0] if record else 0, NTX), -1.0, np.float64))
    kernel = inp.setup.kernel if inp.setup is not None else "kernel"
    if inp.grid.c_start.shape[0] == 0:
        raise EngineError("nothing to simulate: no warp has instructions")
    if inp.static.s_src.shape[1] > X_DST - X_SRC or inp.static.s_dst.shape[1] > X_NWAW - X_DST:
        raise EngineError(f"{kernel}: an instruction lists more than {X_DST - X_SRC} source or {X_NWAW - X_DST} "
                          "destination registers")
    order_in = _checked_order(inp)
    outcome, cycles = _run_sliced(inp, order_in, out)
    if outcome == RUN_DEADLOCK and order_in.shape[0]:
        raise EngineError(f"{kernel}: replay order infeasible at cycle {cycles}: its next row waits for something "
                          "only later rows provide (a barrier arrival; an order from another configuration?)")
    if outcome == RUN_DEADLOCK:
        raise EngineError(f"{kernel}: deadlock at cycle {cycles}: warps wait forever (a barrier that not every "
                          "warp of the block reaches?)")
    if outcome == RUN_BLOCK_TOO_BIG:
        raise EngineError(f"{kernel}: a block needs more warp slots than the SM has")
    if outcome == RUN_REPLAY_NOT_RESIDENT:
        raise EngineError(f"{kernel}: replay order infeasible at cycle {cycles}: it names a row whose warp is not "
                          "resident yet (an order from another configuration?)")
    assert outcome == RUN_DONE, outcome
    stall, pcc, sm_end, order_out, timeline = out.stall, out.pcc, out.sm_end, out.order_out, out.timeline
    sm_blocks = sm_end[:, 1].astype(np.int64).tolist()
    n_sms = sc.sms
    launch = kernel_launch_cycles(inp)
    cycles = add_kernel_launch(cycles, stall, pcc, n_sms, launch)
    per_sm = SmOutcome(sm_blocks=sm_blocks, kernel_launch_cycles=launch)
    if n_sms > 1:
        # every SM's cycles are charged; the breakdown reported is the average busy SM's (an SM
        # that ran no block idles the whole kernel, all no_warp: it is left out, and said apart)
        busy = sum(1 for b in sm_blocks if b > 0) or n_sms
        per_sm = replace(per_sm, sm_cycle_stalls={name: int(stall[i]) for i, name in enumerate(CAUSE_NAMES)},
                          stall_sms=busy)
        stall = stall.copy()
        stall[NO_WARP] -= (n_sms - busy) * int(cycles)
        stall = average_breakdown(stall, busy)
    return make_result(cycles, stall, out.counters, out.pc_count, out.pc_wait.astype(np.int64), sm_end[:, 0],
                       timeline[:, TL_ISSUE].astype(np.int64) if record else None, inp.setup, per_sm,
                       order_out if order_out.shape[0] else None, sm_retired=sm_end[:, 2],
                       row_record=timeline if record else None, tx_record=out.tx_rec if record else None,
                       pc_causes=pcc if attrib else None)


def _run_sliced(inp: EngineInput, order_in: np.ndarray, out: Outputs) -> tuple[int, int]:
    """The loop's outcome and cycles, run a slice of steps at a time (module docstring)."""
    sc = inp.scalars
    steps = max(1, FIRST_ISSUES // min(sc.sms * sc.schedulers, inp.grid.c_start.shape[0]))
    began = time.perf_counter()
    with _interrupts_held():
        sim = new_state(inp.static, inp.rows, inp.grid, sc, out, order_in.shape[0] > 0)
        outcome, cycles = simulate(inp.rows, inp.grid, sc, order_in, out, sim, steps)
    while outcome == RUN_PAUSED:
        now = time.perf_counter()
        steps = max(1, min(4 * steps, int(steps * SLICE_SECONDS / max(now - began, 1e-6))))
        began = now
        with _interrupts_held():
            outcome, cycles = _resume(inp.rows, inp.grid, sc, order_in, out, sim, out.counters[C_STEPS] + steps)
    return outcome, cycles


def _resume(*args):
    """:func:`simulate` again after a pause (a name of its own: tests count resumptions)."""
    return simulate(*args)


@contextmanager
def _interrupts_held():
    """SIGINT held back in this thread for the duration (where the platform can), delivered after."""
    if _sigmask is None:
        yield
        return
    old = _sigmask(signal.SIG_BLOCK, _SIGINT)
    try:
        yield
    finally:
        _sigmask(signal.SIG_SETMASK, old)


def kernel_launch_cycles(inp: EngineInput) -> int:
    """The kernel's launch and drain overhead beyond what its SMs do (``kernel_launch_cycles``;
    0 with the ``kernel_launch`` switch off)."""
    return int(round(inp.scalars.kernel_launch_cycles)) if inp.scalars.kernel_launch else 0


def add_kernel_launch(cycles: int, stall: np.ndarray, pcc: np.ndarray, n_sms: int, k: int) -> int:
    """The kernel's cycles with ``k`` cycles of launch and drain added (:func:`kernel_launch_cycles`):
    every simulated SM idles through them, so each is charged that many ``no_warp`` cycles
    (``stall`` and the per-instruction attribution ``pcc``'s no-instruction row, in place)."""
    if k <= 0:
        return cycles
    stall[NO_WARP] += k * n_sms
    if pcc.shape[1]:
        pcc[PC_STALL, pcc.shape[1] - 1, NO_WARP] += k * n_sms
    return cycles + k


def average_breakdown(sm_cycles: np.ndarray, n_sms: int) -> np.ndarray:
    """The stall breakdown of the average SM: SM-cycles by cause (their sum is ``n_sms`` times the
    kernel's cycles) divided by ``n_sms``, rounded by largest remainder (ties: the lower cause
    index) so that the causes still sum to the kernel's cycles."""
    q, r = np.divmod(np.asarray(sm_cycles, np.int64), n_sms)
    left = int(r.sum()) // n_sms
    if left:
        order = np.lexsort((np.arange(r.shape[0]), -r))
        q[order[:left]] += 1
    return q


def _checked_order(inp: EngineInput) -> np.ndarray:
    """The replay order as int64 rows (empty: schedule freely). It must hold every row once and
    each warp's rows in program order; otherwise :class:`EngineError`."""
    order = inp.replay_order
    if order is None:
        return np.zeros(0, np.int64)
    order = np.ascontiguousarray(order, np.int64)
    n = inp.num_rows
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise EngineError(f"replay order: expected a permutation of the {n} rows, got {order.shape[0]} entries")
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    c_start, c_end = inp.grid.c_start, inp.grid.c_end
    lens = c_end - c_start
    inner = np.ones(n, bool)                  # row i and i+1 belong to the same warp context
    inner[(c_end - 1)[lens > 0]] = False
    if np.any((np.diff(pos) <= 0) & inner[:-1]):
        bad = int(np.nonzero((np.diff(pos) <= 0) & inner[:-1])[0][0])
        raise EngineError(f"replay order: row {bad + 1} comes before row {bad} of the same warp")
    return order
