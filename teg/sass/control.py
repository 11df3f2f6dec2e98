"""Decode SASS scheduling control information (Jia, Maggioni, Staiger,
Scarpazza, *Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking*, arXiv:1804.06826,
§2; the NervanaSystems/maxas wiki "Control-Codes" for sm_5x/6x).

One 21-bit field per instruction, the same layout on Maxwell/Pascal and on Volta and later:

====== ===== =========================================================
bits   width meaning
====== ===== =========================================================
0–3    4     stall cycles before the warp may issue its next instruction
4      1     yield bit (raw; 0 is printed ``Y`` by MAXAS/CuAssembler)
5–7    3     write dependency barrier (scoreboard) index, 7 = none
8–10   3     read dependency barrier index, 7 = none
11–16  6     wait mask: bit i waits on barrier i
17–20  4     reuse flags, operand slot 0 in the lowest bit
====== ===== =========================================================

* sm_70 and later: the field is bits 105–125 of the 128-bit instruction, i.e. bits 41–61 of the
  second (high) 64-bit word that cuobjdump prints on the line after the instruction.
* sm_50 – sm_62: a 64-bit control word precedes every three 64-bit instructions; instruction i of the
  bundle takes bits 21·i … 21·i+20 of it.
"""

from __future__ import annotations

from teg.sass.program import Control

CONTROL_BITS = 21
VOLTA_SHIFT = 41            # position of the field in the high 64-bit word (sm_70+)
MAXWELL_SLOTS = 3           # instructions covered by one sm_5x/6x control word
_MASK = (1 << CONTROL_BITS) - 1


def control_from_bits(bits: int) -> Control:
    """Split one 21-bit control field into its :class:`~teg.sass.program.Control` fields."""
    return Control(stall=bits & 0xF, yield_=(bits >> 4) & 1, wbar=(bits >> 5) & 7, rbar=(bits >> 8) & 7,
                   wait=(bits >> 11) & 0x3F, reuse=(bits >> 17) & 0xF)


def decode_volta(hi: int) -> Control:
    """Control field of an sm_70+ instruction from its high 64-bit word: ``(hi >> 41) & 0x1FFFFF``.
    Example: ``0x000fe20000000f00`` (MOV) → stall 1, yield 1, no barriers, no wait."""
    return control_from_bits((hi >> VOLTA_SHIFT) & _MASK)


def decode_maxwell(word: int) -> tuple[Control, Control, Control]:
    """The three control fields of an sm_5x/6x control word, for the next three instructions.
    Example: ``0x001f9400fe2007e6`` → stalls 6, 1, 5 with yield bits 0, 1, 0."""
    return tuple(control_from_bits((word >> (CONTROL_BITS * i)) & _MASK) for i in range(MAXWELL_SLOTS))


def control_string(c: Control) -> str:
    """CuAssembler-style text of a control field: ``B------:R-:W-:Y:S04`` (wait mask, read barrier,
    write barrier, yield printed ``Y`` when the raw bit is 0, stall)."""
    wait = "".join(str(i) if c.wait >> i & 1 else "-" for i in range(6))
    rbar = "-" if c.rbar == 7 else str(c.rbar)
    wbar = "-" if c.wbar == 7 else str(c.wbar)
    return f"B{wait}:R{rbar}:W{wbar}:{'Y' if c.yield_ == 0 else '-'}:S{c.stall:02d}"
