"""Lowering: a parsed :class:`~teg.sass.program.Program` becomes a compact numeric code table the
jitted interpreter runs (one row per static instruction, see :mod:`teg.emu.ops` for the columns).

Each opcode's modifiers are decoded once here (comparison, rounding, widths, types, shift
direction …) and each operand (the parser's structured :class:`~teg.sass.program.Operand`) becomes
``(kind, reg, val, flags)``: a register-file row, raw
immediate bits (float immediates already converted to the instruction's precision), a constant-bank
reference (resolved to an immediate per launch by :func:`resolve_constants`), a predicate slot, a
special register or an address expression. Opcodes outside the emulated set are kept with op
``-1`` and reported with opcode, PC and kernel by the interpreter only if they are reached — so a
kernel whose unsupported instructions sit on a path the launch never takes still runs.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

import numpy as np

from teg.emu import ops as O
from teg.emu.errors import UnsupportedInstruction
from teg.jit import njit
from teg.sass.program import Instruction, Operand, Program
from teg.sass.registers import P_BASE, R_BASE, UP_BASE, UR_BASE


@dataclass
class Lowered:
    """The code table of one kernel plus per-instruction metadata the trace builder needs."""

    program: Program
    code: np.ndarray        # int64 [N, NUM_COLS] (header columns; operands live in the o* arrays)
    okind: np.ndarray       # int64 [N, MAX_OPS]
    oreg: np.ndarray
    oval: np.ndarray
    oflag: np.ndarray
    imm: np.ndarray         # int64 [N] trailing immediate for the trace's imm column
    mem_width: np.ndarray   # int16 [N] bytes per lane of memory instructions
    unsupported: dict[int, str]   # instruction index → reason, for instructions with op -1

    def error_for(self, index: int) -> UnsupportedInstruction:
        ins = self.program.instructions[index]
        why = self.unsupported.get(index, "not emulated")
        return UnsupportedInstruction(f"{self.program.source or '<sass>'}:{ins.line}: kernel {self.program.name}: "
                                      f"instruction {ins.opcode} at PC {ins.address:#06x} is not supported ({why})")


_BARREG = re.compile(r"^B(\d+)$")
_HEX = re.compile(r"^[+-]?0x[0-9a-f]+$", re.I)
_SELECT_FLAGS = {"H0_H0": O.F_H0H0, "H1_H1": O.F_H1H1, "F32": O.F_F32}
_SCALE_SHIFT = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}


def _is_uniform(o: Operand) -> bool:
    return o.text.lstrip("-|~!").startswith("U")


# (first flat id, first uniform flat id, first uniform row/slot, zero row/slot, uniform zero row/slot)
_REGISTER_FILE = (R_BASE, UR_BASE, O.UR_ROW0, O.RZ_ROW, O.URZ_ROW)
_PREDICATE_FILE = (P_BASE, UP_BASE, O.UP_SLOT0, O.PT_SLOT, O.UPT_SLOT)


def _index(flat: int, uniform: bool, layout: tuple[int, int, int, int, int]) -> int:
    """Row (slot) of a flat register (predicate) id of :mod:`teg.sass.registers` in the interpreter's
    file ``layout``: the uniform ids follow the vector ones; -1 is the zero register RZ/URZ (the
    true predicate PT/UPT)."""
    base, ubase, urow0, zero, uzero = layout
    if flat < 0:
        return uzero if uniform else zero
    if flat >= ubase:
        return urow0 + flat - ubase
    return flat - base


def _row(flat: int, uniform: bool) -> int:
    """Register-file row of a flat register id; RZ/URZ reads as zero, the interpreter drops writes."""
    return _index(flat, uniform, _REGISTER_FILE)


def _pslot(flat: int, uniform: bool) -> int:
    """Predicate slot of a flat predicate id; PT/UPT is the all-lanes-true slot."""
    return _index(flat, uniform, _PREDICATE_FILE)


def _float_bits(x: float, prec: str) -> int:
    if prec == "f64":
        return struct.unpack("<q", struct.pack("<d", x))[0]
    if prec == "f64hi":      # the high word of a double (MUFU.RCP64H R3, 225: 225.0 -> 0x406c2000)
        return struct.unpack("<Q", struct.pack("<d", x))[0] >> 32
    if prec == "f16":
        return struct.unpack("<H", struct.pack("<e", x))[0]
    return struct.unpack("<I", struct.pack("<f", x))[0]


def decode_operand(o: Operand, prec: str) -> tuple[int, int, int, int]:
    """One parsed operand → ``(kind, reg, val, flags)`` (see :mod:`teg.emu.ops`), from the parser's
    structured fields. ``prec`` is the precision of the instruction's immediates: an immediate not
    written in hex is a float of that precision (``-126`` in FSETP) unless ``prec`` is ``int``.
    Raises ValueError for an operand the emulator cannot represent."""
    flags = (O.F_NEG if o.negated else 0) | (O.F_ABS if o.absolute else 0) | (O.F_NOT if o.inverted else 0)
    if o.kind == "reg":
        flags |= _SELECT_FLAGS.get(o.select or "", 0)
        return O.K_REG, _row(o.reg, _is_uniform(o)), 0, flags
    if o.kind == "pred":
        if len(o.regs) > 1:                       # PR / UPR: the whole predicate file (P2R, R2P)
            return O.K_NONE, 0, 0, 0
        return O.K_PRED, _pslot(o.reg, _is_uniform(o)), 0, flags
    if o.kind in ("imm", "fimm"):
        if _HEX.match(o.text.strip()):
            return O.K_IMM, 0, int(o.value), flags
        if prec == "int":
            return O.K_IMM, 0, int(o.value), flags
        return O.K_IMM, 0, _float_bits(float(o.value), prec), flags
    if o.kind == "const":
        if o.ureg >= 0:
            raise ValueError(f"uniform-register constant index {o.text!r}")
        if o.reg >= 0:
            return O.K_CIDX, _row(o.reg, False), o.offset or 0, flags | o.bank << 24
        return O.K_CONST, o.bank, o.offset or 0, flags
    if o.kind == "mem":
        mflags = (O.F_WIDE if o.wide == 2 else 0) | _SCALE_SHIFT[o.scale] << O.F_SCALE_SHIFT
        if o.ureg >= 0:
            mflags |= (_row(o.ureg, True) + 1) << O.F_UREG_SHIFT
        base = _row(o.reg, False) if o.reg >= 0 else O.RZ_ROW
        return O.K_MEM, base, o.offset or 0, mflags
    if o.kind == "sreg":
        key = o.text.strip().upper()
        if key not in O.SREGS:
            raise ValueError(f"special register {o.text}")
        return O.K_SREG, 0, O.SREGS[key], flags
    if o.kind == "label":
        return O.K_NONE, 0, 0, 0
    m = _BARREG.match(o.text.strip())
    if m:
        return O.K_BAR, 0, int(m.group(1)), flags
    if o.text.strip().startswith("SB"):          # DEPBAR's scoreboard: no data
        return O.K_NONE, 0, 0, 0
    raise ValueError(f"operand {o.text!r}")


# --- per-opcode decoding ---------------------------------------------------------------------------

def _has(mods, *names) -> bool:
    return any(n in mods for n in names)


def _round(mods) -> int:
    for k, v in O.ROUND.items():
        if k in mods:
            return v
    return 0


def _width(mods, default=4) -> int:
    for k, v in (("128", 16), ("64", 8), ("U16", 2), ("S16", 2), ("16", 2), ("U8", 1), ("S8", 1), ("8", 1), ("32", 4)):
        if k in mods:
            return v
    return default


# FMUL's result scale (ptxas folds a product times 2^e, |e| <= 3, into one FMUL): modifier -> e
_FMUL_SCALE = {"D2": -1, "D4": -2, "D8": -3, "M2": 1, "M4": 2, "M8": 3}


def _mufu_on_high_word(f: int) -> bool:
    """MUFU functions that take and give the high word of a double."""
    return f in (O.MUFU["RCP64H"], O.MUFU["RSQ64H"])


def _ldtype(mods) -> int:
    for k, v in (("S8", O.T_S8), ("U8", O.T_U8), ("S16", O.T_S16), ("U16", O.T_U16)):
        if k in mods:
            return v
    return O.T_U32


_INT_TYPES = {"U8": (1, 0), "S8": (1, 1), "U16": (2, 0), "S16": (2, 1), "U32": (4, 0), "S32": (4, 1),
              "U64": (8, 0), "S64": (8, 1)}


def _decode(ins: Instruction) -> tuple[int, int, list[int], str]:
    """(op id, uniform flag, modifier slots, immediate precision) for one instruction."""
    base, mods = ins.base, set(ins.modifiers)
    uniform, name = 0, base
    if base in ("S2UR", "VOTEU"):
        uniform = 1
    elif base in _UNIFORM_DEST:          # sm_100+: LDCU / CS2UR write a uniform register (= ULDC, CS2R)
        uniform, name = 1, _UNIFORM_DEST[base]
    elif base.startswith("U") and base[1:] in _UNIFORM_OK:     # UIADD3 → IADD3 on the uniform datapath
        uniform, name = 1, base[1:]
    m = [0] * O.NUM_M
    prec = "int"
    if name in _PLAIN:                   # no modifiers to decode (but MOV.64's width)
        op, prec = _PLAIN[name]
        if name == "MOV":
            m[0] = _width(mods, 4)
        elif "64" in mods:              # a register-pair form this table does not know (not the 32-bit op)
            raise UnsupportedInstruction(f"64-bit form {ins.opcode}")
        return op, uniform, m, prec
    if name == "LDC":
        m[0] = _width(mods, 4)
        m[1] = _ldtype(mods)
        return O.OP_LDC, uniform, m, prec
    if name in ("IADD3", "IADD"):
        m[0] = int("X" in mods)
        m[1] = int("64" in mods)        # IADD.64 / UIADD3.64 (sm_100+): register pairs
        return O.OP_IADD3, uniform, m, prec
    if name == "IMAD":
        m[0] = 2 if "WIDE" in mods else (1 if "HI" in mods else 0)
        m[1] = int("U32" in mods)
        m[2] = int("X" in mods)
        return O.OP_IMAD, uniform, m, prec
    if name == "LEA":
        m[0], m[1], m[2] = int("HI" in mods), int("X" in mods), int("SX32" in mods)
        return O.OP_LEA, uniform, m, prec
    if name == "SHF":
        m[0] = int("L" in mods)
        m[1] = int("HI" in mods)
        m[2] = int(_has(mods, "S32", "S64"))
        m[3] = int(_has(mods, "U64", "S64"))
        m[4] = int("W" in mods)
        return O.OP_SHF, uniform, m, prec
    if name in ("IMNMX", "VIMNMX"):
        m[0] = int(_has(mods, "U32", "U64"))
        if _has(mods, "S64", "U64"):
            # IMNMX.S64 PT, PT, Rd, Ra, Rb, !PT, !PT (sm_120): emulated only with both predicate
            # results discarded and the second predicate source !PT (its meaning is unpublished)
            ops = [o.text.strip() for o in ins.operands if o.text.strip()]
            if len(ops) != 7 or ops[:2] != ["PT", "PT"] or ops[6] != "!PT":
                raise UnsupportedInstruction(f"64-bit IMNMX form {', '.join(ops)}")
            m[1] = 1
        return O.OP_IMNMX, uniform, m, prec
    if name == "VIADDMNMX":
        if mods - {"", "U32"}:
            raise UnsupportedInstruction(f"VIADDMNMX modifier {'.'.join(ins.modifiers)}")
        m[0] = int("U32" in mods)
        return O.OP_VIADDMNMX, uniform, m, prec
    if name == "FLO":
        m[0], m[1] = int("SH" in mods), int("U32" not in mods)
        return O.OP_FLO, uniform, m, prec
    if name == "PRMT":
        if mods - {""}:
            raise UnsupportedInstruction(f"PRMT mode {'.'.join(ins.modifiers)}")
        return O.OP_PRMT, uniform, m, prec
    if name in ("ISETP", "FSETP", "DSETP"):
        m[0] = next((O.CMP[x] for x in ins.modifiers if x in O.CMP), -1)
        m[1] = next((O.BOOL[x] for x in ins.modifiers if x in O.BOOL), 0)
        m[2] = int("U32" in mods)
        m[3] = int("EX" in mods)
        m[4] = int("FTZ" in mods)
        if m[0] < 0:
            raise UnsupportedInstruction("no comparison")
        op = {"ISETP": O.OP_ISETP, "FSETP": O.OP_FSETP, "DSETP": O.OP_DSETP}[name]
        return op, uniform, m, {"ISETP": "int", "FSETP": "f32", "DSETP": "f64"}[name]
    if name == "BMSK":
        m[0] = int("W" in mods)
        return O.OP_BMSK, uniform, m, prec
    if name == "SGXT":
        m[0] = int("U32" in mods)
        m[1] = int("W" in mods)
        return O.OP_SGXT, uniform, m, prec
    if name in ("FADD", "FMUL", "FFMA"):
        m[0], m[1], m[2] = _round(mods), int("FTZ" in mods), int("SAT" in mods)
        for k, e in _FMUL_SCALE.items():
            if k in mods:
                if name != "FMUL":
                    raise UnsupportedInstruction(f"scale modifier .{k}")
                m[3] = e
        return {"FADD": O.OP_FADD, "FMUL": O.OP_FMUL, "FFMA": O.OP_FFMA}[name], uniform, m, "f32"
    if name == "FMNMX":
        m[1] = int("FTZ" in mods)
        return O.OP_FMNMX, uniform, m, "f32"
    if name == "MUFU":
        f = next((O.MUFU[x] for x in ins.modifiers if x in O.MUFU), -1)
        if f < 0:
            raise UnsupportedInstruction("MUFU function")
        m[0] = f
        # RCP64H / RSQ64H read the high word of a double: a float immediate names that double
        return O.OP_MUFU, uniform, m, "f64hi" if _mufu_on_high_word(f) else "f32"
    if name == "FRND":
        m[0], m[1] = _round(mods), int("F64" in mods)
        return O.OP_FRND, uniform, m, "f64" if "F64" in mods else "f32"
    if name == "F2F":
        ftypes = [int(x[1:]) // 8 for x in ins.modifiers if x in ("F16", "F32", "F64")]
        if len(ftypes) == 1:
            ftypes = ftypes * 2
        if len(ftypes) != 2:
            raise UnsupportedInstruction("F2F types")
        m[0], m[1], m[2], m[3] = ftypes[0], ftypes[1], _round(mods), int("FTZ" in mods)
        return O.OP_F2F, uniform, m, "f64" if ftypes[1] == 8 else "f32"
    if name in ("I2F", "I2FP"):
        dst = next((int(x[1:]) // 8 for x in ins.modifiers if x in ("F16", "F32", "F64")), 4)
        src = next((_INT_TYPES[x] for x in ins.modifiers if x in _INT_TYPES), (4, 1))
        m[0], m[1], m[2], m[3] = dst, src[0], src[1], _round(mods)
        return O.OP_I2F, uniform, m, prec
    if name == "F2I":
        dst = next((_INT_TYPES[x] for x in ins.modifiers if x in _INT_TYPES), (4, 1))
        src = 8 if "F64" in mods else (2 if "F16" in mods else 4)
        m[0], m[1], m[2], m[3], m[4] = dst[0], dst[1], src, _round(mods), int("FTZ" in mods)
        return O.OP_F2I, uniform, m, "f64" if src == 8 else "f32"
    if name in ("DADD", "DMUL", "DFMA"):
        m[0] = _round(mods)
        return {"DADD": O.OP_DADD, "DMUL": O.OP_DMUL, "DFMA": O.OP_DFMA}[name], uniform, m, "f64"
    if name in ("HADD2", "HMUL2", "HFMA2"):
        m[0] = int("F32" in mods)
        m[1] = int("FTZ" in mods)
        m[2] = int("SAT" in mods)
        if "BF16_V2" in mods or "BF16" in mods:
            raise UnsupportedInstruction("bf16 arithmetic")
        return {"HADD2": O.OP_HADD2, "HMUL2": O.OP_HMUL2, "HFMA2": O.OP_HFMA2}[name], uniform, m, "f16"
    if base in _PLAIN_NONUNIFORM:        # vector-only, no modifiers (P2R/R2P: UP2R/UR2P are not emulated)
        return _PLAIN_NONUNIFORM[base], 0, m, prec
    if base in ("S2R", "S2UR"):
        return O.OP_S2R, uniform, m, prec
    if name == "CS2R":
        m[0] = 8 if "32" not in mods else 4
        return O.OP_CS2R, uniform, m, prec
    if base == "SHFL":
        m[0] = next((i for i, k in enumerate(("IDX", "UP", "DOWN", "BFLY")) if k in mods), -1)
        if m[0] < 0:
            raise UnsupportedInstruction("SHFL mode")
        return O.OP_SHFL, uniform, m, prec
    if base in ("VOTE", "VOTEU"):
        m[0] = next((i for i, k in enumerate(("ANY", "ALL", "EQ")) if k in mods), -1)
        if m[0] < 0:
            raise UnsupportedInstruction("VOTE mode")
        return O.OP_VOTE, uniform, m, prec
    if base in ("REDUX", "CREDUX"):     # CREDUX (sm_100+): the same warp reduction into a uniform register
        m[0] = next((i for i, k in enumerate(("SUM", "MIN", "MAX", "AND", "OR", "XOR")) if k in mods), 0)
        m[1] = int("S32" in mods)
        return O.OP_REDUX, 0, m, prec
    if base in ("LDG", "LDS", "LDL", "LD", "STG", "STS", "STL", "ST"):
        # generic LD/ST are emulated as global accesses: a generic pointer into shared or local
        # memory then fails the global bounds check and is reported, never silently misread
        space = {"G": O.SP_GLOBAL, "S": O.SP_SHARED, "L": O.SP_LOCAL}.get(base[-1], O.SP_GLOBAL)
        m[0], m[1], m[2] = space, _ldtype(mods), _width(mods, 4)
        return (O.OP_LD if base.startswith("LD") else O.OP_ST), 0, m, prec
    if base in ("ATOM", "ATOMG", "ATOMS", "RED", "REDG"):
        space = O.SP_SHARED if base == "ATOMS" else O.SP_GLOBAL
        opname = "POPC.INC" if _has(mods, "POPC") else next((x for x in ins.modifiers if x in O.ATOM_OPS), None)
        if "CAST" in mods:
            opname = "CAST"
        if opname is None:
            raise UnsupportedInstruction("atomic operation")
        typ, width = O.T_U32, 4
        if "S32" in mods:
            typ = O.T_S32
        if "64" in mods or "U64" in mods or "S64" in mods:
            typ, width = (O.T_S64 if "S64" in mods else O.T_U64), 8
        if "F32" in mods:
            typ = O.T_F32
        if "F64" in mods:
            typ, width = O.T_F64, 8
        if _has(mods, "F16x2", "F16X2", "BF16x2", "BF16X2"):
            raise UnsupportedInstruction("packed half atomics")
        m[0], m[1], m[2], m[3] = space, O.ATOM_OPS[opname], typ, width
        m[4] = int(base.startswith("ATOM"))
        return O.OP_ATOM, 0, m, "f64" if typ == O.T_F64 else ("f32" if typ == O.T_F32 else "int")
    if base == "LDGSTS":
        m[2] = _width(mods, 4)
        return O.OP_LDGSTS, 0, m, prec
    if base in ("BRA", "JMP"):
        if _has(mods, "DIV", "CONV"):
            m[0] = 1 if "DIV" in mods else 2
        return O.OP_BRA, 0, m, prec
    if base == "HMMA":
        shape = next((x for x in ins.modifiers if x.isdigit()), "")
        if shape not in ("16816", "1688") or not _has(mods, "F32", "F16") or _has(mods, "BF16", "TF32", "SP"):
            raise UnsupportedInstruction("HMMA shape/type (16816 and 1688 with fp16 inputs are emulated)")
        m[0], m[1] = (16 if shape == "16816" else 8), int("F32" in mods)
        return O.OP_HMMA, 0, m, prec
    if base == "BMOV":
        m[0] = int("CLEAR" in mods)
        return O.OP_BMOV, 0, m, prec
    if base == "WARPSYNC":
        m[0] = int("ALL" in mods)
        return O.OP_WARPSYNC, 0, m, prec
    if base == "BAR":
        if not _has(mods, "SYNC") or _has(mods, "RED", "ARV"):
            raise UnsupportedInstruction("only BAR.SYNC is emulated")
        return O.OP_BAR, 0, m, prec
    if base in _NOPS:
        return O.OP_NOP, 0, m, prec
    raise UnsupportedInstruction("opcode not emulated")


# opcodes (after the uniform prefix is removed) with no modifiers: semantic op and immediate precision
_PLAIN = {"MOV": (O.OP_MOV, "int"), "VIADD": (O.OP_VIADD, "int"), "LOP3": (O.OP_LOP3, "int"),
          "PLOP3": (O.OP_PLOP3, "int"), "POPC": (O.OP_POPC, "int"), "BREV": (O.OP_BREV, "int"),
          "SEL": (O.OP_SEL, "int"), "IABS": (O.OP_IABS, "int"), "FSEL": (O.OP_FSEL, "f32"),
          "FCHK": (O.OP_FCHK, "f32"), "DMNMX": (O.OP_DMNMX, "f64")}
# opcodes matched by their printed name (never uniform) with no modifiers
_PLAIN_NONUNIFORM = {"BSSY": O.OP_BSSY, "BSYNC": O.OP_BSYNC, "BREAK": O.OP_BREAK, "EXIT": O.OP_EXIT,
                     "CALL": O.OP_CALL, "RET": O.OP_RET, "R2UR": O.OP_R2UR, "P2R": O.OP_P2R, "R2P": O.OP_R2P}
_UNIFORM_OK = {"MOV", "IADD3", "IMAD", "LEA", "LOP3", "PLOP3", "SHF", "ISETP", "SEL", "POPC", "FLO",
               "BREV", "PRMT", "LDC", "IMNMX", "SGXT", "BMSK", "P2R", "R2P"}
# sm_100+ opcodes that name the uniform-destination form of an older one
_UNIFORM_DEST = {"LDCU": "LDC", "CS2UR": "CS2R"}
_NOPS = {"NOP", "YIELD", "MEMBAR", "FENCE", "ERRBAR", "CCTL", "CCTLL", "DEPBAR", "LDGDEPBAR", "NANOSLEEP",
         "BPT", "CGAERRBAR", "PMTRIG", "UCGABAR_ARV", "UCGABAR_WAIT", "ACQBULK"}

def _imm_of(operands) -> int:
    for o in reversed(operands):
        if o.kind == "imm" and isinstance(o.value, (int, np.integer)):
            return int(o.value)
    return 0


def lower(program: Program) -> Lowered:
    """Lower ``program`` (see module docstring); instructions it cannot represent are kept as op -1
    with the reason, reported if executed."""
    n = len(program.instructions)
    code = np.zeros((n, O.NUM_COLS), np.int64)
    okind = np.zeros((n, O.MAX_OPS), np.int64)
    oreg = np.zeros((n, O.MAX_OPS), np.int64)
    oval = np.zeros((n, O.MAX_OPS), np.int64)
    oflag = np.zeros((n, O.MAX_OPS), np.int64)
    imm = np.zeros(n, np.int64)
    mem_width = np.zeros(n, np.int16)
    unsupported: dict[int, str] = {}
    by_addr = program.pc_index()
    for ins in program.instructions:
        i = ins.index
        code[i, O.C_TARGET] = -1
        code[i, O.C_GUARD] = O.PT_SLOT
        try:
            op, uniform, mods, prec = _decode(ins)
        except UnsupportedInstruction as exc:
            code[i, O.C_OP] = -1
            unsupported[i] = str(exc)
            continue
        code[i, O.C_OP] = op
        code[i, O.C_UNIFORM] = uniform
        code[i, O.C_M:O.C_M + O.NUM_M] = mods
        if ins.guard:
            g = ins.guard.lstrip("@")
            code[i, O.C_GUARD] = _pslot(ins.guard_reg, g.lstrip("!").startswith("U"))
            code[i, O.C_GINV] = int(g.startswith("!"))
        target = ins.branch_target
        operands = [o for o in ins.operands if o.text.strip()]
        if op == O.OP_CALL and any(o.kind == "reg" for o in operands):
            # CALL.REL.NOINC R6 0x0: a call through a function pointer (its target is in R6)
            code[i, O.C_OP] = -1
            unsupported[i] = "an indirect call through a register (a function pointer)"
            continue
        if len(operands) > O.MAX_OPS:
            code[i, O.C_OP] = -1
            unsupported[i] = f"{len(operands)} operands"
            continue
        try:
            for k, o in enumerate(operands):
                kind_k, reg_k, val_k, flag_k = decode_operand(o, prec)
                # a 64-bit bit pattern (e.g. an FP64 immediate's encoding) is kept as its int64 image
                okind[i, k], oreg[i, k], oval[i, k], oflag[i, k] = kind_k, reg_k, _as_int64(val_k), flag_k
        except ValueError as exc:
            code[i, O.C_OP] = -1
            unsupported[i] = str(exc)
            continue
        if op == O.OP_LDC and mods[0] == 16 and okind[i, 1] == O.K_CONST:
            # a 128-bit constant load (LDCU.128) reads the bank at run time: c[bank][RZ + off]
            okind[i, 1], oreg[i, 1], oflag[i, 1] = O.K_CIDX, O.RZ_ROW, oflag[i, 1] | oreg[i, 1] << 24
        if op in (O.OP_HADD2, O.OP_HMUL2, O.OP_HFMA2):
            _pack_half_immediates(operands, okind[i], oreg[i], oval[i], oflag[i])
        _canonicalize(op, okind[i], oreg[i], oval[i], oflag[i])
        # the parser leaves an address register 32-bit under .E only for [R0.U32+UR4] (the uniform
        # pair is the base there)
        u32_index = any(o.kind == "mem" and o.reg >= 0 and o.ureg >= 0 and o.wide == 1 for o in operands)
        if ("E" in ins.modifiers and op in (O.OP_LD, O.OP_ST, O.OP_ATOM, O.OP_LDGSTS) and mods[0] == O.SP_GLOBAL
                and not u32_index):
            # .E: 64-bit global addressing — the address register is a pair even where the listing
            # omits ".64" (ATOMG.E.CAS … [R4+0x4])
            for k in range(1 if op == O.OP_LDGSTS else 0, O.MAX_OPS):
                if okind[i, k] == O.K_MEM and oreg[i, k] != O.RZ_ROW:
                    oflag[i, k] |= O.F_WIDE
                    break
        code[i, O.C_NOPS] = int((okind[i] != O.K_NONE).sum())
        if op in (O.OP_BRA, O.OP_BSSY, O.OP_CALL) and target is None:
            target = _label_target(operands, by_addr, program)
        if target is not None:
            code[i, O.C_TARGET] = target
        if op in (O.OP_BRA, O.OP_CALL, O.OP_BSSY) and code[i, O.C_TARGET] < 0:
            code[i, O.C_OP] = -1
            unsupported[i] = "branch target not found"
        imm[i] = _as_int64(_imm_of(operands))
        if op in (O.OP_LD, O.OP_ST, O.OP_LDGSTS):
            mem_width[i] = mods[2]
        elif op == O.OP_ATOM:
            mem_width[i] = mods[3]
    return Lowered(program, code, okind, oreg, oval, oflag, imm, mem_width, unsupported)


_NONE = (O.K_NONE, 0, 0, 0)
_RZ = (O.K_REG, O.RZ_ROW, 0, 0)
_FALSE = (O.K_PRED, O.PT_SLOT, 0, O.F_NOT)
_TRUE = (O.K_PRED, O.PT_SLOT, 0, 0)


def _as_int64(value: int) -> int:
    """Two's-complement image of an immediate in int64 (values up to 2**64 − 1 wrap)."""
    value = int(value)
    if not -(1 << 63) <= value < (1 << 64):
        raise ValueError(f"immediate {value:#x} does not fit in 64 bits")
    return value - (1 << 64) if value >= (1 << 63) else value


