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
the ALU-bound figure docs/performance.md quotes beside the main one.

    python benchmarks/engine_speed.py [--rows 10000000] [--warps 64] [--machine sm_90] [--repeat 3] [--alu-only]

``--whole-gpu`` times the whole GPU instead: the same loop body in a grid of ``--blocks-per-sm``
(default 8, one full wave at this kernel's occupancy) blocks of 8 warps for every SM of the machine
table (``num_sms``), at least ``--rows`` warp instructions in all, written in the native trace
format by a child process, then loaded (memory-mapped), lowered with
``Options(sms=machine.num_sms)`` and run, each step timed apart; it prints warp instructions per
second for the engine and end to end (load + lowering + best engine run) and the peak resident
memory of the process that loaded, lowered and ran it (loading only maps the files: the lowering
pages the trace in). About a minute at the default size on the shared
2-core machine; ``--rows 2000000`` for a quick look.

    python benchmarks/engine_speed.py --whole-gpu [--rows 10000000] [--blocks-per-sm 8] [--machine sm_90] [--repeat 3]

``--both`` compares the two in one process: the same loop body, ``--rows`` warp instructions on
64 warps of one SM and (rounded up to a whole number per warp) on the whole GPU as above, both
built in memory and lowered first, then their engine runs alternated (one SM, whole GPU, one SM
…, ``--repeat`` each), so that the machine's drift hits both alike; it prints each one's rates
(best and median, CPU and wall) and the whole GPU's median time per instruction over one SM's.

    python benchmarks/engine_speed.py --both [--rows 2000000] [--blocks-per-sm 8] [--machine sm_90] [--repeat 5]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

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


def timed_runs(inp, repeat: int):
    """Run the engine ``repeat`` times (at least once) on one lowered input: the last result and
    the wall and CPU seconds of each run; the runs must agree (the engine is deterministic)."""
    from teg.engine import run

    walls, cpus, cycles = [], [], set()
    for _ in range(max(1, repeat)):
        t0, c0 = time.perf_counter(), time.process_time()
        res = run(inp)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        cycles.add(res.cycles)
    assert len(cycles) == 1, f"repeats disagree: {sorted(cycles)}"
    return res, walls, cpus


def runs_line(walls, cpus, cycles) -> str:
    """One line: the wall and CPU seconds of every engine run and the cycles they simulated."""
    return (f"engine run x{len(walls)}: " + ", ".join(f"{w:.2f}" for w in walls) + " s wall; "
            + ", ".join(f"{c:.2f}" for c in cpus) + f" s CPU; {cycles:,} simulated cycles each")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--warps", type=int, default=64)
    ap.add_argument("--machine", default="sm_90")
    ap.add_argument("--repeat", type=int, default=3, help="engine runs to time (best and median reported)")
    ap.add_argument("--alu-only", action="store_true", help="the loop body with its LDS and LDG replaced by FFMA")
    ap.add_argument("--whole-gpu", action="store_true",
                    help="a full-GPU grid on every SM of the machine (load, lowering and engine timed apart)")
    ap.add_argument("--blocks-per-sm", type=int, default=8, help="--whole-gpu: blocks of 8 warps per SM in the grid")
    ap.add_argument("--both", action="store_true",
                    help="one SM and the whole GPU in one process, their engine runs alternated")
    args = ap.parse_args()
    if args.both:
        both(args)
        return
    if args.whole_gpu:
        whole_gpu(args)
        return

    from teg.engine import Options, lower, run

    from teg.engine.handmade import make_input
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
    res, walls, cpus = timed_runs(inp, args.repeat)
    n = res.instructions
    print(f"trace: {n:,} warp instructions, {args.warps} warps, {nmem:,} memory rows "
          f"(built in {t_build:.2f} s)")
    print(f"JIT compile/load (first call): {t_jit:.2f} s")
    print(f"lowering: {t_lower:.2f} s ({n / t_lower / 1e6:.1f} M rows/s)")
    print(runs_line(walls, cpus, res.cycles))
    print(f"speed: best {n / min(cpus) / 1e6:.2f}, median {n / float(np.median(cpus)) / 1e6:.2f} million "
          f"simulated warp instructions per CPU second (one core); best {n / min(walls) / 1e6:.2f} per "
          "wall second")


def _write_trace(path: str, rows: int, warps: int, body: list[str]) -> None:
    """(Child process) build the synthetic trace and save it in the native format at ``path``."""
    from teg.trace import Trace, save

    kt, _ = synthetic_trace(rows, warps, body)
    save(Trace(kernels=[kt], source="benchmarks/engine_speed.py"), path, compact=False)    # mapped, not decoded


def whole_gpu(args) -> None:
    """The ``--whole-gpu`` case (see the module docstring)."""
    import multiprocessing

    from teg.engine import Options, lower, run
    from teg.machine import load
    from teg.trace import load as load_trace

    machine = load(args.machine)
    sms = machine.num_sms
    warps = sms * args.blocks_per_sm * 8
    rows = -(-args.rows // warps) * warps             # at least --rows, the same count per warp
    body = ALU_BODY if args.alu_only else BODY
    options = Options(sms=sms)

    tmp = Path(tempfile.mkdtemp(prefix="teg-engine-speed-"))
    try:
        # JIT compile/load of the lowering and engine code: a small whole-GPU run first, its trace
        # saved and memory-mapped as the big one will be (read-only arrays are their own numba types)
        t0 = time.perf_counter()
        _write_trace(str(tmp / "small"), sms * 8 * 32, sms * 8, body)
        run(lower(None, load_trace(tmp / "small").kernels[0], machine, options))
        t_jit = time.perf_counter() - t0
        path = tmp / "trace"
        t0 = time.perf_counter()
        child = multiprocessing.get_context("spawn").Process(target=_write_trace, args=(str(path), rows, warps, body))
        child.start()
        child.join()
        if child.exitcode != 0:
            raise SystemExit(f"writing the synthetic trace failed (exit status {child.exitcode})")
        t_write = time.perf_counter() - t0
        disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())

        t0 = time.perf_counter()
        kt = load_trace(path).kernels[0]
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        inp = lower(None, kt, machine, options)
        t_lower = time.perf_counter() - t0
        res, walls, cpus = timed_runs(inp, args.repeat)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024    # KiB on Linux
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    n = res.instructions
    nmem = int(np.count_nonzero(np.asarray(kt.mem_width))) if n else 0
    blocks = sms * args.blocks_per_sm
    e2e = t_load + t_lower + min(walls)
    print(f"whole GPU: {machine.name}, {sms} SMs, {blocks:,} blocks of 8 warps ({warps:,} warps), "
          f"{n:,} warp instructions, {nmem:,} memory rows")
    print(f"trace written in {t_write:.1f} s (child process), {disk / 2**20:.0f} MiB on disk")
    print(f"JIT compile/load (first call, small whole-GPU run): {t_jit:.2f} s")
    print(f"load (memory-mapped): {t_load:.2f} s")
    print(f"lowering: {t_lower:.2f} s ({n / t_lower / 1e6:.1f} M rows/s, paging the memory-mapped trace in)")
    print(runs_line(walls, cpus, res.cycles))
    print(f"speed: engine best {n / min(cpus) / 1e6:.2f}, median {n / float(np.median(cpus)) / 1e6:.2f} million "
          f"simulated warp instructions per CPU second (best {n / min(walls) / 1e6:.2f} per wall second); "
          f"end to end (load + lowering + best engine run, wall) {n / e2e / 1e6:.2f} million per second")
    print(f"peak RSS (load, lowering, engine; the trace is built in a child process): {peak:.0f} MiB")


def both(args) -> None:
    """The ``--both`` case (see the module docstring)."""
    from teg.engine import Options, lower, run
    from teg.machine import load

    machine = load(args.machine)
    sms = machine.num_sms
    body = ALU_BODY if args.alu_only else BODY
    warps = sms * args.blocks_per_sm * 8
    cases = {}
    t0 = time.perf_counter()
    kt, _ = synthetic_trace(args.rows, 64, body)
    cases["one SM"] = lower(None, kt, machine, Options(warps=64))
    kt, _ = synthetic_trace(-(-args.rows // warps) * warps, warps, body)
    cases["whole GPU"] = lower(None, kt, machine, Options(sms=sms))
    del kt
    t_prep = time.perf_counter() - t0
    for inp in cases.values():        # JIT compile/load, and the first touch of the inputs
        run(inp)
    walls = {k: [] for k in cases}
    cpus = {k: [] for k in cases}
    n = {}
    for _ in range(max(1, args.repeat)):
        for name, inp in cases.items():
            t0, c0 = time.perf_counter(), time.process_time()
            res = run(inp)
            walls[name].append(time.perf_counter() - t0)
            cpus[name].append(time.process_time() - c0)
            n[name] = res.instructions
    print(f"one SM: 64 warps, {n['one SM']:,} warp instructions; whole GPU: {machine.name}, {sms} SMs, "
          f"{warps:,} warps, {n['whole GPU']:,} warp instructions (built and lowered in {t_prep:.1f} s); "
          f"engine runs alternated, {len(walls['one SM'])} each")
    per = {}
    for name in cases:
        per[name] = float(np.median(walls[name])) / n[name]
        print(f"{name:>9}: best {n[name] / min(cpus[name]) / 1e6:.2f}, median {n[name] / float(np.median(cpus[name])) / 1e6:.2f} "
              f"M warp instructions per CPU second; best {n[name] / min(walls[name]) / 1e6:.2f}, median "
              f"{1 / per[name] / 1e6:.2f} per wall second")
    print(f"whole GPU / one SM, median wall time per warp instruction: {per['whole GPU'] / per['one SM']:.2f}")


if __name__ == "__main__":
    main()
