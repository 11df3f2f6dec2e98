"""DRAM row buffers (docs/model.md §3, "Row buffers"; switch ``dram_row_misses``): each bank of a
DRAM channel keeps its last row open; an access to that row (a row hit) skips the precharge and
activation (tRP + tRCD) that an access to another row (a row miss) pays, and the table's
``dram_latency`` is the row-miss latency. Hand-computed cases on one channel, the machine tables'
numbers and the switch."""

from __future__ import annotations

import numpy as np
import pytest

from teg.analysis.whatif import whatif
from teg.engine import Options, lower, run
from teg.engine.codes import DEP_GLOBAL, MEM_GLOBAL
from teg.engine.handmade import make_input
from teg.engine.lowered import with_switches
from teg.machine import load as load_machine

L2 = (64, 4, 128, 32, 100.0)    # 64 sets x 4 ways x 128 B lines, 32 B sectors, hit latency 100
DRAM_LAT = 300.0                # the row-miss latency
MISS = 40.0                     # tRP + tRCD in core cycles: a row hit takes 260
# 2 banks of 1 KB rows, 256 B interleave; on one channel the channel-local address is the address:
# page p = addr // 1024 is row p // 2 of bank fold(p) = the parity of p's bits (pages 0, 3: bank 0;
# pages 1, 2: bank 1)
ROWS = (2, 1024, MISS, 256)


def chase(a, b, rows=ROWS):
    """Two dependent 32-byte loads on one SM (the second's address register is the first's
    result, as in a pointer chase) to ``a`` and then ``b`` (different cache lines: both miss the
    L2), on one DRAM channel serving a byte per cycle."""
    return make_input(lat_exec=[0, 0], lat_multi=[1, 1], lat_same=[1, 1], dst=[[10], [11]], src=[[], [10]],
                      mem=[MEM_GLOBAL] * 2, depcause=[DEP_GLOBAL] * 2, rows_per_warp=[[0, 1]], warps_per_block=1,
                      tx=[[(a, 32, 0)], [(b, 32, 0)]], sms=1, resident=1, deal=True, dram_latency=DRAM_LAT,
                      channels=1, service_per_byte=1.0, l2=L2, dram_rows=rows)


def test_two_loads_to_one_row_hit_the_second_time():
    """Load A (byte 0: bank 0, row 0) finds no row open: a miss, data at 300; the dependent load of
    byte 128 issues at 300 into the row A opened: a hit, 300 + 300 - 40 = 560."""
    r = run(chase(0, 128))
    assert r.timeline.tolist() == [0, 300]
    assert r.cycles == DRAM_LAT + (DRAM_LAT - MISS) == 560


@pytest.mark.parametrize("b,why", [(3072, "page 3: bank 0, row 1"), (1024, "page 1: bank 1, no row open"),
                                   (2048, "page 2: bank 1, no row open")])
def test_two_loads_to_two_rows_both_miss(b, why):
    """The second load goes to another row: a row miss again, 300 + 300 = 600 (the pointer
    chase's latency per load, the table's dram_latency)."""
    assert run(chase(0, b)).cycles == 2 * DRAM_LAT == 600, why


def test_switch_off_makes_every_access_a_row_hit_and_never_adds_cycles():
    """``dram_row_misses`` off: both loads take the hit latency, 2 x 260 = 520, whatever rows they
    open; on, 560 (one row) or 600 (two rows); without row buffers in the table, the row-miss
    latency throughout (600)."""
    for b in (128, 1024, 3072):
        inp = chase(0, b)
        off = run(with_switches(inp, dram_row_misses=False))
        assert off.cycles == 2 * (DRAM_LAT - MISS) == 520
        assert off.cycles <= run(inp).cycles
    assert run(chase(0, 128, rows=None)).cycles == 600
    by = {r.mechanism: r for r in whatif(chase(0, 3072))}
    assert by["dram_row_misses"].cycles == 520 and by["dram_row_misses"].saved == 80


@pytest.mark.parametrize("x,end", [(3072, 364), (1024, 324), (2048, 324)])
def test_a_dram_write_to_another_row_of_the_bank_closes_the_readers_row(x, end):
    """R(0), W(x), R(128) issued at cycles 0, 1, 2, independent, all missing the L2, on one channel
    (32 cycles a sector, FIFO): R(0) 0-32 opens bank 0 row 0 (data 300); the write (a DRAM write:
    it missed the L2) is served 32-64 and opens its row; R(128) is served from 64. With x = 3072
    (page 3: bank 0, row 1) the write closed row 0: R(128) misses, data at 64 + 300 = 364, the
    kernel's end. With x = 1024 (page 1: bank 1) row 0 stays open: a hit, 64 + 260 = 324 (the
    write's L2 ack at max(1 + 100, 32) = 101 is earlier); so with x = 2048 (page 2, two banks' rows
    further: the same bank in a linear layout, bank 1 in the folded one)."""
    def inp(x):
        return make_input(lat_exec=[0] * 3, lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[10], [], [11]],
                          src=[[], [7], []], mem=[MEM_GLOBAL] * 3, store=[0, 2, 0], depcause=[DEP_GLOBAL] * 3,
                          rows_per_warp=[[0, 1, 2]], warps_per_block=1,
                          tx=[[(0, 32, 0)], [(x, 32, 0)], [(128, 32, 0)]], sms=1, resident=1, deal=True,
                          dram_latency=DRAM_LAT, channels=1, service_per_byte=1.0, l2=L2, dram_rows=ROWS)
    r = run(inp(x))
    assert r.timeline.tolist() == [0, 1, 2]
    assert r.cycles == end == 64 + DRAM_LAT - (0 if x == 3072 else MISS)


