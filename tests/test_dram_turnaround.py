"""DRAM read/write turnaround (docs/model.md §3, "Read/write turnaround"; switch
``dram_turnaround``): a channel serves reads and buffers writes; when its buffer holds the batch's
bytes it drains them, turning its data bus to writes (the read-to-write bubble, charged to the write
that fills the batch) and the next read turns it back (the write-to-read bubble). Hand-computed
cases on one channel, the machine tables' numbers and the switch."""

from __future__ import annotations

import pytest

from teg.analysis.whatif import whatif
from teg.engine import Options, lower, run
from teg.engine.codes import DEP_GLOBAL, MEM_GLOBAL
from teg.engine.handmade import make_input
from teg.engine.lowered import with_record_order, with_replay, with_switches
import numpy as np

from teg.machine import load as load_machine

L2 = (64, 4, 128, 32, 100.0)    # 64 sets x 4 ways x 128 B lines, 32 B sectors, hit latency 100
DRAM_LAT = 300.0
BATCH, RTW, WTR = 64.0, 5.0, 20.0   # two 32 B writes per batch; bubbles 5 and 20 cycles


def stream(ops, turnaround=(BATCH, RTW, WTR), **kw):
    """One warp on one SM issuing one independent 32-byte access per cycle (``ops``: "R" a load,
    "W" a store), each to its own cache line (every one misses the L2), on one DRAM channel that
    serves a byte per cycle (32 cycles a sector)."""
    n = len(ops)
    store = [2 if op == "W" else 0 for op in ops]
    return make_input(lat_exec=[0] * n, lat_multi=[1] * n, lat_same=[1] * n,
                      dst=[[10 + i] if op == "R" else [] for i, op in enumerate(ops)],
                      src=[[] if op == "R" else [7] for op in ops], mem=[MEM_GLOBAL] * n, store=store,
                      depcause=[DEP_GLOBAL] * n, rows_per_warp=[list(range(n))], warps_per_block=1,
                      tx=[[(128 * i, 32, 0)] for i in range(n)], sms=1, resident=1, deal=True,
                      dram_latency=DRAM_LAT, channels=1, service_per_byte=1.0, l2=L2, turnaround=turnaround,
                      **kw)


def test_alternating_reads_and_writes_pay_one_turn_each_way_per_batch():
    """R W R W R W R W issued at cycles 0-7 (bus starts in read mode, nothing buffered):
    R0 0-32 (data 300); W1 buffered (32 B) 32-64; R2 64-96 (data 364); W3 fills the batch (64 B):
    the bus turns to writes, 96 + 5 -> 101-133; R4 turns it back, 133 + 20 -> 153-185 (data 453);
    W5 buffered 185-217; R6 217-249 (data 517); W7 fills the next batch: 249 + 5 -> 254 (its L2
    ack, max(7 + 100, 254)). The kernel ends with R6's data, 517; without turnaround the channel
    serves back to back and R6 starts at 6 x 32 = 192 (data 492): one turn each way, 25 cycles."""
    inp = stream("RWRWRWRW")
    r = run(inp)
    assert r.timeline.tolist() == list(range(8))
    assert r.cycles == 6 * 32 + RTW + WTR + DRAM_LAT == 517
    off = run(with_switches(inp, dram_turnaround=False))
    assert off.cycles == 6 * 32 + DRAM_LAT == 492
    none = run(stream("RWRWRWRW", turnaround=None))
    assert none.cycles == off.cycles and none.counters == off.counters
    # the channel waits (start - arrival at cycle i): 31 i back to back, sum 31 x 28 = 868; with
    # the turns the starts are 0 32 64 101 153 185 217 254, sum 1006 - 28 = 978
    assert off.counters["channel_wait_cycles"] == 868 and r.counters["channel_wait_cycles"] == 978
    assert {k: v for k, v in r.counters.items() if k != "channel_wait_cycles"} == \
        {k: v for k, v in off.counters.items() if k != "channel_wait_cycles"}


def test_a_write_only_stream_turns_the_bus_once():
    """Eight writes: the second fills the first batch and turns the bus (32 + 5 = 37); the bus then
    stays in write mode and the rest follow back to back: the last starts at 37 + 6 x 32 = 229,
    and its L2 ack is max(7 + 100, 229) = 229, the kernel's end (224 without the turn)."""
    r = run(stream("W" * 8))
    assert r.cycles == 7 * 32 + RTW == 229
    assert run(stream("W" * 8, turnaround=None)).cycles == 7 * 32


