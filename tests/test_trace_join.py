"""Joining a trace with its SASS program: PC → static instruction index, opcode agreement, and a
clear rejection (first mismatching PC) for a trace of a different binary."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import teg.trace as tt
from teg.sass.program import Instruction, Program
from teg.trace import TraceMismatchError, join, opcodes_agree
from test_trace_synth import Block, Row, kernel_text

FIXTURES = Path(__file__).parent / "fixtures" / "sass"


def program(ops: list[str], step: int = 0x10, name: str = "_Z4testPf") -> Program:
    ins = [Instruction(index=i, address=i * step, opcode=op, base=op.split(".")[0], modifiers=tuple(op.split(".")[1:]),
                       operands=()) for i, op in enumerate(ops)]
    return Program(name=name, arch="sm_80", instructions=ins, source="hand.sass")


def trace_of(tmp_path: Path, warps: list[list[tuple[int, str]]]):
    blocks = [Block((0, 0, 0), [[Row(pc, 0xFFFFFFFF, op) for pc, op in w] for w in warps])]
    p = tmp_path / "kernel-1.traceg"
    p.write_text(kernel_text(blocks, block=(32 * len(warps), 1, 1)))
    return tt.load(p, cache=tmp_path / "c").kernels[0]


OPS = ["S2R", "IMAD.MOV.U32", "ISETP.GE.AND", "BRA", "LDG.E.SYS", "FFMA", "EXIT"]


def test_join_maps_pcs_to_instruction_indices(tmp_path):
    kt = trace_of(tmp_path, [[(0x0, "S2R"), (0x10, "IMAD.MOV.U32"), (0x20, "ISETP.GE.AND"), (0x30, "BRA"),
                              (0x10, "IMAD.MOV.U32"), (0x60, "EXIT")],
                             [(0x0, "S2R"), (0x50, "FFMA"), (0x60, "EXIT")]])
    idx = join(kt, program(OPS))
    assert idx.dtype == np.int32
    assert idx.tolist() == [0, 1, 2, 3, 1, 6, 0, 5, 6]


def test_join_with_unsorted_program_addresses(tmp_path):
    p = program(OPS)
    p.instructions.reverse()        # order of the list must not matter, the index is the instruction's
    kt = trace_of(tmp_path, [[(0x60, "EXIT"), (0x0, "S2R")]])
    idx = join(kt, p)
    assert [p.instructions[i].address for i in idx] == [0x60, 0x0]


def test_modifier_spelling_differences_agree():
    assert opcodes_agree("LDG.E.SYS", "LDG.E.SYS")
    assert opcodes_agree("LDG.E.SYS", "LDG.E")            # default modifier printed by one side only
    assert not opcodes_agree("LDG.E.SYS", "STG.E.SYS")
    assert not opcodes_agree("IMAD", "IMADX")


def test_pc_missing_from_program_is_rejected(tmp_path):
    kt = trace_of(tmp_path, [[(0x0, "S2R"), (0x18, "FFMA"), (0x70, "EXIT")]])
    with pytest.raises(TraceMismatchError, match=r"trace PC 0x0018 \(row 1, opcode FFMA\) is not an instruction address"):
        join(kt, program(OPS))


def test_first_mismatching_opcode_is_named(tmp_path):
    kt = trace_of(tmp_path, [[(0x0, "S2R"), (0x10, "IMAD.MOV.U32"), (0x40, "LDG.E.SYS")],
                             [(0x20, "FSETP.GT.AND"), (0x40, "STG.E.SYS")]])
    with pytest.raises(TraceMismatchError) as ei:
        join(kt, program(OPS))
    msg = str(ei.value)
    assert "at PC 0x0020 (row 3) the trace executes FSETP.GT.AND but the SASS has ISETP.GE.AND" in msg
    assert "hand.sass" in msg and "\n" not in msg


def test_empty_trace_joins_to_nothing(tmp_path):
    kt = trace_of(tmp_path, [[]])
    assert join(kt, program(OPS)).shape == (0,)


def test_join_against_real_sass(tmp_path):
    """A trace that walks a kernel of the nvcc-compiled fixture joins; one of a different kernel does not."""
    sass = pytest.importorskip("teg.sass")
    src = FIXTURES / "kernels.sm_80.sass"
    if not src.is_file():
        pytest.skip("fixture kernels.sm_80.sass not generated")
    progs = [p for p in sass.parse_file(src) if len(p.instructions) >= 8]
    assert len(progs) >= 2
    a = progs[0]
    walk = [(ins.address, ins.opcode) for ins in a.instructions[:8]]
    assert join(trace_of(tmp_path, [walk]), a).tolist() == [ins.index for ins in a.instructions[:8]]
    base_at = {ins.address: ins.base for ins in a.instructions}
    # another kernel whose first instructions are not all at the same address with the same base
    b = next(p for p in progs[1:] if any(base_at.get(i.address) != i.base for i in p.instructions[:8]))
    (tmp_path / "b").mkdir()
    kt2 = trace_of(tmp_path / "b", [[(ins.address, ins.opcode) for ins in b.instructions[:8]]])
    with pytest.raises(TraceMismatchError, match=r"PC 0x[0-9a-f]{4}"):
        join(kt2, a)
