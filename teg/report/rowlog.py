"""An append-only CSV of result rows that a sweep can resume from.

Mechanism: the header and then every row are written as one whole line with a single
``os.write`` on a descriptor opened with ``O_APPEND``, followed by ``os.fsync`` — a row is either
entirely in the file or, after a crash in the middle of that write, a last line without its
newline. Opening the file again cuts such a partial last line off (and says so), reads the rows
that are there, and keys them by their key columns; a later row with the same key supersedes an
earlier one (a point run again). The Parquet copy (optional extra ``pyarrow``) holds the latest
row of every key, typed, and is written to a temporary file and renamed into place.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from teg import TegError


class RowLogError(TegError):
    """An output file that is not this sweep's table."""


def csv_line(values) -> bytes:
    """One CSV line (``\\n`` ended) of ``values``; None becomes an empty cell."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(["" if v is None else v for v in values])
    return buf.getvalue().encode("utf-8")


class RowLog:
    """Rows of ``columns`` appended to ``path``; ``rows`` maps each key (the ``key_columns``' text)
    to the latest row read or written."""

    def __init__(self, path: str | os.PathLike, columns: tuple[str, ...], key_columns: tuple[str, ...]):
        self.path = Path(path)
        self.columns = tuple(columns)
        self.key_columns = tuple(key_columns)
        self.rows: dict[tuple[str, ...], dict[str, str]] = {}
        self.dropped = 0          # bytes of a partial last line cut off when opening
        self._fd: int | None = None

    def key(self, row: dict) -> tuple[str, ...]:
        return tuple("" if row.get(c) is None else str(row[c]) for c in self.key_columns)

    def open(self) -> "RowLog":
        """Read what is there (cutting a partial last line), write the header into a new file."""
        if self.path.exists() and self.path.stat().st_size:
            self._read()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size == 0:
            self._write(csv_line(self.columns))
        return self

    def _read(self) -> None:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            self.dropped = len(data) - end
            os.truncate(self.path, end)
            data = data[:end]
        try:
            lines = list(csv.reader(io.StringIO(data.decode("utf-8"))))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise RowLogError(f"{self.path}: not a CSV results table ({exc})") from None
        if not lines:
            return
        if tuple(lines[0]) != self.columns:
            raise RowLogError(f"{self.path}:1: its columns ({', '.join(lines[0][:6])}, …) are not this sweep's "
                              f"({', '.join(self.columns[:6])}, …); write to another file")
        for n, cells in enumerate(lines[1:], 2):
            if len(cells) != len(self.columns):
                raise RowLogError(f"{self.path}:{n}: {len(cells)} cells, expected {len(self.columns)}")
            row = dict(zip(self.columns, cells))
            self.rows[self.key(row)] = row

    def _write(self, line: bytes) -> None:
        n = os.write(self._fd, line)
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


def write_parquet(rows: list[dict[str, str]], columns: tuple[str, ...], path: str | os.PathLike,
                  ints: tuple[str, ...] = (), floats: tuple[str, ...] = ()) -> Path:
    """``rows`` (CSV text cells) as a Parquet table, ``ints``/``floats`` columns typed (empty → null).
    Needs pyarrow (ImportError otherwise)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def typed(c, v):
        if v == "":
            return None
        return int(v) if c in ints else float(v) if c in floats else v

    table = pa.table({c: pa.array([typed(c, r[c]) for r in rows],
                                  type=pa.int64() if c in ints else pa.float64() if c in floats else pa.string())
                      for c in columns})
    out = Path(path)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    os.replace(tmp, out)
    return out
