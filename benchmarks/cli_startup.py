"""Start-up of the command line: the import of ``teg.cli`` and a warm ``teg estimate`` of the
bundled example, each in a fresh interpreter, for one or more checkouts measured interleaved
(round by round, so that the machine's drift hits every checkout alike); medians printed.

    python benchmarks/cli_startup.py [--rounds N] [--tree PATH ...]

``--tree``: the checkouts to compare (their root; default: this one). For each round and tree:

* ``import``: ``python -X importtime -c 'from teg.cli import main'`` — the cumulative microseconds
  of the ``teg.cli`` line (the package and everything it pulls in), and the process's wall time;
* ``estimate``: the wall time of ``python -c 'from teg.cli import main; main()' estimate`` (numba's
  cache warm: one untimed run per tree first), output discarded.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _env(tree: Path) -> dict:
    """The environment of a run of ``tree`` (it runs in ``tree`` too: ``python -c`` puts the
    working folder first on the path)."""
    return dict(os.environ, PYTHONPATH=str(tree))


def import_us(tree: Path) -> tuple[int, float]:
    """(cumulative µs of teg.cli under -X importtime, wall seconds of the process)."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", "from teg.cli import main"], env=_env(tree),
                       cwd=tree, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    for line in r.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "teg.cli":
            return int(parts[1]), wall
    raise RuntimeError(f"{tree}: no teg.cli line in -X importtime's output")


def estimate_s(tree: Path, args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from teg.cli import main; main(prog_name='teg')", "estimate", *args],
                   env=_env(tree), cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tree", action="append", type=Path, default=None)
    ap.add_argument("--args", default="", help="extra arguments of the estimate (e.g. '--sms 1')")
    a = ap.parse_args()
    trees = [t.resolve() for t in (a.tree or [ROOT])]
    args = a.args.split()
    for t in trees:
        estimate_s(t, args)                     # numba's cache filled, files in the page cache
    imp = {t: [] for t in trees}
    wall = {t: [] for t in trees}
    est = {t: [] for t in trees}
    for _ in range(a.rounds):
        for t in trees:
            us, w = import_us(t)
            imp[t].append(us)
            wall[t].append(w)
            est[t].append(estimate_s(t, args))
    print(f"{a.rounds} rounds, medians (min-max)")
    print(f"{'checkout':<40} {'import teg.cli ms':>22} {'import process s':>20} {'warm estimate s':>20}")
    for t in trees:
        def cell(xs, scale=1.0, fmt="{:.3f}"):
            return f"{fmt.format(statistics.median(xs) * scale)} ({fmt.format(min(xs) * scale)}-" \
                   f"{fmt.format(max(xs) * scale)})"
        print(f"{str(t):<40} {cell(imp[t], 1e-3, '{:.0f}'):>22} {cell(wall[t]):>20} {cell(est[t]):>20}")


if __name__ == "__main__":
    main()
