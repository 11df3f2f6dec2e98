"""Parse one printed SASS operand (``R2.64``, ``c[0x0][0x210]``, ``desc[UR4][R2.64+0x10]``, ``-|R1|``,
``!P0``, ``SR_TID.X``, ``0x10``, ``+INF``, `` `(.L_x_3)`` …) into an :class:`~teg.sass.program.Operand`.

Operand texts repeat a great deal in a listing (``RZ``, ``PT``, ``R0``, ``c[0x0][0x0]``), so
:func:`parse_operand` is memoized on its text: a listing pays the regular-expression cost once per
distinct operand. Malformed text raises :class:`~teg.sass.errors.OperandError`, which the line
parser turns into a :class:`~teg.sass.errors.SassParseError` carrying file and line.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import replace

from teg.sass.errors import OperandError
from teg.sass.program import Operand
from teg.sass.registers import P_BASE, UP_BASE, reg_id, reg_span

# register names: R7, RZ, UR4, URZ, P0, PT, UP1, UPT; GT200: A1 (address), C0 (condition), R0H/R0L halves
_REG_NAME = re.compile(r"(UR|R|UP|P|A|C)(\d{1,3}|Z|T)([HL]?)$")
_BRACKETS = re.compile(r"([A-Za-z_]\w*)?((?:\[[^\[\]]*\])+)((?:\.\w+)*)$")
_ADDR_TERM = re.compile(r"[+-]?[^+-]+")
_ADDR_CHARS = re.compile(r"[\w.+\- ]+$")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+$")
_DEC = re.compile(r"\d+$")
_FLOAT = re.compile(r"(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)$")
_SREG = re.compile(r"SR_\w+(?:\.[A-Z]+)?$|SRZ$|SR\d+$")
_WORD = re.compile(r"\w[\w.]*$")
_SUFFIX = re.compile(r"\w+$")
_BRACED = re.compile(r"\{[\w, ]*\}$")
_LABEL = re.compile(r"`\(([^()`]+)\)$")
_SPECIAL_FLOATS = {"INF": math.inf, "QNAN": math.nan, "NAN": math.nan, "SNAN": math.nan}
_TEX_DIM = re.compile(r"\d+D$")                  # texture dimensions (TEX … 2D)
_FLOAT_NAMES = frozenset(("nan", "inf", "infinity", "qnan", "snan"))
_REG_PREFIXES = frozenset(("R", "UR", "P", "UP", "SR", "SR_"))

# width suffixes on a register name (R2.64) and index scales inside an address ([R9.X4])
_WIDE_SUFFIX = {"64": 2, "128": 4}
_SCALE_SUFFIX = {"X4": 4, "X8": 8, "X16": 16}

# the whole predicate file as one operand (P2R R0, PR, RZ, 0x7f / R2P PR, R0, 0x7f)
_PRED_FILES = {"PR": tuple(range(P_BASE, P_BASE + 7)), "UPR": tuple(range(UP_BASE, UP_BASE + 7))}

# memory spaces named by the operand itself (GT200 dialect: g[...] is shared memory, TEG §3.3.3)
_PREFIX_SPACE = {"g": "shared", "s": "shared", "l": "local", "local": "local", "shared": "shared"}


@functools.lru_cache(maxsize=1 << 12)
def register_of(name: str) -> tuple[str, int, str]:
    """Split a register name into ``(kind, index, half)``: ``"UR4"`` → ``("UR", 4, "")``,
    ``"RZ"`` → ``("R", 255, "")``, ``"R0H"`` → ``("R", 0, "H")``. Raises OperandError."""
    m = _REG_NAME.match(name)
    if m is None:
        raise OperandError(f"not a register: {name!r}")
    kind, idx, half = m.groups()
    if idx == "Z":
        if kind not in ("R", "UR"):
            raise OperandError(f"not a register: {name!r}")
        return kind, (255 if kind == "R" else 63), half
    if idx == "T":
        if kind not in ("P", "UP"):
            raise OperandError(f"not a register: {name!r}")
        return kind, 7, half
    if half and kind != "R":
        raise OperandError(f"not a register: {name!r}")
    return kind, int(idx), half


@functools.lru_cache(maxsize=1 << 12)
def flat_id(name: str) -> int:
    """Flat register id (:mod:`teg.sass.registers`) of a register name; -1 for RZ/URZ/PT/UPT."""
    kind, idx, _ = register_of(name)
    try:
        return reg_id(kind, idx)
    except ValueError as exc:
        raise OperandError(str(exc)) from None


def _number(text: str) -> int | float | None:
    """Value of an unsigned numeric literal (hex, decimal, float, INF/QNAN), or None. A literal that
    no instruction encoding holds — an integer wider than 64 bits, a decimal float beyond the
    double range (``1e999``) — raises OperandError."""
    if not text[:1].isdigit():      # every numeric form starts with a digit (a cheap test for R4, UR6 …)
        return _SPECIAL_FLOATS.get(text)
    if _HEX.match(text) or _DEC.match(text):
        value = int(text, 16 if text[1:2] in ("x", "X") else 10)
        if value >> 64:
            raise OperandError(f"immediate {text!r} is wider than 64 bits")
        return value
    if _FLOAT.match(text):
        value = float(text)
        if math.isinf(value):
            raise OperandError(f"immediate {text!r} is beyond the range of a double")
        return value
    return _SPECIAL_FLOATS.get(text)


def _register_operand(core: str, text: str, neg: bool, absolute: bool, inv: bool) -> Operand | None:
    """A register or predicate operand with its suffixes (``R4.reuse``, ``R2.64``, ``R3.H1_H1``)."""
    name, *suffixes = core.split(".")
    if name in _PRED_FILES and not suffixes:
        return Operand("pred", text, _PRED_FILES[name], inverted=inv)
    m = _REG_NAME.match(name)
    if m is None:
        return None
    kind, _, half = register_of(name)
    rid = flat_id(name)
    reuse = False
    wide = 1
    select = [half] if half else []     # GT200 16-bit halves R0H / R0L
    for suf in suffixes:
        if suf == "reuse":
            reuse = True
        elif suf in _WIDE_SUFFIX and kind in ("R", "UR"):
            wide = _WIDE_SUFFIX[suf]
        elif _SUFFIX.match(suf):
            select.append(suf)
        else:
            raise OperandError(f"bad register suffix in {text!r}")
    try:
        regs = reg_span(rid, wide)
    except ValueError as exc:
        raise OperandError(str(exc)) from None
    if kind in ("P", "UP", "C"):
        if wide != 1 or neg or absolute:
            raise OperandError(f"bad predicate operand {text!r}")
        return Operand("pred", text, regs, inverted=inv, reuse=reuse, reg=rid,
                       select=".".join(select) or None)
    if inv and kind not in ("R", "UR"):
        raise OperandError(f"bad operand {text!r}")
    return Operand("reg", text, regs, negated=neg, absolute=absolute, inverted=inv, reuse=reuse, reg=rid,
                   wide=wide, select=".".join(select) or None)


def _address(expr: str, text: str) -> tuple[list[int], int, int, int, int | None, int]:
    """Parse an address expression ``R2.64+UR4+0x10`` → (regs, reg, ureg, wide, offset, scale)."""
    if not expr or not _ADDR_CHARS.match(expr):
        raise OperandError(f"bad address in {text!r}")
    regs: list[int] = []
    reg = ureg = -1
    wide = scale = 1
    offset: int | None = None
    for term in _ADDR_TERM.findall(expr.replace(" ", "")):
        sign = -1 if term[0] == "-" else 1
        body = term.lstrip("+-")
        if not body:
            raise OperandError(f"bad address in {text!r}")
        value = _number(body)
        if isinstance(value, int):
            offset = (offset or 0) + sign * value
            continue
        name, *suffixes = body.split(".")
        if sign < 0 or _REG_NAME.match(name) is None:
            raise OperandError(f"bad address term {term!r} in {text!r}")
        kind, _, _ = register_of(name)
        rid = flat_id(name)
        w = 1
        for suf in suffixes:
            if suf in _WIDE_SUFFIX:
                w = _WIDE_SUFFIX[suf]
            elif suf in _SCALE_SUFFIX:
                scale = _SCALE_SUFFIX[suf]
            elif not _SUFFIX.match(suf):
                raise OperandError(f"bad address term {term!r} in {text!r}")
        try:
            span = reg_span(rid, w)
        except ValueError as exc:
            raise OperandError(str(exc)) from None
        regs.extend(span)
        if kind == "UR":
            ureg = rid if ureg == -1 else ureg
        elif kind in ("R", "A"):
            if reg == -1:
                reg, wide = rid, w
        else:
            raise OperandError(f"predicate in address {text!r}")
    return regs, reg, ureg, wide, offset, scale


def _bracket_operand(prefix: str, groups: list[str], suffix: str, text: str, space: str | None,
                     neg: bool, absolute: bool, inv: bool = False) -> Operand:
    """Constant-bank refs ``c[bank][offset]`` (also bitwise-inverted, ``~c[0x0][0x164]`` as in
    ``IMAD.X R8, RZ, RZ, ~c[0x0][0x164], P0``) and memory refs ``[addr]``, ``desc[UR4][addr]``,
    GT200 ``g[A1+0xb]`` / ``global14[R2]``."""
    select = suffix.lstrip(".") or None
    if prefix in ("c", "cx"):
        if len(groups) != 2:
            raise OperandError(f"bad constant reference {text!r}")
        bank_text = groups[0].strip()
        bank_val = _number(bank_text)
        bank: int | None = None
        regs: list[int] = []
        bank_ureg = -1
        if isinstance(bank_val, int):
            bank = bank_val
        else:
            b_regs, _, bank_ureg, _, b_off, _ = _address(bank_text, text)
            if b_off is not None:
                raise OperandError(f"bad constant bank in {text!r}")
            regs.extend(b_regs)
        o_regs, reg, ureg, _, offset, _ = _address(groups[1].strip(), text)
        regs.extend(o_regs)
        return Operand("const", text, tuple(regs), negated=neg, absolute=absolute, inverted=inv, space="const",
                       reg=reg, ureg=ureg if ureg != -1 else bank_ureg, offset=offset, bank=bank,
                       select=select)
    if neg or absolute or inv:
        raise OperandError(f"bad memory operand {text!r}")
    desc = -1
    regs = []
    if prefix in ("desc", "gdesc"):
        if len(groups) not in (1, 2):
            raise OperandError(f"bad descriptor reference {text!r}")
        d_name = groups[0].strip()
        if _REG_NAME.match(d_name) is None or register_of(d_name)[0] != "UR":
            raise OperandError(f"bad descriptor register in {text!r}")
        desc = flat_id(d_name)
        try:
            regs.extend(reg_span(desc, 2))
        except ValueError as exc:
            raise OperandError(str(exc)) from None
        groups = groups[1:]
    elif len(groups) != 1:
        raise OperandError(f"bad memory reference {text!r}")
    elif prefix is not None:
        if prefix.startswith("global"):
            space = "global"
        elif prefix in _PREFIX_SPACE:
            space = _PREFIX_SPACE[prefix]
        else:
            raise OperandError(f"unknown memory prefix {prefix!r} in {text!r}")
    if groups:
        a_regs, reg, ureg, wide, offset, scale = _address(groups[0].strip(), text)
    else:
        a_regs, reg, ureg, wide, offset, scale = [], -1, -1, 1, None, 1
    regs.extend(a_regs)
    return Operand("mem", text, tuple(regs), space=space, reg=reg, wide=wide, ureg=ureg, desc=desc,
                   offset=offset, scale=scale, select=select)


def _check_word(core: str, text: str) -> None:
    """A bare word operand (``B0``, ``SB0``, ``2D`` …) that is really a damaged number or register
    raises OperandError: a word led by a digit other than a texture dimension (``0x``, ``12ab``), a
    lower-case float name (SASS prints ``INF`` and ``QNAN``), a register prefix without its index."""
    if core[0].isdigit() and not _TEX_DIM.match(core):
        raise OperandError(f"bad immediate {text!r}")
    if core.lower() in _FLOAT_NAMES:
        raise OperandError(f"bad immediate {text!r} (SASS prints INF and QNAN)")
    if core in _REG_PREFIXES:
        raise OperandError(f"truncated operand {text!r} (a register name without its number)")


@functools.lru_cache(maxsize=1 << 16)
def parse_operand(text: str, space: str | None = None) -> Operand:
    """Parse one operand's text (already stripped). ``space`` is the memory space implied by the
    opcode (``LDG`` → ``"global"``), recorded on ``mem`` operands that do not name their own.
    Raises :class:`OperandError` for text that is not a SASS operand."""
    if not text:
        raise OperandError("empty operand")
    core = text
    neg = absolute = inv = False
    first = core[0]
    if first in "-+!~":
        if first == "-":
            neg = True
        elif first in "!~":
            inv = True
        core = core[1:]
        if not core:
            raise OperandError(f"bad operand {text!r}")
    if core[0] == "|":
        end = core.find("|", 1)
        if end < 0:
            raise OperandError(f"unbalanced |…| in {text!r}")
        absolute = True
        core = core[1:end] + core[end + 1:]
        if not core or core[0] in "-+!~|":
            raise OperandError(f"bad operand {text!r}")
    first = core[0]

    if first == "`":
        m = _LABEL.match(core)
        if m is None or neg or absolute or inv:
            raise OperandError(f"bad label {text!r}")
        return Operand("label", text, label=m.group(1))

    if "[" in core:
        m = _BRACKETS.match(core)
        if m is None or (inv and text[0] == "!"):
            raise OperandError(f"bad bracketed operand {text!r}")
        groups = m.group(2)[1:-1].split("][")
        return _bracket_operand(m.group(1), groups, m.group(3), text, space, neg, absolute, inv)

    value = _number(core)
    if value is not None:
        if absolute or inv:
            raise OperandError(f"bad immediate {text!r}")
        if isinstance(value, int):
            return Operand("imm", text, value=-value if neg else value)
        return Operand("fimm", text, value=-value if neg else value)

    if first.isalpha():
        op = _register_operand(core, text, neg, absolute, inv)
        if op is not None:
            return op
        if _SREG.match(core):
            if neg or absolute or inv:
                raise OperandError(f"bad special register {text!r}")
            return Operand("sreg", text)
    if _BRACED.match(core) or _WORD.match(core):
        if neg or absolute:
            raise OperandError(f"bad operand {text!r}")
        _check_word(core, text)
        return Operand("other", text, inverted=inv)
    raise OperandError(f"unrecognized operand {text!r}")


def split_operands(text: str) -> list[str]:
    """Split an operand list at top-level commas (and the blanks that separate a few operands, as in
    ``RET.REL.NODEC R10 0x0``), keeping ``c[0x0] [0x170]`` and ``{5,4}`` together."""
    parts = text.split(", ")
    n = len(parts)
    if text.count(",") + 1 == n == text.count(" ") + 1 and "" not in parts:
        return parts        # the common case: "R1, R2, 0x4" separated by ", " only
    if "[ " in text or " [" in text or "] " in text:
        text = re.sub(r"\s*\[\s*", "[", text)
        text = re.sub(r"\s*\]", "]", text)
    if "{" in text:
        parts, depth, start = [], 0, 0
        for i, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
    else:
        parts = text.split(",")
    out: list[str] = []
    for part in parts:
        part = part.strip()
        if " " in part and "{" not in part:
            out.extend(part.split())
        else:
            out.append(part)
    return out