def test_the_channel_local_address_skips_the_other_channels_granules():
    """Two channels interleaved by 256 B: bytes 0-255 are channel 0's, 256-511 channel 1's, 512-767
    channel 0's again — its channel-local bytes 256-511, still in its 1 KB row 0 of bank 0. A load
    of 0 then a dependent load of 512 (both on channel 0) hit the same row: 300 + 260 = 560; a
    load of 2048 (channel-local 1024: bank 1) misses: 600."""
    def inp(b):
        return make_input(lat_exec=[0, 0], lat_multi=[1, 1], lat_same=[1, 1], dst=[[10], [11]], src=[[], [10]],
                          mem=[MEM_GLOBAL] * 2, depcause=[DEP_GLOBAL] * 2, rows_per_warp=[[0, 1]],
                          warps_per_block=1, tx=[[(0, 32, 0)], [(b, 32, 0)]], sms=1, resident=1, deal=True,
                          dram_latency=DRAM_LAT, channels=2, service_per_byte=1.0, l2=L2, dram_rows=ROWS)
    assert run(inp(512)).cycles == 560
    assert run(inp(2048)).cycles == 600


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


# The HBM tables' row facts (their yaml comments: AS-QV100 / AS-A100 / AS-H100 DRAM timing); the mechanism
# is off on every shipped table (docs/model.md §3, Row buffers), so a user's table switches it on.
ROW_FACTS = {"sm_70": (16, 2048, 28.2), "quadro_gv100": (16, 2048, 28.2), "sm_80": (16, 2048, 36.2),
             "a100_80": (16, 2048, 36.2), "sm_90": (16, 2048, 23.9), "h200": (16, 2048, 23.9)}


def with_rows(tmp_path, name):
    banks, row, ns = ROW_FACTS[name]
    p = tmp_path / f"{name}_rows.yaml"
    p.write_text(f"name: {name}_rows\nextends: {name}\nmemory:\n  dram_rows:\n    source: test\n"
                 f"    banks: {banks}\n    row_bytes: {row}\n    row_miss_ns: {ns}\n")
    return load_machine(str(p))


@pytest.mark.parametrize("name", sorted(ROW_FACTS))
def test_hbm_tables_lower_the_row_miss_in_core_cycles(tmp_path, name):
    """A table's ``memory.dram_rows`` reaches the engine as its banks, row bytes and interleave, and
    its row-miss time (ns) times the clock (MHz / 1000) — a latency, so the same for 4 sampled SMs
    as for the whole GPU."""
    m = with_rows(tmp_path, name)
    r = m.memory.dram_rows
    assert r is not None and (r.banks, r.row_bytes, r.row_miss_ns) == ROW_FACTS[name]
    for opts in (Options(), Options(sms=4, blocks=1)):
        sc = lower(None, _one_load_trace(), m, opts).scalars
        assert (sc.dram_banks, sc.dram_row_bytes, sc.dram_interleave) == (r.banks, r.row_bytes,
                                                                           m.memory.interleave_bytes)
        assert sc.dram_row_miss_cycles == pytest.approx(r.row_miss_ns * m.clock_mhz / 1e3)
        assert sc.dram_row_miss_cycles < sc.dram_latency


def test_tables_without_row_timing_do_not_model_it():
    for name in ("sm_70", "quadro_gv100", "sm_80", "sm_90", "h200", "sm_75", "sm_86", "sm_89", "gtx680", "gt200", "sm_61", "sm_120"):
        assert load_machine(name).memory.dram_rows is None, name


@pytest.mark.parametrize("key,value", [("banks", "0"), ("row_bytes", "100.5"), ("row_miss_ns", "-3")])
def test_a_bad_row_value_is_one_line_naming_the_key(tmp_path, key, value):
    from teg.machine import MachineTableError

    fields = {"banks": "16", "row_bytes": "2048", "row_miss_ns": "36.2", key: value}
    p = tmp_path / "t.yaml"
    p.write_text("name: t\nextends: sm_80\nmemory:\n  dram_rows:\n    source: test\n"
                 + "".join(f"    {k}: {v}\n" for k, v in fields.items()))
    with pytest.raises(MachineTableError, match=key) as e:
        load_machine(str(p))
    assert "\n" not in str(e.value)
