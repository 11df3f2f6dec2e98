"""What ``teg trace app`` adds to the emulator: the cost of one launch through teg's CUDA runtime
(socket round trip, parameter packing, constant banks, the trace folder) measured on the project's
own program ``tests/fixtures/apps/repeat.cu`` (a small axpy launched COUNT times), against
``teg.emu.emulate`` of the same launch, in one run so the machine's load affects both alike.

    python benchmarks/app_overhead.py [--count 400] [--size 1024] [--arch sm_75]

Prints per launch: the program run untraced and traced under ``teg trace app`` (the difference
between COUNT launches and 1 launch, divided by COUNT - 1, so start-up is excluded) and
``emulate`` of the same launch (median of 20). Needs nvcc and a C compiler.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _run(prog: Path, out: Path, count: int, size: int, traced: bool) -> float:
    from teg.app.session import Session

    t = time.perf_counter()
    status = Session([str(prog), str(count), str(size)], out, launches=None if traced else "0", force=True,
                     progress=False).run()
    if status != 0:
        sys.exit(f"the program exited with {status}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--arch", default="sm_75")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        prog = d / "repeat"
        subprocess.run(["nvcc", "-cudart", "shared", f"-arch={a.arch}", "-o", str(prog),
                        str(ROOT / "tests" / "fixtures" / "apps" / "repeat.cu")], check=True)
        _run(prog, d / "warm", 1, a.size, True)                  # builds the runtime, loads numba's cache
        rows = {}
        for traced in (False, True):
            one = _run(prog, d / "one", 1, a.size, traced)
            many = _run(prog, d / "many", a.count, a.size, traced)
            rows[traced] = (many - one) / (a.count - 1)
        from teg.emu import emulate, load_kernel
        subprocess.run(["nvcc", "-cubin", f"-arch={a.arch}", "-o", str(d / "r.cubin"),
                        str(ROOT / "tests" / "fixtures" / "apps" / "repeat.cu")], check=True)
        p, image = load_kernel(d / "r.cubin", "axpy")
        x, y = np.ones(a.size, np.float32), np.zeros(a.size, np.float32)
        times = []
        for _ in range(21):
            t = time.perf_counter()
            emulate(p, image, ((a.size + 255) // 256, 1, 1), (256, 1, 1), [y, x, np.float32(0.5), np.int32(a.size)])
            times.append(time.perf_counter() - t)
        em = statistics.median(times[1:])
    print(f"axpy over {a.size} elements ({a.arch}), {a.count} launches")
    print(f"teg trace app, untraced : {rows[False] * 1e3:7.2f} ms per launch")
    print(f"teg trace app, traced   : {rows[True] * 1e3:7.2f} ms per launch")
    print(f"teg.emu.emulate         : {em * 1e3:7.2f} ms per launch (trace in memory)")


if __name__ == "__main__":
    main()
