"""Lowering speed against the engine on a real kernel: the 256 x 256 shared-memory tiled matmul
of tests/fixtures/emu/kernels.cu (``matmul_ab``, 16 x 16 tiles, grid 16 x 16, block 16 x 16; about
1.7 M warp instructions), compiled for sm_75 (the checked-in cubin and SASS) and traced by teg's
emulator, estimated on all 40 SMs of ``sm_75`` (``Options(sms=40)``).

    python benchmarks/lower_speed.py [--kernel matmul_ab|matmul_abt] [--n 256] [--repeat 5]

The first lowering and engine run load the numba code (and compile what the on-disk cache lacks);
they are reported apart. Then lowering and the engine run alternate ``--repeat`` times (the shared
machine's speed drifts; alternating keeps the two comparable) and the best and median of each are
printed, with the lowering's share of the estimate's time. ``--kernel matmul_abt`` is the variant
with the TEG report's shared-memory bank conflict (its wavefronts take the slower, exact count).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "emu"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="matmul_ab", choices=["matmul_ab", "matmul_abt", "matmul_abt_padded"])
    ap.add_argument("--n", type=int, default=256, help="matrix size (a multiple of 16)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from teg.emu import emulate, load_kernel
    from teg.engine import Options, lower, run
    from teg.machine import load

    n = args.n
    t0 = time.perf_counter()
    prog, image = load_kernel(FIX / "kernels.sm_75.cubin", args.kernel, "sm_75", FIX / "kernels.sm_75.sass")
    res = emulate(prog, image, (n // 16, n // 16), (16, 16),
                  [f"A=rand:float32:{n * n}", f"B=rand:float32:{n * n}", f"C=zeros:float32:{n * n}", f"n={n}"])
    kt = res.trace.kernels[0]
    t_emu = time.perf_counter() - t0
    machine = load("sm_75")
    options = Options(sms=machine.num_sms)

    t0 = time.perf_counter()
    inp = lower(prog, kt, machine, options)
    t_lower0 = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = run(inp)
    t_run0 = time.perf_counter() - t0
    lowers, runs = [], []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        inp = lower(prog, kt, machine, options)
        lowers.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        r = run(inp)
        runs.append(time.perf_counter() - t0)
    rows = r.instructions
    print(f"{args.kernel} {n}x{n} on {machine.name}, {options.sms} SMs: {kt.num_rows:,} warp instructions traced "
          f"(emulated in {t_emu:.1f} s), {rows:,} simulated, {r.cycles:,} cycles")
    print(f"first call (numba code loaded): lowering {t_lower0:.2f} s, engine {t_run0:.2f} s")
    print("lowering x{}: {} s".format(len(lowers), ", ".join(f"{x:.3f}" for x in lowers)))
    print("engine   x{}: {} s".format(len(runs), ", ".join(f"{x:.3f}" for x in runs)))
    lb, lm, eb, em = min(lowers), float(np.median(lowers)), min(runs), float(np.median(runs))
    print(f"lowering best {lb:.3f} s, median {lm:.3f} s ({rows / lm / 1e6:.1f} M rows/s); engine best {eb:.3f} s, "
          f"median {em:.3f} s ({rows / em / 1e6:.1f} M warp instructions/s); lowering / engine (medians) {lm / em:.2f}")


if __name__ == "__main__":
    main()
