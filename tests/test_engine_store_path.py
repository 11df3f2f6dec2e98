"""The SM's write-through store path (docs/model.md §3, "Store path"): a global write holds its SM's
path ``memory.l1.store_cycles_per_sector`` cycles per 32 B sector it sends to L2, and the SM's next
write issues only once the path is free; loads do not wait for it. Hand-built inputs; each expected
cycle follows from that rule."""

from __future__ import annotations

import pytest

from teg.engine import Options, lower, run
from teg.engine.codes import DEP_GLOBAL, MEM_GLOBAL
from teg.engine.handmade import make_input
from teg.machine import load as load_machine

STG, LDG = 0, 1


def sectors(n, base=0):
    """``n`` 32 B sectors of one line from ``base`` (a coalesced store of n x 8 floats)."""
    return [(base + 32 * k, 32, 0) for k in range(n)]


def warps_of(rows, cps=2.0, switches=None, schedulers=1):
    """One warp per entry of ``rows`` (``(kind, sectors)``: a store or a load of that many sectors),
    one SM; the memory instructions use the SM's MIO (1 cycle per issue); no L1/L2, DRAM free."""
    tx = [sectors(n, 4096 * i) for i, (_, n) in enumerate(rows)]
    return make_input(lat_exec=[0, 0], lat_multi=[1, 1], lat_same=[1, 1], unit=[0, 0], units_occ=(1.0,),
                      units_count=(1,), units_per_sm=(1,), dst=[[], [4]], src=[[2, 3], [2]],
                      mem=[MEM_GLOBAL, MEM_GLOBAL], store=[2, 0], depcause=[DEP_GLOBAL, DEP_GLOBAL],
                      rows_per_warp=[[kind] for kind, _ in rows], tx=tx, schedulers=schedulers,
                      store_cycles_per_sector=cps, dram_latency=100.0, switches=switches or {})


def test_a_store_holds_the_path_two_cycles_per_sector():
    """Three warps, one coalesced 4-sector store each, at 2 cycles per sector: the path is busy
    0-7, 8-15, 16-23, so the stores issue at 0, 8 and 16 (without the path: 0, 1, 2, one MIO issue
    per cycle)."""
    rows = [(STG, 4)] * 3
    assert run(warps_of(rows)).timeline.tolist() == [0, 8, 16]
    assert run(warps_of(rows, switches={"store_path": False})).timeline.tolist() == [0, 1, 2]


def test_the_cost_follows_the_sectors_sent():
    """1, 4 and 1 sectors: the path frees at 2, then 2 + 8 = 10: issues at 0, 2, 10."""
    assert run(warps_of([(STG, 1), (STG, 4), (STG, 1)])).timeline.tolist() == [0, 2, 10]


def test_loads_pass_a_busy_store_path():
    """Warp 1's store waits for the path (8); warp 2's load needs only the MIO and issues at 1."""
    assert run(warps_of([(STG, 4), (STG, 4), (LDG, 4)])).timeline.tolist() == [0, 8, 1]


def test_the_path_is_shared_by_the_sms_schedulers():
    """Four warps on four schedulers of one SM: their stores still leave one after the other, at 0,
    8, 16, 24 (each scheduler may issue in every cycle; the path is the SM's)."""
    r = run(warps_of([(STG, 4)] * 4, schedulers=4))
    assert sorted(r.timeline.tolist()) == [0, 8, 16, 24]


def test_removing_the_path_never_adds_cycles():
    """The ``store_path`` what-if: a store-heavy mix is no slower without the path, and strictly
    faster where the path binds."""
    rows = [(STG, 4), (LDG, 4), (STG, 2), (STG, 4), (LDG, 1), (STG, 4)]
    on = run(warps_of(rows)).cycles
    off = run(warps_of(rows, switches={"store_path": False})).cycles
    assert off < on


def test_no_path_without_the_table_key():
    """cps 0 (a table without ``store_cycles_per_sector``): the stores issue one per cycle."""
    assert run(warps_of([(STG, 4)] * 3, cps=0.0)).timeline.tolist() == [0, 1, 2]


def test_the_volta_tables_carry_the_path_and_later_ones_do_not():
    """sm_70 (and the Quadro GV100 and sm_75 tables that extend it) give 2 cycles per sector; the
    sm_80 / sm_90 tables have no published or measured figure and leave the path out."""
    for name in ("sm_70", "quadro_gv100", "sm_75"):
        assert load_machine(name).memory.l1.store_cycles_per_sector == 2.0
    for name in ("sm_80", "a100_80", "sm_90", "h100_pcie"):
        assert load_machine(name).memory.l1.store_cycles_per_sector == 0.0


def test_the_lowering_passes_the_tables_figure():
    """A lowered sm_70 trace carries the table's figure; ``store_path`` off keeps the figure but
    the run's memory configuration takes none."""
    from tests.test_l1_wavefronts import _strided_trace_input

    inp = _strided_trace_input(load_machine("sm_70"))
    assert inp.scalars.store_cycles_per_sector == 2.0
    assert inp.scalars.store_path


def test_a_non_positive_figure_is_refused(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_text('name: m\ndescription: "x"\nextends: sm_70\nmemory:\n  l1:\n'
                 '    store_cycles_per_sector: {value: 0, source: "x"}\n')
    with pytest.raises(Exception) as e:
        load_machine(str(p))
    assert "store_cycles_per_sector" in str(e.value)
