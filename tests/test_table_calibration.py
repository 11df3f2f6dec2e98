"""Machine-table numbers measured by a stated method on one measured row: the table's value must be
what the method gives on the file it names (a change of either side fails here)."""
import csv
import json
from pathlib import Path

from teg.machine import load

ROOT = Path(__file__).resolve().parents[1]
H200_NCU = ROOT / "benchmarks" / "accuracy" / "measured" / "h200_apps_ncu.csv"
H200_VAL = ROOT / "benchmarks" / "validation" / "measured" / "h200_20261128.json"


def _ncu_row(program: str, launch: int) -> dict:
    with H200_NCU.open() as f:
        for row in csv.DictReader(f):
            if row["program"] == program and int(row["launch"]) == launch:
                return row
    raise AssertionError(f"{H200_NCU.name}: no row {program} launch {launch}")


def test_sm90_kernel_launch_is_the_h200_one_sm_gap():
    """sm_90 kernel_launch_cycles: lud launch 0 (lud_diagonal, one block of 16 threads) runs on one
    SM, so the kernel's cycles minus that SM's active cycles (132 SMs x the per-SM average) is the
    launch and drain beyond the SM's work: 20853 - 132 x 136.8 = 2795.4."""
    row = _ncu_row("lud", 0)
    assert row["grid"] == "1x1x1"
    gap = float(row["gpu_active_cycles"]) - 132 * float(row["sm_active_cycles"])
    assert abs(gap - 2795.4) < 0.05
    for name in ("sm_90", "h200", "h100_pcie"):
        assert load(name).kernel_launch_cycles == round(gap)


def test_h200_dram_latency_is_the_measured_chase_less_the_far_share():
    """h200 memory.dram_latency: the measured cold chase (lat_ldg_dram, one warp) costs
    (t(64 steps) - t(32 steps)) / 32 = (44072.5 - 22039) / 32 = 688.55 cycles per step; half of its
    lines have their home in the far L2 partition, whose DRAM trip the engine lengthens by
    l2_far_latency - l2.latency: 688.55 - (502 - 263) / 2 = 569.05, rounded."""
    doc = json.loads(H200_VAL.read_text())
    one_warp = {}
    for case in doc["cases"]:
        if case["case"] in ("lat_ldg_dram_n32", "lat_ldg_dram_n64"):
            one_warp[case["case"]] = next(r["cycles"] for r in case["results"] if r["warps"] == 1)
    step = (one_warp["lat_ldg_dram_n64"] - one_warp["lat_ldg_dram_n32"]) / 32
    assert abs(step - 688.5) < 0.05
    m = load("h200")
    far_extra = m.memory.l2_far_latency - m.memory.l2.latency
    assert far_extra == 239
    assert m.memory.dram_latency == round(step - far_extra / 2) == 569
    # the H100 boards keep the sm_90 figure (LUO24, H800 PCIe): the H200 number is its own
    assert load("sm_90").memory.dram_latency == 479
