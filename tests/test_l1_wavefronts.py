"""The unified L1's data stage (docs/model.md §3, "L1 wavefronts"): a global access passes it one
128 B cache line per cycle, so a warp access touching N lines holds the SM's memory pipe N cycles
and its last hit returns N - 1 cycles after the first; and the L1's XOR-based set index, which
keeps rows a power of two apart from thrashing a few sets. Hand-built inputs; each expected cycle
follows from those rules."""

from __future__ import annotations

import numpy as np

from teg.engine import Options, lower, run

from teg.engine.handmade import make_input
from teg.engine.codes import DEP_BASE, DEP_GLOBAL, MEM_GLOBAL, UNIT_CLASSES
from teg.machine import load as load_machine
from teg.memory.coalesce import line_wavefronts

INT = DEP_BASE + UNIT_CLASSES.index("int")
L1 = (256, 4, 128, 32, 28.0)            # 128 kB: 256 sets x 4 ways, 128 B lines, 32 B sectors, hit 28


def test_wavefronts_count_the_lines_a_row_touches():
    """Row 0: 4 sectors of one line (coalesced floats); row 1: 32 sectors in 32 lines 16 kB apart
    (one row per lane); row 2: no transaction; row 3: 8 sectors over 2 lines (doubles)."""
    addrs = [0, 32, 64, 96] + [i * 16384 for i in range(32)] + [4096 + 32 * k for k in range(8)]
    start = [0, 4, 36, 36, 44]
    wave, wmin = line_wavefronts(start, addrs, [128, 128, 0, 256], 128)
    assert wave.tolist() == [1, 32, 0, 2]
    assert wmin.tolist() == [1, 1, 0, 2]          # packed: 128 B fit one line, 256 B two


def two_loads(switches=None):
    """Two warps on one scheduler, each one load of 32 lines (r_wave 32, packed 1) that hits L1
    (``l1_misses`` off), then an instruction using the result."""
    tx = [[(i * 16384, 32, 0) for i in range(32)], []]
    return make_input(lat_exec=[0, 1], lat_multi=[1, 1], lat_same=[1, 1], unit=[0, 1], units_occ=(1.0, 1.0),
                      units_count=(1, 1), units_per_sm=(1, 0), dst=[[4], [5]], src=[[], [4]],
                      mem=[MEM_GLOBAL, 0], depcause=[DEP_GLOBAL, INT], rows_per_warp=[[0, 1], [0, 1]],
                      tx=tx * 2, r_wave=[32, 0, 32, 0], r_wave_min=[1, 0, 1, 0], l1=L1, wavefront_cycles=1.0,
                      switches={"l1_misses": False, **(switches or {})})


def test_a_32_line_access_holds_the_memory_pipe_32_cycles():
    """Warp 0's load issues at 0 and holds the SM's memory pipe for cycles 0-31: its last line's
    data are back at 0 + 28 + 31 = 59, its consumer issues then. Warp 1's load waits for the pipe
    (32), its data at 32 + 59 = 91; the kernel ends at 92."""
    r = run(two_loads())
    assert r.timeline.tolist() == [0, 59, 32, 91]
    assert r.cycles == 92


def test_perfect_coalescing_takes_the_packed_wavefronts():
    """With ``coalescing`` removed the access takes its packed wavefront (1): warp 1's load issues
    at 1, each result 28 cycles after its load."""
    r = run(two_loads({"coalescing": False}))
    assert r.timeline.tolist() == [0, 28, 1, 29]
    assert r.cycles <= run(two_loads()).cycles


def strided_passes(hashed):
    """PolyBench bicg's row-per-thread read: 8 loads, lane l of load w reading matrix row 32 w + l
    of a 16 kB pitch (256 rows, one sector each: 32 kB of lines, an eighth of the L1); twice."""
    rows = [[((32 * w + lane) * 16384, 32, 0) for lane in range(32)] for w in range(8)]
    tx = rows + rows
    return make_input(lat_exec=[0], lat_multi=[1], lat_same=[1], dst=[[4]], mem=[MEM_GLOBAL],
                      depcause=[DEP_GLOBAL], rows_per_warp=[[0] * 16], tx=tx, l1=L1, l2=(1024, 16, 128, 32, 200.0),
                      hashed=(hashed, False), dram_latency=400.0)


