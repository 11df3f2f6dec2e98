"""Whole-application speed: kernels estimated per second serially, on 2 local worker processes and on a
2-worker Dask LocalCluster (``teg estimate --trace APP --jobs 1 | --jobs 2 | --executor dask --jobs 2``).

Builds an Accel-Sim application of ``--kernels`` kernels (default 300) in a temporary folder: the six
real PyTorch kernels of tests/data/traces/dp-performance-accel-sim/simpletorch (Volta, sm_70) and the
bundled example ``matmul_abt`` (sm_90, written out as Accel-Sim text by :func:`teg.trace.write_accelsim`),
taken in turn, each copy a ``kernel-<id>.traceg`` file whose ``-kernel id`` header line carries its own
id, all named by one ``kernelslist.g``. The kernels are converted once into a private trace cache before
any timing (as a second run of ``teg estimate`` finds them); then
:func:`teg.analysis.application.estimate_application` runs the whole application with each executor,
``--repeat`` times (default 3), timed end to end — starting the pool or the cluster, the workers'
imports and numba cache loads, loading every kernel, lowering and simulating it, collecting the
results. Printed: best and median kernels/s per executor, the speedup of the best over the serial
best, and the CPU seconds all processes spent (this one and its finished descendants: the workers'
start-up shows there even when other tenants' load hides it from the wall-clock figures). The per-kernel results of every executor are checked to be identical to the serial ones.

The executors run with ``head_s=0`` (the pool takes every kernel but the first, which warms the numba
cache in the calling process) so that the figures measure the pool and the cluster; the CLI's default
``head_s`` (1 s) keeps a small application in the calling process instead.

    python benchmarks/app_speed.py [--kernels 300] [--repeat 3] [--jobs 2] [--whatif] [--no-dask]

``--whatif`` times ``teg whatif`` on the application instead (23 engine runs per kernel).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = ROOT / "tests" / "data" / "traces" / "dp-performance-accel-sim" / "simpletorch"


def base_kernels(work: Path) -> list[Path]:
    """The real kernel files and the bundled example as Accel-Sim text."""
    import teg.trace as tt
    from teg.resources import traces_dir

    example = tt.write_accelsim(tt.load(traces_dir() / "matmul_abt.sm_90.trace.npz"), work / "example")
    return sorted(TORCH.glob("kernel-*.traceg")) + sorted(example.glob("kernel-*.traceg"))


def build_application(n: int, work: Path) -> Path:
    """``n`` kernel files under distinct ids, listed in launch order by ``kernelslist.g``."""
    bases = [p.read_text() for p in base_kernels(work)]
    app = work / "app"
    app.mkdir()
    names = []
    for i in range(n):
        kid = i + 1
        text = re.sub(r"^-kernel id = \d+$", f"-kernel id = {kid}", bases[i % len(bases)], count=1, flags=re.M)
        (app / f"kernel-{kid}.traceg").write_text(text)
        names.append(f"kernel-{kid}.traceg")
    (app / "kernelslist.g").write_text("\n".join(names) + "\n")
    return app


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its finished (waited-for) descendants."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def time_executor(app, executor, whatif, repeat: int) -> tuple[list[float], list[float], list[dict]]:
    """Wall and CPU seconds of each repeat, and the rows of the last."""
    from teg.analysis.application import estimate_application

    walls, cpus, rows = [], [], None
    for _ in range(repeat):
        c0, t0 = cpu_seconds(), time.perf_counter()
        rep = estimate_application(app, whatif=() if whatif else None, executor=executor)
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
        rows = rep.rows
    return walls, cpus, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--whatif", action="store_true", help="teg whatif on every kernel instead of one estimate")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster")
    args = ap.parse_args()
    if args.kernels < 1:
        ap.error("--kernels must be at least 1")

    work = Path(tempfile.mkdtemp(prefix="teg-app-speed-"))
    os.environ["TEG_CACHE_DIR"] = str(work / "cache")          # inherited by the workers
    try:
        from teg.trace.application import load_kernel, open_application
        from teg.analysis.executors import Executor, usable_cores

        t0 = time.perf_counter()
        app = open_application(build_application(args.kernels, work))
        for ref in app.kernels:                                  # convert once, as a second run finds it
            load_kernel(ref)
        rows = sum(load_kernel(r).num_rows for r in app.kernels)
        print(f"application: {len(app.kernels)} kernels ({rows:,} warp instructions; 6 PyTorch kernels on sm_70 "
              f"and matmul_abt on sm_90 in turn), built and converted in {time.perf_counter() - t0:.1f} s; "
              f"{usable_cores()} usable cores, load average {os.getloadavg()[0]:.1f} before timing; "
              f"mode: {'whatif' if args.whatif else 'estimate'}")
        runs = [("serial", Executor(jobs=1)), (f"{args.jobs} local workers", Executor(jobs=args.jobs, head_s=0))]
        if not args.no_dask:
            try:
                import distributed  # noqa: F401
                runs.append((f"{args.jobs}-worker LocalCluster", Executor("dask", jobs=args.jobs, head_s=0)))
            except ImportError:
                print("dask.distributed not installed: LocalCluster skipped (pip install 'teg[dask]')")
        serial_best, reference = None, None
        for label, ex in runs:
            times, cpus, result = time_executor(app, ex, args.whatif, args.repeat)
            best, med = min(times), statistics.median(times)
            if reference is None:
                reference, serial_best = result, best
            same = result == reference
            print(f"{label:24s} best {len(app.kernels) / best:7.1f} kernels/s ({best:6.2f} s), median "
                  f"{len(app.kernels) / med:7.1f} kernels/s; speedup over serial {serial_best / best:4.2f}x; "
                  f"CPU {min(cpus):6.2f} s (all processes, best); results {'identical' if same else 'DIFFER'} "
                  "to serial")
            if not same:
                return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
