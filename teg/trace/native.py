"""The native trace format: a directory of ``.npy`` columns (memory-mapped on load) or one ``.npz``.

Layout (docs/formats.md, "Native trace format")::

    OUT/meta.json            {"format": "teg-trace", "version": 1, "source": ..., "memcpy": [...],
                              "kernels": [{"dir": "k0000", "info": {...KernelInfo}, "opcodes": [...],
                                           "rows": N, "warps": W, "blocks": B, "addresses": M,
                                           "columns": [...]}]}
    OUT/k0000/<column>.npy   one file per KernelTrace column (``extras`` as ``x_<name>.npy``)

Columns are written by appending raw little-endian data behind a fixed 128-byte ``.npy`` header
that is rewritten with the final shape when the column is closed, so a converter can stream rows
without holding them. A whole output is first written under a temporary name and renamed into
place when complete (nothing is ever left half written under the final name).
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
from teg.trace import checks
from teg.trace.errors import TraceFormatError
from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC, KernelInfo, KernelTrace, Trace
from teg.trace.npyread import ColumnError, map_member, map_npy

FORMAT_NAME = "teg-trace"
FORMAT_VERSION = 1
HEADER_BYTES = 128

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


class KernelWriter:
    """Streams the columns of one kernel into ``dirpath`` (created)."""

    def __init__(self, dirpath: Path, with_line_num: bool = False):
        self.dir = Path(dirpath)
        self.dir.mkdir(parents=True)
        names = [c for c in COLUMNS if c not in ("warp_start", "warp_block", "block_xyz")]
        if not with_line_num:
            names.remove("line_num")
        self.cols = {n: ColumnWriter(self.dir / f"{n}.npy", *COLUMNS[n]) for n in names}
        self.cols["addr_start"].append(np.zeros(1, np.int64))
        self.n_addr = 0

    def append_rows(self, rows: dict[str, np.ndarray], n_addr: np.ndarray, addresses: np.ndarray) -> None:
        """Append a batch of rows; ``n_addr`` holds the address count of each row."""
        for name, arr in rows.items():
            self.cols[name].append(arr)
        self.cols["addr_start"].append(self.n_addr + np.cumsum(n_addr, dtype=np.int64))
        self.cols["addresses"].append(addresses)
        self.n_addr += int(addresses.shape[0])

    def abort(self) -> None:
        """Close the columns and remove the kernel's folder (a kernel that did not finish)."""
        for c in self.cols.values():
            c._fh.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def finish(self, info: KernelInfo, opcodes: list[str], warp_start: np.ndarray, warp_block: np.ndarray,
               block_xyz: np.ndarray, extras: dict[str, np.ndarray] | None = None) -> dict:
        """Close the columns, write the per-warp/per-block arrays; return the kernel's meta entry."""
        for c in self.cols.values():
            c.close()
        rows = self.cols["pc"].rows
        if int(warp_start[-1]) != rows:
            raise ValueError(f"warp_start ends at {int(warp_start[-1])}, but {rows} rows were written")
        for name, arr in (("warp_start", warp_start), ("warp_block", warp_block), ("block_xyz", block_xyz)):
            w = ColumnWriter(self.dir / f"{name}.npy", *COLUMNS[name])
            w.append(arr)
            w.close()
        extra_names = []
        for name, arr in (extras or {}).items():
            a = np.ascontiguousarray(arr)
            np.save(self.dir / f"x_{name}.npy", a)
            extra_names.append(name)
        return {"dir": self.dir.name, "info": info_to_json(info), "opcodes": list(opcodes), "rows": rows,
                "warps": int(warp_start.shape[0] - 1), "blocks": int(block_xyz.shape[0]),
                "addresses": self.n_addr, "line_num": "line_num" in self.cols, "extras": extra_names}


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
    first (:func:`teg.fileio.publish_folder`; the entry there is kept and this one dropped)."""

    def __init__(self, path: str | os.PathLike, source: str = "", memcpy: list[tuple[int, int]] | None = None,
                 force: bool = False, publish: bool = False):
        self.npz = Path(path).suffix == ".npz" and not publish
        self.publish = publish
        self.path = Path(path) if publish else fileio.prepare(path, replaceable, force, folder=not self.npz)
        self.force = force
        self.tmp_folder = fileio.TempFolder(self.path)
        self.tmp = self.tmp_folder.path
        self.meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "source": source,
                     "memcpy": [list(m) for m in (memcpy or [])], "kernels": []}

    def kernel(self, with_line_num: bool = False) -> KernelWriter:
        return KernelWriter(self.tmp / f"k{len(self.meta['kernels']):04d}", with_line_num)

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
                        if f.is_file():
                            zf.write(f, f.relative_to(self.tmp).as_posix())
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


def save(trace: Trace, path: str | os.PathLike, force: bool = False) -> Path:
    """Write ``trace`` in the native format (directory, or ``.npz`` when ``path`` ends so)."""
    with TraceWriter(path, trace.source, trace.memcpy, force) as tw:
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
    """Load a native trace: a directory or a ``.npz``, every column memory-mapped
    (:mod:`teg.trace.npyread`; memory stays flat in the trace length), the metadata and columns
    validated (:mod:`teg.trace.checks`)."""
    p = Path(path)
    zf = None                           # the open archive of a .npz (closed once the columns are mapped)
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
    else:
        from teg.trace.cache import Spill

        try:
            zf = zipfile.ZipFile(p)
            raw = zf.read("meta.json")
        except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, ValueError) as exc:
            raise TraceFormatError(f"not a readable teg trace .npz ({exc.__class__.__name__}: {exc})", str(p)) from None
        meta = _read_meta(raw, str(p))
        spill = Spill(p)

        def get(kdir: str, name: str) -> np.ndarray:
            try:
                return map_member(p, zf, f"{kdir}/{name}.npy", spill.folder)
            except ColumnError as exc:
                raise TraceFormatError(f"corrupted column {kdir}/{name} ({exc.problem})", str(p)) from None

    try:
        kernels = [_load_kernel(k, get, f"{p}/{k.get('dir') if isinstance(k, dict) else f'kernel #{i}'}")
                   for i, k in enumerate(meta["kernels"])]
    finally:
        if zf is not None:
            zf.close()
            spill.close()
    source = meta.get("source", "")
    return Trace(kernels=kernels, memcpy=checks.memcpy_list(meta, str(p)),
                 source=(source if isinstance(source, str) else "") or str(p))


def _load_kernel(k: dict, get, where: str) -> KernelTrace:
    """One kernel of ``meta["kernels"]``, its columns from ``get(dir, name)``, checked."""
    checks.kernel_entry(k, where)
    kdir = k["dir"]
    cols = {n: get(kdir, n) for n in REQUIRED}
    line_num = get(kdir, "line_num") if k.get("line_num") else None
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
