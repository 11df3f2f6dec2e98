"""What-if analysis: one mechanism removed at a time, on hand-built inputs and on the bundled
example."""

from __future__ import annotations

import pytest

from teg.analysis.whatif import whatif
from teg.report.whatif import whatif_data
from teg.engine import MECHANISMS, Options, load_inputs, lower
from teg.engine.handmade import make_input
from teg.engine.codes import DEP_BASE, DEP_SHARED, MEM_SHARED
from teg.resources import traces_dir


def test_rows_and_savings_hand_built():
    """One warp: a 4-way conflicted shared load (latency 20, 3 extra wavefronts × 5) feeding an
    FADD (latency 4). Removing bank conflicts saves exactly 15 cycles; mechanisms that play no
    part save nothing."""
    inp = make_input(lat_exec=[20, 4], lat_multi=[1, 1], lat_same=[1, 1], dst=[[8], [9]], src=[[1], [8]],
                     mem=[MEM_SHARED, 0], mem_lat=[20, 0], depcause=[DEP_SHARED, DEP_BASE + 1],
                     r_wave=[4, 0], r_wave_min=[1, 0], wavefront_cycles=5)
    rows = whatif(inp)
    assert [r.mechanism for r in rows] == ["baseline", *MECHANISMS, "all"]
    by = {r.mechanism: r for r in rows}
    assert by["baseline"].cycles == 20 + 15 + 4
    assert by["bank_conflicts"].saved == 15
    for m in ("coalescing", "channel_skew", "bandwidth", "l1_misses", "l2_misses", "barriers", "same_warp_penalty"):
        assert by[m].saved == 0, m
    # consumers no longer wait: FADD issues at 1 (same-warp 1); the kernel still ends when the
    # load's data is back (35), so only the FADD's own 4 cycles after it are saved
    assert by["dependencies"].cycles == 35 and by["dependencies"].saved == 4
    assert by["all"].cycles <= min(r.cycles for r in rows)
    assert by["bank_conflicts"].speedup == pytest.approx(39 / 24)
    assert not any(r.anomaly for r in rows)


def test_example_whatif_bank_conflicts_matter():
    f = load_inputs(sass=traces_dir() / "matmul_abt.sm_90.sass", trace=traces_dir() / "matmul_abt.sm_90.trace.npz")
    rows = whatif(lower(f.program, f.kernel_trace, f.machine, Options()))
    by = {r.mechanism: r for r in rows}
    assert rows[0].mechanism == "baseline"
    assert by["bank_conflicts"].saved > 0
    assert by["all"].cycles < by["baseline"].cycles
    d = whatif_data(rows)[1]
    assert set(d) >= {"mechanism", "cycles", "saved", "speedup"}
