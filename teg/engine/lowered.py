"""The lowered kernel: :class:`EngineInput`, everything one run of the jitted loop reads, as a few
named tables of flat numpy arrays and the run's :class:`~teg.engine.scalars.Scalars`.

Built by :func:`teg.engine.lower.lower` (tests build one by hand with
:func:`teg.engine.handmade.make_input`). The tables, which numba takes as they are:

* :class:`StaticTable` — one row per static instruction (``s_*``: unit, latencies, memory path,
  dependency cause, registers, control codes, instruction- and constant-cache lines) and one per
  functional unit (``u_*``);
* :class:`RowTable` — one row per dynamic warp instruction, grouped by warp context (``r_*``:
  static index, shared-memory wavefronts, global transactions as CSR ``r_tx_start`` into the
  per-transaction ``tx_*``);
* :class:`Grid` — the simulated warps (``c_*``: each warp context's rows and block), the blocks
  (``b_ctx_start``), each SM's blocks in launch order (``sm_blocks``) and its near L2 partition.

``replay_order`` (optional) is a global issue order to replay instead of scheduling freely
(docs/model.md §5: a baseline run with ``record_order`` gives it in ``Result.order``). The
``with_*`` functions make shallow copies that change only the scalars or the replay order, so
what-ifs and replays need no second lowering.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, replace

import numpy as np

from teg.engine.scalars import Scalars, scalars
from teg.engine.setup import RunSetup

StaticTable = namedtuple("StaticTable", (
    "s_unit",           # int32 unit index
    "s_occ",            # float64 cycles the instruction occupies one copy of its unit
    "s_lat_exec",       # float64 execution latency (cycles)
    "s_lat_multi",      # float64 issue latency, multiple warps
    "s_lat_same",       # float64 issue latency, same warp
    "s_mem",            # int32 MEM_NONE / MEM_SHARED / MEM_GLOBAL
    "s_mem_lat",        # float64 conflict-free shared latency (MEM_SHARED rows)
    "s_store",          # int32 1 = bypasses L1 (atomics resolve in L2, .cg loads), 2 = a write (write-through
                        # L1, write-back L2)
    "s_barrier",        # int32 1 = BAR (waits for its block)
    "s_depcause",       # int32 stall cause charged to a consumer waiting on this result
    "s_dst",            # int16 [S, D] register ids written (-1 pad)
    "s_src",            # int16 [S, K] register ids read (-1 pad)
    "s_ctrl",           # int32 1 = control codes present
    "s_stall",          # int32 control codes: stall count
    "s_yield",          # int32 control codes: yield flag
    "s_wbar",           # int32 control codes: write barrier (7 = none)
    "s_rbar",           # int32 control codes: read barrier (7 = none)
    "s_wait",           # int32 control codes: 6-bit wait mask
    "s_depbar",         # int32 DEPBAR.LE SBb, N as b + 8 N (-1 = none)
    "s_async",          # int32 1 = cp.async copy (joins the open group), 2 = commit (LDGDEPBAR)
    "s_iline",          # int32 instruction-cache line of the instruction (-1 = fetch not modelled)
    "s_cline",          # int32 constant-cache line of its c[bank][off] operand (-1 = none / not modelled)
    "u_occ",            # float64 [U] cycles one warp instruction occupies a copy of the unit
    "u_count",          # int32 [U] copies of the unit
    "u_per_sm",         # int32 [U] 1 = shared by the SM's schedulers
))
StaticTable.__doc__ = "Per static instruction [S] and per functional unit [U] (see the field comments)."

RowTable = namedtuple("RowTable", (
    "r_sidx",           # int32 [N] static index
    "r_wave",           # int32 [N] shared (or L1 data-stage) wavefronts (0 = not such an access)
    "r_wave_min",       # int32 [N] conflict-free wavefronts
    "r_tx_start",       # int64 [N+1] the row's first global transaction
    "r_tx_min",         # int32 [N] perfect-coalescing transaction count
    "r_tx_min_bytes",   # int64 [N] perfect-coalescing bytes
    "tx_addr",          # int64 [M] transaction byte address
    "tx_bytes",         # int64 [M] transaction bytes
    "tx_chan",          # int32 [M] DRAM channel (also the load behind chan_scale)
))
RowTable.__doc__ = "Per dynamic warp instruction [N] and per global transaction [M] (see the field comments)."

Grid = namedtuple("Grid", (
    "c_start",          # int64 [C] first row of each warp context
    "c_end",            # int64 [C] its end row
    "c_block",          # int32 [C] its block
    "b_ctx_start",      # int32 [B+1] contexts of block b
    "sm_blocks_start",  # int32 [sms+1] each SM's first entry in sm_blocks
    "sm_blocks",        # int32 block ids per SM in launch order
    "sm_part",          # int32 [sms] each SM's near L2 partition (near_partitions)
))
Grid.__doc__ = "The simulated warps, blocks and SMs (see the field comments)."


@dataclass
class EngineInput:
    """What :func:`teg.engine.run` simulates (see the module docstring for the tables)."""

    static: StaticTable
    rows: RowTable
    grid: Grid
    scalars: Scalars
    # schedule-preserving replay: dynamic rows in the order to issue them (None = free scheduling)
    replay_order: np.ndarray | None = None
    # descriptive (not used by the loop): what lowering set up (None: built by hand, unnamed)
    setup: RunSetup | None = None

    @property
    def chan_scale(self) -> np.ndarray:
        """Per-channel DRAM service-time scale the engine applies when ``channel_skew`` is removed
        (float64 ``[channels]``, :func:`teg.memory.channels.balance_scale` of ``tx_chan``): a channel
        loaded above the mean serves at the average load's pace, the others are unchanged. The core
        derives it from ``tx_chan`` itself, so switch copies (:func:`with_switches`) and replays
        need no second lowering; with ``channel_skew`` modelled every scale is 1."""
        from teg.memory.channels import balance_scale

        return balance_scale(self.rows.tx_chan, max(self.scalars.channels, 1))

    @property
    def num_rows(self) -> int:
        return int(self.rows.r_sidx.shape[0])

    @property
    def num_static(self) -> int:
        return int(self.static.s_unit.shape[0])


def near_partitions(n_sms: int, parts: int, counts=None) -> np.ndarray:
    """Each SM's near L2 partition (int32 ``[n_sms]``), in SM index order: ``counts[p]`` SMs near
    partition p (the table's ``memory.l2_partition_sms``: GTC21's A100 62 / 46), scaled to
    ``n_sms`` when they add up to another number (largest remainders; a table derived with fewer
    SMs keeps the proportions); without counts an even split (SM s near partition
    ⌊s · parts / n_sms⌋)."""
    if counts is None:
        return (np.arange(n_sms, dtype=np.int64) * parts // max(n_sms, 1)).astype(np.int32)
    if len(counts) != parts or sum(counts) <= 0:
        raise ValueError(f"L2 partition SM counts {list(counts)}: need one positive count per partition ({parts})")
    exact = np.asarray(counts, np.float64) * n_sms / sum(counts)
    n = np.floor(exact).astype(np.int64)
    n[np.argsort(-(exact - n), kind="stable")[:n_sms - int(n.sum())]] += 1
    return np.repeat(np.arange(parts, dtype=np.int32), n)


def with_scalars(inp: EngineInput, **values) -> EngineInput:
    """A shallow copy of ``inp`` with scalars changed (by name; the arrays are shared)."""
    return replace(inp, scalars=scalars(inp.scalars, **values))


def with_switches(inp: EngineInput, **switches: bool) -> EngineInput:
    """A shallow copy of ``inp`` with mechanism switches changed (the arrays are shared) — what-ifs
    need no second lowering."""
    from teg.engine.options import MECHANISMS

    for name in switches:
        if name not in MECHANISMS:
            raise KeyError(f"unknown mechanism {name!r}")
    return with_scalars(inp, **{name: bool(on) for name, on in switches.items()})


def with_replay(inp: EngineInput, order) -> EngineInput:
    """A shallow copy of ``inp`` that replays the issue order ``order`` (``Result.order`` of a run
    with ``record_order``; ``None`` = schedule freely again). :func:`teg.engine.run` checks that it
    is a permutation of the rows keeping each warp's rows in program order."""
    return replace(inp, replay_order=None if order is None else np.ascontiguousarray(order, np.int64))


def with_record_order(inp: EngineInput, on: bool = True) -> EngineInput:
    """A shallow copy of ``inp`` whose run records its global issue order (``Result.order``)."""
    return with_scalars(inp, record_order=bool(on))
