"""Warp / block sweeps (TEG's scaling experiment)."""

from __future__ import annotations

import pytest

from teg.analysis.sweep import sweep
from teg.engine import Options, load_inputs, lower, run
from teg.resources import traces_dir


@pytest.fixture(scope="module")
def example():
    return load_inputs(sass=traces_dir() / "matmul_abt.sm_90.sass", trace=traces_dir() / "matmul_abt.sm_90.trace.npz")


def test_warp_sweep_rows(example):
    rows = sweep(example, Options(), warps=[1, 2, 4, 8])
    assert [r.warps for r in rows] == [1, 2, 4, 8]
    assert rows[0].speedup == pytest.approx(1.0)
    per_warp = rows[0].instructions
    for r in rows:
        assert r.instructions == r.warps * per_warp      # every trace warp runs the same path
        assert r.throughput == pytest.approx(r.instructions / r.cycles)
        assert r.speedup == pytest.approx(r.throughput / rows[0].throughput)
    # more warps hide latency: more work per cycle
    assert rows[-1].throughput > rows[0].throughput


def test_sweep_point_equals_direct_run(example):
    rows = sweep(example, Options(), warps=[4])
    direct = run(lower(example.program, example.kernel_trace, example.machine, Options(warps=4)))
    assert rows[0].cycles == direct.cycles


def test_block_sweep(example):
    rows = sweep(example, Options(), blocks=[1, 2])
    assert [(r.blocks, r.warps) for r in rows] == [(1, 8), (2, 16)]


def test_more_warps_than_the_trace_reuse_streams(example):
    rows = sweep(example, Options(), warps=[64])
    assert rows[0].warps == 64 and rows[0].instructions == 64 * (example.kernel_trace.warp_start[1])


def test_sweep_needs_one_axis(example):
    with pytest.raises(ValueError):
        sweep(example, warps=[1], blocks=[1])
