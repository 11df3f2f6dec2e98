"""Traces people can keep (issue 38, point 2): bytes per warp instruction on disk of the native
format before (version 1: every column a ``.npy``) and now (version 3: compact frames,
teg/trace/codec.py), the time to write and to load each, and the lowering against the engine on
every trace.

Traces: the real NVBit traces in tests/data (converted to the native format), the bundled
example, and launches traced by teg's emulator from tests/fixtures/emu/kernels.cu for sm_90 —
``matmul_ab`` and ``matmul_abt`` (the bank-conflict variant) on a 16 x 16 grid of 16 x 16 blocks
(n = 256, 1.7 M warp instructions each).

    python3 benchmarks/trace_compact.py [--repeat 5] [--keep DIR] [--only NAME,...]

Each figure is the median of ``--repeat`` runs, the variants interleaved (old write, new write,
old load, new load; then lowering, engine) so that the shared machine's drift (+-30 %) hits them
alike. Sizes are exact byte counts of the ``.npz`` files. The first lowering and engine run of
each trace (numba code loaded) are not counted. ``--keep DIR`` keeps the emulated traces there
(reused by the next run).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "traces"
FIX = ROOT / "tests" / "fixtures" / "emu"
NVBIT = {"vectoradd": DATA / "microgpusim" / "vectoradd-100-32-trace",
         "matrixmul": DATA / "microgpusim" / "matrixmul-32-32-trace",
         "simpletorch": DATA / "dp-performance-accel-sim" / "simpletorch"}
EMULATED = ("matmul_ab", "matmul_abt")


def emulated(kernel: str, keep: Path):
    """The sm_90 ``kernel`` launch (n = 256, 16 x 16 blocks of 16 x 16) traced by the emulator."""
    import teg.trace as tt

    out = keep / f"{kernel}.sm_90.n256.npz"
    if not out.exists():
        from teg.emu import emulate, load_kernel

        n = 256
        prog, image = load_kernel(FIX / "kernels.sm_90.cubin", kernel, "sm_90", FIX / "kernels.sm_90.sass")
        res = emulate(prog, image, (n // 16, n // 16), (16, 16),
                      [f"A=rand:float32:{n * n}", f"B=rand:float32:{n * n}", f"C=zeros:float32:{n * n}", f"n={n}"])
        tt.save(res.trace, out)
    return tt.load(out), FIX / "kernels.sm_90.sass"


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="folder for the emulated traces (kept, reused)")
    ap.add_argument("--only", default=None, help="comma-separated trace names")
    args = ap.parse_args()

    import teg.trace as tt
    from teg.engine import Options, load_inputs, lower, run

    work = Path(tempfile.mkdtemp(prefix="teg-compact-"))
    keep = args.keep or work
    keep.mkdir(parents=True, exist_ok=True)
    cache = work / "cache"
    names = list(NVBIT) + ["bundled", *EMULATED]
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    size_rows, time_rows = [], []
    try:
        for name in names:
            if name in NVBIT:
                trace, sass = tt.load(NVBIT[name], cache=cache), None
            elif name == "bundled":
                trace, sass = tt.load(ROOT / "traces" / "matmul_abt.sm_90.trace.npz"), ROOT / "traces" / "matmul_abt.sm_90.sass"
            else:
                trace, sass = emulated(name, keep)
            rows = sum(k.num_rows for k in trace)
            old, new = work / f"{name}.v1.npz", work / f"{name}.v3.npz"
            w_old, w_new, l_old, l_new = [], [], [], []
            for _ in range(max(1, args.repeat)):
                for path, compact, times in ((old, False, w_old), (new, True, w_new)):
                    t0 = time.perf_counter()
                    tt.save(trace, path, force=True, compact=compact)
                    times.append(time.perf_counter() - t0)
                for path, times in ((old, l_old), (new, l_new)):
                    shutil.rmtree(cache / "spill", ignore_errors=True)      # a first load decodes again
                    t0 = time.perf_counter()
                    _load_with_cache(tt, path, cache / "spill")
                    times.append(time.perf_counter() - t0)
            so, sn = old.stat().st_size, new.stat().st_size
            size_rows.append((name, len(trace), rows, so, sn, median(w_old), median(w_new), median(l_old), median(l_new)))

            lowers, engines, kernels = [], [], []
            for kt in trace:
                f = load_inputs(sass=sass, trace=kt)
                inp = lower(f.program, kt, f.machine, Options())     # numba code loaded: not counted
                run(inp)
                kernels.append((f, kt))
            for _ in range(max(1, args.repeat)):
                tl = te = 0.0
                for f, kt in kernels:
                    t0 = time.perf_counter()
                    inp = lower(f.program, kt, f.machine, Options())
                    t1 = time.perf_counter()
                    run(inp)
                    t2 = time.perf_counter()
                    tl += t1 - t0
                    te += t2 - t1
                lowers.append(tl)
                engines.append(te)
            time_rows.append((name, rows, median(lowers), median(engines)))
            print(f"{name}: done", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nbytes per warp instruction on disk (.npz), and write / load times (medians of {args.repeat})")
    print(f"{'trace':12s} {'kernels':>7s} {'warp instr':>11s} {'v1 bytes':>12s} {'v3 bytes':>10s} {'v1 B/instr':>10s} "
          f"{'v3 B/instr':>10s} {'write v1':>9s} {'write v3':>9s} {'load v1':>8s} {'load v3':>8s}")
    for name, nk, rows, so, sn, wo, wn, lo, ln in size_rows:
        print(f"{name:12s} {nk:7d} {rows:11,d} {so:12,d} {sn:10,d} {so / rows:10.2f} {sn / rows:10.2f} "
              f"{wo:8.3f}s {wn:8.3f}s {lo:7.3f}s {ln:7.3f}s")
    print(f"\nlowering vs engine, all SMs of the suggested machine (medians of {args.repeat}; a trace's kernels summed)")
    print(f"{'trace':12s} {'warp instr':>11s} {'lowering':>9s} {'engine':>9s} {'lower/engine':>12s}")
    for name, rows, tl, te in time_rows:
        print(f"{name:12s} {rows:11,d} {tl:8.4f}s {te:8.4f}s {tl / te:12.2f}")


def _load_with_cache(tt, path: Path, cache: Path):
    """``tt.load(path)`` with the trace cache (where long compact kernels are decoded) at ``cache``."""
    import os

    before = os.environ.get("TEG_CACHE_DIR")
    os.environ["TEG_CACHE_DIR"] = str(cache)
    try:
        return tt.load(path)
    finally:
        if before is None:
            del os.environ["TEG_CACHE_DIR"]
        else:
            os.environ["TEG_CACHE_DIR"] = before


if __name__ == "__main__":
    main()
