"""The whole GPU: block dealing over every SM, one L2 (partitions, slices) and the DRAM shared by
all SMs, outstanding L1 misses per SM (MSHRs). Hand-built inputs, so each expected cycle count
follows from docs/model.md's equations, not from a machine table."""

from __future__ import annotations

import pytest

from teg.engine import Options, lower, run

from teg.engine.handmade import make_input
from teg.engine.lowered import with_switches
from teg.engine.codes import DEP_BASE, DEP_GLOBAL, MEM_GLOBAL, UNIT_CLASSES

INT = DEP_BASE + UNIT_CLASSES.index("int")


def alu_blocks(lengths, **kw):
    """One warp per block; warp b issues ``lengths[b]`` independent 1-cycle instructions (one per
    cycle), so it runs from its launch cycle t0 to t0 + length - 1."""
    n = max(lengths)
    return make_input(lat_exec=[1] * n, lat_multi=[1] * n, lat_same=[1] * n, depcause=[INT] * n,
                      rows_per_warp=[list(range(k)) for k in lengths], warps_per_block=1, **kw)


def test_dynamic_dealing_gives_the_next_block_to_the_sm_that_frees_first():
    """3 SMs, one resident block each; block 0 runs 100 cycles, blocks 1-5 run 10. Dealt by the
    hardware rule, SM 1 and SM 2 take blocks 3 and 4 when their first blocks retire (cycle 9, the
    next block starts at 10), and SM 1 — first in index order at cycle 19 — takes block 5: the
    kernel ends with block 0 at cycle 100. Dealt round-robin (static), block 3 waits behind block
    0 on SM 0: 100 + 10 = 110."""
    lengths = [100, 10, 10, 10, 10, 10]
    dyn = run(alu_blocks(lengths, sms=3, resident=1, deal=True))
    assert dyn.cycles == 100
    assert dyn.outcome.sm_blocks == [1, 3, 2]
    rr = run(alu_blocks(lengths, sms=3, resident=1, deal=False))
    assert rr.cycles == 110
    assert rr.outcome.sm_blocks == [2, 2, 2]


def test_sm_active_is_each_sms_span_from_the_start_to_its_last_block():
    """The SM active figure (Nsight Compute's ``sm__cycles_active.avg`` / GPU active cycles) of the
    case above. Dynamic: SM 0 runs block 0 (cycles 0-99, active 100); SM 1 blocks 1, 3, 5 (each
    retires at its 10th cycle and the next starts one cycle later: 0-9, 10-19, 20-29, active 30);
    SM 2 blocks 2 and 4 (active 20): the average SM is active (100 + 30 + 20) / 3 = 50 of the
    kernel's 100 cycles. Round-robin: SM 0 runs blocks 0 and 3 (110), SMs 1 and 2 two short
    blocks each (20): 50 of 110. A fourth SM that runs nothing counts as 0 active cycles."""
    from teg.report.summary import summary_data, summary_text

    lengths = [100, 10, 10, 10, 10, 10]
    dyn = run(alu_blocks(lengths, sms=3, resident=1, deal=True))
    assert list(dyn.sm_cycles) == [100, 30, 20] and list(dyn.sm_retired) == [100, 30, 20]
    assert dyn.sm_active == 50.0 and dyn.sm_active_ratio == 0.5
    d = summary_data(dyn)
    assert d["sm_active_cycles"] == 50.0 and d["sm_active_ratio"] == 0.5
    assert "SM active   50 cycles the average SM (50.0% of the kernel's" in summary_text(dyn)
    rr = run(alu_blocks(lengths, sms=3, resident=1, deal=False))
    assert list(rr.sm_cycles) == [110, 20, 20] and rr.sm_active_ratio == pytest.approx(50 / 110)
    idle = run(alu_blocks([10, 10, 10], sms=4, resident=1, deal=True))
    assert list(idle.sm_cycles) == [10, 10, 10, 0] and idle.sm_active_ratio == 0.75


def test_first_wave_is_spread_breadth_first():
    """2 SMs with room for 2 blocks each, 2 blocks of 50 one-cycle instructions on one scheduler:
    the first wave gives each SM one block (50 cycles), not both to SM 0 (which would issue 100
    instructions on one scheduler: 100 cycles)."""
    r = run(alu_blocks([50, 50], sms=2, resident=2, deal=True))
    assert r.cycles == 50
    assert r.outcome.sm_blocks == [1, 1]