def test_a_read_only_stream_never_turns():
    """Reads alone never turn the bus: the eighth read starts at 7 x 32 = 224, data at 524."""
    assert run(stream("R" * 8)).cycles == run(stream("R" * 8, turnaround=None)).cycles == 7 * 32 + DRAM_LAT


def test_an_idle_bus_hides_the_turn():
    """R0 at 0 (channel 0-32, data 300); W1 and W2 wait for R0's register (issue 300, 301): W1
    300-332, W2 fills the batch and turns the bus, max(301, 332 + 5) = 337-369 (ack at 401); an ALU
    instruction (latency 400) on R0's register issues at 302, and R4, waiting for it, at 702: the
    bus has been idle since 369, its turn back (369 + 20 = 389) is long over, so R4 starts at once
    and its data is back at 702 + 300 = 1002, the kernel's end with or without turnaround."""
    inp = make_input(lat_exec=[0, 0, 0, 400, 0], lat_multi=[1] * 5, lat_same=[1] * 5,
                     dst=[[10], [], [], [20], [11]], src=[[], [10], [10], [10], [20]],
                     mem=[MEM_GLOBAL, MEM_GLOBAL, MEM_GLOBAL, 0, MEM_GLOBAL], store=[0, 2, 2, 0, 0],
                     depcause=[DEP_GLOBAL] * 5, rows_per_warp=[list(range(5))], warps_per_block=1,
                     tx=[[(0, 32, 0)], [(128, 32, 0)], [(256, 32, 0)], [], [(384, 32, 0)]], sms=1, resident=1,
                     deal=True, dram_latency=DRAM_LAT, channels=1, service_per_byte=1.0, l2=L2,
                     turnaround=(BATCH, RTW, WTR))
    r = run(inp)
    assert r.timeline.tolist() == [0, 300, 301, 302, 702]
    assert r.cycles == run(with_switches(inp, dram_turnaround=False)).cycles == 702 + DRAM_LAT


def test_a_write_back_fills_the_batch_and_the_next_read_turns_the_bus_back():
    """The dirty-line case of tests/test_engine_gpu.py with a one-sector batch: LDG A (channel
    0-32), STG A (a hit: dirty), LDG B (a miss pushing A out: 32-64; A's write-back behind it fills
    the batch: the bus turns, 64 + 5, and the sector takes 69-101), LDG C (a read after the turn:
    101 + 20 = 121, data at 421; 396 without turnaround)."""
    A, B, C = 0, 4096, 8192
    tx = [[(A, 32, 0)], [(A, 32, 0)], [(B, 32, 0)], [(C, 32, 0)]]

    def inp(turn):
        return make_input(lat_exec=[0] * 4, lat_multi=[1] * 4, lat_same=[1] * 4, dst=[[4], [], [5], [6]],
                          src=[[], [7], [], []], mem=[MEM_GLOBAL] * 4, store=[0, 2, 0, 0],
                          depcause=[DEP_GLOBAL] * 4, rows_per_warp=[[0, 1, 2, 3]], warps_per_block=1, tx=tx, sms=1,
                          resident=1, deal=True, dram_latency=DRAM_LAT, channels=1, service_per_byte=1.0,
                          l2=(1, 1, 128, 32, 100.0), turnaround=turn)
    assert run(inp((32.0, RTW, WTR))).cycles == 3 * 32 + RTW + WTR + DRAM_LAT == 421
    assert run(inp(None)).cycles == 396


def test_switching_it_off_never_adds_cycles():
    """Four warps interleaving reads and writes on two channels: the free run and the replay of the
    baseline order without turnaround never exceed the baseline (here the free run is strictly
    faster), and the what-if row is the better of the two."""
    ops = "RWRRWWRWRRWW"
    n = len(ops)
    inp = make_input(lat_exec=[0] * n, lat_multi=[1] * n, lat_same=[2] * n,
                     dst=[[10 + i] if op == "R" else [] for i, op in enumerate(ops)],
                     src=[[] if op == "R" else [7] for op in ops], mem=[MEM_GLOBAL] * n,
                     store=[2 if op == "W" else 0 for op in ops], depcause=[DEP_GLOBAL] * n,
                     rows_per_warp=[list(range(n))] * 4, warps_per_block=1,
                     tx=[[(128 * (i + n * w), 32, (i + w) % 2)] for w in range(4) for i in range(n)],
                     sms=1, resident=4, deal=True, dram_latency=DRAM_LAT, channels=2, service_per_byte=1.0, l2=L2,
                     turnaround=(BATCH, RTW, WTR))
    base = run(inp)
    free = run(with_switches(inp, dram_turnaround=False))
    replay = run(with_replay(with_switches(inp, dram_turnaround=False), run(with_record_order(inp)).order))
    assert replay.cycles <= base.cycles and free.cycles < base.cycles
    by = {r.mechanism: r for r in whatif(inp)}
    assert by["dram_turnaround"].cycles == min(free.cycles, replay.cycles) < base.cycles
    assert by["dram_turnaround"].saved == base.cycles - by["dram_turnaround"].cycles > 0


