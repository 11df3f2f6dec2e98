"""Address translation (docs/model.md §3, "Address translation"): an access past L1 needs its
page's translation; each SM's L1 TLB and the GPU's L2 TLB start a kernel cold. An L1 TLB miss that
hits the L2 TLB costs its latency, a miss in both a page walk; a request for a translation already
on its way waits for it. Hand-built inputs: no L1, an L2 that misses (DRAM 400 cycles), TLB pages
of 2 MB (L1 TLB: 2 entries per SM) and 32 MB (L2 TLB: 4 entries), L2 TLB hit 8, page walk 600."""

from __future__ import annotations

import pytest

from teg.engine import run

from teg.engine.handmade import make_input
from teg.engine.lowered import with_switches
from teg.engine.codes import DEP_BASE, DEP_GLOBAL, MEM_GLOBAL, UNIT_CLASSES
from teg.machine import load as load_machine
from teg.machine.loader import MachineTableError

INT = DEP_BASE + UNIT_CLASSES.index("int")
MB = 1 << 20
L2 = (64, 16, 128, 32, 200.0)
TLB = (2 * MB, 2, 32 * MB, 4, 8.0, 600.0)


def chain(addrs, tlb=TLB, l1=None, switches=None):
    """One warp: for each address a load (one 32 B transaction) and an instruction that uses it,
    so each load issues after the previous one's data are back."""
    n = len(addrs)
    rows = [r for k in range(n) for r in (2 * k, 2 * k + 1)]
    return make_input(lat_exec=[0, 1] * n, lat_multi=[1] * 2 * n, lat_same=[1] * 2 * n,
                      dst=[[4 + k] if i == 0 else [40 + k] for k in range(n) for i in (0, 1)],
                      src=[[] if i == 0 else [4 + k] for k in range(n) for i in (0, 1)],
                      mem=[MEM_GLOBAL, 0] * n, depcause=[DEP_GLOBAL, INT] * n, rows_per_warp=[rows],
                      tx=[[(a, 32, 0)] if i == 0 else [] for a in addrs for i in (0, 1)],
                      l1=l1, l2=L2, dram_latency=400.0, tlb=tlb, switches=switches)


def test_a_cold_page_waits_for_a_page_walk():
    """The load at 0 waits 600 for the walk, then 400 for DRAM: its user issues at 1000 (400
    without translation), and the wait is charged to ``tlb_miss``."""
    r = run(chain([0]))
    assert r.timeline.tolist() == [0, 1000]
    assert r.stalls["tlb_miss"] > 0
    assert run(chain([0], tlb=None)).timeline.tolist() == [0, 400]


def test_a_page_the_l1_tlb_holds_costs_nothing():
    """The second load (another line of page 0) issues at 1001, finds the translation and takes
    DRAM's 400: its user at 1401."""
    assert run(chain([0, 4096])).timeline.tolist() == [0, 1000, 1001, 1401]


def test_an_l1_tlb_miss_that_hits_the_l2_tlb_costs_its_latency():
    """Pages 0, 1 and 2 share one 32 MB L2 TLB entry: the first walks (user at 1000), the next two
    miss the L1 TLB and take the L2 TLB's 8 cycles each (1001 + 8 + 400 = 1409, 1410 + 408 = 1818).
    Page 0 again: the 2-entry L1 TLB now holds pages 1 and 2, so it costs 8 more (1819 + 408 =
    2227); with 4 entries it is still there (1819 + 400 = 2219)."""
    addrs = [0, 2 * MB, 4 * MB, 4096]
    assert run(chain(addrs)).timeline.tolist()[1::2] == [1000, 1409, 1818, 2227]
    four = (2 * MB, 4, 32 * MB, 4, 8.0, 600.0)
    assert run(chain(addrs, tlb=four)).timeline.tolist()[1::2] == [1000, 1409, 1818, 2219]


