"""KernelProfile from real Accel-Sim traces, checked against counts done by hand on the trace text.

vectoradd (romnn/microgpusim, Pascal, tracer v4): grid 1 × 1024 threads, 100 elements. Warps 0–2
run the whole body (23 instructions, all 32 lanes), warp 3 runs it with lanes 0–3 (0000000f),
warps 4–31 exit after 9 instructions. Each body has 2 LDG.E.CG + 1 STG.E of 4 B per lane at
128-byte-aligned addresses (…000/…080/…100, and …180 for warp 3).
"""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from teg import UnknownOpcodeWarning

from teg.machine.model import (Cache, GlobalMemory, Latency, Limits, Machine, OpInfo, SharedMemory, Unit)
from teg.models.profile import ProfileError, profile_from

TRACES = Path(__file__).parent / "data" / "traces" / "microgpusim"     # provenance: data/traces/SOURCES.md
VECTORADD = TRACES / "vectoradd-100-32-trace"
MATRIXMUL = TRACES / "matrixmul-32-32-trace"


def pascal_like(coalescing="sector", sm=61, l1=None, l2=None):
    """A hand-made machine that knows the opcodes of the two Pascal traces."""
    def op(kind="alu", space="none", uclass="int"):
        return OpInfo(unit="alu", latency="alu", kind=kind, space=space, variable=kind != "alu", unit_class=uclass)
    opcodes = {
        "MOV": op(uclass="move"), "S2R": op(uclass="move"), "XMAD": op(), "ISETP": op(uclass="predicate"),
        "NOP": op(kind="nop", uclass="control"), "EXIT": op(kind="exit", uclass="control"), "SHL": op(),
        "SHR": op(), "IADD": op(), "IADD3": op(), "LOP": op(), "LOP3": op(), "LEA": op(), "SEL": op(),
        "FADD": op(uclass="fp32"), "FFMA": op(uclass="fp32"), "FMUL": op(uclass="fp32"),
        "LDG": op("load", "global", "memory"), "STG": op("store", "global", "memory"),
        "LDS": op("load", "shared", "memory"), "STS": op("store", "shared", "memory"),
        "BAR": op(kind="barrier", uclass="sync"), "BRA": op(kind="branch", uclass="control"),
        "SSY": op(kind="branch", uclass="control"), "SYNC": op(kind="branch", uclass="control"),
        "PBK": op(kind="branch", uclass="control"), "BRK": op(kind="branch", uclass="control"),
        "MUFU": op(uclass="sfu"), "IMAD": op(), "ISCADD": op(), "SHF": op(), "PSETP": op(uclass="predicate"),
        "MEMBAR": op(kind="membar", uclass="sync"), "XMAD.MRG": op(), "BFE": op(), "ICMP": op(),
    }
    return Machine(
        name="pascal-test", description="test", sm=sm, clock_mhz=1000.0, num_sms=4, warp_size=32,
        schedulers=4, issue_interval=1, dependency_model="scoreboard",
        limits=Limits(max_warps=64, max_blocks=32, max_threads=2048, max_threads_per_block=1024,
                      registers=65536, max_regs_per_thread=255, reg_alloc_unit=256),
        units={"alu": Unit("alu", 1.0)}, latencies={"alu": Latency("alu", 6, 1, 1)},
        shared=SharedMemory(banks=32, bank_bytes=4, phase_lanes=32, latency=24, wavefront_cycles=2,
                            size_per_sm=98304, max_per_block=49152, alloc_unit=256),
        memory=GlobalMemory(coalescing=coalescing, segment_bytes=(32,) if coalescing == "sector" else (32, 64, 128),
                            dram_latency=400, channels=8, interleave_bytes=256, channel_hash="linear",
                            bandwidth_gbs=200.0, max_outstanding=64, sms_per_pipeline=1, l1=l1, l2=l2),
        opcodes=opcodes,
    )


@pytest.fixture(scope="module")
def vectoradd():
    from teg.trace import load

    return load(VECTORADD, cache=False).kernels[0]


def test_vectoradd_counts_by_hand(vectoradd):
    p = profile_from(None, vectoradd, pascal_like())
    assert p.threads_per_block == 1024 and p.blocks == 1
    assert (p.active_blocks_per_sm, p.active_sms, p.active_warps_per_sm, p.rep) == (1, 1, 32, 1)
    # 344 warp instructions, 12 of them global requests (4 bodies × 3), over 32 warps
    assert p.mem_insts == 12 / 32 and p.comp_insts == 332 / 32
    # every request is 128-B aligned contiguous (or 16 B for warp 3): all coalesced
    assert p.coal_mem_insts == 12 / 32 and p.uncoal_mem_insts == 0
    # 32 B sectors: 9 full requests × 4 + 3 requests of warp 3 × 1
    assert p.trans_32 == 39 / 32 and p.trans_64 == p.trans_128 == p.trans_vector == 0
    assert p.load_bytes_per_warp == 128
    assert p.synch_insts == 0 and p.high_latency_insts == 0 and p.shared_insts == 0
    # both LDGs are issued before FADD reads them; no two warps load the same data
    assert p.independent_loads == 2 and p.duplicate_loads == 1
    # per thread: loads 3·32·2 + 4·2 = 200, stores 100; non-memory active lanes 10216
    assert p.thread_ld_global == 200 / 1024 and p.thread_st_global == 100 / 1024
    assert p.thread_comp == 10216 / 1024
    assert p.class_counts["fp32"] == 4 / 32             # one FADD per body


