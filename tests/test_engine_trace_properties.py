"""Property tests through the whole path (hypothesis): random small traces of real opcodes →
teg.engine.lower on shipped machine tables (GT200 with cc1.3 coalescing and 8 × 256 B channels,
sm_90 with sectors, L1/L2 and control-code-free scoreboard) → run."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teg.engine import Options, lower, run
from teg.machine import load as load_machine
from teg.trace import KernelInfo, KernelTrace
from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC
from test_engine_properties import check_monotone, check_replay

OPS = {
    "sm_90": [("FFMA", 0), ("IADD3", 0), ("MUFU.EX2", 0), ("LDS", 4), ("LDS.128", 16), ("STS", 4),
              ("LDG.E", 4), ("LDG.E.128", 16), ("STG.E", 4), ("BAR.SYNC.DEFER_BLOCKING", 0)],
    "gt200": [("FADD32", 0), ("SHL", 0), ("MOV", 0), ("G2R", 4), ("GLD.U32", 4), ("GST", 4), ("BAR", 0)],
}
MACHINES = {name: load_machine(name) for name in OPS}


@st.composite
def traces(draw, machine: str, max_warps: int = 3):
    ops = OPS[machine]
    opcodes = [o for o, _ in ops]
    W = draw(st.integers(1, max_warps))
    n_static = draw(st.integers(1, 8))
    static = [draw(st.integers(0, len(ops) - 1)) for _ in range(n_static)]
    sdst = [draw(st.integers(0, 7)) for _ in range(n_static)]
    ssrc = [draw(st.lists(st.integers(0, 7), max_size=2)) for _ in range(n_static)]
    cols = {k: [] for k in ("warp", "pc", "opcode", "mask", "dst", "src", "mem_width")}
    addr, naddr, warp_start = [], [], [0]
    for w in range(W):
        path = draw(st.lists(st.integers(0, n_static - 1), min_size=1, max_size=12))
        for i in path:
            op, width = ops[static[i]]
            mask = draw(st.sampled_from([0xFFFFFFFF, 0x0000FFFF, 0x80000001, 0]))
            d = np.full(MAX_TRACE_DST, -1, np.int16)
            s = np.full(MAX_TRACE_SRC, -1, np.int16)
            if width == 0 or op.startswith(("LD", "G2R", "GLD")):
                d[0] = sdst[i]
            s[:len(ssrc[i])] = ssrc[i]
            cols["warp"].append(w)
            cols["pc"].append(16 * i)
            cols["opcode"].append(static[i])
            cols["mask"].append(mask)
            cols["dst"].append(d)
            cols["src"].append(s)
            cols["mem_width"].append(width)
            k = bin(mask).count("1") if width else 0
            if k:
                stride = draw(st.sampled_from([0, 1, 2, 8, 32]))
                base = draw(st.integers(0, 64)) * 256
                lanes = np.arange(k, dtype=np.uint64)
                addr.append((np.uint64(base) + lanes * np.uint64(stride * width)).astype(np.uint64))
            naddr.append(k)
        warp_start.append(len(cols["pc"]))
    n = len(cols["pc"])
    addr_start = np.zeros(n + 1, np.int64)
    np.cumsum(naddr, out=addr_start[1:])
    info = KernelInfo(name="random", grid=(1, 1, 1), block=(32 * W, 1, 1), binary_version=90)
    return KernelTrace(
        info=info, opcodes=opcodes, warp=np.asarray(cols["warp"], np.int32), block=np.zeros(n, np.int32),
        pc=np.asarray(cols["pc"], np.int64), opcode=np.asarray(cols["opcode"], np.int32),
        mask=np.asarray(cols["mask"], np.uint32), dst=np.asarray(cols["dst"], np.int16),
        src=np.asarray(cols["src"], np.int16), mem_width=np.asarray(cols["mem_width"], np.int16),
        imm=np.zeros(n, np.int64), addr_start=addr_start,
        addresses=np.concatenate(addr) if addr else np.zeros(0, np.uint64),
        warp_start=np.asarray(warp_start, np.int64), warp_block=np.zeros(W, np.int32),
        block_xyz=np.zeros((1, 3), np.int32))


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.sampled_from(sorted(OPS)).flatmap(lambda m: st.tuples(st.just(m), traces(m))))
def test_breakdown_sums_and_runs_repeat(case):
    machine, kt = case
    inp = lower(None, kt, MACHINES[machine], Options(policy="lrr"))
    a, b = run(inp), run(inp)
    assert sum(a.stalls.values()) == a.cycles
    assert a.cycles == b.cycles and a.stalls == b.stalls and a.counters == b.counters
    assert a.instructions == kt.num_rows


@SETTINGS
@given(st.sampled_from(sorted(OPS)).flatmap(lambda m: st.tuples(st.just(m), traces(m, max_warps=1))))
def test_removing_a_mechanism_never_adds_cycles(case):
    machine, kt = case
    check_monotone(lower(None, kt, MACHINES[machine], Options()))


@SETTINGS
@given(st.sampled_from(sorted(OPS)).flatmap(lambda m: st.tuples(
    st.just(m), traces(m, max_warps=4), st.sampled_from([None, 2, 4, 8]), st.sampled_from(["gto", "lrr"]))))
def test_replay_what_ifs_never_add_cycles(case):
    """Through lower(): up to 4 trace warps, optionally run as 2-8 concurrent warps on one SM
    (sweep mode) so that they share a scheduler (GT200 has one, sm_90 four), its units, the
    memory pipeline, L1/L2 and the DRAM channels."""
    machine, kt, warps, policy = case
    check_replay(lower(None, kt, MACHINES[machine], Options(policy=policy, warps=warps)))
