"""Engine cost in machine instructions: x86 instructions, conditional branches and (simulated)
branch mispredictions per simulated warp instruction, counted by valgrind's cachegrind.

Wall-clock rates on a shared machine drift by ±30 % within a day (other tenants), so a change of a
few per cent to the engine is invisible in ``engine_speed.py``; instruction counts are exact and
repeatable. This runs the ``engine_speed.py`` trace (same body, fewer rows) under cachegrind twice,
with 1 and 3 engine runs, and divides the difference by the extra simulated instructions, so trace
building, lowering and the numba import cancel out. Only the jitted code is counted (cachegrind
files it as ``???``: JIT code has no symbols).

numba's cache key holds the host CPU's name and features, which valgrind's emulated CPUID changes;
the script pins both (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``) and primes a private cache
outside valgrind, so nothing is compiled under valgrind. The pinned target is the host's features
without AVX-512/AMX/AVX10 (valgrind 3.19 cannot run them: SIGILL on a Zen 5 host) on the
``znver3`` CPU model, the machine earlier figures were taken on; set ``TEG_ICOUNT_CPU`` to pin
another model.

    python benchmarks/engine_icount.py [--rows 24000] [--alu-only] [--whole-gpu] [--cache-sim [--ll-bytes N]]

``--whole-gpu`` counts the whole-GPU engine instead (every SM of sm_90 with a full wave of 64
warps, the rows rounded up to a whole number per warp; ``--rows 700000`` gives 96 per warp), so
the cost per simulated instruction of one SM and of the whole GPU compare exactly;
``--cache-sim`` adds cachegrind's simulated data-cache misses per simulated instruction (where
the whole GPU's larger state shows); ``--ll-bytes 1048576`` makes its simulated last level one
core's 1 MB L2, so that the last-level misses count the accesses that leave the core.

Needs ``valgrind`` on PATH (prints why and exits 2 when it is missing).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def child(rows: int, reps: int, alu: bool, whole_gpu: bool = False) -> None:
    """Build and lower the benchmark trace, then run the engine ``reps`` times: 64 warps on one SM
    (``Options(warps=64)``), or with ``whole_gpu`` a full wave on every SM of sm_90 (8 blocks of 8
    warps per SM, ``Options(sms=num_sms)``: blocks dealt, L2 partitions and slices, shared DRAM)."""
    sys.path.insert(0, HERE)
    import engine_speed as es

    from teg.engine import Options, lower, run
    from teg.machine import load

    machine = load("sm_90")
    body = es.ALU_BODY if alu else es.BODY
    if whole_gpu:
        warps = machine.num_sms * 64
        kt, _ = es.synthetic_trace(-(-rows // warps) * warps, warps, body)
        inp = lower(None, kt, machine, Options(sms=machine.num_sms))
    else:
        kt, _ = es.synthetic_trace(rows, 64, body)
        inp = lower(None, kt, machine, Options(warps=64))
    for _ in range(reps):
        run(inp)


def jit_totals(path: str) -> dict[str, int]:
    """Sum of the events cachegrind charged to file ``???`` / function ``???`` (the JIT code)."""
    events: list[str] = []
    totals: list[int] = []
    fl = fn = None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
                totals = [0] * len(events)
            elif line.startswith("fl="):
                fl = line.strip()[3:]
            elif line.startswith("fn="):
                fn = line.strip()[3:]
            elif line[:1].isdigit() and fl == "???" and fn == "???":
                for i, v in enumerate(line.split()[1:]):
                    totals[i] += int(v)
    return dict(zip(events, totals))


def valgrind_safe(features: str) -> str:
    """The LLVM feature string with the vector extensions valgrind cannot emulate switched off."""
    out = []
    for f in features.split(","):
        name = f[1:]
        if f.startswith("+") and name.startswith(("avx512", "amx", "avx10", "avxvnniint", "avxneconvert")):
            f = "-" + name
        out.append(f)
    return ",".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=24000, help="warp instructions per engine run")
    ap.add_argument("--alu-only", action="store_true", help="the loop body without LDS/LDG")
    ap.add_argument("--whole-gpu", action="store_true",
                    help="every SM of sm_90, a full wave (64 warps each), instead of 64 warps on one SM")
    ap.add_argument("--cache-sim", action="store_true",
                    help="also count data-cache misses (cachegrind's simulated D1 and last-level caches)")
    ap.add_argument("--ll-bytes", type=int, default=0,
                    help="with --cache-sim: size of cachegrind's simulated last-level cache (16-way, 64 B "
                         "lines), e.g. 1048576 for a core's 1 MB L2, so that its misses count what leaves "
                         "the core's private caches (default: cachegrind's choice, the host's last level)")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.rows, args.child, args.alu_only, args.whole_gpu)
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("engine_icount: valgrind is not on PATH (install it, e.g. apt install valgrind)")
        return 2
    import llvmlite.binding as ll

    env = dict(os.environ, NUMBA_CPU_NAME=os.environ.get("TEG_ICOUNT_CPU", "znver3"),
               NUMBA_CPU_FEATURES=valgrind_safe(ll.get_host_cpu_features().flatten()),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    me = ([sys.executable, os.path.abspath(__file__), "--rows", str(args.rows)] + (["--alu-only"] if args.alu_only else [])
          + (["--whole-gpu"] if args.whole_gpu else []))
    with tempfile.TemporaryDirectory() as tmp:
        env["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
        subprocess.run(me + ["--child", "1"], env=env, check=True)        # compile outside valgrind
        out = {}
        for reps in (1, 3):
            path = os.path.join(tmp, f"cg.{reps}")
            ll = [f"--LL={args.ll_bytes},16,64"] if args.cache_sim and args.ll_bytes else []
            cmd = ([valgrind, "--tool=cachegrind", f"--cache-sim={'yes' if args.cache_sim else 'no'}",
                    "--branch-sim=yes"] + ll + [f"--cachegrind-out-file={path}"] + me + ["--child", str(reps)])
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out[reps] = jit_totals(path)
    rows = args.rows
    if args.whole_gpu:
        from teg.machine import load
        warps = load("sm_90").num_sms * 64
        rows = -(-rows // warps) * warps
    n = 2 * rows
    per = {e: (out[3][e] - out[1][e]) / n for e in out[3]}
    where = "every SM of sm_90, 64 warps each" if args.whole_gpu else "64 warps on one SM of sm_90"
    print(f"engine, per simulated warp instruction ({'ALU-only' if args.alu_only else 'mixed'} body, "
          f"{rows:,} rows, {where}):")
    print(f"  x86 instructions     {per['Ir']:8.1f}")
    print(f"  conditional branches {per['Bc']:8.1f}   mispredicted (cachegrind's model) {per['Bcm']:.2f}")
    print(f"  indirect branches    {per['Bi']:8.1f}   mispredicted {per['Bim']:.2f}")
    if args.cache_sim:
        print(f"  data reads / writes  {per['Dr']:8.1f} / {per['Dw']:.1f}   D1 misses {per['D1mr'] + per['D1mw']:.2f}, "
              f"last-level misses {per['DLmr'] + per['DLmw']:.3f} (cachegrind's simulated caches"
              + (f"; last level {args.ll_bytes:,} B" if args.ll_bytes else "") + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