def test_xor_placement_keeps_a_strided_working_set():
    """Rows 16 kB apart are 128 lines apart: modulo 256 sets they all index sets 0 and 128, 4 ways
    each: 8 lines fit, and LRU keeps none of them for the second pass. XOR-folded, line 128 r takes
    set (r >> 1) + 128 (r & 1): 256 different sets, and the second pass hits all 256 (Nsight
    Compute measured 87.8 % L1 hits for this pattern on a Quadro GV100: 7 of every 8 iterations)."""
    linear = run(strided_passes(False)).counters
    xor = run(strided_passes(True)).counters
    assert linear["l1_hits"] == 0 and linear["l1_misses"] == 512
    assert xor["l1_hits"] == 256 and xor["l1_misses"] == 256


def test_lowering_counts_an_uncoalesced_loads_wavefronts():
    """sm_70 SASS with a trace: the lowering gives each global row its L1 lines (the emulated
    row-per-thread load below reads 32 rows 16 kB apart)."""
    m = load_machine("sm_70")
    assert m.memory.l1.index == "xor" and m.memory.l2.index == "xor"
    inp = _strided_trace_input(m)
    g = inp.static.s_mem[inp.rows.r_sidx] == MEM_GLOBAL
    assert set(inp.rows.r_wave[g].tolist()) == {32}
    assert set(inp.rows.r_wave_min[g].tolist()) == {1}


def _strided_trace_input(m, sms=1):
    """One warp, one ``LDG.E`` whose 32 lanes read rows 16 kB apart (a trace with addresses),
    lowered for ``sms`` SMs."""
    from teg.trace import KernelInfo, KernelTrace
    from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

    dst = np.full((1, MAX_TRACE_DST), -1, np.int16)
    dst[0, 0] = 4
    src = np.full((1, MAX_TRACE_SRC), -1, np.int16)
    src[0, 0] = 2
    kt = KernelTrace(
        info=KernelInfo(name="rows", grid=(1, 1, 1), block=(32, 1, 1), binary_version=70),
        opcodes=["LDG.E"], warp=np.zeros(1, np.int32), block=np.zeros(1, np.int32), pc=np.zeros(1, np.int64),
        opcode=np.zeros(1, np.int32), mask=np.full(1, 0xFFFFFFFF, np.uint32), dst=dst, src=src,
        mem_width=np.full(1, 4, np.int16), imm=np.zeros(1, np.int64), addr_start=np.array([0, 32], np.int64),
        addresses=np.arange(32, dtype=np.uint64) * 16384 + 0x100000, warp_start=np.array([0, 1], np.int64),
        warp_block=np.zeros(1, np.int32), block_xyz=np.zeros((1, 3), np.int32))
    return lower(None, kt, m, Options(sms=sms))


# ---- the tag stage and the banked data stage (memory.l1.tags_per_cycle) -------------------------

def test_tag_bank_wavefronts_by_hand():
    """``min(lines, max(ceil(lines / 4), ceil(sectors / 4), banks))`` per row: a coalesced float
    load (1 line, 4 sectors, 1 bank wavefront) 1; 32 rows 16 kB apart (32 lines, 32 sectors, every
    lane in bank 0: 32 words in one bank) 32; lanes 168 B apart (32 lines, 32 sectors; word 42 l
    is in bank 10 l mod 32, two lanes per bank) max(8, 8, 2) = 8; a float load misaligned by a
    word (2 lines, 5 sectors, 1) max(1, 2, 1) = 2, as one line per wavefront; a broadcast double
    (1 line, 1 sector, 2 half-warp phases) min(1, 2) = 1; no access 0."""
    from teg.memory.coalesce import tag_bank_wavefronts
    w = tag_bank_wavefronts([1, 32, 32, 2, 1, 0], [4, 32, 32, 5, 1, 0], [1, 32, 2, 1, 2, 0], 4, 4)
    assert w.tolist() == [1, 32, 8, 2, 1, 0]


