"""Reading the ``.npy`` columns of a native trace without loading them: a column file is
memory-mapped, and so is a column stored uncompressed inside a ``.npz`` (the archive teg writes),
so memory stays flat however long the trace is.

Mechanism for a ``.npz`` member: a zip member stored without compression is the ``.npy`` file's
bytes, contiguous in the archive after the member's local header (30 bytes + name + extra field,
read from the header itself since it may differ from the central directory's copy). The ``.npy``
header is parsed there with numpy's own reader and the data mapped with ``np.memmap`` at the
resulting offset. A compressed member (``np.savez_compressed``) cannot be mapped; it is inflated
once, streamed, into a ``.npy`` file in ``spill_dir`` and mapped from there.

Every problem — a damaged zip, a ``.npy`` header numpy cannot parse, data shorter than its header
says — is a :class:`ColumnError` naming the member.
"""

from __future__ import annotations

import mmap as mmap_module
import os
import shutil
import struct
import tokenize
import zipfile
from pathlib import Path

import numpy as np

from teg import fileio

# what numpy's .npy reader raises on a damaged header or truncated data (its header is a Python
# literal parsed by the tokenizer: a flipped bit can surface as a TokenError or SyntaxError)
NPY_ERRORS = (ValueError, SyntaxError, tokenize.TokenError, EOFError, OSError, OverflowError, MemoryError,
              TypeError, KeyError, zipfile.BadZipFile)
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_MAGIC = b"PK\x03\x04"


class ColumnError(ValueError):
    """A column that cannot be read: ``member`` (file or archive member name) and ``problem``."""

    def __init__(self, member: str, problem: str):
        self.member = member
        self.problem = problem
        super().__init__(f"{member}: {problem}")


def _npy_layout(fh, member: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """(dtype, shape, fortran order, data offset) of the ``.npy`` whose header starts at the
    current position of ``fh``."""
    start = fh.tell()
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except NPY_ERRORS as exc:
        raise ColumnError(member, f"damaged .npy header ({exc.__class__.__name__}: {_first_line(exc)})") from None
    if dtype.hasobject:
        raise ColumnError(member, "holds Python objects, not numbers")
    if any(not isinstance(d, int) or d < 0 for d in shape):
        raise ColumnError(member, f"bad shape {shape!r} in the .npy header")
    return dtype, tuple(shape), bool(fortran), fh.tell() - start


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else ""


def _map(path: Path, dtype: np.dtype, shape: tuple[int, ...], fortran: bool, offset: int, available: int,
         member: str) -> np.ndarray:
    """``np.memmap`` of ``shape`` at ``offset`` of ``path``, after checking that the ``available``
    bytes hold it."""
    count = 1
    for d in shape:
        count *= d
    need = count * dtype.itemsize
    if need > available:
        raise ColumnError(member, f"truncated: its header promises {need:,} bytes of data, {available:,} are there")
    if count == 0:
        return np.zeros(shape, dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C")


def release(view: np.ndarray) -> None:
    """Drop the pages of ``view``, a contiguous piece of a memory-mapped column, from this process's
    resident set (``madvise(MADV_DONTNEED)``: clean file pages, read again from the page cache on the
    next touch), so that a pass over a whole column keeps one block resident, not the column."""
    mm = getattr(view, "_mmap", None)
    advice = getattr(mmap_module, "MADV_DONTNEED", None)
    if mm is None or advice is None or not view.flags.c_contiguous or view.nbytes == 0:
        return
    try:
        start = view.ctypes.data - np.frombuffer(mm, np.uint8).ctypes.data
        lo = start - start % mmap_module.PAGESIZE
        mm.madvise(advice, lo, start + view.nbytes - lo)
    except (ValueError, OSError):       # a closed map, an offset the OS refuses: keep the pages
        pass


def map_npy(path: str | os.PathLike) -> np.ndarray:
    """A ``.npy`` file memory-mapped read-only (its header checked against its size)."""
    p = Path(path)
    member = str(p)
    try:
        size = p.stat().st_size
        with open(p, "rb") as fh:
            dtype, shape, fortran, off = _npy_layout(fh, member)
    except OSError as exc:
        raise ColumnError(member, f"cannot read ({exc.strerror or exc})") from None
    return _map(p, dtype, shape, fortran, off, size - off, member)


def _member_offset(fh, info: zipfile.ZipInfo, member: str) -> int:
    """Offset of a member's data in the archive (after its own local header)."""
    fh.seek(info.header_offset)
    raw = fh.read(_LOCAL_HEADER.size)
    if len(raw) != _LOCAL_HEADER.size:
        raise ColumnError(member, "truncated archive (local header cut)")
    fields = _LOCAL_HEADER.unpack(raw)
    if fields[0] != _LOCAL_MAGIC:
        raise ColumnError(member, "damaged archive (no local header where the directory points)")
    return info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]


def map_member(archive: str | os.PathLike, zf: zipfile.ZipFile, name: str, spill_dir=None) -> np.ndarray:
    """Member ``name`` (``"k0000/pc.npy"``) of the open ``.npz`` ``zf`` (file ``archive``) as an
    array mapped from the archive (stored member) or from its inflated copy in ``spill_dir``
    (compressed member; a folder, or a function returning it when first needed; the member's
    folder is created). Raises :class:`ColumnError`."""
    path = Path(archive)
    member = f"{path}:{name}"
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise ColumnError(member, "missing from the archive") from None
    if info.compress_type == zipfile.ZIP_STORED:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            data_off = _member_offset(fh, info, member)
            fh.seek(data_off)
            dtype, shape, fortran, hdr = _npy_layout(fh, member)
        available = min(info.file_size, size - data_off) - hdr
        return _map(path, dtype, shape, fortran, data_off + hdr, available, member)
    if spill_dir is None:
        raise ColumnError(member, "compressed member and no folder to inflate it into")
    out = Path(spill_dir() if callable(spill_dir) else spill_dir) / name
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = fileio.partial_path(out)
        try:
            with zf.open(info) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 22)
            os.replace(tmp, out)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            tmp.unlink(missing_ok=True)
            raise ColumnError(member, f"cannot inflate ({exc.__class__.__name__}: {_first_line(exc)})") from None
    return map_npy(out)