def _canonicalize(op: int, okind, oreg, oval, oflag) -> None:
    """Rewrite the printed operand order into the fixed slots the interpreter reads, for the
    opcodes whose printed form has optional parts (carry predicates, predicate results)."""
    ops = [(int(okind[k]), int(oreg[k]), int(oval[k]), int(oflag[k])) for k in range(O.MAX_OPS) if okind[k] != O.K_NONE]

    def is_pred(o):
        return o[0] == O.K_PRED

    def split(seq):
        """(leading predicates, non-predicates, trailing predicates) of ``seq``."""
        i = 0
        while i < len(seq) and is_pred(seq[i]):
            i += 1
        j = i
        while j < len(seq) and not is_pred(seq[j]):
            j += 1
        return seq[:i], seq[i:j], seq[j:]

    def pad(xs, n, fill):
        return list(xs[:n]) + [fill] * (n - len(xs[:n]))

    out = None
    if op == O.OP_IADD3 and ops:
        lead, mid, trail = split(ops[1:])
        if len(mid) == 2:
            mid = mid + [_RZ]
        out = [ops[0]] + pad(mid, 3, _RZ) + pad(lead, 2, _NONE) + pad(trail, 2, _FALSE)
    elif op == O.OP_IMAD and ops:
        lead, mid, trail = split(ops[1:])
        out = [ops[0]] + pad(mid, 3, _RZ) + pad(lead, 1, _NONE) + pad(trail, 1, _FALSE)
    elif op == O.OP_LEA and ops:
        lead, mid, trail = split(ops[1:])
        if len(mid) == 3:
            mid = [mid[0], mid[1], _RZ, mid[2]]
        out = [ops[0]] + pad(mid, 4, _RZ) + pad(lead, 1, _NONE) + pad(trail, 1, _FALSE)
    elif op == O.OP_LOP3:
        lead, mid, trail = split(ops)
        if len(mid) == 4:
            mid = [_RZ] + mid
        out = pad(mid, 5, _RZ) + pad(lead, 1, _NONE) + pad(trail, 1, _FALSE)
    elif op == O.OP_VOTE:
        regs = [o for o in ops if not is_pred(o)]
        preds = [o for o in ops if is_pred(o)]
        out = pad(regs, 1, _NONE) + (preds if len(preds) >= 2 else [_NONE] + preds)
    elif op == O.OP_ATOM:
        mem = next((k for k, o in enumerate(ops) if o[0] == O.K_MEM), None)
        if mem is not None:
            before = ops[:mem]
            d = [o for o in before if not is_pred(o)]
            pd = [o for o in before if is_pred(o)]
            out = pad(d, 1, _NONE) + pad(pd, 1, _NONE) + [ops[mem]] + pad(ops[mem + 1:], 2, _NONE)
    elif op in (O.OP_BSSY, O.OP_BSYNC, O.OP_BREAK):
        out = [o for o in ops if o[0] == O.K_BAR] + [o for o in ops if o[0] != O.K_BAR]
    elif op == O.OP_IMNMX and len(ops) == 7:
        out = ops[2:6]                  # IMNMX.S64 PT, PT, d, a, b, p, !PT → d, a, b, p
    elif op in (O.OP_ISETP, O.OP_FSETP, O.OP_DSETP) and len(ops) == 5:
        out = ops + [_TRUE]
    if out is None:
        return
    out = out[:O.MAX_OPS] + [_NONE] * (O.MAX_OPS - len(out))
    for k, (a, b, c, d) in enumerate(out):
        okind[k], oreg[k], oval[k], oflag[k] = a, b, c, d


