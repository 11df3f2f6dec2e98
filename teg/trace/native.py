"""The native trace format: a directory of columns or one ``.npz`` (a zip of the same members).

Layout (docs/formats.md, "Native trace format")::

    OUT/meta.json            {"format": "teg-trace", "version": 3, "source": ..., "memcpy": [...],
                              "kernels": [{"dir": "k0000", "info": {...KernelInfo}, "opcodes": [...],
                                           "rows": N, "warps": W, "blocks": B, "addresses": M,
                                           "codec": "frames", ...}]}
    OUT/k0000/columns.frames   a compact kernel (``"codec": "frames"``): every column in zlib frames
                             (:mod:`teg.trace.codec`: the addresses as base + stride, base +
                             32-bit deltas, or whole lanes), ``extras`` as ``x_<name>.npy``
    OUT/k0000/<column>.npy   a kernel without ``codec`` (version 1, or a trace-cache entry): one
                             file per KernelTrace column (``extras`` as ``x_<name>.npy``),
                             memory-mapped on load

Versions 1 (every column a ``.npy``) and 2 (frames without runs or narrowed columns) are read as before. Compact columns are decoded once, frame by
frame, on load: into memory while a trace's decoded columns take at most :data:`DECODE_IN_MEMORY`
bytes, the kernels past that into ``.npy`` files in the trace cache (:class:`teg.trace.cache.Spill`, keyed
by the trace's content, reused by the next load) that are memory-mapped, so memory stays bounded
by one frame however long the trace.

Columns are written by appending raw little-endian data behind a fixed 128-byte ``.npy`` header
that is rewritten with the final shape when the column is closed, or frame by frame, so a converter
can stream rows without holding them. A whole output is first written under a temporary name and
renamed into place when complete (nothing is ever left half written under the final name).
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
import zlib
from dataclasses import asdict
from pathlib import Path

import numpy as np

from teg import fileio
from teg.trace import checks, codec
from teg.trace.errors import TraceFormatError
from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC, KernelInfo, KernelTrace, Trace
from teg.trace.npyread import ColumnError, map_member, map_npy

FORMAT_NAME = "teg-trace"
FORMAT_VERSION = 3             # 3: frames may hold runs and narrowed columns; 2: compact kernels ("codec": "frames");
                               # 1: every column a .npy
HEADER_BYTES = 128
CODEC = "frames"
FRAMES_FILE = "columns.frames"
DECODE_IN_MEMORY = 1 << 26     # decoded bytes of a trace held in memory (64 MB); the kernels past it: spilled to files

# column name → (dtype, trailing shape)
COLUMNS: dict[str, tuple[str, tuple[int, ...]]] = {
    "warp": ("<i4", ()),
    "block": ("<i4", ()),
    "pc": ("<i8", ()),
    "opcode": ("<i4", ()),
    "mask": ("<u4", ()),
    "dst": ("<i2", (MAX_TRACE_DST,)),
    "src": ("<i2", (MAX_TRACE_SRC,)),
    "mem_width": ("<i2", ()),
    "imm": ("<i8", ()),
    "addr_start": ("<i8", ()),
    "addresses": ("<u8", ()),
    "warp_start": ("<i8", ()),
    "warp_block": ("<i4", ()),
    "block_xyz": ("<i4", (3,)),
    "line_num": ("<i4", ()),
}
REQUIRED = tuple(c for c in COLUMNS if c != "line_num")
ROW_COLUMNS = ("warp", "block", "pc", "opcode", "mask", "dst", "src", "mem_width", "imm", "line_num")
STATIC_COLUMNS = ("opcode", "dst", "src", "mem_width", "imm", "line_num")    # stored per pc when they follow it


def npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """A version-1.0 ``.npy`` header padded to exactly ``HEADER_BYTES`` bytes (NEP 1 layout)."""
    d = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": tuple(shape)}
    text = repr(d).encode("latin1")
    room = HEADER_BYTES - 10 - 1
    if len(text) > room:
        raise ValueError(f"npy header too long for shape {shape}")
    text = text + b" " * (room - len(text)) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text


class ColumnWriter:
    """Append rows of one column to a ``.npy`` file; ``close()`` writes the final header."""

    def __init__(self, path: Path, dtype: str, inner: tuple[int, ...] = ()):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.inner = tuple(inner)
        self.rows = 0
        self._fh = open(self.path, "wb")
        self._fh.write(b"\0" * HEADER_BYTES)

    def append(self, arr: np.ndarray) -> None:
        a = np.ascontiguousarray(arr, dtype=self.dtype)
        if a.shape[1:] != self.inner:
            raise ValueError(f"{self.path.name}: rows of shape {a.shape[1:]}, expected {self.inner}")
        self._fh.write(a.data)
        self.rows += a.shape[0]

    def close(self) -> None:
        self._fh.seek(0)
        self._fh.write(npy_header(self.dtype, (self.rows, *self.inner)))
        self._fh.close()


class FrameWriter:
    """Writes a compact kernel's ``columns.frames`` (:mod:`teg.trace.codec`): rows frames of
    exactly :data:`~teg.trace.codec.FRAME_ROWS` rows (the last one shorter) — batches of any size
    come in, rows short of a frame wait (at most one frame's worth) for the next batch — then the
    warps and blocks frames."""

    def __init__(self, dirpath: Path, names: list[str]):
        self.names = names
        self.static_by_pc = False     # the writer of the rows guarantees the static columns are functions of the pc
        self.by_pc = None             # (pcs ascending, {static column: value per pc}): rows come without those columns
        self.fh = open(dirpath / FRAMES_FILE, "wb")
        self.pending: list[tuple[dict, np.ndarray, np.ndarray]] = []
        self.pending_rows = 0
        self.rows = 0

    def append(self, rows: dict[str, np.ndarray], n_addr: np.ndarray, addresses) -> None:
        """Rows with ``n_addr`` addresses each: ``addresses`` in row order, or where they lie
        (:class:`teg.trace.codec.Gathered`: read by the encoder there, copied only for rows that
        wait for the next batch)."""
        n_addr = np.asarray(n_addr, np.int64)
        n = int(n_addr.shape[0])
        if isinstance(addresses, codec.Gathered):
            piece = addresses.rows
        else:
            starts = np.zeros(n + 1, np.int64)
            np.cumsum(n_addr, out=starts[1:])

            def piece(a: int, e: int):
                return addresses[starts[a]:starts[e]]
        at = 0
        if self.pending_rows:
            take = min(n, codec.FRAME_ROWS - self.pending_rows)
            self._hold(rows, n_addr, piece, 0, take)
            at = take
            if self.pending_rows == codec.FRAME_ROWS:
                self._flush()
        while n - at >= codec.FRAME_ROWS:
            e = at + codec.FRAME_ROWS
            self._frame({k: v[at:e] for k, v in rows.items()}, n_addr[at:e], piece(at, e))
            at = e
        if at < n:
            self._hold(rows, n_addr, piece, at, n)

    def _hold(self, rows, n_addr, piece, a: int, e: int) -> None:
        if e > a:
            held = piece(a, e)
            held = held.materialize(n_addr[a:e]) if isinstance(held, codec.Gathered) else np.array(held)
            self.pending.append(({k: np.array(v[a:e]) for k, v in rows.items()}, np.array(n_addr[a:e]), held))
            self.pending_rows += e - a

    def _flush(self) -> None:
        if not self.pending:
            return
        p = self.pending
        self._frame({k: np.concatenate([x[0][k] for x in p]) for k in p[0][0]},
                    np.concatenate([x[1] for x in p]), np.concatenate([x[2] for x in p]))
        self.pending, self.pending_rows = [], 0

    def _frame(self, rows: dict[str, np.ndarray], n_addr: np.ndarray, addresses: np.ndarray) -> None:
        n = int(n_addr.shape[0])
        given = self.by_pc is None
        cols = [np.asarray(rows[name], COLUMNS[name][0]).reshape(n, -1) if given or name not in STATIC_COLUMNS
                else None for name in self.names]
        static = [i for i, name in enumerate(self.names) if name in STATIC_COLUMNS]
        keyed = [False] * len(cols)
        pc = cols[self.names.index("pc")].reshape(-1)
        if not given:                        # the static columns per distinct pc of the frame, from the promise
            pcs, table = self.by_pc
            seen = codec.distinct_keys(pc) if n else np.zeros(0, np.int64)
            at = np.searchsorted(pcs, seen)
            if at.shape[0] and (int(at[-1]) >= pcs.shape[0] or bool(np.any(pcs[at] != seen))):
                raise ValueError("rows at a pc the promised static columns do not hold")
            tables = [table[self.names[i]][at].reshape(at.shape[0], -1) for i in static]
        elif self.static_by_pc and n:        # no need to check each row: one item per distinct pc
            first, _ = codec.key_index(pc)
            tables = [cols[i][first] for i in static]
        else:
            tables = codec.keyed_tables(pc, [cols[i] for i in static])
        for i, t in zip(static, tables):
            if t is not None:
                cols[i], keyed[i] = t, True
        flags = [0] * len(cols)
        for i in range(len(cols)):
            if not keyed[i]:
                cols[i], flags[i] = codec.pack_column(cols[i])
        addr = codec.encode_addresses(n_addr, addresses)
        self.fh.write(codec.encode_frame(codec.ROWS, n, cols + addr, (True,) * len(cols) + codec.ADDRESS_SHUFFLE,
                                         tuple(keyed) + (False,) * len(addr), tuple(flags) + (0,) * len(addr)))
        self.rows += n

    def close(self, warp_start: np.ndarray, warp_block: np.ndarray, block_xyz: np.ndarray) -> None:
        self._flush()
        step = codec.FRAME_ROWS
        ends = np.asarray(warp_start, np.int64)[1:]
        for a in range(0, ends.shape[0], step):
            self.fh.write(codec.encode_frame(codec.WARPS, min(step, ends.shape[0] - a),
                                             [ends[a:a + step], np.asarray(warp_block[a:a + step], np.int32)]))
        for a in range(0, block_xyz.shape[0], step):
            self.fh.write(codec.encode_frame(codec.BLOCKS, min(step, block_xyz.shape[0] - a),
                                             [np.asarray(block_xyz[a:a + step], np.int32).reshape(-1, 3)]))
        self.fh.close()

    def abort(self) -> None:
        self.fh.close()


class KernelWriter:
    """Streams the columns of one kernel into ``dirpath`` (created): compact (frames, the default)
    or every column a ``.npy`` (``compact=False``: the trace cache's entries, mapped without decoding)."""

    def __init__(self, dirpath: Path, with_line_num: bool = False, compact: bool = True):
        self.dir = Path(dirpath)
        self.dir.mkdir(parents=True)
        names = [c for c in COLUMNS if c not in ("warp_start", "warp_block", "block_xyz")]
        if not with_line_num:
            names.remove("line_num")
        self.with_line_num = with_line_num
        self.frames = None
        self.cols = {}
        if compact:
            self.frames = FrameWriter(self.dir, [n for n in ROW_COLUMNS if n in names])
        else:
            self.cols = {n: ColumnWriter(self.dir / f"{n}.npy", *COLUMNS[n]) for n in names}
            self.cols["addr_start"].append(np.zeros(1, np.int64))
        self.n_addr = 0

    def promise_static_by_pc(self, pcs: np.ndarray | None = None, tables: dict[str, np.ndarray] | None = None) -> bool:
        """The caller guarantees that every row's static columns (:data:`STATIC_COLUMNS`) are a
        function of its pc (an emulator whose instructions have distinct addresses): the compact
        frames then store them keyed without comparing each row (what they store is the same).
        Given that function — ``pcs`` ascending and ``tables``, each static column's value at
        each of them — rows come without those columns; returns whether the writer takes them
        so (compact frames only; every pc a row holds must be one of ``pcs``)."""
        if self.frames is None:
            return False
        self.frames.static_by_pc = True
        if pcs is None or tables is None:
            return False
        pcs = np.asarray(pcs, np.int64)
        if pcs.shape[0] > 1 and bool(np.any(pcs[1:] <= pcs[:-1])):
            raise ValueError("promised static columns: the pcs are not distinct and ascending")
        names = [n for n in self.frames.names if n in STATIC_COLUMNS]
        if not set(names) <= set(tables):          # (a writer with line numbers the tables lack: rows stay whole)
            return False
        if any(len(tables[n]) != pcs.shape[0] for n in names):
            raise ValueError(f"promised static columns: tables of other lengths than the {pcs.shape[0]} pcs")
        self.frames.by_pc = (pcs, {n: np.asarray(tables[n], COLUMNS[n][0]) for n in names})
        return True

    def append_rows(self, rows: dict[str, np.ndarray], n_addr: np.ndarray, addresses) -> None:
        """Append a batch of rows; ``n_addr`` holds the address count of each row (without the
        static columns after :meth:`promise_static_by_pc` with their tables); ``addresses`` in
        row order or where they lie (:class:`teg.trace.codec.Gathered`)."""
        if isinstance(addresses, codec.Gathered) and self.frames is None:
            addresses = addresses.materialize(n_addr)
        if self.frames is not None:
            missing = [n for n in self.frames.names if n not in rows
                       and not (self.frames.by_pc is not None and n in STATIC_COLUMNS)]
            if missing:
                raise ValueError(f"rows without column(s) {', '.join(missing)}")
            self.frames.append(rows, n_addr, addresses)
        else:
            for name, arr in rows.items():
                self.cols[name].append(arr)
            self.cols["addr_start"].append(self.n_addr + np.cumsum(n_addr, dtype=np.int64))
            self.cols["addresses"].append(addresses)
        self.n_addr += int(np.sum(n_addr)) if isinstance(addresses, codec.Gathered) else int(addresses.shape[0])

    def abort(self) -> None:
        """Close the columns and remove the kernel's folder (a kernel that did not finish)."""
        for c in self.cols.values():
            c._fh.close()
        if self.frames is not None:
            self.frames.abort()
        shutil.rmtree(self.dir, ignore_errors=True)

    def finish(self, info: KernelInfo, opcodes: list[str], warp_start: np.ndarray, warp_block: np.ndarray,
               block_xyz: np.ndarray, extras: dict[str, np.ndarray] | None = None) -> dict:
        """Close the columns, write the per-warp/per-block arrays; return the kernel's meta entry."""
        for c in self.cols.values():
            c.close()
        rows = self.frames.rows + self.frames.pending_rows if self.frames is not None else self.cols["pc"].rows
        if int(warp_start[-1]) != rows or int(warp_start[0]) != 0:
            raise ValueError(f"warp_start runs from {int(warp_start[0])} to {int(warp_start[-1])}, but {rows} rows "
                             "were written")
        if warp_block.shape[0] != warp_start.shape[0] - 1:
            raise ValueError(f"{warp_block.shape[0]} warp blocks for {warp_start.shape[0] - 1} warps")
        if self.frames is not None:
            self.frames.close(warp_start, warp_block, block_xyz)
        else:
            for name, arr in (("warp_start", warp_start), ("warp_block", warp_block), ("block_xyz", block_xyz)):
                w = ColumnWriter(self.dir / f"{name}.npy", *COLUMNS[name])
                w.append(arr)
                w.close()
        extra_names = []
        for name, arr in (extras or {}).items():
            a = np.ascontiguousarray(arr)
            np.save(self.dir / f"x_{name}.npy", a)
            extra_names.append(name)
        entry = {"dir": self.dir.name, "info": info_to_json(info), "opcodes": list(opcodes), "rows": rows,
                 "warps": int(warp_start.shape[0] - 1), "blocks": int(block_xyz.shape[0]),
                 "addresses": self.n_addr, "line_num": self.with_line_num, "extras": extra_names}
        if self.frames is not None:
            entry["codec"] = CODEC
        return entry


def info_to_json(info: KernelInfo) -> dict:
    d = asdict(info)
    d["grid"] = list(info.grid)
    d["block"] = list(info.block)
    return d


class TraceWriter:
    """Writes a native trace under a temporary name; ``commit()`` renames it to ``path``.

    ``path`` ending in ``.npz`` gives a single zip file of the same members; anything else a
    directory. Use as a context manager: an exception discards the partial output. The output
    replaces only an earlier teg trace (or ``force``: any file), through :mod:`teg.fileio`.
    ``publish``: a trace-cache entry, renamed into place only if no other process put one there
    first (:func:`teg.fileio.publish_folder`; the entry there is kept and this one dropped).
    ``compact`` (default: all but cache entries): kernels in frames (:mod:`teg.trace.codec`)."""

    def __init__(self, path: str | os.PathLike, source: str = "", memcpy: list[tuple[int, int]] | None = None,
                 force: bool = False, publish: bool = False, compact: bool | None = None):
        self.compact = not publish if compact is None else compact     # a cache entry: mapped, not decoded
        self.npz = Path(path).suffix == ".npz" and not publish
        self.publish = publish
        self.path = Path(path) if publish else fileio.prepare(path, replaceable, force, folder=not self.npz)
        self.force = force
        self.tmp_folder = fileio.TempFolder(self.path)
        self.tmp = self.tmp_folder.path
        self.meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "source": source,
                     "memcpy": [list(m) for m in (memcpy or [])], "kernels": []}

    def kernel(self, with_line_num: bool = False) -> KernelWriter:
        return KernelWriter(self.tmp / f"k{len(self.meta['kernels']):04d}", with_line_num, self.compact)

    def add(self, entry: dict) -> None:
        self.meta["kernels"].append(entry)

    def commit(self) -> Path:
        (self.tmp / "meta.json").write_text(json.dumps(self.meta, indent=1))
        if self.publish:
            if not fileio.publish_folder(self.tmp, self.path):
                self.tmp_folder.discard()       # another process published the same entry first
            self.tmp_folder.release()
        elif self.npz:
            with fileio.atomic_file(self.path, replaceable, self.force) as fh:
                with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                    for f in sorted(self.tmp.rglob("*")):
                        if f.is_file():                 # stored (mapped, or frames already compressed);
                            zf.write(f, f.relative_to(self.tmp).as_posix(),   # the metadata deflated
                                     zipfile.ZIP_DEFLATED if f.name == "meta.json" else None)
            self.tmp_folder.discard()
        else:
            fileio.check_target(self.path, replaceable, self.force, folder=True)
            fileio.replace_folder(self.tmp, self.path)
            self.tmp_folder.release()
        return self.path

    def abort(self) -> None:
        self.tmp_folder.discard()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
            if fileio.is_write_failure(exc):
                raise fileio.write_failure(exc, self.path) from None
        return False


def written_by_teg(path: Path) -> bool:
    """Whether ``path`` is a native trace (folder or ``.npz``) teg wrote: its ``meta.json`` (file or
    zip member) names the ``teg-trace`` format. A user's own numpy archive has no such member."""
    try:
        if path.is_dir():
            meta = json.loads((path / "meta.json").read_text())
        elif path.is_file() and zipfile.is_zipfile(path):      # a device (/dev/zero) would be read forever
            with zipfile.ZipFile(path) as zf:
                meta = json.loads(zf.read("meta.json"))
        else:
            return False
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT_NAME


def replaceable(path: Path) -> bool:
    """An output teg wrote, which a new trace may replace: a native trace, or a folder with teg's
    output marker (an Accel-Sim folder teg wrote)."""
    return written_by_teg(path) or (path.is_dir() and fileio.folder_marked(path))


def save(trace: Trace, path: str | os.PathLike, force: bool = False, compact: bool = True) -> Path:
    """Write ``trace`` in the native format (directory, or ``.npz`` when ``path`` ends so):
    compact (frames), or every column a ``.npy`` (``compact=False``)."""
    with TraceWriter(path, trace.source, trace.memcpy, force, compact=compact) as tw:
        for kt in trace.kernels:
            kw = tw.kernel(with_line_num=kt.line_num is not None)
            rows = {n: getattr(kt, n) for n in ("warp", "block", "pc", "opcode", "mask", "dst", "src",
                                                 "mem_width", "imm")}
            if kt.line_num is not None:
                rows["line_num"] = kt.line_num
            kw.append_rows(rows, np.diff(np.asarray(kt.addr_start)), np.asarray(kt.addresses))
            tw.add(kw.finish(kt.info, kt.opcodes, np.asarray(kt.warp_start), np.asarray(kt.warp_block),
                             np.asarray(kt.block_xyz), kt.extras))
        return tw.commit()


# ---- loading ----------------------------------------------------------------------------------

def is_native(path: str | os.PathLike) -> bool:
    p = Path(path)
    return (p.is_dir() and (p / "meta.json").is_file()) or (p.is_file() and p.suffix == ".npz")


def _check_meta(meta, where: str) -> dict:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise TraceFormatError(f"not a teg trace (meta has no \"format\": \"{FORMAT_NAME}\")", where)
    v = meta.get("version")
    if not isinstance(v, int) or v < 1 or v > FORMAT_VERSION:
        raise TraceFormatError(f"teg trace format version {v!r} not supported (this teg reads ≤ {FORMAT_VERSION})", where)
    if not isinstance(meta.get("kernels"), list):
        raise TraceFormatError("meta has no kernel list", where)
    return meta


MAX_META_BYTES = 1 << 28       # meta.json: launch facts and opcode tables, never near this


def _read_meta(data: bytes, where: str) -> dict:
    try:
        if len(data) > MAX_META_BYTES:
            raise ValueError(f"{len(data):,} bytes of metadata")
        meta = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise TraceFormatError(f"corrupted trace metadata ({exc.__class__.__name__}: {exc})", where) from None
    return _check_meta(meta, where)


def read_meta(path: str | os.PathLike) -> tuple[dict, list[KernelInfo], list[tuple[int, int]]]:
    """The checked metadata of a native trace — the document, each kernel's launch facts, the
    copies — without mapping a column (listing an application's kernels reads no more)."""
    p = Path(path)
    if p.is_dir():
        mf = p / "meta.json"
        try:
            raw = mf.read_bytes()
        except OSError as exc:
            raise TraceFormatError(f"corrupted trace metadata ({exc.__class__.__name__}: {exc})", str(mf)) from None
        meta = _read_meta(raw, str(mf))
    else:
        try:
            with zipfile.ZipFile(p) as zf:
                raw = zf.read("meta.json")
        except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, ValueError) as exc:
            raise TraceFormatError(f"not a readable teg trace .npz ({exc.__class__.__name__}: {exc})", str(p)) from None
        meta = _read_meta(raw, str(p))
    infos = []
    for i, k in enumerate(meta["kernels"]):
        where = f"{p}/{k.get('dir') if isinstance(k, dict) else f'kernel #{i}'}"
        checks.kernel_entry(k, where)
        infos.append(checks.kernel_info(k["info"], where))
    return meta, infos, checks.memcpy_list(meta, str(p))


