"""Parse the text printed by ``cuobjdump -sass`` and ``nvdisasm`` (with or without ``-hex``) into one
:class:`~teg.sass.program.Program` per kernel.

Accepted layouts:

* cuobjdump, sm_70 and later — ``code for sm_90`` / ``Function : name`` / ``.headerflags``, then per
  instruction ``/*addr*/  OPCODE operands ;  /* 0xLO */`` and a second line ``/* 0xHI */`` whose bits
  41–61 are the control field (:mod:`teg.sass.control`);
* cuobjdump, sm_50 – sm_62 — a ``/* 0xCTRL */`` line before every three instructions;
* nvdisasm — ``.section .text.name`` starts a kernel, ``.L_x_N:`` labels, `` `(.L_x_N)`` targets;
  ``-hex`` adds the encodings as above, ``-c`` alone prints none (``control`` is then None);
* GT200 (sm_1x) — ``FADD32 R4, R4, R2``, ``S2R R3, SR1``, ``GLD.U32 R0, global14[R2]``,
  ``g[A1+0xb]`` shared operands, the encoding optionally printed before the instruction;
* cuobjdump of an executable — ``Fatbin elf code:`` blocks with ``arch = sm_80`` headers
  (``Fatbin ptx code:`` blocks carry no SASS and are skipped).

Every other non-blank line is an error (:class:`SassParseError` with file, line and text), so a file
that is not SASS is reported rather than read as an empty kernel list.
"""

from __future__ import annotations

import functools
import gc
import re
from dataclasses import replace
from operator import attrgetter

from teg.sass.control import decode_maxwell, decode_volta
from teg.sass.demangle import demangle_all
from teg.sass.effects import Effects, effects_of
from teg.sass.errors import OperandError, SassParseError
from teg.sass.operands import flat_id, parse_operand, register_of, split_operands
from teg.sass.program import Control, Instruction, Operand, Program
from teg.sass.registers import reg_span

_OPCODE = re.compile(r"[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*$")
_GUARD = re.compile(r"!?(?:U?P[0-7]|U?PT|C[0-3](?:\.[A-Z]+)?)$")
_HEXDIGITS = re.compile(r"[0-9a-fA-F]+$")
_ARCH = re.compile(r"sm_\d+[a-z]?$")
_HEADERFLAGS_SM = re.compile(r"EF_CUDA_SM(\d+[a-z]?)\b")
_KEY_VALUE = re.compile(r"[A-Za-z_][\w ]*=")
_WORD_LINE = re.compile(r"\w+$")
_LABEL_LINE = re.compile(r"[\w.$@]+:$")
_FATBIN = re.compile(r"Fatbin (\w+) code:$")

_REGS_OF = attrgetter("regs")
# Bounds on what a listing may hold: an instruction prints at most a dozen operands (the register
# lists below are concatenated per operand, so the bound also keeps that work linear in the
# line), and instruction addresses are byte offsets inside one function
MAX_OPERANDS = 32
MAX_ADDRESS = (1 << 32) - 1
_WRITTEN_KINDS = frozenset(("reg", "pred"))     # operand kinds a destination position writes

# Maxwell/Pascal: a control word covers the next three instructions
_MAXWELL = range(50, 70)


@functools.lru_cache(maxsize=64)
def _guard(text: str) -> tuple[str, int]:
    """``"!P0"`` → (``"!P0"``, id of P0); PT → id -1. Raises OperandError."""
    if not _GUARD.match(text):
        raise OperandError(f"bad guard predicate @{text}")
    return text, flat_id(text.lstrip("!").split(".")[0])


# reg_span memoized: wide operands (R4.64, LDG.E.128 destinations, IMAD.WIDE addends) name few
# distinct register runs
_reg_span = functools.lru_cache(maxsize=1 << 12)(reg_span)


def _span(op: Operand, width: int) -> tuple[int, ...]:
    """Registers of register operand ``op`` read or written ``width`` registers wide."""
    try:
        return _reg_span(op.reg, width)
    except ValueError as exc:
        raise OperandError(f"{op.text}: {exc}") from None


