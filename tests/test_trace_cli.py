"""``teg trace info`` / ``teg trace convert`` and the statistics behind ``info``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import teg.trace as tt
from teg.cli import main
from teg.trace.summary import kernel_summary, popcount32, sectors_per_request
from test_trace_synth import Block, Row, kernel_text

DATA = Path(__file__).parent / "data" / "traces"
VECADD = DATA / "microgpusim" / "vectoradd-100-32-trace"
TORCH = DATA / "dp-performance-accel-sim" / "simpletorch"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEG_CACHE_DIR", str(tmp_path / "cache"))


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def machine_or_skip(name: str):
    tm = pytest.importorskip("teg.machine")
    try:
        return tm.load(name)
    except Exception as exc:        # table not written yet in this checkout
        pytest.skip(f"machine table {name} unavailable: {exc}")


def text_masks(path: Path) -> list[int]:
    """Masks of all instruction lines, read with a regex (independent of the reader)."""
    return [int(m, 16) for m in re.findall(r"^[0-9a-f]{4,} ([0-9a-f]{8}) ", path.read_text(), re.M)]


def test_trace_group_is_the_command_teg_runs():
    from teg.cli.trace import trace_group
    assert main.get_command(None, "trace") is trace_group
    assert {"info", "convert"} <= set(trace_group.commands)


def test_info_json_on_real_sample():
    r = run("trace", "info", str(VECADD), "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    (k,) = doc["kernels"]
    assert k["name"] == "_Z6vecAddIfEvPT_S1_S1_i"
    assert (k["grid"], k["block"], k["warps"], k["warp_instructions"]) == ([1, 1, 1], [1024, 1, 1], 32, 344)
    masks = text_masks(VECADD / "kernel-1.traceg")
    assert len(masks) == 344
    assert k["avg_active_lanes"] == pytest.approx(sum(bin(m).count("1") for m in masks) / 344)
    text = (VECADD / "kernel-1.traceg").read_text()
    assert k["memory_instructions"] == len(re.findall(r" [1-9]\d* [012] 0x", text))
    assert doc["memcpy"] == [[0x7F2B2D500000, 400], [0x7F2B2D500200, 400], [0x7F2B2D500400, 400]]


def test_info_accepts_every_input_form(tmp_path):
    native = tt.save(tt.load(VECADD), tmp_path / "v.npz")
    for p in (VECADD, VECADD / "kernelslist.g", VECADD / "kernel-1.traceg", native):
        doc = json.loads(run("trace", "info", str(p), "--json").output)
        assert doc["kernels"][0]["warp_instructions"] == 344


def test_info_text_output():
    r = run("trace", "info", str(VECADD))
    assert r.exit_code == 0
    assert "_Z6vecAddIfEvPT_S1_S1_i" in r.output and "warp instructions 344" in r.output
    assert "grid (1,1,1)  block (1024,1,1)" in r.output


def test_info_mix_by_unit_class_with_machine():
    m = machine_or_skip("sm_70")
    doc = json.loads(run("trace", "info", str(TORCH), "--json", "--machine", "sm_70").output)
    for k in doc["kernels"]:
        assert k["classified"] and k["machine"] == m.name
        assert sum(k["mix"].values()) == k["warp_instructions"]
        assert sum(k["memory_by_space"].values()) == k["memory_instructions"]
        unknown = {op for op in k["opcodes"] if m.classify(op) is None}
        assert set(k["unknown_opcodes"]) == unknown


def test_sectors_per_request_hand_computed(tmp_path):
    rows = [Row(0x10, 0xFFFFFFFF, "LDG.E.128.SYS", ["R4"], ["R2"], mem=True, mode=1, addrs=[0x1000 + 16 * i for i in range(32)]),
            Row(0x20, 0xFFFFFFFF, "STG.E.SYS", [], ["R2", "R5"], mem=True, mode=1, addrs=[0x2000 + 4 * i for i in range(32)]),
            Row(0x30, 0x1, "LDG.E.64", ["R4"], ["R2"], mem=True, mode=2, addrs=[28]),        # bytes 28..35: 2 sectors
            Row(0x40, 0x3, "LDG.E.64", ["R4"], ["R2"], mem=True, mode=0, addrs=[0, 4096]),  # 2 sectors far apart
            Row(0x50, 0, "LDG.E.64", ["R4"], ["R2"], mem=True, mode=1, addrs=[]),
            Row(0x60, 0x3, "IMAD.MOV.U32", ["R4"], ["R2"])]
    p = tmp_path / "k.traceg"
    p.write_text(kernel_text([Block((0, 0, 0), [rows, []])]))
    kt = tt.load(p, cache=False).kernels[0]
    assert sectors_per_request(kt, np.arange(5)).tolist() == [16, 4, 2, 2, 0]
    assert popcount32(np.asarray(kt.mask)).tolist() == [32, 32, 1, 2, 0, 2]
    m = machine_or_skip("sm_80")
    s = kernel_summary(kt, m)
    assert s["global_requests"] == 4                       # the mask-0 row is no request
    # rows 0x10, 0x30, 0x40 load, 0x20 stores; the mask-0 load at 0x50 is no request
    assert (s["global_load_requests"], s["global_store_requests"], s["global_atomic_requests"]) == (3, 1, 0)
    assert s["sectors_per_request"]["histogram"] == {"2": 2, "4": 1, "16": 1}
    assert s["sectors_per_request"]["mean"] == pytest.approx(6.0)
    assert s["memory_by_space"] == {"global": 5}


def test_convert_both_ways(tmp_path):
    r = run("trace", "convert", str(VECADD), str(tmp_path / "n"))
    assert r.exit_code == 0 and "wrote" in r.output
    r = run("trace", "convert", str(tmp_path / "n"), str(tmp_path / "text"))
    assert r.exit_code == 0
    a, b = tt.load(VECADD), tt.load(tmp_path / "text")
    np.testing.assert_array_equal(np.asarray(a.kernels[0].addresses), np.asarray(b.kernels[0].addresses))


def test_errors_are_one_line_exit_2(tmp_path):
    bad = tmp_path / "kernel-1.traceg"
    bad.write_text(kernel_text([Block((0, 0, 0), [[Row(0x10, 1, "EXIT")], []])]).replace("insts = 1", "insts = 2"))
    r = CliRunner().invoke(main, ["trace", "info", str(bad)])
    assert r.exit_code == 2
    assert re.fullmatch(r"teg: error: .*kernel-1\.traceg:\d+: insts = 2 here, but 1 instruction lines follow\n", r.output)
    r = CliRunner().invoke(main, ["trace", "convert", str(tmp_path / "missing"), str(tmp_path / "o")])
    assert r.exit_code == 2 and r.output.startswith("teg: error:") and r.output.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_progress_bar_uses_tqdm_when_installed(tmp_path, monkeypatch):
    import sys
    import types

    seen = {}

    class FakeBar:
        def __init__(self, total, **kw):
            seen["total"], seen["done"], seen["closed"] = total, 0, False

        def update(self, n):
            seen["done"] += n

        def close(self):
            seen["closed"] = True

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeBar))
    monkeypatch.setattr("teg.cli.trace.LARGE_INPUT_BYTES", 0)
    r = run("trace", "convert", str(TORCH), str(tmp_path / "n"))
    assert r.exit_code == 0
    size = sum(f.stat().st_size for f in TORCH.glob("kernel-*.traceg"))
    assert seen == {"total": size, "done": size, "closed": True}


def test_info_with_opcodes_unknown_to_the_table_reports_them_and_exits_1(tmp_path):
    from click.testing import CliRunner

    from teg.cli import main

    text = ("-kernel name = k\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-shmem = 0\n-nregs = 8\n"
            "-binary version = 90\n"
            "-accelsim tracer version = 4\n\n#traces format\n\n#BEGIN_TB\n\nthread block = 0,0,0\n\n"
            "warp = 0\ninsts = 1\n0000 ffffffff 0 FROBNICATE 0 0\n\n#END_TB\n")
    path = tmp_path / "kernel-1.traceg"
    path.write_text(text)
    res = CliRunner().invoke(main, ["trace", "info", str(path)])
    assert res.exit_code == 1
    assert "FROBNICATE" in res.stdout and "FROBNICATE" in res.stderr
