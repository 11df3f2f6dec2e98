"""Cold and warm start of ``teg estimate`` as a new user meets it: a fresh clone of this checkout's
commit in a new virtual environment, installed with the README's Quickstart command
(``python3 -m pip install . && teg estimate``).

Steps, each timed (wall, and the CPU seconds of the child: user + system):

1. ``git clone`` of this repository's ``HEAD`` into ``--dest`` (default a temporary folder);
2. ``python3 -m venv .venv`` there (``--system-site-packages`` with ``--system``: the packages of
   the interpreter running this script, when the machine cannot reach a package index);
3. ``python -m pip install .`` in the venv (pip as configured on the machine: its index, or the
   ``--find-links`` / ``--no-index`` given with ``--pip-args``);
4. ``teg estimate`` (the console script in the venv) with numba's cache empty: numba writes it
   beside the installed modules in the venv's ``site-packages``, so a new venv starts cold
   (``NUMBA_CACHE_DIR`` is removed from the environment);
5. ``teg estimate`` again, ``--warm`` times (default 5): wall and CPU, median and minimum.

The two estimates' outputs must match. Prints the machine (CPU model, cores, load average),
Python, numpy and numba versions.

    python benchmarks/fresh_start.py [--warm 5] [--system] [--pip-args "--no-index --find-links DIR"] [--dest DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    """Run ``cmd``; its wall and CPU seconds (children's user + system) and its stdout. A failure
    ends the benchmark with the command's output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"fresh_start.py: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.stdout


def machine() -> str:
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warm", type=int, default=5, help="warm estimates after the cold one")
    ap.add_argument("--system", action="store_true", help="venv with --system-site-packages")
    ap.add_argument("--pip-args", default="", help="extra arguments of pip install (e.g. --no-index --find-links DIR)")
    ap.add_argument("--dest", help="clone here (must not exist); default a temporary folder, removed after")
    args = ap.parse_args()
    print("machine:", machine())
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV")}
    with tempfile.TemporaryDirectory(prefix="teg-fresh-") as tmp:
        dest = Path(args.dest) if args.dest else Path(tmp) / "teg"
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        w, c, _ = timed(["git", "clone", "-q", str(ROOT), str(dest)], ROOT, env)
        subprocess.run(["git", "checkout", "-q", commit], cwd=dest, check=True)
        print(f"clone of {commit}: {w:.1f} s wall")
        venv = [sys.executable, "-m", "venv"] + (["--system-site-packages"] if args.system else []) + [".venv"]
        w, c, _ = timed(venv, dest, env)
        print(f"{' '.join(venv[1:])}: {w:.1f} s wall, {c:.1f} CPU-s")
        bindir = dest / ".venv" / "bin"
        venv_env = dict(env, VIRTUAL_ENV=str(dest / ".venv"), PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}")
        pip = [str(bindir / "python3"), "-m", "pip", "install", "-q", *shlex.split(args.pip_args), "."]
        w_pip, c_pip, _ = timed(pip, dest, venv_env)
        print(f"pip install . : {w_pip:.1f} s wall, {c_pip:.1f} CPU-s")
        versions = subprocess.run([str(bindir / "python3"), "-c", "import platform, numpy, numba; "
                                   "print(platform.python_version(), numpy.__version__, numba.__version__)"],
                                  cwd=dest, env=venv_env, capture_output=True, text=True, check=True).stdout.split()
        print(f"venv: Python {versions[0]}, numpy {versions[1]}, numba {versions[2]}")
        teg = [str(bindir / "teg"), "estimate"]
        w_cold, c_cold, out_cold = timed(teg, dest, venv_env)
        print(f"cold teg estimate (numba's cache empty): {w_cold:.1f} s wall, {c_cold:.1f} CPU-s "
              f"(load average now {os.getloadavg()[0]:.1f})")
        print(f"README command (pip install . && teg estimate): {w_pip + w_cold:.1f} s wall, "
              f"{c_pip + c_cold:.1f} CPU-s")
        walls, cpus = [], []
        for _ in range(args.warm):
            w, c, out = timed(teg, dest, venv_env)
            if out != out_cold:
                sys.exit("fresh_start.py: a warm estimate printed something else than the cold one")
            walls.append(w)
            cpus.append(c)
        if walls:
            print(f"warm teg estimate x{len(walls)}: wall median {statistics.median(walls):.3f} s (min {min(walls):.3f}), "
                  f"CPU median {statistics.median(cpus):.3f} s (min {min(cpus):.3f}); load average now "
                  f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