def test_vectoradd_periods_in_program_order(vectoradd):
    p = profile_from(None, vectoradd, pascal_like())
    # bodies: [14 comp | LDG] [IADD.X | LDG] [IADD IADD.X FADD | STG] [NOP EXIT]; early exits: [9 comp]
    comp = [round(x.comp_insts * 32) for x in p.periods]
    mem = [round(x.mem_insts * 32) for x in p.periods]
    assert comp == [4 * 14 + 28 * 9, 4, 12, 8] and mem == [4, 4, 4, 0]
    assert sum(x.comp_insts for x in p.periods) == pytest.approx(p.comp_insts)
    assert p.periods[0].mem_width == 4 and p.periods[0].mem_trans == pytest.approx(13 / 4)


def test_vectoradd_gt200_segments(vectoradd):
    # GT200 (cc 1.3) segments: a full warp of 4 B words = 2 × 64 B; warp 3's 16 B = 1 × 32 B
    p = profile_from(None, vectoradd, pascal_like("cc13", sm=13))
    assert p.trans_64 == 18 / 32 and p.trans_32 == 3 / 32
    assert p.uncoal_mem_insts == 0
    # compute capability 1.0 rule: lane k reads word k of a 64-B aligned segment → coalesced
    p10 = profile_from(None, vectoradd, pascal_like("cc13", sm=10))
    assert p10.coal_mem_insts == 12 / 32


def test_uncoalesced_when_lanes_are_permuted(vectoradd):
    # Reverse the lanes of every request: same bytes, same sectors, still coalesced under the
    # sector and cc1.3 rules, but uncoalesced under the cc1.0 rule (lane k must read word k).
    kt = vectoradd
    addrs = kt.addresses.copy()
    for i in np.flatnonzero(kt.mem_width > 0):
        a, b = kt.addr_start[i], kt.addr_start[i + 1]
        addrs[a:b] = addrs[a:b][::-1]
    swapped = replace(kt, addresses=addrs)
    assert profile_from(None, swapped, pascal_like()).uncoal_mem_insts == 0
    p10 = profile_from(None, swapped, pascal_like("cc13", sm=10))
    assert p10.uncoal_mem_insts == 12 / 32
    # stride-2 words: 32 lanes × 8 B span → 8 sectors for a 4-sector payload → uncoalesced
    spread = addrs.copy()
    for i in np.flatnonzero(kt.mem_width > 0):
        a, b = kt.addr_start[i], kt.addr_start[i + 1]
        base = int(kt.addresses[a])
        spread[a:b] = base + 8 * np.arange(b - a, dtype=np.uint64)
    p = profile_from(None, replace(kt, addresses=spread), pascal_like())
    assert p.uncoal_mem_insts == 9 / 32                  # the 3 requests of warp 3 stay in one sector
    assert p.uncoal_per_mw == 8


def test_unknown_opcode_reported(vectoradd):
    m = pascal_like()
    ops = dict(m.opcodes)
    del ops["FADD"]
    with pytest.raises(ProfileError, match="FADD"):
        profile_from(None, vectoradd, replace(m, opcodes=ops))
    with pytest.warns(UnknownOpcodeWarning, match="FADD"):
        p = profile_from(None, vectoradd, replace(m, opcodes=ops), unknown="alu")
    assert p.unknown_opcodes == ("FADD",)


def test_cache_model_rates(vectoradd):
    l1 = Cache(size_bytes=32768, line_bytes=128, sector_bytes=32, assoc=4, latency=30)
    l2 = Cache(size_bytes=1 << 20, line_bytes=128, sector_bytes=32, assoc=16, latency=200)
    p = profile_from(None, vectoradd, pascal_like(l1=l1, l2=l2))
    # every load sector is touched once: no hits anywhere
    assert p.l1_hit_rate == 0 and p.l2_hit_rate == 0
    # load the same array twice: the second LDG of every body now re-reads the first's sectors
    kt = vectoradd
    addrs = kt.addresses.copy()
    ops = np.asarray(kt.opcode)
    ldg = kt.opcodes.index("LDG.E.CG")
    rows = np.flatnonzero(ops == ldg)
    for first, second in zip(rows[0::2], rows[1::2]):
        a, b = kt.addr_start[first], kt.addr_start[first + 1]
        c = kt.addr_start[second]
        addrs[c:c + (b - a)] = addrs[a:b]
    # LDG.E.CG is ld.global.cg: cached in L2 only (teg.memory.cachepolicy, shared with the engine),
    # so the re-reads miss L1 and hit L2
    p = profile_from(None, replace(kt, addresses=addrs), pascal_like(l1=l1, l2=l2))
    assert p.l1_hit_rate == 0 and p.l2_hit_rate == 0.5
    # the same trace with plain LDG.E (cached in L1): the re-reads hit L1
    plain = [("LDG.E" if o == "LDG.E.CG" else o) for o in kt.opcodes]
    p = profile_from(None, replace(kt, addresses=addrs, opcodes=plain), pascal_like(l1=l1, l2=l2))
    assert p.l1_hit_rate == 0.5 and p.l2_hit_rate == 0
    p_nol1 = profile_from(None, replace(kt, addresses=addrs), pascal_like(l2=l2))
    assert p_nol1.l1_hit_rate is None and p_nol1.l2_hit_rate == 0.5