def test_requests_for_a_translation_on_its_way_wait_for_it():
    """Two loads of page 0 issued at 0 and 1 (users after both): the second finds the walk under
    way and waits for it (600 + 400 = 1000), it does not walk again (1001 + 400)."""
    inp = make_input(lat_exec=[0, 0, 1], lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[4], [5], [6]],
                     src=[[], [], [4, 5]], mem=[MEM_GLOBAL, MEM_GLOBAL, 0], depcause=[DEP_GLOBAL, DEP_GLOBAL, INT],
                     rows_per_warp=[[0, 1, 2]], tx=[[(0, 32, 0)], [(4096, 32, 0)], []], l2=L2, dram_latency=400.0,
                     tlb=TLB)
    assert run(inp).timeline.tolist() == [0, 1, 1000]


def test_an_sm_shares_the_walk_another_sm_started():
    """SMs 0 and 1 each load a line of page 0 at 0: one walk; SM 1's L1 TLB miss hits the L2 TLB
    entry whose walk is under way and waits for it (both users at 1000, not 1000 and 608 + 400)."""
    inp = make_input(lat_exec=[0, 1], lat_multi=[1, 1], lat_same=[1, 1], dst=[[4], [5]], src=[[], [4]],
                     mem=[MEM_GLOBAL, 0], depcause=[DEP_GLOBAL, INT], rows_per_warp=[[0, 1], [0, 1]],
                     warps_per_block=1, sms=2, blocks_sm=[0, 1],
                     tx=[[(0, 32, 0)], [], [(4096, 32, 0)], []], l2=L2, dram_latency=400.0, tlb=TLB)
    assert run(inp).timeline.tolist() == [0, 1000, 0, 1000]


def test_an_l1_hit_needs_no_translation():
    """With an L1: line 0 is loaded (walk), pages 1 and 2 push page 0 out of the L1 TLB, and line 0
    again hits L1 (28 cycles after issue, no L2 TLB lookup: 1819 + 28 = 1847)."""
    l1 = (4, 4, 128, 32, 28.0)
    r = run(chain([0, 2 * MB, 4 * MB, 0], l1=l1))
    assert r.timeline.tolist()[1::2] == [1000, 1409, 1818, 1847]
    assert r.counters["l1_hits"] == 1


@pytest.mark.parametrize("addrs", [[0], [0, 2 * MB, 4 * MB, 4096], [0, 64 * MB, 0, 128 * MB]])
def test_a_perfect_tlb_is_the_what_if_and_never_slower(addrs):
    """``tlb`` off: the run equals one without translation and never takes more cycles."""
    off = run(chain(addrs, switches={"tlb": False}))
    assert off.timeline.tolist() == run(chain(addrs, tlb=None)).timeline.tolist()
    assert off.cycles <= run(chain(addrs)).cycles
    assert off.stalls["tlb_miss"] == 0


def test_lowering_takes_the_tables_tlb():
    """sm_70 (and the Quadro GV100 that extends it) translate: the lowered input carries the L1
    TLB (16 entries of 2 MB) and the L2 TLB, and the one load of a trace waits for a page walk;
    a table without ``memory.tlb`` (sm_80) and the Kepler table that opts out do not."""
    from tests.test_l1_wavefronts import _strided_trace_input
    for name, walks in (("sm_70", True), ("quadro_gv100", True), ("sm_80", False), ("gtx680", False)):
        assert (load_machine(name).memory.tlb is not None) == walks, name
    m = load_machine("sm_70")
    inp = _strided_trace_input(m)
    assert inp.scalars.tlb1 == (1, 16, 2 * MB, 2 * MB)
    assert inp.scalars.walk_latency == m.memory.tlb.walk_latency
    on, off = run(inp), run(with_switches(inp, tlb=False))
    assert on.stalls["tlb_miss"] > 0 and off.stalls["tlb_miss"] == 0
    assert on.cycles - off.cycles == m.memory.tlb.walk_latency     # one walk on the critical path


def test_a_tlb_entry_must_cover_a_page(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("name: t\nextends: sm_70\nmemory:\n  tlb:\n    source: test\n    page_bytes: 2097152\n"
                 "    l1_entries: 16\n    l2_page_bytes: 1048576\n    l2_entries: 65\n    l2_latency: 8\n"
                 "    walk_latency: 654\n")
    with pytest.raises(MachineTableError, match="l2_page_bytes"):
        load_machine(str(p))
