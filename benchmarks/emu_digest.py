"""Digests of what the emulator produces, to show that a change to it (speed, parallel blocks)
leaves every trace and every output byte for byte as it was.

    python benchmarks/emu_digest.py --out before.json [--tests] [--bench] [--threads N]
    python benchmarks/emu_digest.py --compare before.json after.json

Every launch that goes through :func:`teg.emu.launch.execute` (``teg.emu.emulate``, ``teg trace
run``, each launch of ``teg trace app``) is recorded: the kernel, grid and block, the warp
instructions it returned or the error it raised, a SHA-256 of each trace column the sink received
(chunk boundaries do not matter: one hash per column, fed in order; the static columns of a sink
handed the pc only are looked up per pc, ``RowSink.full_rows``) and of the global memory the
launch could touch after it ran (the allocations' bytes). Global addresses are hashed relative to
the heap's base, and so are the 64-bit words of memory that point into the heap (``teg trace app``
maps device memory where the system puts it). ``--tests`` runs
the emulator's and trace app's test files under pytest with these hooks (entries keyed by the test
and the launch's position in it); ``--bench`` runs the launches of the emulator benchmarks
(``benchmarks/emu_speed.py`` and the larger matmul sizes). ``--threads`` sets
``TEG_EMU_THREADS`` (the worker threads a launch may use) for the run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "emu"
TEST_FILES = ["tests/test_emu_kernels.py", "tests/test_emu_trace.py", "tests/test_emu_pointer_walk.py",
              "tests/test_emu_units.py", "tests/test_app.py"]

# (kernel, grid, block, args) on kernels.sm_90.cubin: the emulator benchmarks' launches
BENCH = [
    ("matmul_abt", (8, 8), (16, 16), ["A=rand:float32:128x128", "B=rand:float32:128x128", "C=zeros:float32:128x128", "n=128"]),
    ("matmul_abt", (16, 16), (16, 16), ["A=rand:float32:256x256", "B=rand:float32:256x256", "C=zeros:float32:256x256", "n=256"]),
    ("matmul_ab", (32, 32), (16, 16), ["A=rand:float32:512x512", "B=rand:float32:512x512", "C=zeros:float32:512x512", "n=512"]),
    ("saxpy", 1024, 256, ["n=262144", "a=2.0", "x=rand:float32:262144", "y=rand:float32:262144"]),
    ("reduce_sum<float>", 512, 256, ["in=rand:float32:131072", "out=zeros:float32:1", "n=131072"]),
    ("reduce_sum<int>", 512, 256, ["in=rand:int32:131072", "out=zeros:int32:1", "n=131072"]),
    ("histogram", 64, 256, ["data=rand:uint32:65536", "hist=zeros:uint32:256", "extrema=zeros:int32:3", "n=65536"]),
    ("divergent_loop", 64, 256, ["c=rand:int32:16384", "o=zeros:float32:16384"]),
    ("int_div_sqrt", 64, 256, ["a=rand:int32:16384", "b=ones:int32:16384", "f=rand:float32:16384",
                               "q=zeros:int32:16384", "u=zeros:uint32:16384"]),
    ("transpose_shared", (16, 16), (16, 16), ["in=rand:float32:256x256", "out=zeros:float32:256x256", "n=256"]),
    ("dstencil", 64, 128, ["in=rand:float64:8192", "out=zeros:float64:8192", "n=8192", "c0=0.25", "c1=float64:0.5"]),
]


class Recorder:
    """Wraps :func:`teg.emu.launch.execute` and keeps one entry per launch."""

    def __init__(self):
        self.entries: list[dict] = []
        self.key = "-"
        self.count = 0

    def install(self) -> None:
        import teg.emu.launch as L

        orig = L.execute

        def execute(prog, image, grid, block, shmem, params, mem, sink, *args, **kw):
            base = int(mem.lo[0])
            hashes: dict[str, hashlib._Hash] = {}
            take = sink.take

            def hashed_take(rows, n_addr, addresses):
                full = sink.full_rows(rows)          # with the static columns a trace writer gets per pc
                for name in sorted(full):
                    hashes.setdefault(name, hashlib.sha256()).update(np.ascontiguousarray(full[name]).tobytes())
                hashes.setdefault("n_addr", hashlib.sha256()).update(np.asarray(n_addr, np.int64).tobytes())
                a = np.asarray(sink.addresses_of(n_addr, addresses), np.uint64)
                rel = np.where(a >= np.uint64(base), a - np.uint64(base), a)
                hashes.setdefault("addresses", hashlib.sha256()).update(rel.tobytes())
                return take(rows, n_addr, addresses)

            sink.take = hashed_take
            entry = {"key": self.key, "n": self.count, "kernel": prog.name, "grid": list(grid),
                     "block": list(block)}
            self.count += 1
            try:
                entry["rows"] = orig(prog, image, grid, block, shmem, params, mem, sink, *args, **kw)
            except Exception as exc:               # the error is part of what the launch produced
                top = base + mem.heap.shape[0]
                entry["error"] = re.sub(r"0x[0-9a-f]+", lambda h: f"base+{int(h[0], 16) - base:#x}"
                                        if base <= int(h[0], 16) < top else h[0], f"{type(exc).__name__}: {exc}")
                raise
            finally:
                m = hashlib.sha256()
                top = np.uint64(base + mem.heap.shape[0])
                for lo, hi in zip(mem.lo[1:], mem.hi[1:]):
                    raw = np.array(mem.heap[int(lo) - base:int(hi) - base])
                    words = raw[:raw.shape[0] // 8 * 8].view(np.uint64)
                    ptr = (words >= np.uint64(base)) & (words < top)      # device pointers, made relative
                    words[ptr] -= np.uint64(base)
                    m.update(raw.tobytes())
                entry["memory"] = m.hexdigest()
                entry["columns"] = {k: h.hexdigest() for k, h in sorted(hashes.items())}
                self.entries.append(entry)
            return entry["rows"]

        L.execute = execute


class Plugin:
    """pytest plugin: names the entries after the running test."""

    def __init__(self, rec: Recorder):
        self.rec = rec

    def pytest_runtest_setup(self, item):
        self.rec.key, self.rec.count = item.nodeid, 0


def run_bench(rec: Recorder) -> None:
    from teg.emu import emulate, load_kernel

    for name, grid, block, args in BENCH:
        rec.key, rec.count = f"bench:{name}:{grid}", 0
        prog, image = load_kernel(FIX / "kernels.sm_90.cubin", name)
        emulate(prog, image, grid, block, args)


def compare(a_path: str, b_path: str) -> int:
    a = {(e["key"], e["n"]): e for e in json.loads(Path(a_path).read_text())}
    b = {(e["key"], e["n"]): e for e in json.loads(Path(b_path).read_text())}
    bad = 0
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            print(f"only in {'the first' if k in a else 'the second'}: {k}")
            bad += 1
        elif a[k] != b[k]:
            diff = [f for f in set(a[k]) | set(b[k]) if a[k].get(f) != b[k].get(f)]
            print(f"differs: {k}: {', '.join(sorted(diff))}")
            bad += 1
    print(f"{len(set(a) & set(b))} launches in both, {bad} differences")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--tests", action="store_true")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("-k", default=None, help="pytest -k expression for --tests")
    a = ap.parse_args()
    if a.compare:
        sys.exit(compare(*a.compare))
    if a.threads is not None:
        os.environ["TEG_EMU_THREADS"] = str(a.threads)
    rec = Recorder()
    rec.install()
    if a.bench:
        run_bench(rec)
    if a.tests:
        import pytest

        os.chdir(ROOT)
        args = ["-q", "-p", "no:cacheprovider", *TEST_FILES] + (["-k", a.k] if a.k else [])
        status = pytest.main(args, plugins=[Plugin(rec)])
        if status not in (0, 5):
            print(f"pytest exited with {status}", file=sys.stderr)
    Path(a.out).write_text(json.dumps(rec.entries, indent=0))
    print(f"{len(rec.entries)} launches recorded in {a.out}")


if __name__ == "__main__":
    main()