def test_occupancy_and_launch_shape(vectoradd):
    # 1024 threads × 8 registers on 64 K registers / 2048 threads: 2 blocks fit, the grid has 1
    p = profile_from(None, vectoradd, pascal_like())
    assert (p.active_blocks_per_sm, p.active_sms) == (1, 1)
    grid = replace(vectoradd, info=replace(vectoradd.info, grid=(9, 1, 1)))
    p = profile_from(None, grid, pascal_like())       # 9 blocks on 4 SMs, 2 resident per SM
    assert (p.active_blocks_per_sm, p.active_sms, p.rep) == (2, 4, 9 / 8)
    p = profile_from(None, grid, pascal_like(), active_blocks_per_sm=1)
    assert p.rep == 9 / 4


@pytest.fixture(scope="module")
def matrixmul():
    from teg.trace import load

    return MATRIXMUL, load(MATRIXMUL, cache=False).kernels[0]


def _text_counts(path):
    """Independent count from the .traceg text: opcode base → warp instructions, lanes."""
    counts, lanes = {}, {}
    for line in (path / "kernel-1.traceg").read_text().splitlines():
        f = line.split()
        if len(f) < 4 or f[0].startswith(("#", "-")) or "=" in line:
            continue
        mask = int(f[1], 16)
        k = 4 if f[2] == "1" else 3
        op = f[k].split(".")[0]
        counts[op] = counts.get(op, 0) + 1
        lanes[op] = lanes.get(op, 0) + bin(mask).count("1")
    return counts, lanes


def test_matrixmul_counts_match_the_trace_text(matrixmul):
    d, kt = matrixmul
    counts, lanes = _text_counts(d)
    with pytest.warns(UnknownOpcodeWarning, match="IADD32I"):
        p = profile_from(None, kt, pascal_like(), unknown="alu")
    warps = kt.num_warps
    assert warps == 32
    assert p.synch_insts == counts["BAR"] / warps
    assert p.mem_insts == (counts.get("LDG", 0) + counts.get("STG", 0)) / warps
    assert p.shared_insts == (counts.get("LDS", 0) + counts.get("STS", 0)) / warps
    assert p.comp_insts + p.mem_insts == sum(counts.values()) / warps
    assert p.thread_ld_shared == lanes["LDS"] / 1024
    assert p.active_warps_per_sm == 32


def _program_for(kt, rename=None):
    """A Program with one instruction per traced PC (opcode text from the trace, or ``rename``)."""
    from teg.sass.program import Instruction, Program

    seen = {}
    for pc, op in zip(np.asarray(kt.pc).tolist(), np.asarray(kt.opcode).tolist()):
        seen.setdefault(pc, kt.opcodes[op])
    ins = []
    for k, (pc, text) in enumerate(sorted(seen.items())):
        text = (rename or {}).get(text, text)
        base, *mods = text.split(".")
        ins.append(Instruction(index=k, address=pc, opcode=text, base=base, modifiers=tuple(mods), operands=()))
    return Program(name=kt.info.name, arch="sm_61", instructions=ins)


def test_program_join_uses_static_opcodes(vectoradd):
    m = pascal_like()
    ops = dict(m.opcodes)
    ops["FADD.FTZ"] = replace(ops["FADD"], unit_class="fp16")      # only the static text says .FTZ
    m = replace(m, opcodes=ops)
    plain = profile_from(None, vectoradd, m)
    joined = profile_from(_program_for(vectoradd, {"FADD": "FADD.FTZ"}), vectoradd, m)
    assert plain.class_counts["fp32"] == 4 / 32 and "fp16" not in plain.class_counts
    assert joined.class_counts["fp16"] == 4 / 32 and "fp32" not in joined.class_counts
    assert joined.comp_insts == plain.comp_insts and joined.mem_insts == plain.mem_insts


def test_program_from_another_binary_is_rejected(vectoradd):
    from teg import TegError

    prog = _program_for(vectoradd, {"FADD": "IADD"})
    with pytest.raises(TegError, match="FADD"):
        profile_from(prog, vectoradd, pascal_like())
