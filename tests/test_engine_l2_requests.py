"""L2 requests (docs/model.md §3, "L2 requests"): each request an SM's L1 sends to L2 — one per
128 B line with sectors past L1 (a load's missing sectors, every line of a store) — holds the L1TEX
pipeline (the SM-shared ``mio`` unit) ``l2_request_cycles`` after the access's wavefronts, and the
access's requests leave that far apart. Hand-built inputs: one SM, a 1-cycle ``mio`` unit shared by
the SM, an L1 of 128 B lines and 32 B sectors (hit 28 cycles), no L2, DRAM 400 cycles with no
service time, and 2 cycles per request unless a test says otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from teg.engine import run
from teg.engine.codes import DEP_BASE, DEP_GLOBAL, MEM_GLOBAL, UNIT_CLASSES
from teg.engine.handmade import make_input
from teg.engine.lowered import with_switches
from teg.machine import load as load_machine
from teg.machine.loader import MachineTableError

INT = DEP_BASE + UNIT_CLASSES.index("int")
L1 = (64, 4, 128, 32, 28.0)
REQ = 2.0


def sectors(*lines_and_sectors):
    """Transactions ``(addr, 32, channel 0)`` for (line, sector) pairs, sorted as coalescing lists them."""
    return [(line * 128 + s * 32, 32, 0) for line, s in sorted(lines_and_sectors)]


def program(accesses, store=None, req=REQ, switches=None, users=True):
    """One warp: each access (a list of transactions) is a global instruction on the SM's ``mio``
    unit, followed (``users``) by an integer instruction that uses its result; ``store`` marks
    accesses that are stores (2: write through L1)."""
    n = len(accesses)
    per = 2 if users else 1
    S = per * n
    mem, dst, src, dep, unit, st, tx = [], [], [], [], [], [], []
    for k, a in enumerate(accesses):
        mem += [MEM_GLOBAL] + ([0] if users else [])
        dst += [[4 + k]] + ([[40 + k]] if users else [])
        src += [[]] + ([[4 + k]] if users else [])
        dep += [DEP_GLOBAL] + ([INT] if users else [])
        unit += [0] + ([1] if users else [])
        st += [store[k] if store else 0] + ([0] if users else [])
        tx += [a] + ([[]] if users else [])
    return make_input(lat_exec=[0, 1] * n if users else [0] * n, lat_multi=[1] * S, lat_same=[1] * S, dst=dst,
                      src=src, mem=mem, depcause=dep, unit=unit, units_occ=(1.0, 1.0), units_count=(1, 1),
                      units_per_sm=(1, 0), store=st, rows_per_warp=[list(range(S))], tx=tx, l1=L1,
                      dram_latency=400.0, l2_request_cycles=req, switches=switches)


def test_a_load_missing_four_lines_sends_four_requests_two_cycles_apart():
    """A load whose 4 sectors lie in 4 lines, all missing: requests leave at 0, 2, 4, 6, the last
    is back at 6 + 400, so its user issues at 406 (400 without the request stage)."""
    acc = [sectors((0, 0), (1, 0), (2, 0), (3, 0))]
    assert run(program(acc)).timeline.tolist() == [0, 406]
    assert run(program(acc, req=0.0)).timeline.tolist() == [0, 400]


def test_the_sectors_of_one_line_travel_in_one_request():
    """Four sectors in two lines (two each): two requests, at 0 and 2: the user at 402."""
    acc = [sectors((0, 0), (0, 1), (1, 2), (1, 3))]
    assert run(program(acc)).timeline.tolist() == [0, 402]


def test_the_requests_hold_the_l1_pipeline_after_the_wavefronts():
    """Two independent loads, 4 missing lines each (users after both): the first holds ``mio`` for
    its wavefront (1 cycle) and 4 requests (8), so the second issues at 9 (at 1 without the stage);
    its requests leave at 9, 11, 13, 15, its data are back at 415 and the last user issues at 416
    (the first user at 415, after the second load's issue)."""
    a = sectors((0, 0), (1, 0), (2, 0), (3, 0))
    b = sectors((8, 0), (9, 0), (10, 0), (11, 0))
    inp = make_input(lat_exec=[0, 0, 1, 1], lat_multi=[1] * 4, lat_same=[1] * 4, dst=[[4], [5], [6], [7]],
                     src=[[], [], [4], [5]], mem=[MEM_GLOBAL, MEM_GLOBAL, 0, 0],
                     depcause=[DEP_GLOBAL, DEP_GLOBAL, INT, INT], unit=[0, 0, 1, 1], units_occ=(1.0, 1.0),
                     units_count=(1, 1), units_per_sm=(1, 0), rows_per_warp=[[0, 1, 2, 3]],
                     tx=[a, b, [], []], l1=L1, dram_latency=400.0, l2_request_cycles=REQ)
    assert run(inp).timeline.tolist() == [0, 9, 406, 415]
    assert run(with_switches(inp, l2_requests=False)).timeline.tolist() == [0, 1, 400, 401]


def test_l1_hits_send_no_request():
    """The same 4 lines loaded again after their data are back hit L1: no request, the second
    load's user 28 cycles after it (407 + 28 = 435), the same with or without the stage."""
    acc = [sectors((0, 0), (1, 0), (2, 0), (3, 0))] * 2
    on = run(program(acc))
    assert on.timeline.tolist() == [0, 406, 407, 435]
    assert on.counters["l1_hits"] == 4
    off = run(program(acc, req=0.0))
    assert off.timeline.tolist()[2:] == [401, 429]


def test_a_store_sends_a_request_per_line_it_writes():
    """Stores write through L1: a store of 4 lines and an independent load behind it on the same
    pipeline: the store holds ``mio`` 1 + 4 x 2 = 9 cycles, the load issues at 9 (at 1 without)."""
    st = sectors((0, 0), (1, 0), (2, 0), (3, 0))
    inp = program([st, sectors((8, 0))], store=[2, 0], users=False)
    assert run(inp).timeline.tolist() == [0, 9]
    assert run(program([st, sectors((8, 0))], store=[2, 0], users=False, req=0.0)).timeline.tolist() == [0, 1]


@pytest.mark.parametrize("lines", [1, 4, 32])
def test_free_requests_are_the_what_if_and_never_slower(lines):
    """``l2_requests`` off: the run equals one without the key and never takes more cycles."""
    acc = [sectors(*[(i, 0) for i in range(lines)]), sectors(*[(64 + i, 1) for i in range(lines)])] * 2
    on = run(program(acc))
    off = run(program(acc, switches={"l2_requests": False}))
    assert off.timeline.tolist() == run(program(acc, req=0.0)).timeline.tolist()
    assert off.cycles <= on.cycles
    if lines > 1:
        assert off.cycles < on.cycles


def test_lowering_takes_the_tables_request_cycles():
    """sm_70 (and the Quadro GV100 and sm_75 that extend it) carry ``memory.l1.l2_request_cycles``;
    the lowered input has it, and the strided load of 32 missing lines (16 kB apart: 32 requests)
    takes 31 request intervals longer to come back than without the stage. sm_80 and sm_90 have
    no such number and charge nothing."""
    from tests.test_l1_wavefronts import _strided_trace_input
    for name, has in (("sm_70", True), ("quadro_gv100", True), ("sm_75", True), ("sm_80", False),
                      ("sm_90", False)):
        assert (load_machine(name).memory.l1.l2_request_cycles > 0) == has, name
    m = load_machine("sm_70")
    c = m.memory.l1.l2_request_cycles
    inp = _strided_trace_input(m)
    assert inp.scalars.l2_request_cycles == c
    on, off = run(inp), run(with_switches(inp, l2_requests=False))
    assert on.cycles - off.cycles == pytest.approx(31 * c, abs=1.0)
    assert np.array_equal(run(_strided_trace_input(load_machine("sm_80"))).timeline,
                          run(with_switches(_strided_trace_input(load_machine("sm_80")), l2_requests=False)).timeline)


@pytest.mark.parametrize("value", ["-1", "0", "100"])
def test_a_bad_request_cost_is_refused_by_name(tmp_path, value):
    p = tmp_path / "t.yaml"
    p.write_text(f"name: t\nextends: sm_70\nmemory:\n  l1:\n    l2_request_cycles: {{value: {value}, source: test}}\n")
    with pytest.raises(MachineTableError, match="l2_request_cycles"):
        load_machine(str(p))
