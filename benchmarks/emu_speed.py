"""Emulator speed: emulated thread-instructions per second (active lanes summed over all warp
instructions executed) for kernels of tests/fixtures/emu, on one core.

    python benchmarks/emu_speed.py [--arch sm_90] [--repeat 3]

The first launch of each kernel compiles nothing new (the interpreter is compiled once, cached on
disk by numba); it is run once untimed so the figures exclude JIT time. ``end-to-end`` includes
lowering, buffer set-up and building the trace; ``interpreter`` is the jitted loop alone.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import teg.emu.interp as interp
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


class _Timer:
    """Wraps interp.run_blocks to add up the time spent inside the jitted loop."""

    def __init__(self):
        self.seconds = 0.0
        self._orig = interp.run_blocks

    def __call__(self, *args):
        t = time.perf_counter()
        r = self._orig(*args)
        self.seconds += time.perf_counter() - t
        return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    timer = _Timer()
    interp.run_blocks = timer
    total_lanes = total_wall = total_interp = 0.0
    print(f"{'kernel':<20} {'warp instr':>11} {'thread instr':>13} {'end-to-end':>12} {'interpreter':>12}")
    for name, grid, block, args in CASES:
        prog, image = load_kernel(FIX / f"kernels.{opts.arch}.cubin", name)
        emulate(prog, image, 1, block, args)          # warm-up (JIT cache load)
        best_wall = best_interp = float("inf")
        for _ in range(opts.repeat):
            timer.seconds = 0.0
            t = time.perf_counter()
            r = emulate(prog, image, grid, block, args)
            best_wall = min(best_wall, time.perf_counter() - t)
            best_interp = min(best_interp, timer.seconds)
        kt = r.kernel_trace
        lanes = int(np.unpackbits(np.asarray(kt.mask, np.uint32).view(np.uint8)).sum())
        total_lanes += lanes
        total_wall += best_wall
        total_interp += best_interp
        print(f"{name:<20} {kt.num_rows:>11,} {lanes:>13,} {lanes / best_wall / 1e6:>8.1f} M/s {lanes / best_interp / 1e6:>8.1f} M/s")
    print(f"{'all':<20} {'':>11} {int(total_lanes):>13,} {total_lanes / total_wall / 1e6:>8.1f} M/s "
          f"{total_lanes / total_interp / 1e6:>8.1f} M/s   (thread-instructions per second, one core)")


if __name__ == "__main__":
    main()