def test_every_block_runs_once_whatever_the_dealing():
    lengths = [7, 3, 12, 5, 9, 1, 4, 8, 2, 6, 11]
    for deal in (True, False):
        for sms in (1, 2, 3, 5):
            r = run(alu_blocks(lengths, sms=sms, resident=2, deal=deal))
            assert sum(r.outcome.sm_blocks) == len(lengths)
            assert r.instructions == sum(lengths)


def one_load_per_sm(sms, addrs, **kw):
    """``sms`` single-warp blocks, each one LDG (static 0) of 32 B sectors at ``addrs[b]`` (a list
    per block) then a consumer (static 1) of its result."""
    tx = []
    rows = []
    for b in range(sms):
        tx.append([(a, 32, 0) for a in addrs[b]])
        tx.append([])
        rows.append([0, 1])
    return make_input(lat_exec=[0, 1], lat_multi=[1, 1], lat_same=[1, 1], dst=[[4], [5]], src=[[], [4]],
                      mem=[MEM_GLOBAL, 0], depcause=[DEP_GLOBAL, INT], rows_per_warp=rows, warps_per_block=1,
                      tx=tx, sms=sms, resident=1, deal=True, **kw)


L2 = (64, 4, 128, 32, 100.0)       # 64 sets x 4 ways x 128 B lines, 32 B sectors, hit latency 100


def test_two_sms_contend_for_one_l2_slice():
    """Two SMs each read 4 sectors of their own line, both lines in slice 0 of one slice serving
    32 B/clk (1 cycle per sector), L2 hits (perfect L2). SM 0's sectors are served at cycles 0-3,
    SM 1's wait behind them at 4-7: its load completes at 7 + 100 = 107, its consumer issues then
    and the kernel ends at 108. Each SM's 108 cycles get one cause each: SM 0 issues at 0 and 103,
    waits 1-99 for its load (dep_global: complete at 100 without any queue), 100-102 for its own
    sectors queued behind each other in the slice (l2_queue), and idles 104-107 (no_warp); SM 1
    issues at 0 and 107, waits 1-99 (dep_global) and 100-106 (l2_queue). The run's breakdown is
    the average SM's: those SM-cycles halved."""
    r = run(one_load_per_sm(2, [[0, 32, 64, 96], [256, 288, 320, 352]], l2=L2, l2_slices=1,
                            l2_slice_bytes_per_clk=32.0, switches={"l2_misses": False}))
    assert r.cycles == 108
    assert r.sm_cycles.tolist() == [104, 108]
    assert {k: v for k, v in r.outcome.sm_cycle_stalls.items() if v} == {
        "issue": 4, "dep_global": 198, "l2_queue": 10, "no_warp": 4}
    assert r.stalls["l2_queue"] == 5 and r.stalls["dep_global"] == 99 and sum(r.stalls.values()) == r.cycles
    # two slices, lines interleaved across them: no contention, both done at 3 + 100 + 1
    r2 = run(one_load_per_sm(2, [[0, 32, 64, 96], [128, 160, 192, 224]], l2=L2, l2_slices=2,
                             l2_slice_bytes_per_clk=32.0, switches={"l2_misses": False}))
    assert r2.cycles == 104
    # without the bandwidth mechanism the slice serves at once
    r3 = run(one_load_per_sm(2, [[0, 32, 64, 96], [256, 288, 320, 352]], l2=L2, l2_slices=1,
                             l2_slice_bytes_per_clk=32.0, switches={"l2_misses": False, "bandwidth": False}))
    assert r3.cycles == 101
    assert r3.stalls["l2_queue"] == 0


