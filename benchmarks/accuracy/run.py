#!/usr/bin/env python3
"""teg's accuracy suite: published measurements of real GPUs (measured/, see measured/SOURCES.md) against the
engine's predictions for our own kernels (benchmarks/accuracy/kernels) and application programs
(benchmarks/accuracy/apps), traced by teg's emulator.

    python3 benchmarks/accuracy/run.py [--family stream,cache,l2,latency,apps] [--gpu a100_40,...]
                                       [--quick] [--jobs N] [--csv FILE]

Prints, per point, measured vs predicted and the signed error (predicted / measured - 1), then per
family the median and mean |error|, the worst point and the share of points off by more than 2x;
for the apps family also teg beside Accel-Sim, HyFiSS and PPT-GPU per application (appfamily.py).
Nothing is fitted: every prediction is one engine run (or the difference of two, see README.md) on
the machine table named for the GPU. Reductions and sampling: README.md. ``--family polybench`` is
the apps family's five PolyBench programs on the Quadro GV100.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if (ROOT / "teg" / "__init__.py").is_file() and sys.path[:1] != [str(ROOT)]:
    # the checkout this script belongs to is the one measured, whichever teg is installed (an editable
    # install of another worktree would otherwise answer, and pick up that tree's edits mid-run)
    sys.path.insert(0, str(ROOT))

from teg import TegError  # noqa: E402  (after the path above)
KERNELS = HERE / "kernels"
MEASURED = Path(os.environ.get("TEG_MEASURED", Path(__file__).resolve().parent / "measured"))
CACHE = Path(os.environ.get("TEG_ACCURACY_CACHE", HERE / ".cache"))

CACHED_ONLY = False                     # --cached-only: the apps family reports its cached launches, runs nothing
CACHE_MAX_BYTES = int(os.environ.get("TEG_ACCURACY_CACHE_MAX", 32 << 20))
if str(HERE) not in sys.path:           # appfamily.py beside this file
    sys.path.insert(0, str(HERE))

FAMILIES = ("stream", "cache", "l2", "latency", "apps")
ALIASES = {"polybench": "apps"}     # the former PolyBench family: the apps family's PolyBench programs (gv100)
# measured GPU -> (machine table, cubin arch)
GPUS = {"a100_40": ("sm_80", "sm_80"), "a100_80": ("a100_80", "sm_80"),
        "h100_pcie": ("sm_90", "sm_90"), "gv100": ("quadro_gv100", "sm_75"), "h200": ("h200", "sm_90")}
APPS_QUICK = {"gv100": ("gru", "nn"), "h200": ("gru",)}     # --quick: the two smallest programs

STREAM_KERNELS = {"init": ("stream_init", 1), "read": ("stream_read", 1), "scale": ("stream_scale", 2),
                  "triad": ("stream_triad", 3), "1pt": ("stream_1pt", 2), "3pt": ("stream_3pt", 2)}
STREAM_BLOCKS_FULL = (32, 64, 128, 256, 512, 1024)
STREAM_BLOCKS_QUICK = (64, 1024)
STREAM_WAVES = (2, 4)          # steady state = difference of the runs with 2 and 4 waves
STREAM_CARVEOUT_PCT = 9         # gpu-stream (cdcc732): cudaFuncAttributePreferredSharedMemoryCarveout, 2 blocks per SM
# cache (gpu-cache): one 256-thread block per SM. Loads per thread of the two runs (difference):
# at least these; TEG_ACCURACY_CACHE_LOADS="256,512" overrides
CACHE_LOADS = tuple(int(x) for x in os.environ.get("TEG_ACCURACY_CACHE_LOADS", "128,256").split(","))
# L2-resident sets: the first window is at least CACHE_L2_WARM x the loads per thread that miss
# while the L2 fills (P / SMs with spread phases): the fill runs at DRAM speed, ~2-4x slower than L2 hits
CACHE_L2_WARM = 8
# l2 (gpu-l2-cache): the kernel of the code that produced each GPU's file (kernels/l2cache.cu)
L2_KERNELS = {"a100_80": "l2_fma", "h100_pcie": "l2_add"}
L2_WAVES = (4, 8)               # l2: waves of resident 1024-thread blocks (difference; fewer let run 1's tail distort it: README)
LAT_TIMED = 1024                # timed loads of the pointer chase
LAT_WARM_CAP = 1 << 20          # chains up to 64 MB are walked once before the timed loads
LAT_MAX_KB = 262144             # latency points above 256 MB are not simulated (TLB regime)


def machine(name: str):
    from teg.machine import load
    return load(name)


def pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


# ---------------------------------------------------------------------------------------------
# points

@dataclass
class Point:
    family: str
    gpu: str
    label: str
    params: dict
    measured: float
    unit: str
    measured_instructions: float | None = None
    predicted: float | None = None
    predicted_instructions: float | None = None
    cycles: float | None = None
    stalls: dict = field(default_factory=dict)
    seconds: float = 0.0
    error_text: str | None = None
    detail: dict = field(default_factory=dict)     # apps: app, peers' cycles, traced counts, notes

    @property
    def error(self) -> float | None:
        if self.predicted is None or not self.measured:
            return None
        return self.predicted / self.measured - 1.0

    @property
    def off_2x(self) -> bool:
        e = self.error
        return e is not None and (e + 1.0 > 2.0 or e + 1.0 < 0.5)


def _read(name: str) -> list[dict]:
    with open(MEASURED / name, newline="") as f:
        return list(csv.DictReader(f))


def _every(rows: list, k: int) -> list:
    """Every k-th row, always keeping the last (the steady end of a sweep)."""
    if k <= 1 or len(rows) <= 2:
        return rows
    out = rows[::k]
    if rows[-1] is not out[-1]:
        out.append(rows[-1])
    return out


def stream_points(gpus, quick):
    blocks = STREAM_BLOCKS_QUICK if quick else STREAM_BLOCKS_FULL
    kernels = ("read", "triad") if quick else tuple(STREAM_KERNELS)
    pts = []
    for r in _read("stream_bandwidth.csv"):
        if r["gpu"] in gpus and int(r["block_size"]) in blocks and r["kernel"] in kernels:
            if quick and r["gpu"] != "a100_40":
                continue
            pts.append(Point("stream", r["gpu"], f"{r['kernel']} bs={r['block_size']}",
                             {"kernel": r["kernel"], "block": int(r["block_size"])}, float(r["GBps"]), "GB/s"))
    return pts


def _sampled(name: str, gpus, quick: bool, quick_gpu: str, key: str, quick_values, every: int,
             keep=lambda r: True) -> list[dict]:
    """Rows of measured file ``name`` for ``gpus``: every ``every``-th per GPU (and its last), or
    with ``quick`` only ``quick_gpu``'s rows whose ``key`` is one of ``quick_values``."""
    out = []
    for g in gpus:
        rows = [r for r in _read(name) if r["gpu"] == g and keep(r)]
        if quick:
            out += [r for r in rows if g == quick_gpu and int(r[key]) in quick_values]
        elif rows:
            out += _every(rows, every)
    return out