def load_native(path: str | os.PathLike) -> Trace:
    """Load a native trace: a directory or a ``.npz``, every ``.npy`` column memory-mapped
    (:mod:`teg.trace.npyread`) and every compact kernel decoded frame by frame (module docstring:
    memory stays flat in the trace length), the metadata and columns validated
    (:mod:`teg.trace.checks`)."""
    from teg.trace.cache import Spill

    p = Path(path)
    zf = None                           # the open archive of a .npz (closed once the columns are mapped)
    spill = Spill(p)
    if p.is_dir():
        mf = p / "meta.json"
        try:
            raw = mf.read_bytes()
        except OSError as exc:
            raise TraceFormatError(f"corrupted trace metadata ({exc.__class__.__name__}: {exc})", str(mf)) from None
        meta = _read_meta(raw, str(mf))

        def get(kdir: str, name: str) -> np.ndarray:
            f = p / kdir / f"{name}.npy"
            try:
                return map_npy(f)
            except ColumnError as exc:
                raise TraceFormatError(f"corrupted column ({exc.problem})", str(f)) from None

        def open_frames(kdir: str):
            return open(p / kdir / FRAMES_FILE, "rb")
    else:
        try:
            zf = zipfile.ZipFile(p)
            raw = zf.read("meta.json")
        except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, ValueError) as exc:
            raise TraceFormatError(f"not a readable teg trace .npz ({exc.__class__.__name__}: {exc})", str(p)) from None
        meta = _read_meta(raw, str(p))

        def get(kdir: str, name: str) -> np.ndarray:
            try:
                return map_member(p, zf, f"{kdir}/{name}.npy", spill.folder)
            except ColumnError as exc:
                raise TraceFormatError(f"corrupted column {kdir}/{name} ({exc.problem})", str(p)) from None

        def open_frames(kdir: str):
            return zf.open(f"{kdir}/{FRAMES_FILE}")

    budget = [DECODE_IN_MEMORY]
    try:
        kernels = [_load_kernel(k, get, f"{p}/{k.get('dir') if isinstance(k, dict) else f'kernel #{i}'}",
                                Decoder(open_frames, spill.folder, budget))
                   for i, k in enumerate(meta["kernels"])]
    finally:
        if zf is not None:
            zf.close()
        spill.close()
    source = meta.get("source", "")
    return Trace(kernels=kernels, memcpy=checks.memcpy_list(meta, str(p)),
                 source=(source if isinstance(source, str) else "") or str(p))


