"""What the emulator needs from a cubin besides the SASS text: each kernel's parameter layout,
shared-memory and stack sizes, and its constant banks.

A cubin is an ELF64 file; this is a small reader built on :mod:`struct` (no ``cuobjdump -elf`` text
scraping). The CUDA-specific facts come from the ``.nv.info`` sections, a sequence of attributes
``(format u8, attribute u8, payload)`` where format 0x04 (EIFMT_SVAL) is followed by a u16 length and
that many bytes; the other formats (0x01 EIFMT_NVAL, 0x02 EIFMT_BVAL, 0x03 EIFMT_HVAL) carry two
bytes. The attributes used here, as ``cuobjdump -elf`` names them:

* ``EIATTR_KPARAM_INFO`` (0x17, per kernel): u32 index, u16 ordinal, u16 offset, u32 flags whose
  bits 18…31 are the parameter's size in bytes;
* ``EIATTR_PARAM_CBANK`` (0x0a, per kernel): u32 section, u16 offset, u16 size — where the
  parameters start in constant bank 0 (0x160 on sm_80, 0x210 on sm_90 with CUDA 13);
* ``EIATTR_FRAME_SIZE`` (0x11), ``EIATTR_MAX_STACK_SIZE`` (0x23) and ``EIATTR_REGCOUNT`` (0x2f) in
  the global ``.nv.info``: u32 symbol index, u32 value — the per-thread local (stack) frame in bytes
  and the registers per thread.

Sections ``.nv.shared.<kernel>`` (NOBITS; on sm_90 it already includes the 1 KiB the hardware
reserves at the bottom of the window), ``.nv.constant0.<kernel>`` (bank 0 image) and
``.nv.constant<N>`` / ``.nv.constant<N>.<kernel>`` (other banks: module ``__constant__`` data, or
compiler constants of one kernel such as ``c[0x2][0x0]`` on sm_80) complete the picture.

A whole program's module (:func:`read_module`) adds what its ``__device__`` / ``__constant__``
variables need: the data objects of the ELF symbol table (``STT_OBJECT``: name, section, offset,
size), the data sections (``.nv.global`` zero-filled, ``.nv.global.init`` initialised,
``.nv.constant3`` the ``__constant__`` bank, ``.nv.constant4`` the bank of global addresses the SASS
loads with ``LDC.64 R, c[0x4][…]``) and their relocations (``SHT_REL`` / ``SHT_RELA``: ``r_info >>
32`` the symbol, ``r_info & 0xffffffff`` the type; nvcc 13 writes ``R_CUDA_64`` = 2 into
``.nv.constant4`` and ``R_CUDA_G64`` = 4 into ``.nv.global.init`` for a pointer initialised with a
variable's address, both "the symbol's 64-bit address plus the addend").
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from teg.emu.errors import EmulatorError
from teg.textfile import TextFileError, check_regular

KPARAM_INFO = 0x17
PARAM_CBANK = 0x0A
FRAME_SIZE = 0x11
MAX_STACK_SIZE = 0x23
REGCOUNT = 0x2F


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ordinal (position in the C signature), byte offset from the parameter
    base, size in bytes."""

    ordinal: int
    offset: int
    size: int


@dataclass
class KernelImage:
    """One kernel's launch-relevant metadata from the cubin."""

    name: str
    params: list[Param] = field(default_factory=list)
    param_base: int = 0
    shared_static: int = 0
    local_frame: int = 0
    nregs: int = 0
    constant0: bytes = b""
    banks: dict[int, bytes] = field(default_factory=dict)   # other constant banks (module scope)
    sm: int = 0                 # the cubin's target (80 for sm_80; 0 when the ELF header does not say)


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    offset: int
    size: int
    link: int
    info: int


def _sections(data: bytes, path: str) -> list[_Section]:
    if data[:4] != b"\x7fELF" or len(data) < 64 or data[4] != 2:
        raise EmulatorError(f"{path}: not an ELF64 cubin")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, info = struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize)
        raw.append((name, typ, off, size, link, info))
    stroff = raw[shstrndx][2]

    def cstr(off: int) -> str:
        end = data.index(b"\0", off)
        return data[off:end].decode("ascii", "replace")

    return [_Section(cstr(stroff + n), t, o, s, lk, inf) for (n, t, o, s, lk, inf) in raw]