def cache_points(gpus, quick):
    return [Point("cache", r["gpu"], f"{r['data_set_kB']} kB", {"kB": int(r["data_set_kB"])},
                  float(r["GBps"]), "GB/s")
            for r in _sampled("cache_bandwidth.csv", gpus, quick, "h100_pcie", "data_set_kB", (16, 4044), 4)]


def l2_points(gpus, quick):
    return [Point("l2", r["gpu"], f"{r['total_data_kB']} kB (slice {r['block_data_kB']} kB)",
                  {"slice_kB": int(r["block_data_kB"]), "total_kB": int(r["total_data_kB"])},
                  float(r["GBps"]), "GB/s")
            for r in _sampled("l2_cache_bandwidth.csv", gpus, quick, "a100_80", "total_data_kB", (4096,), 8)]


def latency_points(gpus, quick):
    rows = _sampled("pointer_chase_latency.csv", gpus, quick, "a100_40", "data_set_kB", (30, 2016, 125026), 6,
                    keep=lambda r: int(r["data_set_kB"]) <= LAT_MAX_KB)
    return [Point("latency", r["gpu"], f"{r['data_set_kB']} kB", {"kB": int(r["data_set_kB"])},
                  float(r["cycles_per_load"]), "cyc/load") for r in rows]


def apps_points(gpus, quick, suite: str | None = None):
    """One point per measured launch of the apps family's sets (appfamily.SETS) among ``gpus``;
    ``suite`` keeps one suite's programs (the ``polybench`` alias)."""
    import appfamily as af
    mans = af.manifests()
    pts = []
    for gpu in gpus:
        if gpu not in af.SETS:
            continue
        for r in af.measured_rows(gpu, MEASURED, mans):
            if quick and r["program"] not in APPS_QUICK.get(gpu, ()):
                continue
            if suite is not None and (r["suite"] != suite or gpu != "gv100"):
                continue
            pts.append(Point("apps", gpu, f"{r['app']}#{r['launch']} {r['kernel']}",
                             {"program": r["program"], "launch": r["launch"]}, r["cycles"], "cycles",
                             measured_instructions=r["warp_insts"],
                             detail={"app": r["app"], "suite": r["suite"], "kernel": r["mangled"],
                                     "request_note": mans[r["program"]].request_notes.get(f"{gpu} {r['launch']}"),
                                     "grid": r["grid"], "block": r["block"], "read_req": r["read_req"],
                                     "write_req": r["write_req"], "peers": r["peers"],
                                     "measured_sm_active_ratio": r.get("sm_active_ratio")}))
    return pts


BUILDERS = {"stream": stream_points, "cache": cache_points, "l2": l2_points, "latency": latency_points,
            "apps": apps_points, "polybench": lambda gpus, quick: apps_points(gpus, quick, "PolyBench/GPU 1.0")}


# ---------------------------------------------------------------------------------------------
# tracing (cached) and timing

def cubin(kind: str, arch: str) -> Path:
    return KERNELS / f"{kind}.{arch}.cubin"


_programs: dict = {}


def program(kind: str, arch: str, kernel: str):
    from teg.emu import load_kernel
    key = (kind, arch, kernel)
    if key not in _programs:
        _programs[key] = load_kernel(cubin(kind, arch), kernel)
    return _programs[key]


def trace(kind: str, arch: str, kernel: str, grid, block, args: list, tag: str, use_cache: bool = True):
    """The emulated KernelTrace of one launch (cached as a native .npz under CACHE)."""
    from teg import trace as tt
    from teg.emu import emulate
    cb = cubin(kind, arch)
    h = hashlib.sha1(cb.read_bytes()).hexdigest()[:10]
    path = CACHE / f"{kind}.{arch}.{kernel}.{tag}.{h}.npz"
    prog, image = program(kind, arch, kernel)
    if use_cache and path.exists():
        try:
            return prog, tt.load(path).kernels[0]
        except (TegError, OSError, ValueError) as err:     # a stale or partial file: regenerate it
            print(f"accuracy: regenerating {path.name} ({err})", file=sys.stderr)
    res = emulate(prog, image, grid, block, args, max_rows=200_000_000)
    kt = res.kernel_trace
    # large traces (the cache/l2 families: hundreds of MB of addresses) cost more to write and read
    # back than to re-emulate: only small ones are kept
    if use_cache and kt.addresses.nbytes + kt.num_rows * 64 <= CACHE_MAX_BYTES:
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
        tt.save(res.trace, tmp)
        os.replace(tmp, path)
    return prog, kt


