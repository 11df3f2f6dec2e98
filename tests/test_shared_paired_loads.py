"""Paired shared loads in the engine (docs/model.md §3, "Paired loads"; ``shared.paired_loads``).

A 64/128-bit LDS whose active lanes pair up (T(n) == T(n^1) or T(n) == T(n^2)) is served in phases of
twice the lanes: a conflict-free paired LDS.128 costs 2 wavefronts instead of 4. The tables carry
the flag, sourced, and leave it off (the measured lud_internal launches on the Quadro GV100 and the
H200 fit the unpaired count: isa_tables/sm_90.yaml). The engine test turns it on for the bundled
sm_90 example, counts, independently of ``teg.memory.shared``, the LDS.128 rows whose lanes pair up
and are conflict-free in both phasings, and checks that the flag removes exactly 2 wavefronts from
each of them and changes nothing else.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from teg.engine import Options, load_inputs, lower, run
from teg.machine import load as load_machine
from teg.resources import traces_dir

EX_SASS = traces_dir() / "matmul_abt.sm_90.sass"
EX_TRACE = traces_dir() / "matmul_abt.sm_90.trace.npz"


def test_tables_leave_the_flag_off():
    """Every table says false (Volta and later with the forum sources and the measured launches that
    the paired count makes too fast; the others by default)."""
    for name in ("sm_70", "sm_75", "quadro_gv100", "v100", "sm_80", "a100_40", "sm_86", "sm_89", "sm_90", "h200",
                 "gtx680", "tesla_k40", "gt200", "sm_61"):
        assert not load_machine(name).shared.paired_loads, name


def _pairs_up(a):
    return bool(np.all(a[0::2] == a[1::2]) or np.all(a[np.arange(32) ^ 2] == a))


def _one_wavefront_per_phase(a, lanes):
    """Every phase of ``lanes`` lanes (16-B accesses) reads words of distinct banks or the same words."""
    for p in range(0, 32, lanes):
        words = {int(x) // 4 + q for x in a[p:p + lanes] for q in range(4)}
        banks = [w % 32 for w in words]
        if len(banks) != len(set(banks)):
            return False
    return True


@pytest.fixture(scope="module")
def example():
    return load_inputs(sass=EX_SASS, trace=EX_TRACE)


def test_paired_lds128_rows_lose_two_wavefronts_each(example):
    kt, prog, unpaired = example.kernel_trace, example.program, example.machine
    assert not unpaired.shared.paired_loads
    m = dataclasses.replace(unpaired, shared=dataclasses.replace(unpaired.shared, paired_loads=True))
    # independent count: full-warp LDS.128 rows whose lanes pair up and whose half-warp and
    # quarter-warp phases are each conflict-free (so 2 wavefronts paired, 4 unpaired)
    ops = list(kt.opcodes)
    starts = np.asarray(kt.addr_start)
    addrs = np.asarray(kt.addresses, np.int64)
    n_paired = 0
    for r in range(kt.num_rows):
        op = ops[int(kt.opcode[r])]
        if op.split(".")[0] != "LDS" or int(kt.mem_width[r]) != 16 or starts[r + 1] - starts[r] != 32:
            continue
        a = addrs[starts[r]:starts[r + 1]]
        if _pairs_up(a) and _one_wavefront_per_phase(a, 16) and _one_wavefront_per_phase(a, 8):
            n_paired += 1
    assert n_paired > 0                      # the example has such rows (its inner loop's LDS.128)
    r1 = run(lower(prog, kt, m, Options()))
    r0 = run(lower(prog, kt, unpaired, Options()))
    assert r0.counters["shared_accesses"] == r1.counters["shared_accesses"]
    assert r0.counters["shared_wavefronts"] - r1.counters["shared_wavefronts"] == 2 * n_paired
    assert r0.counters["shared_wavefronts_min"] - r1.counters["shared_wavefronts_min"] == 2 * n_paired
    assert r1.cycles <= r0.cycles            # fewer MIO cycles on this one-block-per-SM kernel
