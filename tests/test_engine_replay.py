"""Schedule-preserving replay (docs/model.md §5): recording the issue order, replaying it, the
checks on a replay order, and the what-if that a free re-simulation gets wrong."""

from __future__ import annotations

import numpy as np
import pytest

from teg.analysis.whatif import whatif
from teg.engine import EngineError, Options, run
from teg.engine.handmade import make_input
from teg.engine.lowered import with_record_order, with_replay, with_switches


def anomaly_input():
    """One GTO scheduler, two warps (separate blocks). Warp 0: A (latency 3, writes R0), then B
    (latency 1, writes R0 — write-after-write: B may issue at 3 - 1 = 2). Warp 1: A.

    Baseline: warp 0 A at 0, warp 1 A at 1 (warp 0 waits for the WAW), warp 0 B at 2; the last
    result is warp 1's A at 1 + 3 = 4 → 4 cycles, issue order rows [0, 2, 1].
    Without dependencies, GTO keeps warp 0: B at 1, warp 1's A only at 2 → ends at 5 (Graham's
    anomaly). Replaying the order [0, 2, 1] without dependencies: 0, 1, 2 → 4 cycles."""
    return make_input(lat_exec=[3, 1], lat_multi=[1, 1], lat_same=[1, 1], dst=[[0], [0]], src=[[], []],
                      rows_per_warp=[[0, 1], [0]], warps_per_block=1)


def test_order_is_recorded_in_issue_order():
    r = run(with_record_order(anomaly_input()))
    assert r.cycles == 4
    assert r.order.tolist() == [0, 2, 1]
    assert r.timeline.tolist() == [0, 2, 1]
    assert run(anomaly_input()).order is None


def test_free_rerun_shows_the_anomaly_replay_does_not():
    inp = anomaly_input()
    no_deps = with_switches(inp, dependencies=False)
    free = run(no_deps)
    assert free.cycles == 5 and free.timeline.tolist() == [0, 1, 2]
    rep = run(with_replay(no_deps, [0, 2, 1]))
    assert rep.cycles == 4 and rep.timeline.tolist() == [0, 2, 1]
    assert sum(rep.stalls.values()) == 4
    by = {r.mechanism: r for r in whatif(inp)}
    assert by["dependencies"].cycles == 4 and by["dependencies"].schedule == "replay"
    assert by["dependencies"].free_cycles == 5 and by["dependencies"].replay_cycles == 4
    assert not by["dependencies"].anomaly
    assert by["baseline"].schedule == "free" and by["baseline"].replay_cycles == 4


def test_replay_waits_for_the_order():
    """Replaying [0, 1, 2] (warp 0's B before warp 1's A) with everything modelled: B waits for
    its WAW until 2, warp 1's A follows at 3 and ends at 6 — the order is kept even where a free
    scheduler would fill the gap."""
    r = run(with_replay(anomaly_input(), np.array([0, 1, 2])))
    assert r.timeline.tolist() == [0, 2, 3]
    assert r.cycles == 6 and sum(r.stalls.values()) == 6


def test_same_cycle_issues_keep_scheduler_order():
    """Two schedulers, one warp each: both issue at cycle 0 (scheduler 0 first). Replaying the
    order with scheduler 1's row first must put scheduler 0's row a cycle later (the order says
    it comes after, and one sweep over the schedulers visits 0 before 1)."""
    inp = make_input(lat_exec=[2], lat_multi=[1], lat_same=[1], dst=[[0]], rows_per_warp=[[0], [0]],
                     schedulers=2, slots=2)
    base = run(with_record_order(inp))
    assert base.order.tolist() == [0, 1] and base.timeline.tolist() == [0, 0] and base.cycles == 2
    swapped = run(with_replay(inp, [1, 0]))
    assert swapped.timeline.tolist() == [1, 0] and swapped.cycles == 3


@pytest.mark.parametrize("order, msg", [([0, 2], "permutation"), ([0, 0, 1], "permutation"),
                                        ([1, 0, 2], "row 1 comes before row 0")])
def test_bad_orders_are_refused(order, msg):
    with pytest.raises(EngineError, match=msg):
        run(with_replay(anomaly_input(), order))


def test_order_from_another_configuration_is_refused():
    """Two blocks, one resident at a time: block 1's warp is not resident before block 0 ends."""
    inp = make_input(lat_exec=[1], lat_multi=[1], lat_same=[1], dst=[[0]], rows_per_warp=[[0, 0], [0]],
                     warps_per_block=1, resident=1)
    with pytest.raises(EngineError, match="not resident"):
        run(with_replay(inp, [0, 2, 1]))


def test_options_record_order_through_lower():
    from teg.engine import load_inputs, lower
    from teg.resources import traces_dir

    f = load_inputs(sass=traces_dir() / "matmul_abt.sm_90.sass", trace=traces_dir() / "matmul_abt.sm_90.trace.npz")
    inp = lower(f.program, f.kernel_trace, f.machine, Options(record_order=True))
    base = run(inp)
    assert np.array_equal(np.sort(base.order), np.arange(inp.num_rows))
    again = run(with_replay(inp, base.order))
    assert again.cycles == base.cycles and again.stalls == base.stalls


def test_whatif_table_and_json_name_the_schedule():
    from teg.report import whatif_json, whatif_text
    import json

    rows = whatif(anomaly_input())
    text = whatif_text(rows)
    assert text.splitlines()[0].split()[-1] == "schedule"
    dep_line = next(line for line in text.splitlines() if line.startswith("dependencies"))
    assert dep_line.split()[-1] == "replay" and " 4 " in dep_line and "!" not in dep_line
    d = {r["mechanism"]: r for r in json.loads(whatif_json(rows))}
    assert d["dependencies"]["schedule"] == "replay"
    assert (d["dependencies"]["free_cycles"], d["dependencies"]["replay_cycles"]) == (5, 4)