def _lanes_trace_input(m, stride, options=None):
    """One warp, one ``LDG.E`` whose lane l reads byte ``stride * l`` of a buffer (a trace with
    addresses), lowered on one SM."""
    from teg.trace import KernelInfo, KernelTrace
    from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

    dst = np.full((1, MAX_TRACE_DST), -1, np.int16)
    dst[0, 0] = 4
    src = np.full((1, MAX_TRACE_SRC), -1, np.int16)
    src[0, 0] = 2
    kt = KernelTrace(
        info=KernelInfo(name="lanes", grid=(1, 1, 1), block=(32, 1, 1), binary_version=70),
        opcodes=["LDG.E"], warp=np.zeros(1, np.int32), block=np.zeros(1, np.int32), pc=np.zeros(1, np.int64),
        opcode=np.zeros(1, np.int32), mask=np.full(1, 0xFFFFFFFF, np.uint32), dst=dst, src=src,
        mem_width=np.full(1, 4, np.int16), imm=np.zeros(1, np.int64), addr_start=np.array([0, 32], np.int64),
        addresses=np.arange(32, dtype=np.uint64) * np.uint64(stride) + np.uint64(0x100000),
        warp_start=np.array([0, 1], np.int64), warp_block=np.zeros(1, np.int32), block_xyz=np.zeros((1, 3), np.int32))
    return lower(None, kt, m, options or Options(sms=1))


def test_lowering_takes_the_tag_stage_and_bank_wavefronts():
    """sm_70 (4 tags per cycle): lanes 168 B apart (an array of 42-float structures, Hopping_Matrix
    AoS) touch 32 lines in 16 banks, two words each: 8 wavefronts (tag-bound), 1 when packed (128 B);
    lanes 132 B apart (33 words: every lane its own bank; byte 132 l is in line l, l < 32) touch 32
    lines and 32 sectors: 8; lanes 16 kB apart stay at 32 (all in bank 0); lanes 4 B apart 1;
    lanes 8 B apart (2 lines, 8 sectors; lanes l and l + 16 share a bank) 2. Without the tag-stage rate
    (a table that does not give it) every line is a wavefront: 32."""
    import dataclasses
    m = load_machine("sm_70")
    assert m.memory.l1.tags_per_cycle == 4
    waves = {s: int(_lanes_trace_input(m, s).rows.r_wave[0]) for s in (168, 132, 16384, 4, 8)}
    assert waves == {168: 8, 132: 8, 16384: 32, 4: 1, 8: 2}
    assert int(_lanes_trace_input(m, 168).rows.r_wave_min[0]) == 1
    old = dataclasses.replace(m, memory=dataclasses.replace(m.memory, l1=dataclasses.replace(m.memory.l1,
                                                                                            tags_per_cycle=0)))
    assert {s: int(_lanes_trace_input(old, s).rows.r_wave[0]) for s in (168, 132)} == {168: 32, 132: 32}


def test_an_8_wavefront_access_holds_the_memory_pipe_8_cycles():
    """The AoS load above (8 wavefronts, packed 1) for two warps on one scheduler, L1 hits: warp
    0's load issues at 0 and holds the memory pipe for cycles 0-7, its data at 0 + 28 + 7 = 35, its
    consumer issues then; warp 1's load issues at 8, data at 8 + 35 = 43, the kernel ends at 44
    (one line per wavefront: 32 cycles each, the kernel at 92, as above). Removing coalescing (1
    wavefront) never adds cycles."""
    tx = [[(i * 168 // 128 * 128, 32, 0) for i in range(32)], []]

    def inp(switches=None):
        return make_input(lat_exec=[0, 1], lat_multi=[1, 1], lat_same=[1, 1], unit=[0, 1], units_occ=(1.0, 1.0),
                          units_count=(1, 1), units_per_sm=(1, 0), dst=[[4], [5]], src=[[], [4]],
                          mem=[MEM_GLOBAL, 0], depcause=[DEP_GLOBAL, INT], rows_per_warp=[[0, 1], [0, 1]],
                          tx=tx * 2, r_wave=[8, 0, 8, 0], r_wave_min=[1, 0, 1, 0], l1=L1, wavefront_cycles=1.0,
                          switches={"l1_misses": False, **(switches or {})})
    r = run(inp())
    assert r.timeline.tolist() == [0, 35, 8, 43]
    assert r.cycles == 44
    assert run(inp({"coalescing": False})).cycles <= r.cycles