def _label_target(operands, by_addr: dict[int, int], program: Program) -> int | None:
    for o in operands:
        t = o.text.strip()
        m = re.search(r"\(([^)]+)\)", t)
        if m and m.group(1) in program.labels:
            return program.labels[m.group(1)]
        if re.fullmatch(r"0x[0-9a-f]+", t, re.I) and int(t, 16) in by_addr:
            return by_addr[int(t, 16)]
    return None


def _pack_half_immediates(operands, okind, oreg, oval, oflag) -> None:
    """``HFMA2 R5, -RZ, RZ, 0, 2.38e-07``: a pair of fp16 immediates is one packed 32-bit operand,
    printed high half first."""
    for k in range(len(operands) - 1):
        a, b = operands[k], operands[k + 1]
        if a.kind in ("imm", "fimm") and b.kind in ("imm", "fimm") and not _HEX.match(a.text.strip()):
            oval[k] = _float_bits(float(a.value), "f16") << 16 | _float_bits(float(b.value), "f16")
            for j in range(k + 1, len(operands) - 1):
                okind[j], oreg[j], oval[j], oflag[j] = okind[j + 1], oreg[j + 1], oval[j + 1], oflag[j + 1]
            last = len(operands) - 1
            okind[last] = oreg[last] = oval[last] = oflag[last] = 0
            return


