"""Which registers a SASS instruction writes and reads, from small data tables.

SASS prints destinations first. How many leading operands are destinations, and how many 32-bit
registers each operand spans, depends on the opcode; the rules below are data (tables keyed by base
opcode or modifier), turned into one :class:`Effects` record per distinct opcode text (memoized):

* destination signature (``DST_SIG``): tokens ``d`` (one destination of any register kind), ``p``
  (one predicate destination), ``p?`` (a predicate destination if the operand is a predicate),
  ``p*`` (every predicate operand that follows). Default ``("d",)``; stores/branches have none;
  ``ISETP P0, P1, …`` writes two predicates (``PT`` is never a dependency: its id is -1); ``LOP3.LUT
  P0, R3, …`` / ``SHFL.DOWN PT, R0, …`` / ``ATOMG PT, R2, …`` a leading predicate then a register;
  ``IADD3 R0, P0, P1, …`` / ``LEA R2, P0, …`` carry-out predicates after the register.
* widths (32-bit registers per operand): memory modifiers ``.64`` / ``.128`` widen a load's
  destination and a store's data sources (``MEM_WIDTH``); FP64 arithmetic (``FP64_OPS``) and any
  other opcode with a ``.64`` modifier use register pairs; ``IMAD.WIDE`` writes a pair and reads a
  64-bit addend (``WIDE_OPS``); conversions take the width of their printed types (``CONVERSIONS``);
  matrix multiply-accumulate fragments follow from the shape (:func:`mma_fragments`).
* ``.E`` on a global/generic memory instruction makes its address register a 64-bit pair
  (``ADDRESS_64``), printed ``.64`` or not;
* every remaining operand is a source; predicates as last sources (``SEL R0, R1, R2, P0``), address
  registers of memory/constant operands and the guard predicate are read.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

# ---------------------------------------------------------------------------------------------
# destination signatures by base opcode (default: ("d",))

_NO_DST = (
    # stores, reductions and asynchronous copies (data flows to memory only)
    "ST STG STS STL STSM RED REDG REDAS LDGSTS UBLKCP UBLKRED UBLKPF UTMALDG UTMASTG UTMAPF "
    "UTMAREDG UTMACCTL SUST SURED GST LST GRED "
    # control flow and convergence
    "BRA BRX JMP JMX CALL CAL JCAL RET EXIT KILL BSSY BSYNC BREAK WARPSYNC SSY PBK PCNT BRK CONT "
    "SYNC PRET PEXIT JOIN "
    # barriers, fences, scoreboards, no-ops
    "BAR BPT NOP DEPBAR LDGDEPBAR MEMBAR ERRBAR CCTL CCTLL CCTLT FENCE YIELD NANOSLEEP PMTRIG "
    "ARRIVES ACQBULK WARPGROUP"
).split()
_TWO_PRED = "ISETP FSETP DSETP HSETP2 PSETP PLOP3 UISETP UPLOP3 UPSETP UFSETP".split()
_LEAD_PRED = "LOP3 ULOP3 LOP SHFL ATOM ATOMG ATOMS ELECT".split()
_CARRY = "IADD3 UIADD3 LEA ULEA IMAD UIMAD IADD IADD32I".split()

DST_SIG: dict[str, tuple[str, ...]] = {
    **{op: () for op in _NO_DST},
    **{op: ("p", "p") for op in _TWO_PRED},
    **{op: ("p?", "d") for op in _LEAD_PRED},
    **{op: ("d", "p*") for op in _CARRY},
    "VOTE": ("d", "p?"),
    "VOTEU": ("d", "p?"),
    "FCHK": ("p",),
}

# ---------------------------------------------------------------------------------------------
# memory instructions: base opcode → memory space of each operand position (last one repeats),
# and whether the data width applies to the destination (load), the sources (store) or both.

MEMORY_OPS: dict[str, tuple[tuple[str, ...], str]] = {
    "LD": (("generic",), "dst"), "LDG": (("global",), "dst"), "LDS": (("shared",), "dst"),
    "LDL": (("local",), "dst"), "LDC": (("const",), "dst"), "ULDC": (("const",), "dst"),
    "LDCU": (("const",), "dst"), "LDSM": (("shared",), "dst"), "LDTM": (("shared",), "dst"),
    "ST": (("generic",), "src"), "STG": (("global",), "src"), "STS": (("shared",), "src"),
    "STL": (("local",), "src"), "STSM": (("shared",), "src"),
    "ATOM": (("generic",), "both"), "ATOMG": (("global",), "both"), "ATOMS": (("shared",), "both"),
    "RED": (("generic",), "src"), "REDG": (("global",), "src"),
    "LDGSTS": (("shared", "global"), "none"),
    # GT200 dialect
    "GLD": (("global",), "dst"), "GST": (("global",), "src"), "LLD": (("local",), "dst"),
    "LST": (("local",), "src"), "GATOM": (("global",), "both"), "GRED": (("global",), "src"),
}

# asynchronous global → shared copies (sm_80+ cp.async) and their groups: a copy's completion joins
# its warp's open group, which LDGDEPBAR commits onto its dependency barrier; DEPBAR.LE SBb, N then
# waits until at most N committed groups (barrier results) are outstanding (docs/model.md §2)
ASYNC_COPY_OPS = frozenset({"LDGSTS"})
ASYNC_COMMIT_OPS = frozenset({"LDGDEPBAR"})

# data width modifiers of memory instructions: bytes per lane
MEM_WIDTH = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "32": 4, "U32": 4, "S32": 4, "B32": 4, "F32": 4,
             "64": 8, "U64": 8, "S64": 8, "B64": 8, "F64": 8, "128": 16, "U128": 16, "B128": 16}
# .E (extended) global/generic addressing: the address register is a 64-bit pair even where the
# listing omits ".64" (MOV R6, UR4; MOV R7, UR5; ATOMG.E.CAS.STRONG.GPU PT, RZ, [R6], R12, R13)
ADDRESS_64 = "E"
# LDSM/STSM: number of 8x8 matrices (one register each) from the trailing .2 / .4
_MATRIX_COUNT = {"2": 2, "4": 4}

# ---------------------------------------------------------------------------------------------
# register-pair arithmetic

FP64_OPS = frozenset("DADD DMUL DFMA DMNMX DSETP DSET DMAX DMIN".split())
# (base, modifier) → (destination width, source widths by position)
WIDE_OPS: dict[tuple[str, str], tuple[int, tuple[int, ...]]] = {
    ("IMAD", "WIDE"): (2, (1, 1, 2)),
    ("UIMAD", "WIDE"): (2, (1, 1, 2)),
    ("IMUL", "WIDE"): (2, ()),
    ("XMAD", "WIDE"): (2, ()),
}
# base → (destination width, source widths) regardless of modifiers
FIXED_WIDTHS: dict[str, tuple[int, tuple[int, ...]]] = {
    "RET": (1, (2,)),          # RET.REL.NODEC R10: 64-bit return address in R10:R11
}
# CS2R / CS2UR write 64 bits unless .32 (CS2UR UR6, SR_CLOCKLO … IADD.64 R2, R2, -UR6 reads UR6:UR7)
_CS2R_32 = "32"

# conversions: which printed type gives the destination / source width.
# "F" = first float type, "SU" = first integer type, 0/1 = first/second printed type.
CONVERSIONS: dict[str, tuple[str | int, str | int]] = {
    "I2F": ("F", "SU"), "I2FP": ("F", "SU"), "F2I": ("SU", "F"), "F2IP": ("SU", "F"),
    "F2F": (0, 1), "I2I": (0, 1), "FRND": (0, 0),
}
TYPE_BITS = {"F16": 16, "BF16": 16, "F32": 32, "TF32": 32, "F64": 64, "S8": 8, "U8": 8, "S16": 16,
             "U16": 16, "S32": 32, "U32": 32, "S64": 64, "U64": 64, "E4M3": 8, "E5M2": 8, "S4": 4,
             "U4": 4, "E2M1": 4, "E3M2": 6, "E2M3": 6}
_CONV_DEFAULT = {"F": "F32", "SU": "S32"}

# ---------------------------------------------------------------------------------------------
# matrix multiply-accumulate

MMA_OPS = frozenset("HMMA IMMA DMMA BMMA QMMA OMMA HGMMA IGMMA QGMMA BGMMA".split())
# default element types when the opcode does not print them: (accumulator, A/B)
MMA_DEFAULT_TYPES = {"HMMA": ("F32", "F16"), "IMMA": ("S32", "S8"), "DMMA": ("F64", "F64"),
                     "BMMA": ("S32", "B1"), "QMMA": ("F32", "E4M3"), "OMMA": ("F32", "E2M1"),
                     "HGMMA": ("F32", "F16"), "IGMMA": ("S32", "S8"), "QGMMA": ("F32", "E4M3"),
                     "BGMMA": ("S32", "B1")}
MMA_INT_ACC = frozenset({"IMMA", "BMMA", "IGMMA", "BGMMA"})   # printed types are A/B; acc is S32
_MMA_BITS = {**TYPE_BITS, "B1": 1}
_WARPGROUP_MMA = frozenset({"HGMMA", "IGMMA", "QGMMA", "BGMMA"})


def mma_shape(token: str) -> tuple[int, int, int] | None:
    """Parse an MMA shape modifier: ``"16816"`` → (16, 8, 16), ``"1688"`` → (16, 8, 8),
    ``"884"`` → (8, 8, 4), ``"64x128x16"`` → (64, 128, 16). The compact form is M (8 or 16), N = 8,
    then K, as nvdisasm prints it. None when the token is not a shape."""
    if "x" in token:
        parts = token.split("x")
        if len(parts) == 3 and all(p.isdigit() and p for p in parts):
            return int(parts[0]), int(parts[1]), int(parts[2])
        return None
    if not token.isdigit() or len(token) < 3:
        return None
    m = 16 if token.startswith("16") else 8 if token.startswith("8") else 0
    rest = token[len(str(m)):] if m else ""
    if not rest.startswith("8") or len(rest) < 2:
        return None
    return m, 8, int(rest[1:])


def mma_fragments(base: str, mods: tuple[str, ...]) -> tuple[int, int, int, int] | None:
    """Registers per thread of an MMA's (D, A, B, C) fragments.

    Each of the ``t`` threads cooperating on an M×N×K product holds M·N/t accumulator elements and
    M·K/t (A), K·N/t (B) input elements; registers = ceil(elements × bits / 32). ``t`` is 32 for a
    warp-wide MMA, 128 for a warpgroup MMA (``HGMMA``), and 8 for Volta's quad-pair ``HMMA.884``.
    ``.SP`` (2:4 sparse A) halves A. Example: ``HMMA.16816.F32`` → (4, 4, 2, 4);
    ``HMMA.1688.F32`` → (4, 2, 1, 4); ``DMMA.884`` → (4, 2, 2, 4)."""
    shape = next((s for s in map(mma_shape, mods) if s is not None), None)
    if shape is None:
        return None
    m, n, k = shape
    acc_t, in_t = MMA_DEFAULT_TYPES[base]
    types = [t for t in mods if t in _MMA_BITS]
    if base in MMA_INT_ACC:
        in_a = types[0] if types else in_t
        in_b = types[1] if len(types) > 1 else in_a
    else:
        # HMMA.16816.F32.BF16: accumulator type, then input type; a second F32 names the C type
        # (Volta HMMA.884.F32.F32), never an input
        acc_t = types[0] if types else acc_t
        inputs = [t for t in types[1:] if t != "F32" or base == "DMMA"]
        in_a = inputs[0] if inputs else (acc_t if base == "DMMA" else in_t)
        in_b = inputs[1] if len(inputs) > 1 else in_a
    threads = 128 if base in _WARPGROUP_MMA else 8 if (base == "HMMA" and shape == (8, 8, 4)) else 32
    sparse = 2 if "SP" in mods else 1

    def regs(elements: int, bits: int) -> int:
        return max(1, math.ceil(elements * bits / threads / 32))

    d = regs(m * n, _MMA_BITS[acc_t])
    a = regs(m * k // sparse, _MMA_BITS[in_a])
    b = regs(k * n, _MMA_BITS[in_b])
    return d, a, b, d


# ---------------------------------------------------------------------------------------------

BRANCH_OPS = frozenset("BRA JMP CALL CAL JCAL BSSY SSY PBK PCNT PRET".split())


@dataclass(frozen=True, slots=True)
class Effects:
    """Register/memory behaviour of one opcode text (see module docstring)."""

    dst_sig: tuple[str, ...] = ("d",)
    dst_wide: int = 1                     # registers per (register) destination
    src_wide: tuple[int, ...] = ()        # registers per source, by source position
    src_default: int = 1                  # registers per register source beyond src_wide
    spaces: tuple[str | None, ...] = ()   # memory space by operand position (last repeats)
    mem_width: int = 0                    # bytes per lane of a memory instruction
    is_memory: bool = False
    branch: bool = False                  # its last immediate/label operand is a branch target

    plain: bool = False                   # one destination, operands as wide as printed (set below)
    narrow: bool = False                  # every operand as wide as printed, any destinations (set below)
    address64: bool = False               # .E: global/generic address registers are 64-bit pairs


def _conversion_widths(base: str, mods: tuple[str, ...]) -> tuple[int, int]:
    """Destination and source register widths of a conversion from its printed types."""
    types = [m for m in mods if m in TYPE_BITS]
    dst_rule, src_rule = CONVERSIONS[base]

    def pick(rule: str | int) -> str:
        if isinstance(rule, int):
            return types[rule] if rule < len(types) else (types[0] if types else "F32")
        prefixes = ("F", "BF", "TF") if rule == "F" else ("S", "U")
        return next((t for t in types if t.startswith(prefixes)), _CONV_DEFAULT[rule])

    return (2 if TYPE_BITS[pick(dst_rule)] == 64 else 1), (2 if TYPE_BITS[pick(src_rule)] == 64 else 1)


def _memory_effects(base: str, mods: tuple[str, ...], sig: tuple[str, ...]) -> Effects:
    spaces, applies = MEMORY_OPS[base]
    width = next((MEM_WIDTH[m] for m in reversed(mods) if m in MEM_WIDTH), 4)
    if base in ("LDSM", "STSM", "LDTM"):
        width = 4 * next((_MATRIX_COUNT[m] for m in reversed(mods) if m in _MATRIX_COUNT), 1)
    regs = max(1, width // 4)
    dst_wide = regs if applies in ("dst", "both") else 1
    src_default = regs if applies in ("src", "both") else 1
    address64 = ADDRESS_64 in mods and any(sp in ("global", "generic") for sp in spaces)
    return Effects(sig, dst_wide, (), src_default, spaces, width, True, False, address64=address64)


@functools.lru_cache(maxsize=1 << 14)
def effects_of(opcode: str) -> Effects:
    """The :class:`Effects` of a full opcode text (``"LDG.E.128.CONSTANT"``). ``plain`` marks the
    common case — one destination and every operand exactly as wide as printed — for which the
    written registers are the first operand's and the read ones all the others'; ``narrow`` marks
    every operand exactly as wide as printed, whatever the destinations."""
    eff = _effects(opcode)
    narrow = eff.dst_wide == 1 and not eff.src_wide and eff.src_default == 1
    if not narrow:
        return eff
    return replace(eff, narrow=True, plain=eff.dst_sig == ("d",))


def _effects(opcode: str) -> Effects:
    base, *mod_list = opcode.split(".")
    mods = tuple(mod_list)
    sig = DST_SIG.get(base, ("d",))
    if base in MEMORY_OPS:
        return _memory_effects(base, mods, sig)
    branch = base in BRANCH_OPS
    if base in FIXED_WIDTHS:
        dw, sw = FIXED_WIDTHS[base]
        return Effects(sig, dw, sw, 1, branch=branch)
    if base in MMA_OPS:
        frag = mma_fragments(base, mods)
        if frag is not None:
            d, a, b, c = frag
            return Effects(sig, d, (a, b, c))
    for mod in mods:
        if (base, mod) in WIDE_OPS:
            dw, sw = WIDE_OPS[(base, mod)]
            return Effects(sig, dw, sw)
    if base in CONVERSIONS:
        dw, sw = _conversion_widths(base, mods)
        return Effects(sig, dw, (), sw)
    if base in ("CS2R", "CS2UR"):
        return Effects(sig, 1 if _CS2R_32 in mods else 2)
    if base in FP64_OPS or "64" in mods:
        return Effects(sig, 2, (), 2, branch=branch)
    return Effects(sig, branch=branch)
