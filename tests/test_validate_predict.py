"""`teg validate predict` end to end: the suite compiled by nvcc, traced by the emulator, timed by
the engine on one SM. The engine's prediction of a dependent FFMA chain, pushed through the
calibration fit, must give back the machine table's own FP32 latency (a round trip through the
same clock-bracketed region the measurement uses); `teg validate report` predicts the recorded
sample's cases itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from teg import machine as machine_mod
from teg.cli import main

pytestmark = pytest.mark.nvcc

DATA = Path(__file__).parent / "data" / "validation"


@pytest.fixture(scope="module")
def predictor():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    from teg.sass.binaries import ToolNotFoundError, find_tool
    try:
        find_tool("cuobjdump")
    except ToolNotFoundError:
        pytest.skip("cuobjdump not installed (pip install teg[cuda])")
    try:
        from teg.emu.launch import emulate  # noqa: F401
        from teg.engine import Options, lower, occupancy, run  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"emulator/engine not available: {exc}")
    from teg.validate import predict, suite
    return predict, suite.load()


def test_engine_prediction_round_trips_the_table_latency(predictor, tmp_path):
    predict, suite = predictor
    m = machine_mod.load("sm_90")
    cases = suite.select(["lat_ffma_n*"])
    doc = predict.predict(suite, "sm_90", cases, warps=[1], with_models=False, cache_dir=tmp_path)
    assert doc["kind"] == "predicted" and doc["models"] == ["engine"]
    cyc = {c["case"]: c["results"][0]["predicted"]["engine"] for c in doc["cases"]}
    assert set(cyc) == {"lat_ffma_n32", "lat_ffma_n64", "lat_ffma_n128"}
    # 96 more dependent FFMAs between the clocks cost 96 x the table's execution latency
    assert (cyc["lat_ffma_n128"] - cyc["lat_ffma_n32"]) / 96 == pytest.approx(m.latencies["fp32"].execution, abs=0.05)
    # the same numbers read as a measurement calibrate back to the table's value
    from teg.validate import calibrate
    as_measured = {"kind": "measured", "gpu": {"sm": 90}, "cases": [
        {**c, "results": [{"warps": r["warps"], "cycles": r["predicted"]["engine"]} for r in c["results"]]}
        for c in doc["cases"]]}
    fits = {f.key(): f.value for f in calibrate.fit(as_measured, m)}
    assert fits == {"latencies.fp32.execution": pytest.approx(m.latencies["fp32"].execution, abs=0.05)}


def test_report_predicts_the_recorded_sample_itself(predictor, tmp_path, monkeypatch):
    monkeypatch.setenv("TEG_CACHE", str(tmp_path))
    res = CliRunner().invoke(main, ["validate", "report", str(DATA / "sample_measured.json"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["machine"] == "sm_90" and doc["measured_synthetic"] is True
    assert doc["models"]["engine"]["n"] == 5 and doc["models"]["engine"]["mape"] is not None
    rows = {(r["case"], r["warps"]): r for r in doc["rows"]}
    assert set(rows) == {("lat_ffma_n32", 1), ("lat_ffma_n32", 2), ("matmul_abt_conflict", 1),
                         ("matmul_abt_conflict", 4), ("bank_s32_n32", 1)}
    # the 32-way conflicted chase is predicted slower than the conflict-free FFMA chain
    assert rows[("bank_s32_n32", 1)]["predicted"]["engine"] > rows[("lat_ffma_n32", 1)]["predicted"]["engine"]
    for m in ("mwp_cwp", "cpa", "mpd_cpd", "bsp"):
        assert m in doc["models"]
