"""Mechanics of the accuracy suite (benchmarks/accuracy/run.py): checked-in cubins load, the
emulator traces each family's kernel on a tiny launch, the measured CSVs turn into points, and the
error / aggregation arithmetic is right. No accuracy target is asserted here."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "accuracy"


@pytest.fixture(scope="module")
def acc():
    spec = importlib.util.spec_from_file_location("teg_accuracy_run", SUITE / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod            # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


KERNELS = [("stream", "sm_80", "stream_triad"), ("stream", "sm_90", "stream_read"),
           ("cache", "sm_90", "cache_sum"), ("l2cache", "sm_80", "l2_sum"),
           ("latency", "sm_80", "chase"), ("polybench", "sm_75", "conv3d"),
           ("polybench", "sm_75", "mm3_kernel")]


@pytest.mark.parametrize("kind,arch,kernel", KERNELS)
def test_checked_in_cubins_load(acc, kind, arch, kernel):
    prog, image = acc.program(kind, arch, kernel)
    assert prog.instructions and image.params
    assert acc.cubin(kind, arch).with_suffix(".sass").exists()


def test_tiny_traces_generate(acc, tmp_path, monkeypatch):
    monkeypatch.setattr(acc, "CACHE", tmp_path)
    # stream: 4 blocks of 64 threads, one double each
    prog, kt = acc.trace("stream", "sm_80", "stream_triad", 4, 64,
                         ["A=zeros:float64:256", "B=rand:float64:256", "C=rand:float64:256", "n=int64:256"], "t")
    assert kt.num_warps == 8 and (kt.mem_width == 8).sum() == 8 * 3
    # cached copy is reused
    assert list(tmp_path.glob("stream.sm_80.stream_triad.t.*.npz"))
    _, kt2 = acc.trace("stream", "sm_80", "stream_triad", 4, 64,
                       ["A=zeros:float64:256", "B=rand:float64:256", "C=rand:float64:256", "n=int64:256"], "t")
    assert kt2.num_rows == kt.num_rows
    # cache kernel: 2 blocks, 3 loads per thread in one sweep
    _, kt = acc.trace("cache", "sm_90", "cache_sum", 2, 256,
                      ["B=rand:float32:768", "out=zeros:float32:256", "per_sweep=3", "sweeps=1"], "t", use_cache=False)
    assert kt.num_warps == 16 and (kt.mem_width == 4).sum() == 16 * 3
    # l2: 3 blocks over 2 slices of 2 float2 per thread
    _, kt = acc.trace("l2cache", "sm_80", "l2_sum", 3, 1024,
                      ["B=rand:float32:8192", "out=zeros:float32:1024", "slices=2", "per_thread=2"], "t",
                      use_cache=False)
    assert (kt.mem_width == 8).sum() == 3 * 32 * 2
    # pointer chase: 16 elements, one warm pass, 8 timed loads, two clock reads
    buf = acc.chase_buffer(1, 16, 8)
    np.save(tmp_path / "chain.npy", buf)
    prog, kt = acc.trace("latency", "sm_80", "chase", 1, 1,
                         [str(tmp_path / "chain.npy"), "out=zeros:int64:2", "warm=16", "timed=8"], "t", use_cache=False)
    loads = [i for i in range(kt.num_rows) if kt.opcodes[kt.opcode[i]].split(".")[0] in ("LD", "LDG")]
    assert len(loads) == 24                       # the chased pointer is generic: LD.E.64
    clocks = {ins.address for ins in prog.instructions if "SR_CLOCKLO" in ins.text}
    assert np.isin(kt.pc, list(clocks)).sum() == 2


def test_chase_buffer_is_one_cycle(acc):
    buf = acc.chase_buffer(4, 64, 8)              # 4 kB = 64 elements 64 B apart
    nxt = {}
    for e in range(64):
        a = int(buf[e * 8])
        assert (a - acc.DEVICE_BASE) % 64 == 0
        nxt[e] = (a - acc.DEVICE_BASE) // 64
    seen, e = set(), 0
    while e not in seen:
        seen.add(e)
        e = nxt[e]
    assert len(seen) == 64 and e == 0


def test_error_and_aggregation(acc):
    P = acc.Point
    pts = [P("stream", "a100_40", "a", {}, 100.0, "GB/s", predicted=110.0),     # +10 %
           P("stream", "a100_40", "b", {}, 200.0, "GB/s", predicted=150.0),     # -25 %
           P("stream", "a100_40", "c", {}, 100.0, "GB/s", predicted=250.0),     # +150 %, > 2x
           P("latency", "a100_40", "d", {}, 40.0, "cyc", predicted=10.0),       # -75 %, < 0.5x
           P("latency", "a100_40", "e", {}, 40.0, "cyc")]                       # failed: no prediction
    assert math.isclose(pts[0].error, 0.10) and math.isclose(pts[1].error, -0.25)
    assert pts[2].off_2x and pts[3].off_2x and not pts[0].off_2x and pts[4].error is None
    s = acc.summarize(pts)
    st = s["stream"]
    assert st["n"] == 3 and math.isclose(st["median_abs"], 0.25)
    assert math.isclose(st["mean_abs"], (0.10 + 0.25 + 1.5) / 3)
    assert st["worst"].label == "c" and math.isclose(st["off_2x"], 1 / 3)
    assert s["latency"]["n"] == 1 and s["latency"]["failed"] == 1 and s["latency"]["off_2x"] == 1.0


def test_evaluate_reports_failures_and_values(acc, monkeypatch):
    monkeypatch.setitem(acc.PREDICT, "stream", lambda p: 2.0 * p.measured)
    p = acc.evaluate(acc.Point("stream", "a100_40", "x", {}, 50.0, "GB/s"))
    assert p.predicted == 100.0 and math.isclose(p.error, 1.0) and not p.off_2x

    def boom(p):
        raise RuntimeError("no trace")
    monkeypatch.setitem(acc.PREDICT, "stream", boom)
    p = acc.evaluate(acc.Point("stream", "a100_40", "x", {}, 50.0, "GB/s"))
    assert p.error is None and "no trace" in p.error_text


def test_measured_rows_become_points(acc):
    for fam in acc.FAMILIES:
        quick = acc.BUILDERS[fam](list(acc.GPUS), True)
        full = acc.BUILDERS[fam](list(acc.GPUS), False)
        assert quick and len(full) >= len(quick)
        assert all(p.measured > 0 and p.gpu in acc.GPUS for p in full)
    poly = acc.BUILDERS["polybench"](["gv100"], False)
    assert {p.params["app"] for p in poly} == {"3mm", "bicg", "mvt", "gramschmidt", "3DConvolution"}
    assert all(p.measured_instructions for p in poly)


def test_machine_tables_for_measured_gpus(acc):
    from teg.machine import load
    for gpu, (table, _arch) in acc.GPUS.items():
        m = load(table)
        assert m.num_sms > 0 and m.clock_mhz > 0
    assert load("a100_80").memory.bandwidth_gbs == 2039
    gv = load("quadro_gv100")
    assert gv.num_sms == 80 and gv.memory.bandwidth_gbs == 870 and gv.memory.l2.size_bytes == 6 * 2 ** 20
