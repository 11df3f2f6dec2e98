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
def acc(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("teg_accuracy_run", SUITE / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod            # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    # traces, chase buffers and the apps family's results go to a temporary folder, never into the
    # suite's own cache (benchmarks/accuracy/.cache, what the accuracy command keeps between runs)
    mod.CACHE = tmp_path_factory.mktemp("accuracy-cache")
    return mod


KERNELS = [("stream", "sm_80", "stream_triad"), ("stream", "sm_90", "stream_read"),
           ("cache", "sm_90", "cache_sum_204"), ("l2cache", "sm_80", "l2_fma"), ("l2cache", "sm_90", "l2_add"),
           ("latency", "sm_80", "chase")]


@pytest.mark.parametrize("kind,arch,kernel", KERNELS)
def test_checked_in_cubins_load(acc, kind, arch, kernel):
    prog, image = acc.program(kind, arch, kernel)
    assert prog.instructions and image.params
    assert acc.cubin(kind, arch).with_suffix(".sass").exists()


def test_tiny_traces_generate(acc, tmp_path, monkeypatch):
    monkeypatch.setattr(acc, "CACHE", tmp_path)
    # stream: 4 blocks of 64 threads, one double each
    prog, kt = acc.trace("stream", "sm_80", "stream_triad", 4, 64,
                         ["A=zeros:float64:256", "B=rand:float64:256", "C=rand:float64:256", "n=int64:256", "never=0"], "t")
    glob = np.array([kt.opcodes[o].startswith(("LDG", "STG")) for o in kt.opcode])
    assert kt.num_warps == 8 and ((kt.mem_width == 8) & glob).sum() == 8 * 3    # 2 loads + 1 store
    # the flagged shared-array store is there, predicated off (never = 0)
    sts = np.array([kt.opcodes[o].startswith("STS") for o in kt.opcode])
    assert sts.sum() == 8 and not kt.mask[sts].any()
    # cached copy is reused
    assert list(tmp_path.glob("stream.sm_80.stream_triad.t.*.npz"))
    _, kt2 = acc.trace("stream", "sm_80", "stream_triad", 4, 64,
                       ["A=zeros:float64:256", "B=rand:float64:256", "C=rand:float64:256", "n=int64:256", "never=0"], "t")
    assert kt2.num_rows == kt.num_rows
    # cache kernels (one block per SM in the suite; 2 blocks here): a 2 kB set (1 double per thread
    # per sweep) swept 6 times, and a 12 kB set (6 per sweep) read in a window of 5 loads per thread
    # at spread phases (block 1 starts at position 3 and wraps)
    _, kt = acc.trace("cache", "sm_90", "cache_sum_2", 2, 256,
                      ["B=rand:float64:256", "out=zeros:float64:256", "zero=0", "loads=6", "mult=0"], "t",
                      use_cache=False)
    assert kt.num_warps == 16 and _active_loads(kt) == 16 * 6
    _, kt = acc.trace("cache", "sm_90", "cache_sum_12", 2, 256,
                      ["B=rand:float64:1536", "out=zeros:float64:256", "zero=0", "loads=5", "mult=1"], "t",
                      use_cache=False)
    assert kt.num_warps == 16 and _active_loads(kt) == 16 * 5
    assert _load_positions(kt, 8 + 2) == [3, 4, 5, 0, 1]
    # a partial sweep's loads are issued together, before the adds that wait for them (as the
    # benchmark's unrolled sweep issues them), not one L2 round trip each: no DADD between the loads
    # of positions 3-5, nor between those of 0-1 after the wrap; each group of 8 then adds 8 values
    # (0.0 for the positions past its end)
    assert _issue_groups(kt, 8 + 2) == "LLL" + "D" * 8 + "LL" + "D" * 8
    # l2: 3 blocks of 1024 threads over 2 slices of 64 doubles per thread
    _, kt = acc.trace("l2cache", "sm_80", "l2_fma", 3, 1024,
                      ["B=zeros:float64:131072", "out=zeros:float64:1024", "slices=2"], "t", use_cache=False)
    assert (kt.mem_width == 8).sum() == 3 * 32 * 64
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
    """Sweep positions k of warp ``w``'s active cache loads (thread t reads double t + 256 k), in
    trace order (nvcc may reorder the loads of an unrolled sweep)."""
    ops = np.array(kt.opcodes)[kt.opcode]
    base = int(kt.addresses.min())
    sl = kt.warp_rows(w)
    return [(int(kt.row_addresses(i).min()) - base) // 2048 for i in range(sl.start, sl.stop)
            if ops[i].startswith("LDG") and kt.mask[i]]


def _issue_groups(kt, w):
    """Warp ``w``'s executed loads (L) and double adds (D) in issue order."""
    ops = np.array(kt.opcodes)[kt.opcode]
    sl = kt.warp_rows(w)
    return "".join("L" if ops[i].startswith("LDG") else "D" for i in range(sl.start, sl.stop)
                   if kt.mask[i] and ops[i].startswith(("LDG", "DADD")))


def _chunks(kt, block, chunk_doubles):
    """The chunks (of ``chunk_doubles`` doubles from the buffer start) that ``block``'s loads touch."""
    ops = np.array(kt.opcodes)[kt.opcode]
    base = int(kt.addresses.min())
    rows = [i for w in np.nonzero(kt.warp_block == block)[0] for i in range(kt.warp_rows(w).start, kt.warp_rows(w).stop)
            if ops[i].startswith("LDG")]
    return sorted({(int(a) - base) // (8 * chunk_doubles) for i in rows for a in kt.row_addresses(i)})


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cache_kernels(acc, arch):
    """Every set the suite runs (its sample and --quick) has its own kernel; a window starts
    block b at sweep position (q * P) // grid, q = b * mult mod grid, and wraps; whole sweeps start
    at 0; a warp's loads are coalesced 256 B rows of doubles."""
    gpus = list(acc.GPUS)
    for quick in (False, True):
        for p in acc.select(["cache"], gpus, quick):
            acc.program("cache", arch, f"cache_sum_{p.params['kB']}")
    from collections import Counter
    from teg.emu import emulate
    prog, image = acc.program("cache", arch, "cache_sum_20")
    grid, p, loads = 8, 10, 14                    # 14 loads from the block's phase: wraps once
    mult = acc.phase_multiplier(grid)             # 5: coprime with 8, nearest 8 / golden ratio
    assert mult == 5 and acc.phase_multiplier(108) == 67 and acc.phase_multiplier(114) == 71
    kt = emulate(prog, image, grid, 256, [f"B=rand:float64:{p * 256}", "out=zeros:float64:256", "zero=0",
                                          f"loads={loads}", f"mult={mult}"]).kernel_trace
    for b in range(grid):
        w = 8 * b + 3
        assert kt.warp_block[w] == b
        start = (b * mult % grid) * p // grid    # the block's permuted phase
        assert Counter(_load_positions(kt, w)) == Counter((start + i) % p for i in range(loads))
    row = next(i for i in range(kt.num_rows) if kt.mask[i] and kt.opcodes[kt.opcode[i]].startswith("LDG"))
    a = np.sort(kt.row_addresses(row))
    assert len(a) == 32 and a[-1] - a[0] == 248 and (np.diff(a) == 8).all()
    prog, image = acc.program("cache", arch, "cache_sum_12")
    kt = emulate(prog, image, 2, 256, ["B=rand:float64:1536", "out=zeros:float64:256", "zero=0", "loads=18",
                                       "mult=0"]).kernel_trace
    assert Counter(_load_positions(kt, 9)) == Counter(list(range(6)) * 3)
    # `if (start > 0 || loads < P)` compiles to `@!P0 BRA P1, <whole sweeps>` (P0: start >= 1, P1:
    # loads >= P): taken only where both the guard and the predicate operand hold. A window from
    # position 0 shorter than a sweep runs the first partial sweep, before that target; the
    # emulator once ignored the operand and ran such windows through the last partial sweep's code
    bra = next(ins for ins in prog.instructions if ins.base == "BRA" and any(o.kind == "pred" for o in ins.operands))
    for loads, before in ((5, True), (18, False)):
        kt = emulate(prog, image, 1, 32, ["B=rand:float64:1536", "out=zeros:float64:256", "zero=0",
                                          f"loads={loads}", "mult=0"]).kernel_trace
        pcs = {int(kt.pc[i]) for i in range(kt.num_rows) if kt.mask[i] and kt.opcodes[kt.opcode[i]].startswith("LDG")}
        target = prog.instructions[bra.branch_target].address
        assert all(pc < target for pc in pcs) == before and any(pc < target for pc in pcs) == before


def test_cache_launch_rules(acc):
    """The steady state by regime (benchmarks/accuracy/README.md, "cache"): L1-resident sets whole sweeps (at least 2 and 4,
    about CACHE_LOADS loads); L2-resident ones (up to one partition's share) windows at spread
    phases past the L2's cold fill; larger ones windows from position 0 (the convoy)."""
    l1, l2 = 192 << 10, 40 << 20
    assert acc.cache_regime(128, l1, l2, 2) == "l1" and acc.cache_regime(204, l1, l2, 2) == "l2"
    assert acc.cache_regime(19456, l1, l2, 2) == "l2" and acc.cache_regime(22764, l1, l2, 2) == "dram"
    assert acc.cache_regime(22764, l1, l2, 1) == "l2"
    lo, hi = acc.CACHE_LOADS
    assert acc.cache_launch(2, 0, "l1") == (lo, False) and acc.cache_launch(2, 1, "l1") == (hi, False)
    # 124 kB = 62 loads per sweep: at least 2 and 4 sweeps, whole ones
    assert acc.cache_launch(124, 0, "l1") == (62 * max(2, -(-lo // 62)), False)
    assert acc.cache_launch(124, 1, "l1") == (62 * max(4, -(-hi // 62)), False)
    # an L2-resident set: windows past the L2's cold fill (8 x P / SMs loads, rounded up to 32)
    w1 = max(lo, -(-acc.CACHE_L2_WARM * 9728 // (32 * 108)) * 32)
    assert acc.cache_launch(19456, 0, "l2", 108) == (w1, True)
    assert acc.cache_launch(19456, 1, "l2", 108) == (2 * w1, True)
    assert acc.cache_launch(68320, 1, "dram", 108) == (hi, False)


@pytest.mark.parametrize("kernel,pair", [("l2_add", False), ("l2_fma", True)])
def test_l2_kernels_read_interleaved_chunks(acc, kernel, pair):
    """Block b reads the chunks (b mod R) + R * i: 64 chunks of 1024 doubles (l2_add) or 32 pairs of
    1024-double rows (l2_fma), so a block's 512 kB slice spans the whole buffer."""
    from teg.emu import emulate
    prog, image = acc.program("l2cache", "sm_80", kernel)
    r = 3
    kt = emulate(prog, image, 4, 1024, [f"B=zeros:float64:{r * 65536}", "out=zeros:float64:1024",
                                        f"slices={r}"]).kernel_trace
    for b in range(4):
        assert _chunks(kt, b, 1024) == sorted((b % r + r * i) * (1 + pair) + h for i in range(64 // (1 + pair))
                                              for h in range(1 + pair))
    assert acc.l2_blockrun(9, 864) == 9 and acc.l2_blockrun(9000, 864) == 864


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
    poly = acc.BUILDERS["polybench"](list(acc.GPUS), False)       # the apps family's PolyBench rows (gv100)
    assert {p.detail["app"] for p in poly} == {"3mm", "bicg", "mvt", "gramschmidt", "3DConvolution"}
    assert len(poly) == 110 and {p.gpu for p in poly} == {"gv100"} and all(p.measured_instructions for p in poly)


def test_machine_tables_for_measured_gpus(acc):
    from teg.machine import load
    for gpu, (table, _arch) in acc.GPUS.items():
        m = load(table)
        assert m.num_sms > 0 and m.clock_mhz > 0
    assert load("a100_80").memory.bandwidth_gbs == 1935
    gv = load("quadro_gv100")
    assert gv.num_sms == 80 and gv.memory.bandwidth_gbs == 870 and gv.memory.l2.size_bytes == 6 * 2 ** 20


# ---- the apps family (appfamily.py) ------------------------------------------------------------

@pytest.fixture(scope="module")
def af(acc):
    import appfamily             # run.py put its folder on sys.path
    return appfamily


def test_apps_manifests_match_the_measured_sets(acc, af):
    """Every manifest loads; each measured set lists, per program, launches 0 … launches-1 in order
    (the manifest's count), the launch index the program's own order."""
    mans = af.manifests()
    assert len(mans) == 15
    for gpu in af.SETS:
        rows = af.measured_rows(gpu, acc.MEASURED, mans)
        assert len(rows) == 359
        for name, m in mans.items():
            got = [r["launch"] for r in rows if r["program"] == name]
            assert got == list(range(m.launches)), (gpu, name)
    gv = af.measured_rows("gv100", acc.MEASURED, mans)
    assert all(set(r["peers"]) == {"Accel-Sim", "HyFiSS", "PPT-GPU"} for r in gv)
    assert sum(r["peers"]["HyFiSS"] is None for r in gv) == 6        # lud #59, SN_32 #10, 17, 20, 23, 27
    # SM active / GPU active of the sheet: gramschmidt 0 (one block) 1,002.2 of 81,477 cycles
    gs0 = next(r for r in gv if r["app"] == "gramschmidt" and r["launch"] == 0)
    assert gs0["sm_active_ratio"] == pytest.approx(1002.2 / 81477)
    assert all(0 < r["sm_active_ratio"] <= 1 for r in gv)


def test_bad_manifest_is_one_line_naming_the_file(af, tmp_path):
    (tmp_path / "x.cu").write_text("int main() { return 0; }\n")
    good = {"app": "x", "suite": "s", "source": "x.cu", "nvcc_flags": [], "args": [], "launches": 1,
            "inputs": "none", "notes": "none"}
    import yaml
    for change, words in ((dict(launches="3"), "'launches' must be a int"), (dict(source="y.cu"), "not found"),
                          (dict(extra=1), "unknown key"), (dict(args=[1]), "'args' must be a string"),
                          (dict(request_notes={"a100 3": "why"}), "'request_notes' must map"),
                          (dict(request_notes={"gv100 x": "why"}), "'request_notes' must map"),
                          (dict(request_notes=["gv100 0"]), "'request_notes' must map")):
        path = tmp_path / "x.yaml"
        path.write_text(yaml.safe_dump({**good, **change}))
        with pytest.raises(af.ManifestError) as e:
            af.load_manifest(path)
        assert str(path) in str(e.value) and words in str(e.value) and "\n" not in str(e.value)
    path.write_text(yaml.safe_dump(good))
    assert af.load_manifest(path).launches == 1 and af.load_manifest(path).request_notes == {}
    path.write_text(yaml.safe_dump({**good, "request_notes": {"gv100 0": "why", "h200 12": "because"}}))
    assert af.load_manifest(path).request_notes == {"gv100 0": "why", "h200 12": "because"}


def test_request_mismatch_says_why(acc):
    P = acc.Point

    def pt(note):
        return P("apps", "gv100", "x#0 k", {}, 1000, "cycles", detail={
            "read_req": 10, "write_req": 2, "global_load_requests": 9, "global_store_requests": 2, "request_note": note})
    assert acc.requests_note(pt("a reason")) == "R 9 vs 10, W 2 vs 2 (a reason)"
    assert acc.requests_note(pt(None)) == "R 9 vs 10, W 2 vs 2 (no reason given)"
    p = pt(None)
    p.detail["global_load_requests"] = 10
    assert acc.requests_note(p) == "="


def _emulate_with(sink, kernel="stream_triad", blocks=216, threads=64):
    """stream_triad (one double per thread; checked-in sm_80 cubin) over ``blocks`` x ``threads``,
    its rows handed to ``sink``; also the same launch's whole trace (``teg.emu.emulate``)."""
    from teg.emu import emulate, load_kernel
    from teg.emu.launch import GlobalMemory, execute, pack_params
    from teg.emu.args import parse_arg
    from teg.emu.memory import DeviceMemory

    prog, image = load_kernel(SUITE / "kernels" / "stream.sm_80.cubin", kernel)
    n = blocks * threads
    args = [f"A=zeros:float64:{n}", f"B=rand:float64:{n}", f"C=rand:float64:{n}", f"n=int64:{n - 5}", "never=0"]
    whole = emulate(prog, image, blocks, threads, args).kernel_trace
    parsed = [parse_arg(a, p.size, i) for i, (a, p) in enumerate(zip(args, image.params))]
    mem = DeviceMemory()
    addr = {i: mem.alloc(a.name, a.array).address for i, a in enumerate(parsed) if a.array is not None}
    heap, lo, hi = mem.heap()
    execute(prog, image, (blocks, 1, 1), (threads, 1, 1), 0, pack_params(image, parsed, addr),
            GlobalMemory(heap, lo, hi, lambda a: ""), sink, chunk_rows=1 << 10)
    return prog, whole


def test_estimate_sink_keeps_counts_and_samples_sms(af):
    """Under its budget the sink's trace is the launch's whole trace; over it, the rows of the blocks
    b with b mod 108 < N, N the largest of 108, 54, 27, 13, 6, 3, 1 that fits (hand-counted from the
    per-block rows), and the request counts are still those of every row (kernel_summary's)."""
    from teg.machine import load
    from teg.trace.summary import kernel_summary

    m = load("sm_80")
    sink = af.EstimateSink(m, budget=10 ** 9)
    prog, whole = _emulate_with(sink)
    kt = sink.kernel_trace()
    for col in ("warp", "block", "pc", "opcode", "mask", "dst", "src", "mem_width", "imm", "addr_start", "addresses",
                "warp_start", "warp_block", "block_xyz"):
        assert np.array_equal(getattr(kt, col), getattr(whole, col)), col
    summ = kernel_summary(whole, m)
    assert sink.rows == whole.num_rows and sink.sms == 108
    assert (sink.requests[1], sink.requests[2], sink.requests[3]) == (
        summ["global_load_requests"], summ["global_store_requests"], summ["global_atomic_requests"])
    assert summ["global_load_requests"] == 2 * 432 and summ["global_store_requests"] == 432   # 432 warps, 2 loads + 1 store

    per_block = np.bincount(whole.block, minlength=216)
    budget = int(per_block[:2].sum() + per_block[108:110].sum() + per_block[216 - 1] // 2)   # N = 1 fits, N = 3 does not
    for want in (1, 3, 6):
        fit = lambda n: per_block[np.arange(216) % 108 < n].sum()
        b = int(fit(want)) if want > 1 else budget
        sink = af.EstimateSink(m, budget=b)
        _emulate_with(sink)
        assert sink.sms == want and not sink.too_large
        kt = sink.kernel_trace()
        kept = np.arange(216)[np.arange(216) % 108 < want]
        rows = np.isin(whole.block, kept)
        assert kt.num_rows == rows.sum() and np.array_equal(kt.pc, whole.pc[rows])
        assert np.array_equal(kt.addresses, whole.addresses[np.repeat(rows, np.diff(whole.addr_start))])
        assert np.array_equal(np.diff(kt.warp_start) > 0, np.isin(whole.warp_block, kept))
        assert sink.requests[2] == summ["global_store_requests"]
        res = af.estimate_launch(prog, kt, m, sink.sms)          # the engine's sampled run takes it
        assert res["cycles"] > 0 and res["engine_instructions"] == rows.sum()
    sink = af.EstimateSink(m, budget=int(per_block[0]) - 1)      # not even SM 0's two blocks fit
    _emulate_with(sink)
    assert sink.too_large and sink.rows == whole.num_rows and sink.requests[2] == 432


def test_estimate_sink_keeps_the_blocks_the_engine_deals_to_the_sampled_sms(af):
    """More than one wave: 276 blocks of 1,024 threads on sm_80 (2 resident per SM: 2,048 threads;
    108 SMs). The waves dealing gives blocks 0…215 breadth-first and 216…275 two at a time to SMs
    0…29; with the budget of SMs 0…26's rows the sink keeps blocks j < 216 with j mod 108 < 27 and
    216…269 (108 blocks; round-robin's j mod 108 < 27 would be 81 others), and the engine's
    sampled run of the whole trace on 27 SMs lowers exactly those rows."""
    from teg.engine import Options, lower
    from teg.engine.dealing import launch_resident
    from teg.machine import load

    m = load("sm_80")
    probe = af.EstimateSink(m, budget=10 ** 9)
    prog, whole = _emulate_with(probe, blocks=276, threads=1024)
    assert launch_resident(m, whole.info, Options()) == 2
    want = np.array([j for j in range(216) if j % 108 < 27] + list(range(216, 270)))
    per_block = np.bincount(whole.block, minlength=276)
    b54 = np.array([j for j in range(216) if j % 108 < 54] + list(range(216, 276)))
    assert per_block[b54].sum() > per_block[want].sum()
    sink = af.EstimateSink(m, budget=int(per_block[want].sum()))
    _emulate_with(sink, blocks=276, threads=1024)
    assert sink.sms == 27 and sink.resident == 2 and not sink.too_large
    kt = sink.kernel_trace()
    assert np.array_equal(np.unique(kt.block), want)
    mine = lower(prog, kt, m, Options(sms=27))
    engine = lower(prog, whole, m, Options(sms=27))
    assert mine.setup.blocks == engine.setup.blocks == 108 and mine.num_rows == engine.num_rows == kt.num_rows
    assert np.array_equal(mine.rows.r_sidx, engine.rows.r_sidx) and mine.setup.share == engine.setup.share == 108 / 276


def test_sms_ladder(af):
    assert af.sms_ladder(80) == [80, 40, 20, 10, 5, 2, 1]
    assert af.sms_ladder(132) == [132, 66, 33, 16, 8, 4, 2, 1]


def test_launch_fingerprint_covers_what_a_launch_reads(af):
    from types import SimpleNamespace
    from teg.emu import load_kernel

    prog, image = load_kernel(SUITE / "kernels" / "stream.sm_80.cubin", "stream_triad")
    mem = np.zeros(4096, np.uint8)
    v = SimpleNamespace(kernel=prog.name, grid=(2, 1, 1), block=(64, 1, 1), shmem=0, params=b"\1" * 40, program=prog,
                        banks={3: b"\0" * 8}, memory=mem, base=0x1000, allocations=[(0x1000, 1024), (0x1600, 512)])
    ref = af.launch_fingerprint(v)
    assert af.launch_fingerprint(v) == ref
    mem[3000] = 7                                   # outside every allocation: not read
    assert af.launch_fingerprint(v) == ref
    for change in (lambda: mem.__setitem__(0x600 + 511, 1), lambda: setattr(v, "params", b"\1" * 39 + b"\2"),
                   lambda: setattr(v, "grid", (3, 1, 1)), lambda: setattr(v, "banks", {3: b"\0" * 7 + b"\1"}),
                   lambda: setattr(v, "allocations", [(0x1000, 1024)])):
        change()
        assert af.launch_fingerprint(v) != ref
        ref = af.launch_fingerprint(v)


def test_side_by_side_on_the_same_rows(acc, af):
    """Per app and overall MAPE / median, the launch-floor split and the app-balanced numbers, by
    hand; a peer without a value leaves that row out of its own numbers only; a row teg failed is
    left out of every tool's numbers."""
    P = acc.Point

    def pt(app, measured, teg, asim, hyfiss):
        return P("apps", "gv100", app, {}, measured, "cycles", predicted=teg,
                 detail={"app": app, "peers": {"Accel-Sim": asim, "HyFiSS": hyfiss}})
    pts = [pt("a", 10000, 11000, 8000, None), pt("a", 4000, 3000, 4000, 4400), pt("b", 20000, 30000, 20000, 21000),
           pt("b", 20000, None, 1, 1)]
    tab = {r["label"]: r for r in af.side_by_side(pts, ["teg", "Accel-Sim", "HyFiSS"])}
    assert tab["a"]["teg"] == ((pytest.approx(0.175), pytest.approx(0.175)), 2)
    assert tab["a"]["Accel-Sim"] == ((pytest.approx(0.1), pytest.approx(0.1)), 2)
    assert tab["a"]["HyFiSS"] == ((pytest.approx(0.1), pytest.approx(0.1)), 1)
    assert tab["b"]["teg"][1] == 1 and tab["b"]["failed"] == 1 and tab["b"]["Accel-Sim"][0][0] == 0.0
    allr = tab["all rows"]["teg"][0]
    assert allr[0] == pytest.approx((0.1 + 0.25 + 0.5) / 3) and allr[1] == pytest.approx(0.25)
    assert tab["rows >= 5,000 cycles"]["teg"][0][0] == pytest.approx(0.3)
    assert tab["rows < 5,000 cycles"]["teg"][0][0] == pytest.approx(0.25)
    bal = tab["app-balanced (mean / median of the app MAPEs)"]
    assert bal["teg"][0][0] == pytest.approx((0.175 + 0.5) / 2) and bal["HyFiSS"][0][0] == pytest.approx((0.1 + 0.05) / 2)
    text = af.format_side_by_side(af.side_by_side(pts, ["teg", "HyFiSS"]), ["teg", "HyFiSS"], markdown=True)
    assert "| a | 2 | 17.5 / 17.5 | 10.0 / 10.0 (1) |" in text
    # teg's signed median per app: a: +10 % and -25 % -> -7.5 %; b: +50 %
    assert tab["a"]["signed"] == pytest.approx(-0.075) and tab["b"]["signed"] == pytest.approx(0.5)
    text = af.format_side_by_side(af.side_by_side(pts, ["teg"]), ["teg"], markdown=True, signed=True)
    assert "| a | 2 | 17.5 / 17.5 | -7.5 |" in text and "| b | 2 (1 failed) | 50.0 / 50.0 | +50.0 |" in text


def test_rows_marked_by_instruction_ratio_and_failures_listed(acc):
    """A row whose traced warp instructions are more than 25 % off the measured ones carries the
    ratio (and '> 2x off' when its cycles are too); 25 % or less carries nothing; a failed row is
    printed with its reason and counted."""
    P = acc.Point

    def pt(label, measured, teg, mi, ti, error_text=None):
        return P("apps", "gv100", label, {"program": "x", "launch": 0}, measured, "cycles", measured_instructions=mi,
                 predicted=teg, predicted_instructions=ti, error_text=error_text,
                 detail={"app": "x", "peers": {}, "read_req": 1, "write_req": 0})
    assert acc.row_note(pt("a", 1000, 1100, 100, 125)) == ""
    assert acc.row_note(pt("a", 1000, 1100, 100, 126)) == "instr x1.26"
    assert acc.row_note(pt("a", 1000, 2100, 100, 40)) == "instr x0.40 (> 2x off)"
    import io
    out = io.StringIO()
    acc.print_failures("gv100", [pt("ok", 1000, 1100, 100, 100), pt("bad#3 k", 1000, None, 100, None, "exit status 2")],
                       out)
    assert out.getvalue().splitlines() == ["", "failed rows on gv100: 1 of 2", "  bad#3 k: exit status 2"]


def test_native_stdout_file_parses(acc, af):
    nat = af.native_stdout(acc.MEASURED / "h200_apps_stdout.txt")
    assert set(nat) == set(af.manifests()) and all(v["status"] == 0 for v in nat.values())
    assert nat["cfd"]["args"] == ["--launches", "10"] and nat["cfd"]["text"].startswith("cfd: nel 97046")


@pytest.mark.nvcc
@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not installed")
def test_run_program_estimates_each_launch_once(af, tmp_path, monkeypatch):
    """A stub program (tests/fixtures/apps/twice.cu, three launches, the second identical to the
    first) through the family's runner on both sets: built, run under teg's runtime, each launch
    counted and estimated; the identical launch takes the first one's results; a second run
    comes from the cache without running the program."""
    m = af.Manifest("twice", "twice", "test", ROOT / "tests" / "fixtures" / "apps" / "twice.cu", [], [], 3, "", "",
                    tmp_path / "twice.yaml")
    for gpu in ("gv100", "h200"):
        res = af.run_program(gpu, m, [0, 1, 2], tmp_path / "cache")
        assert res["error"] is None and res["status"] == 0 and res["stdout"] == "twice: 4495.5\n"
        r = res["results"]
        assert [r[i]["error"] for i in range(3)] == [None] * 3
        assert r[0]["same_as"] is None and r[1]["same_as"] == 0 and r[2]["same_as"] is None
        for i in range(3):        # 8 blocks of 4 warps over 1000 elements: 32 warps with active lanes
            assert (r[i]["global_load_requests"], r[i]["global_store_requests"]) == (32, 32)
            assert r[i]["cycles"] > 0 and r[i]["sms"] == r[i]["num_sms"] == {"gv100": 80, "h200": 132}[gpu]
            # 8 blocks, one per SM (breadth-first), the other SMs idle: at most 8 / SMs active
            assert 0 < r[i]["sm_active_ratio"] <= 8 / r[i]["num_sms"]
        assert r[1]["cycles"] == r[0]["cycles"] and r[1]["warp_instructions"] == r[0]["warp_instructions"]
        again = af.run_program(gpu, m, [0, 1, 2], tmp_path / "cache")
        assert again["cached"] and again["results"] == r and again["stdout"] == res["stdout"]
        assert res["peak_rss_mb"] > 0 and all(r[i]["peak_rss_mb"] > 0 for i in range(3))
        # a run stopped part-way: --cached-only reports the launches it got, the rest as not run
        (next((tmp_path / "cache" / "results" / gpu).glob("twice.*")) / "launch2.json").unlink()
        part = af.run_program(gpu, m, [0, 1, 2], tmp_path / "cache", cached_only=True)
        assert part["results"][0] == r[0] and part["results"][1] == r[1]
        assert "not run yet" in part["results"][2]["error"] and part["error"] == "1 of 3 launches not run yet"


def test_markdown_groups_failed_rows_per_app_and_reason(acc, tmp_path):
    P = acc.Point

    def pt(launch, err=None):
        return P("apps", "h200", f"lud#{launch} k", {"program": "lud", "launch": launch}, 1000, "cycles",
                 predicted=None if err else 900.0, error_text=err,
                 detail={"app": "lud", "peers": {}, "read_req": 1, "write_req": 0})
    pts = [pt(0), pt(1, "not run yet"), pt(2, "not run yet"), pt(3, "not run yet"), pt(4, "not run yet"),
           pt(5, "not run yet"), pt(6, "exit status 2")]
    out = tmp_path / "t.md"
    acc.write_markdown(pts, str(out))
    text = out.read_text()
    assert "Failed rows: 6 of 7:" in text and "- lud #1 … #5 (5 rows): not run yet" in text
    assert "- lud #6 (1 row): exit status 2" in text and "| lud | 7 (6 failed) | 10.0 / 10.0 | -10.0 |" in text


def _suite_script(name: str):
    """One of the suite's scripts (benchmarks/accuracy/NAME.py) as a module."""
    spec = importlib.util.spec_from_file_location(f"teg_accuracy_{name}", SUITE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _launch_drain():
    return _suite_script("launch_drain")


def test_launch_drain_excess_is_gpu_active_minus_the_used_sms_average():
    """8 blocks on 80 SMs, GPU active 4,000, SM active averaged over all 80 SMs 175 (ratio 0.04375):
    the 8 SMs used are active 175 x 80 / 8 = 1,750 each on average, X = 4,000 - 1,750 = 2,250; a
    launch over every SM divides by all 80: 4,000 x (1 - 0.5) = 2,000."""
    ld = _launch_drain()
    assert ld.excess(4000.0, 0.04375, 80, 8) == pytest.approx(2250.0)
    assert ld.excess(4000.0, 0.5, 80, 256) == pytest.approx(2000.0)


def test_launch_drain_prints_every_measured_launch_class(capsys):
    """On the GV100 rows the one-SM class holds the 34 lud_diagonal launches, gramschmidt 0, the two
    GRU launches and SqueezeNet's global_pooling (38), and lud_diagonal's measured X median is
    1,539 cycles (34 launches, the rows of hyfiss_gv100_apps.csv)."""
    assert _launch_drain().main(["--gpu", "gv100"]) == 0
    out = capsys.readouterr().out
    one_sm = next(line for line in out.splitlines() if line.startswith("1 SM "))
    assert one_sm.split()[2] == "38"
    diag = next(line for line in out.splitlines() if line.startswith("lud lud_diagonal"))
    assert diag.split()[2:4] == ["34", "1"] and diag.split()[7] == "1539"


def _stream_lifetime():
    return _suite_script("stream_lifetime")


def test_stream_lifetime_is_the_slot_period_of_two_blocks_per_sm():
    """A100 40 GB `read` at 32 threads, 81 GB/s measured: 108 SMs each retire 2 blocks of
    32 x 8 B = 256 B per lifetime, 55,296 B over the GPU, i.e. 55,296 / 81e9 s = 682.7 ns =
    962.6 cycles at 1410 MHz; `triad` moves 3 streams, so the same rate means 3x the lifetime."""
    sl = _stream_lifetime()
    assert sl.lifetime(81.0, 32, 1, 108, 1410.0) == pytest.approx(962.56, abs=0.01)
    assert sl.lifetime(81.0, 32, 3, 108, 1410.0) == pytest.approx(3 * 962.56, abs=0.03)


def test_stream_lifetime_table_from_a_family_csv(tmp_path, capsys):
    """From a family CSV whose teg bandwidth equals the measured one, every cell reads L / L and
    the extra over `read` is the same on both sides: scale at 32 threads 1033 / 1033 (+70 / +70)
    on the A100 40 GB (measured 81 and 151 GB/s: 962.6 and 1033.0 cycles)."""
    sl = _stream_lifetime()
    rows = [r for r in sl.run._read("stream_bandwidth.csv") if r["gpu"] == "a100_40"]
    path = tmp_path / "micro.csv"
    with open(path, "w") as f:
        f.write("family,gpu,point,predicted\n")
        for r in rows:
            f.write(f"stream,a100_40,{r['kernel']} bs={r['block_size']},{r['GBps']}\n")
    assert sl.main(["--gpu", "a100_40", "--csv", str(path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.split()[:1] == ["32"])
    assert line.split()[1] == "963/" and "1033/ 1033" in line and "( +70/ +70)" in line
