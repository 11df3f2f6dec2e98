"""Interpreter cost in machine instructions: x86 instructions, conditional branches and (simulated)
branch mispredictions per emulated warp instruction, counted by valgrind's cachegrind.

The wall-clock and CPU-time rates of ``emu_speed.py`` drift by ±30 % on a shared machine; these
counts are exact and repeatable, so two variants of the interpreter compare to the instruction.
This runs the jitted interpreter (:func:`teg.emu.interp.run_blocks`, one thread) on the tiled
matmul ``matmul_ab`` of ``emu_speed.py`` (n × n matrices of ones, 16×16 threads per block) under
cachegrind twice, with 1 and 3 runs of the launch, and divides the difference by the extra warp
instructions, so the numba import, loading the kernel and lowering cancel out. Only the jitted
code is counted (cachegrind files it as ``???``: JIT code has no symbols).

As ``engine_icount.py``: numba's cache key holds the host CPU's name and features, which
valgrind's emulated CPUID changes, so the script pins both (``NUMBA_CPU_NAME`` /
``NUMBA_CPU_FEATURES``: the host's features without AVX-512/AMX/AVX10, which valgrind cannot run,
on the ``znver3`` model; ``TEG_ICOUNT_CPU`` sets another) and primes a private cache outside
valgrind. The code counted is therefore the AVX2 build, not necessarily the host's own.

    python benchmarks/emu_icount.py [--n 128] [--no-record]

Needs ``valgrind`` on PATH (prints why and exits 2 when it is missing).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIX = HERE.parent / "tests" / "fixtures" / "emu"


def launch_state(n: int, arch: str = "sm_90"):
    """Everything :meth:`teg.emu.launch._Worker.run` needs for one launch of ``matmul_ab`` on n × n
    matrices of ones: ``(worker, launch tuple, number of blocks)``."""
    import numpy as np

    from teg.emu import launch as L
    from teg.emu import load_kernel
    from teg.emu.args import parse_arg
    from teg.emu.lower import specialize
    from teg.emu.memory import DeviceMemory

    prog, image = load_kernel(FIX / f"kernels.{arch}.cubin", "matmul_ab")
    grid, block = (n // 16, n // 16, 1), (16, 16, 1)
    args = [f"A=ones:float32:{n}x{n}", f"B=ones:float32:{n}x{n}", f"C=zeros:float32:{n}x{n}", f"n={n}"]
    parsed = [parse_arg(a, p.size, i) for i, (a, p) in enumerate(zip(args, image.params))]
    mem = DeviceMemory()
    addresses = {i: mem.alloc(a.name, a.array).address for i, a in enumerate(parsed) if a.array is not None}
    params = L.pack_params(image, parsed, addresses)
    heap, alo, ahi = mem.heap()
    compiled = L.Compiled.of(prog, image)
    lw = compiled.lowered
    local_size = L.local_window(image)
    banks = dict(image.banks)
    banks[0] = L.constant_bank0(image, params, grid, block, local_size)
    okind, oval, oflag, cb32 = L.flatten_banks(lw, banks)
    fx = specialize(lw.code, okind, lw.oreg, oval, oflag)
    launch = (lw.code, fx, okind, lw.oreg, oval, oflag, compiled.ins_addr, np.array(grid, np.int64),
              np.array(block, np.int64), heap, heap.view(np.uint32), alo, ahi, local_size, cb32)
    wk = L._Worker(8, (image.shared_static + 3) // 4 * 4 or 4, local_size, 1 << 20)
    return wk, launch, grid[0] * grid[1]


def run_launch(wk, launch, nblocks: int, record: bool) -> int:
    """Every block of the launch through the interpreter; returns the warp instructions executed."""
    import teg.emu.interp as interp

    wk.sched[:] = 0
    total = 0
    while True:
        wk.cnt[:] = 0
        st = wk.run(launch, nblocks, wk.rows_w.shape[0], record)
        total += int(wk.cnt[0])
        if st == interp.ST_OK:
            return total
        if st != interp.ST_FULL:
            raise SystemExit(f"emu_icount: the launch stopped with status {st}")


def child(n: int, reps: int, record: bool) -> None:
    wk, launch, nblocks = launch_state(n)
    rows = 0
    for _ in range(reps):
        rows = run_launch(wk, launch, nblocks, record)
    print(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=128, help="matrix size (a multiple of 16)")
    ap.add_argument("--no-record", action="store_true", help="an untraced launch (rows counted, not stored)")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.n, args.child, not args.no_record)
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("emu_icount: valgrind is not on PATH (install it, e.g. apt install valgrind)")
        return 2
    import llvmlite.binding as ll

    sys.path.insert(0, str(HERE))
    from engine_icount import jit_totals, valgrind_safe

    env = dict(os.environ, NUMBA_CPU_NAME=os.environ.get("TEG_ICOUNT_CPU", "znver3"),
               NUMBA_CPU_FEATURES=valgrind_safe(ll.get_host_cpu_features().flatten()),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", TEG_EMU_THREADS="1")
    me = [sys.executable, os.path.abspath(__file__), "--n", str(args.n)] + (["--no-record"] if args.no_record else [])
    with tempfile.TemporaryDirectory() as tmp:
        env["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
        rows = int(subprocess.run(me + ["--child", "1"], env=env, check=True, capture_output=True,
                                  text=True).stdout.split()[-1])                  # compile outside valgrind
        out = {}
        for reps in (1, 3):
            path = os.path.join(tmp, f"cg.{reps}")
            cmd = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--branch-sim=yes",
                   f"--cachegrind-out-file={path}"] + me + ["--child", str(reps)]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out[reps] = jit_totals(path)
    per = {e: (out[3][e] - out[1][e]) / (2 * rows) for e in out[3]}
    print(f"interpreter, per emulated warp instruction (matmul_ab {args.n}², {rows:,} warp instructions per launch, "
          f"{'untraced' if args.no_record else 'recording'}, one thread):")
    print(f"  x86 instructions     {per['Ir']:8.1f}")
    print(f"  conditional branches {per['Bc']:8.1f}   mispredicted (cachegrind's model) {per['Bcm']:.2f}")
    print(f"  indirect branches    {per['Bi']:8.1f}   mispredicted {per['Bim']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
