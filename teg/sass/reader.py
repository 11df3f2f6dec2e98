"""Read SASS from a file: a text listing (``.sass``/``.txt``, or ``-`` for stdin) is parsed directly;
a CUDA binary (cubin/ELF, fatbin, or an executable with embedded kernels) is first disassembled with
``cuobjdump -sass`` (found by :mod:`teg.sass.binaries`)."""

from __future__ import annotations

import sys
from pathlib import Path

from teg.sass.binaries import run_tool
from teg.sass.errors import DisassemblyError, SassParseError
from teg.sass.parser import parse_text
from teg.sass.program import Program
from teg.textfile import TextFileError, check_regular, decode_text

ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = b"\x50\xed\x55\xba"   # 0xBA55ED50, little-endian
_SNIFF = 4096
MAX_SASS_BYTES = 1 << 30     # a listing or binary larger than this is refused (about 12 M instruction lines)


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
    """Parse the kernels of ``path`` (see module docstring). ``"-"`` reads text from stdin.

    Only a regular file of at most :data:`MAX_SASS_BYTES` is read; listing text must be UTF-8 with
    no line longer than :data:`teg.textfile.MAX_LINE_CHARS` (:class:`SassParseError` otherwise)."""
    try:
        if str(path) == "-":
            raw = getattr(sys.stdin, "buffer", None)     # a text-only stream (tests) has no bytes layer
            data = raw.read(MAX_SASS_BYTES + 1) if raw is not None else \
                sys.stdin.read(MAX_SASS_BYTES + 1).encode("utf-8", "surrogateescape")
            if len(data) > MAX_SASS_BYTES:
                raise TextFileError("<stdin>", f"more than {MAX_SASS_BYTES >> 20} MiB of SASS")
            return parse_text(decode_text(data, "<stdin>"), source="<stdin>", demangle=demangle)
        path = Path(path)
        check_regular(path, MAX_SASS_BYTES, "SASS listing or CUDA binary")
        data = path.read_bytes()
        if is_binary(data[:_SNIFF]):
            programs = parse_text(disassemble(path), source=f"{path} (cuobjdump -sass)", demangle=demangle)
            if not programs:
                raise DisassemblyError(f"no SASS kernels in {path} (a host-only binary, or PTX only?)")
            return programs
        text = decode_text(data, str(path))
    except TextFileError as exc:
        raise SassParseError(exc.problem, exc.path, exc.line or 0) from None
    return parse_text(text, source=str(path), demangle=demangle)
