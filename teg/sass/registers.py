"""One flat register-id space shared by the parser, the trace reader and the engine's scoreboard.

Every architectural register a dependency can flow through gets a small integer id so the jitted
engine can keep per-warp ready times in one array of ``NUM_REG_IDS`` entries:

=============  ===========  ==========================================================
register       ids          notes
=============  ===========  ==========================================================
R0 … R254      0 … 254      RZ (R255) is the zero register: never a dependency
P0 … P6        256 … 262    PT (P7) is constant true: never a dependency
UR0 … UR62     264 … 326    URZ (UR63) is the uniform zero register
UP0 … UP6      328 … 334    UPT (UP7) is constant true
A0 … A7        336 … 343    GT200 (sm_1x) address registers (``g[A1+0xb]``)
=============  ===========  ==========================================================

GT200 condition registers ``C0…C3`` share the predicate ids (they play the same role).
"""

from __future__ import annotations

R_BASE = 0
P_BASE = 256
UR_BASE = 264
UP_BASE = 328
A_BASE = 336
NUM_REG_IDS = 344

RZ = 255
PT = 7
URZ = 63
UPT = 7

_KIND_BASE = {"R": (R_BASE, 255), "P": (P_BASE, 7), "UR": (UR_BASE, 63), "UP": (UP_BASE, 7), "A": (A_BASE, 8), "C": (P_BASE, 4)}
_ZERO = {"R": RZ, "P": PT, "UR": URZ, "UP": UPT}


def reg_id(kind: str, index: int) -> int:
    """Return the flat id of register ``kind``+``index`` (e.g. ``reg_id("R", 4)``), or -1 for the
    zero/true registers RZ, PT, URZ, UPT, which carry no dependency."""
    if _ZERO.get(kind) == index:
        return -1
    base, count = _KIND_BASE[kind]
    if not 0 <= index < count:
        raise ValueError(f"register {kind}{index} out of range")
    return base + index


def reg_name(rid: int) -> str:
    """Inverse of :func:`reg_id` for display (``reg_name(257) == "P1"``)."""
    for kind, base in (("A", A_BASE), ("UP", UP_BASE), ("UR", UR_BASE), ("P", P_BASE), ("R", R_BASE)):
        if rid >= base:
            return f"{kind}{rid - base}"
    raise ValueError(f"bad register id {rid}")


def reg_span(rid: int, count: int) -> tuple[int, ...]:
    """The ``count`` consecutive flat ids starting at ``rid`` (a wide register: ``R4`` as 128 bits →
    R4…R7). ``()`` for ``rid == -1`` (RZ/URZ: a zero source of any width). Raises ``ValueError`` when
    the run would leave its register file or reach the zero register (``R254.64``)."""
    if rid < 0:
        return ()
    if count == 1:
        return (rid,)
    for base, end in ((A_BASE, NUM_REG_IDS), (UP_BASE, UP_BASE + UPT), (UR_BASE, UR_BASE + URZ),
                      (P_BASE, P_BASE + PT), (R_BASE, R_BASE + RZ)):
        if rid >= base:
            if rid + count > end:
                raise ValueError(f"{count}-register run from {reg_name(rid)} leaves the register file")
            return tuple(range(rid, rid + count))
    raise ValueError(f"bad register id {rid}")
