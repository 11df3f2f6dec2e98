"""Read SASS from a file: a text listing (``.sass``/``.txt``, or ``-`` for stdin) is parsed directly;
a CUDA binary (cubin/ELF, fatbin, or an executable with embedded kernels) is first disassembled with
``cuobjdump -sass`` (found by :mod:`teg.sass.binaries`)."""

from __future__ import annotations

import sys
from pathlib import Path

from teg.sass.binaries import run_tool
from teg.sass.errors import DisassemblyError
from teg.sass.parser import parse_text
from teg.sass.program import Program

ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = b"\x50\xed\x55\xba"   # 0xBA55ED50, little-endian
_SNIFF = 4096


def is_binary(head: bytes) -> bool:
    """True for an ELF or fatbin header, or any bytes with a NUL (not a text listing)."""
    return head.startswith((ELF_MAGIC, FATBIN_MAGIC)) or b"\x00" in head


def disassemble(path: str | Path) -> str:
    """``cuobjdump -sass PATH`` output; raises DisassemblyError when cuobjdump rejects the file."""
    proc = run_tool("cuobjdump", ["-sass", str(path)])
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise DisassemblyError(f"cuobjdump could not disassemble {path}: {msg[0] if msg else 'exit %d' % proc.returncode}")
    return proc.stdout


def parse_file(path: str | Path, demangle: bool = True) -> list[Program]:
    """Parse the kernels of ``path`` (see module docstring). ``"-"`` reads text from stdin."""
    if str(path) == "-":
        return parse_text(sys.stdin.read(), source="<stdin>", demangle=demangle)
    path = Path(path)
    data = path.read_bytes()
    if is_binary(data[:_SNIFF]):
        programs = parse_text(disassemble(path), source=f"{path} (cuobjdump -sass)", demangle=demangle)
        if not programs:
            raise DisassemblyError(f"no SASS kernels in {path} (a host-only binary, or PTX only?)")
        return programs
    return parse_text(data.decode("utf-8", errors="replace"), source=str(path), demangle=demangle)
