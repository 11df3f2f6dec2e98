"""Peak memory of loading a native trace (``teg.trace.load``: every column memory-mapped, or a
compact one decoded frame by frame, and every value checked, teg/trace/checks.py) against its
length: version 1 (mapped ``.npy`` columns) as a ``.npz`` and as a folder, and version 2 (compact,
teg/trace/codec.py) as a ``.npz`` — its first load decodes into the trace cache, the next one maps
what was decoded.

The trace is the bundled example's kernel with its blocks repeated (``--scales``), written with
teg's own writer. Each load runs in a fresh process that reports its peak resident set size
(``ru_maxrss``) and the time of the load; the baseline is the same process with imports done and
nothing loaded. Memory flat in the trace length means the peak does not grow with the rows.

    python3 benchmarks/npz_memory.py                 # 250, 1000 and 4000 copies (0.9, 3.6, 14 M rows)

Uses the disk of the temporary folder: about 2.5x the version-1 size at the largest scale.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "traces" / "matmul_abt.sm_90.trace.npz"

_PROBE = """
import json, resource, sys, time
import numpy as np
import teg.trace as tt

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(ln.split()[1]) for ln in fh if ln.startswith(key + ":"))

t0 = time.perf_counter()
keep = None
if sys.argv[2] == "load":
    keep = tt.load(sys.argv[1])
elif sys.argv[2] == "numpy":          # what teg did before: numpy reads each member whole
    with np.load(sys.argv[1]) as z:
        keep = [z[n] for n in z.files if n.endswith("npy") or "/" in n]
secs = time.perf_counter() - t0
print(json.dumps({"peak_kib": status("VmHWM"), "anon_kib": status("RssAnon"), "seconds": secs}))
"""


def repeated_trace(copies: int):
    """The bundled kernel with its blocks repeated ``copies`` times (a grid ``copies`` times wider)."""
    from dataclasses import replace

    import teg.trace as tt

    kt = tt.load_native(BUNDLED).kernels[0]
    n, nw, nb, na = kt.num_rows, kt.num_warps, kt.block_xyz.shape[0], kt.addresses.shape[0]
    k = np.arange(copies)
    tile = lambda a: np.tile(np.asarray(a), (copies,) + (1,) * (np.asarray(a).ndim - 1))   # noqa: E731
    warp = (np.asarray(kt.warp)[None, :] + nw * k[:, None]).reshape(-1).astype(np.int32)
    block = (np.asarray(kt.block)[None, :] + nb * k[:, None]).reshape(-1).astype(np.int32)
    addr_start = np.concatenate([[0], (np.asarray(kt.addr_start)[None, 1:] + na * k[:, None]).reshape(-1)])
    warp_start = np.concatenate([[0], (np.asarray(kt.warp_start)[None, 1:] + n * k[:, None]).reshape(-1)])
    warp_block = (np.asarray(kt.warp_block)[None, :] + nb * k[:, None]).reshape(-1).astype(np.int32)
    block_xyz = np.stack([np.arange(nb * copies), np.zeros(nb * copies), np.zeros(nb * copies)], 1).astype(np.int32)
    info = replace(kt.info, grid=(nb * copies, 1, 1))
    big = replace(kt, info=info, warp=warp, block=block, pc=tile(kt.pc), opcode=tile(kt.opcode), mask=tile(kt.mask),
                  dst=tile(kt.dst), src=tile(kt.src), mem_width=tile(kt.mem_width), imm=tile(kt.imm),
                  addr_start=addr_start.astype(np.int64), addresses=tile(kt.addresses),
                  warp_start=warp_start.astype(np.int64), warp_block=warp_block, block_xyz=block_xyz,
                  line_num=None, extras={})
    return tt.Trace(kernels=[big], source="npz_memory")


def probe(path: Path | None, what: str, cache: Path | None = None) -> dict:
    import os

    env = dict(os.environ, **({"TEG_CACHE_DIR": str(cache)} if cache else {}))
    out = subprocess.run([sys.executable, "-c", _PROBE, str(path), what], capture_output=True, text=True, check=True,
                         env=env)
    return json.loads(out.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="250,1000,4000", help="copies of the bundled kernel's blocks")
    args = ap.parse_args(argv)
    import teg.trace as tt

    base = probe(None, "none")
    print(f"process with teg imported: {base['anon_kib'] / 1024:.0f} MiB anonymous, {base['peak_kib'] / 1024:.0f} MiB "
          "peak RSS")
    print("MiB after the load: anonymous (heap) / peak RSS (also counts the mapped file pages the checks read)")
    print(f"{'rows':>11} {'MB v1':>7} {'MB v2':>6}  {'v1 .npz':>16} {'s':>5}  {'v1 folder':>16} {'s':>5}  "
          f"{'v2 .npz first':>16} {'s':>5}  {'v2 .npz again':>16} {'s':>5}  {'v1 np.load':>16} {'s':>5}")
    with tempfile.TemporaryDirectory() as d:
        cache = Path(d) / "cache"
        for copies in (int(x) for x in args.scales.split(",")):
            tr = repeated_trace(copies)
            rows = tr.kernels[0].num_rows
            npz, folder, v2 = Path(d) / f"t{copies}.npz", Path(d) / f"t{copies}", Path(d) / f"t{copies}.v2.npz"
            tt.save(tr, npz, compact=False)
            tt.save(tr, folder, compact=False)
            tt.save(tr, v2)
            del tr
            cells = []
            for path, what in ((npz, "load"), (folder, "load"), (v2, "load"), (v2, "load"), (npz, "numpy")):
                r = probe(path, what, cache)
                cells.append(f"{r['anon_kib'] / 1024:>7.0f} / {r['peak_kib'] / 1024:>6.0f} {r['seconds']:>5.2f}")
            print(f"{rows:>11,} {npz.stat().st_size / 1e6:>7.0f} {v2.stat().st_size / 1e6:>6.1f}  " + "  ".join(cells))
            npz.unlink()
            v2.unlink()
            shutil.rmtree(folder)
            shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