def resolve_constants(lw: Lowered, banks: dict[int, bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Per launch: replace ``c[bank][offset]`` operands by immediates holding the 64 bits at that
    offset (instructions read the low 32 bits, or all 64 for pair operands). Returns new
    ``(okind, oval)`` arrays; the lowered program itself is left unchanged."""
    okind, oval = lw.okind.copy(), lw.oval.copy()
    rows, cols = np.nonzero(okind == O.K_CONST)
    for r, c in zip(rows, cols):
        bank, off = int(lw.oreg[r, c]), int(oval[r, c])
        data = banks.get(bank, b"")
        chunk = data[off:off + 8].ljust(8, b"\0") if off < len(data) else b"\0" * 8
        oval[r, c] = struct.unpack("<q", chunk)[0]
        okind[r, c] = O.K_IMM
    return okind, oval


# ---- specialised forms (per launch) -------------------------------------------------------------

@njit(cache=True)
def _src(kind, reg, val, fx, pc, col_row, col_imm):
    """A source operand as (row, immediate): a register reads its row (RZ/URZ the zero rows), any
    other kind (an immediate, a resolved constant, an absent operand) the zero rows OR ``val``."""
    if kind == O.K_REG:
        fx[pc, col_row] = O.ZERO_ROW if reg == O.RZ_ROW or reg == O.URZ_ROW else reg
        fx[pc, col_imm] = 0
    else:
        fx[pc, col_row] = O.ZERO_ROW
        fx[pc, col_imm] = val


@njit(cache=True)
def _imod_form(flags, fx, pc, col_xor, col_add):
    """An integer modifier (interp._imod: |x|, then -x, then ~x) as ``(x ^ xor) + add``; False when
    the form has none (|x|, or -x and ~x together)."""
    if flags & O.F_ABS or (flags & O.F_NEG and flags & O.F_NOT):
        return False
    fx[pc, col_xor] = 0xFFFFFFFF if flags & (O.F_NEG | O.F_NOT) else 0
    fx[pc, col_add] = 1 if flags & O.F_NEG else 0
    return True


@njit(cache=True)
def _fmod_form(flags, fx, pc, col_xor, col_and):
    """A float modifier (interp._fmod: |x| then -x) as ``(bits & and) ^ xor`` on the sign bit."""
    fx[pc, col_and] = 0x7FFFFFFF if flags & O.F_ABS else 0xFFFFFFFF
    fx[pc, col_xor] = 0x80000000 if flags & O.F_NEG else 0


@njit(cache=True)
def _pred_out(kind, slot):
    """Slot a predicate result is written to: P_SINK for an absent result or PT/UPT."""
    if kind == O.K_PRED and slot != O.PT_SLOT and slot != O.UPT_SLOT:
        return slot
    return O.P_SINK


@njit(cache=True)
def _pred_in(kind, slot, flags, fx, pc, col_slot, col_xor):
    """A predicate source (carry-in): its slot and xor mask; an absent one reads !PT (no lanes)."""
    if kind == O.K_PRED:
        fx[pc, col_slot] = slot
        fx[pc, col_xor] = 0xFFFFFFFF if flags & O.F_NOT else 0
    else:
        fx[pc, col_slot] = O.PT_SLOT
        fx[pc, col_xor] = 0xFFFFFFFF


@njit(cache=True)
def _dst(reg):
    return O.JUNK_ROW if reg == O.RZ_ROW or reg == O.URZ_ROW else reg


# comparison code (ops.CMP) → which of lt, eq, gt make it true (integers: never NaN)
_CMP_BITS = np.array([0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7], np.int64)


@njit(cache=True)
def specialize(code, okind, oreg, oval, oflag):
    """The specialised-form table of a launch (ops.FX_*) from its code table and operands with the
    constants resolved (:func:`resolve_constants`): each instruction whose form the interpreter
    runs on a branch-free lane loop gets its form id and resolved operands; the others keep
    ``F_GENERAL`` and run the general executor. Each form reproduces the general executor's result
    bit for bit (the forms exclude the modifiers they do not model)."""
    n = code.shape[0]
    fx = np.zeros((n, O.FX_COLS), np.int64)
    for pc in range(n):
        op = code[pc, O.C_OP]
        m0, m1, m2, m3, m4 = code[pc, O.C_M], code[pc, O.C_M + 1], code[pc, O.C_M + 2], code[pc, O.C_M + 3], code[pc, O.C_M + 4]
        k0, k1, k2, k3 = okind[pc, 0], okind[pc, 1], okind[pc, 2], okind[pc, 3]
        f1, f2, f3 = oflag[pc, 1], oflag[pc, 2], oflag[pc, 3]
        form = O.F_GENERAL
        if op == O.OP_MOV or (op == O.OP_LDC and k1 != O.K_CIDX and m0 != 16):
            _src(k1, oreg[pc, 1], oval[pc, 1], fx, pc, O.FX_A, O.FX_IA)
            if op == O.OP_MOV and m0 == 8:
                form = O.F_MOV64
            elif op == O.OP_LDC and m0 == 8:
                form = O.F_MOV64
                fx[pc, O.FX_A] = O.ZERO_ROW      # LDC reads only the resolved constant
                fx[pc, O.FX_IA] = oval[pc, 1]
            else:
                form = O.F_MOV
                if op == O.OP_LDC:
                    fx[pc, O.FX_A] = O.ZERO_ROW
                    fx[pc, O.FX_IA] = oval[pc, 1]
                fx[pc, O.FX_IA] &= 0xFFFFFFFF
            fx[pc, O.FX_D] = _dst(oreg[pc, 0])
        elif op == O.OP_IADD3 and m1 == 0:
            form = O.F_IADD3
            for j in range(3):
                _src(okind[pc, 1 + j], oreg[pc, 1 + j], oval[pc, 1 + j], fx, pc, O.FX_A + j, O.FX_IA + j)
                fx[pc, O.FX_IA + j] &= 0xFFFFFFFF
                f = oflag[pc, 1 + j]
                fx[pc, O.FX_XA + j] = 0xFFFFFFFF if f & (O.F_NEG | O.F_NOT) else 0
                fx[pc, O.FX_NA + j] = 1 if f & O.F_NEG else 0
            _pred_in(okind[pc, 6], oreg[pc, 6], oflag[pc, 6], fx, pc, O.FX_Q0, O.FX_QX0)
            _pred_in(okind[pc, 7], oreg[pc, 7], oflag[pc, 7], fx, pc, O.FX_Q1, O.FX_QX1)
            fx[pc, O.FX_P0] = _pred_out(okind[pc, 4], oreg[pc, 4])
            fx[pc, O.FX_P1] = _pred_out(okind[pc, 5], oreg[pc, 5])
            fx[pc, O.FX_D] = _dst(oreg[pc, 0])
        elif op == O.OP_IMAD and (m0 == 0 or m0 == 2):
            ok = _imod_form(f1, fx, pc, O.FX_XA, O.FX_NA) and _imod_form(f2, fx, pc, O.FX_XB, O.FX_NB)
            for j in range(3):
                _src(okind[pc, 1 + j], oreg[pc, 1 + j], oval[pc, 1 + j], fx, pc, O.FX_A + j, O.FX_IA + j)
            fx[pc, O.FX_IA] &= 0xFFFFFFFF
            fx[pc, O.FX_IB] &= 0xFFFFFFFF
            if m0 == 0:
                ok = ok and _imod_form(f3, fx, pc, O.FX_XC, O.FX_NC)
                fx[pc, O.FX_IC] &= 0xFFFFFFFF
                form = O.F_IMAD
            else:                          # .WIDE: the addend is a pair (or a 64-bit immediate), -c negated
                fx[pc, O.FX_XC] = -1 if f3 & O.F_NEG else 0
                fx[pc, O.FX_NC] = 1 if f3 & O.F_NEG else 0
                form = O.F_IMADWU if m1 else O.F_IMADW
            if m2:
                _pred_in(okind[pc, 5], oreg[pc, 5], oflag[pc, 5], fx, pc, O.FX_Q0, O.FX_QX0)
            else:
                _pred_in(O.K_NONE, 0, 0, fx, pc, O.FX_Q0, O.FX_QX0)
            fx[pc, O.FX_P0] = _pred_out(okind[pc, 4], oreg[pc, 4])
            fx[pc, O.FX_D] = _dst(oreg[pc, 0])
            if not ok:
                form = O.F_GENERAL
        elif op == O.OP_LEA and m2 == 0:
            ok = True
            for j in range(3):
                _src(okind[pc, 1 + j], oreg[pc, 1 + j], oval[pc, 1 + j], fx, pc, O.FX_A + j, O.FX_IA + j)
                fx[pc, O.FX_IA + j] &= 0xFFFFFFFF
            if m0 == 0 and f1 == O.F_NEG:              # -a: the complement of a << shift (interp._x_lea)
                fx[pc, O.FX_XA] = 0xFFFFFFFF
                fx[pc, O.FX_NA] = 1
            elif f1 & O.F_NEG:
                ok = m0 == 1 and _imod_form(f1, fx, pc, O.FX_XA, O.FX_NA)
            else:
                ok = _imod_form(f1, fx, pc, O.FX_XA, O.FX_NA)
                if m0 == 0 and (fx[pc, O.FX_XA] != 0 or fx[pc, O.FX_NA] != 0):
                    ok = False                 # ~a without .HI: applied before the shift (general)
            if f2 & O.F_NEG:
                fx[pc, O.FX_XB] = 0xFFFFFFFF
                fx[pc, O.FX_NB] = 1
            else:
                ok = ok and _imod_form(f2, fx, pc, O.FX_XB, O.FX_NB)
            fx[pc, O.FX_K] = oval[pc, 4] & 31
            _pred_in(okind[pc, 6], oreg[pc, 6], oflag[pc, 6], fx, pc, O.FX_Q0, O.FX_QX0)
            fx[pc, O.FX_P0] = _pred_out(okind[pc, 5], oreg[pc, 5])
            fx[pc, O.FX_D] = _dst(oreg[pc, 0])
            form = (O.F_LEAHI if m0 else O.F_LEA) if ok else O.F_GENERAL
        elif op == O.OP_LOP3:
            ok = True
            for j in range(3):
                _src(okind[pc, 1 + j], oreg[pc, 1 + j], oval[pc, 1 + j], fx, pc, O.FX_A + j, O.FX_IA + j)
                fx[pc, O.FX_IA + j] &= 0xFFFFFFFF
                ok = ok and _imod_form(oflag[pc, 1 + j], fx, pc, O.FX_XA + j, O.FX_NA + j)
            fx[pc, O.FX_K] = oval[pc, 4] & 0xFF
            fx[pc, O.FX_P0] = _pred_out(okind[pc, 5], oreg[pc, 5])
            fx[pc, O.FX_D] = _dst(oreg[pc, 0]) if k0 == O.K_REG else O.JUNK_ROW
            form = O.F_LOP3 if ok else O.F_GENERAL
        elif op == O.OP_SHF:
            for j in range(3):
                _src(okind[pc, 1 + j], oreg[pc, 1 + j], oval[pc, 1 + j], fx, pc, O.FX_A + j, O.FX_IA + j)
                fx[pc, O.FX_IA + j] &= 0xFFFFFFFF
            fx[pc, O.FX_K] = m0 | m1 << 1 | m2 << 2 | m3 << 3 | m4 << 4
            fx[pc, O.FX_D] = _dst(oreg[pc, 0])
            form = O.F_SHF
        elif op == O.OP_ISETP and m3 == 0:
            ok = _imod_form(f2, fx, pc, O.FX_XA, O.FX_NA) and _imod_form(f3, fx, pc, O.FX_XB, O.FX_NB)
            _src(k2, oreg[pc, 2], oval[pc, 2], fx, pc, O.FX_A, O.FX_IA)
            _src(k3, oreg[pc, 3], oval[pc, 3], fx, pc, O.FX_B, O.FX_IB)
            fx[pc, O.FX_IA] &= 0xFFFFFFFF
            fx[pc, O.FX_IB] &= 0xFFFFFFFF
            fx[pc, O.FX_K] = _CMP_BITS[m0 & 15] if m0 != 8 and m0 != 0 else 0
            if m0 == 15:
                fx[pc, O.FX_K] = 7
            fx[pc, O.FX_K2] = m1
            fx[pc, O.FX_K3] = m2
            _pred_in(O.K_PRED, oreg[pc, 4], oflag[pc, 4], fx, pc, O.FX_Q0, O.FX_QX0)
            fx[pc, O.FX_P0] = _pred_out(k0, oreg[pc, 0])
            fx[pc, O.FX_P1] = _pred_out(k1, oreg[pc, 1])
            form = O.F_ISETP if ok else O.F_GENERAL
        elif op == O.OP_SEL or op == O.OP_FSEL:
            _src(k1, oreg[pc, 1], oval[pc, 1], fx, pc, O.FX_A, O.FX_IA)
            _src(k2, oreg[pc, 2], oval[pc, 2], fx, pc, O.FX_B, O.FX_IB)
            fx[pc, O.FX_IA] &= 0xFFFFFFFF
            fx[pc, O.FX_IB] &= 0xFFFFFFFF
            if op == O.OP_FSEL:
                ok = True
                fx[pc, O.FX_XA] = 0x80000000 if f1 & O.F_NEG else 0
                fx[pc, O.FX_XB] = 0x80000000 if f2 & O.F_NEG else 0
            else:
                ok = _imod_form(f1, fx, pc, O.FX_XA, O.FX_NA) and _imod_form(f2, fx, pc, O.FX_XB, O.FX_NB)
            _pred_in(O.K_PRED, oreg[pc, 3], f3, fx, pc, O.FX_Q0, O.FX_QX0)
            fx[pc, O.FX_D] = _dst(oreg[pc, 0])
            form = O.F_SEL if ok else O.F_GENERAL
        elif (op == O.OP_FADD or op == O.OP_FMUL or op == O.OP_FFMA) and m0 == 0 and m1 == 0 and m2 == 0 and m3 == 0:
            for j in range(3 if op == O.OP_FFMA else 2):
                _src(okind[pc, 1 + j], oreg[pc, 1 + j], oval[pc, 1 + j], fx, pc, O.FX_A + j, O.FX_IA + j)
                fx[pc, O.FX_IA + j] &= 0xFFFFFFFF
                _fmod_form(oflag[pc, 1 + j], fx, pc, O.FX_XA + j, O.FX_NA + j)
            fx[pc, O.FX_D] = _dst(oreg[pc, 0])
            form = O.F_FFMA if op == O.OP_FFMA else (O.F_FADD if op == O.OP_FADD else O.F_FMUL)
        elif (op == O.OP_LD or op == O.OP_ST) and (m2 == 1 or m2 == 2 or m2 == 4 or m2 == 8 or m2 == 16):
            mk = 1 if op == O.OP_LD else 0
            ok = okind[pc, mk] == O.K_MEM
            mr, mf = oreg[pc, mk], oflag[pc, mk]
            fx[pc, O.FX_A] = O.ZERO_ROW if mr == O.RZ_ROW else mr
            fx[pc, O.FX_XA] = 1 if mf & O.F_WIDE else 0
            fx[pc, O.FX_NA] = (mf >> O.F_SCALE_SHIFT) & 0xF
            fx[pc, O.FX_IA] = oval[pc, mk]
            uro = (mf >> O.F_UREG_SHIFT) & 0x3FF
            if uro == 0:
                fx[pc, O.FX_B] = O.ZERO_ROW
            else:
                ur = uro - 1
                fx[pc, O.FX_B] = ur
                fx[pc, O.FX_XB] = 1 if m0 == O.SP_GLOBAL and ur + 1 < O.URZ_SINK and ur != O.URZ_ROW else 0
            fx[pc, O.FX_K] = m0
            fx[pc, O.FX_K2] = m2
            fx[pc, O.FX_K3] = m1
            if op == O.OP_LD:
                fx[pc, O.FX_D] = O.JUNK_ROW if oreg[pc, 0] == O.RZ_ROW else oreg[pc, 0]
                form = O.F_LD
            else:
                if k1 == O.K_REG:
                    fx[pc, O.FX_C] = O.ZERO_ROW if oreg[pc, 1] == O.RZ_ROW else oreg[pc, 1]
                    if m2 <= 8 and oreg[pc, 1] == O.URZ_ROW:
                        fx[pc, O.FX_C] = O.ZERO_ROW
                else:
                    ok = ok and m2 <= 8
                    fx[pc, O.FX_C] = O.ZERO_ROW
                    fx[pc, O.FX_IC] = oval[pc, 1]
                form = O.F_ST
            if not ok:
                form = O.F_GENERAL
        elif op == O.OP_BRA and m0 == 0 and k0 != O.K_PRED:
            form = O.F_BRA
        elif op == O.OP_NOP:
            form = O.F_NOP
        fx[pc, O.FX_OP] = form
    return fx
