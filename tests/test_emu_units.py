"""Hand-checked cases for the emulator's building blocks: cubin metadata, operand decoding,
argument parsing, IEEE helpers."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from teg.emu import ops as O
from teg.emu.args import generate, parse_arg
from teg.emu.cubin import Param, read_cubin
from teg.emu.errors import EmulatorError
from teg.emu.lower import decode_operand
from teg.emu.numerics import f2h, f2i, fma_f32_bits, h2f, round_f32_bits
from teg.sass.operands import parse_operand

EMU = Path(__file__).parent / "fixtures" / "emu"


def test_cubin_parameters_and_sizes():
    """saxpy(int n, float a, const float *x, float *y): offsets 0, 4, 8, 16 from the parameter
    base (cuobjdump -elf: EIATTR_PARAM_CBANK 0x160 on sm_80, 0x210 on sm_90); matmul_abt's shared
    arrays are 2 × 16×16 floats (+1 KiB reserved on sm_90, cuobjdump -res-usage SHARED:3072)."""
    for arch, base, shared in (("sm_80", 0x160, 2048), ("sm_90", 0x210, 3072)):
        k = read_cubin(EMU / f"kernels.{arch}.cubin")
        assert k["saxpy"].param_base == base
        assert k["saxpy"].params == [Param(0, 0, 4), Param(1, 4, 4), Param(2, 8, 8), Param(3, 16, 8)]
        assert k["matmul_abt"].shared_static == shared
        assert k["local_spill"].local_frame == 256          # float buf[64]
        assert k["saxpy"].local_frame == 0
        assert k["matmul_abt"].nregs > 0


def test_cubin_rejects_non_elf(tmp_path):
    p = tmp_path / "x.cubin"
    p.write_bytes(b"not an elf")
    with pytest.raises(EmulatorError, match="not an ELF64 cubin"):
        read_cubin(p)


@pytest.mark.parametrize("text,prec,expect", [
    ("R2", "int", (O.K_REG, 2, 0, 0)),
    ("RZ", "int", (O.K_REG, O.RZ_ROW, 0, 0)),
    ("-R3.reuse", "f32", (O.K_REG, 3, 0, O.F_NEG)),
    ("-|R4|", "f32", (O.K_REG, 4, 0, O.F_NEG | O.F_ABS)),
    ("~R5", "int", (O.K_REG, 5, 0, O.F_NOT)),
    ("UR6", "int", (O.K_REG, O.UR_ROW0 + 6, 0, 0)),
    ("!P1", "int", (O.K_PRED, 1, 0, O.F_NOT)),
    ("PT", "int", (O.K_PRED, O.PT_SLOT, 0, 0)),
    ("UPT", "int", (O.K_PRED, O.UPT_SLOT, 0, 0)),
    ("URZ", "int", (O.K_REG, O.URZ_ROW, 0, 0)),
    ("R2.H1_H1", "f16", (O.K_REG, 2, 0, O.F_H1H1)),
    ("[UR4]", "int", (O.K_MEM, O.RZ_ROW, 0, (O.UR_ROW0 + 4 + 1) << O.F_UREG_SHIFT)),
    ("UP2", "int", (O.K_PRED, O.UP_SLOT0 + 2, 0, 0)),
    ("0x1f", "int", (O.K_IMM, 0, 31, 0)),
    ("-0x4", "int", (O.K_IMM, 0, -4, 0)),
    ("1.5", "f32", (O.K_IMM, 0, 0x3FC00000, 0)),
    ("-126", "f32", (O.K_IMM, 0, 0xC2FC0000, 0)),
    ("+INF", "f32", (O.K_IMM, 0, 0x7F800000, 0)),
    ("0.5", "f64", (O.K_IMM, 0, 0x3FE0000000000000, 0)),
    ("c[0x0][0x210]", "int", (O.K_CONST, 0, 0x210, 0)),
    ("c[0x0][RZ]", "int", (O.K_CONST, 0, 0, 0)),
    ("c[0x3][R2+0x8]", "int", (O.K_CIDX, 2, 8, 3 << 24)),
    ("~c[0x0][0x164]", "int", (O.K_CONST, 0, 0x164, O.F_NOT)),
    ("[R2.64+0x10]", "int", (O.K_MEM, 2, 16, O.F_WIDE)),
    ("desc[UR4][R2.64+-0x4]", "int", (O.K_MEM, 2, -4, O.F_WIDE)),
    ("[R9.X4]", "int", (O.K_MEM, 9, 0, 2 << O.F_SCALE_SHIFT)),
    ("[R3+UR4+0x8]", "int", (O.K_MEM, 3, 8, (O.UR_ROW0 + 4 + 1) << O.F_UREG_SHIFT)),
    ("SR_TID.X", "int", (O.K_SREG, 0, O.SREGS["SR_TID.X"], 0)),
    ("B3", "int", (O.K_BAR, 0, 3, 0)),
])
def test_decode_operand(text, prec, expect):
    assert decode_operand(parse_operand(text), prec) == expect


def test_decode_operand_rejects_what_it_cannot_represent():
    with pytest.raises(ValueError):
        decode_operand(parse_operand("c[0x0][UR4]"), "int")
    with pytest.raises(ValueError):
        decode_operand(parse_operand("SR_BOGUS"), "int")


def test_half_conversions():
    assert f2h(1.0) == 0x3C00
    assert f2h(-2.0) == 0xC000
    assert f2h(65504.0) == 0x7BFF
    assert f2h(65520.0) == 0x7C00           # rounds up to infinity
    assert f2h(2.0 ** -24) == 0x0001        # smallest denormal
    assert f2h(1.0 + 2.0 ** -11) == 0x3C00  # tie → even
    assert f2h(1.0 + 3 * 2.0 ** -11) == 0x3C02
    for h in (0x0001, 0x03FF, 0x0400, 0x3555, 0x7BFF, 0xC5A3):
        assert f2h(h2f(h)) == h
        assert h2f(h) == float(np.array(h, np.uint16).view(np.float16))


def test_directed_rounding_to_float32():
    su = np.zeros(1, np.uint32)
    sf = su.view(np.float32)
    x = 1.0 + 2.0 ** -30                     # between 1.0 and the next float32 up
    assert round_f32_bits(x, 0, su, sf) == 0x3F800000
    assert round_f32_bits(x, 1, su, sf) == 0x3F800000
    assert round_f32_bits(x, 2, su, sf) == 0x3F800000
    assert round_f32_bits(x, 3, su, sf) == 0x3F800001
    assert round_f32_bits(-x, 2, su, sf) == 0xBF800001
    assert round_f32_bits(-x, 1, su, sf) == 0xBF800000
    assert round_f32_bits(1e-50, 3, su, sf) == 0x00000001
    assert round_f32_bits(-1e-50, 2, su, sf) == 0x80000001


def test_float32_fma_rounds_once():
    """x*y + z with x = 2 + 2^-22 (0x40000001), y = -(2^-24 - 2^-47) (float32), z = x: exactly
    2 + 2^-23 + 2^-69, just above the midpoint of 2 and 2 + 2^-22. A double fma rounds it to the
    midpoint 2 + 2^-23, which then ties to even (2.0); one rounding gives 0x40000001 (RN, RP) and
    2.0 (RZ, RM). This is the refinement step of the IEEE division 1 / 0x3effffff."""
    su, sf = np.zeros(1, np.uint32), None
    sf = su.view(np.float32)
    sq = np.zeros(1, np.int64)
    sd = sq.view(np.float64)
    x = 2.0 + 2.0 ** -22
    y = -(2.0 ** -24 - 2.0 ** -47)
    assert np.float32(y) == y and np.float32(x) == x
    assert fma_f32_bits(x, y, x, 0, su, sf, sq, sd) == 0x40000001
    assert fma_f32_bits(x, y, x, 1, su, sf, sq, sd) == 0x40000000
    assert fma_f32_bits(x, y, x, 2, su, sf, sq, sd) == 0x40000000
    assert fma_f32_bits(x, y, x, 3, su, sf, sq, sd) == 0x40000001
    assert fma_f32_bits(-x, y, -x, 0, su, sf, sq, sd) == 0xC0000001
    assert fma_f32_bits(1.5, 2.0, 0.25, 0, su, sf, sq, sd) == 0x40500000      # exact: 3.25
    assert fma_f32_bits(2.0, 3.0, -6.0, 0, su, sf, sq, sd) == 0x00000000      # exact zero: +0
    assert fma_f32_bits(float("inf"), 1.0, 1.0, 0, su, sf, sq, sd) == 0x7F800000


def test_float_to_int_saturates():
    assert f2i(3.7, 1, 4, True) == 3
    assert f2i(-3.7, 1, 4, True) == -3
    assert f2i(-3.7, 2, 4, True) == -4
    assert f2i(2.5, 0, 4, True) == 2
    assert f2i(1e20, 1, 4, True) == 2**31 - 1
    assert f2i(-1.0, 1, 4, False) == 0
    assert f2i(5e9, 1, 4, False) == 2**32 - 1
    assert f2i(float("nan"), 1, 4, True) == 0


def test_argument_specs():
    a = parse_arg("n=1024", 4, 0)
    assert a.name == "n" and a.scalar == struct.pack("<i", 1024)
    assert parse_arg("a=2.5", 4, 1).scalar == struct.pack("<f", 2.5)
    assert parse_arg("a=2.5", 8, 1).scalar == struct.pack("<d", 2.5)
    assert parse_arg("k=int64:-3", 8, 0).scalar == struct.pack("<q", -3)
    assert parse_arg("h=uint32:0x3c003c00", 4, 0).scalar == struct.pack("<I", 0x3C003C00)
    assert parse_arg(-1, 4, 0).scalar == b"\xff\xff\xff\xff"
    b = parse_arg("A=arange:int16:2x3", 8, 0)
    assert b.array.dtype == np.int16 and b.array.shape == (2, 3) and b.array[1, 2] == 5
    r = generate("rand:float32:100:7")
    assert r.dtype == np.float32 and 0 <= r.min() and r.max() < 1
    np.testing.assert_array_equal(r, generate("rand:float32:100:7"))
    with pytest.raises(EmulatorError, match="4 bytes given, the kernel parameter has 8"):
        parse_arg("x=float32:1.0", 8, 0)
    with pytest.raises(EmulatorError, match="no such file"):
        parse_arg("x=missing.npy", 8, 0)


def test_lowering_every_fixture_listing_never_raises_a_non_teg_error():
    """Every SASS fixture (sm_75 … sm_120, cuobjdump and nvdisasm) lowers; what the emulator cannot
    run is recorded as unsupported, never an exception (sm_120 FP64 immediates exceed int64 as
    unsigned bit patterns)."""
    from teg.emu.lower import _as_int64, lower
    from teg.sass import parse_file

    fixtures = Path(__file__).parent / "fixtures" / "sass"
    listings = sorted(fixtures.glob("kernels.sm_*.sass"))
    assert len(listings) >= 14
    for path in listings:
        for program in parse_file(path):
            lw = lower(program)
            assert lw.oval.dtype == np.int64
    assert _as_int64(0x8000000000000000) == -(1 << 63)
    assert _as_int64(0xFFFFFFFFFFFFFFFF) == -1
    assert _as_int64(5) == 5


def test_register_pair_forms_are_emulated_or_refused_never_run_as_32_bit():
    """sm_100+ spell some 64-bit operations as a modifier of a 32-bit opcode: MOV.64 and IADD.64 are
    emulated as pairs; a .64 form of an opcode the emulator knows only in 32 bits is reported
    unsupported (it would otherwise run silently as the 32-bit operation)."""
    from teg.emu.lower import lower
    from teg.sass.parser import parse_text

    text = """
        code for sm_120
                Function : k
        .headerflags    @"EF_CUDA_SM120 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM120)"
        /*0000*/                   MOV.64 R6, 0x3fd8000000000000 ;
        /*0010*/                   IADD.64 R2, R12, -R14 ;
        /*0020*/                   SEL.64 R2, R4, R6, P0 ;
        /*0030*/                   MOV R8, R2 ;
        /*0040*/                   EXIT ;
    """
    lw = lower(parse_text(text)[0])
    assert lw.code[0, O.C_OP] == O.OP_MOV and lw.code[0, O.C_M] == 8
    assert lw.code[1, O.C_OP] == O.OP_IADD3 and lw.code[1, O.C_M + 1] == 1
    assert lw.unsupported == {2: "64-bit form SEL.64"}
    assert lw.code[3, O.C_OP] == O.OP_MOV and lw.code[3, O.C_M] == 4


SCALED_FMUL = """
\tcode for sm_75
\t\tFunction : scaled_fmul
\t.headerflags\t@"EF_CUDA_SM75 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM75)"
        /*0000*/                   MOV R0, 0x40400000 ;
        /*0010*/                   MOV R2, 0x3fa00000 ;
        /*0020*/                   MOV R4, c[0x0][0x160] ;
        /*0030*/                   MOV R5, c[0x0][0x164] ;
        /*0040*/                   FMUL.D2 R3, R0, R2 ;
        /*0050*/                   STG.E.SYS [R4], R3 ;
        /*0060*/                   FMUL.D4 R3, R0, R2 ;
        /*0070*/                   STG.E.SYS [R4+0x4], R3 ;
        /*0080*/                   FMUL.D8 R3, R0, -R2 ;
        /*0090*/                   STG.E.SYS [R4+0x8], R3 ;
        /*00a0*/                   FMUL.M2 R3, R0, R2 ;
        /*00b0*/                   STG.E.SYS [R4+0xc], R3 ;
        /*00c0*/                   FMUL.M8 R3, R0, R2 ;
        /*00d0*/                   STG.E.SYS [R4+0x10], R3 ;
        /*00e0*/                   MOV R6, 0x3f8ccccd ;
        /*00f0*/                   MOV R7, 0x40533333 ;
        /*0100*/                   FMUL.D2 R3, R6, R7 ;
        /*0110*/                   STG.E.SYS [R4+0x14], R3 ;
        /*0120*/                   FMUL.D2 R3, R0, -0.20000000298023223877 ;
        /*0130*/                   STG.E.SYS [R4+0x18], R3 ;
        /*0140*/                   EXIT ;
