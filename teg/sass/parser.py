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
from itertools import chain
from operator import attrgetter

from teg.sass.control import decode_maxwell, decode_volta
from teg.sass.demangle import demangle_all
from teg.sass.effects import Effects, effects_of
from teg.sass.errors import OperandError, SassParseError
from teg.sass.operands import flat_id, parse_operand, split_operands
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

_chain = chain.from_iterable
_REGS_OF = attrgetter("regs")

# Maxwell/Pascal: a control word covers the next three instructions
_MAXWELL = range(50, 70)


@functools.lru_cache(maxsize=64)
def _guard(text: str) -> tuple[str, int]:
    """``"!P0"`` → (``"!P0"``, id of P0); PT → id -1. Raises OperandError."""
    if not _GUARD.match(text):
        raise OperandError(f"bad guard predicate @{text}")
    return text, flat_id(text.lstrip("!").split(".")[0])


def _span(op: Operand, width: int) -> tuple[int, ...]:
    """Registers of register operand ``op`` read or written ``width`` registers wide."""
    try:
        return reg_span(op.reg, width)
    except ValueError as exc:
        raise OperandError(f"{op.text}: {exc}") from None


def _destinations(sig: tuple[str, ...], wide: int, operands: tuple[Operand, ...]) -> tuple[list[int], int]:
    """Registers written by the leading operands that ``sig`` names destinations, and their count."""
    dst: list[int] = []
    n = len(operands)
    i = 0
    for tok in sig:
        if tok == "d":
            if i < n:
                op = operands[i]
                if op.kind == "reg" and wide > 1 and op.wide == 1:
                    dst.extend(_span(op, wide))
                elif op.kind in ("reg", "pred"):
                    dst.extend(op.regs)
                i += 1
        elif tok == "p":
            if i < n:
                if operands[i].kind == "pred":
                    dst.extend(operands[i].regs)
                i += 1
        else:  # "p?" one optional predicate, "p*" any number
            while i < n and operands[i].kind == "pred":
                dst.extend(operands[i].regs)
                i += 1
                if tok == "p?":
                    break
    return dst, i


