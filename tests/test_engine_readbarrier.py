"""Read-barrier release (docs/model.md §2, control codes): an instruction that sets a read barrier
frees it once it has read its source registers. A memory access (or an instruction of an
SM-shared unit behind the MIO queue) reads them when the shared pipe takes it, the table's
read-barrier figure; an instruction of the scheduler's own narrow pipe reads them while it is
dispatched, over the cycles it occupies the unit (FP64 on GA100: 8 lanes per scheduler, a warp in
4 cycles). Hand-built inputs: each expected issue cycle follows from those rules."""

from __future__ import annotations

import pytest

from teg.engine import run

from teg.engine.handmade import make_input
from teg.engine.codes import DEP_BASE, DEP_GLOBAL, MEM_GLOBAL, UNIT_CLASSES

FP64 = DEP_BASE + UNIT_CLASSES.index("fp64")
RBAR = 20.0


def war_pair(first_mem: bool, occ: float, per_sm: bool = False):
    """Instruction 0 reads R4 and sets read barrier SB0 (unit 0: occupancy ``occ``; a global
    store when ``first_mem``); instruction 1 overwrites R4 and waits on SB0 (unit 1: 1 cycle).
    Stall counts of 1, so only the barrier holds instruction 1 back."""
    ctrl = {"ctrl": [1, 1], "stall": [1, 1], "yield": [1, 1], "wbar": [7, 7], "rbar": [0, 7],
            "wait": [0, 0b1]}
    return make_input(lat_exec=[5, 1], lat_multi=[1, 1], lat_same=[1, 1], unit=[0, 1],
                      units_occ=(occ, 1.0), units_count=(1, 1), units_per_sm=(int(per_sm), 0),
                      dst=[[], [4]], src=[[4], []], mem=[MEM_GLOBAL if first_mem else 0, 0],
                      store=[2 if first_mem else 0, 0], depcause=[DEP_GLOBAL if first_mem else FP64, FP64],
                      tx=[[(0, 32, 0)], []] if first_mem else None, ctrl=ctrl,
                      dependency_model="controlcodes", rbar_latency=RBAR)


@pytest.mark.parametrize("occ", [1.0, 4.0, 16.0])
def test_a_narrow_pipe_frees_its_read_barrier_after_its_dispatch(occ):
    """A DADD-like instruction issued at 0 occupying its scheduler-local unit ``occ`` cycles: the
    writer of its source register issues at 0 + occ (at least 1)."""
    r = run(war_pair(first_mem=False, occ=occ))
    assert r.timeline.tolist() == [0, max(occ, 1.0)]


def test_a_store_frees_its_read_barrier_at_the_table_figure():
    """A store issued at 0 reads its data register when the memory pipe takes it: 0 + 20."""
    r = run(war_pair(first_mem=True, occ=1.0))
    assert r.timeline.tolist() == [0, RBAR]


def test_an_sm_shared_unit_frees_it_at_the_table_figure_or_its_occupancy():
    """An instruction of an SM-shared unit (the MIO path): max(20, occupancy)."""
    assert run(war_pair(first_mem=False, occ=4.0, per_sm=True)).timeline.tolist() == [0, RBAR]
    assert run(war_pair(first_mem=False, occ=32.0, per_sm=True)).timeline.tolist() == [0, 32.0]
