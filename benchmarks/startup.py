"""Start-up of ``teg estimate`` on the bundled example: the cold run (numba compiling teg's jitted
code into an empty cache) and the warm run (loading it from the cache).

Each run is a fresh interpreter running the command line of this checkout (``python -c 'from
teg.cli import main; main()' estimate``) with ``NUMBA_CACHE_DIR`` pointed at a temporary folder:
empty for a cold run, filled by that cold run for the warm ones. A cold run prints its CPU
seconds (user + system of the child, which is what compiling costs on a shared machine; the wall
time follows the other tenants) and, from numba's compile events (``numba.core.event``), the CPU
seconds spent inside top-level compilations and the count of functions compiled. The warm runs
give wall and CPU time, median of ``--warm`` runs, alternating three variants: teg's loader
(:class:`teg.jit._LoadOnlyCache`, whose libraries parse their LLVM bitcode only when needed:
:class:`teg.jit._CachedLibrary`), the same parsing every library's bitcode at load as numba does
(``TEG_EAGER_BITCODE=1``), and that with numba's own first step of a cache load,
``target_context.refresh()`` (importing every lowering and typing registry of numba), run before
the command. A checked warm run then counts what it did: functions compiled (0: all came from the
cache), functions loaded from the cache, modules imported, and whether numba's registries
(``numba.np.arraymath``) and ``scipy.linalg`` were imported.

``--variants`` compares teg's link-only helpers (:mod:`teg.jit`, the default) with numba's own
finalization of every helper (``TEG_NO_LINKONLY=1``): the cold runs of the two alternate, so the
machine's drift falls on both.

``--floor`` measures what any warm run pays before teg's own code, in fresh interpreters
alternating with the warm estimate: the interpreter alone (``python -c pass``), ``import numpy``,
``import numpy, numba``, and that with numba's CPU target made (``cpu_target.target_context``:
the codegen, LLVM's initialisation, the execution engine, which the first cache load needs).

    python benchmarks/startup.py [--cold 1] [--warm 7] [--variants] [--floor]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
from numba.core import event
depth = [0]
acc = {"compile_cpu": 0.0, "compiled": 0}
class _L(event.Listener):
    def on_start(self, ev):
        if depth[0] == 0:
            acc["t0"] = time.process_time()
        depth[0] += 1
        acc["compiled"] += 1
    def on_end(self, ev):
        depth[0] -= 1
        if depth[0] == 0:
            acc["compile_cpu"] += time.process_time() - acc.pop("t0")
event.register("numba:compile", _L())
from teg.cli import main
try:
    main(args=["estimate"], standalone_mode=False)
except SystemExit as e:
    if e.code:
        raise
acc["modules"] = len(sys.modules)
acc["registries"] = "numba.np.arraymath" in sys.modules
acc["scipy_linalg"] = "scipy.linalg" in sys.modules
import gc
from numba.core.dispatcher import Dispatcher
acc["loaded"] = sum(sum(o.stats.cache_hits.values()) for o in gc.get_objects() if isinstance(o, Dispatcher))
sys.stderr.write("STARTUP " + json.dumps(acc) + "\n")
"""

PLAIN = "from teg.cli import main; main(args=['estimate'])"
FLOOR = {"floor: python -c pass": "pass", "floor: import numpy": "import numpy",
         "floor: import numpy, numba": "import numpy, numba",
         "floor: import numpy, numba + numba's CPU target":
             "import numpy, numba; from numba.core.registry import cpu_target; cpu_target.target_context"}
# numba's own cache load starts with this (numba.core.caching.FunctionCache.load_overload)
REFRESH = "from numba.core.registry import cpu_target; cpu_target.target_context.refresh(); " + PLAIN


def run_child(code: str, cache_dir: str, extra_env: dict | None = None) -> dict:
    """One interpreter running ``code``; its wall and CPU seconds, and what it reported."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=ROOT, TEG_COMPILE_NOTICE="0")
    # Python's bytecode cache on, as after an install: with PYTHONDONTWRITEBYTECODE set, every run
    # would compile teg's ~80 modules from source again
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("TEG_NO_LINKONLY", None)
    env.pop("TEG_EAGER_BITCODE", None)
    env.update(extra_env or {})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"startup.py: the child failed ({p.returncode}):\n{p.stderr[-2000:]}")
    out = {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}
    for line in p.stderr.splitlines():
        if line.startswith("STARTUP "):
            out.update(json.loads(line[len("STARTUP "):]))
    return out


def machine() -> str:
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    import numba
    import numpy
    return (f"{model}, {os.cpu_count()} CPUs, load average {load:.1f}; Python {platform.python_version()}, "
            f"numpy {numpy.__version__}, numba {numba.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", type=int, default=1, help="cold runs (each in a fresh cache)")
    ap.add_argument("--warm", type=int, default=7, help="warm runs after the first cold one")
    ap.add_argument("--variants", action="store_true",
                    help="also cold runs with TEG_NO_LINKONLY=1 (numba finalizing every helper), alternating")
    ap.add_argument("--floor", action="store_true",
                    help="also time the interpreter, numpy's and numba's imports alone (the floor of a warm run)")
    args = ap.parse_args()
    print("machine:", machine())
    variants = [("link-only helpers", {})]
    if args.variants:
        variants.append(("TEG_NO_LINKONLY=1", {"TEG_NO_LINKONLY": "1"}))
    colds: dict[str, list[dict]] = {name: [] for name, _ in variants}
    warm_dir = None
    with tempfile.TemporaryDirectory(prefix="teg-startup-") as top:
        for i in range(args.cold):
            for name, env in variants:
                d = tempfile.mkdtemp(dir=top)
                colds[name].append(run_child(CHILD, d, env))
                if warm_dir is None and not env:
                    warm_dir = d
        for name, runs in colds.items():
            for r in runs:
                print(f"cold ({name}): CPU {r['cpu']:.1f} s (of which compiling {r['compile_cpu']:.1f} s, "
                      f"{r['compiled']} functions compiled), wall {r['wall']:.1f} s")
        warm = {"teg's loader": [], "teg's loader, bitcode parsed at load": [], "numba's refresh first": []}
        floor = FLOOR if args.floor else {}
        warm.update({name: [] for name in floor})
        for _ in range(args.warm):       # the variants (and the floor's parts) alternate
            warm["teg's loader"].append(run_child(PLAIN, warm_dir))
            warm["teg's loader, bitcode parsed at load"].append(run_child(PLAIN, warm_dir, {"TEG_EAGER_BITCODE": "1"}))
            warm["numba's refresh first"].append(run_child(REFRESH, warm_dir, {"TEG_EAGER_BITCODE": "1"}))
            for name, code in floor.items():
                warm[name].append(run_child(code, warm_dir))
        for name, runs in warm.items():
            walls = sorted(r["wall"] for r in runs)
            cpus = sorted(r["cpu"] for r in runs)
            print(f"warm ({name}): wall median {statistics.median(walls):.3f} s (min {walls[0]:.3f}, max "
                  f"{walls[-1]:.3f}), CPU median {statistics.median(cpus):.3f} s (min {cpus[0]:.3f}) over {len(runs)} runs")
        check = run_child(CHILD, warm_dir)
        print(f"warm run: {check['compiled']} functions compiled (0: everything came from the cache), "
              f"{check['loaded']} loaded from the cache, {check['modules']} modules imported; numba's registries "
              f"{'imported' if check['registries'] else 'not imported'}, scipy.linalg "
              f"{'imported' if check['scipy_linalg'] else 'not imported'}")

if __name__ == "__main__":
    main()
