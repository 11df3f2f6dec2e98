"""Operand parsing: one hand-checked case per operand form (teg.sass.operands)."""

from __future__ import annotations

import math

import pytest

from teg.sass.errors import OperandError
from teg.sass.operands import parse_operand, split_operands
from teg.sass.registers import A_BASE, P_BASE, UP_BASE, UR_BASE


def test_plain_and_zero_registers():
    r = parse_operand("R7")
    assert (r.kind, r.regs, r.reg, r.wide) == ("reg", (7,), 7, 1)
    assert parse_operand("RZ").regs == () and parse_operand("RZ").reg == -1
    assert parse_operand("URZ").regs == ()
    assert parse_operand("UR4").regs == (UR_BASE + 4,)


def test_wide_register_and_suffixes():
    r = parse_operand("R2.64")
    assert r.regs == (2, 3) and r.wide == 2
    r = parse_operand("R4.reuse")
    assert r.reuse and r.regs == (4,)
    r = parse_operand("R3.H1_H1")
    assert r.select == "H1_H1" and r.regs == (3,)


def test_modifiers_negate_abs_invert():
    r = parse_operand("-R1")
    assert r.negated and r.regs == (1,)
    r = parse_operand("|R12|.reuse")
    assert r.absolute and r.reuse and r.regs == (12,)
    r = parse_operand("-|R6|")
    assert r.negated and r.absolute
    r = parse_operand("~R3")
    assert r.inverted and r.kind == "reg"


def test_predicates():
    assert parse_operand("P0").regs == (P_BASE,)
    assert parse_operand("PT").regs == () and parse_operand("PT").kind == "pred"
    p = parse_operand("!P2")
    assert p.inverted and p.regs == (P_BASE + 2,)
    assert parse_operand("!UP1").regs == (UP_BASE + 1,)
    assert parse_operand("UPT").regs == ()
    assert parse_operand("PR").regs == tuple(range(P_BASE, P_BASE + 7))


def test_special_registers():
    for text in ("SR_TID.X", "SR_CTAID.Y", "SR_CgaCtaId", "SR_LANEID", "SRZ", "SR1"):
        op = parse_operand(text)
        assert op.kind == "sreg" and op.regs == ()


@pytest.mark.parametrize("text,kind,value", [
    ("0x10", "imm", 16), ("-0x80", "imm", -128), ("42", "imm", 42), ("-126", "imm", -126),
    ("1.5", "fimm", 1.5), ("2.384185791015625e-07", "fimm", 2.384185791015625e-07),
    ("1.84467440737095516160e+19", "fimm", 1.8446744073709552e19), ("+INF", "fimm", math.inf),
    ("-INF", "fimm", -math.inf),
])
def test_immediates(text, kind, value):
    op = parse_operand(text)
    assert op.kind == kind and op.value == value and not op.negated


def test_nan_immediate():
    op = parse_operand("-QNAN")
    assert op.kind == "fimm" and math.isnan(op.value)


def test_constant_bank_reference():
    c = parse_operand("c[0x0][0x210]")
    assert (c.kind, c.bank, c.offset, c.regs, c.space) == ("const", 0, 0x210, (), "const")
    c = parse_operand("c[0x3][R4+0x8]")
    assert c.bank == 3 and c.offset == 8 and c.reg == 4 and c.regs == (4,)
    c = parse_operand("-c[0x0][0x18]")
    assert c.negated and c.offset == 0x18
    c = parse_operand("~c[0x0][0x164]")          # IMAD.X R8, RZ, RZ, ~c[0x0][0x164], P0 (nvcc 13, sm_75)
    assert c.kind == "const" and c.inverted and not c.negated and (c.bank, c.offset) == (0, 0x164)
    for bad in ("!c[0x0][0x164]", "~[R2]"):
        with pytest.raises(OperandError):
            parse_operand(bad)


def test_memory_references():
    m = parse_operand("[R2.64+0x10]", "global")
    assert (m.kind, m.reg, m.wide, m.offset, m.regs, m.space) == ("mem", 2, 2, 16, (2, 3), "global")
    m = parse_operand("desc[UR4][R2.64+-0x8]", "global")
    assert m.desc == UR_BASE + 4 and m.reg == 2 and m.offset == -8
    assert m.regs == (UR_BASE + 4, UR_BASE + 5, 2, 3)
    m = parse_operand("[R0+UR6]", "shared")
    assert m.reg == 0 and m.ureg == UR_BASE + 6 and m.regs == (0, UR_BASE + 6) and m.offset is None
    m = parse_operand("[UR4+0x8]")
    assert m.reg == -1 and m.ureg == UR_BASE + 4 and m.offset == 8
    m = parse_operand("[R9.X4]")
    assert m.scale == 4 and m.regs == (9,)
    m = parse_operand("[RZ]")
    assert m.regs == () and m.reg == -1


def test_gt200_operands():
    g = parse_operand("g[A1+0xb]")
    assert (g.kind, g.space, g.reg, g.offset, g.regs) == ("mem", "shared", A_BASE + 1, 0xB, (A_BASE + 1,))
    m = parse_operand("global14[R2]")
    assert m.space == "global" and m.regs == (2,)
    h = parse_operand("R0H")
    assert h.regs == (0,)
    assert parse_operand("C1").kind == "pred"


def test_labels_and_other():
    lab = parse_operand("`(.L_x_25)")
    assert lab.kind == "label" and lab.label == ".L_x_25"
    lab = parse_operand("`($__internal_0_$__cuda_sm20_sqrt_rn_f32_slowpath)")
    assert lab.label == "$__internal_0_$__cuda_sm20_sqrt_rn_f32_slowpath"
    for text in ("B0", "SB0", "2D", "{5,4,3}"):
        assert parse_operand(text).kind == "other"


@pytest.mark.parametrize("text", ["", "R1|", "R999", "P9", "[R1", "c[0x0]", "desc[R1][R2]", "[R1+P0]",
                                  "-[R1]", "|R1", "`(x", "R1.6-4", "!0x1", "UR64", "R254.64", "[-R1]",
                                  "x[R1]", "|-R1|", "@P0", "~[R1]", "!c[0x0][0x10]"])
def test_malformed_operands_raise(text):
    with pytest.raises(OperandError):
        parse_operand(text)


def test_split_operands():
    assert split_operands("R1, c[0x0] [0x170], R7") == ["R1", "c[0x0][0x170]", "R7"]
    assert split_operands("R10 `(int_div_sqrt)") == ["R10", "`(int_div_sqrt)"]
    assert split_operands("R10 0x0") == ["R10", "0x0"]
    assert split_operands("SB0, 0x1, {5,4}") == ["SB0", "0x1", "{5,4}"]
    assert split_operands("P0, PT, |R0|, +INF , PT") == ["P0", "PT", "|R0|", "+INF", "PT"]
    assert split_operands("R2, global14 [R2]") == ["R2", "global14[R2]"]
