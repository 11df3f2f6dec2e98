"""teg.trace — dynamic instruction traces.

* :func:`load` reads a native trace (directory or ``.npz``) or an Accel-Sim trace
  (``kernelslist.g``, its folder, one ``.traceg[.xz]``). Accel-Sim text is converted once into the
  native format in a cache folder (``$TEG_CACHE_DIR`` or ``~/.cache/teg/traces``, keyed by the
  files' paths, sizes and modification times) and then used memory-mapped from there.
* :func:`save` / :func:`write_accelsim` write the native format / Accel-Sim text.
* :func:`convert` converts between the two (direction from the input).
* :func:`join` maps trace PCs to the static instructions of a SASS :class:`~teg.sass.program.Program`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from teg import fileio
from teg.trace.accelsim import accelsim_files, convert_accelsim, write_accelsim
from teg.trace.errors import TraceFormatError, TraceMismatchError, TraceOutputError, TraceUnsupportedError
from teg.trace.join import join, opcodes_agree
from teg.trace.model import KernelInfo, KernelTrace, Trace
from teg.trace.native import FORMAT_VERSION, is_native, load_native, save

__all__ = ["KernelInfo", "KernelTrace", "Trace", "TraceFormatError", "TraceMismatchError", "TraceUnsupportedError",
           "TraceOutputError", "load", "load_native", "save", "write_accelsim", "convert", "join", "opcodes_agree",
           "is_native", "cache_dir"]


def cache_dir() -> Path:
    """Folder of converted Accel-Sim traces: ``$TEG_CACHE_DIR``, else ``$XDG_CACHE_HOME/teg/traces``."""
    env = os.environ.get("TEG_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "teg" / "traces"


def _cache_key(files: list[Path], listing: Path) -> str:
    h = hashlib.sha1(f"teg-trace-v{FORMAT_VERSION}|{listing.resolve()}".encode())
    for f in files:
        s = f.stat()
        h.update(f"|{f.resolve()}|{s.st_size}|{s.st_mtime_ns}".encode())
        with open(f, "rb") as fh:          # content sample: rewrites within the mtime granularity
            h.update(fh.read(1 << 16))
            if s.st_size > 1 << 17:
                fh.seek(-(1 << 16), os.SEEK_END)
                h.update(fh.read())
    return h.hexdigest()[:20]


def load(path: str | os.PathLike, cache: str | os.PathLike | bool | None = None, progress: bool = False) -> Trace:
    """Load a trace. ``cache``: None → :func:`cache_dir`; a path → that folder; False → convert
    into a temporary folder, removed once the columns are mapped (no reuse)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    if is_native(p):
        return load_native(p)
    files, _, listing = accelsim_files(p)
    if cache is False:
        # converted into a temporary folder that goes once its columns are mapped (a mapped file
        # stays readable after its name is removed; where it cannot be removed it is left)
        root = Path(tempfile.mkdtemp(prefix="teg-trace-"))
        try:
            convert_accelsim(p, root / "trace", progress=progress)
            return load_native(root / "trace")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    root = Path(cache) if cache not in (None, True) else cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        root = Path(tempfile.mkdtemp(prefix="teg-trace-"))
    fileio.sweep(root)      # conversions killed earlier (their owner is gone)
    target = root / _cache_key(files, listing)
    if target.is_dir() and (target / "meta.json").is_file():
        try:
            return load_native(target)
        except TraceFormatError:
            fileio.remove_entry(target)    # damaged cache entry: convert again
    convert_accelsim(p, target, progress=progress)
    return load_native(target)


def convert(src: str | os.PathLike, out: str | os.PathLike, progress: bool = False, force: bool = False) -> Path:
    """Accel-Sim → native (``out`` a folder, or ``.npz``); native → Accel-Sim text folder, or
    native → ``.npz`` when ``out`` ends in ``.npz`` (re-packing). ``out`` may replace only an
    output teg wrote (``force``: any file; never a folder teg did not write)."""
    s = Path(src)
    if not s.exists():
        raise FileNotFoundError(f"{s}: no such file or folder")
    if is_native(s):
        if str(out).endswith(".npz"):
            return save(load_native(s), out, force=force)
        return write_accelsim(load_native(s), out, force=force)
    return convert_accelsim(s, out, progress=progress, force=force)