"""


def test_fmul_scale_modifiers():
    """FMUL.Dk / .Mk (ptxas's fold of a product times 2^-k / 2^k, e.g. cfd's factor*0.2*0.5 in
    FMUL.D2 R, R, -0.2): 3 x 1.25 = 3.75 gives 1.875, 0.9375, -0.46875 (negated operand), 7.5, 30;
    1.1f x 3.3f / 2 equals the float32 product halved (exact scaling of a normal result);
    3 x -0.2f / 2 = -0.3f as float32 rounds it."""
    from teg.emu import emulate
    from teg.emu.cubin import KernelImage
    from teg.sass import parse_text

    prog = parse_text(SCALED_FMUL, source="scaled.sass")[0]
    image = KernelImage("scaled_fmul", params=[Param(0, 0, 8)], param_base=0x160, sm=75)
    r = emulate(prog, image, 1, 1, [("out", np.zeros(7, np.float32))])
    f = np.float32
    expect = [1.875, 0.9375, -0.46875, 7.5, 30.0, (f(1.1) * f(3.3)) / f(2), f(3) * f(-0.2) / f(2)]
    np.testing.assert_array_equal(r.outputs["out"], np.array(expect, np.float32))


def test_scale_modifier_refused_outside_fmul():
    """Only FMUL carries a result scale; FADD.D2 (no such encoding from ptxas) is refused by name."""
    from teg.emu import UnsupportedInstruction, emulate
    from teg.emu.cubin import KernelImage
    from teg.sass import parse_text

    text = SCALED_FMUL.replace("FMUL.D4 R3, R0, R2", "FADD.D2 R3, R0, R2")
    prog = parse_text(text, source="scaled.sass")[0]
    image = KernelImage("scaled_fmul", params=[Param(0, 0, 8)], param_base=0x160, sm=75)
    with pytest.raises(UnsupportedInstruction, match=r"FADD.D2 at PC 0x0060.*scale modifier .D2"):
        emulate(prog, image, 1, 1, [("out", np.zeros(7, np.float32))])


INVERTED_CONST = """
\tcode for sm_75
\t\tFunction : inverted_const
\t.headerflags\t@"EF_CUDA_SM75 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM75)"
        /*0000*/                   MOV R4, c[0x0][0x160] ;
        /*0010*/                   MOV R5, c[0x0][0x164] ;
        /*0020*/                   ISETP.NE.AND P0, PT, RZ, RZ, PT ;
        /*0030*/                   IMAD.X R3, RZ, RZ, ~c[0x0][0x168], P0 ;
        /*0040*/                   STG.E.SYS [R4], R3 ;
        /*0050*/                   ISETP.EQ.AND P0, PT, RZ, RZ, PT ;
        /*0060*/                   IMAD.X R3, RZ, RZ, ~c[0x0][0x168], P0 ;
        /*0070*/                   STG.E.SYS [R4+0x4], R3 ;
        /*0080*/                   EXIT ;
