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
from teg.emu.numerics import f2h, f2i, h2f, round_f32_bits
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