def test_one_sm_alone_on_idle_dram_reaches_its_latency_bound():
    """One SM, one load of 8 sectors (two lines) that miss in L2 on idle DRAM with 8 channels at
    1 cycle per 32 B sector: every sector starts at once on its own channel, so the load takes
    exactly the DRAM latency (300) and the kernel 301 cycles — the SM gets the whole DRAM, not
    1/N of it."""
    addrs = [[32 * k for k in range(8)]]
    tx = [[(a, 32, a // 32) for a in addrs[0]], []]
    inp = make_input(lat_exec=[0, 1], lat_multi=[1, 1], lat_same=[1, 1], dst=[[4], [5]], src=[[], [4]],
                     mem=[MEM_GLOBAL, 0], depcause=[DEP_GLOBAL, INT], rows_per_warp=[[0, 1]], tx=tx,
                     sms=1, deal=True, l2=L2, dram_latency=300.0, channels=8, service_per_byte=1 / 32)
    r = run(inp)
    assert r.cycles == 301
    assert r.counters["dram_transactions"] == 8


def test_data_shared_by_every_sm_hits_in_l2():
    """Four SMs read the same line, one after the other (each SM's block starts 200 cycles after
    the previous by a chain of ALU work): the first read misses (DRAM 300), the others hit the
    line the first one brought into the one shared L2 (hit latency 100)."""
    n = 4
    pad = 200
    rows, tx = [], []
    for b in range(n):
        rows.append([0] * (b * pad) + [1, 2])
        tx += [[] for _ in range(b * pad)] + [[(4096, 32, 0)], []]
    inp = make_input(lat_exec=[1, 0, 1], lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[3], [4], [5]],
                     src=[[], [], [4]], mem=[0, MEM_GLOBAL, 0], depcause=[INT, DEP_GLOBAL, INT],
                     rows_per_warp=rows, warps_per_block=1, tx=tx, sms=n, resident=1, deal=True,
                     l2=L2, dram_latency=300.0, channels=1, service_per_byte=0.0)
    r = run(inp)
    assert r.counters["l2_misses"] == 1
    assert r.counters["l2_hits"] == n - 1
    # the last SM's load issues at 3*200 and hits: 600 + 100 + 1
    assert r.cycles == 3 * pad + 100 + 1


def test_near_and_far_l2_partitions():
    """Two partitions interleaved every 8 KB, SM 0 near partition 0, SM 1 near partition 1 (hit
    latencies: near 100, far 180). SM 0 first reads a line whose home is partition 1 (a miss:
    DRAM 300 plus the far trip 80), then SM 1 reads it (a near hit in its home partition, 100);
    SM 0 reads it again: its near partition kept a copy on the first read (near hit, 100)."""
    addr = 8192 + 128           # home partition 1
    rows = [[1, 2, 1, 2], [0] * 1000 + [1, 2]]
    # SM 0: load, use, load again, use; SM 1 loads after 1000 one-cycle ALU rows
    tx = [[(addr, 32, 0)], [], [(addr, 32, 0)], []] + [[] for _ in range(1000)] + [[(addr, 32, 0)], []]
    inp = make_input(lat_exec=[1, 0, 1], lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[3], [4], [5]],
                     src=[[], [], [4]], mem=[0, MEM_GLOBAL, 0], depcause=[INT, DEP_GLOBAL, INT],
                     rows_per_warp=rows, warps_per_block=1, tx=tx, sms=2, resident=1, deal=True,
                     l2=L2, l2_partitions=2, l2_partition_bytes=8192, l2_far_latency=180.0,
                     dram_latency=300.0, channels=1)
    r = run(inp)
    t = r.timeline.tolist()
    # SM 0: load at 0 misses → 0 + 300 + 80; use at 380; the second load at 381 hits its near
    # copy → 481; the use at 481
    assert t[:4] == [0, 380, 381, 481]
    assert r.counters["l2_misses"] == 1 and r.counters["l2_hits"] == 2
    # SM 1's load (after 1000 one-cycle ALU rows) hits in its home partition: near latency
    assert t[-1] - t[-2] == 100
    assert r.cycles == 1000 + 100 + 1


def test_the_tables_partition_split_decides_which_partition_an_sm_reads_through(tmp_path):
    """Three SMs, two partitions (8 KB interleave; near hits 100, far 180). SM 2 first misses a
    line homed in partition 1 (its near partition either way: DRAM 300), which fills it there.
    SM 1 reads it after 1000 one-cycle ALU rows: with the even split (SMs 0 and 1 near partition
    0) it misses its near partition and hits the home one, far: 1000 + 180, its use at 1180; with
    ``l2_partition_sms`` = (1, 2) (SMs 1 and 2 near partition 1) it hits near: its use at 1100.
    The tables: A100 splits its 108 SMs 62 / 46 (GTC21); a table derived from it with 54 SMs keeps
    the proportions (31 / 23); a count list that does not give one count per partition is refused."""
    addr = 8192 + 128           # home partition 1
    rows = [[0], [0] * 1000 + [1, 2], [1, 2]]
    tx = [[]] + [[] for _ in range(1000)] + [[(addr, 32, 0)], []] + [[(addr, 32, 0)], []]

    def use_at(split):
        inp = make_input(lat_exec=[1, 0, 1], lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[3], [4], [5]],
                         src=[[], [], [4]], mem=[0, MEM_GLOBAL, 0], depcause=[INT, DEP_GLOBAL, INT],
                         rows_per_warp=rows, warps_per_block=1, tx=tx, sms=3, resident=1, deal=True,
                         l2=L2, l2_partitions=2, l2_partition_bytes=8192, l2_far_latency=180.0,
                         l2_partition_sms=split, dram_latency=300.0, channels=1)
        assert inp.grid.sm_part.tolist() == ([0, 0, 1] if split is None else [0, 1, 1])
        r = run(inp)
        assert r.counters["l2_misses"] == 1 and r.counters["l2_hits"] == 1
        return r.timeline.tolist()[1 + 1001]        # SM 1's use of the loaded value

    assert use_at(None) == 1000 + 180
    assert use_at((1, 2)) == 1000 + 100
    from teg.machine import MachineTableError, load as load_machine
    from tests.test_l1_wavefronts import _strided_trace_input
    assert load_machine("a100_80").memory.l2_partition_sms == (62, 46)
    inp = _strided_trace_input(load_machine("a100_80"), sms=108)
    assert inp.grid.sm_part.tolist() == [0] * 62 + [1] * 46
    p = tmp_path / "half.yaml"
    p.write_text("name: half\nextends: sm_80\nnum_sms: {value: 54, source: test}\n")
    assert _strided_trace_input(load_machine(str(p)), sms=54).grid.sm_part.tolist() == [0] * 31 + [1] * 23
    p = tmp_path / "t.yaml"
    p.write_text("name: t\nextends: sm_80\nmemory:\n  l2_partition_sms: {value: [62, 40, 6], source: test}\n")
    with pytest.raises(MachineTableError, match="one count per L2 partition"):
        load_machine(str(p))


