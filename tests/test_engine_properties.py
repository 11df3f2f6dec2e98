"""Property tests on random small EngineInputs (hypothesis): removing any mechanism never
increases cycles, the stall breakdown sums to the total, runs are deterministic."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from teg.engine import MECHANISMS, run

from teg.engine.handmade import make_input
from teg.report.whatif import whatif_data
from teg.engine.lowered import with_record_order, with_replay, with_switches
from teg.engine.codes import DEP_BASE, DEP_GLOBAL, DEP_SHARED, MEM_GLOBAL, MEM_NONE, MEM_SHARED

KINDS = ("alu", "shared", "global", "store", "barrier")


@st.composite
def engine_inputs(draw, max_warps=4, private=False):
    """Random small inputs. ``private``: one warp per scheduler and no global memory, so warps
    share nothing but barriers (then the model is a max-plus system and provably monotone)."""
    S = draw(st.integers(1, 6))
    kinds = [draw(st.sampled_from(KINDS[:2] + KINDS[4:] if private else KINDS)) for _ in range(S)]
    lat_exec = [draw(st.integers(1, 40)) for _ in range(S)]
    lat_multi = [draw(st.integers(1, 4)) for _ in range(S)]
    lat_same = [draw(st.integers(1, 8)) for _ in range(S)]
    dst = [[draw(st.integers(0, 5))] if k not in ("store", "barrier") else [] for k in kinds]
    src = [draw(st.lists(st.integers(0, 5), max_size=2)) for _ in range(S)]
    mem = [MEM_SHARED if k == "shared" else MEM_GLOBAL if k in ("global", "store") else MEM_NONE for k in kinds]
    depcause = [DEP_SHARED if k == "shared" else DEP_GLOBAL if k == "global" else DEP_BASE + 1 for k in kinds]
    n_units = draw(st.integers(1, 2))
    unit = [draw(st.integers(0, n_units - 1)) for _ in range(S)]
    units_occ = [float(draw(st.integers(1, 4))) for _ in range(n_units)]
    W = draw(st.integers(1, max_warps))
    rows = [draw(st.lists(st.integers(0, S - 1), min_size=1, max_size=10)) for _ in range(W)]
    flat = [s for w in rows for s in w]
    r_wave_min = [1 if kinds[s] == "shared" else 0 for s in flat]
    r_wave = [draw(st.integers(1, 4)) if kinds[s] == "shared" else 0 for s in flat]
    channels = draw(st.integers(1, 4))
    tx, tx_min = [], []
    for s in flat:
        if mem[s] == MEM_GLOBAL:
            n = draw(st.integers(0, 3))
            tx.append([(draw(st.integers(0, 15)) * 32, 32, draw(st.integers(0, channels - 1))) for _ in range(n)])
            tx_min.append(draw(st.integers(min(n, 1), n)) if n else 0)
        else:
            tx.append([])
            tx_min.append(0)
    has_l1 = draw(st.booleans())
    has_l2 = draw(st.booleans())
    # DRAM read/write turnaround: then the stores are writes (store 2: past a write-back L2)
    turn = draw(st.booleans()) if not private else False
    turnaround = (float(draw(st.sampled_from([32, 64, 96]))), float(draw(st.integers(0, 6))),
                  float(draw(st.integers(0, 30)))) if turn else None
    return make_input(
        lat_exec=lat_exec, lat_multi=lat_multi, lat_same=lat_same, unit=unit, units_occ=units_occ,
        units_count=[1] * n_units, units_per_sm=[0] * n_units, dst=dst, src=src, mem=mem,
        mem_lat=lat_exec, store=[(2 if turn else 1) if k == "store" else 0 for k in kinds], barrier=[int(k == "barrier") for k in kinds],
        depcause=depcause, rows_per_warp=rows, warps_per_block=draw(st.integers(1, 2)),
        schedulers=W if private else draw(st.integers(1, 2)), slots=W if private else 64, r_wave=r_wave, r_wave_min=r_wave_min, tx=tx, tx_min=tx_min,
        issue_interval=float(draw(st.integers(1, 2))), policy=draw(st.sampled_from(["gto", "lrr"])),
        l1=(2, 2, 128, 32, 20.0) if has_l1 else None, l2=(4, 2, 128, 32, 100.0) if has_l2 else None,
        dram_latency=float(draw(st.integers(100, 300))), channels=channels,
        service_per_byte=float(draw(st.integers(0, 3))), pipe_slots=draw(st.integers(0, 3)),
        wavefront_cycles=float(draw(st.integers(0, 4))), turnaround=turnaround, record_timeline=False)


def _with(inp, **switches):
    return with_switches(inp, **switches)


# derandomize: every run (CI included) explores the same 400 examples, so a failure reproduces; to
# search new random inputs, set derandomize=False locally (a search found _BAR_AT_EXIT below; after
# its fix, 10,000 random private-warp, 3,000 one-warp and 4,500 replay examples passed)
SETTINGS = settings(max_examples=400, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(engine_inputs())
def test_stalls_sum_to_cycles_and_runs_are_identical(inp):
    a = run(inp)
    b = run(inp)
    assert sum(a.stalls.values()) == a.cycles
    assert a.cycles == b.cycles and a.stalls == b.stalls and a.counters == b.counters
    assert np.array_equal(a.pc_count, b.pc_count) and np.array_equal(a.pc_wait, b.pc_wait)
    assert a.instructions == inp.num_rows


def _camped(inp):
    """All DRAM transactions on channel 0 (partition camping)."""
    return replace(inp, rows=inp.rows._replace(tx_chan=np.zeros_like(inp.rows.tx_chan)))


def check_monotone(inp):
    """Removing any one mechanism, or all, never adds cycles — ``channel_skew`` included, on the
    input's own (possibly already spread) channels and on the camped variant: its removal keeps
    every transaction on its channel in the same order and only scales overloaded channels'
    service times down (:func:`teg.memory.channels.balance_scale`)."""
    for case in (inp, _camped(inp)):
        base = run(case).cycles
        for m in MECHANISMS:
            r = run(_with(case, **{m: False}))
            assert r.cycles <= base, m
            assert sum(r.stalls.values()) == r.cycles
        assert run(_with(case, **{m: False for m in MECHANISMS})).cycles <= base


@SETTINGS
@given(engine_inputs(max_warps=1))
def test_removing_a_mechanism_never_adds_cycles_one_warp(inp):
    check_monotone(inp)


# found by a random search: warp 0 ends on a BAR in the same cycle warp 1 reaches its matching BAR;
# warp 0's exit released the episode without warp 1, so arriving one cycle earlier (no same-warp
# penalty) made warp 1 wait for warp 0's slower BAR: 7 → 8 cycles
_BAR_AT_EXIT = make_input(
    lat_exec=[1, 1, 1, 2, 1, 1], lat_multi=[1, 1, 1, 1, 1, 2], lat_same=[1, 1, 1, 1, 2, 1],
    mem_lat=[1, 1, 1, 2, 1, 1], barrier=[1, 0, 0, 1, 0, 0], dst=[[], [0], [0], [], [0], [0]],
    depcause=[DEP_BASE + 1] * 6, rows_per_warp=[[0, 0, 0, 5, 3], [0, 0, 0, 4, 0, 0]], warps_per_block=2,
    schedulers=2, slots=2, record_timeline=False)


@SETTINGS
@given(engine_inputs(max_warps=4, private=True))
@example(_BAR_AT_EXIT)
def test_removing_a_mechanism_never_adds_cycles_private_warps(inp):
    """Several warps that interact only through barriers (one warp per scheduler). With shared
    schedulers, units or DRAM queues, greedy issue can show scheduling anomalies (an earlier
    issue delaying another warp more than it gains), so free re-simulation is asserted monotone
    where the model guarantees it; with sharing, the replay of the baseline order is
    (:func:`check_replay`, docs/model.md "What a what-if means")."""
    check_monotone(inp)


def _kernel_counters(res):
    """The result's counters but ``warp_evaluations``: a replay never takes GTO's scan shortcut, so
    it evaluates more warps than the run it retraces (the engine's own work, not the kernel's)."""
    return {k: v for k, v in res.counters.items() if k != "warp_evaluations"}


def check_replay(inp):
    """Schedule-preserving replay (docs/model.md §5): replaying the baseline's own issue order
    reproduces the baseline exactly (cycles, stall breakdown, counters but warp evaluations,
    per-PC waits, issue order); replaying it with any one mechanism removed, or all, never adds
    cycles, and the stall breakdown of every replay sums to its cycles. ``whatif`` (the better of a
    free re-run and the replay) therefore never reports a what-if slower than the baseline.

    Every mechanism is checked on the input's own channels (random, often already spread) and on
    the camped variant — ``channel_skew`` included: without it each transaction keeps its channel
    and FIFO place and overloaded channels serve faster, so the replay only moves events earlier."""
    from teg.analysis.whatif import whatif

    for case in (inp, _camped(inp)):
        base = run(with_record_order(case))
        assert sorted(base.order.tolist()) == list(range(case.num_rows))
        same = run(with_record_order(with_replay(case, base.order)))
        assert same.cycles == base.cycles and same.stalls == base.stalls
        assert _kernel_counters(same) == _kernel_counters(base)
        assert np.array_equal(same.pc_wait, base.pc_wait) and np.array_equal(same.order, base.order)
        variants = {m: {m: False} for m in MECHANISMS}
        variants["all"] = {m: False for m in MECHANISMS}
        for name, switches in variants.items():
            r = run(with_record_order(with_replay(_with(case, **switches), base.order)))
            assert r.cycles <= base.cycles, name
            assert sum(r.stalls.values()) == r.cycles, name
            assert np.array_equal(r.order, base.order), name
        rows = whatif(case)
        assert rows[0].cycles == base.cycles
        assert all(r.cycles <= base.cycles and not r.anomaly for r in rows if r.mechanism in variants), \
            whatif_data(rows)


@SETTINGS
@given(engine_inputs(max_warps=4))
def test_replay_reproduces_the_baseline_and_never_adds_cycles_shared_warps(inp):
    """Up to 4 warps sharing schedulers, units, the memory pipeline, caches and DRAM channels —
    where a free re-simulation can show a scheduling anomaly, the replay of the baseline order
    cannot."""
    check_replay(inp)
