"""L1 bypass (teg.memory.cachepolicy through teg.engine.lower): ``.cg``-style loads
(``LDG.E.STRONG.GPU`` on sm_70+, ``LDG.E.CG`` before Volta), volatile/system-scope loads, stores
and atomics never look up or allocate in L1; ordinary ``LDG.E`` does.

Hand-built one-warp traces on the shipped sm_90 table (no control codes → register scoreboard):
a chain of dependent loads of one address issues each load when the previous one's data is back,
so the issue-to-issue gaps are the per-load latencies of docs/model.md §3: the first access
misses everything (``dram_latency``), then an L1-cached load hits L1 (``l1.latency``) and an
L2-only load hits L2 (``l2.latency``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from teg.engine import Options, lower, run
from teg.machine import load as load_machine
from teg.memory.cachepolicy import bypasses_l1, load_bypasses_l1
from teg.trace import KernelInfo, KernelTrace
from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

SM90 = load_machine("sm_90")
FIX = Path(__file__).parent / "fixtures" / "sass"
ADDR = 0x10000


def one_warp_trace(rows, binary_version=90) -> KernelTrace:
    """``rows``: (opcode, dst regs, src regs, byte address or None, width); lane 0 only."""
    opcodes = sorted({r[0] for r in rows})
    n = len(rows)
    dst = np.full((n, MAX_TRACE_DST), -1, np.int16)
    src = np.full((n, MAX_TRACE_SRC), -1, np.int16)
    addrs, naddr = [], []
    for i, (_, d, s, a, _) in enumerate(rows):
        dst[i, :len(d)] = d
        src[i, :len(s)] = s
        if a is not None:
            addrs.append(a)
        naddr.append(int(a is not None))
    addr_start = np.zeros(n + 1, np.int64)
    np.cumsum(naddr, out=addr_start[1:])
    return KernelTrace(
        info=KernelInfo(name="chain", grid=(1, 1, 1), block=(32, 1, 1), binary_version=binary_version),
        opcodes=opcodes, warp=np.zeros(n, np.int32), block=np.zeros(n, np.int32),
        pc=np.arange(n, dtype=np.int64) * 16, opcode=np.array([opcodes.index(r[0]) for r in rows], np.int32),
        mask=np.ones(n, np.uint32), dst=dst, src=src,
        mem_width=np.array([r[4] if r[3] is not None else 0 for r in rows], np.int16),
        imm=np.zeros(n, np.int64), addr_start=addr_start, addresses=np.asarray(addrs, np.uint64),
        warp_start=np.array([0, n], np.int64), warp_block=np.zeros(1, np.int32), block_xyz=np.zeros((1, 3), np.int32))


def chase(opcode: str, n: int, width: int = 8):
    """``n`` dependent loads ``R2 <- [ADDR]`` (each reads the previous one's R2), then a consumer."""
    return [(opcode, [2, 3], [2, 3], ADDR, width) for _ in range(n)] + [("IADD3", [4], [2], None, 0)]


def run_rows(rows, machine=SM90):
    r = run(lower(None, one_warp_trace(rows), machine, Options(record_timeline=True)))
    return r, np.diff(np.asarray(r.timeline, np.int64))


N = 6


@pytest.mark.parametrize("opcode", ["LDG.E.64.STRONG.GPU", "LDG.E.64.STRONG.SYS", "LD.E.64.STRONG.GPU"])
def test_l2_only_chase_costs_l2_latency_per_load(opcode):
    """ld.global.cg / ld.volatile / generic ld.cg (ptxas 13.0 sm_90 spellings): every repeat of
    the same address is an L2 hit, never an L1 hit."""
    gm = SM90.memory
    r, gaps = run_rows(chase(opcode, N))
    assert gaps[0] == gm.dram_latency
    assert list(gaps[1:N]) == [gm.l2.latency] * (N - 1)
    c = r.counters
    assert (c["l1_hits"], c["l1_misses"], c["l2_hits"], c["l2_misses"]) == (0, 0, N - 1, 1)


@pytest.mark.parametrize("opcode", ["LDG.E.64", "LDG.E.64.STRONG.SM", "LDG.E.EF.64", "LDG.E.64.CONSTANT"])
def test_l1_cached_chase_costs_l1_latency_after_the_first(opcode):
    """Plain ld.global / ld.ca / ld.cs / ld.nc: the first load fills L1, the rest hit it."""
    gm = SM90.memory
    r, gaps = run_rows(chase(opcode, N))
    assert gaps[0] == gm.dram_latency
    assert list(gaps[1:N]) == [gm.l1.latency] * (N - 1)
    c = r.counters
    assert (c["l1_hits"], c["l1_misses"], c["l2_hits"], c["l2_misses"]) == (N - 1, 1, 0, 1)


def test_atomics_never_hit_l1_even_on_a_line_l1_holds():
    """An LDG.E brings the line into L1; dependent ATOMG on the same address still resolve in L2
    (gap = l2.latency each) and RED/REDG never touch L1 either."""
    gm = SM90.memory
    rows = ([("LDG.E", [2], [2], ADDR, 4), ("LDG.E", [2], [2], ADDR, 4)]
            + [("ATOMG.E.ADD.STRONG.GPU", [2], [2], ADDR, 4) for _ in range(3)]
            + [("RED.E.ADD.STRONG.GPU", [], [2], ADDR, 4), ("REDG.E.ADD.STRONG.GPU", [], [2], ADDR, 4)]
            + [("IADD3", [4], [2], None, 0)])
    r, gaps = run_rows(rows)
    assert gaps[1] == gm.l1.latency                      # the second LDG.E hits L1: the line is there
    assert list(gaps[2:5]) == [gm.l2.latency] * 3        # each ATOMG waits for the previous one (R2)
    c = r.counters
    assert c["l1_hits"] == 1 and c["l1_misses"] == 1     # only the two LDG.E looked up L1
    assert c["l2_hits"] == 5 and c["l2_misses"] == 1


def test_stores_do_not_allocate_in_l1():
    """STG is write-through without L1 allocation: a load after a store to the same address
    misses L1 (and hits the L2 line the store allocated)."""
    gm = SM90.memory
    rows = [("STG.E", [], [5], ADDR, 4), ("LDG.E", [2], [2], ADDR, 4), ("LDG.E", [2], [2], ADDR, 4),
            ("IADD3", [4], [2], None, 0)]
    r, gaps = run_rows(rows)
    assert gaps[2] == gm.l1.latency
    c = r.counters
    assert (c["l1_hits"], c["l1_misses"], c["l2_hits"], c["l2_misses"]) == (1, 1, 1, 1)


def test_lowering_marks_l2_only_static_instructions():
    opcodes = ["LDG.E.64.STRONG.GPU", "LDG.E.64.STRONG.SYS", "LDG.E.64.STRONG.SM", "LDG.E.64",
               "LD.E.64.STRONG.GPU", "LDG.E.SYS", "STG.E.64", "ATOMG.E.ADD.STRONG.GPU", "LDGSTS.E.BYPASS.128",
               "LDGSTS.E.128", "FFMA"]
    rows = [(op, [], [], ADDR if op != "FFMA" else None, 8) for op in opcodes]
    inp = lower(None, one_warp_trace(rows), SM90, Options())
    # 1 = bypasses L1, 2 = a write (bypasses L1; the write-back L2 acknowledges it)
    got = dict(zip(inp.setup.opcodes, inp.static.s_store.tolist()))
    assert got == {"LDG.E.64.STRONG.GPU": 1, "LDG.E.64.STRONG.SYS": 1, "LDG.E.64.STRONG.SM": 0, "LDG.E.64": 0,
                   "LD.E.64.STRONG.GPU": 1, "LDG.E.SYS": 0, "STG.E.64": 2, "ATOMG.E.ADD.STRONG.GPU": 1,
                   "LDGSTS.E.BYPASS.128": 1, "LDGSTS.E.128": 0, "FFMA": 0}


# PTX load → SASS, observed with ptxas 13.0 (nvcc -cubin, cuobjdump -sass) for sm_75 and sm_90;
# pre-Volta spellings from the Accel-Sim sample trace (LDG.E.CG, sm_61) and public cuobjdump output.
PTX_TO_SASS = [
    ("ld.global.u64", ["LDG.E.64.SYS", "LDG.E.64"], False),
    ("ld.global.ca.u64", ["LDG.E.64.STRONG.CTA", "LDG.E.64.STRONG.SM"], False),
    ("ld.global.cs.u64", ["LDG.E.EF.64.SYS", "LDG.E.EF.64"], False),
    ("ld.global.lu.u64", ["LDG.E.LU.64.SYS", "LDG.E.LU.64"], False),
    ("ld.global.nc.u64", ["LDG.E.64.CONSTANT.SYS", "LDG.E.64.CONSTANT"], False),
    ("ld.relaxed.cta.global.u64", ["LDG.E.64.STRONG.CTA", "LDG.E.64.STRONG.SM"], False),
    ("ld.global.cg.u64", ["LDG.E.64.STRONG.GPU", "LDG.E.CG"], True),
    ("ld.relaxed.gpu.global.u64", ["LDG.E.64.STRONG.GPU"], True),
    ("ld.acquire.gpu.global.u64", ["LDG.E.64.STRONG.GPU"], True),
    ("ld.global.cv.u64", ["LDG.E.64.STRONG.SYS", "LDG.E.CV"], True),
    ("ld.volatile.global.u64", ["LDG.E.64.STRONG.SYS"], True),
    ("ld.relaxed.sys.global.u64", ["LDG.E.64.STRONG.SYS"], True),
    ("ld.cg.u64 (generic)", ["LD.E.64.STRONG.GPU"], True),
    ("cp.async.cg", ["LDGSTS.E.BYPASS.LTC128B.128"], True),
]


@pytest.mark.parametrize("ptx,sass,l2_only", PTX_TO_SASS, ids=[p[0] for p in PTX_TO_SASS])
def test_load_policy_follows_the_ptx_cache_operator(ptx, sass, l2_only):
    for op in sass:
        assert load_bypasses_l1(op) is l2_only, op
        assert bypasses_l1(op, "load", "global") is l2_only, op


def test_policy_needs_a_global_path_load():
    assert bypasses_l1("STG.E.64", "store", "global") and bypasses_l1("RED.E.ADD.STRONG.GPU", "atomic", "global")
    assert not bypasses_l1("LDL.STRONG.GPU", "load", "local")      # local memory stays L1-cached
    assert not bypasses_l1("TLD.CG", "load", "texture")


@pytest.mark.parametrize("sm", [75, 80, 86, 89, 90, 100, 120])
def test_nvcc_fixture_memory_opcodes(sm):
    """Every global load, store and atomic ptxas emitted for tests/fixtures/sass/kernels.cu: the
    plain loads (``LDG.E``, ``LDG.E.SYS``, ``.CONSTANT``, ``LDGSTS.E``) stay L1-cached, stores and
    atomics (``RED``/``REDG``/``ATOMG`` ``.STRONG.GPU``) bypass L1."""
    text = (FIX / f"kernels.sm_{sm}.sass").read_text()
    ops = set(re.findall(r"\b((?:LDG|LDGSTS|STG|ATOMG|ATOM|RED|REDG)\.[A-Z0-9_.]+)", text))
    assert ops
    for op in ops:
        info = SM90.classify(op)
        assert info is not None, op
        want = not op.startswith(("LDG.", "LDGSTS."))
        assert bypasses_l1(op, info.kind, info.space) is want, op
