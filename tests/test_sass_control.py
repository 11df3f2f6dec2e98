"""Control-field decoding against hand-decoded words (layout: teg/sass/control.py, after Jia et al.,
arXiv:1804.06826 §2) and the fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from teg.sass import parse_text
from teg.sass.control import control_string, decode_maxwell, decode_volta

FIXTURES = Path(__file__).parent / "fixtures" / "sass"

# hi qword → (stall, yield, wbar, rbar, wait, reuse), decoded by hand from the bit table of §1.1 and
# matching the CuAssembler strings quoted there
VOLTA_WORDS = {
    0x000FE20000000F00: ((1, 1, 7, 7, 0, 0), "B------:R-:W-:-:S01"),   # MOV
    0x000FEA0003800000: ((5, 1, 7, 7, 0, 0), "B------:R-:W-:-:S05"),   # EXIT
    0x000FC0000383FFFF: ((0, 0, 7, 7, 0, 0), "B------:R-:W-:Y:S00"),   # BRA self-loop
    0x000EA40000004000: ((2, 1, 2, 7, 0, 0), "B------:R-:W2:-:S02"),   # S2R sets SB2
    0x004FE40002FA2270: ((2, 1, 7, 7, 0b000100, 0), "B--2---:R-:W-:-:S02"),  # waits on SB2
    0x001FCA00078E0202: ((5, 0, 7, 7, 0b000001, 0), "B0-----:R-:W-:Y:S05"),  # IMAD.WIDE waits on SB0
}


@pytest.mark.parametrize("hi", sorted(VOLTA_WORDS))
def test_volta_high_word(hi):
    fields, text = VOLTA_WORDS[hi]
    c = decode_volta(hi)
    assert (c.stall, c.yield_, c.wbar, c.rbar, c.wait, c.reuse) == fields
    assert control_string(c) == text


def test_volta_read_barrier_and_reuse_bits():
    # bits 49-51 = 3 (read barrier SB3), bits 58-61 = 0b0101 (reuse slots 0 and 2), stall 4, yield 1
    hi = (3 << 49) | (0b0101 << 58) | (4 << 41) | (1 << 45) | (7 << 46)
    c = decode_volta(hi)
    assert (c.rbar, c.reuse, c.stall, c.yield_, c.wbar, c.wait) == (3, 0b0101, 4, 1, 7, 0)
    assert c.raw == (hi >> 41) & 0x1FFFFF


def test_maxwell_worked_example():
    # MAXAS / CuAssembler: 0x001f9400fe2007e6 → slots 0x7e6 (S06, Y), 0x7f1 (S01), 0x7e5 (S05, Y)
    slots = decode_maxwell(0x001F9400FE2007E6)
    assert [c.raw for c in slots] == [0x7E6, 0x7F1, 0x7E5]
    assert [c.stall for c in slots] == [6, 1, 5]
    assert [c.yield_ for c in slots] == [0, 1, 0]
    assert all(c.wbar == 7 and c.rbar == 7 and c.wait == 0 for c in slots)


# a hand-made cuobjdump-style sm_52 listing: a control word before every three instructions,
# instructions at +8/+0x10/+0x18 of each 32-byte bundle, one dual-issue pair in braces
MAXWELL_LISTING = """
\tcode for sm_52
\t\tFunction : _Z4testPf
\t.headerflags    @"EF_CUDA_SM52 EF_CUDA_PTX_SM(EF_CUDA_SM52)"
                                                                                   /* 0x001f9400fe2007e6 */
        /*0008*/                   MOV R1, c[0x0][0x20];                           /* 0x4c98078000870001 */
        /*0010*/                   S2R R0, SR_TID.X;                               /* 0xf0c8000002170000 */
        /*0018*/                   SHL R2, R0.reuse, 0x2;                          /* 0x3848000000270002 */
                                                                                   /* 0x007fbc03fde01fef */
        /*0028*/         {         IADD R2.CC, R2, c[0x0][0x140];                  /* 0x4c10800005070202 */
        /*0030*/                   LDG.E R3, [R2];        }                        /* 0xeed4200000070203 */
        /*0038*/                   EXIT;                                           /* 0xe30000000007000f */
"""


def test_maxwell_listing_assigns_bundle_slots():
    (p,) = parse_text(MAXWELL_LISTING, demangle=False)
    assert p.arch == "sm_52" and len(p) == 6
    assert [i.address for i in p.instructions] == [0x8, 0x10, 0x18, 0x28, 0x30, 0x38]
    assert [i.control.stall for i in p.instructions[:3]] == [6, 1, 5]
    # second word 0x007fbc03fde01fef: slot0 = 0x01fef, slot1 = 0x1ef, slot2 = 0x1fef (by hand)
    w = 0x007FBC03FDE01FEF
    assert [i.control.raw for i in p.instructions[3:]] == [w & 0x1FFFFF, (w >> 21) & 0x1FFFFF,
                                                           (w >> 42) & 0x1FFFFF]
    assert p.instructions[4].opcode == "LDG.E" and p.instructions[4].dst_regs == (3,)


def test_maxwell_arch_from_headerflags_alone():
    text = MAXWELL_LISTING.replace("\tcode for sm_52\n", "")
    (p,) = parse_text(text, demangle=False)
    assert p.arch == "sm_52"
    assert [i.control.stall for i in p.instructions[:3]] == [6, 1, 5]


def test_reuse_text_matches_reuse_bits_in_fixtures():
    """Independent check of the field positions: an instruction prints ``.reuse`` on an operand
    exactly when its decoded reuse flags are non-zero (every cuobjdump fixture)."""
    checked = 0
    for path in sorted(FIXTURES.glob("kernels.sm_*[0-9].sass")):
        for p in parse_text(path.read_text(), demangle=False):
            for ins in p.instructions:
                assert ins.control is not None
                assert any(op.reuse for op in ins.operands) == (ins.control.reuse != 0), (path.name, ins.text)
                checked += 1
    assert checked > 5000


def test_three_reuse_flags_on_ffma():
    text = """\tcode for sm_90\n\t\tFunction : k
        /*0000*/                   FFMA R0, R2.reuse, R3.reuse, R4.reuse ;    /* 0x0000000302007223 */
                                                                              /* 0x1c0fe20000000004 */
"""
    (p,) = parse_text(text, demangle=False)
    c = p.instructions[0].control
    assert c.reuse == 0b0111 and c.stall == 1
