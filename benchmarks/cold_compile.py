"""Where a cold ``teg estimate`` spends its CPU time: numba compiling teg's jitted code into an empty
cache, per function and per compiler step.

Each run is a fresh interpreter running ``teg estimate`` on the bundled example with
``NUMBA_CACHE_DIR`` pointed at an empty folder. It listens to numba's events
(``numba.core.event``): ``numba:compile`` gives every compilation (function and argument types)
and its CPU seconds, exclusive of the compilations nested in it (a callee is compiled while its
caller is typed); ``numba:run_pass`` the seconds of each of numba's compiler passes (bytecode,
type inference, lowering to LLVM IR: the front end), and timers around numba's three LLVM steps
(``CPUCodeLibrary._optimize_functions``: the function passes run on each function's IR as it is
added; ``_optimize_final_module``: the module passes over a library with its callees linked in;
``_finalize_final_module``: the machine code) the back end, those subtracted from the pass that
ran them. Printed: CPU seconds in all (user + system of the child), the front end by pass, the
back end by step and by top-level entry, the functions compiled more than once (each signature),
and the ``--top`` functions by exclusive CPU.

``--variant NAME=VAR=VALUE[,VAR=VALUE]`` adds runs with environment variables set (e.g.
``--variant O1=NUMBA_OPT=1``); with ``--rounds N`` each variant runs N times, the variants
alternating, so the machine's drift falls on all; their estimates must print the same.

    python benchmarks/cold_compile.py [--rounds 1] [--top 25] [--variant NAME=VAR=VALUE ...]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import collections, json, sys, time
from numba.core import codegen, event
stack, rows, passes, back = [], [], collections.Counter(), collections.Counter()
pstack = []

class Compiles(event.Listener):
    def on_start(self, ev):
        disp = (ev.data or {}).get("dispatcher")
        f = getattr(disp, "py_func", None)
        name = f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', disp)}"
        stack.append([name, str((ev.data or {}).get("args")), time.process_time(), 0.0, len(stack)])
    def on_end(self, ev):
        name, args, t0, inner, depth = stack.pop()
        incl = time.process_time() - t0
        rows.append((name, args, incl, incl - inner, depth))
        if stack:
            stack[-1][3] += incl

class Passes(event.Listener):
    def on_start(self, ev):
        pstack.append([ev.data["name"].split(" [")[0], time.process_time(), 0.0])
    def on_end(self, ev):
        name, t0, inner = pstack.pop()
        incl = time.process_time() - t0
        passes[name] += incl - inner
        if pstack:
            pstack[-1][2] += incl

def timed(cls, meth, step):
    orig = getattr(cls, meth)
    def wrapper(self, *a, **k):
        t0 = time.process_time()
        try:
            return orig(self, *a, **k)
        finally:
            dt = time.process_time() - t0
            back[step] += dt
            back[(step, stack[0][0] if stack else "?")] += dt
            if pstack:
                pstack[-1][2] += dt
    setattr(cls, meth, wrapper)

event.register("numba:compile", Compiles())
event.register("numba:run_pass", Passes())
timed(codegen.CPUCodeLibrary, "_optimize_functions", "function passes")
timed(codegen.CPUCodeLibrary, "_optimize_final_module", "module passes")
timed(codegen.CPUCodeLibrary, "_finalize_final_module", "machine code")
from teg.cli import main
try:
    main(args=["estimate"], standalone_mode=False)
except SystemExit as e:
    if e.code:
        raise
by_entry = collections.Counter()
for k, v in back.items():
    if isinstance(k, tuple):
        by_entry[k[1]] += v
sys.stderr.write("COLD " + json.dumps({"rows": rows, "passes": passes,
                                       "back": {k: v for k, v in back.items() if isinstance(k, str)},
                                       "back_by_entry": by_entry}) + "\n")
"""


def run_cold(extra_env: dict) -> dict:
    """One cold estimate in a fresh interpreter and an empty cache: CPU seconds, output, events."""
    with tempfile.TemporaryDirectory(prefix="teg-cold-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=ROOT, TEG_COMPILE_NOTICE="0", **extra_env)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"cold_compile.py: the child failed ({p.returncode}):\n{p.stderr[-3000:]}")
    out = next(json.loads(ln[5:]) for ln in p.stderr.splitlines() if ln.startswith("COLD "))
    out["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out["stdout"] = p.stdout
    return out


def report(name: str, runs: list[dict], top: int) -> None:
    cpus = [r["cpu"] for r in runs]
    r = runs[0]
    rows = r["rows"]
    front = sum(r["passes"].values())
    back = sum(r["back"].values())
    print(f"\n== {name}: CPU {statistics.median(cpus):.1f} s median of {len(cpus)} "
          f"({', '.join(f'{c:.1f}' for c in cpus)}); first run below: {len(rows)} compilations of "
          f"{len({x[0] for x in rows})} functions, {sum(1 for x in rows if x[4] == 0)} top-level")
    print(f"front end (numba's passes) {front:.1f} s: " + ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(r["passes"].items(), key=lambda kv: -kv[1])[:6]))
    print(f"back end (LLVM) {back:.1f} s: " + ", ".join(f"{k} {v:.1f}" for k, v in r["back"].items()))
    print("back end by top-level entry: " + ", ".join(
        f"{k.split('.')[-1]} {v:.1f}" for k, v in sorted(r["back_by_entry"].items(), key=lambda kv: -kv[1])))
    print("top-level compilations (inclusive CPU s): " + ", ".join(
        f"{x[0].split('.')[-1]} {x[2]:.1f}" for x in rows if x[4] == 0))
    agg = collections.defaultdict(list)
    for fn, args, _incl, excl, _depth in rows:
        agg[fn].append((args, excl))
    twice = {fn: v for fn, v in agg.items() if len(v) > 1}
    print(f"compiled more than once: {len(twice)} functions, {sum(len(v) for v in twice.values())} compilations, "
          f"{sum(e for v in twice.values() for _, e in v):.1f} s")
    for fn, v in sorted(twice.items(), key=lambda kv: -sum(e for _, e in kv[1])):
        sigs = collections.Counter(a for a, _ in v)
        print(f"  {sum(e for _, e in v):5.2f} s  {fn}: {len(v)}x, {len(sigs)} signatures"
              + ("" if len(sigs) == len(v) else " (the same signature compiled again)"))
    print(f"top {top} functions by exclusive CPU s (front end + their LLVM steps; compilations):")
    for fn, v in sorted(agg.items(), key=lambda kv: -sum(e for _, e in kv[1]))[:top]:
        print(f"  {sum(e for _, e in v):5.2f}  {len(v)}  {fn}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=VAR=VALUE[,VAR=VALUE]")
    args = ap.parse_args()
    variants = {"default": {}}
    for v in args.variant:
        name, _, spec = v.partition("=")
        variants[name] = dict(kv.split("=", 1) for kv in spec.split(","))
    import numba
    import numpy
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; Python "
          f"{platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}")
    runs = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, env in variants.items():
            runs[name].append(run_cold(env))
    outs = {r["stdout"] for rs in runs.values() for r in rs}
    print(f"estimates printed: {'the same in every run' if len(outs) == 1 else 'DIFFERENT'}; "
          f"load average now {os.getloadavg()[0]:.1f}")
    for name, rs in runs.items():
        report(name + (f" ({variants[name]})" if variants[name] else ""), rs, args.top)
    if len(outs) != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
