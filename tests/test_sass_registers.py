"""Registers read and written (teg.sass.effects): hand-checked instructions from the nvcc fixtures,
the fragment formula for MMA, and the flat register-id helpers."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from teg.sass import parse_text
from teg.sass.effects import effects_of, mma_fragments, mma_shape
from teg.sass.registers import reg_name, reg_span

FIXTURES = Path(__file__).parent / "fixtures" / "sass"


@lru_cache(maxsize=None)
def _instructions(arch: int):
    text = (FIXTURES / f"kernels.sm_{arch}.sass").read_text()
    return [i for p in parse_text(text, demangle=False) for i in p.instructions]


def _find(arch: int, text: str):
    for ins in _instructions(arch):
        if ins.text == text:
            return ins
    raise AssertionError(f"{text!r} not in sm_{arch} fixture")


def _names(ids) -> list[str]:
    return [reg_name(r) for r in ids]


# (arch, instruction text as printed, written registers, read registers) — worked out by hand
CASES = [
    (90, "IMAD.WIDE R4, R0, 0x10, R4", ["R4", "R5"], ["R0", "R4", "R5"]),
    (100, "IMAD.WIDE.U32 R2, R9, 0x4, R2", ["R2", "R3"], ["R9", "R2", "R3"]),
    (90, "LDG.E.128.CONSTANT R12, desc[UR4][R4.64]", ["R12", "R13", "R14", "R15"], ["UR4", "UR5", "R4", "R5"]),
    (90, "STG.E.128 desc[UR4][R6.64], R12", [], ["UR4", "UR5", "R6", "R7", "R12", "R13", "R14", "R15"]),
    (80, "STL.128 [R1+0x10], R8", [], ["R1", "R8", "R9", "R10", "R11"]),
    (100, "LDS.128 R8, [R7+0x10]", ["R8", "R9", "R10", "R11"], ["R7"]),
    (90, "LDC.64 R4, c[0x0][0x210]", ["R4", "R5"], []),
    (100, "LDCU.128 UR8, c[0x0][0x380]", ["UR8", "UR9", "UR10", "UR11"], []),
    (90, "HMMA.16816.F32 R16, R4.reuse, R12, RZ", ["R16", "R17", "R18", "R19"],
     ["R4", "R5", "R6", "R7", "R12", "R13"]),
    (75, "HMMA.1688.F32 R16, R10, R12, R16", ["R16", "R17", "R18", "R19"],
     ["R10", "R11", "R12", "R16", "R17", "R18", "R19"]),
    (90, "DFMA R16, R12, -R12, |R6|", ["R16", "R17"], ["R12", "R13", "R12", "R13", "R6", "R7"]),
    (80, "DSETP.GT.AND P0, PT, R2, RZ, PT", ["P0"], ["R2", "R3"]),
    (90, "F2F.F64.F32 R4, R8", ["R4", "R5"], ["R8"]),
    (80, "F2F.F32.F64 R9, R8", ["R9"], ["R8", "R9"]),
    (90, "I2F.F64 R2, R3", ["R2", "R3"], ["R3"]),
    (90, "ISETP.GE.AND P0, PT, R5, UR4, PT", ["P0"], ["R5", "UR4"]),
    (100, "PLOP3.LUT P0, PT, P0, P1, PT, 0xf8, 0x8f", ["P0"], ["P0", "P1"]),
    (90, "LOP3.LUT P0, RZ, R2, 0x7fffffff, RZ, 0xc0, !PT", ["P0"], ["R2"]),
    (90, "IADD3 R4, P0, -R2, R4, RZ", ["R4", "P0"], ["R2", "R4"]),
    (90, "IADD3.X R5, ~R3, R5, RZ, P0, !PT", ["R5"], ["R3", "R5", "P0"]),
    (80, "FSEL R4, R4, R10, P0", ["R4"], ["R4", "R10", "P0"]),
    (90, "SHFL.DOWN PT, R0, R5, 0x10, 0x1f", ["R0"], ["R5"]),
    (90, "VOTE.ANY R9, PT, P2", ["R9"], ["P2"]),
    (80, "VOTEU.ANY UR4, UPT, PT", ["UR4"], []),
    (120, "REDUX.MAX.S32 UR10, R9", ["UR10"], ["R9"]),
    # .E: the printed [R6] is a 64-bit address (MOV R6, UR4; MOV R7, UR5 just before)
    (90, "ATOMG.E.CAS.STRONG.GPU PT, RZ, [R6], R12, R13", [], ["R6", "R7", "R12", "R13"]),
    (75, "RED.E.ADD.F32.FTZ.RN.STRONG.GPU [UR4], R7", [], ["UR4", "UR5", "R7"]),
    (90, "ATOMS.POPC.INC.32 RZ, [R4+UR6]", [], ["R4", "UR6"]),
    (90, "CS2R R2, SR_CLOCKLO", ["R2", "R3"], []),
    (120, "CS2UR UR6, SR_CLOCKLO", ["UR6", "UR7"], []),
    (120, "MOV.64 R6, UR4", ["R6", "R7"], ["UR4", "UR5"]),
    (120, "UIADD3.64 UR4, UPT, UPT, UR4, 0x4, URZ", ["UR4", "UR5"], ["UR4", "UR5"]),
    (120, "IADD.64 R2, R2, -UR6", ["R2", "R3"], ["R2", "R3", "UR6", "UR7"]),
    (100, "LDGSTS.E [R7], desc[UR4][R2.64]", [], ["R7", "UR4", "UR5", "R2", "R3"]),
    (90, "RET.REL.NODEC R10 0x0", [], ["R10", "R11"]),
    (90, "@!P0 LDG.E R4, desc[UR6][R2.64]", ["R4"], ["P0", "UR6", "UR7", "R2", "R3"]),
]


@pytest.mark.parametrize("arch,text,dst,src", CASES, ids=[c[1] for c in CASES])
def test_hand_checked_registers(arch, text, dst, src):
    ins = _find(arch, text)
    assert _names(ins.dst_regs) == dst
    assert _names(ins.src_regs) == src


def test_ldgsts_operand_spaces():
    ins = _find(100, "LDGSTS.E [R7], desc[UR4][R2.64]")
    assert [op.space for op in ins.operands] == ["shared", "global"]


@pytest.mark.parametrize("opcode,width", [("LDG.E", 4), ("LDG.E.64", 8), ("LDG.E.128.CONSTANT", 16),
                                          ("LDG.E.U8", 1), ("STS.U16", 2), ("LDG.E.LTC128B.128", 16),
                                          ("ATOMS.POPC.INC.32", 4), ("LDSM.16.M88.4", 16), ("IADD3", 0)])
def test_memory_width(opcode, width):
    assert effects_of(opcode).mem_width == width


@pytest.mark.parametrize("token,shape", [("16816", (16, 8, 16)), ("1688", (16, 8, 8)), ("884", (8, 8, 4)),
                                         ("16832", (16, 8, 32)), ("8816", (8, 8, 16)),
                                         ("64x128x16", (64, 128, 16)), ("128", None), ("64", None),
                                         ("E", None)])
def test_mma_shape(token, shape):
    assert mma_shape(token) == shape


@pytest.mark.parametrize("opcode,frags", [
    ("HMMA.16816.F32", (4, 4, 2, 4)),        # PTX mma.m16n8k16 f16→f32 fragments: a 4, b 2, c/d 4
    ("HMMA.16816.F16", (2, 4, 2, 2)),
    ("HMMA.1688.F32", (4, 2, 1, 4)),
    ("HMMA.1684.F32.TF32", (4, 2, 1, 4)),
    ("HMMA.16816.F32.BF16", (4, 4, 2, 4)),
    ("IMMA.16832.S8.S8", (4, 4, 2, 4)),
    ("IMMA.8816.S8.S8", (2, 1, 1, 2)),
    ("DMMA.884", (4, 2, 2, 4)),               # m8n8k4 f64: a 1 double, b 1 double, c/d 2 doubles
    ("HMMA.884.F32.F32", (8, 2, 2, 8)),       # Volta quad-pair mma.m8n8k4: c/d 8 floats, a/b 4 halves
])
def test_mma_fragments(opcode, frags):
    base, *mods = opcode.split(".")
    assert mma_fragments(base, tuple(mods)) == frags


def test_reg_span_bounds():
    assert reg_span(4, 4) == (4, 5, 6, 7)
    assert reg_span(-1, 4) == ()
    with pytest.raises(ValueError):
        reg_span(253, 4)


def test_wide_registers_never_reach_the_zero_register():
    for arch in (75, 90, 120):
        for ins in _instructions(arch):
            assert 255 not in ins.dst_regs and 255 not in ins.src_regs
            assert all(0 <= r < 344 for r in ins.dst_regs + ins.src_regs)


@pytest.mark.parametrize("arch", (75, 80, 86, 89, 90, 100, 120))
def test_every_register_read_is_written_somewhere_in_its_kernel(arch):
    """Kernels start with no live registers, so each register an instruction reads must be written
    by some instruction of the same kernel. A width rule that reads too much (a pair where the code
    uses one register) or writes too little (CS2UR's 64-bit result) breaks this on real code."""
    text = (FIXTURES / f"kernels.sm_{arch}.sass").read_text()
    for p in parse_text(text, demangle=False):
        written = {r for ins in p.instructions for r in ins.dst_regs}
        for ins in p.instructions:
            missing = [reg_name(r) for r in ins.src_regs if r not in written]
            assert not missing, f"{p.name}: {ins.text} reads {missing}, never written"