def load_kernel_folder(folder: Path, entry: dict) -> KernelTrace:
    """The kernel ``entry`` (its meta entry, as :meth:`KernelWriter.finish` returned it) written
    under ``folder`` (a trace being written: its kernel folder is ``folder / entry["dir"]``)."""
    from teg.trace.cache import Spill

    spill = Spill(Path(folder))

    def get(kdir: str, name: str) -> np.ndarray:
        return map_npy(folder / kdir / f"{name}.npy")

    try:
        return _load_kernel(entry, get, str(folder),
                            Decoder(lambda kdir: open(folder / kdir / FRAMES_FILE, "rb"), spill.folder,
                                    [DECODE_IN_MEMORY]))
    finally:
        spill.close()


class _Sink:
    """Where one decoded column goes: an array of ``rows`` rows in memory (``path`` None), or a
    ``.npy`` file at ``path`` written under a temporary name and memory-mapped when complete."""

    def __init__(self, name: str, rows: int, path: Path | None):
        self.name, self.rows, self.path, self.at = name, rows, path, 0
        dtype, inner = COLUMNS[name]
        if path is None:
            self.arr = np.empty((rows, *inner), dtype)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = fileio.partial_path(path)
            self.writer = ColumnWriter(self.tmp, dtype, inner)

    def append(self, a: np.ndarray) -> None:
        n = a.shape[0]
        if self.at + n > self.rows:
            raise codec.FrameError(f"more than the {self.rows:,} rows the metadata gives")
        if self.path is None:
            self.arr[self.at:self.at + n] = a.reshape(self.arr[self.at:self.at + n].shape)
        else:
            self.writer.append(a.reshape(n, *COLUMNS[self.name][1]))
        self.at += n

    def result(self) -> np.ndarray:
        if self.at != self.rows:
            raise codec.FrameError(f"{self.at:,} rows, the metadata gives {self.rows:,}")
        if self.path is None:
            self.arr.flags.writeable = False     # as a mapped column: one numba type (read-only) for both
            return self.arr
        self.writer.close()
        os.replace(self.tmp, self.path)
        return map_npy(self.path)

    def discard(self) -> None:
        if self.path is not None:
            self.writer._fh.close()
            self.tmp.unlink(missing_ok=True)


