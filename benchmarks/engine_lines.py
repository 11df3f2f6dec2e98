"""Engine cost per source line: x86 instructions, D1 and last-level misses per simulated warp
instruction, charged to the lines of teg's engine modules that the jitted code came from.

``engine_icount.py`` counts the jitted code as a whole (cachegrind files it as ``???``: JIT code
has no symbols). This runs the same input under valgrind's callgrind with ``--dump-instr=yes``
(a cost per instruction address) and maps each address back to a source line: the engine is
compiled with numba's debug line tables (``debug=True``, with ``boundscheck=False`` and
``_dbg_extend_lifetimes=False`` so that the machine code is the optimized one), the child prints
where ``simulate``'s code was loaded and writes its object file, and ``addr2line`` reads the line
of each address from it. As in ``engine_icount.py`` the 1-run profile is subtracted from the
3-run one, so set-up outside the runs cancels; lines are the innermost source line (an inlined
helper's own line, not its caller's).

    python benchmarks/engine_lines.py [--rows 24000] [--whole-gpu] [--ll-bytes 1048576] [--sort LL|D1|Ir] [--top 40]

Needs ``valgrind``, ``nm``, ``size`` and ``addr2line`` on PATH. A few minutes (the default input).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(rows: int, reps: int, whole_gpu: bool, obj_out: str) -> None:
    """Run ``engine_icount.child`` with the engine compiled with line tables; write ``simulate``'s
    object to ``obj_out`` and print its name and load address on stderr."""
    from numba.core import codegen

    objects = {}
    set_object = codegen.CPUCodeLibrary._set_compiled_object

    def keep(self, value):
        objects[self.name] = value
        return set_object(self, value)

    codegen.CPUCodeLibrary._set_compiled_object = keep
    import teg.jit as tj

    plain = tj.njit

    def njit(func=None, **options):
        if func is None:
            return lambda f: njit(f, **options)
        options.setdefault("debug", True)
        options.setdefault("boundscheck", False)
        options.setdefault("_dbg_extend_lifetimes", False)
        return plain(func, **options)

    tj.njit = njit
    sys.path.insert(0, HERE)
    import engine_icount

    engine_icount.child(rows, reps, False, whole_gpu)
    from teg.engine.core import simulate

    for ov in simulate.overloads.values():
        obj = objects.get(ov.library.name)     # (a fresh compile keeps none: loaded from the cache it does)
        if obj is not None:
            with open(obj_out, "wb") as f:
                f.write(obj)
            name = ov.fndesc.llvm_func_name
            print(f"SIMULATE {name} {ov.library.get_pointer_to_function(name):#x}", file=sys.stderr)


def costs_by_line(cg_out: str, err: str, obj: str) -> tuple[list[str], dict[str, list[int]]]:
    """The callgrind costs of the addresses inside ``simulate``'s code, summed per source line."""
    name, ptr = re.search(r"SIMULATE (\S+) (0x[0-9a-f]+)", err).groups()
    syms = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout.splitlines()
    off = next(int(s.split()[0], 16) for s in syms if s.split()[-1] == name)
    base = int(ptr, 16) - off
    sizes = subprocess.run(["size", "-A", obj], capture_output=True, text=True, check=True).stdout
    found = dict(re.findall(r"^(\.l?text)\s+(\d+)", sizes, re.M))
    text = int(found.get(".ltext", 0)) or int(found.get(".text", 0))     # numba's large code model: .ltext
    events: list[str] = []
    per: dict[int, list[int]] = {}
    npos, addr, skip = 1, 0, False
    with open(cg_out) as f:
        for line in f:
            if line.startswith("positions:"):
                npos = len(line.split()) - 1
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("calls="):
                skip = True         # the next cost line is the call's inclusive cost
            elif line[:1] in "0123456789+-*":
                parts = line.split()
                p = parts[0]
                if p == "*":
                    a = addr
                elif p[0] in "+-":
                    v = int(p[1:], 0)
                    a = addr + v if p[0] == "+" else addr - v
                else:
                    a = int(p, 0)
                addr = a
                if skip:
                    skip = False
                elif base <= a < base + text:
                    acc = per.setdefault(a - base, [0] * len(events))
                    for i, v in enumerate(parts[npos:]):
                        acc[i] += int(v)
    offs = sorted(per)
    where = subprocess.run(["addr2line", "-e", obj] + [hex(o) for o in offs], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    lines: dict[str, list[int]] = collections.defaultdict(lambda: [0] * len(events))
    for o, w in zip(offs, where):
        w = re.sub(r" \(discriminator \d+\)", "", w).replace(ROOT + os.sep, "")
        for i, v in enumerate(per[o]):
            lines[w][i] += v
    return events, dict(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=24000, help="warp instructions per engine run")
    ap.add_argument("--whole-gpu", action="store_true", help="every SM of sm_90 (as engine_icount.py --whole-gpu)")
    ap.add_argument("--ll-bytes", type=int, default=1048576, help="size of the simulated last-level cache")
    ap.add_argument("--sort", default="LL", choices=("LL", "D1", "Ir"), help="the column the lines are sorted by")
    ap.add_argument("--top", type=int, default=40, help="lines printed")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--obj", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.rows, args.child, args.whole_gpu, args.obj)
        return 0
    missing = [t for t in ("valgrind", "nm", "size", "addr2line") if shutil.which(t) is None]
    if missing:
        print(f"engine_lines: {', '.join(missing)} not on PATH")
        return 2
    sys.path.insert(0, HERE)
    import llvmlite.binding as ll
    from engine_icount import valgrind_safe

    env = dict(os.environ, NUMBA_CPU_NAME=os.environ.get("TEG_ICOUNT_CPU", "znver3"),
               NUMBA_CPU_FEATURES=valgrind_safe(ll.get_host_cpu_features().flatten()),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    me = [sys.executable, os.path.abspath(__file__), "--rows", str(args.rows)] + (["--whole-gpu"] if args.whole_gpu else [])
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        env["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
        subprocess.run(me + ["--child", "1", "--obj", os.path.join(tmp, "prime.o")], env=env, check=True)
        for reps in (1, 3):
            out, obj = os.path.join(tmp, f"cg.{reps}"), os.path.join(tmp, f"sim.{reps}.o")
            p = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--cache-sim=yes",
                                f"--LL={args.ll_bytes},16,64", f"--callgrind-out-file={out}"]
                               + me + ["--child", str(reps), "--obj", obj],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
            res[reps] = costs_by_line(out, p.stderr, obj)
    events = res[3][0]
    ix = {e: i for i, e in enumerate(events)}
    rows = args.rows
    if args.whole_gpu:
        from teg.machine import load
        warps = load("sm_90").num_sms * 64
        rows = -(-rows // warps) * warps
    n = 2 * rows
    zero = [0] * len(events)
    diff = {k: [a - b for a, b in zip(res[3][1].get(k, zero), res[1][1].get(k, zero))]
            for k in set(res[3][1]) | set(res[1][1])}

    def col(v, c):
        if c == "Ir":
            return v[ix["Ir"]]
        k = "D1" if c == "D1" else "DL"
        return v[ix[k + "mr"]] + v[ix[k + "mw"]]

    tot = {c: sum(col(v, c) for v in diff.values()) / n for c in ("Ir", "D1", "LL")}
    print(f"engine (simulate) per simulated warp instruction, {rows:,} rows"
          f"{', every SM of sm_90' if args.whole_gpu else ', 64 warps on one SM of sm_90'}: "
          f"{tot['Ir']:.1f} x86 instructions, D1 misses {tot['D1']:.2f}, last-level misses {tot['LL']:.3f} "
          f"(last level {args.ll_bytes:,} B)")
    print(f"{'LL':>8} {'D1':>8} {'Ir':>8}  source line")
    for k, v in sorted(diff.items(), key=lambda kv: -col(kv[1], args.sort))[:args.top]:
        print(f"{col(v, 'LL') / n:8.3f} {col(v, 'D1') / n:8.3f} {col(v, 'Ir') / n:8.1f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
