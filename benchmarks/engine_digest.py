"""Engine digests: a SHA-256 of the full outputs of a fixed set of engine runs, to show that a change
meant to keep the engine's results (a refactoring, a speed-up) keeps every one of them bit for bit.

The set (about 130 runs, under a minute once numba's cache is warm) covers the bundled example
(``traces/``: trace with SASS, trace alone) on every machine table of the Volta-and-later
family, with each scheduling policy, dependency model, sampled SM count, warp and block sweep,
carveout, each mechanism removed on its own, the recorded timeline, order and per-instruction
attribution and a replay of the recorded order; the Accel-Sim traces under ``tests/data`` on their
suggested machines (whole GPU and 2 sampled SMs); the ``engine_speed.py`` synthetic loop on one SM
and on the whole GPU; hand-built inputs (:func:`make_input`) for the barrier, cp.async, address
translation, L2 partition and MSHR paths; the straight-line kernels of ``tests/fixtures/sass`` timed
from their SASS alone on every architecture; and the engine's refusals (an infeasible replay, a
block too large), whose messages are hashed.

A run's digest covers everything :class:`teg.engine.Result` holds: cycles, instructions, the stall
breakdown, counters, per-PC counts and waits, per-SM cycles, the set-up and per-SM outcome (per-SM
blocks, the average SM's breakdown, the kernel launch cycles …; hashed as one dict, ``meta``) and every record array (timeline, order, transaction
records, per-instruction causes), each array with its dtype and shape.

    python benchmarks/engine_digest.py [--save FILE] [--check FILE] [-k SUBSTRING]

prints one line per run (name and the first 16 hex digits of its digest) and the digest of the
whole set; ``--save`` writes the digests as JSON, ``--check`` compares with such a file and exits 1
naming every run that differs (or is missing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
TRACES = ROOT / "tests" / "data" / "traces"
EXAMPLE_TRACE = ROOT / "traces" / "matmul_abt.sm_90.trace.npz"
EXAMPLE_SASS = ROOT / "traces" / "matmul_abt.sm_90.sass"
FIXTURES = ROOT / "tests" / "fixtures" / "sass"
STRAIGHT_LINE = ("vec4_ldg", "saxpy", "transpose_shared", "transpose_naive", "cp_async_copy", "local_spill",
                 "wmma_gemm", "half2_axpy", "shuffles_votes")
VOLTA_PLUS = ("sm_70", "v100", "quadro_gv100", "sm_75", "sm_80", "a100_40", "a100_80", "sm_86", "a40", "sm_89",
              "l40", "sm_90", "h100_sxm", "h100_pcie", "h200", "sm_100", "sm_120")


def _feed(h, x) -> None:
    """Feed a canonical serialization of ``x`` (nested dicts, lists, arrays, scalars) into ``h``."""
    if isinstance(x, np.ndarray):
        h.update(f"A{x.dtype.str}{x.shape}".encode())
        h.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, dict):
        h.update(f"D{len(x)}".encode())
        for k in sorted(x, key=str):
            _feed(h, str(k))
            _feed(h, x[k])
    elif isinstance(x, (list, tuple)):
        h.update(f"L{len(x)}".encode())
        for v in x:
            _feed(h, v)
    elif isinstance(x, (np.generic,)):
        _feed(h, np.asarray(x))
    else:
        h.update(f"{type(x).__name__}:{x!r}".encode())


def _meta(res) -> dict:
    """The run's set-up and per-SM outcome as one dict: ``Result.meta`` before the typed set-up
    (:mod:`teg.engine.setup`), the union of ``setup.to_dict()`` (none for an input built by hand)
    and ``outcome.to_dict()`` after — the same keys and values, so digests saved before compare."""
    if hasattr(res, "meta"):
        return res.meta
    return {**(res.setup.to_dict() if res.setup is not None else {}), **res.outcome.to_dict()}


def result_digest(res) -> str:
    """SHA-256 over every field of a :class:`teg.engine.Result`."""
    h = hashlib.sha256()
    for name in ("cycles", "instructions", "stalls", "counters", "pc_count", "pc_wait", "sm_cycles", "timeline",
                 "meta", "order", "row_record", "tx_record", "pc_causes"):
        _feed(h, name)
        _feed(h, _meta(res) if name == "meta" else getattr(res, name))
    return h.hexdigest()


def _make_input():
    try:
        from teg.engine.handmade import make_input
    except ImportError:
        from teg.engine import make_input
    return make_input


def _runs():
    """(name, thunk) pairs; each thunk returns a Result (or raises EngineError)."""
    from teg.engine import Options, lower, run, with_record_order, with_replay, with_switches
    from teg.engine.records import with_records
    from teg.engine.options import MECHANISMS
    from teg.machine import load as load_machine
    from teg.sass import parse_file
    from teg.trace import load as load_trace

    machines = {}

    def machine(name):
        if name not in machines:
            machines[name] = load_machine(name)
        return machines[name]

    kt = load_trace(EXAMPLE_TRACE).kernels[0]
    prog = parse_file(str(EXAMPLE_SASS))[0]
    lowered = {}

    def low(prog_, kt_, mname, **opts):
        key = (id(prog_), id(kt_), mname, tuple(sorted(opts.items())))
        if key not in lowered:
            lowered[key] = lower(prog_, kt_, machine(mname), Options(**opts))
        return lowered[key]

    out = []
    for m in VOLTA_PLUS:
        out.append((f"example/{m}", lambda m=m: run(low(prog, kt, m))))
        out.append((f"example/{m}/sms=1", lambda m=m: run(low(prog, kt, m, sms=1))))
    for m in ("sm_75", "sm_90", "a100_40"):
        out.append((f"example-trace-only/{m}", lambda m=m: run(low(None, kt, m))))
    # SASS alone: the straight-line kernels of tests/fixtures/sass, every warp on the same path
    for arch in ("75", "80", "86", "89", "90", "100", "120"):
        for p in parse_file(str(FIXTURES / f"kernels.sm_{arch}.sass")):
            if p.name in STRAIGHT_LINE:
                out.append((f"sass-only/sm_{arch}/{p.name}/warps=8",
                            lambda p=p, a=arch: run(low(p, None, f"sm_{a}", warps=8))))
                if arch in ("80", "90"):
                    out.append((f"sass-only/sm_{arch}/{p.name}/warps=3/scoreboard/lrr",
                                lambda p=p, a=arch: run(low(p, None, f"sm_{a}", warps=3, policy="lrr",
                                                            dependency_model="scoreboard"))))
    for opts in ({"sms": 4}, {"sms": 3, "policy": "lrr"}, {"policy": "lrr"}, {"dependency_model": "scoreboard"},
                 {"dependency_model": "controlcodes"}, {"warps": 1}, {"warps": 4}, {"warps": 16}, {"warps": 64},
                 {"warps": 48, "policy": "lrr"}, {"blocks": 2}, {"blocks": 3}, {"blocks_per_sm": 1},
                 {"shared_carveout": 0}, {"shared_carveout": 100}, {"sms": 2, "dependency_model": "scoreboard"}):
        name = ",".join(f"{k}={v}" for k, v in opts.items())
        out.append((f"example/sm_90/{name}", lambda o=opts: run(low(prog, kt, "sm_90", **o))))
    for mech in MECHANISMS:
        out.append((f"example/sm_90/without={mech}",
                    lambda mech=mech: run(with_switches(low(prog, kt, "sm_90"), **{mech: False}))))
        out.append((f"example/a100_40/sms=2/without={mech}",
                    lambda mech=mech: run(with_switches(low(prog, kt, "a100_40", sms=2), **{mech: False}))))
    for m, opts in (("sm_90", {}), ("sm_90", {"sms": 2}), ("v100", {"warps": 8}), ("sm_75", {"policy": "lrr"})):
        tag = f"{m}/" + ",".join(f"{k}={v}" for k, v in opts.items())
        out.append((f"example/{tag}/records",
                    lambda m=m, o=opts: run(with_records(low(prog, kt, m, **o), timeline=True, instructions=True))))

        def replayed(m=m, o=opts):
            inp = low(prog, kt, m, **o)
            base = run(with_record_order(inp))
            return run(with_records(with_replay(with_switches(inp, bank_conflicts=False, l1_misses=False),
                                                base.order), timeline=True))
        out.append((f"example/{tag}/order", lambda m=m, o=opts: run(with_record_order(low(prog, kt, m, **o)))))
        out.append((f"example/{tag}/replay-without", replayed))

    # Accel-Sim traces of tests/data on their suggested machines
    for rel in ("microgpusim/vectoradd-100-32-trace/kernelslist.g", "microgpusim/matrixmul-32-32-trace/kernelslist.g",
                "dp-performance-accel-sim/simpletorch/kernelslist.g"):
        tr = load_trace(TRACES / rel)
        for i, k in enumerate(tr.kernels):
            from teg.machine import for_arch
            mname = for_arch(k.info.binary_version)
            tag = f"{rel.split('/')[1]}/{i}:{k.info.name[:24]}/{mname}"
            out.append((tag, lambda k=k, mname=mname: run(lower(None, k, machine(mname), Options()))))
            out.append((tag + "/sms=2", lambda k=k, mname=mname: run(lower(None, k, machine(mname), Options(sms=2)))))
            out.append((tag + "/sms=1/lrr/records",
                        lambda k=k, mname=mname: run(with_records(lower(None, k, machine(mname),
                                                                        Options(sms=1, policy="lrr")),
                                                                  timeline=True, instructions=True))))

    # the engine_speed.py synthetic loop
    sys.path.insert(0, str(HERE))
    import engine_speed as es
    for body_name, body in (("mixed", es.BODY), ("alu", es.ALU_BODY)):
        skt, _ = es.synthetic_trace(64 * 96, 64, body)
        out.append((f"synthetic/{body_name}/sm_90/warps=64", lambda s=skt: run(lower(None, s, machine("sm_90"),
                                                                                      Options(warps=64)))))
        n = machine("sm_90").num_sms
        gkt, _ = es.synthetic_trace(n * 64 * 48, n * 64, body)
        out.append((f"synthetic/{body_name}/sm_90/whole", lambda s=gkt, n=n: run(lower(None, s, machine("sm_90"),
                                                                                       Options(sms=n)))))
    skt, _ = es.synthetic_trace(16 * 64 * 8, 16 * 64, es.BODY)
    out.append(("synthetic/mixed/a100_40/sms=16/lrr", lambda s=skt: run(lower(None, s, machine("a100_40"),
                                                                              Options(sms=16, policy="lrr")))))

    # hand-built inputs: barriers, cp.async, TLB, partitions and slices, MSHRs, dealing, refusals
    mi = _make_input()
    from teg.engine.codes import DEP_BASE, MEM_GLOBAL, MEM_SHARED
    fp = DEP_BASE + 1
    hand = {
        "chain": lambda: mi(lat_exec=[4] * 7, lat_multi=[1] * 7, lat_same=[1] * 7, dst=[[4]] * 7, src=[[4, 2]] * 7,
                            depcause=[fp] * 7),
        "barrier": lambda: mi(lat_exec=[4, 20, 4], lat_multi=[1, 1, 1], lat_same=[2, 1, 2], barrier=[0, 1, 0],
                              rows_per_warp=[[0, 0, 1, 2], [0, 1, 2, 2], [1, 2], [0, 0, 0, 1, 2]],
                              warps_per_block=2, sms=2, schedulers=2),
        "controlcodes": lambda: mi(lat_exec=[6, 30, 4, 4], lat_multi=[1, 2, 1, 1], lat_same=[2, 2, 2, 2],
                                   dependency_model="controlcodes", mem=[0, 2, 0, 0], dst=[[1], [2], [3], [4]],
                                   src=[[0], [1], [2], [3]],
                                   ctrl={"ctrl": [1, 1, 1, 1], "stall": [2, 1, 4, 1], "yield": [1, 0, 1, 1],
                                         "wbar": [7, 0, 7, 7], "rbar": [7, 7, 1, 7], "wait": [0, 0, 1, 2]},
                                   tx=[[], [(0x1000, 32, 0)], [], []] * 2, rows_per_warp=[[0, 1, 2, 3]] * 2,
                                   l1=(4, 4, 128, 32, 30.0), l2=(64, 8, 128, 32, 200.0)),
        "async": lambda: mi(lat_exec=[4, 4, 4, 4], lat_multi=[1] * 4, lat_same=[1] * 4, mem=[2, 2, 0, 0],
                            dependency_model="controlcodes", dst=[[], [], [], [5]], src=[[1], [1], [], [5]],
                            ctrl={"ctrl": [1] * 4, "stall": [1] * 4, "yield": [1] * 4, "wbar": [7, 7, 2, 7],
                                  "rbar": [7] * 4, "wait": [0, 0, 0, 4], "depbar": [-1, -1, -1, 2],
                                  "depbar_n": [0, 0, 0, 1], "async": [1, 1, 2, 0]},
                            tx=[[(0x2000 + 128 * i, 128, i % 2)] if i % 4 < 2 else [] for i in range(12)],
                            rows_per_warp=[[0, 1, 2, 3]] * 3, channels=2, dram_latency=300.0,
                            service_per_byte=0.25, l2=(16, 4, 128, 32, 120.0)),
        "tlb-partitions-slices": lambda: mi(
            lat_exec=[4, 4], lat_multi=[1, 1], lat_same=[1, 1], mem=[2, 0], dst=[[3], [4]], src=[[1], [3]],
            rows_per_warp=[[0, 1] * 3] * 8, warps_per_block=2, sms=4, schedulers=2, deal=True,
            tx=[[(((w * 7 + r) % 5) * 0x200000 + 128 * r, 128, (w + r) % 4)] if r % 2 == 0 else []
                for w in range(8) for r in range(6)],
            l1=(4, 4, 128, 32, 30.0), l2=(32, 8, 128, 32, 200.0), channels=4, service_per_byte=0.1,
            l2_partitions=2, l2_partition_bytes=4096, l2_far_latency=260.0, l2_slices=8,
            l2_slice_bytes_per_clk=64.0, tlb=(2 << 20, 4, 32 << 20, 16, 40.0, 300.0)),
        "mshr-pipe": lambda: mi(
            lat_exec=[4], lat_multi=[1], lat_same=[1], mem=[2], dst=[[2]], src=[[1]],
            rows_per_warp=[[0] * 6] * 6, sms=2, tx=[[(0x10000 * w + 32 * r + 256 * k, 32, k % 2) for k in range(3)]
                                                    for w in range(6) for r in range(6)],
            l1=(4, 4, 128, 32, 30.0), l2=(32, 8, 128, 32, 200.0), channels=2, service_per_byte=0.5,
            mshr_lines=2, sms_per_pipeline=2),
        "shared-fetch-const": lambda: mi(
            lat_exec=[4, 24, 4], lat_multi=[1, 2, 1], lat_same=[1, 4, 1], mem=[0, 1, 0], mem_lat=[0, 24, 0],
            dst=[[1], [2], [3]], src=[[0], [1], [2]], rows_per_warp=[[0, 1, 2] * 2] * 4, r_wave=[0, 3, 0] * 8,
            r_wave_min=[0, 1, 0] * 8, wavefront_cycles=2.0, iline=[0, 0, 1], cline=[0, -1, 1], fetch_prefetch=1,
            l2=(16, 4, 128, 32, 150.0), schedulers=2, policy="lrr"),
        "block-too-big": lambda: mi(lat_exec=[4], lat_multi=[1], lat_same=[1], rows_per_warp=[[0]] * 4, slots=2,
                                    warps_per_block=4),
        "barrier-pair": lambda: mi(lat_exec=[1, 4], lat_multi=[1, 1], lat_same=[1, 1], barrier=[1, 0],
                                   dst=[[], [5]], rows_per_warp=[[0, 1], [1, 0]], warps_per_block=2, schedulers=2),
        "replay-deadlock": lambda: with_replay(hand["barrier-pair"](), [0, 1, 2, 3]),
        "replay-feasible": lambda: with_replay(hand["barrier-pair"](), [0, 2, 3, 1]),
        "replay-not-resident": lambda: with_replay(mi(lat_exec=[4], lat_multi=[1], lat_same=[1],
                                                      rows_per_warp=[[0, 0]] * 2, warps_per_block=1, resident=1),
                                                   [2, 0, 1, 3]),
    }
    for name, build in hand.items():
        out.append((f"hand/{name}", lambda b=build: run(b())))
        out.append((f"hand/{name}/records", lambda b=build: run(with_records(b(), timeline=True, instructions=True))))
    return out


def digests(select: str | None = None) -> dict[str, str]:
    from teg.engine import EngineError

    got = {}
    for name, thunk in _runs():
        if select and select not in name:
            continue
        try:
            got[name] = result_digest(thunk())
        except EngineError as e:
            got[name] = hashlib.sha256(f"EngineError:{e}".encode()).hexdigest()
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--save", metavar="FILE", help="write the digests as JSON")
    ap.add_argument("--check", metavar="FILE", help="compare with digests saved earlier; exit 1 on any difference")
    ap.add_argument("-k", dest="select", help="only the runs whose name contains this text")
    args = ap.parse_args()
    got = digests(args.select)
    for name, d in got.items():
        print(f"{d[:16]}  {name}")
    whole = hashlib.sha256("".join(f"{k}={v}\n" for k, v in sorted(got.items())).encode()).hexdigest()
    print(f"{len(got)} runs, digest of the set {whole[:16]}")
    if args.save:
        with open(args.save, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
    if args.check:
        with open(args.check) as f:
            want = json.load(f)
        bad = [k for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
        for k in bad:
            print(f"DIFFERS: {k}" if k in want and k in got else f"MISSING: {k}")
        print(f"check against {os.path.basename(args.check)}: {len(got) - len(bad)} of {len(want)} identical")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