class Decoder:
    """Decodes compact kernels (:mod:`teg.trace.codec`): ``open_frames(dir)`` opens a kernel's
    ``columns.frames``, ``spill()`` gives the folder for decoded columns once the ``budget`` (a
    one-item list of bytes, shared by a trace's kernels) of decoding into memory is spent."""

    def __init__(self, open_frames, spill, budget: list[int]):
        self.open_frames, self.spill, self.budget = open_frames, spill, budget

    def columns(self, k: dict, where: str) -> dict[str, np.ndarray]:
        """Every column of the compact kernel ``k`` (its meta entry), decoded frame by frame."""
        kdir = k["dir"]
        rows, n_addr, warps, blocks = (k.get(x) for x in ("rows", "addresses", "warps", "blocks"))
        if None in (rows, n_addr, warps, blocks):
            raise TraceFormatError("compact kernel without \"rows\", \"addresses\", \"warps\" and \"blocks\" "
                                   "counts", where)
        names = [n for n in ROW_COLUMNS if n != "line_num" or k.get("line_num")]
        counts = {**{n: rows for n in names}, "addr_start": rows + 1, "addresses": n_addr, "warp_start": warps + 1,
                  "warp_block": warps, "block_xyz": blocks}
        size = sum(c * np.dtype(COLUMNS[n][0]).itemsize * int(np.prod(COLUMNS[n][1], dtype=np.int64))
                   for n, c in counts.items())
        folder = None
        if size > self.budget[0]:
            folder = Path(self.spill()) / kdir
            if all((folder / f"{n}.npy").is_file() for n in counts):
                try:
                    return {n: map_npy(folder / f"{n}.npy") for n in counts}
                except ColumnError:
                    pass                                    # a damaged spill: decoded again
        else:
            self.budget[0] -= size
        sinks = {}
        try:
            sinks = {n: _Sink(n, c, None if folder is None else folder / f"{n}.npy") for n, c in counts.items()}
            with self.open_frames(kdir) as fh:
                self._read(fh, names, sinks)
            return {n: s.result() for n, s in sinks.items()}
        except (codec.FrameError, OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, ValueError) as exc:
            for s in sinks.values():
                s.discard()
            text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise TraceFormatError(f"corrupted column file {kdir}/{FRAMES_FILE} ({text})", where) from None

    @staticmethod
    def _read(fh, names: list[str], sinks: dict) -> None:
        sinks["addr_start"].append(np.zeros(1, np.int64))
        sinks["warp_start"].append(np.zeros(1, np.int64))
        done = 0
        stage = codec.ROWS
        while (frame := codec.read_frame(fh)) is not None:
            table, n, arrays, flags = frame
            if table < stage:
                raise codec.FrameError("frames out of order (rows after warps or blocks)")
            stage = table
            if table == codec.ROWS:
                if len(arrays) != len(names) + len(codec.ADDRESS_ARRAYS):
                    raise codec.FrameError(f"a rows frame of {len(arrays)} arrays")
                if flags[names.index("pc")] & codec.KEYED:
                    raise codec.FrameError("a keyed pc column")
                cols = [a if f & codec.KEYED else codec.unpack_column(a, f, np.dtype(COLUMNS[name][0]), a.shape[1]
                                                                      - (1 if f & codec.RUNS else 0), n)
                        for name, a, f in zip(names, arrays, flags)]
                pc = _expect(cols[names.index("pc")], "pc", n)
                index = codec.key_index(pc.reshape(-1)) if n and any(f & codec.KEYED for f in flags) else None
                for name, a, f in zip(names, cols, flags):
                    if f & codec.KEYED:
                        if name not in STATIC_COLUMNS or index is None:
                            raise codec.FrameError(f"a keyed {name} column")
                        a = codec.expand_keyed(index, a)
                    sinks[name].append(_expect(a, name, n))
                count, addrs = codec.decode_addresses(n, arrays[len(names):])
                sinks["addr_start"].append(done + np.cumsum(count))
                sinks["addresses"].append(addrs)
                done += int(addrs.shape[0])
            elif table == codec.WARPS:
                if len(arrays) != 2:
                    raise codec.FrameError(f"a warps frame of {len(arrays)} arrays")
                sinks["warp_start"].append(_expect(arrays[0], "warp_start", n))
                sinks["warp_block"].append(_expect(arrays[1], "warp_block", n))
            else:
                if len(arrays) != 1:
                    raise codec.FrameError(f"a blocks frame of {len(arrays)} arrays")
                sinks["block_xyz"].append(_expect(arrays[0], "block_xyz", n))


