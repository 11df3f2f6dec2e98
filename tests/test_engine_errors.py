"""The engine's refusals: inputs it cannot time end in an :class:`EngineError` naming the
problem, never in a silent or partial result."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from teg.engine import EngineError, run

from teg.engine.handmade import make_input
from teg.engine.lowered import with_replay


def _chain(**kw):
    return make_input(lat_exec=[4, 4], lat_multi=[1, 1], lat_same=[1, 1], dst=[[4], [5]], src=[[2], [4]], **kw)


def test_block_larger_than_the_sm_is_refused():
    inp = _chain(rows_per_warp=[[0, 1]] * 4, warps_per_block=4, slots=2)
    with pytest.raises(EngineError, match="more warp slots than the SM has"):
        run(inp)


@pytest.mark.parametrize("field,width", [("s_src", 17), ("s_dst", 15)])
def test_register_list_wider_than_the_static_table_is_refused(field, width):
    inp = _chain()
    regs = np.full((inp.num_static, width), -1, np.int16)
    regs[:, :width] = np.arange(width, dtype=np.int16)          # every column used
    with pytest.raises(EngineError, match="more than 16 source or 14 destination registers"):
        run(dataclasses.replace(inp, static=inp.static._replace(**{field: regs})))


def test_widest_register_lists_the_lowering_makes_are_timed():
    """16 sources and 8 destinations (the lowering's widest) fit: the consumer waits for the
    producer of its 16th source."""
    inp = _chain()
    src = np.full((2, 16), -1, np.int16)
    src[1] = np.arange(10, 26)          # the consumer reads R10..R25; R25 written by the producer
    dst = np.full((2, 8), -1, np.int16)
    dst[0] = np.arange(25, 33)
    dst[1, 0] = 40
    r = run(dataclasses.replace(inp, static=inp.static._replace(s_src=src, s_dst=dst)))
    # producer issues at 0, result at 4; consumer waits for R25 and issues at 4, done at 8
    assert r.cycles == 8


def test_replay_order_that_deadlocks_at_a_barrier_is_refused():
    """Block of two warps, A: BAR, FADD; B: FADD, BAR (rows A0 A1 B0 B1). Free, A's FADD follows
    B's BAR. An order putting A's FADD before B's rows waits forever: A waits at the barrier, B's
    scheduler waits for the order. The engine stops with the replay named, not a generic deadlock."""
    inp = make_input(lat_exec=[1, 4], lat_multi=[1, 1], lat_same=[1, 1], barrier=[1, 0], dst=[[], [5]],
                     rows_per_warp=[[0, 1], [1, 0]], warps_per_block=2, schedulers=2)
    assert list(run(inp).timeline) == [0, 2, 0, 1]
    assert run(with_replay(inp, [0, 2, 3, 1])).cycles == run(inp).cycles
    with pytest.raises(EngineError, match="replay order infeasible at cycle 1: .*barrier arrival"):
        run(with_replay(inp, [0, 1, 2, 3]))