def test_a_far_line_copied_into_the_near_partition_takes_a_near_slice_too():
    """Two partitions (8 KB interleave), one slice each at 32 B/clk (1 cycle per sector), L2 hits
    at 100 (perfect L2). SM 0 loads 4 sectors of line X homed in the far partition 1, then 4 of
    line Y homed in its near partition 0. X's sectors are served by partition 1's slice at 0-3 and
    their copies fill partition 0's slice at 0-3 (GTC21: a far hit is copied into the near
    partition); Y's sectors, requested at 1, wait behind the copies and are served at 4-7: Y is
    back at 7 + 100, its consumer issues at 107 (at 104 if the copy took no slice time) and the
    kernel ends at 108. Without the bandwidth mechanism: Y back at 1 + 100."""
    X, Y = 8192, 0
    tx = [[(X + 32 * k, 32, 0) for k in range(4)], [(Y + 32 * k, 32, 0) for k in range(4)], []]

    def inp(bw):
        return make_input(lat_exec=[0, 0, 1], lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[4], [5], [6]],
                          src=[[], [], [4, 5]], mem=[MEM_GLOBAL, MEM_GLOBAL, 0],
                          depcause=[DEP_GLOBAL, DEP_GLOBAL, INT], rows_per_warp=[[0, 1, 2]], tx=tx, sms=2,
                          deal=True, l2=L2, l2_partitions=2, l2_partition_bytes=8192, l2_far_latency=180.0,
                          l2_slices=2, l2_slice_bytes_per_clk=32.0,
                          switches={"l2_misses": False, "bandwidth": bw})

    r = run(inp(True))
    assert r.timeline.tolist() == [0, 1, 107] and r.cycles == 108
    off = run(inp(False))
    assert off.timeline.tolist() == [0, 1, 101] and off.cycles == 102