def _destinations(sig: tuple[str, ...], wide: int, operands: tuple[Operand, ...]) -> tuple[tuple[int, ...], int]:
    """Registers written by the leading operands that ``sig`` names destinations, and their count."""
    dst: tuple[int, ...] = ()
    n = len(operands)
    i = 0
    for tok in sig:
        if i >= n:
            break
        op = operands[i]
        if tok == "d":
            kind = op.kind
            if kind == "reg" and wide > 1 and op.wide == 1:
                dst += _span(op, wide)
            elif kind in _WRITTEN_KINDS:
                dst += op.regs
            i += 1
        elif tok == "p":
            if op.kind == "pred":
                dst += op.regs
            i += 1
        else:  # "p?" one optional predicate, "p*" any number
            while op.kind == "pred":
                dst += op.regs
                i += 1
                if tok == "p?" or i == n:
                    break
                op = operands[i]
    return dst, i


def registers(eff: Effects, operands: tuple[Operand, ...]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """Written and read registers of an instruction (see :mod:`teg.sass.effects`), and the number of
    leading operands that are destinations."""
    if eff.plain:
        # one destination, every operand as wide as printed (most ALU instructions)
        if not operands:
            return (), (), 0
        first = operands[0]
        # sum of tuples: the cheapest concatenation for the few operands of an instruction
        return (first.regs if first.kind in _WRITTEN_KINDS else ()), sum(map(_REGS_OF, operands[1:]), ()), 1
    dst, i = _destinations(eff.dst_sig, eff.dst_wide, operands) if eff.dst_sig else ((), 0)
    if eff.narrow:
        # every operand as wide as printed: the sources are simply all the other operands' registers
        return dst, sum(map(_REGS_OF, operands[i:] if i else operands), ()), i
    src: list[int] = []
    widths = eff.src_wide
    default = eff.src_default
    for k, op in enumerate(operands[i:] if i else operands):
        regs = op.regs
        if regs:
            if op.kind == "reg" and op.wide == 1:
                w = widths[k] if k < len(widths) else default
                if w > 1:
                    regs = _span(op, w)
            src.extend(regs)
    return dst, tuple(src), i


@functools.lru_cache(maxsize=1 << 14)
def _opcode(opcode: str) -> tuple[str, tuple[str, ...], Effects]:
    """``(base, modifiers, effects)`` of a full opcode; raises OperandError when it is not one."""
    if not _OPCODE.match(opcode):
        raise OperandError(f"bad opcode {opcode!r}")
    base, *mods = opcode.split(".")
    return base, tuple(mods), effects_of(opcode)


_U32_INDEX = re.compile(r"\bR\d+\.U32\b")


def _address_pair(op: Operand) -> Operand:
    """A global/generic address under ``.E``: its base register (``[R6]`` → R6:R7, ``[UR4]`` →
    UR4:UR5) is read as a 64-bit pair. A register written ``R0.U32`` beside a uniform register
    (``[R0.U32+UR4]``, nvcc 13 on sm_75) is a 32-bit unsigned offset: the uniform pair is the base."""
    if op.wide != 1:
        return op
    if op.reg >= 0 and op.ureg >= 0 and _U32_INDEX.search(op.text):
        base = op.ureg
    else:
        base = op.reg if op.reg >= 0 else op.ureg
    if base < 0:
        return op
    try:
        pair = reg_span(base, 2)
    except ValueError as exc:
        raise OperandError(f"{op.text}: {exc}") from None
    regs = list(op.regs)
    at = regs.index(base)
    regs[at:at + 1] = pair
    return replace(op, regs=tuple(regs), wide=2) if base == op.reg else replace(op, regs=tuple(regs))


def _branch_target(ops: tuple[Operand, ...]) -> tuple[int | str | None, tuple[Operand, ...]]:
    """The target of a branch as printed — its last label operand's name, or its last non-negative
    immediate (a byte address, which is then re-kinded ``label``) — and the operands."""
    for k in range(len(ops) - 1, -1, -1):
        op = ops[k]
        if op.kind == "label":
            return op.label, ops
        if op.kind == "imm" and not op.text.startswith("-"):
            return op.value, (*ops[:k], replace(op, kind="label"), *ops[k + 1:])
    return None, ops


def _record_maker(cls, params: tuple) -> object:
    """A fast constructor for the frozen slotted dataclass ``cls``: ``make(*args)`` takes one
    argument per entry of ``params`` — a field name, or ``(name, fields)`` for one tuple holding
    those fields' values — and returns the same object as ``cls(**fields)``.

    The record is built as an instance of a twin class with the same slots and no frozen
    ``__setattr__`` (each field is then one plain slot store, not an ``object.__setattr__`` call),
    and then given its real class by ``__class__`` assignment, which CPython allows between classes
    of identical slot layout. The parser builds one Instruction per line, so this is a third of the
    cost of the dataclass ``__init__``."""
    from dataclasses import fields

    flat = [n for p in params for n in (p[1] if isinstance(p, tuple) else (p,))]
    if sorted(flat) != sorted(f.name for f in fields(cls)) or tuple(cls.__slots__) != tuple(
            f.name for f in fields(cls)):
        raise TypeError(f"{cls.__name__}: constructor parameters do not cover its fields")
    twin = type(f"_{cls.__name__}Builder", (), {"__slots__": cls.__slots__})
    stores = [", ".join(f"obj.{n}" for n in p[1]) + f" = {p[0]}" if isinstance(p, tuple) else f"obj.{p} = {p}"
              for p in params]
    args = ", ".join(p[0] if isinstance(p, tuple) else p for p in params)
    body = "".join(f"    {line}\n" for line in stores)
    env = {"new": object.__new__, "twin": twin, "cls": cls}
    exec(f"def make({args}):\n    obj = new(twin)\n{body}    obj.__class__ = cls\n    return obj\n", env)  # noqa: S102
    return env["make"]


# decode_instruction returns these Instruction fields together, as its "head"
_HEAD_FIELDS = ("opcode", "base", "modifiers", "operands", "guard", "guard_reg", "dst_regs", "src_regs")
_make_instruction = _record_maker(
    Instruction, ("index", "address", ("head", _HEAD_FIELDS), "branch_target", "control", "mem_width", "line", "text"))
# Fields filled in after an Instruction is built but before the parser hands it out: the control
# field when its encoding word comes on a line of its own, and the branch target (labels may come later).
_set_control = Instruction.__dict__["control"].__set__
_set_target = Instruction.__dict__["branch_target"].__set__


@functools.lru_cache(maxsize=1 << 16)   # about 0.5 kB per entry
def decode_instruction(body: str) -> tuple:
    """Decode an instruction as printed without address and encoding (``"@!P0 LDG.E R4, [R2.64]"``).
    Returns ``(head, mem_width, target)`` with ``head = (opcode, base, modifiers, operands, guard,
    guard_reg, dst_regs, src_regs)`` (the guard predicate leads ``src_regs``) and ``target`` the branch
    target as printed — an int address, a label name, or None. Raises OperandError.

    Memoized (a listing parsed again, or many listings of the same kernels, decode nothing new);
    :func:`parse_text` also keeps each listing's decoded texts in a dict of its own, which is cheaper
    to probe than this bounded cache and not limited in size."""
    if body[0] == "@":
        gtext, _, rest = body[1:].partition(" ")
        guard, guard_reg = _guard(gtext)
        rest = rest.lstrip()
        if not rest:
            raise OperandError("guard predicate without an instruction")
    else:
        guard = None
        guard_reg = -1
        rest = body
    opcode, _, operand_text = rest.partition(" ")
    base, mods, eff = _opcode(opcode)
    operand_text = operand_text.strip()
    texts = split_operands(operand_text) if operand_text else ()
    if len(texts) > MAX_OPERANDS:
        raise OperandError(f"{len(texts)} operands (a SASS instruction has at most {MAX_OPERANDS})")
    target: int | str | None = None
    mem_width = eff.mem_width
    if "[" not in operand_text:
        ops = tuple(map(parse_operand, texts))
        if eff.branch:
            target, ops = _branch_target(ops)
    else:
        ops = _bracketed_operands(eff, texts)
        if eff.branch:
            target, ops = _branch_target(ops)
        if not eff.is_memory:
            # GT200 arithmetic with a shared-memory operand (FADD32 R2, g[A1+0xb], R2): 32-bit access,
            # 16-bit with a .U16/.S16 selector
            for op in ops:
                if op.kind == "mem":
                    mem_width = 2 if op.select in ("U16", "S16") else 4
                    break
    if eff.plain and ops:
        # one destination, every operand as wide as printed (most ALU instructions): registers()
        # without the call
        first = ops[0]
        dst = first.regs if first.kind in _WRITTEN_KINDS else ()
        src = sum(map(_REGS_OF, ops[1:]), ())
    else:
        dst, src, _ = registers(eff, ops)
    if guard_reg >= 0:
        src = (guard_reg, *src)
    return (opcode, base, mods, ops, guard, guard_reg, dst, src), mem_width, target


def _bracketed_operands(eff: Effects, texts: list[str]) -> tuple[Operand, ...]:
    """Operands of an instruction with a bracketed (memory or constant) operand: a memory operand
    that names no space of its own takes the opcode's (``eff.spaces`` by position, the last
    repeating), and under ``.E`` a global/generic address register is a 64-bit pair."""
    spaces = eff.spaces
    if spaces:
        last = len(spaces) - 1
        ops = tuple([parse_operand(t, spaces[min(k, last)]) if "[" in t else parse_operand(t)
                     for k, t in enumerate(texts)])
    else:
        ops = tuple(map(parse_operand, texts))
    if eff.address64:
        ops = tuple([_address_pair(op) if op.kind == "mem" and op.space in ("global", "generic") else op
                     for op in ops])
    return ops


class _KernelBuilder:
    """Collects one kernel's instructions and labels; :meth:`finish` resolves branch targets."""

    __slots__ = ("name", "arch", "sm", "volta", "instructions", "labels", "branches", "source")

    def __init__(self, name: str, arch: str, source: str):
        self.name = name
        self.source = source
        self.instructions: list[Instruction] = []
        self.labels: dict[str, int] = {}
        self.branches: list[tuple[int, int | str]] = []   # (instruction index, printed target)
        self.set_arch(arch)

    def set_arch(self, arch: str) -> None:
        self.arch = arch
        self.sm = Program("", arch).sm
        # sm_70+ layout (one high word after each instruction); also assumed when no arch is printed
        self.volta = self.sm >= 70 or self.sm == 0

    def finish(self) -> Program:
        """Check that instruction addresses increase and fit :data:`MAX_ADDRESS` (a duplicated or
        out-of-order address would put control codes and branch targets on the wrong instruction),
        then resolve branch targets (hex addresses and labels) to instruction indices."""
        instructions = self.instructions
        prev = -1
        for ins in instructions:
            if ins.address <= prev or ins.address > MAX_ADDRESS:
                problem = (f"instruction address 0x{ins.address:x} is beyond 0x{MAX_ADDRESS:x}" if ins.address > MAX_ADDRESS
                           else f"instruction address 0x{ins.address:04x} does not follow the previous one (0x{prev:04x})")
                raise SassParseError(problem, self.source, ins.line, ins.text)
            prev = ins.address
        by_addr = {ins.address: ins.index for ins in instructions}
        for k, target in self.branches:
            resolved = self.labels.get(target) if isinstance(target, str) else by_addr.get(target)
            _set_target(instructions[k], resolved)
        return Program(self.name, self.arch, instructions, None, dict(self.labels), self.source)


@functools.lru_cache(maxsize=1 << 12)
def _hi_control(hex_text: str) -> Control:
    """Control field of an sm_70+ high word given as printed (``"0x000fe20000000f00"``)."""
    return decode_volta(int(hex_text, 16))


@functools.lru_cache(maxsize=1 << 14)
def _encoding_line(s: str) -> int:
    """Value of a stripped ``/* 0x… */`` line; raises OperandError when it is not exactly that."""
    m = _HEX_LINE.match(s)
    if m is None:
        raise OperandError("bad encoding word")
    return int(m.group(1), 16)


def _hex_word(text: str, source: str, lineno: int, line: str) -> int:
    text = text.strip()
    if not text.startswith(("0x", "0X")) or not _HEXDIGITS.match(text[2:]):
        raise SassParseError("bad encoding word", source, lineno, line)
    return int(text, 16)


# One pattern scans the whole text, one match per line — or per instruction line together with the
# encoding-word line that follows it (cuobjdump sm_70+ prints each instruction on two lines):
#   1 address, 2 body, 3 first encoding word, 4 encoding word on the next line  — /*addr*/ … ;
#   5 a bare encoding word line                                                   — /* 0x… */
#   6 any other line (headers, labels, directives, other layouts: the general path)
# Blank runs are written "_" below and stand for "[ ]*+[ \t]*+": the same strings as [ \t]* (every
# run is followed by a non-blank, so nothing is ever given back), but the long runs of padding
# spaces are skipped by the regex engine's single-character loop, not tested one by one against a
# character set.
_UNIT = re.compile(r"""
    ^_/\*(?:
        ([0-9a-fA-F]+)\*/(?=[ \t])_                              # /*addr*/
        ([^\s;{}](?:[^\n;/{}]*[^\s;/{}])?)_;_                    # [@guard] OPCODE operands ;
        (?:/\*_(0x[0-9a-fA-F]+)_\*/_                             # /* 0xLO */
           (?:\n_/\*_(0x[0-9a-fA-F]+)_\*/_)?                     # next line: /* 0xHI */
        )?
      | _(0x[0-9a-fA-F]+)_\*/_                                   # a bare /* 0x… */ line
    )$
    | ^([^\n]*)$                                                # anything else
    """.replace("_", r"[ ]*+[ \t]*+"), re.M | re.X)
_HEX_LINE = re.compile(r"/\*\s*(0[xX][0-9a-fA-F]+)\s*\*/$")


class _State:
    """Parser state between lines."""

    __slots__ = ("source", "text", "lines", "programs", "cur", "arch", "pending_hi", "bundle", "fatbin_header",
                 "in_ptx")

    def __init__(self, source: str, text: str = ""):
        self.source = source
        self.text = text
        self.lines: list[str] | None = None          # text split into lines, made for an error message
        self.programs: list[Program] = []
        self.cur: _KernelBuilder | None = None
        self.arch = ""
        self.pending_hi: Instruction | None = None   # last instruction still waiting for its hi word
        self.bundle: list[Control] = []              # sm_5x/6x: controls of the next instructions
        self.fatbin_header = False                   # inside a "Fatbin … code:" header block
        self.in_ptx = False                          # inside a "Fatbin ptx code:" block (skipped)

    def line_text(self, lineno: int) -> str:
        """Line ``lineno`` (1-based) of the text, as printed in an error message."""
        if self.lines is None:
            self.lines = self.text.split("\n")
        return self.lines[lineno - 1]

    def error(self, problem: str, lineno: int, line: str | None = None) -> SassParseError:
        """A SassParseError for line ``lineno`` (its text looked up when not given)."""
        return SassParseError(problem, self.source, lineno, self.line_text(lineno) if line is None else line)

    def close(self) -> None:
        if self.cur is not None:
            self.programs.append(self.cur.finish())
        self.cur = None
        self.pending_hi = None
        self.bundle.clear()

    def open(self, name: str) -> None:
        self.close()
        self.cur = _KernelBuilder(name, self.arch, self.source)

    def encoding_word(self, s: str, lineno: int, line: str) -> None:
        """A line holding only an encoding word (``s`` stripped): the sm_70+ high word of the previous
        instruction, or an sm_5x/6x control word for the next three."""
        if self.cur is None:
            raise self.error("encoding word outside a kernel", lineno, line)
        try:
            word = _encoding_line(s)
        except OperandError as exc:
            raise self.error(str(exc), lineno, line) from None
        self.control_word(word, lineno, line)

    def control_word(self, word: int, lineno: int, line: str | None = None) -> None:
        """The value of an encoding-word line (see :meth:`encoding_word`)."""
        cur = self.cur
        if cur is None:
            raise self.error("encoding word outside a kernel", lineno, line)
        if cur.volta:
            if self.pending_hi is None:
                raise self.error("encoding word without an instruction before it", lineno, line)
            _set_control(self.pending_hi, decode_volta(word))
            self.pending_hi = None
        elif cur.sm in _MAXWELL:
            self.bundle[:] = decode_maxwell(word)
        # sm_1x … sm_3x: scheduling words are not decoded


def _instruction_line(st: _State, s: str, lineno: int, line: str) -> tuple | None:
    """General instruction line (the fast pattern did not match): encoding before the text (GT200),
    ``{ … }`` dual-issue braces (Maxwell), missing ``;``, data directives. Returns
    ``(address, body, has_encoding)`` or None for a data directive."""
    src = st.source
    end = s.find("*/", 2)
    if end < 0:
        raise SassParseError("unterminated /* comment", src, lineno, line)
    head = s[2:end].strip()
    if not _HEXDIGITS.match(head):
        raise SassParseError("bad instruction address", src, lineno, line)
    rest = s[end + 2:].lstrip()
    if rest.startswith("/*"):
        # GT200-era layout: the encoding comes before the instruction text
        e2 = rest.find("*/", 2)
        if e2 < 0:
            raise SassParseError("unterminated /* comment", src, lineno, line)
        _hex_word(rest[2:e2], src, lineno, line)
        rest = rest[e2 + 2:]
    has_lo = False
    tail = rest.rfind("/*")
    if tail >= 0:
        close_at = rest.find("*/", tail)
        if close_at < 0 or rest[close_at + 2:].strip():
            raise SassParseError("bad encoding comment", src, lineno, line)
        _hex_word(rest[tail + 2:close_at], src, lineno, line)
        has_lo = True
        rest = rest[:tail]
    body = rest.strip()
    if body.startswith("{"):                # Maxwell dual issue: "{  IADD …;" / "LDG …;  }"
        body = body[1:].lstrip()
    body, semi, after = body.partition(";")
    after = after.strip()
    if after not in ("", "}") or (not semi and body.endswith("}") and body.count("{") < body.count("}")):
        if not semi:
            body = body[:-1]
        else:
            raise SassParseError("malformed instruction", src, lineno, line)
    body = body.strip()
    if not body:
        raise SassParseError("empty instruction", src, lineno, line)
    if body[0] == ".":
        return None     # data directive inside a non-code section (.byte, .word …)
    if "/*" in body or body.count("{") != body.count("}") or "{" in body.split(" ", 1)[0]:
        raise SassParseError("malformed instruction", src, lineno, line)
    return int(head, 16), body, has_lo


def _other_line(st: _State, s: str, lineno: int, line: str) -> tuple | None:
    """Everything but the common instruction line (``s`` is the stripped line): encoding words,
    general instruction lines (returned as by :func:`_instruction_line`), headers, directives,
    labels and comments; anything else is an error."""
    src = st.source
    fatbin = _FATBIN.match(s)
    if fatbin:
        # cuobjdump of a fatbin/executable: a header block ("arch = sm_80", "compressed", …) per
        # embedded image; "ptx" images carry no SASS and are skipped up to the next header
        st.close()
        st.fatbin_header = True
        st.in_ptx = fatbin.group(1) == "ptx"
        return None
    if st.fatbin_header:
        if set(s) == {"="} or _WORD_LINE.match(s):
            return None
        if _KEY_VALUE.match(s):
            key, _, value = s.partition("=")
            if key.strip() == "arch" and _ARCH.match(value.strip()) and not st.in_ptx:
                st.arch = value.strip()
            return None
        st.fatbin_header = False
    if st.in_ptx:
        return None
    c0 = s[0]
    if c0 == "/":
        if s.startswith("//"):
            return None
        if not s.startswith("/*"):
            raise SassParseError("unrecognized line", src, lineno, line)
        if s[2:].lstrip().startswith(("0x", "0X")):
            st.encoding_word(s, lineno, line)
            return None
        return _instruction_line(st, s, lineno, line)
    st.pending_hi = None
    if s.endswith(":") and _LABEL_LINE.match(s):
        if st.cur is not None:
            st.cur.labels[s[:-1]] = len(st.cur.instructions)
        return None
    if c0 == ".":
        parts = s.split(None, 1)
        word = parts[0]
        arg = parts[1].strip() if len(parts) > 1 else ""
        if word == ".section":
            sec = arg.split(",", 1)[0].strip()
            if sec.startswith(".text."):
                st.open(sec[len(".text."):])
            else:
                st.close()
        elif word == ".target":
            tgt = arg.split(",", 1)[0].strip()
            if _ARCH.match(tgt):
                st.arch = tgt
                if st.cur is not None and not st.cur.instructions:
                    st.cur.set_arch(tgt)
        elif word == ".headerflags":
            m = _HEADERFLAGS_SM.search(arg)
            if m and st.cur is not None and not st.cur.arch:
                st.cur.set_arch("sm_" + m.group(1).lower())
        return None     # other directives (.global, .type, .size, .align, ……….) carry nothing we need
    if s.startswith("code for "):
        tgt = s[len("code for "):].strip()
        if not _ARCH.match(tgt):
            raise SassParseError("bad architecture", src, lineno, line)
        st.close()
        st.arch = tgt
        return None
    if s.startswith("Function"):
        name = s.partition(":")[2].strip()
        if not s[len("Function"):].lstrip().startswith(":") or not name or " " in name:
            raise SassParseError("bad Function header", src, lineno, line)
        st.open(name)
        return None
    raise SassParseError("unrecognized line", src, lineno, line)


def parse_text(text: str, source: str = "<text>", demangle: bool = True) -> list[Program]:
    """Parse SASS listing text into one :class:`Program` per kernel, in order of appearance.

    Raises :class:`SassParseError` (file, line, text) on a malformed line. ``demangle`` runs
    ``c++filt`` (when on PATH) once over all mangled kernel names.

    Lines end at ``\n`` (a trailing ``\r`` is tolerated). Speed: one compiled pattern scans the text,
    matching an instruction line together with its encoding-word line; only other lines take the
    general paths. Instruction and operand texts are decoded once per distinct text (memoized per
    listing and across listings; :func:`clear_caches` empties the memos), instruction records
    are built without the frozen dataclass ``__init__`` (:func:`_record_maker`), and the cyclic
    garbage collector is paused while the (acyclic) records are built."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        st = _State(source, text)
        _parse_lines(st, text)
        st.close()
    finally:
        if gc_was_enabled:
            gc.enable()
    programs = st.programs
    if demangle and programs:
        names = demangle_all([p.name for p in programs])
        for p in programs:
            p.demangled = names.get(p.name)
    return programs


def clear_caches() -> None:
    """Empty the memo caches the parser keeps across listings (instruction and operand texts, opcodes
    and their effects, guards, control words), e.g. to time a parse from a cold start."""
    for cached in (decode_instruction, parse_operand, register_of, flat_id, effects_of, _opcode, _guard, _reg_span,
                   _hi_control, _encoding_line):
        cached.cache_clear()


def _units(text: str):
    """``_UNIT.findall`` over ``text`` in pieces of about ``_CHUNK`` characters cut at line ends (so
    the match tuples of a huge listing are not all held at once). A cut may separate an instruction
    line from its encoding-word line; the parser then takes the word as a line of its own, which
    gives the same result."""
    pos = 0
    end_of_text = len(text)
    findall = _UNIT.findall
    while True:
        end = text.find("\n", pos + _CHUNK)
        if end < 0:
            end = end_of_text
        yield findall(text, pos, end)
        if end == end_of_text:
            return
        pos = end + 1


_CHUNK = 1 << 20


def _parse_lines(st: _State, text: str) -> None:
    """The line loop of :func:`parse_text` (hot path kept in one function, on locals; ``pending`` —
    the instruction whose sm_70+ high word is expected next — and the current kernel are mirrored to
    and from ``st`` around the general paths, which may change them). Each distinct instruction text
    is decoded once per listing (``decoded``). Groups of :data:`_UNIT` that did not take part in a
    match are ``""``."""
    decoded: dict[str, tuple] = {}
    lookup = decoded.get
    decode = decode_instruction
    make = _make_instruction
    set_control = _set_control
    hi_control = _hi_control
    bundle = st.bundle
    pending = None
    cur = st.cur
    instructions = cur.instructions if cur is not None else None
    volta = cur is not None and cur.volta
    lineno = 0
    for units in _units(text):
        for addr, body, lo, hi, word, other in units:
            lineno += 1
            if addr:
                address = int(addr, 16)
            elif word:                              # /* 0xHI */ on its own line
                if pending is not None:
                    set_control(pending, hi_control(word))
                    pending = None
                else:
                    st.control_word(int(word, 16), lineno)
                continue
            else:
                s = other.strip()
                if not s:
                    continue
                st.pending_hi = pending
                parsed = _other_line(st, s, lineno, other)
                pending = st.pending_hi
                cur = st.cur            # a header may have opened a kernel or set its arch
                instructions = cur.instructions if cur is not None else None
                volta = cur is not None and cur.volta
                if parsed is None:
                    continue
                address, body, has_lo = parsed
                lo = "0x" if has_lo else ""
            if instructions is None:
                raise st.error("instruction outside a kernel (no 'Function :' or '.section .text.' header)", lineno)
            entry = lookup(body)
            if entry is None:
                try:
                    entry = decoded[body] = decode(body)
                except OperandError as exc:
                    raise st.error(str(exc), lineno) from None
            head, mem_width, target = entry
            k = len(instructions)
            control = bundle.pop(0) if bundle else None
            if hi and volta:                        # the next line was the sm_70+ high word
                control = hi_control(hi)
            ins = make(k, address, head, None, control, mem_width, lineno, body)
            instructions.append(ins)
            if target is not None:
                cur.branches.append((k, target))
            if hi:                                  # the next line was an encoding word
                lineno += 1
                if volta:
                    pending = None
                else:
                    st.pending_hi = None
                    st.control_word(int(hi, 16), lineno)
            else:
                pending = ins if lo and volta else None
    st.pending_hi = pending