def _one_load_trace():
    """One warp of one block issuing one coalesced float load."""
    from teg.trace import KernelInfo, KernelTrace
    from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

    dst = np.full((1, MAX_TRACE_DST), -1, np.int16)
    dst[0, 0] = 4
    src = np.full((1, MAX_TRACE_SRC), -1, np.int16)
    src[0, 0] = 2
    return KernelTrace(
        info=KernelInfo(name="one", grid=(1, 1, 1), block=(32, 1, 1), binary_version=90),
        opcodes=["LDG.E"], warp=np.zeros(1, np.int32), block=np.zeros(1, np.int32), pc=np.zeros(1, np.int64),
        opcode=np.zeros(1, np.int32), mask=np.full(1, 0xFFFFFFFF, np.uint32), dst=dst, src=src,
        mem_width=np.full(1, 4, np.int16), imm=np.zeros(1, np.int64), addr_start=np.array([0, 32], np.int64),
        addresses=0x10000000 + np.arange(32, dtype=np.uint64) * 4, warp_start=np.array([0, 1], np.int64),
        warp_block=np.zeros(1, np.int32), block_xyz=np.zeros((1, 3), np.int32))


@pytest.mark.parametrize("name", ["sm_70", "quadro_gv100", "sm_80", "a100_80", "sm_90", "h200"])
def test_hbm_tables_lower_the_turnaround_in_core_cycles(name):
    """An HBM machine's ``memory.dram_turnaround`` reaches the engine as the table's bubbles (ns)
    times the clock (MHz / 1000): on the whole GPU as they are, and for 4 sampled SMs of a
    sweep-mode run (every SM busy) times busy / 4, as a byte's service time is."""
    m = load_machine(name)
    t = m.memory.dram_turnaround
    assert t is not None and t.write_batch_bytes > 0 and t.write_to_read_ns > t.read_to_write_ns > 0
    whole = lower(None, _one_load_trace(), m, Options()).scalars
    assert whole.dram_write_batch == t.write_batch_bytes
    assert whole.dram_rtw_cycles == pytest.approx(t.read_to_write_ns * m.clock_mhz / 1e3)
    assert whole.dram_wtr_cycles == pytest.approx(t.write_to_read_ns * m.clock_mhz / 1e3)
    part = lower(None, _one_load_trace(), m, Options(sms=4, blocks=1)).scalars
    scale = part.dram_cycles_per_byte / whole.dram_cycles_per_byte
    assert scale > 1
    assert part.dram_wtr_cycles == pytest.approx(whole.dram_wtr_cycles * scale)
    assert part.dram_rtw_cycles == pytest.approx(whole.dram_rtw_cycles * scale)


def test_gddr_and_older_tables_have_no_turnaround():
    """GDDR boards (Turing, GA10x, AD10x, Blackwell consumer, Kepler) and the GT200/Pascal tables
    do not model it: their tables give no timing for it (docs/model.md §3)."""
    for name in ("sm_75", "sm_86", "sm_89", "gtx680", "gt200", "sm_61", "sm_120"):
        assert load_machine(name).memory.dram_turnaround is None, name


@pytest.mark.parametrize("key,value", [("write_batch_bytes", "0"), ("write_batch_bytes", "100.5"),
                                       ("write_to_read_ns", "-3")])
def test_a_bad_turnaround_value_is_one_line_naming_the_key(tmp_path, key, value):
    from teg.machine import MachineTableError

    fields = {"read_to_write_ns": "1.65", "write_to_read_ns": "22.2", "write_batch_bytes": "2432", key: value}
    p = tmp_path / "t.yaml"
    p.write_text("name: t\nextends: sm_80\nmemory:\n  dram_turnaround:\n    source: test\n"
                 + "".join(f"    {k}: {v}\n" for k, v in fields.items()))
    with pytest.raises(MachineTableError, match=key) as e:
        load_machine(str(p))
    assert "\n" not in str(e.value)


def test_a_table_may_drop_the_turnaround_it_extends(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("name: t\nextends: sm_80\nmemory:\n  dram_turnaround: null\n")
    assert load_machine(str(p)).memory.dram_turnaround is None
    assert load_machine("sm_80").memory.dram_turnaround is not None