def engine(prog, kt, m, record_timeline=False, **opts):
    """One micro-benchmark launch on every SM of ``m`` (warp scheduling: teg's default, or
    ``TEG_ACCURACY_POLICY`` for a what-if, as the apps family)."""
    import appfamily as af
    from teg.engine import KernelInputs, Options
    from teg.engine.runner import run_kernel
    return run_kernel(KernelInputs(program=prog, kernel_trace=kt, machine=m),
                      Options(sms=m.num_sms, record_timeline=record_timeline, policy=af.launch_policy(),
                              **opts)).result


def _stalls(res) -> dict:
    tot = res.cycles or 1
    top = sorted(((v, k) for k, v in res.stalls.items() if v), reverse=True)[:4]
    return {k: v / tot for v, k in top}


def predict_stream(p: Point):
    table, arch = GPUS[p.gpu]
    m = machine(table)
    kname, streams = STREAM_KERNELS[p.params["kernel"]]
    bs = p.params["block"]
    runs = []
    for w in STREAM_WAVES:
        grid = w * 2 * m.num_sms
        n = grid * bs
        args = ["A=zeros:float64:%d" % n]
        if kname != "stream_init":
            args.append("B=rand:float64:%d" % n)
        if kname == "stream_triad":
            args.append("C=rand:float64:%d" % n)
        args += [f"n=int64:{n}", "never=0"]
        prog, kt = trace("stream", arch, kname, grid, bs, args, f"g{grid}b{bs}")
        # the benchmark's 9 % preferred carveout: 16 KB for 2 blocks of 6 KB + 1 KB reserved
        res = engine(prog, kt, m, shared_carveout=STREAM_CARVEOUT_PCT)
        if res.setup.occupancy.blocks_per_sm != 2:
            raise ValueError(f"stream kernels should reside 2 per SM, got {res.setup.occupancy}")
        runs.append((n, res))
    (n1, r1), (n2, r2) = runs
    cyc = r2.cycles - r1.cycles
    p.cycles = r2.cycles
    p.stalls = _stalls(r2)
    return streams * 8 * (n2 - n1) / (cyc / (m.clock_mhz * 1e6)) / 1e9


def cache_regime(kb: int, l1_bytes: int, l2_bytes: int, l2_partitions: int) -> str:
    """Where the steady state of the gpu-cache run serves a ``kb`` kB set from (each SM's one block
    sweeps the whole set): ``"l1"`` if it fits in an SM's L1, ``"l2"`` if it fits in one L2
    partition's share (every SM reads every line, so each partition keeps a copy of the whole set:
    the near copies of GTC21's A100 L2; the measured A100 / H100 rates drop between 19 and 23 MB /
    between 23 and 27 MB, i.e. at 20 / 25 MB), else ``"dram"``."""
    if kb * 1024 <= l1_bytes:
        return "l1"
    if kb * 1024 <= l2_bytes // max(1, l2_partitions):
        return "l2"
    return "dram"


