"""Fuzz campaign: thousands of damaged inputs of every kind teg reads, each run as a ``teg``
command, counted by outcome (benchmarks/fuzz_cases.py has the corpus, mutations and runner).

    python3 benchmarks/fuzz_campaign.py                 # 500 cases of each kind, seed 1
    python3 benchmarks/fuzz_campaign.py --count 2000 --seed 7 --kinds sass,native --show 20

Prints one row per input kind — cases, ``ok`` / ``error`` / ``unknown`` (clean outcomes) and
``traceback`` / ``bad-exit`` / ``timeout`` / ``crash`` (failures) — then the first failures with
their case names, so that each can be replayed (``--only NAME-PREFIX``). Exit status 1 when any case
failed.
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


def main(argv=None) -> int:
    fc = _fuzz_cases()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=500, help="cases per input kind")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(fc.KINDS), help="comma-separated input kinds")
    ap.add_argument("--show", type=int, default=10, help="failures to list")
    ap.add_argument("--only", default=None, help="run only the cases whose name starts with this")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    t0 = time.monotonic()
    fc.warm_up()
    warm = time.monotonic() - t0
    outcomes = []
    for kind in kinds:
        batch = fc.cases(kind, args.seed, args.count)
        if args.only:
            batch = [c for c in batch if c.name.startswith(args.only)]
        outcomes += fc.run_cases(batch)
    cols = fc.CLEAN + fc.FAILURES
    print(f"teg fuzz campaign: seed {args.seed}, {args.count} cases per kind, warm-up {warm:.0f} s, "
          f"cases {time.monotonic() - t0 - warm:.0f} s")
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
    failed = [o for o in outcomes if o.outcome in fc.FAILURES]
    for o in failed[:args.show]:
        print(f"  {o.outcome}: {o.name}\n      {o.detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
