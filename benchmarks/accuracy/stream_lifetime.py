"""How long a block lives in gpu-stream's steady state, measured and teg's: the stream family's
bandwidths turned back into time per block.

gpu-stream pins exactly 2 blocks per SM (measured/README.md) and every thread moves one double per
stream, so in the steady state each SM retires 2 blocks of ``bs`` threads every *block lifetime*

    L = 2 · bs · streams · 8 B · SMs / bandwidth · clock      (cycles)

— the time from a block taking its slot to the next block taking it: the turnaround, the loads'
latency, the stores, the exit. Below the DRAM's peak (32–256 threads) L is latency, not
bandwidth, and the difference of two kernels at the same block size is what one kernel's extra
traffic costs a block: ``scale`` − ``read`` (a store after the load), ``triad`` − ``scale`` (a
second load). Printed per GPU and block size: L measured / teg and, per mixed kernel, its extra
over ``read`` measured / teg (teg's cycles from the family itself, ``run.predict_stream``, or from
a family CSV written by ``run.py --csv``, column ``predicted``, with ``--csv``).

    PYTHONPATH=. python3 benchmarks/accuracy/stream_lifetime.py [--gpu a100_40,h100_pcie] [--csv MICRO.csv]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import run  # noqa: E402  (the family's points, machines and predictor)

BLOCKS_PER_SM = 2               # gpu-stream's pinned occupancy (run.STREAM_CARVEOUT_PCT)
KERNELS = ("read", "init", "scale", "triad", "1pt", "3pt")


def lifetime(gbps: float, block: int, streams: int, sms: int, clock_mhz: float) -> float:
    """Cycles between two blocks taking the same slot, from a steady-state bandwidth (GB/s)."""
    return BLOCKS_PER_SM * block * streams * 8 * sms / (gbps * 1e9) * clock_mhz * 1e6


def teg_bandwidths(gpus, csv_path: Path | None) -> dict:
    """(gpu, kernel, block) -> teg's GB/s: from a family CSV, else predicted now."""
    out = {}
    if csv_path is not None:
        with open(csv_path, newline="") as f:
            for r in csv.DictReader(f):
                if r["family"] == "stream" and r["gpu"] in gpus and r["predicted"]:
                    k, bs = r["point"].split(" bs=")
                    out[(r["gpu"], k, int(bs))] = float(r["predicted"])
        return out
    for p in run.stream_points(gpus, quick=False):
        out[(p.gpu, p.params["kernel"], p.params["block"])] = run.predict_stream(p)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", default="a100_40,a100_80,h100_pcie")
    ap.add_argument("--csv", type=Path, help="a run.py --csv file to take teg's bandwidths from")
    a = ap.parse_args(argv)
    gpus = a.gpu.split(",")
    measured = {(r["gpu"], r["kernel"], int(r["block_size"])): float(r["GBps"])
                for r in run._read("stream_bandwidth.csv")}
    teg = teg_bandwidths(gpus, a.csv)
    for gpu in gpus:
        m = run.machine(run.GPUS[gpu][0])
        print(f"\n{gpu}: {m.num_sms} SMs at {m.clock_mhz:g} MHz; block lifetime in cycles, measured / teg"
              " (extra over read: measured / teg)")
        print("threads  " + "  ".join(f"{k:>24}" for k in KERNELS))
        for bs in run.STREAM_BLOCKS_FULL:
            cells, base = [], None
            for k in KERNELS:
                key = (gpu, k, bs)
                if key not in measured or key not in teg:
                    cells.append(f"{'-':>24}")
                    continue
                st = run.STREAM_KERNELS[k][1]
                lm = lifetime(measured[key], bs, st, m.num_sms, m.clock_mhz)
                lt = lifetime(teg[key], bs, st, m.num_sms, m.clock_mhz)
                if k == "read":
                    base = (lm, lt)
                cell = f"{lm:5.0f}/{lt:5.0f}"
                if k not in ("read", "init") and base is not None:
                    cell += f" ({lm - base[0]:+4.0f}/{lt - base[1]:+4.0f})"
                cells.append(f"{cell:>24}")
            print(f"{bs:>7}  " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
