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
    # cache kernels: a 2 kB set swept 3 times (its own kernel), and a 3 kB set read in a window of 5
    # loads per thread (the phase-spread kernel, wrapping at the end of the buffer)
    _, kt = acc.trace("cache", "sm_90", "cache_sum_2", 2, 256,
                      ["B=rand:float32:512", "out=zeros:float32:256", "per_sweep=2", "loads=6"], "t", use_cache=False)
    assert kt.num_warps == 16 and _active_loads(kt) == 16 * 6
    _, kt = acc.trace("cache", "sm_90", "cache_sum", 2, 256,
                      ["B=rand:float32:768", "out=zeros:float32:256", "per_sweep=3", "loads=5", "mult=1"], "t",
                      use_cache=False)
    assert kt.num_warps == 16 and _active_loads(kt) == 16 * 5
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


def _active_loads(kt):
    ops = np.array(kt.opcodes)[kt.opcode]
    return int(sum(1 for i in np.nonzero(kt.mask)[0] if ops[i].startswith("LDG")))


def _load_positions(kt, w):
    """Sweep positions (kB from the buffer start) of warp ``w``'s active loads, in trace order."""
    ops = np.array(kt.opcodes)[kt.opcode]
    base = int(kt.addresses.min())
    sl = kt.warp_rows(w)
    return [(int(kt.row_addresses(i).min()) - base) // 1024 for i in range(sl.start, sl.stop)
            if ops[i].startswith("LDG") and kt.mask[i]]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cache_kernels(acc, arch):
    """Every measured set up to 64 kB has its own kernel; the window kernel starts block b at sweep
    position (b * per_sweep) // grid and wraps; a warp's loads are coalesced 128 B rows."""
    kbs = {int(r["data_set_kB"]) for r in acc._read("cache_bandwidth.csv")}
    assert {k for k in kbs if k <= 64} <= set(acc.CACHE_FIXED_KB)
    for kb in acc.CACHE_FIXED_KB:
        acc.program("cache", arch, f"cache_sum_{kb}")
    assert acc.cache_launch(12, 0) == ("cache_sum_12", 24) and acc.cache_launch(12, 1) == ("cache_sum_12", 60)
    # both runs past the cold first sweep: at least 2 and 4 sweeps (28 kB: 32 // 28 = 1, 64 // 28 = 2)
    assert acc.cache_launch(28, 0) == ("cache_sum_28", 56) and acc.cache_launch(28, 1) == ("cache_sum_28", 112)
    # a window set that fits in the L1 (204 kB in 256 kB): 2 and 4 whole sweeps; beyond it, short windows
    assert acc.cache_launch(204, 0, 912, 50 << 20, 256 << 10)[1] == 408
    assert acc.cache_launch(204, 1, 912, 50 << 20, 256 << 10)[1] == 816
    assert acc.cache_launch(384, 1, 912, 0, 256 << 10)[1] == acc.CACHE_LOADS[1]
    assert acc.cache_launch(4044, 1) == ("cache_sum", acc.CACHE_LOADS[1])
    # an L2-resident set: windows past the L2's cold fill (8 x kB/grid loads, rounded up to 8)
    w1 = max(acc.CACHE_LOADS[0], -(-acc.CACHE_L2_WARM * 10380 // (8 * 912)) * 8)
    assert acc.cache_launch(10380, 0, 912, 50 << 20) == ("cache_sum", w1)
    assert acc.cache_launch(10380, 1, 912, 50 << 20)[1] == max(acc.CACHE_LOADS[1], 2 * w1)
    assert acc.cache_launch(68320, 1, 912, 50 << 20)[1] == acc.CACHE_LOADS[1]     # larger than the L2
    from collections import Counter
    from teg.emu import emulate
    prog, image = acc.program("cache", arch, "cache_sum")
    grid, kb, loads = 8, 20, 28                   # 28 loads from the block's phase: wraps once
    mult = acc.phase_multiplier(grid)             # 5: coprime with 8, nearest 8 / golden ratio
    assert mult == 5 and acc.phase_multiplier(864) == 535 and acc.phase_multiplier(912) == 565
    kt = emulate(prog, image, grid, 256, [f"B=rand:float32:{kb * 256}", "out=zeros:float32:256",
                                          f"per_sweep={kb}", f"loads={loads}", f"mult={mult}"]).kernel_trace
    for b in range(grid):
        w = 8 * b + 3
        assert kt.warp_block[w] == b
        start = (b * mult % grid) * kb // grid   # the block's permuted phase
        assert Counter(_load_positions(kt, w)) == Counter((start + i) % kb for i in range(loads))
    row = next(i for i in range(kt.num_rows) if kt.mask[i] and kt.opcodes[kt.opcode[i]].startswith("LDG"))
    a = np.sort(kt.row_addresses(row))
    assert len(a) == 32 and a[-1] - a[0] == 124 and (np.diff(a) == 4).all()
    prog, image = acc.program("cache", arch, "cache_sum_12")
    kt = emulate(prog, image, 2, 256, ["B=rand:float32:3072", "out=zeros:float32:256", "per_sweep=12",
                                       "loads=36"]).kernel_trace
    assert Counter(_load_positions(kt, 0)) == Counter(list(range(12)) * 3)


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
