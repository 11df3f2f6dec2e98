"""An append-only CSV of result rows that a sweep can resume from.

Mechanism: the header and then every row are written as one whole line with a single
``os.write`` on a descriptor opened with ``O_APPEND``, followed by ``os.fsync`` — a row is either
entirely in the file or, after a crash in the middle of that write, a last line without its
newline. Opening the file takes an exclusive ``flock`` on it for as long as the log is open — a
second sweep on the same file is refused at once instead of running every point again and
writing every row twice — then checks, before changing anything, that the file is this sweep's
table (its first line is the header; anything else is refused and left as it is, unless
``force``), and only then cuts off a partial last line (and says so), reads the rows and keys
them by their key columns; a later row with the same key supersedes an earlier one (a point run
again). The target follows :mod:`teg.fileio`'s rule: a device or pipe is refused (a table is read
back to resume), links are followed but never forced into another format. The Parquet copy
(optional extra ``pyarrow``) holds the latest row of every key, typed, and is written through
:func:`teg.fileio.atomic_file` (a Parquet file teg did not write is never replaced).
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from teg import TegError, fileio


class RowLogError(TegError):
    """An output file that is not this sweep's table, or that another sweep is writing."""


def csv_line(values) -> bytes:
    """One CSV line (``\\n`` ended) of ``values``; None becomes an empty cell."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(["" if v is None else v for v in values])
    return buf.getvalue().encode("utf-8", "surrogateescape")    # a path that is not UTF-8 keeps its bytes


class RowLog:
    """Rows of ``columns`` appended to ``path``; ``rows`` maps each key (the ``key_columns``' text)
    to the latest row read or written. ``force``: start a new table in place of a file that is
    not this sweep's."""

    def __init__(self, path: str | os.PathLike, columns: tuple[str, ...], key_columns: tuple[str, ...],
                 force: bool = False):
        self.path = Path(path)
        self.columns = tuple(columns)
        self.key_columns = tuple(key_columns)
        self.force = force
        self.rows: dict[tuple[str, ...], dict[str, str]] = {}
        self.dropped = 0          # bytes of a partial last line cut off when opening
        self._fd: int | None = None

    def key(self, row: dict) -> tuple[str, ...]:
        return tuple("" if row.get(c) is None else str(row[c]) for c in self.key_columns)

    @property
    def header(self) -> bytes:
        return csv_line(self.columns)

    def owned(self, path: Path) -> bool:
        """This sweep's table: its first line is the header (an empty file holds nothing to lose)."""
        head = fileio.file_head(path, len(self.header))
        try:
            return head == self.header or os.stat(path).st_size == 0
        except OSError:
            return False

    def _refusal(self, data: bytes) -> RowLogError:
        first = data.split(b"\n", 1)[0][:400].decode("utf-8", errors="replace")
        try:
            cells = next(csv.reader([first]))
        except (csv.Error, StopIteration):
            cells = [first]
        return RowLogError(f"{self.path}:1: its columns ({', '.join(cells[:6])}, …) are not this sweep's "
                           f"({', '.join(self.columns[:6])}, …); nothing in it was changed: write to another "
                           "file (--force starts a new table in its place)")

    def open(self) -> "RowLog":
        """Lock the file, check it is this table (module docstring), cut a partial last line, read
        the rows; write the header into a new file."""
        kind = fileio.stream_kind(self.path)
        if kind is not None:
            raise RowLogError(f"{self.path}: is a {kind}; a results table is read back to resume a sweep: give a "
                              "regular file")
        if (self.path.is_file() and not self.force and not self.owned(self.path)):
            raise self._refusal(fileio.file_head(self.path, 4096))
        target = fileio.prepare(self.path, self.owned, self.force, folder=False)
        fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            if fileio.flock(fd, exclusive=True, wait=False) is False:
                raise RowLogError(f"{self.path}: another teg sweep is writing this table; run this one when it has "
                                  "finished (it resumes from what is there) or write to another file")
            data = self._read_all(fd)
            if data and not data.startswith(self.header):
                if not self.force:
                    raise self._refusal(data)
                os.ftruncate(fd, 0)
                data = b""
            end = data.rfind(b"\n") + 1
            if end < len(data):
                self.dropped = len(data) - end
                os.ftruncate(fd, end)
                data = data[:end]
            self._parse(data)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        if os.fstat(fd).st_size == 0:
            self._write(self.header)
        return self

    @staticmethod
    def _read_all(fd: int) -> bytes:
        chunks, off = [], 0
        while True:
            block = os.pread(fd, 1 << 22, off)
            if not block:
                return b"".join(chunks)
            chunks.append(block)
            off += len(block)

    def _parse(self, data: bytes) -> None:
        try:
            lines = list(csv.reader(io.StringIO(data.decode("utf-8", "surrogateescape"))))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise RowLogError(f"{self.path}: not a CSV results table ({exc})") from None
        for n, cells in enumerate(lines[1:], 2):
            if len(cells) != len(self.columns):
                raise RowLogError(f"{self.path}:{n}: {len(cells)} cells, expected {len(self.columns)}")
            row = dict(zip(self.columns, cells))
            self.rows[self.key(row)] = row

    def _write(self, line: bytes) -> None:
        try:
            n = os.write(self._fd, line)
        except OSError as exc:
            if fileio.is_write_failure(exc):
                raise RowLogError(f"{self.path}: cannot write: {exc.strerror} (the rows before are kept)") from None
            raise
        if n != len(line):            # a short write on a regular file: out of space
            raise RowLogError(f"{self.path}: short write ({n} of {len(line)} bytes); disk full?")
        os.fsync(self._fd)

    def append(self, row: dict) -> None:
        """Write ``row`` (a dict over ``columns``) as one line, durably."""
        self._write(csv_line([row.get(c) for c in self.columns]))
        self.rows[self.key(row)] = {c: "" if row.get(c) is None else str(row.get(c)) for c in self.columns}

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RowLog":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()


PARQUET_MARK = b"written_by"        # schema metadata key of a Parquet table teg wrote (value b"teg")


def parquet_owned(path: Path) -> bool:
    """A Parquet file teg wrote: its schema metadata says so (needs pyarrow)."""
    try:
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
    except Exception:                 # noqa: BLE001 — unreadable or not Parquet: not ours
        return False
    return meta.get(PARQUET_MARK) == b"teg"


def check_parquet_target(path: str | os.PathLike, force: bool = False) -> None:
    """Refuse before a sweep runs a Parquet path teg may not write (:func:`teg.fileio.prepare`)."""
    fileio.prepare(path, parquet_owned, force, folder=False)


def write_parquet(rows: list[dict[str, str]], columns: tuple[str, ...], path: str | os.PathLike,
                  ints: tuple[str, ...] = (), floats: tuple[str, ...] = (), force: bool = False) -> Path:
    """``rows`` (CSV text cells) as a Parquet table, ``ints``/``floats`` columns typed (empty → null),
    written through :func:`teg.fileio.atomic_file`. Needs pyarrow (ImportError otherwise)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def typed(c, v):
        if v == "":
            return None
        if c in ints or c in floats:
            return int(v) if c in ints else float(v)
        return v.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")    # Parquet text is UTF-8

    table = pa.table({c: pa.array([typed(c, r[c]) for r in rows],
                                  type=pa.int64() if c in ints else pa.float64() if c in floats else pa.string())
                      for c in columns})
    table = table.replace_schema_metadata({PARQUET_MARK: b"teg"})
    out = Path(path)
    with fileio.atomic_file(out, parquet_owned, force) as fh:
        pq.write_table(table, fh)
    return out