def test_mshrs_limit_outstanding_lines_per_sm():
    """One warp issues 3 loads of one line each back to back (no dependency), L2 hits at 100,
    2 MSHR entries: the third load's line waits for the first entry (free at 100), so it is back
    at 200 and its consumer ends the kernel at 201. With 3 entries: 102 + 1."""
    tx = [[(0, 32, 0)], [(1024, 32, 0)], [(2048, 32, 0)], []]
    kw = dict(lat_exec=[0, 0, 0, 1], lat_multi=[1] * 4, lat_same=[1] * 4, dst=[[4], [5], [6], [7]],
              src=[[], [], [], [4, 5, 6]], mem=[MEM_GLOBAL] * 3 + [0], depcause=[DEP_GLOBAL] * 3 + [INT],
              rows_per_warp=[[0, 1, 2, 3]], tx=tx, sms=1, deal=True, l2=L2,
              switches={"l2_misses": False})
    assert run(make_input(**kw, mshr_lines=3)).cycles == 103
    r = run(make_input(**kw, mshr_lines=2))
    # the third load issues at 2 but cannot issue while no entry is free: both entries are held
    # until 100 and 101, so it issues at 100 and is back at 200
    assert r.cycles == 201
    assert r.stalls["mem_pipe_full"] > 0


@pytest.mark.parametrize("mechanism", ["bandwidth", "l2_misses", "l1_misses", "channel_skew", "coalescing"])
def test_removing_a_shared_memory_mechanism_never_adds_cycles(mechanism):
    """The what-ifs act on the shared system and stay monotone (docs/model.md §5): the same
    contention case as above with 4 SMs and a second load per warp."""
    addrs = [[0, 32, 64, 96, 256 * (b + 1)] for b in range(4)]
    base = one_load_per_sm(4, addrs, l2=L2, l2_slices=1, l2_slice_bytes_per_clk=32.0, dram_latency=300.0,
                           channels=2, service_per_byte=0.25, mshr_lines=2)
    from teg.engine import with_switches
    assert run(with_switches(base, **{mechanism: False})).cycles <= run(base).cycles


def test_lowering_simulates_every_sm_by_default():
    """The bundled example through lower(): the default simulates every SM of sm_90, dealing its
    4 blocks one per SM; --sms 1 samples SM 0 with 1/4 of the bandwidth (one wave: both dealings
    give SM 0 block 0)."""
    from teg.engine import load_inputs
    from teg.resources import traces_dir

    d = traces_dir()
    ins = load_inputs(sass=d / "matmul_abt.sm_90.sass", trace=d / "matmul_abt.sm_90.trace.npz")
    prog, kt, machine = ins.program, ins.kernel_trace, ins.machine
    inp = lower(prog, kt, machine, Options())
    assert inp.setup.sms == machine.num_sms
    assert inp.setup.dealing == "dynamic"
    r = run(inp)
    assert sum(r.outcome.sm_blocks) == inp.setup.blocks == 4
    assert sorted(r.outcome.sm_blocks)[-4:] == [1, 1, 1, 1]
    one = lower(prog, kt, machine, Options(sms=1))
    assert one.setup.sms == 1 and one.setup.dealing == "waves" and one.setup.share == 1 / 4
    rr = lower(prog, kt, machine, Options(sms=1, sampling="round-robin"))
    assert rr.setup.dealing == "round-robin" and rr.setup.share == 1 / 4 and rr.setup.blocks == one.setup.blocks == 1


def store_then_next_block(launch_latency=0.0, l2=None, **kw):
    """One SM, one resident block; block 0's warp issues a store (static 0, store=2: a write) and
    exits at once; block 1 issues one 1-cycle instruction (static 1)."""
    tx = [[(0, 32, 0)], []]
    return make_input(lat_exec=[0, 1], lat_multi=[1, 1], lat_same=[1, 1], dst=[[], [5]], src=[[4], []],
                      mem=[MEM_GLOBAL, 0], store=[2, 0], depcause=[DEP_GLOBAL, INT], rows_per_warp=[[0], [1]],
                      warps_per_block=1, tx=tx, sms=1, resident=1, deal=True, dram_latency=300.0, channels=1,
                      l2=l2, launch_latency=launch_latency, **kw)