def _expect(a: np.ndarray, name: str, n: int) -> np.ndarray:
    """``a`` (items x values) when it holds ``n`` items of column ``name``'s type and width."""
    dt, inner = COLUMNS[name]
    width = int(np.prod(inner, dtype=np.int64))
    if a.dtype != np.dtype(dt) or a.shape != (n, width):
        raise codec.FrameError(f"{name} as {a.dtype} x {a.shape}, expected {np.dtype(dt)} x ({n}, {width})")
    return a


def _load_kernel(k: dict, get, where: str, decoder: Decoder | None = None) -> KernelTrace:
    """One kernel of ``meta["kernels"]``, its ``.npy`` columns from ``get(dir, name)`` and its
    compact ones from ``decoder``, checked."""
    checks.kernel_entry(k, where)
    kdir = k["dir"]
    codec_name = k.get("codec")
    if codec_name is None:
        cols = {n: get(kdir, n) for n in REQUIRED}
        line_num = get(kdir, "line_num") if k.get("line_num") else None
    elif codec_name == CODEC and decoder is not None:
        cols = decoder.columns(k, where)
        line_num = cols.pop("line_num", None)
    else:
        raise TraceFormatError(f"kernel \"codec\" {codec_name!r} not supported (this teg reads {CODEC!r})", where)
    extras = {n: get(kdir, f"x_{n}") for n in k.get("extras", [])}
    kt = KernelTrace(info=checks.kernel_info(k["info"], where), opcodes=list(k["opcodes"]), line_num=line_num,
                     extras=extras, **cols)
    checks.column_layout(kt, COLUMNS, where)
    _check_kernel(kt, k, where)
    checks.column_values(kt, where)
    return kt