"""


def test_inverted_constant_operand():
    """IMAD.X d, RZ, RZ, ~c[..], P (the high word of a 64-bit subtraction, b+tree's findK on sm_75):
    ~0x12345678 = 0xedcba987 with carry-in 0, 0xedcba988 with carry-in 1."""
    from teg.emu import emulate
    from teg.emu.cubin import KernelImage
    from teg.sass import parse_text

    prog = parse_text(INVERTED_CONST, source="inv.sass")[0]
    image = KernelImage("inverted_const", params=[Param(0, 0, 8), Param(1, 8, 4)], param_base=0x160, sm=75)
    r = emulate(prog, image, 1, 1, [("out", np.zeros(2, np.uint32)), np.uint32(0x12345678)])
    assert r.outputs["out"].tolist() == [0xEDCBA987, 0xEDCBA988]


RCP64H_IMMEDIATE = """
\tcode for sm_75
\t\tFunction : rcp64h_imm
\t.headerflags\t@"EF_CUDA_SM75 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM75)"
        /*0000*/                   MOV R4, c[0x0][0x160] ;
        /*0010*/                   MOV R5, c[0x0][0x164] ;
        /*0020*/                   MUFU.RCP64H R3, 225 ;
        /*0030*/                   MOV R6, 0x406c2000 ;
        /*0040*/                   MUFU.RCP64H R7, R6 ;
        /*0050*/                   STG.E.SYS [R4], R3 ;
        /*0060*/                   STG.E.SYS [R4+0x4], R7 ;
        /*0070*/                   MUFU.RSQ64H R3, 4 ;
        /*0080*/                   STG.E.SYS [R4+0x8], R3 ;
        /*0090*/                   EXIT ;
"""


def test_mufu_64h_float_immediate_is_a_double():
    """MUFU.RCP64H R3, 225 (nvcc's x / 225.0 in double) reads the double 225.0, whose high word is
    0x406c2000, exactly as the register form does; RSQ64H of 4.0 gives the high word of 0.5."""
    from teg.emu import emulate
    from teg.emu.cubin import KernelImage
    from teg.sass import parse_text

    prog = parse_text(RCP64H_IMMEDIATE, source="rcp.sass")[0]
    image = KernelImage("rcp64h_imm", params=[Param(0, 0, 8)], param_base=0x160, sm=75)
    r = emulate(prog, image, 1, 1, [("out", np.zeros(3, np.uint32))])
    hi = lambda x: struct.unpack("<Q", struct.pack("<d", x))[0] >> 32
    assert r.outputs["out"].tolist() == [hi(1 / 225), hi(1 / 225), hi(0.5)]


FCHK_TABLE = """
\tcode for sm_75
\t\tFunction : fchk_table
\t.headerflags\t@"EF_CUDA_SM75 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM75)"
        /*0000*/                   MOV R4, c[0x0][0x160] ;
        /*0010*/                   MOV R5, c[0x0][0x164] ;
        /*0020*/                   MOV R2, 0x3fb33333 ;
        /*0030*/                   MOV R0, 0x3f800000 ;
        /*0040*/                   FCHK P0, R0, R2 ;
        /*0050*/                   SEL R3, RZ, 0x1, !P0 ;
        /*0060*/                   STG.E.SYS [R4], R3 ;
        /*0070*/                   MOV R0, RZ ;
        /*0080*/                   FCHK P0, R0, R2 ;
        /*0090*/                   SEL R3, RZ, 0x1, !P0 ;
        /*00a0*/                   STG.E.SYS [R4+0x4], R3 ;
        /*00b0*/                   MOV R0, 0x80000000 ;
        /*00c0*/                   FCHK P0, R0, R2 ;
        /*00d0*/                   SEL R3, RZ, 0x1, !P0 ;
        /*00e0*/                   STG.E.SYS [R4+0x8], R3 ;
        /*00f0*/                   MOV R0, 0xc800000 ;
        /*0100*/                   FCHK P0, R0, R2 ;
        /*0110*/                   SEL R3, RZ, 0x1, !P0 ;
        /*0120*/                   STG.E.SYS [R4+0xc], R3 ;
        /*0130*/                   MOV R0, 0xc000000 ;
        /*0140*/                   FCHK P0, R0, R2 ;
        /*0150*/                   SEL R3, RZ, 0x1, !P0 ;
        /*0160*/                   STG.E.SYS [R4+0x10], R3 ;
        /*0170*/                   EXIT ;
"""


def test_fchk_zero_dividend_takes_the_slow_path():
    """FCHK P, a, b for b = 1.4 and a = 1, +0, -0, 2^-102, 2^-103: fast, slow, slow, fast, slow, as
    cycles per dependent division on an H200 show (49, 252, 252, 49, 263 cycles)."""
    from teg.emu import emulate
    from teg.emu.cubin import KernelImage
    from teg.sass import parse_text

    prog = parse_text(FCHK_TABLE, source="fchk.sass")[0]
    image = KernelImage("fchk_table", params=[Param(0, 0, 8)], param_base=0x160, sm=75)
    r = emulate(prog, image, 1, 1, [("out", np.zeros(5, np.uint32))])
    assert r.outputs["out"].tolist() == [0, 1, 1, 0, 1]
