"""What a launch costs beyond its SMs' work, read from Nsight Compute: per launch, the kernel's
cycles (``gpc__cycles_elapsed.max``) minus the average active cycles of the SMs it used
(``sm__cycles_active.avg`` × SMs / SMs used, SMs used = min(SMs, blocks)):

    X = GPU active − SM active × num_sms / min(num_sms, blocks)

For a launch of one block that is exactly the launch and drain (``kernel_launch_cycles`` was
measured so on one row per GPU); for a launch over many SMs it adds how much later the last SM
ends than the average one (load imbalance, a partial last wave, SMs that start or run at
different speeds). Beside it, teg's own X from an apps-family CSV of the same GPU (columns
``predicted`` and ``sm_active_ratio``; the rows of sampled launches, ``sampled_sms`` set, are left
out: their ratio is over the sampled SMs), and the gap measured − teg. Printed per distinct launch
(application, kernel, blocks, threads; identical launches pooled: their count, the median and the
standard deviation of the measured X, and the busy SMs' average active cycles, measured and
teg's: teg's error is (SM teg − SM meas) − gap), then the medians by the SMs a launch uses (one,
some, all; blocks per SM used below or above 2).

    PYTHONPATH=. python3 benchmarks/accuracy/launch_drain.py [--gpu gv100|h200] [--teg APPS.csv]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
MACHINE = {"gv100": "quadro_gv100", "h200": "h200"}


def excess(cycles: float, ratio: float, num_sms: int, blocks: int) -> float:
    """GPU active cycles minus the average active cycles of the SMs a launch of ``blocks`` used
    (``ratio`` = average SM active over every SM / GPU active)."""
    return cycles * (1.0 - ratio * num_sms / min(num_sms, blocks))


def teg_rows(path: Path) -> dict[str, dict]:
    """``point`` → (predicted cycles, SM-active ratio) of an apps-family CSV's whole-GPU rows."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("failure") or r.get("sampled_sms") or not r.get("sm_active_ratio") or not r.get("predicted"):
                continue
            out[r["point"]] = {"predicted": float(r["predicted"]), "ratio": float(r["sm_active_ratio"])}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", choices=sorted(MACHINE), default="gv100")
    ap.add_argument("--teg", type=Path, help="an apps-family CSV of this GPU (run.py --csv)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import appfamily
    from teg.machine import load

    M = load(MACHINE[args.gpu]).num_sms
    rows = appfamily.measured_rows(args.gpu, HERE / "measured", appfamily.manifests())
    teg = teg_rows(args.teg) if args.teg else {}
    groups: dict[tuple, list] = defaultdict(list)
    for r in rows:
        if r["sm_active_ratio"] is None:
            continue
        G = r["grid"][0] * r["grid"][1] * r["grid"][2]
        T = r["block"][0] * r["block"][1] * r["block"][2]
        xm = excess(r["cycles"], r["sm_active_ratio"], M, G)
        t = teg.get(f"{r['app']}#{r['launch']} {r['kernel']}")
        xt = excess(t["predicted"], t["ratio"], M, G) if t else None
        groups[(r["app"], r["kernel"], G, T)].append((xm, xt, r["cycles"] - xm,
                                                      t["predicted"] - xt if t else None))
    med = statistics.median
    print(f"{args.gpu}: X = GPU active - average active cycles of the SMs used ({M} SMs); n launches pooled")
    print(f"{'launch':34s} {'n':>3s} {'blocks':>6s} {'thr':>5s} {'SMs':>4s} {'blk/SM':>6s} "
          f"{'X meas':>7s} {'sd':>5s} {'X teg':>7s} {'gap':>6s} {'SM meas':>9s} {'SM teg':>9s}")
    classes: dict[str, list] = defaultdict(list)
    for (app, kernel, G, T), v in groups.items():
        xm = [a for a, _, _, _ in v]
        gaps = [a - b for a, b, _, _ in v if b is not None]
        xt = [b for _, b, _, _ in v if b is not None]
        sm_m = med([c for _, _, c, _ in v])
        sm_t = [d for _, _, _, d in v if d is not None]
        busy = min(M, G)
        sd = statistics.stdev(xm) if len(xm) > 1 else float("nan")
        print(f"{(app + ' ' + kernel)[:34]:34s} {len(v):3d} {G:6d} {T:5d} {busy:4d} {G / busy:6.2f} "
              f"{med(xm):7.0f} {sd:5.0f} {(med(xt) if xt else float('nan')):7.0f} "
              f"{(med(gaps) if gaps else float('nan')):6.0f} {sm_m:9.0f} {(med(sm_t) if sm_t else float('nan')):9.0f}")
        cls = ("1 SM" if busy == 1 else f"2-{M - 1} SMs" if busy < M else
               f"all SMs, < 2 blocks/SM" if G < 2 * M else "all SMs, >= 2 blocks/SM")
        classes[cls].extend((a, None if b is None else a - b) for a, b, _, _ in v)
    print(f"\n{'SMs used':28s} {'launches':>8s} {'X meas':>7s} {'gap':>6s}   (medians over launches)")
    for cls in ("1 SM", f"2-{M - 1} SMs", "all SMs, < 2 blocks/SM", "all SMs, >= 2 blocks/SM"):
        v = classes.get(cls, [])
        if not v:
            continue
        gaps = [g for _, g in v if g is not None]
        print(f"{cls:28s} {len(v):8d} {med([a for a, _ in v]):7.0f} {(med(gaps) if gaps else float('nan')):6.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
