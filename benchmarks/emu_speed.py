"""Emulator speed.

    python benchmarks/emu_speed.py [--arch sm_90] [--repeat 3] [--sizes 128,256,512] [--no-app] [--no-kernels]
    python benchmarks/emu_speed.py --stages [--sizes 256] [--repeat 5]

1. Kernels of tests/fixtures/emu on one thread: emulated thread-instructions per second (active
   lanes summed over all warp instructions executed), ``end-to-end`` through ``teg.emu.emulate``
   (lowering, buffer set-up and building the trace included) and ``interpreter`` (the jitted loop
   alone). Each kernel runs once untimed first so the figures exclude loading numba's cache.
2. End to end in warp instructions per second, the tiled matmul ``matmul_ab`` (16×16 threads per
   block, n/16 × n/16 blocks) for each ``--sizes`` n:

   * ``trace run``: ``teg trace run`` in this process (the cubin read, its SASS from the sibling
     listing, the launch emulated, the trace and the buffers written), with 1, 2 and all worker
     threads (``TEG_EMU_THREADS``); the 1-thread variant also gives the interpreter alone;
   * ``trace app``: ``teg trace app`` of a program built here with ``nvcc -cudart shared`` that
     launches the same kernel once (its own source, below), traced and untraced (``--launches
     0``), 1, 2 and all threads — the program's start and teg's runtime included.

   The variants run interleaved, ``--repeat`` rounds, and the medians are printed (the shared
   machine's speed drifts by ±30 %); the warp instructions are exact counts from the traces.
3. ``--stages``: where a traced launch's CPU time goes, ``teg trace run`` of the matmul on one
   thread, in nanoseconds of thread CPU time per warp instruction (median and best of
   ``--repeat``): the interpreter, the rows' expansion into trace columns, the frame writer and,
   inside it, the address encoding and the byte shuffle + zlib (zlib alone beside it), and the
   whole command (process CPU time: set-up and files included).
   Besides the wall-clock rates, ``per CPU-second of teg`` divides by the CPU time of this
   process (all its threads; not the traced program's own): on a machine other jobs load, the
   figure that says what the code costs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import teg.emu.interp as interp
from teg.analysis.executors import usable_cores
from teg.emu import emulate, load_kernel

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "emu"

CASES = [
    ("matmul_abt", (8, 8), (16, 16), ["A=rand:float32:128x128", "B=rand:float32:128x128", "C=zeros:float32:128x128", "n=128"]),
    ("saxpy", 1024, 256, ["n=262144", "a=2.0", "x=rand:float32:262144", "y=rand:float32:262144"]),
    ("reduce_sum<float>", 512, 256, ["in=rand:float32:131072", "out=zeros:float32:1", "n=131072"]),
    ("divergent_loop", 64, 256, ["c=rand:int32:16384", "o=zeros:float32:16384"]),
    ("int_div_sqrt", 64, 256, ["a=rand:int32:16384", "b=ones:int32:16384", "f=rand:float32:16384",
                               "q=zeros:int32:16384", "u=zeros:uint32:16384"]),
]

# the trace-app program: the fixtures' matmul_ab, launched once on n×n matrices of ones
APP_SOURCE = r"""
#include <cstdio>
#include <cstdlib>
#define TILE 16
__global__ void matmul_ab(const float *A, const float *B, float *C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int t = 0; t < n / TILE; ++t) {
        As[ty][tx] = A[row * n + t * TILE + tx];
        Bs[ty][tx] = B[(t * TILE + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 256;
    float *a, *b, *c;
    cudaMallocManaged(&a, n * n * sizeof(float));
    cudaMallocManaged(&b, n * n * sizeof(float));
    cudaMallocManaged(&c, n * n * sizeof(float));
    for (int i = 0; i < n * n; i++) { a[i] = 1.0f; b[i] = 1.0f; }
    matmul_ab<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(a, b, c, n);
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    printf("%.1f\n", c[n * n - 1]);
    return 0;
}
"""


class _Timer:
    """Wraps interp.run_blocks to add up the time spent inside the jitted loop (all threads)."""

    def __init__(self):
        self.seconds = 0.0
        self._orig = interp.run_blocks

    def __call__(self, *args):
        t = time.perf_counter()
        r = self._orig(*args)
        self.seconds += time.perf_counter() - t
        return r


@contextlib.contextmanager
def _threads(n: int):
    old = os.environ.get("TEG_EMU_THREADS")
    os.environ["TEG_EMU_THREADS"] = str(n)
    try:
        yield
    finally:
        if old is None:
            del os.environ["TEG_EMU_THREADS"]
        else:
            os.environ["TEG_EMU_THREADS"] = old


def kernels_table(arch: str, repeat: int, timer: _Timer) -> None:
    total_lanes = total_wall = total_interp = 0.0
    print(f"{'kernel':<20} {'warp instr':>11} {'thread instr':>13} {'end-to-end':>12} {'interpreter':>12}   (one thread)")
    with _threads(1):
        for name, grid, block, args in CASES:
            prog, image = load_kernel(FIX / f"kernels.{arch}.cubin", name)
            emulate(prog, image, 1, block, args)          # warm-up (JIT cache load)
            walls, interps = [], []
            for _ in range(repeat):
                timer.seconds = 0.0
                t = time.perf_counter()
                r = emulate(prog, image, grid, block, args)
                walls.append(time.perf_counter() - t)
                interps.append(timer.seconds)
            wall, intp = statistics.median(walls), statistics.median(interps)
            kt = r.kernel_trace
            lanes = int(np.unpackbits(np.asarray(kt.mask, np.uint32).view(np.uint8)).sum())
            total_lanes += lanes
            total_wall += wall
            total_interp += intp
            print(f"{name:<20} {kt.num_rows:>11,} {lanes:>13,} {lanes / wall / 1e6:>8.1f} M/s {lanes / intp / 1e6:>8.1f} M/s")
    print(f"{'all':<20} {'':>11} {int(total_lanes):>13,} {total_lanes / total_wall / 1e6:>8.1f} M/s "
          f"{total_lanes / total_interp / 1e6:>8.1f} M/s   (thread-instructions per second, medians of {repeat})")


def _trace_run(arch: str, n: int, out: Path) -> None:
    from teg.cli import main

    args = ["trace", "run", str(FIX / f"kernels.{arch}.cubin"), "--kernel", "matmul_ab", "--grid", f"{n // 16},{n // 16}",
            "--block", "16,16", "--arg", f"A=ones:float32:{n}x{n}", "--arg", f"B=ones:float32:{n}x{n}",
            "--arg", f"C=zeros:float32:{n}x{n}", "--arg", f"n={n}", "-o", str(out), "--force",
            "--max-instructions", str(2_000_000_000)]
    with contextlib.redirect_stdout(open(os.devnull, "w")):
        main(args, standalone_mode=False)


def _rows_of(trace: Path) -> int:
    from teg.trace.native import read_meta

    meta, _, _ = read_meta(trace)
    return sum(int(k["rows"]) for k in meta["kernels"])


@contextlib.contextmanager
def _quiet_fd(fd: int):
    """The program's own output (written to the file descriptor, not through Python) dropped."""
    saved = os.dup(fd)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(null)


def _trace_app(prog: Path, n: int, out: Path, traced: bool) -> None:
    from teg.app.session import Session

    with _quiet_fd(1), _quiet_fd(2):
        status = Session([str(prog), str(n)], out, launches=None if traced else "0", force=True, progress=False,
                         max_instructions=2_000_000_000).run()
    if status != 0:
        raise SystemExit(f"the benchmark program exited with {status}")


def end_to_end(arch: str, sizes: list[int], repeat: int, app: bool, timer: _Timer) -> None:
    counts = sorted({1, 2, usable_cores()})
    with tempfile.TemporaryDirectory(prefix="teg-emu-speed-") as tmp:
        d = Path(tmp)
        prog = None
        if app:
            nvcc = shutil.which("nvcc")
            if nvcc is None:
                print("trace app: skipped (no nvcc)")
            else:
                (d / "mm.cu").write_text(APP_SOURCE)
                subprocess.run([nvcc, "-cudart", "shared", "-arch=sm_75", "-O3", "-o", str(d / "mm"), str(d / "mm.cu")],
                               check=True)
                prog = d / "mm"
        with _threads(1):                            # warm-up: numba's cache, the runtime library, the listing
            _trace_run(arch, 32, d / "warm.trace")
            if prog is not None:
                _trace_app(prog, 32, d / "warm.app", True)
        print(f"\nend to end, warp instructions per second (matmul_ab, 16x16 blocks; medians of {repeat}; "
              f"{usable_cores()} cores)")
        print(f"{'what':<28} {'n':>5} {'warp instr':>12} " + " ".join(f"{f'{c} thr':>10}" for c in counts)
              + f" {'interp (1 thr)':>15}")
        for n in sizes:
            variants = [("trace run", True, c) for c in counts]
            if prog is not None:
                variants += [("trace app traced", True, c) for c in counts] + [("trace app untraced", False, c) for c in counts]
            times: dict = {v: [] for v in variants}
            cpu: dict = {v: [] for v in variants}
            interp_s: dict = {v: [] for v in variants}
            rows: dict = {}
            for _ in range(repeat):
                for v in variants:
                    what, traced, c = v
                    out = d / f"{what.replace(' ', '_')}_{n}_{c}"
                    timer.seconds = 0.0
                    with _threads(c):
                        t, tc = time.perf_counter(), time.process_time()
                        if what == "trace run":
                            _trace_run(arch, n, out)
                        else:
                            _trace_app(prog, n, out, traced)
                        times[v].append(time.perf_counter() - t)
                        cpu[v].append(time.process_time() - tc)
                    interp_s[v].append(timer.seconds)
                    if traced and what not in rows:
                        rows[what] = _rows_of(out)
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.rmtree(out.with_name(out.name + ".outputs"), ignore_errors=True)
            for what in ("trace run", "trace app traced", "trace app untraced"):
                if not any(v[0] == what for v in variants):
                    continue
                r = rows["trace app traced"] if what == "trace app untraced" else rows[what]
                med = {c: statistics.median(times[(what, what != "trace app untraced", c)]) for c in counts}
                one = (what, what != "trace app untraced", 1)
                ip = statistics.median(interp_s[one])
                print(f"{what:<28} {n:>5} {r:>12,} " + " ".join(f"{r / med[c] / 1e6:>6.2f} M/s" for c in counts)
                      + f" {r / ip / 1e6:>11.2f} M/s")
                cmed = {c: statistics.median(cpu[(what, what != "trace app untraced", c)]) for c in counts}
                print(f"{'  per CPU-second of teg':<28} {n:>5} {'':>12} "
                      + " ".join(f"{r / cmed[c] / 1e6:>6.2f} M/s" for c in counts))
            if prog is not None:
                for c in counts:
                    tr = statistics.median(times[("trace app traced", True, c)])
                    un = statistics.median(times[("trace app untraced", False, c)])
                    trc = statistics.median(cpu[("trace app traced", True, c)])
                    unc = statistics.median(cpu[("trace app untraced", False, c)])
                    print(f"{'  untraced vs traced':<28} {n:>5} {'':>12} {c} thr: {tr / un:.2f}x faster "
                          f"(CPU time {trc / unc:.2f}x)")


@contextlib.contextmanager
def _stage_clocks(acc: dict):
    """Thread CPU time spent in each stage of a traced launch, added up in ``acc`` (seconds)."""
    import zlib

    import teg.emu.launch as L
    import teg.trace.codec as codec
    import teg.trace.native as native

    def wrap(owner, name: str, key: str):
        orig = getattr(owner, name)

        def timed(*a, **k):
            t = time.thread_time()
            try:
                return orig(*a, **k)
            finally:
                acc[key] = acc.get(key, 0.0) + time.thread_time() - t
        setattr(owner, name, timed)
        return owner, name, orig

    class _Zlib:                      # codec's zlib with compress timed
        def __getattr__(self, k):
            return getattr(zlib, k)

        def compress(self, *a):
            t = time.thread_time()
            out = zlib.compress(*a)
            acc["zlib"] = acc.get("zlib", 0.0) + time.thread_time() - t
            return out

    undo = [wrap(interp, "run_blocks", "interpreter"), wrap(L, "expand_rows", "expansion"),
            wrap(native.FrameWriter, "_frame", "frame writer"), wrap(codec, "encode_addresses", "addresses"),
            wrap(codec, "encode_frame", "shuffle + zlib"), (codec, "zlib", codec.zlib)]
    codec.zlib = _Zlib()
    try:
        yield
    finally:
        for owner, name, orig in reversed(undo):
            setattr(owner, name, orig)


def stages(arch: str, sizes: list[int], repeat: int) -> None:
    """Print where a traced ``teg trace run`` of the matmul spends its CPU time (module docstring, 3)."""
    keys = ["interpreter", "expansion", "frame writer", "addresses", "shuffle + zlib", "zlib", "whole command"]
    with tempfile.TemporaryDirectory(prefix="teg-emu-stages-") as tmp, _threads(1):
        d = Path(tmp)
        _trace_run(arch, 32, d / "warm.npz")
        print(f"\nwhere a traced launch's time goes: teg trace run, one thread, ns of thread CPU time per warp "
              f"instruction (median / best of {repeat})")
        print(f"{'n':>5} {'warp instr':>12} " + " ".join(f"{k:>15}" for k in keys) + f" {'M/s per CPU-s':>14}")
        for n in sizes:
            runs = []
            for _ in range(repeat):
                acc: dict = {}
                with _stage_clocks(acc):
                    t = time.process_time()
                    _trace_run(arch, n, d / "t.npz")
                    acc["whole command"] = time.process_time() - t
                rows = _rows_of(d / "t.npz")
                runs.append({k: v / rows * 1e9 for k, v in acc.items()})
                os.remove(d / "t.npz")
                shutil.rmtree(d / "t.npz.outputs", ignore_errors=True)
            med = {k: statistics.median(r.get(k, 0.0) for r in runs) for k in keys}
            best = {k: min(r.get(k, 0.0) for r in runs) for k in keys}
            print(f"{n:>5} {rows:>12,} " + " ".join(f"{med[k]:>7.1f} /{best[k]:>6.1f}" for k in keys)
                  + f" {1e3 / med['whole command']:>6.2f} /{1e3 / best['whole command']:>5.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="128,256,512", help="matmul sizes n (multiples of 16) for the end-to-end table")
    ap.add_argument("--no-app", action="store_true", help="skip teg trace app (needs nvcc and a C compiler)")
    ap.add_argument("--no-kernels", action="store_true", help="skip the per-kernel table")
    ap.add_argument("--stages", action="store_true", help="only the time per stage of a traced trace run (one thread)")
    opts = ap.parse_args()
    sizes = [int(x) for x in opts.sizes.split(",") if x]
    if opts.stages:
        stages(opts.arch, sizes, opts.repeat)
        return
    timer = _Timer()
    interp.run_blocks = timer
    if not opts.no_kernels:
        kernels_table(opts.arch, opts.repeat, timer)
    if sizes:
        end_to_end(opts.arch, sizes, opts.repeat, not opts.no_app, timer)


if __name__ == "__main__":
    main()
