"""Read SASS from a file: a text listing (``.sass``/``.txt``, or ``-`` for stdin) is parsed directly;
a CUDA binary (cubin/ELF, fatbin, or an executable with embedded kernels) is first disassembled with
``cuobjdump -sass`` (found by :mod:`teg.sass.binaries`)."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

from teg.sass.binaries import find_tool, run_tool
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


def disassembly_cache_dir() -> Path:
    """Where listings are kept: ``$TEG_CACHE_DIR/sass`` (``~`` expanded), else
    ``$XDG_CACHE_HOME/teg/sass``, else ``~/.cache/teg/sass``."""
    env = os.environ.get("TEG_CACHE_DIR")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env))) / "sass"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path(os.path.expanduser("~")) / ".cache"
    return base / "teg" / "sass"


def _disassembly_key(data: bytes) -> str:
    """SHA-256 of the binary's bytes and of the cuobjdump that disassembles it (its path, size and
    modification time: another CUDA version prints other text)."""
    exe = find_tool("cuobjdump")
    st = exe.stat()
    h = hashlib.sha256(f"teg-sass-cache|1|{exe}|{st.st_size}|{st.st_mtime_ns}|".encode())
    h.update(data)
    return h.hexdigest()


def disassemble(path: str | Path, data: bytes | None = None) -> str:
    """``cuobjdump -sass PATH`` output; raises DisassemblyError when cuobjdump rejects the file.

    The listing is cached by the binary's content (:func:`_disassembly_key`) under
    :func:`disassembly_cache_dir` — cuobjdump takes 0.1–1 s per cubin, a whole program's modules
    are disassembled again on every run. A cache that cannot be read or written is not used (the
    listing comes from cuobjdump); a rejected file is never cached."""
    data = Path(path).read_bytes() if data is None else data
    key = _disassembly_key(data)
    entry = disassembly_cache_dir() / key[:2] / f"{key}.sass"
    try:
        return entry.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    proc = run_tool("cuobjdump", ["-sass", str(path)])
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise DisassemblyError(f"cuobjdump could not disassemble {path}: {msg[0] if msg else 'exit %d' % proc.returncode}")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".sass-", dir=entry.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(proc.stdout.encode("utf-8"))
            os.replace(tmp, entry)        # readers see the whole listing or none
        except OSError:
            os.unlink(tmp)
            raise
    except OSError:
        pass
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
            programs = parse_text(disassemble(path, data), source=f"{path} (cuobjdump -sass)", demangle=demangle)
            if not programs:
                raise DisassemblyError(f"no SASS kernels in {path} (a host-only binary, or PTX only?)")
            return programs
        text = decode_text(data, str(path))
    except TextFileError as exc:
        raise SassParseError(exc.problem, exc.path, exc.line or 0) from None
    return parse_text(text, source=str(path), demangle=demangle)
