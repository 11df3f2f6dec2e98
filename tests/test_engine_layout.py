"""The layout of the engine's state in host memory (teg.engine.state, teg.engine.static): tables on
host cache-line boundaries, the integer slot table's width, the registers numbered densely as
scoreboard rows — and that none of it changes a result (a register renaming gives the same run)."""

from __future__ import annotations

import numpy as np
import pytest

from teg.engine import run
from teg.engine.codes import DEP_BASE, UNIT_CLASSES
from teg.engine.handmade import make_input
from teg.engine.state import LINE, aligned, padded, sli_dtype
from teg.engine.static import register_map

FP32 = DEP_BASE + UNIT_CLASSES.index("fp32")


@pytest.mark.parametrize("shape,dtype,fill", [((7296, 16), np.int32, 0), ((7296, 4), np.float64, -1e300),
                                              ((3, 5, 2), np.int8, 7), ((1,), np.int64, -1)])
def test_aligned_tables_start_on_a_cache_line_and_hold_the_fill(shape, dtype, fill):
    a = aligned(shape, dtype, fill)
    assert a.ctypes.data % LINE == 0
    assert a.shape == shape and a.dtype == np.dtype(dtype) and a.flags.c_contiguous and a.flags.writeable
    assert np.all(a == fill)


def test_padded_rounds_rows_up_to_an_odd_number_of_whole_lines():
    assert padded(22, 16) == 28          # 22 registers of two float64: 6 lines -> 7
    assert padded(13, 16) == 20          # 4 lines -> 5
    assert padded(9, 16) == 12           # 3 lines
    assert padded(22, 2) == 32           # their two one-byte causes: one line
    assert padded(4, 16) == 4 and padded(1, 64) == 1 and padded(1, 128) == 1


def test_slot_integers_are_int32_unless_a_value_may_not_fit():
    assert sli_dtype(10) == np.int32
    assert sli_dtype(2**31 - 2) == np.int32
    assert sli_dtype(2**31 - 1) == np.int64
    assert sli_dtype(5 * 2**31) == np.int64


def test_register_map_numbers_registers_densely_in_order_of_first_appearance():
    """Instruction 0 reads R5 and P-like id 300, writes R7; instruction 1 reads R7 and R5, writes
    id 300: rows 0, 1, 2 for 5, 300, 7; every other id -1."""
    src = np.array([[5, 300, -1], [7, 5, -1]], np.int16)
    dst = np.array([[7, -1], [300, -1]], np.int16)
    rmap, n = register_map(dst, src)
    assert n == 3
    assert rmap.shape == (301,)
    assert (rmap[5], rmap[300], rmap[7]) == (0, 1, 2)
    assert np.count_nonzero(rmap >= 0) == 3
    rmap, n = register_map(np.full((2, 2), -1, np.int16), np.full((2, 3), -1, np.int16))
    assert n == 1 and np.all(rmap == -1)


def _chain(regs):
    """Two warps of a mixed chain: FADD-like ops reading and writing the given registers (write
    after write, read after write, an independent one), latency 4 and 9."""
    a, b, c, d = regs
    return make_input(lat_exec=[4, 9, 4, 9, 1], lat_multi=[1] * 5, lat_same=[1] * 5,
                      dst=[[a], [b], [a, c], [d], [b]], src=[[b, c], [a], [b, d], [c, a], [d]],
                      depcause=[FP32] * 5, rows_per_warp=[[0, 1, 2, 3, 4, 0, 1], [2, 3, 4, 0, 1, 2]])


def test_renaming_registers_changes_no_result():
    """The scoreboard keys registers by their rows (register_map): any renaming of the ids the
    kernel names gives the same run, issue cycle for issue cycle."""
    dense = run(_chain([0, 1, 2, 3]))
    sparse = run(_chain([250, 7, 130, 3]))
    assert dense.cycles == sparse.cycles > 0
    assert dense.stalls == sparse.stalls
    assert list(dense.timeline) == list(sparse.timeline)