def cache_launch(kb: int, run: int, regime: str, sms: int = 1) -> tuple[int, bool]:
    """Loads per thread of cache run ``run`` (0 or 1) for a ``kb`` kB set (P = kb / 2 doubles per
    thread per sweep) and whether the blocks' phases are spread (else every block starts at sweep
    position 0, as the benchmark's blocks do). The steady state of the measured run, by ``regime``:
    - ``l1``: each SM re-reads its own L1; whole sweeps from position 0, at least 2 and 4 (and about
      CACHE_LOADS loads), so that both runs are past the cold first sweep;
    - ``l2``: every SM reads the L2 at a phase of its own (the blocks start together, but L2 hits
      do not keep them together, and the benchmark runs 1e8 / N + 2 >= 42 sweeps): windows at evenly
      spread phases, at least CACHE_L2_WARM x P / sms loads (the L2's cold fill: each block's first
      P / sms loads miss) and twice that;
    - ``dram``: the blocks stay together in a convoy, the first SM's miss serving the others' reads
      (the measured DRAM traffic at 68 MB is 1/108 of the L2 traffic on the A100): windows from
      position 0, CACHE_LOADS[run] loads."""
    p = kb // 2
    if regime == "l1":
        return p * max(2 * (run + 1), -(-CACHE_LOADS[run] // p)), False
    if regime == "l2":
        w1 = max(CACHE_LOADS[0], -(-CACHE_L2_WARM * p // (32 * sms)) * 32)   # rounded up to 32
        return w1 * (run + 1), True
    return CACHE_LOADS[run], False


def phase_multiplier(grid: int) -> int:
    """The spread phases' permutation ``q = b * mult mod grid``: the integer nearest
    ``grid / golden ratio`` that is coprime with ``grid`` (a permutation that spreads consecutive
    blocks — consecutive SMs, one L2 partition — over the whole buffer)."""
    target = round(grid / 1.6180339887)
    for d in range(grid):
        for m in (target + d, target - d):
            if 0 < m < grid and math.gcd(m, grid) == 1:
                return m
    return 1


def predict_cache(p: Point):
    table, arch = GPUS[p.gpu]
    m = machine(table)
    kb = p.params["kB"]
    sms = m.num_sms                          # one 256-thread block per SM, as measured
    from teg.engine.occupancy import l1_data_bytes, occupancy
    _, image = program("cache", arch, f"cache_sum_{kb}")
    resident = occupancy(m, 256, image.nregs).blocks
    l1 = l1_data_bytes(m, 256, image.nregs, 0, resident)     # beside the driver's carveout
    regime = cache_regime(kb, l1, m.memory.l2.size_bytes, m.memory.l2_partitions)
    runs = []
    for i in range(2):
        loads, spread = cache_launch(kb, i, regime, sms)
        mult = phase_multiplier(sms) if spread else 0
        args = [f"B=rand:float64:{kb * 128}", "out=zeros:float64:256", "zero=0", f"loads={loads}", f"mult={mult}"]
        prog, kt = trace("cache", arch, f"cache_sum_{kb}", sms, 256, args, f"g{sms}l{loads}m{mult}")
        res = engine(prog, kt, m)
        runs.append((sms * 256 * 8 * loads, res))
    (b1, r1), (b2, r2) = runs
    p.cycles = r2.cycles
    p.stalls = _stalls(r2)
    return (b2 - b1) / ((r2.cycles - r1.cycles) / (m.clock_mhz * 1e6)) / 1e9


def l2_blockrun(slices: int, grid: int) -> int:
    """The ``slices`` argument (the benchmark's blockRun R: block b reads the chunks (b mod R) + R·i)
    of a simulated launch of ``grid`` blocks. With R > grid the blocks read disjoint chunks that no
    later block of the launch re-reads, as in the measured run (the next reader of a chunk comes R
    blocks later, after the L2 has streamed R · 512 kB > its capacity): R is then capped at
    ``grid`` so that the buffer holds grid slices instead of the total — only the distance between
    a block's chunks shrinks (R·chunk)."""
    return min(slices, grid)


def predict_l2(p: Point):
    table, arch = GPUS[p.gpu]
    m = machine(table)
    kernel = L2_KERNELS[p.gpu]
    slice_b = p.params["slice_kB"] * 1024
    if slice_b != 64 * 1024 * 8:
        raise ValueError(f"l2 kernels read 64 doubles per thread (512 kB slices), not {slice_b // 1024} kB")
    slices = max(1, p.params["total_kB"] * 1024 // slice_b)
    from teg.engine.occupancy import occupancy
    _, image = program("l2cache", arch, kernel)
    resident = occupancy(m, 1024, image.nregs).blocks      # as the engine places them (registers)
    runs = []
    for w in L2_WAVES:
        grid = w * resident * m.num_sms
        r = l2_blockrun(slices, grid)
        args = [f"B=zeros:float64:{r * slice_b // 8}", "out=zeros:float64:1024", f"slices={r}"]
        prog, kt = trace("l2cache", arch, kernel, grid, 1024, args, f"g{grid}r{r}")
        res = engine(prog, kt, m)
        runs.append((grid * slice_b, res))
    (b1, r1), (b2, r2) = runs
    p.cycles = r2.cycles
    p.stalls = _stalls(r2)
    return (b2 - b1) / ((r2.cycles - r1.cycles) / (m.clock_mhz * 1e6)) / 1e9


DEVICE_BASE = 0x7F0000000000


def chase_buffer(kb: int, warm: int, timed: int, seed: int = 1) -> np.ndarray:
    """int64 buffer of kb kB whose elements 64 B apart form one random cyclic chain of device
    addresses starting at element 0 (a random subset of the elements when the chain visited is
    shorter than the set: statistically the same walk)."""
    n_el = max(2, kb * 1024 // 64)
    rng = np.random.default_rng(seed)
    need = warm + timed + 1
    if n_el <= need or n_el <= LAT_WARM_CAP:
        order = rng.permutation(n_el - 1) + 1
    else:
        order = rng.choice(np.arange(1, n_el), size=need, replace=False)
    order = np.concatenate([[0], order])
    buf = np.zeros(n_el * 8, np.int64)
    nxt = np.roll(order, -1)
    buf[order * 8] = DEVICE_BASE + nxt * 64
    return buf


def predict_latency(p: Point):
    table, arch = GPUS[p.gpu]
    m = machine(table)
    kb = p.params["kB"]
    n_el = max(2, kb * 1024 // 64)
    warm = n_el if n_el <= LAT_WARM_CAP else 0
    buf_path = CACHE / f"chase_{kb}_{warm}_{LAT_TIMED}.npy"
    CACHE.mkdir(parents=True, exist_ok=True)
    if not buf_path.exists():
        np.save(buf_path, chase_buffer(kb, warm, LAT_TIMED))
    # one thread: the benchmark's 64 threads chase the same chain, so each warp-load is one sector
    args = [str(buf_path), "out=zeros:int64:2", f"warm={warm}", f"timed={LAT_TIMED}"]
    prog, kt = trace("latency", arch, "chase", 1, 1, args, f"k{kb}w{warm}t{LAT_TIMED}")
    res = engine(prog, kt, m, record_timeline=True)
    tl = res.timeline
    assert tl is not None and len(tl) == kt.num_rows, "timeline rows != trace rows"
    clock_pcs = {ins.address for ins in prog.instructions if "SR_CLOCKLO" in ins.text}
    rows = np.nonzero(np.isin(kt.pc, list(clock_pcs)))[0]
    assert len(rows) >= 2, "clock reads not found in the trace"
    p.cycles = res.cycles
    p.stalls = _stalls(res)
    return (tl[rows[-1]] - tl[rows[0]]) / LAT_TIMED


def evaluate_program(points: list[Point]) -> list[Point]:
    """The apps family: one run of one program for the measured launches ``points`` (one set, one
    program), every launch estimated as it ran (appfamily.run_program)."""
    import appfamily as af
    t = time.perf_counter()
    p0 = points[0]
    try:
        man = af.manifests()[p0.params["program"]]
        res = af.run_program(p0.gpu, man, [p.params["launch"] for p in points], CACHE / "apps",
                             cached_only=CACHED_ONLY)
    except Exception as e:      # the program could not be built or run: every row fails, none is dropped
        for p in points:
            p.error_text = f"{type(e).__name__}: {e}"
            p.seconds = (time.perf_counter() - t) / len(points)
        return points
    native = af.native_stdout(MEASURED / "h200_apps_stdout.txt") if (MEASURED / "h200_apps_stdout.txt").exists() else {}
    nat = native.get(man.name)
    for p in points:
        r = res["results"].get(p.params["launch"], {"error": "no result"})
        d = p.detail
        d.update({"run": {k: res.get(k) for k in ("status", "error", "wall_s", "cached", "peak_rss_mb", "complete_run")},
                  "stdout": res["stdout"], "native_stdout": nat["text"] if nat else None})
        for k in ("warp_instructions", "global_load_requests", "global_store_requests", "global_atomic_requests",
                  "sms", "num_sms", "kept_rows", "same_as", "stalls", "emulate_s", "estimate_s", "kernel",
                  "grid", "block", "engine_instructions", "peak_rss_mb", "sm_active_ratio"):
            if k in r:
                d["traced_" + k if k in ("kernel", "grid", "block") else k] = r[k]
        if r.get("warp_instructions") is not None:
            p.predicted_instructions = float(r["warp_instructions"])
        if r.get("error") or r.get("cycles") is None:
            p.error_text = r.get("error") or "no cycles"
        else:
            p.predicted = p.cycles = float(r["cycles"])
            p.stalls = r.get("stalls", {})
        p.seconds = (res["wall_s"] or 0.0) / len(points)
    return points


PREDICT = {"stream": predict_stream, "cache": predict_cache, "l2": predict_l2, "latency": predict_latency}


def units(points: list[Point]) -> list[list[Point]]:
    """Work units: one point each, except the apps family, whose points of one (GPU, program) are
    one unit (one run of the program)."""
    out, groups = [], {}
    for p in points:
        if p.family == "apps":
            key = (p.gpu, p.params["program"])
            if key not in groups:
                groups[key] = []
                out.append(groups[key])
            groups[key].append(p)
        else:
            out.append([p])
    return out


def evaluate_unit(unit: list[Point]) -> list[Point]:
    if unit[0].family == "apps":
        return evaluate_program(unit)
    return [evaluate(p) for p in unit]


def evaluate(p: Point) -> Point:
    t = time.perf_counter()
    try:
        p.predicted = float(PREDICT[p.family](p))
    except Exception as e:      # reported per point, never silently dropped
        p.error_text = f"{type(e).__name__}: {e}"
    p.seconds = time.perf_counter() - t
    return p


# ---------------------------------------------------------------------------------------------
# reporting

def summarize(points: list[Point]) -> dict[str, dict]:
    """Per family: n, median and mean |error|, worst point, share off by more than 2x."""
    out = {}
    for fam in FAMILIES:
        ps = [p for p in points if p.family == fam and p.error is not None]
        if not ps:
            continue
        errs = [abs(p.error) for p in ps]
        worst = max(ps, key=lambda p: abs(p.error))
        out[fam] = {"n": len(ps), "median_abs": statistics.median(errs), "mean_abs": statistics.fmean(errs),
                    "worst": worst, "off_2x": sum(p.off_2x for p in ps) / len(ps),
                    "failed": sum(1 for p in points if p.family == fam and p.error is None)}
    return out


def print_points(points: list[Point], out=sys.stdout):
    others = [p for p in points if p.family != "apps"]
    if others:
        print(f"{'family':9} {'gpu':9} {'point':34} {'measured':>10} {'predicted':>10} {'unit':8} {'error':>8}  top stalls",
              file=out)
    for p in others:
        if p.error is None:
            print(f"{p.family:9} {p.gpu:9} {p.label:34} {p.measured:10.1f} {'-':>10} {p.unit:8} {'FAILED':>8}  {p.error_text}",
                  file=out)
            continue
        st = ", ".join(f"{k} {v:.0%}" for k, v in p.stalls.items())
        extra = ""
        if p.measured_instructions and p.predicted_instructions:
            extra = f"  [instr {p.predicted_instructions:.0f} vs {p.measured_instructions:.0f}: " \
                    f"{pct(p.predicted_instructions / p.measured_instructions - 1)}]"
        print(f"{p.family:9} {p.gpu:9} {p.label:34} {p.measured:10.1f} {p.predicted:10.1f} {p.unit:8} "
              f"{pct(p.error):>8}  {st}{extra}", file=out)
    apps = [p for p in points if p.family == "apps"]
    if apps:
        print_apps(apps, out)


def requests_note(p: Point) -> str:
    """``=`` when the traced global read and write requests equal the measured ones, else both (and
    the reason the program's manifest gives, if any); ``?`` when the launch has no traced counts."""
    d = p.detail
    if d.get("global_load_requests") is None:
        return "?"
    r, w = d["global_load_requests"], d["global_store_requests"]
    if (r, w) == (d["read_req"], d["write_req"]):
        return "="
    why = d.get("request_note")
    return f"R {r} vs {d['read_req']}, W {w} vs {d['write_req']}" + (f" ({why})" if why else " (no reason given)")


INSTR_MISMATCH = 0.25          # rows whose traced warp instructions differ from the measured by more are marked


def instr_ratio(p: Point) -> float | None:
    if p.predicted_instructions and p.measured_instructions:
        return p.predicted_instructions / p.measured_instructions
    return None


def row_note(p: Point) -> str:
    """Sampled SMs, the launch this one is identical to, and a traced / measured warp-instruction
    ratio more than INSTR_MISMATCH off (``instr x1.43``; ``> 2x`` added when the row is off by 2x)."""
    d = p.detail
    notes = []
    if d.get("sms") is not None and d.get("num_sms") and d["sms"] < d["num_sms"]:
        notes.append(f"sampled {d['sms']}/{d['num_sms']} SMs")
    if d.get("same_as") is not None:
        notes.append(f"same as #{d['same_as']}")
    ratio = instr_ratio(p)
    if ratio is not None and abs(ratio - 1) > INSTR_MISMATCH:
        notes.append(f"instr x{ratio:.2f}" + (" (> 2x off)" if p.off_2x else ""))
    return "; ".join(notes)


def _peer_cells(p: Point) -> list[str]:
    import appfamily as af
    out = []
    for _, name in af.PEERS:
        v = p.detail.get("peers", {}).get(name)
        out.append(f"{v:,.0f} {pct(v / p.measured - 1)}" if v else "-")
    return out


def print_apps(points: list[Point], out=sys.stdout):
    """The apps family per set: every row (measured, teg, signed error, each peer's cycles and error,
    traced / measured warp instructions, global requests, notes, top stalls), then the side-by-side
    summary, the per-program fidelity and cost, and every failed row."""
    import appfamily as af
    for gpu in dict.fromkeys(p.gpu for p in points):
        ps = [p for p in points if p.gpu == gpu]
        peers = af.SETS[gpu].peers
        print(f"\napps on {gpu} ({af.SETS[gpu].machine} table, {af.SETS[gpu].arch} SASS): {len(ps)} rows", file=out)
        head = f"{'row':40} {'measured':>10} {'teg':>10} {'error':>8}"
        if peers:
            head += "".join(f" {name + ' (error)':>20}" for _, name in af.PEERS)
        print(head + f" {'instr traced/measured':>24} {'requests':>9}  notes / top stalls", file=out)
        for p in ps:
            ratio = instr_ratio(p)
            ins = "" if ratio is None else f"{p.predicted_instructions:.0f}/{p.measured_instructions:.0f}" + (
                " =" if p.predicted_instructions == p.measured_instructions else f" {ratio:.2f}")
            line = f"{p.label[:40]:40} {p.measured:10.0f} "
            line += f"{'-':>10} {'FAILED':>8}" if p.error is None else f"{p.predicted:10.0f} {pct(p.error):>8}"
            if peers:
                line += "".join(f" {c:>20}" for c in _peer_cells(p))
            line += f" {ins:>24} {requests_note(p):>9}  "
            if p.error is None:
                line += p.error_text or ""
            else:
                note = row_note(p)
                st = ", ".join(f"{k} {v:.0%}" for k, v in list(p.stalls.items())[:4])
                line += (note + "; " if note else "") + st
            print(line, file=out)
        tools = ["teg"] + ([name for _, name in af.PEERS] if peers else [])
        print(f"\napps on {gpu}: MAPE / median |error| in %, on the rows teg has a value for (a peer's own "
              f"count in brackets where it lacks rows); teg's signed median error per app", file=out)
        print(af.format_side_by_side(af.side_by_side(ps, tools), tools, signed=True), file=out)
        print_fidelity(gpu, ps, out)
        print_failures(gpu, ps, out)


def program_fidelity(ps: list[Point]) -> dict:
    """One program's launches: how many have traced = measured global requests and = warp
    instructions, the ratio of the summed warp instructions and its per-launch range, the launches
    over INSTR_MISMATCH, and the run's stdout check, wall time and peak memory."""
    have = [p for p in ps if p.detail.get("global_load_requests") is not None]
    ratios = [r for r in (instr_ratio(p) for p in have) if r is not None]
    traced = sum(p.predicted_instructions or 0 for p in have)
    meas = sum(p.measured_instructions or 0 for p in have)
    run = ps[0].detail.get("run", {})
    so, nat = ps[0].detail.get("stdout"), ps[0].detail.get("native_stdout")
    return {"launches": len(ps), "counted": len(have), "requests_equal": sum(requests_note(p) == "=" for p in have),
            "instr_equal": sum(p.predicted_instructions == p.measured_instructions for p in have),
            "instr_ratio": traced / meas if meas else None, "ratio_range": (min(ratios), max(ratios)) if ratios else None,
            "over": sum(abs(r - 1) > INSTR_MISMATCH for r in ratios),
            "stdout": "-" if so is None or nat is None else ("equal" if so == nat else "DIFFERS"),
            "wall_s": run.get("wall_s"), "peak_rss_mb": run.get("peak_rss_mb"), "cached": run.get("cached"),
            "complete_run": run.get("complete_run"), "run_error": run.get("error"),
            "emulate_s": sum(p.detail.get("emulate_s") or 0 for p in ps),
            "estimate_s": sum(p.detail.get("estimate_s") or 0 for p in ps),
            "warp_instructions": traced, "stdout_text": so, "native_text": nat}


def print_fidelity(gpu: str, points: list[Point], out=sys.stdout):
    """Per program: launches whose traced global requests / warp instructions equal the measured
    ones, the summed instruction ratio, the stdout against the native H200 run, the run's cost."""
    print(f"\nfidelity and cost on {gpu}, per program: launches with traced = measured global read and write "
          f"requests, = warp instructions, traced / measured warp instructions (sum; per-launch range; launches "
          f"> {INSTR_MISMATCH:.0%} off), stdout vs the native H200 run, wall time and peak memory of the run "
          f"(emulation + estimates, this process)", file=out)
    progs: dict[str, list[Point]] = {}
    for p in points:
        progs.setdefault(p.params["program"], []).append(p)
    for prog, ps in progs.items():
        f = program_fidelity(ps)
        rng = f"x{f['ratio_range'][0]:.2f}..x{f['ratio_range'][1]:.2f}" if f["ratio_range"] else "-"
        tot = f"x{f['instr_ratio']:.3f}" if f["instr_ratio"] else "-"
        wall = "-" if f["wall_s"] is None else f"{f['wall_s']:.0f} s" + ("" if f["complete_run"] is not False else " (resumed)")
        mem = "-" if f["peak_rss_mb"] is None else f"{f['peak_rss_mb']:,.0f} MiB"
        print(f"  {prog:12} {f['launches']:3d} launches  requests = {f['requests_equal']}/{f['launches']}  "
              f"instructions = {f['instr_equal']}/{f['launches']} ({tot}; {rng}; {f['over']} > {INSTR_MISMATCH:.0%})  "
              f"stdout {f['stdout']}  wall {wall}  peak {mem}"
              f"{'  run: ' + f['run_error'] if f['run_error'] else ''}", file=out)
        if f["stdout"] == "DIFFERS":
            for a, b in zip((f["stdout_text"] or "").splitlines(), (f["native_text"] or "").splitlines()):
                if a != b:
                    print(f"      traced: {a}\n      native: {b}", file=out)


def print_failures(gpu: str, points: list[Point], out=sys.stdout):
    bad = [p for p in points if p.error is None]
    print(f"\nfailed rows on {gpu}: {len(bad)} of {len(points)}", file=out)
    for p in bad:
        print(f"  {p.label}: {p.error_text}", file=out)


def write_markdown(points: list[Point], path: str):
    """The apps family's tables as Markdown (README.md): per set the side-by-side summary, the
    per-program fidelity and cost, and the rows off by more than INSTR_MISMATCH in instructions."""
    import appfamily as af
    lines = []
    for gpu in dict.fromkeys(p.gpu for p in points if p.family == "apps"):
        ps = [p for p in points if p.family == "apps" and p.gpu == gpu]
        tools = ["teg"] + ([name for _, name in af.PEERS] if af.SETS[gpu].peers else [])
        lines += [f"### {gpu}: {len(ps)} rows, {af.SETS[gpu].arch} SASS on the `{af.SETS[gpu].machine}` table", "",
                  af.format_side_by_side(af.side_by_side(ps, tools), tools, markdown=True, signed=True), ""]
        lines += ["| program | launches | requests = | warp instr = | traced / measured instr | per launch | "
                  f"> {INSTR_MISMATCH:.0%} off | stdout vs native H200 | wall | peak memory |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        progs: dict[str, list[Point]] = {}
        for p in ps:
            progs.setdefault(p.params["program"], []).append(p)
        for prog, pp in progs.items():
            f = program_fidelity(pp)
            rng = f"{f['ratio_range'][0]:.2f}–{f['ratio_range'][1]:.2f}" if f["ratio_range"] else "-"
            lines.append(f"| {prog} | {f['launches']} | {f['requests_equal']} | {f['instr_equal']} | "
                         f"{'-' if not f['instr_ratio'] else format(f['instr_ratio'], '.3f')} | {rng} | {f['over']} | "
                         f"{f['stdout']} | {'-' if f['wall_s'] is None else format(f['wall_s'], '.0f') + ' s'} | "
                         f"{'-' if f['peak_rss_mb'] is None else format(f['peak_rss_mb'], ',.0f') + ' MiB'} |")
        bad = [p for p in ps if p.error is None]
        lines += ["", f"Failed rows: {len(bad)} of {len(ps)}" + ("." if not bad else ":")]
        groups: dict[tuple, list[Point]] = {}
        for p in bad:                       # one line per application and reason
            groups.setdefault((p.detail["app"], p.error_text), []).append(p)
        for (app, why), gp in groups.items():
            ids = ", ".join(f"#{p.params['launch']}" for p in gp) if len(gp) <= 4 else \
                f"#{gp[0].params['launch']} … #{gp[-1].params['launch']}"
            lines.append(f"- {app} {ids} ({len(gp)} row{'s' if len(gp) > 1 else ''}): {why}")
        lines.append("")
    Path(path).write_text("\n".join(lines) + "\n")


def print_summary(summary: dict, out=sys.stdout):
    print(f"\n{'family':9} {'n':>4} {'median|err|':>12} {'mean|err|':>10} {'>2x (rows)':>12}  worst", file=out)
    for fam, s in summary.items():
        w = s["worst"]
        fail = f"  ({s['failed']} failed)" if s["failed"] else ""
        print(f"{fam:9} {s['n']:4d} {s['median_abs'] * 100:11.1f}% {s['mean_abs'] * 100:9.1f}% "
              f"{s['off_2x'] * 100:5.1f}% ({round(s['off_2x'] * s['n'])})  {w.gpu} {w.label}: {w.measured:.1f} vs {w.predicted:.1f} "
              f"({pct(w.error)}){fail}", file=out)


def write_csv(points: list[Point], path: str):
    import appfamily as af
    peer_names = [name for _, name in af.PEERS]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["family", "gpu", "point", "unit", "measured", "predicted", "error", "predicted_cycles",
                    "measured_instructions", "predicted_instructions", "seconds", "top_stalls", "failure",
                    *[f"{n}_cycles" for n in peer_names], "measured_read_req", "traced_read_req",
                    "measured_write_req", "traced_write_req", "sampled_sms", "same_as", "emulate_s", "estimate_s",
                    "peak_rss_mb", "all_stalls", "measured_sm_active_ratio", "sm_active_ratio"])
        for p in points:
            d = p.detail
            peers = d.get("peers", {})
            w.writerow([p.family, p.gpu, p.label, p.unit, p.measured, p.predicted,
                        "" if p.error is None else f"{p.error:.4f}", p.cycles, p.measured_instructions,
                        p.predicted_instructions, f"{p.seconds:.2f}",
                        ";".join(f"{k}={v:.3f}" for k, v in list(p.stalls.items())[:4]), p.error_text or "",
                        *[peers.get(n) if peers.get(n) is not None else "" for n in peer_names],
                        d.get("read_req", ""), d.get("global_load_requests", ""), d.get("write_req", ""),
                        d.get("global_store_requests", ""),
                        d["sms"] if d.get("sms") is not None and d["sms"] < d.get("num_sms", 0) else "",
                        "" if d.get("same_as") is None else d["same_as"], d.get("emulate_s", ""),
                        d.get("estimate_s", ""), d.get("peak_rss_mb", ""),
                        ";".join(f"{k}={v:.4f}" for k, v in (d.get("stalls") or p.stalls).items()),
                        _fmt_ratio(d.get("measured_sm_active_ratio")), _fmt_ratio(d.get("sm_active_ratio"))])


def _fmt_ratio(x) -> str:
    """An SM active / GPU active ratio for the CSV (empty: none)."""
    return "" if x is None else f"{x:.6f}"


def select(families, gpus, quick) -> list[Point]:
    pts = []
    for fam in families:
        pts += BUILDERS[fam](gpus, quick)
    return pts


def _weight(unit: list[Point]) -> float:
    """Work of a unit for the pool's order (heaviest first): an apps program's measured warp
    instructions; 0 for the other families (kept in their order after the programs)."""
    return sum(p.measured_instructions or 0 for p in unit) if unit[0].family == "apps" else 0.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default=",".join(FAMILIES),
                    help="comma list of " + ", ".join(FAMILIES) + " (polybench: apps' PolyBench programs on gv100)")
    ap.add_argument("--gpu", default=",".join(GPUS), help="comma list of " + ", ".join(GPUS))
    ap.add_argument("--quick", action="store_true", help="a small representative subset of points")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes over points (apps: over programs)")
    ap.add_argument("--csv", help="write every point to this CSV file")
    ap.add_argument("--markdown", help="write the apps family's summary tables to this Markdown file")
    ap.add_argument("--lightest-first", action="store_true",
                    help="apps: run the programs with the fewest measured warp instructions first (a run stopped "
                         "part-way has the most programs done; the default, heaviest first, suits --jobs > 1)")
    ap.add_argument("--apps", help="apps: only these programs (comma list of apps/*.yaml names, e.g. squeezenet,lud)")
    ap.add_argument("--cached-only", action="store_true",
                    help="apps: report the launches whose results are cached, run nothing (the others fail with "
                         "'not run yet')")
    a = ap.parse_args(argv)
    fams = [f for f in a.family.split(",") if f]
    gpus = [g for g in a.gpu.split(",") if g]
    bad = [f for f in fams if f not in FAMILIES and f not in ALIASES] + [g for g in gpus if g not in GPUS]
    if bad:
        ap.error(f"unknown family/gpu: {', '.join(bad)}")
    try:
        pts = select(fams, gpus, a.quick)
    except Exception as e:                       # a manifest or measured file that cannot be read
        import appfamily as af
        if isinstance(e, (af.ManifestError, OSError)):
            print(f"accuracy: {e}", file=sys.stderr)
            return 2
        raise
    t0 = time.perf_counter()
    if a.apps:
        import appfamily as af
        want = set(a.apps.split(","))
        unknown = want - set(af.manifests())
        if unknown:
            ap.error(f"unknown program(s): {', '.join(sorted(unknown))} (apps/*.yaml)")
        pts = [p for p in pts if p.family != "apps" or p.params["program"] in want]
    global CACHED_ONLY
    CACHED_ONLY = a.cached_only
    work = sorted(units(pts), key=_weight, reverse=not a.lightest_first)
    if a.jobs > 1 and len(work) > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(a.jobs) as pool:
            done_units = pool.map(evaluate_unit, work, chunksize=1)
    else:
        done_units = [evaluate_unit(u) for u in work]
    by_id = {(p.family, p.gpu, p.label): p for u in done_units for p in u}
    done = [by_id[(p.family, p.gpu, p.label)] for p in pts]
    print_points(done)
    print_summary(summarize(done))
    print(f"\n{len(done)} points in {time.perf_counter() - t0:.0f} s "
          f"({'quick' if a.quick else 'sampled'} set, jobs={a.jobs})")
    if a.csv:
        write_csv(done, a.csv)
    if a.markdown:
        write_markdown(done, a.markdown)
    return 0 if all(p.error is not None for p in done) else 1


if __name__ == "__main__":
    sys.exit(main())
