"""Engine speed: simulated warp instructions per second on one core.

Builds a synthetic 64-warp trace of 10 million warp instructions (default) on sm_90: each warp
runs a 32-instruction loop body — FFMA chains, integer ops, a compare and a branch, one
coalesced LDS.32 and one coalesced LDG.E per iteration (so 1 row in 16 is a memory access with
32 lane addresses) — lowers it with ``Options(warps=64)`` (64 warps on one SM) and times
``teg.engine.run`` (wall and CPU time: on a shared machine the CPU-time rate is the one-core
figure). The run is repeated (``--repeat``, default 3; every repeat gives the same result) and
the best and median rates are printed: on a machine shared with other tenants the best repeat
is the one least disturbed. The JIT compile/load time (first call, on a tiny input) is reported
apart. ``--alu-only`` times the same loop with the LDS and LDG replaced by FFMA (no memory rows),
the ALU-bound figure the README quotes beside the main one.

    python benchmarks/engine_speed.py [--rows 10000000] [--warps 64] [--machine sm_90] [--repeat 3] [--alu-only]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

BODY = (["FFMA"] * 6 + ["IADD3", "IMAD", "LDS"] + ["FFMA"] * 6 + ["IADD3", "LOP3.LUT", "LDG.E"]
        + ["FFMA"] * 8 + ["IMAD", "IADD3", "SHF.R.U32.HI", "MOV", "ISETP.GE.AND", "BRA"])
assert len(BODY) == 32
ALU_BODY = ["FFMA" if o in ("LDS", "LDG.E") else o for o in BODY]   # --alu-only: no memory rows


def synthetic_trace(rows_total: int, warps: int, body: list[str] = BODY):
    """A KernelTrace (built with numpy, no per-row Python) of ``warps`` warps in blocks of 8, each
    repeating ``body``."""
    from teg.trace import KernelInfo, KernelTrace
    from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

    per_warp = rows_total // warps
    n = per_warp * warps
    opcodes = sorted(set(body))
    body_op = np.array([opcodes.index(o) for o in body], np.int32)
    L = len(body)
    body_dst = np.full((L, MAX_TRACE_DST), -1, np.int16)
    body_src = np.full((L, MAX_TRACE_SRC), -1, np.int16)
    for i, o in enumerate(body):
        if o == "FFMA":            # two interleaved dependent chains R10.., R11..
            r = 10 + (i % 2)
            body_dst[i, 0] = r
            body_src[i, :3] = (2, 3, r)
        elif o in ("LDS", "LDG.E"):
            body_dst[i, 0] = 20 if o == "LDS" else 21
            body_src[i, :2] = (4, 5)
        elif o in ("ISETP.GE.AND", "BRA"):
            body_src[i, 0] = 6
        else:
            body_dst[i, 0] = 7 + (i % 3)
            body_src[i, :2] = (7 + (i % 3), 1)
    k = np.arange(n, dtype=np.int64)
    pos = k % per_warp
    b = pos % L
    w = k // per_warp
    it = pos // L
    mem_width = np.where(np.isin(b, [i for i, o in enumerate(body) if o in ("LDS", "LDG.E")]), 4, 0).astype(np.int16)
    is_mem = mem_width > 0
    nmem = int(is_mem.sum())
    lane = np.arange(32, dtype=np.uint64)
    mem_rows = np.nonzero(is_mem)[0]
    is_lds = np.isin(b[mem_rows], [i for i, o in enumerate(body) if o == "LDS"])
    base = np.where(is_lds, (w[mem_rows] % 8) * 128,
                    0x7F0000000000 + (w[mem_rows] * 1_000_003 + it[mem_rows] * 4096) * 128).astype(np.uint64)
    addresses = (base[:, None] + lane[None, :] * np.uint64(4)).ravel()
    counts = np.where(is_mem, 32, 0)
    addr_start = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=addr_start[1:])
    info = KernelInfo(name="synthetic", grid=(warps // 8, 1, 1), block=(256, 1, 1), nregs=32, binary_version=90)
    return KernelTrace(
        info=info, opcodes=opcodes, warp=w.astype(np.int32), block=(w // 8).astype(np.int32),
        pc=(b * 16).astype(np.int64), opcode=body_op[b], mask=np.full(n, 0xFFFFFFFF, np.uint32),
        dst=body_dst[b], src=body_src[b], mem_width=mem_width, imm=np.zeros(n, np.int64),
        addr_start=addr_start, addresses=addresses, warp_start=np.arange(warps + 1, dtype=np.int64) * per_warp,
        warp_block=(np.arange(warps) // 8).astype(np.int32),
        block_xyz=np.stack([np.arange(warps // 8), np.zeros(warps // 8), np.zeros(warps // 8)], 1).astype(np.int32)), nmem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--warps", type=int, default=64)
    ap.add_argument("--machine", default="sm_90")
    ap.add_argument("--repeat", type=int, default=3, help="engine runs to time (best and median reported)")
    ap.add_argument("--alu-only", action="store_true", help="the loop body with its LDS and LDG replaced by FFMA")
    args = ap.parse_args()

    from teg.engine import Options, lower, make_input, run
    from teg.machine import load

    t0 = time.perf_counter()
    run(make_input(lat_exec=[4], lat_multi=[1], lat_same=[1]))
    t_jit = time.perf_counter() - t0

    machine = load(args.machine)
    t0 = time.perf_counter()
    kt, nmem = synthetic_trace(args.rows, args.warps, ALU_BODY if args.alu_only else BODY)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    inp = lower(None, kt, machine, Options(warps=args.warps))
    t_lower = time.perf_counter() - t0
    walls, cpus, cycles = [], [], set()
    for _ in range(max(1, args.repeat)):
        t0, c0 = time.perf_counter(), time.process_time()
        res = run(inp)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        cycles.add(res.cycles)
    assert len(cycles) == 1, f"repeats disagree: {sorted(cycles)}"
    n = res.instructions
    print(f"trace: {n:,} warp instructions, {args.warps} warps, {nmem:,} memory rows "
          f"(built in {t_build:.2f} s)")
    print(f"JIT compile/load (first call): {t_jit:.2f} s")
    print(f"lowering: {t_lower:.2f} s ({n / t_lower / 1e6:.1f} M rows/s)")
    print(f"engine run x{len(walls)}: " + ", ".join(f"{w:.2f}" for w in walls) + " s wall; "
          + ", ".join(f"{c:.2f}" for c in cpus) + f" s CPU; {res.cycles:,} simulated cycles each")
    print(f"speed: best {n / min(cpus) / 1e6:.2f}, median {n / float(np.median(cpus)) / 1e6:.2f} million "
          f"simulated warp instructions per CPU second (one core); best {n / min(walls) / 1e6:.2f} per "
          "wall second")


if __name__ == "__main__":
    main()
