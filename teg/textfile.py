"""Reading a user's text file (a SASS listing, a machine table, a kernel list) so that no input can
hang teg, exhaust its memory or be read as something it is not.

Mechanism: the path is ``stat``-ed before it is opened — only a regular file is read (``/dev/zero``,
a FIFO or a terminal would never end), and only up to a size limit named by the caller; the bytes
are then decoded as strict UTF-8 (a decoding error names the line and column of the first bad
byte) and scanned for the longest line in fixed-size blocks (numpy over the newline positions, so
the check costs one pass and a bounded amount of memory). Every problem is one
:class:`TextFileError` ``FILE[:LINE]: problem``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from teg import TegError

MAX_LINE_CHARS = 1 << 16        # longest line any of teg's text inputs has a reason to hold
_BLOCK = 1 << 24                # bytes per block of the line-length scan


class TextFileError(TegError):
    """A text input that cannot be read: ``FILE[:LINE]: problem``. Carries ``path``, ``line``
    (None when the whole file is at fault) and ``problem``."""

    def __init__(self, path: str | os.PathLike, problem: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.problem = problem
        super().__init__(f"{self.path}:{line}: {problem}" if line is not None else f"{self.path}: {problem}")


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def check_regular(path: str | os.PathLike, max_bytes: int, what: str = "file") -> int:
    """Size of ``path`` after checking that it is a regular file of at most ``max_bytes`` bytes;
    raises :class:`TextFileError` (or ``FileNotFoundError`` / ``IsADirectoryError``)."""
    p = Path(path)
    st = os.stat(p)         # FileNotFoundError / PermissionError propagate (one line in the CLI)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{p}: is a folder, expected a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise TextFileError(p, f"not a regular file (a device, pipe or socket); expected a {what}")
    if st.st_size > max_bytes:
        raise TextFileError(p, f"{_size_text(st.st_size)}, more than the {_size_text(max_bytes)} a {what} "
                               "may have")
    return st.st_size


def longest_line(data: bytes | bytearray | memoryview) -> tuple[int, int]:
    """(1-based number, length in bytes) of the longest line of ``data`` (lines end at ``\\n``),
    found block by block over the newline positions."""
    buf = np.frombuffer(data, np.uint8)
    best_len, best_line = 0, 1
    line_start = 0            # offset where the current line began
    lines_before = 0          # newlines before the current block
    for off in range(0, max(buf.shape[0], 1), _BLOCK):
        nl = np.flatnonzero(buf[off:off + _BLOCK] == 10) + off
        if nl.shape[0]:
            starts = np.empty(nl.shape[0], np.int64)
            starts[0] = line_start
            starts[1:] = nl[:-1] + 1
            lengths = nl - starts
            k = int(np.argmax(lengths))
            if int(lengths[k]) > best_len:
                best_len, best_line = int(lengths[k]), lines_before + k + 1
            line_start = int(nl[-1]) + 1
            lines_before += nl.shape[0]
    tail = buf.shape[0] - line_start
    if tail > best_len:
        best_len, best_line = tail, lines_before + 1
    return best_line, best_len


def decode_text(data: bytes, source: str | os.PathLike, max_line: int = MAX_LINE_CHARS) -> str:
    """``data`` as strict UTF-8 text with no line longer than ``max_line`` bytes, else
    :class:`TextFileError` naming the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise TextFileError(source, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {col})", line) from None
    line, length = longest_line(data)
    if length > max_line:
        raise TextFileError(source, f"line of {length:,} bytes, longer than the {max_line:,} allowed", line)
    return text


def read_text(path: str | os.PathLike, max_bytes: int, what: str = "file", max_line: int = MAX_LINE_CHARS) -> str:
    """The text of a regular file of at most ``max_bytes`` bytes, strict UTF-8, no line longer than
    ``max_line`` bytes (see the module docstring)."""
    check_regular(path, max_bytes, what)
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)       # the file may have grown since the stat
    if len(data) > max_bytes:
        raise TextFileError(path, f"more than the {_size_text(max_bytes)} a {what} may have")
    return decode_text(data, path, max_line)
