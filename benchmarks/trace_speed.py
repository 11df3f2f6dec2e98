"""Accel-Sim reader speed: generate a tracer-v4-style ``.traceg`` with N instruction lines
(default 5,000,000: ALU lines plus memory lines with base+stride and base+delta addresses),
convert it to the native format, and print instruction lines per second, the JIT warm-up time
(measured separately on a tiny trace) and the peak resident memory.

    python benchmarks/trace_speed.py [--lines N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = """-kernel name = _Z5bench
-kernel id = 1
-grid dim = ({blocks},1,1)
-block dim = (256,1,1)
-shmem = 0
-nregs = 32
-binary version = 80
-cuda stream id = 0
-shmem base_addr = 0x00007f0000000000
-local mem base_addr = 0x00007eff00000000
-nvbit version = 1.5.5
-accelsim tracer version = 4
-enable lineinfo = 0

#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses]

"""

ALU = ["{pc:04x} ffffffff 1 R{r} IMAD.MOV.U32 2 R255 R{s} 0 ",
       "{pc:04x} ffffffff 1 R{r} FFMA 3 R{s} R{t} R{r} 0 ",
       "{pc:04x} ffffffff 0 ISETP.GE.AND 2 R{s} R{t} 0 ",
       "{pc:04x} 0000ffff 1 R{r} IADD3 3 R{s} R{t} R255 0 ",
       "{pc:04x} ffffffff 0 BRA 0 0 "]
MEM = ["{pc:04x} ffffffff 1 R{r} LDG.E.128.SYS 1 R{s} 16 1 0x{a:x} 16 ",
       "{pc:04x} ffffffff 0 STG.E.SYS 2 R{s} R{t} 4 1 0x{a:x} 4 ",
       "{pc:04x} 0f0f0f0f 1 R{r} LDG.E.64 1 R{s} 8 2 0x{a:x} " + " ".join(["8", "8", "8", "40"] * 3 + ["8", "8", "8"]) + " ",
       "{pc:04x} ffffffff 1 R{r} LDS.U.32 1 R{s} 4 1 0x{sh:x} 4 "]
LINES_PER_WARP = 250


def warp_template() -> str:
    """One warp's lines; ``{A}`` is replaced by the warp's global base address (hex digits)."""
    out = []
    for i in range(LINES_PER_WARP):
        pc = 0x10 * (i + 1)
        r, s, t = i % 200, (i * 7) % 200, (i * 13) % 200
        if i % 4 == 3:
            line = MEM[(i // 4) % len(MEM)].format(pc=pc, r=r, s=s, t=t, a=0xABC0000 + 0x200 * i, sh=0x80 * (i % 64))
            line = line.replace("0xabc", "0x{A}", 1)
        else:
            line = ALU[i % len(ALU)].format(pc=pc, r=r, s=s, t=t)
        out.append(line)
    return "\n".join(out) + "\n"


def generate(path: Path, lines: int) -> int:
    """Write the benchmark trace; return its instruction line count."""
    warps = max(1, lines // LINES_PER_WARP)
    blocks = (warps + 7) // 8
    tpl = warp_template()
    n = 0
    with open(path, "w") as fh:
        fh.write(HEADER.format(blocks=blocks))
        w = 0
        for b in range(blocks):
            fh.write(f"\n#BEGIN_TB\n\nthread block = {b},0,0\n")
            for j in range(8):
                count = LINES_PER_WARP if w < warps else 0
                fh.write(f"\nwarp = {j}\ninsts = {count}\n")
                if count:
                    fh.write(tpl.replace("{A}", f"7f{w:06x}"))
                    n += count
                w += 1
            fh.write("\n#END_TB\n")
    return n


CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from teg.trace.accelsim import convert_accelsim
from teg.trace import load_native
convert_accelsim(sys.argv[1], sys.argv[2])
jit = time.perf_counter() - t0
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
convert_accelsim(sys.argv[3], sys.argv[4])
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
kt = load_native(sys.argv[4]).kernels[0]
print(json.dumps({"jit": jit, "wall": wall, "cpu": cpu, "rss0": rss0, "rows": kt.num_rows,
                  "addresses": int(kt.addresses.shape[0]),
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--keep", type=Path, default=None, help="keep the generated files in this folder")
    args = ap.parse_args()

    tmp = Path(args.keep or tempfile.mkdtemp(prefix="teg-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        small = tmp / "small.traceg"
        generate(small, LINES_PER_WARP)
        big = tmp / "kernel-1.traceg"
        t0 = time.perf_counter()
        n = generate(big, args.lines)
        gen = time.perf_counter() - t0
        size = big.stat().st_size
        # conversion in a fresh process, so its peak memory is the converter's alone
        out = subprocess.run([sys.executable, "-c", CHILD, str(small), str(tmp / "small.native"), str(big),
                              str(tmp / "big.native")], check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        assert r["rows"] == n, (r["rows"], n)
        print(f"trace: {n:,} instruction lines, {size / 1e6:.0f} MB text (generated in {gen:.1f} s)")
        print(f"JIT warm-up (imports + tiny trace, numba compile or cache load): {r['jit']:.2f} s")
        print(f"convert to native: {r['wall']:.2f} s wall = {n / r['wall'] / 1e6:.2f} M lines/s "
              f"({size / r['wall'] / 1e6:.0f} MB/s); {r['cpu']:.2f} s CPU = {n / r['cpu'] / 1e6:.2f} M lines/s "
              "per core (single-threaded)")
        print(f"peak RSS of the converting process: {r['rss'] / 1024:.0f} MiB (after warm-up {r['rss0'] / 1024:.0f} MiB); "
              f"text {size / 2**20:.0f} MiB, {r['addresses']:,} addresses")
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