@pytest.mark.parametrize("l2,ack", [(None, 300), (L2, 100)])
def test_a_block_retires_with_its_stores_in_flight_and_the_kernel_waits_for_them(l2, ack):
    """Block 0's store leaves the registers at its read-barrier release (0 + 1): the block retires
    then and block 1 issues at cycle 1, while the write is still on its way. The kernel ends when
    the write is acknowledged: without an L2 it completes in DRAM (0 + 300); with the write-back
    L2 the slice acknowledges it after its latency (100) although it misses."""
    r = run(store_then_next_block(l2=l2))
    assert r.timeline.tolist() == [0, 1]
    assert r.cycles == ack
    if l2 is not None:
        assert r.counters["dram_transactions"] == 1


@pytest.mark.parametrize("launch", [0.0, 1.0, 50.0, 350.0])
def test_the_next_block_issues_a_launch_latency_after_the_slot_frees(launch):
    """The block turnaround (machine table ``block_launch_cycles``): block 0's warp exits at its
    last issue (cycle 0) and its store has left the registers at 1, so block 1's instruction issues
    at max(0 + launch, 1) (at least one cycle after the exit); the kernel ends at the later of
    that instruction's completion and the store's acknowledgement (L2 latency 100)."""
    r = run(store_then_next_block(launch_latency=launch, l2=L2))
    second = max(launch, 1.0)
    assert r.timeline.tolist() == [0, second]
    assert r.cycles == max(second + 1, 100)
    # the what-if `block_launch` removes the turnaround: the next block issues at 1
    off = run(store_then_next_block(launch_latency=launch, l2=L2, switches={"block_launch": False}))
    assert off.timeline.tolist() == [0, 1]
    assert off.cycles <= r.cycles


def spread_blocks(sms, kernel_launch=0.0):
    """``sms`` SMs, one block of one warp of 10 dependent-free 1-cycle instructions each (dealt
    breadth-first: one per SM), with a kernel launch overhead of ``kernel_launch`` cycles."""
    return make_input(lat_exec=[1], lat_multi=[1], lat_same=[1], rows_per_warp=[[0] * 10] * sms,
                      warps_per_block=1, sms=sms, resident=1, deal=True, kernel_launch=kernel_launch)


@pytest.mark.parametrize("sms", [1, 3])
@pytest.mark.parametrize("k", [0.0, 1.0, 1303.0])
def test_the_kernel_launch_overhead_adds_to_the_kernel_and_idles_every_sm(sms, k):
    """The kernel takes ``kernel_launch_cycles`` beyond its SMs' work (launch and drain): each SM
    issues its 10 instructions at cycles 0..9 and the kernel ends at 10 + k; every SM is charged k
    more ``no_warp`` cycles (the average SM's breakdown still sums to the cycles); the issue
    cycles do not move; the what-if ``kernel_launch`` takes exactly k off."""
    r = run(spread_blocks(sms, k))
    assert r.cycles == 10 + int(k) and r.outcome.kernel_launch_cycles == int(k)
    assert r.timeline.tolist() == list(range(10)) * sms
    assert r.stalls["no_warp"] == int(k) and r.stalls["issue"] == 10
    assert sum(r.stalls.values()) == r.cycles
    off = run(with_switches(spread_blocks(sms, k), kernel_launch=False))
    assert off.cycles == 10 and off.outcome.kernel_launch_cycles == 0


def test_the_first_wave_starts_at_cycle_zero_whatever_the_launch_latency():
    """The launch latency separates a retiring block from the next one on its SM; the blocks of
    the first wave start with the kernel (cycle 0): 3 SMs x 1 block of 10 instructions end at 10
    with any launch latency, and a fourth block on SM 0 starts at 9 + 200."""
    assert run(alu_blocks([10, 10, 10], sms=3, resident=1, deal=True, launch_latency=200.0)).cycles == 10
    assert run(alu_blocks([10, 10, 10, 10], sms=3, resident=1, deal=True, launch_latency=200.0)).cycles == 9 + 200 + 10