def registers(eff: Effects, operands: tuple[Operand, ...]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """Written and read registers of an instruction (see :mod:`teg.sass.effects`), and the number of
    leading operands that are destinations."""
    if eff.plain:
        # one destination, every operand as wide as printed (most ALU instructions)
        if not operands:
            return (), (), 0
        first = operands[0]
        src = tuple(_chain(map(_REGS_OF, operands[1:])))
        return (first.regs if first.kind in ("reg", "pred") else ()), src, 1
    dst, i = _destinations(eff.dst_sig, eff.dst_wide, operands) if eff.dst_sig else ([], 0)
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
    return tuple(dst), tuple(src), i


@functools.lru_cache(maxsize=1 << 14)
def _opcode(opcode: str) -> tuple[str, tuple[str, ...], Effects]:
    """``(base, modifiers, effects)`` of a full opcode; raises OperandError when it is not one."""
    if not _OPCODE.match(opcode):
        raise OperandError(f"bad opcode {opcode!r}")
    base, *mods = opcode.split(".")
    return base, tuple(mods), effects_of(opcode)


def _address_pair(op: Operand) -> Operand:
    """A global/generic address under ``.E``: its base register (``[R6]`` → R6:R7, ``[UR4]`` →
    UR4:UR5) is read as a 64-bit pair."""
    if op.wide != 1:
        return op
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
    return replace(op, regs=tuple(regs), wide=2) if op.reg >= 0 else replace(op, regs=tuple(regs))


def decode_body(opcode: str, operand_text: str) -> tuple:
    """Decode an instruction body without its guard:
    ``(opcode, base, modifiers, operands, dst_regs, src_regs, mem_width, target)`` where ``target`` is the
    branch target as printed — an int address, a label name, or None."""
    base, mods, eff = _opcode(opcode)
    operand_text = operand_text.strip()
    texts = split_operands(operand_text) if operand_text else []
    spaces = eff.spaces
    if spaces and "[" in operand_text:
        last = len(spaces) - 1
        operands = [parse_operand(t, spaces[min(k, last)]) if "[" in t else parse_operand(t)
                    for k, t in enumerate(texts)]
    else:
        operands = list(map(parse_operand, texts))
    target: int | str | None = None
    if eff.branch:
        for k in range(len(operands) - 1, -1, -1):
            op = operands[k]
            if op.kind == "label":
                target = op.label
                break
            if op.kind == "imm" and not op.text.startswith("-"):
                target = op.value
                operands[k] = replace(op, kind="label")
                break
    if eff.address64:
        operands = [_address_pair(op) if op.kind == "mem" and op.space in ("global", "generic") else op
                    for op in operands]
    ops = tuple(operands)
    dst, src, _ = registers(eff, ops)
    mem_width = eff.mem_width
    if not eff.is_memory and "[" in operand_text:
        # GT200 arithmetic with a shared-memory operand (FADD32 R2, g[A1+0xb], R2): 32-bit access,
        # 16-bit with a .U16/.S16 selector
        for op in ops:
            if op.kind == "mem":
                mem_width = 2 if op.select in ("U16", "S16") else 4
                break
    return opcode, base, mods, ops, dst, src, mem_width, target


def _record_maker(cls):
    """A constructor for the frozen slotted record ``cls`` that takes the field values as one tuple
    and stores them through the slot descriptors: the same object as ``cls(*values)``, without the
    per-field ``object.__setattr__`` of a frozen dataclass ``__init__`` (the parser builds one
    Instruction per line, so this halves its cost)."""
    from dataclasses import fields

    names = [f.name for f in fields(cls)]
    env = {"new": object.__new__, "cls": cls, **{f"set_{n}": cls.__dict__[n].__set__ for n in names}}
    body = "\n".join(f"    set_{n}(obj, values[{i}])" for i, n in enumerate(names))
    exec(f"def make(values):\n    obj = new(cls)\n{body}\n    return obj\n", env)  # noqa: S102
    return env["make"]


_make_instruction = _record_maker(Instruction)
# Fields filled in after an Instruction is built but before the parser hands it out: the control
# field (its encoding word is on the next line) and the branch target (labels may come later).
_set_control = Instruction.__dict__["control"].__set__
_set_target = Instruction.__dict__["branch_target"].__set__


@functools.lru_cache(maxsize=1 << 16)   # about 0.5 kB per entry
def decode_instruction(body: str) -> tuple:
    """Decode an instruction as printed without address and encoding (``"@!P0 LDG.E R4, [R2.64]"``),
    memoized on that one string: a listing decodes each distinct instruction text once. Returns
    ``(head, mem_width, target)`` with ``head = (opcode, base, modifiers, operands, guard, guard_reg,
    dst_regs, src_regs)`` (the guard predicate leads ``src_regs``) and ``target`` as in
    :func:`decode_body`."""
    guard = None
    guard_reg = -1
    rest = body
    if body[0] == "@":
        gtext, _, rest = body[1:].partition(" ")
        guard, guard_reg = _guard(gtext)
        rest = rest.lstrip()
        if not rest:
            raise OperandError("guard predicate without an instruction")
    opcode, _, operand_text = rest.partition(" ")
    opcode, base, mods, ops, dst, src, mem_width, target = decode_body(opcode, operand_text)
    if guard_reg >= 0:
        src = (guard_reg, *src)
    return (opcode, base, mods, ops, guard, guard_reg, dst, src), mem_width, target


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
        """Resolve branch targets (hex addresses and labels) to instruction indices."""
        instructions = self.instructions
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
_UNIT = re.compile(r"""
    ^[ \t]*/\*(?:
        ([0-9a-fA-F]+)\*/[ \t]+                                  # /*addr*/
        ([^\s;{}](?:[^\n;/{}]*[^\s;/{}])?)[ \t]*;[ \t]*          # [@guard] OPCODE operands ;
        (?:/\*[ \t]*(0x[0-9a-fA-F]+)[ \t]*\*/[ \t]*                # /* 0xLO */
           (?:\n[ \t]*/\*[ \t]*(0x[0-9a-fA-F]+)[ \t]*\*/[ \t]*)?   # next line: /* 0xHI */
        )?
      | [ \t]*(0x[0-9a-fA-F]+)[ \t]*\*/[ \t]*                    # a bare /* 0x… */ line
    )$
    | ^([^\n]*)$                                                # anything else
    """, re.M | re.X)
_HEX_LINE = re.compile(r"/\*\s*(0[xX][0-9a-fA-F]+)\s*\*/$")


class _State:
    """Parser state between lines."""

    __slots__ = ("source", "programs", "cur", "arch", "pending_hi", "bundle", "fatbin_header", "in_ptx")

    def __init__(self, source: str):
        self.source = source
        self.programs: list[Program] = []
        self.cur: _KernelBuilder | None = None
        self.arch = ""
        self.pending_hi: Instruction | None = None   # last instruction still waiting for its hi word
        self.bundle: list[Control] = []              # sm_5x/6x: controls of the next instructions
        self.fatbin_header = False                   # inside a "Fatbin … code:" header block
        self.in_ptx = False                          # inside a "Fatbin ptx code:" block (skipped)

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
        cur = self.cur
        if cur is None:
            raise SassParseError("encoding word outside a kernel", self.source, lineno, line)
        try:
            word = _encoding_line(s)
        except OperandError as exc:
            raise SassParseError(str(exc), self.source, lineno, line) from None
        if cur.volta:
            if self.pending_hi is None:
                raise SassParseError("encoding word without an instruction before it", self.source, lineno, line)
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
    general paths. Instruction texts and operands are decoded once per distinct text (memoized), and
    the cyclic garbage collector is paused while the (acyclic) instruction records are built."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        st = _State(source)
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


def _parse_lines(st: _State, text: str) -> None:
    """The line loop of :func:`parse_text` (hot path kept in one function, on locals; ``pending`` —
    the instruction whose sm_70+ high word is expected next — and the current kernel are mirrored to
    and from ``st`` around the general paths, which may change them)."""
    decode = decode_instruction
    make = _make_instruction
    set_control = _set_control
    hi_control = _hi_control
    bundle = st.bundle
    source = st.source
    pending = None
    cur = st.cur
    instructions = cur.instructions if cur is not None else None
    volta = cur is not None and cur.volta
    lineno = 0
    for m in _UNIT.finditer(text):
        lineno += 1
        addr, body, lo, hi, word, other = m.groups()
        if addr is not None:
            address = int(addr, 16)
        elif word is not None:                  # /* 0xHI */ on its own line
            if pending is not None:
                set_control(pending, hi_control(word))
                pending = None
            else:
                st.encoding_word(m.group().strip(), lineno, m.group())
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
            lo = "" if has_lo else None
        if instructions is None:
            raise SassParseError("instruction outside a kernel (no 'Function :' or '.section .text.' header)",
                                 source, lineno, m.group().split("\n", 1)[0])
        try:
            head, mem_width, target = decode(body)
        except OperandError as exc:
            raise SassParseError(str(exc), source, lineno, m.group().split("\n", 1)[0]) from None
        k = len(instructions)
        ins = make((k, address, *head, None, bundle.pop(0) if bundle else None, mem_width, lineno, body))
        instructions.append(ins)
        if target is not None:
            cur.branches.append((k, target))
        if hi is not None:                      # the next line was an encoding word
            lineno += 1
            if volta:
                set_control(ins, hi_control(hi))
                pending = None
            else:
                st.pending_hi = None
                hi_line = m.group().split("\n", 1)[1]
                st.encoding_word(hi_line.strip(), lineno, hi_line)
        else:
            pending = ins if lo is not None and volta else None
    st.pending_hi = pending
