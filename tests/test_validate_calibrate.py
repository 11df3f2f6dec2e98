"""`teg calibrate`: synthetic measurements generated from known latencies (+ noise) for the suite's
own micro-benchmark cases must be fitted back within tolerance, and the written table must load."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from teg import machine as machine_mod
from teg.cli import main
from teg.validate import calibrate as C
from teg.validate import suite as S
from teg.validate.measure import case_header

# The "hardware" of the synthetic data: deliberately different from the sm_90 table.
EXEC = {"fp32": 4.5, "imad": 4.8, "int": 4.2, "sfu": 17.5, "fp64": 7.6, "fp16": 6.3, "conv": 12.7}
ISSUE = {"fp32": 1.2, "imad": 2.1, "int": 2.05, "sfu": 8.3, "fp64": 2.4, "fp16": 1.1}
OCC = {"fp32": 1.1, "imad": 2.2, "int": 2.0, "sfu": 8.6, "fp64": 2.3, "fp16": 1.05}
MEM = {"shared_latency": 30.5, "l1_latency": 38.0, "l2_latency": 271.0, "dram_latency": 612.0}
WAVEFRONT = 2.25


def synthetic(machine, noise: float = 0.4, seed: int = 7) -> dict:
    """Measured document for the suite's calibrating cases on ``machine``'s opcode classes."""
    rng = np.random.default_rng(seed)
    suite = S.load()
    cases = []
    sm = machine.sm
    for case in suite.cases:
        cal = case.calibration_values()
        if not cal:
            continue
        steps = cal["steps"]
        step = cal["step_sm90"] if sm >= 90 and "step_sm90" in cal else cal["step"]
        classes = [machine.classify(op).latency for op in step]
        q = cal["quantity"]
        if q == "latency":
            cyc = {1: 37 + steps * sum(EXEC[c] for c in classes), 64: 37 + steps * sum(EXEC[c] for c in classes) * 1.5}
        elif q == "occupancy":
            per = ISSUE.get(classes[0], 3.0) * len(step)
            cyc = {1: 45 + steps * per, 64: 45 + steps * 64 * OCC.get(classes[0], 3.0) * len(step) / machine.schedulers}
        elif q == "wavefront":
            cyc = {1: 33 + steps * (MEM["shared_latency"] + (cal["degree"] - 1) * WAVEFRONT)}
        else:
            cyc = {1: 60 + steps * MEM[q]}
        results = [{"warps": w, "cycles": float(c + rng.normal(0, noise))} for w, c in cyc.items()]
        cases.append(case_header(case) | {"results": results})
    return {"kind": "measured", "synthetic": True, "gpu": {"name": "synthetic", "sm": sm, "num_sms": 132,
                                                            "clock_mhz": 1755.0}, "cases": cases,
            "path": "synthetic_h200.json"}


@pytest.fixture(scope="module")
def sm90():
    try:
        return machine_mod.load("sm_90")
    except machine_mod.MachineTableError as exc:
        pytest.skip(f"sm_90 table not available: {exc}")


def test_fit_recovers_known_parameters(sm90):
    fits = {f.key(): f for f in C.fit(synthetic(sm90), sm90)}
    for cls, v in EXEC.items():
        assert fits[f"latencies.{cls}.execution"].value == pytest.approx(v, abs=0.05), cls
    for cls, v in ISSUE.items():
        assert fits[f"latencies.{cls}.issue_same"].value == pytest.approx(v, abs=0.05), cls
    occ = {k: f.value for k, f in fits.items() if k.endswith(".occupancy")}
    # FFMA/FADD share class fp32 -> one entry; occupancy is written on the opcode's class
    assert occ["opcodes.classes.fp32.occupancy"] == pytest.approx(OCC["fp32"], abs=0.02)
    assert occ["opcodes.classes.sfu.occupancy"] == pytest.approx(OCC["sfu"], abs=0.02)
    assert fits["shared.latency"].value == pytest.approx(MEM["shared_latency"], abs=0.05)
    assert fits["memory.l1.latency"].value == pytest.approx(MEM["l1_latency"], abs=0.1)
    assert fits["memory.l2.latency"].value == pytest.approx(MEM["l2_latency"], abs=0.1)
    assert fits["memory.dram_latency"].value == pytest.approx(MEM["dram_latency"], abs=0.1)
    assert fits["shared.wavefront_cycles"].value == pytest.approx(WAVEFRONT, abs=0.02)
    # three families (FADD, FMUL, FFMA) fitted class fp32
    assert len(fits["latencies.fp32.execution"].estimates) == 3
    assert fits["latencies.fp32.execution"].base == sm90.latencies["fp32"].execution


def test_conversion_pair_subtracts_the_other_class(sm90):
    """On sm_90 an F2I→I2FP step mixes class conv with int: conv = slope − fitted int latency."""
    if sm90.classify("I2FP.F32.S32").latency == sm90.classify("F2I.NTZ").latency:
        pytest.skip("this sm_90 table puts I2FP in the conversion class")
    f = next(f for f in C.fit(synthetic(sm90), sm90) if f.key() == "latencies.conv.execution")
    assert f.value == pytest.approx(EXEC["conv"], abs=0.05)
    assert any(c.startswith("lat_f2i_i2f") for c in f.cases)


def test_written_table_loads_and_carries_the_fits(sm90, tmp_path):
    meas = tmp_path / "synthetic_h200.json"
    doc = synthetic(sm90)
    meas.write_text(json.dumps(doc))
    out = tmp_path / "my_h200.yaml"
    res = CliRunner().invoke(main, ["calibrate", str(meas), "--base", "sm_90", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "synthetic" in res.output and "latencies.fp32.execution" in res.output
    m = machine_mod.load(out)
    assert m.name == "my_h200"
    assert m.latencies["fp32"].execution == pytest.approx(EXEC["fp32"], abs=0.05)
    assert m.latencies["fp32"].issue_multi == sm90.latencies["fp32"].issue_multi   # untouched, inherited
    assert m.occupancy(m.classify("MUFU.RSQ")) == pytest.approx(OCC["sfu"], abs=0.02)
    assert m.shared.latency == pytest.approx(MEM["shared_latency"], abs=0.05)
    assert m.memory.l2.latency == pytest.approx(MEM["l2_latency"], abs=0.1)
    assert m.memory.dram_latency == pytest.approx(MEM["dram_latency"], abs=0.1)
    assert m.clock_mhz == 1755.0
    text = out.read_text()
    assert "extends: sm_90" in text and "synthetic_h200.json" in text
    assert m.raw["latencies"]["fp32"]["execution"]["source"].startswith("teg calibrate from synthetic_h200.json")


def test_output_named_by_a_bare_file_name(sm90, tmp_path, monkeypatch):
    """`teg calibrate M -o my_h200.yaml` in the working folder: the new table is checked under its
    temporary name, which has no folder and no .yaml suffix, so the check must load it as a path, not
    look it up as a shipped table's name."""
    meas = tmp_path / "synthetic_h200.json"
    meas.write_text(json.dumps(synthetic(sm90)))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["calibrate", "synthetic_h200.json", "--base", "sm_90", "-o", "my_h200.yaml"])
    assert res.exit_code == 0, res.output
    assert res.output.rstrip().endswith("wrote my_h200.yaml (extends sm_90; loads with teg.machine.load)")
    assert machine_mod.load(tmp_path / "my_h200.yaml").name == "my_h200"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my_h200.yaml", "synthetic_h200.json"]


def test_least_squares_needs_distinct_points():
    with pytest.raises(C.CalibrationError, match="not enough distinct points"):
        C.slope([32, 32], [100.0, 101.0])
    s, c, r2 = C.slope([32, 64, 128], [37 + 4 * 32, 37 + 4 * 64, 37 + 4 * 128])
    assert (s, c, r2) == (pytest.approx(4.0), pytest.approx(37.0), pytest.approx(1.0))


def test_missing_lengths_and_no_calibrating_cases(sm90):
    doc = synthetic(sm90)
    only = [c for c in doc["cases"] if c["case"] == "lat_ffma_n32"]
    with pytest.raises(C.CalibrationError, match="at least two chain lengths"):
        C.fit({**doc, "cases": only}, sm90)
    with pytest.raises(C.CalibrationError, match="no calibrating micro-benchmarks"):
        C.fit({**doc, "cases": [{"case": "x", "results": []}]}, sm90)