def test_writes_wait_for_a_busy_channel():
    """Two stores to one channel that needs 200 cycles per 32 B: the second write's L2 ack waits
    until the channel can take its write-back (start 200): a write-back L2 cannot absorb writes
    faster than the DRAM drains them. The block retires when the second store's data have left
    the registers (1 + 1), so the next block's instruction issues at 2, and the kernel ends with
    the second write's acknowledgement at 200."""
    tx = [[(0, 32, 0)], [(4096, 32, 0)], []]
    inp = make_input(lat_exec=[0, 0, 1], lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[], [], [5]],
                     src=[[4], [4], []], mem=[MEM_GLOBAL, MEM_GLOBAL, 0], store=[2, 2, 0],
                     depcause=[DEP_GLOBAL, DEP_GLOBAL, INT], rows_per_warp=[[0, 1], [2]], warps_per_block=1,
                     tx=tx, sms=1, resident=1, deal=True, dram_latency=300.0, channels=1,
                     service_per_byte=200 / 32, l2=L2)
    r = run(inp)
    # store 0 at 0: ack 100; store 1 at 1: channel free at 200 → ack max(1 + 100, 200) = 200
    assert r.timeline.tolist() == [0, 1, 2]
    assert r.cycles == 200


def test_sub_partitions_take_turns_at_the_sms_shared_unit():
    """4 schedulers, 4 warps each, every warp repeating (LDG-like on the SM's one MIO, ALU, ALU),
    one instruction per cycle per scheduler: the MIO is the bound (one per cycle: 3,200 of them).
    Were the schedulers always swept in index order, schedulers 0-2 would take the MIO every third
    cycle between them and scheduler 3 would starve until they finish (4,827 cycles); taking
    turns round-robin (the sweep starts at scheduler t mod 4) keeps the MIO busy every cycle."""
    K, W = 200, 16
    rows = [[0, 1, 1] * K for _ in range(W)]
    inp = make_input(lat_exec=[30, 4], lat_multi=[1, 1], lat_same=[1, 1], unit=[1, 0], units_occ=(1.0, 1.0),
                     units_count=(1, 1), units_per_sm=(0, 1), depcause=[INT, INT], rows_per_warp=rows,
                     warps_per_block=W, schedulers=4, sms=1)
    r = run(inp)
    n_mio = W * K
    assert n_mio <= r.cycles <= n_mio + 30 + 4      # the bound, plus the last result's latency
    last = {}
    for w in range(W):
        last[w % 4] = max(last.get(w % 4, 0), int(r.timeline[(w + 1) * 3 * K - 1]))
    assert max(last.values()) - min(last.values()) <= 8     # no scheduler finishes far behind


@pytest.mark.parametrize("level", ["l1", "l2"])
def test_a_hit_on_a_line_still_being_filled_waits_for_the_fill(level):
    """Two warps of one SM load the same sector at cycles 0 and 1 (one scheduler). The first misses
    everywhere and its data comes from DRAM at 0 + 300; the second finds the line already
    allocated — in L1 (hit latency 20), or, without an L1, in the L2 (100) — but the fill is still
    on its way, so its load completes at 300 too (it merges with the miss), not at 1 + 20 / 1 + 100.
    The consumers are both ready at 300; the one scheduler issues the greedy warp's (the second
    warp, last to issue) at 300 and the other at 301: the kernel ends at 302."""
    tx = [[(4096, 32, 0)], [], [(4096, 32, 0)], []]
    kw = dict(lat_exec=[0, 1], lat_multi=[1, 1], lat_same=[1, 1], dst=[[4], [5]], src=[[], [4]],
              mem=[MEM_GLOBAL, 0], depcause=[DEP_GLOBAL, INT], rows_per_warp=[[0, 1], [0, 1]], tx=tx,
              sms=1, deal=True, l2=L2, dram_latency=300.0, channels=1)
    if level == "l1":
        kw["l1"] = (4, 2, 128, 32, 20.0)
    r = run(make_input(**kw))
    assert r.timeline.tolist() == [0, 301, 1, 300]
    assert r.cycles == 302
    # a perfect cache of that level costs its hit latency only (the what-if ignores fills)
    free = run(make_input(**{**kw, "switches": {f"{level}_misses": False}}))
    assert free.timeline.tolist()[3] == 1 + (20 if level == "l1" else 100)