def _check_kernel(kt: KernelTrace, entry: dict, where: str) -> None:
    """Cheap structural checks (shapes, CSR ends) so a damaged trace fails here, not in the engine."""
    n = kt.num_rows
    for name in ("warp", "block", "opcode", "mask", "dst", "src", "mem_width", "imm"):
        if getattr(kt, name).shape[0] != n:
            raise TraceFormatError(f"column {name} has {getattr(kt, name).shape[0]} rows, pc has {n}", where)
    for name, (dt, inner) in COLUMNS.items():
        a = kt.line_num if name == "line_num" else getattr(kt, name)
        if a is None:
            continue
        if a.dtype != np.dtype(dt) or a.shape[1:] != inner:
            raise TraceFormatError(f"column {name} has dtype {a.dtype} shape {a.shape}, expected {dt} (*, {inner})", where)
    if kt.line_num is not None and kt.line_num.shape[0] != n:
        raise TraceFormatError(f"column line_num has {kt.line_num.shape[0]} rows, pc has {n}", where)
    if n != entry.get("rows", n):
        raise TraceFormatError(f"{n} rows, metadata says {entry.get('rows')}", where)
    if kt.addr_start.shape[0] != n + 1 or int(kt.addr_start[0]) != 0 or int(kt.addr_start[-1]) != kt.addresses.shape[0]:
        raise TraceFormatError("addr_start does not index the addresses column", where)
    if kt.warp_start.shape[0] < 1 or int(kt.warp_start[0]) != 0 or int(kt.warp_start[-1]) != n:
        raise TraceFormatError("warp_start does not cover the rows", where)
    if kt.warp_block.shape[0] != kt.num_warps:
        raise TraceFormatError("warp_block length differs from the warp count", where)
