"""Fuzz campaign: thousands of damaged inputs of every kind teg reads, each run as a ``teg``
command, counted by outcome (benchmarks/fuzz_cases.py has the corpus, mutations and runner); and
scenarios around the engine — concurrency, signals, caches, odd paths, FIFOs, devices, symlinks,
memory caps (benchmarks/fuzz_scenarios.py) — counted the same way.

    python3 benchmarks/fuzz_campaign.py                 # 500 cases of each kind, seed 1
    python3 benchmarks/fuzz_campaign.py --count 2000 --seed 7 --kinds sass,native --show 20
    python3 benchmarks/fuzz_campaign.py --kinds none --scenarios 40     # 40 scenarios of each class

Prints one row per input kind — cases, ``ok`` / ``error`` / ``unknown`` (clean outcomes) and
``traceback`` / ``bad-exit`` / ``timeout`` / ``crash`` (failures) — and one row per scenario class
— ``ok`` / ``refused`` (clean) and ``data-loss`` / ``stale`` / ``traceback`` / ``hang`` / ``leak`` /
``crash`` (failures) — then the first failures with their case names, so that each can be replayed
(``--only NAME-PREFIX``, ``--classes``). Exit status 1 when any case failed.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _fuzz_cases():
    spec = importlib.util.spec_from_file_location("teg_fuzz_cases", HERE / "fuzz_cases.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _fuzz_scenarios():
    spec = importlib.util.spec_from_file_location("teg_fuzz_scenarios", HERE / "fuzz_scenarios.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def scenario_table(fs, outcomes, classes) -> list[str]:
    cols = fs.CLEAN + fs.FAILURES
    lines = [f"{'class':<12}{'cases':>7}" + "".join(f"{c:>11}" for c in cols) + f"{'max s':>8}"]
    total = collections.Counter()
    for cls in classes:
        rows = [o for o in outcomes if o.cls == cls]
        cnt = collections.Counter(o.outcome for o in rows)
        total.update(cnt)
        lines.append(f"{cls:<12}{len(rows):>7}" + "".join(f"{cnt[c]:>11}" for c in cols)
                     + f"{max((o.seconds for o in rows), default=0.0):>8.1f}")
    lines.append(f"{'all':<12}{sum(total.values()):>7}" + "".join(f"{total[c]:>11}" for c in cols))
    return lines


def _mutation_table(fc, kinds, outcomes, cols, args, warm, secs) -> None:
    print(f"teg fuzz campaign: seed {args.seed}, {args.count} cases per kind, warm-up {warm:.0f} s, "
          f"cases {secs:.0f} s")
    print(f"{'kind':<10}{'cases':>7}" + "".join(f"{c:>11}" for c in cols) + f"{'max s':>8}")
    total = collections.Counter()
    for kind in kinds:
        rows = [o for o in outcomes if o.kind == kind]
        cnt = collections.Counter(o.outcome for o in rows)
        total.update(cnt)
        slowest = max((o.seconds for o in rows), default=0.0)
        print(f"{kind:<10}{len(rows):>7}" + "".join(f"{cnt[c]:>11}" for c in cols) + f"{slowest:>8.1f}")
    print(f"{'all':<10}{sum(total.values()):>7}" + "".join(f"{total[c]:>11}" for c in cols))
    for o in sorted(outcomes, key=lambda o: -o.seconds)[:3]:
        print(f"  slow: {o.seconds:.1f} s {o.outcome}: {o.name}")


def main(argv=None) -> int:
    fc = _fuzz_cases()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=500, help="cases per input kind")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(fc.KINDS), help="comma-separated input kinds")
    ap.add_argument("--show", type=int, default=10, help="failures to list")
    ap.add_argument("--only", default=None, help="run only the cases whose name starts with this")
    ap.add_argument("--scenarios", type=int, default=0, help="scenarios of each class (concurrency, signals, …)")
    ap.add_argument("--classes", default=None, help="comma-separated scenario classes (default: all)")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k and k != "none"]
    t0 = time.monotonic()
    if kinds:
        fc.warm_up()
    warm = time.monotonic() - t0
    outcomes = []
    for kind in kinds:
        batch = fc.cases(kind, args.seed, args.count)
        if args.only:
            batch = [c for c in batch if c.name.startswith(args.only)]
        outcomes += fc.run_cases(batch)
    cols = fc.CLEAN + fc.FAILURES
    if kinds:
        _mutation_table(fc, kinds, outcomes, cols, args, warm, time.monotonic() - t0 - warm)
    failed = [o for o in outcomes if o.outcome in fc.FAILURES]
    for o in failed[:args.show]:
        print(f"  {o.outcome}: {o.name}\n      {o.detail}")
    if args.scenarios:
        fs = _fuzz_scenarios()
        classes = [c for c in (args.classes or ",".join(fs.CLASSES)).split(",") if c]
        t1 = time.monotonic()
        found = fs.run_scenarios(classes, args.seed, args.scenarios)
        print(f"teg scenario campaign: seed {args.seed}, {args.scenarios} scenarios per class, "
              f"{time.monotonic() - t1:.0f} s")
        print("\n".join(scenario_table(fs, found, classes)))
        bad = [o for o in found if o.outcome in fs.FAILURES]
        for o in bad[:args.show]:
            print(f"  {o.outcome}: {o.name}\n      {o.detail}")
        failed += bad
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