def test_breakdown_averages_the_sms_that_ran_a_block():
    """Two 50-instruction blocks on three SMs: SMs 0 and 1 issue every cycle 0-49, SM 2 runs no
    block and idles. Every SM-cycle has a cause (issue 100, no_warp 50); the breakdown reported is
    the average of the two busy SMs: 50 issue cycles, summing to the kernel's 50."""
    r = run(alu_blocks([50, 50], sms=3, resident=2, deal=True))
    assert r.cycles == 50
    assert {k: v for k, v in r.outcome.sm_cycle_stalls.items() if v} == {"issue": 100, "no_warp": 50}
    assert r.outcome.stall_sms == 2
    assert {k: v for k, v in r.stalls.items() if v} == {"issue": 50}


@pytest.mark.parametrize("second", ["store", "load"])
def test_a_dirty_line_pushed_out_of_the_l2_is_written_back_on_its_channel(second):
    """The L2 is write-back (docs/model.md §3): a write that hits a line makes its sector dirty,
    and the line's dirty sectors go to DRAM when a miss pushes it out. A one-line L2 (1 set x 1
    way), one channel serving 1 byte per cycle (32 cycles a sector), DRAM latency 300; one warp
    issues four independent accesses at cycles 0-3: LDG A (miss: channel 0-32, data at 300), then
    STG A — or LDG A — (a hit on the line being filled), LDG B (a miss that pushes A out: its own
    sector on the channel 32-64, data at 32 + 300 = 332; A's written sector behind it, 64-96),
    LDG C (a miss: the channel is free at 96 with the write-back, at 64 without; data at 396 or
    364). The kernel ends with the last load's data. DRAM bytes: three fills, plus the write-back."""
    A, B, C = 0, 4096, 8192
    tx = [[(A, 32, 0)], [(A, 32, 0)], [(B, 32, 0)], [(C, 32, 0)]]
    store = [0, 2 if second == "store" else 0, 0, 0]
    inp = make_input(lat_exec=[0] * 4, lat_multi=[1] * 4, lat_same=[1] * 4, dst=[[4], [], [5], [6]],
                     src=[[], [7], [], []], mem=[MEM_GLOBAL] * 4, store=store, depcause=[DEP_GLOBAL] * 4,
                     rows_per_warp=[[0, 1, 2, 3]], warps_per_block=1, tx=tx, sms=1, resident=1, deal=True,
                     dram_latency=300.0, channels=1, service_per_byte=1.0, l2=(1, 1, 128, 32, 100.0))
    r = run(inp)
    assert r.timeline.tolist() == [0, 1, 2, 3]
    if second == "store":
        assert r.cycles == 396 and r.counters["dram_bytes"] == 4 * 32
    else:
        assert r.cycles == 364 and r.counters["dram_bytes"] == 3 * 32
    # without the bandwidth mechanism the channel never queues: the last load's data at 3 + 300
    off = run(with_switches(inp, bandwidth=False))
    assert off.cycles == 303 <= r.cycles


def test_sm_active_ends_when_the_last_warp_exits_not_when_its_writes_are_acknowledged():
    """Nsight Compute counts an SM active while a warp is resident; a warp whose last instruction
    is a global store leaves once the store has read its registers, and the write's acknowledgement
    counts for the kernel's end only (docs/model.md, "Launch and occupancy"). Two SMs, one warp
    each: an ALU instruction at cycle 0 (result at 1), then an STG of its result at 1, which reads
    its registers by 1 + rbar 3 = 4: the block retires at 4. No caches: the write is acknowledged
    at 1 + dram_latency 400 = 401, the kernel's end. Each SM is active 4 of the 401 cycles (it was
    401 while the acknowledgement counted)."""
    inp = make_input(lat_exec=[1, 0], lat_multi=[1, 1], lat_same=[1, 1], dst=[[4], []], src=[[], [4]],
                     mem=[0, MEM_GLOBAL], store=[0, 2], depcause=[INT, INT], rows_per_warp=[[0, 1], [0, 1]],
                     warps_per_block=1, tx=[[], [(0, 32, 0)], [], [(4096, 32, 0)]], sms=2, resident=1, deal=True,
                     dram_latency=400.0, rbar_latency=3.0)
    r = run(inp)
    assert r.cycles == 401
    assert r.sm_cycles.tolist() == [401, 401]
    assert r.sm_retired.tolist() == [4, 4]
    assert r.sm_active == 4.0 and r.sm_active_ratio == pytest.approx(4 / 401)
