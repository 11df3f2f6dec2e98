"""benchmarks/accuracy/frontend_check.py: the replay helpers that bound the L0 instruction cache's
capacity misses and the register file's read-port delays on teg's schedule, on hand-computed
sequences, and the source-register reading of real sm_75 SASS."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fc():
    spec = importlib.util.spec_from_file_location("teg_frontend_check", ROOT / "benchmarks" / "accuracy" / "frontend_check.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_lru_line_misses_by_hand(fc):
    # (warp, line): (0,0) miss; (0,0) same warp, same line: no fetch; (1,1) miss; (0,2) miss and,
    # with 2 lines, evicts line 0; (1,0) misses again. With 3 lines the last one hits.
    warps, lines = [0, 0, 1, 0, 1], [0, 0, 1, 2, 0]
    assert fc.lru_line_misses(warps, lines, 2) == (4, 4)
    assert fc.lru_line_misses(warps, lines, 3) == (4, 3)
    # LRU, not FIFO: warp 2's hit on line 0 keeps it; line 2 evicts line 1 and warp 4 hits line 0
    # (first-in-first-out would have evicted line 0: 4 misses)
    assert fc.lru_line_misses([0, 1, 2, 3, 4], [0, 1, 0, 2, 0], 2) == (5, 3)


def test_port_replay_same_bank_sources_wait(fc):
    # three fixed-latency instructions of one warp, each reading R2, R4, R6 (all bank 0), issued at
    # 0, 1, 2. A reads bank 0 at cycles 1-3. B (issue 1) finds only cycle 4 free in its window 2-4,
    # then 4-5 in 3-5, and fits at issue 3 (reads 4-6): +2. C, pushed to 4, fits only at 6 (7-9): +2.
    same = [(0, 2, False), (1, 4, False), (2, 6, False)]
    r = fc.port_replay([0, 1, 2], [0, 0, 0], [same] * 3, [True] * 3)
    assert r == {"reads": 9, "rfc_hits": 0, "delayed": 2, "push": 4}


def test_port_replay_two_banks_give_two_reads_a_cycle(fc):
    # R2, R3, R5 read bank 0 once and bank 1 twice. A (issue 0): bank 0 at 1, bank 1 at 1-2.
    # B (issue 1): bank 0 at 2, bank 1 at 3-4. C (issue 2): bank 1 has only 5 free in 3-5; at
    # issue 3 it has 5-6: one cycle late. Three 3-source instructions a cycle exceed 2 reads a cycle.
    mixed = [(0, 2, False), (1, 3, False), (2, 5, False)]
    r = fc.port_replay([0, 1, 2], [0, 0, 0], [mixed] * 3, [True] * 3)
    assert r == {"reads": 9, "rfc_hits": 0, "delayed": 1, "push": 1}
    # spaced two cycles apart (the FMA pipe's rate on Volta) nothing waits
    r = fc.port_replay([0, 2, 4], [0, 0, 0], [mixed] * 3, [True] * 3)
    assert r["push"] == 0 and r["delayed"] == 0


def test_port_replay_register_cache(fc):
    # A marks R2 (slot 0) .reuse; B of the same warp reads R2 in slot 0 from the cache: it needs
    # two bank-0 reads, and with A's at 1-3 fits its window at issue 2 (reads 4-5): +1.
    a = [(0, 2, True), (1, 4, False), (2, 6, False)]
    b = [(0, 2, False), (1, 4, False), (2, 6, False)]
    r = fc.port_replay([0, 1], [0, 0], [a, b], [True, True])
    assert r == {"reads": 5, "rfc_hits": 1, "delayed": 1, "push": 1}
    # another warp's B does not hit A's cached value: three reads, issue 3 (+2)
    r = fc.port_replay([0, 1], [0, 1], [a, b], [True, True])
    assert r == {"reads": 6, "rfc_hits": 0, "delayed": 1, "push": 2}
    # an instruction that is not fixed-latency never waits (its reads come later, behind the MIO)
    r = fc.port_replay([0, 1], [0, 0], [b, b], [True, False])
    assert r["push"] == 0 and r["reads"] == 6


def test_instruction_sources_of_real_sass(fc):
    from teg.sass import parse_file
    progs = parse_file(ROOT / "tests" / "fixtures" / "sass" / "kernels.sm_75.sass")
    by_text = {}
    for p in progs:
        for ins, srcs in zip(p.instructions, fc.instruction_sources(p)):
            by_text.setdefault(ins.text, srcs)
    # reuse flags per slot
    assert by_text["FFMA.RZ R8, R17.reuse, R13.reuse, R16.reuse"] == [(0, 17, True), (1, 13, True), (2, 16, True)]
    # 64-bit operands read both registers of the pair, in their own slot; constants read none
    assert by_text["DFMA R2, R4, c[0x0][0x178], R2"] == [(0, 4, False), (0, 5, False), (2, 2, False), (2, 3, False)]
    # IMAD.WIDE's 64-bit addend is the wide operand; the immediate reads nothing
    assert by_text["IMAD.WIDE.U32 R2, R5, 0x8, R2"] == [(0, 5, False), (2, 2, False), (2, 3, False)]
    # a store's address registers are left out, its 64-bit data kept; RZ reads nothing
    assert by_text["STG.E.64.SYS [R2], R8"] == [(1, 8, False), (1, 9, False)]
    assert by_text["IADD3.X R23, RZ, R23, RZ, P1, !PT"] == [(1, 23, False)]
