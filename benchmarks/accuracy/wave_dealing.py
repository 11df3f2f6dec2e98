"""How the GPU deals the blocks of a launch of more than one wave, read from Nsight Compute: the
ratio of the average SM's active cycles to the GPU's (``ncu_sm_active_cycles`` /
``ncu_gpu_active_cycles`` of ``measured/hyfiss_gv100_apps.csv``) against what each sampling rule
of ``teg/engine/dealing.py`` predicts, an SM's time being proportional to its waves:
``mean(waves per SM) / max(waves per SM)``. ``waves`` concentrates a partial last wave on the
lowest SMs (3mm: 48 SMs run two waves, 32 one: 0.800); ``round-robin`` spreads it (every SM two
waves: 1.000).

Resident blocks per SM come from teg's occupancy of each kernel's sm_75 build (registers and
shared memory as ptxas reports them; the project's own ``apps/*.cu`` with each manifest's flags).
Prints one line per distinct multi-wave launch (grid > SMs x resident blocks). Needs nvcc.

    PYTHONPATH=. python3 benchmarks/accuracy/wave_dealing.py
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ENTRY = re.compile(r"Compiling entry function '(\S+)'")
USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def kernel_resources(manifest, out: Path) -> dict[str, tuple[int, int]]:
    """Mangled kernel name → (registers per thread, static shared bytes) from ``ptxas -v``."""
    cmd = ["nvcc", "-O3", "-arch=sm_75", "-cubin", "-Xptxas", "-v", *manifest.nvcc_flags,
           "-o", str(out / f"{manifest.name}.cubin"), str(manifest.source)]
    text = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    res, entry = {}, None
    for line in text.splitlines():
        if (m := ENTRY.search(line)):
            entry = m.group(1)
        elif entry and (m := USED.search(line)):
            res[entry] = (int(m.group(1)), int(m.group(2) or 0))
            entry = None
    return res


def plain_name(mangled: str) -> str:
    """``_Z4Fan2PfS_S_iii`` → ``Fan2`` (an unmangled name as it is)."""
    m = re.match(r"_Z(\d+)", mangled)
    return mangled[m.end():m.end() + int(m.group(1))] if m else mangled


def main() -> int:
    sys.path.insert(0, str(HERE))
    import appfamily
    from teg.engine.dealing import block_sms
    from teg.engine.occupancy import occupancy
    from teg.machine import load

    machine = load("quadro_gv100")
    M = machine.num_sms
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for m in appfamily.manifests().values():
            for k, v in kernel_resources(m, Path(tmp)).items():
                res[k] = res[plain_name(k)] = v
    print(f"{'launch':36s} {'G':>6s} {'R':>3s} {'waves':>6s} {'measured':>9s} {'waves rule':>10s} {'round-robin':>11s}")
    seen = set()
    with open(HERE / "measured" / "hyfiss_gv100_apps.csv", newline="") as f:
        for r in csv.DictReader(f):
            rk = res.get(r["mangled"]) or res.get(r["kernel"])
            if rk is None:
                continue
            G = int(np.prod([int(x) for x in r["grid"].split("x")]))
            threads = int(np.prod([int(x) for x in r["block"].split("x")]))
            R = occupancy(machine, threads, rk[0], rk[1]).blocks
            key = (r["app"], r["kernel"], G, threads)
            if G <= M * R or key in seen:
                continue
            seen.add(key)
            measured = float(r["ncu_sm_active_cycles"]) / float(r["ncu_gpu_active_cycles"])
            pred = []
            for rule in ("waves", "round-robin"):
                w = np.ceil(np.bincount(block_sms(np.arange(G), M, R, rule), minlength=M) / R)
                pred.append(w.mean() / w.max())
            name = f"{r['app']} {r['kernel_index']} {r['kernel'][:22]}"
            print(f"{name:36s} {G:6d} {R:3d} {G / (M * R):6.2f} {measured:9.3f} {pred[0]:10.3f} {pred[1]:11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