def _symbols(data: bytes, secs: list[_Section]) -> list[str]:
    symtab = next((s for s in secs if s.type == 2), None)   # SHT_SYMTAB
    if symtab is None:
        return []
    strtab = secs[symtab.link]
    names = []
    for i in range(symtab.size // 24):
        (name,) = struct.unpack_from("<I", data, symtab.offset + i * 24)
        end = data.index(b"\0", strtab.offset + name)
        names.append(data[strtab.offset + name:end].decode("ascii", "replace"))
    return names


def _attributes(blob: bytes):
    """Yield ``(attribute, payload)`` for each entry of an ``.nv.info`` section."""
    i = 0
    while i + 2 <= len(blob):
        fmt, attr = blob[i], blob[i + 1]
        i += 2
        if fmt == 0x04:
            (n,) = struct.unpack_from("<H", blob, i)
            yield attr, blob[i + 2:i + 2 + n]
            i += 2 + n
        else:
            yield attr, blob[i:i + 2]
            i += 2


# sizes no CUDA kernel reaches: a damaged cubin claiming more is refused before the emulator
# allocates its windows (shared memory per block, a constant bank, local memory per thread)
MAX_SHARED = 1 << 24
MAX_BANK = 1 << 16
MAX_FRAME = 1 << 19
MAX_REGS = 255
MAX_CUBIN = 1 << 30


def read_cubin(path: str | Path) -> dict[str, KernelImage]:
    """Parse a cubin into ``{kernel name: KernelImage}``. A damaged file — offsets or sizes outside
    the file, names without an end, sizes no kernel reaches — is an :class:`EmulatorError`."""
    path = str(path)
    try:
        check_regular(path, MAX_CUBIN, "cubin")
    except TextFileError as exc:
        raise EmulatorError(str(exc)) from None
    data = Path(path).read_bytes()
    try:
        kernels = _parse(data, path)
    except (struct.error, IndexError, ValueError, OverflowError) as exc:
        raise EmulatorError(f"{path}: damaged cubin ({exc.__class__.__name__}: {exc})") from None
    for k in kernels.values():
        banks = [len(k.constant0), *map(len, k.banks.values())]
        if (k.shared_static > MAX_SHARED or max(banks) > MAX_BANK or k.local_frame > MAX_FRAME
                or k.nregs > MAX_REGS or k.param_base + sum(p.size for p in k.params) > MAX_BANK):
            raise EmulatorError(f"{path}: damaged cubin (kernel {k.name}: shared {k.shared_static} B, constant banks "
                                f"{max(banks)} B, frame {k.local_frame} B, {k.nregs} registers: beyond any kernel)")
    return kernels


def _target_sm(data: bytes) -> int:
    """The SM version in the ELF header's ``e_flags``: bits 8-15 from ABI version 8 on (CUDA 13:
    0x5a for sm_90, 0x64 for sm_100), bits 0-7 before it (CUDA 12: ``EF_CUDA_SM90`` = 0x5a)."""
    (flags,) = struct.unpack_from("<I", data, 0x30)
    return (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF


def _parse(data: bytes, path: str) -> dict[str, KernelImage]:
    """The kernels of the cubin bytes ``data`` (struct / index errors on a damaged file)."""
    secs = _sections(data, path)
    syms = _symbols(data, secs)
    for s in secs:
        if s.type != 8 and s.offset + s.size > len(data):          # SHT_NOBITS has no bytes in the file
            raise ValueError(f"section {s.name} ends at {s.offset + s.size}, past the end of the file")
    body = {s.name: data[s.offset:s.offset + s.size] if s.type != 8 else b"" for s in secs}
    size = {s.name: s.size for s in secs}
    frames: dict[str, int] = {}
    nregs: dict[str, int] = {}
    for attr, payload in _attributes(body.get(".nv.info", b"")):
        if attr in (FRAME_SIZE, MAX_STACK_SIZE, REGCOUNT) and len(payload) == 8:
            sym, value = struct.unpack("<II", payload)
            if sym < len(syms):
                table = nregs if attr == REGCOUNT else frames
                table[syms[sym]] = max(table.get(syms[sym], 0), value)
    module_banks: dict[int, bytes] = {}
    kernel_banks: dict[str, dict[int, bytes]] = {}
    for s in secs:
        if s.name.startswith(".nv.constant") and not s.name.startswith(".nv.constant0"):
            digits, _, owner = s.name[len(".nv.constant"):].partition(".")
            if digits.isdigit():
                if owner:
                    kernel_banks.setdefault(owner, {})[int(digits)] = body[s.name]
                else:
                    module_banks[int(digits)] = body[s.name]
    sm = _target_sm(data)
    kernels: dict[str, KernelImage] = {}
    for s in secs:
        if not s.name.startswith(".text."):
            continue
        name = s.name[len(".text."):]
        k = KernelImage(name=name, shared_static=size.get(f".nv.shared.{name}", 0),
                        local_frame=frames.get(name, 0), nregs=nregs.get(name, 0), constant0=body.get(f".nv.constant0.{name}", b""),
                        banks={**module_banks, **kernel_banks.get(name, {})}, sm=sm)
        for attr, payload in _attributes(body.get(f".nv.info.{name}", b"")):
            if attr == KPARAM_INFO and len(payload) >= 12:
                _index, ordinal, offset, flags = struct.unpack_from("<IHHI", payload)
                k.params.append(Param(ordinal, offset, (flags >> 18) & 0x3FFF))
            elif attr == PARAM_CBANK and len(payload) >= 8:
                _sec, off, _size = struct.unpack_from("<IHH", payload)
                k.param_base = off
        k.params.sort(key=lambda p: p.ordinal)
        kernels[name] = k
    return kernels


# ---- whole modules: variables, data sections, relocations -----------------------------------------

SHT_PROGBITS, SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 1, 2, 4, 8, 9
STT_OBJECT, STT_FUNC = 1, 2
R_CUDA_64, R_CUDA_G64 = 2, 4          # absolute 64-bit address of the symbol (+ addend)


@dataclass(frozen=True)
class Symbol:
    """An ELF symbol: ``section`` is the name of the section it lives in ('' when undefined)."""

    name: str
    section: str
    value: int
    size: int
    type: int


@dataclass(frozen=True)
class Relocation:
    """One relocation: patch ``section`` at ``offset`` with ``symbol``'s address plus ``addend``
    (for ``SHT_REL`` the addend is the 8 bytes already there)."""

    section: str
    offset: int
    type: int
    symbol: Symbol
    addend: int
    explicit: bool           # SHT_RELA (addend given) or SHT_REL (addend in place)


@dataclass
class ModuleImage:
    """A cubin as a program loads it: its kernels, its data sections (``name -> (size, bytes)``,
    bytes ``None`` for a zero-filled ``NOBITS`` section), its data objects and relocations."""

    path: str
    sm: int
    kernels: dict[str, KernelImage]
    sections: dict[str, tuple[int, bytes | None]]
    objects: dict[str, Symbol]
    relocations: list[Relocation]


def is_module_data(section: str) -> bool:
    """Sections whose bytes are per-module variables: ``.nv.global[.init]`` and the module-scope
    constant banks other than bank 0 (``.nv.constant3``, ``.nv.constant4`` …; not the kernels' own
    ``.nv.constantN.<kernel>``)."""
    if section in (".nv.global", ".nv.global.init"):
        return True
    digits = section[len(".nv.constant"):]
    return section.startswith(".nv.constant") and digits.isdigit() and digits != "0"


def _symbol_table(data: bytes, secs: list[_Section]) -> list[Symbol]:
    symtab = next((s for s in secs if s.type == SHT_SYMTAB), None)
    if symtab is None:
        return []
    strtab = secs[symtab.link]
    out = []
    for i in range(symtab.size // 24):
        name, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab.offset + i * 24)
        end = data.index(b"\0", strtab.offset + name)
        sec = secs[shndx].name if 0 < shndx < len(secs) else ""
        out.append(Symbol(data[strtab.offset + name:end].decode("ascii", "replace"), sec, value, size, info & 0xF))
    return out


def read_module(path: str | Path) -> ModuleImage:
    """Parse a cubin with its variables (see the module docstring); a damaged file is an
    :class:`EmulatorError` naming it."""
    kernels = read_cubin(path)
    path = str(path)
    data = Path(path).read_bytes()
    try:
        secs = _sections(data, path)
        syms = _symbol_table(data, secs)
        sections = {s.name: (s.size, None if s.type == SHT_NOBITS else data[s.offset:s.offset + s.size])
                    for s in secs if is_module_data(s.name)}
        relocs = []
        for s in secs:
            if s.type not in (SHT_REL, SHT_RELA) or not 0 < s.info < len(secs):
                continue
            target = secs[s.info].name
            step = 24 if s.type == SHT_RELA else 16
            for i in range(s.size // step):
                off, info = struct.unpack_from("<QQ", data, s.offset + i * step)
                addend = struct.unpack_from("<q", data, s.offset + i * step + 16)[0] if s.type == SHT_RELA else 0
                sym = info >> 32
                if sym >= len(syms):
                    raise ValueError(f"relocation in {s.name} names symbol {sym} of {len(syms)}")
                relocs.append(Relocation(target, off, info & 0xFFFFFFFF, syms[sym], addend, s.type == SHT_RELA))
    except (struct.error, IndexError, ValueError) as exc:
        raise EmulatorError(f"{path}: damaged cubin ({exc.__class__.__name__}: {exc})") from None
    objects = {s.name: s for s in syms if s.type == STT_OBJECT and is_module_data(s.section)}
    return ModuleImage(path, _target_sm(data), kernels, sections, objects, relocs)
