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
import tempfile
import zipfile
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np

from teg.trace.errors import TraceFormatError, TraceOutputError
from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC, KernelInfo, KernelTrace, Trace

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


def info_from_json(d: dict) -> KernelInfo:
    known = {f.name for f in fields(KernelInfo)}
    kw = {k: v for k, v in d.items() if k in known}
    for k in ("grid", "block"):
        if k in kw:
            kw[k] = tuple(int(x) for x in kw[k])
    return KernelInfo(**kw)


class TraceWriter:
    """Writes a native trace under a temporary name; ``commit()`` renames it to ``path``.

    ``path`` ending in ``.npz`` gives a single zip file of the same members; anything else a
    directory. Use as a context manager: an exception discards the partial output."""

    def __init__(self, path: str | os.PathLike, source: str = "", memcpy: list[tuple[int, int]] | None = None):
        self.path = Path(path)
        _check_replaceable(self.path)
        self.npz = self.path.suffix == ".npz"
        parent = self.path.parent if str(self.path.parent) else Path(".")
        parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.partial-", dir=parent))
        self.meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "source": source,
                     "memcpy": [list(m) for m in (memcpy or [])], "kernels": []}

    def kernel(self, with_line_num: bool = False) -> KernelWriter:
        return KernelWriter(self.tmp / f"k{len(self.meta['kernels']):04d}", with_line_num)

    def add(self, entry: dict) -> None:
        self.meta["kernels"].append(entry)

    def commit(self) -> Path:
        (self.tmp / "meta.json").write_text(json.dumps(self.meta, indent=1))
        _check_replaceable(self.path)
        if self.npz:
            ztmp = self.tmp.with_name(self.tmp.name + ".npz")
            with zipfile.ZipFile(ztmp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for f in sorted(self.tmp.rglob("*")):
                    if f.is_file():
                        zf.write(f, f.relative_to(self.tmp).as_posix())
            shutil.rmtree(self.tmp)
            os.replace(ztmp, self.path)
        else:
            old = None
            if self.path.exists():
                old = self.path.with_name(f".{self.path.name}.old-{os.getpid()}")
                os.replace(self.path, old)
            os.replace(self.tmp, self.path)
            if old is not None:
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        return self.path

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        return False


def _check_replaceable(path: Path) -> None:
    """Only an earlier teg trace (or nothing, or an empty folder) may be replaced by a new one."""
    if not path.exists() or is_native(path) or (path.is_dir() and not any(path.iterdir())):
        return
    raise TraceOutputError("exists and is not a teg trace; not overwriting it", str(path))


def save(trace: Trace, path: str | os.PathLike) -> Path:
    """Write ``trace`` in the native format (directory, or ``.npz`` when ``path`` ends so)."""
    with TraceWriter(path, trace.source, trace.memcpy) as tw:
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


def load_native(path: str | os.PathLike) -> Trace:
    """Load a native trace: a directory (columns memory-mapped) or a ``.npz`` (read into memory)."""
    p = Path(path)
    if p.is_dir():
        mf = p / "meta.json"
        try:
            meta = json.loads(mf.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TraceFormatError(f"corrupted trace metadata ({exc.__class__.__name__}: {exc})", str(mf)) from None
        meta = _check_meta(meta, str(mf))

        def get(kdir: str, name: str) -> np.ndarray:
            f = p / kdir / f"{name}.npy"
            try:
                return np.load(f, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError, EOFError) as exc:
                raise TraceFormatError(f"corrupted column ({exc})", str(f)) from None
    else:
        try:
            z = np.load(p, allow_pickle=False)
            if not hasattr(z, "files"):
                raise ValueError("not a zip archive")
            meta = json.loads(z.zip.read("meta.json"))
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
            raise TraceFormatError(f"not a readable teg trace .npz ({exc.__class__.__name__}: {exc})", str(p)) from None
        meta = _check_meta(meta, str(p))

        def get(kdir: str, name: str) -> np.ndarray:
            try:
                return z[f"{kdir}/{name}"]
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
                raise TraceFormatError(f"corrupted column {kdir}/{name} ({exc})", str(p)) from None

    kernels = []
    for k in meta["kernels"]:
        where = f"{p}/{k.get('dir')}"
        try:
            kdir = k["dir"]
            cols = {n: get(kdir, n) for n in REQUIRED}
            line_num = get(kdir, "line_num") if k.get("line_num") else None
            extras = {n: get(kdir, f"x_{n}") for n in k.get("extras", [])}
            kt = KernelTrace(info=info_from_json(k["info"]), opcodes=list(k["opcodes"]), line_num=line_num,
                             extras=extras, **cols)
        except (KeyError, TypeError) as exc:
            raise TraceFormatError(f"kernel entry incomplete ({exc.__class__.__name__}: {exc})", where) from None
        _check_kernel(kt, k, where)
        kernels.append(kt)
    return Trace(kernels=kernels, memcpy=[(int(a), int(b)) for a, b in meta.get("memcpy", [])],
                 source=str(meta.get("source", "")) or str(p))


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
    if n and (int(kt.opcode.min()) < 0 or int(kt.opcode.max()) >= len(kt.opcodes)):
        raise TraceFormatError("opcode ids outside the opcode table", where)
