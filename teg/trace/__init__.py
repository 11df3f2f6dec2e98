"""teg.trace — dynamic instruction traces.

* :func:`load` reads a native trace (directory or ``.npz``) or an Accel-Sim trace
  (``kernelslist.g``, its folder, one ``.traceg[.xz]``). Accel-Sim text is converted once into the
  native format in the trace cache (:mod:`teg.trace.cache`: ``$TEG_CACHE_DIR`` or
  ``~/.cache/teg/traces``, keyed by the files' content and teg's reader version) and then used
  memory-mapped from there.
* :func:`save` / :func:`write_accelsim` write the native format / Accel-Sim text.
* :func:`convert` converts between the two (direction from the input).
* :func:`join` maps trace PCs to the static instructions of a SASS :class:`~teg.sass.program.Program`.
"""

from __future__ import annotations

import os
from pathlib import Path

from teg.trace.errors import (KernelNotFoundError, TraceFormatError, TraceMismatchError, TraceOutputError,
                              TraceUnsupportedError)
from teg.trace.join import join, opcodes_agree
from teg.trace.model import KernelInfo, KernelTrace, Trace
from teg.trace.native import FORMAT_VERSION, is_native, load_native, save

__all__ = ["KernelInfo", "KernelNotFoundError", "KernelTrace", "Trace", "TraceFormatError", "TraceMismatchError",
           "TraceUnsupportedError", "TraceOutputError", "load", "load_native", "save", "write_accelsim", "convert", "join", "opcodes_agree",
           "is_native", "cache_dir", "FORMAT_VERSION"]


def write_accelsim(trace: Trace, out_dir: str | os.PathLike, force: bool = False) -> Path:
    """Write ``trace`` as Accel-Sim text (:func:`teg.trace.accelsim.write_accelsim`; imported
    here when called: the Accel-Sim reader and writer, with their jitted scanner and formatter,
    are no part of loading a native trace)."""
    from teg.trace.accelsim import write_accelsim as write

    return write(trace, out_dir, force=force)


def cache_dir() -> Path:
    """Folder of converted Accel-Sim traces (:func:`teg.trace.cache.cache_dir`)."""
    from teg.trace.cache import cache_dir as configured

    return configured()


def check_input(p: Path) -> None:
    """A trace input must exist and be a regular file or a folder: a pipe or a device is refused
    by name before anything reads it (a FIFO would block the reader forever)."""
    from teg.fileio import stream_kind

    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    kind = stream_kind(p)
    if kind is not None:
        raise TraceFormatError(f"is a {kind}, not a trace file or folder (teg reads regular files only)", str(p))


def load(path: str | os.PathLike, cache: str | os.PathLike | bool | None = None, progress: bool = False) -> Trace:
    """Load a trace. Native traces are memory-mapped; Accel-Sim text is converted once into the
    trace cache (:mod:`teg.trace.cache`). ``cache``: None → the configured folder; a path → that
    folder; False → convert into a temporary folder, removed once the columns are mapped."""
    p = Path(path)
    check_input(p)
    if is_native(p):
        return load_native(p)
    from teg.trace import cache as trace_cache
    from teg.trace.accelsim import accelsim_files

    files, _, listing = accelsim_files(p)
    if cache is False:
        return trace_cache.load_temporary(p, progress)
    return trace_cache.load_accelsim(p, files, listing, None if cache in (None, True) else Path(cache), progress)


def convert(src: str | os.PathLike, out: str | os.PathLike, progress: bool = False, force: bool = False) -> Path:
    """Accel-Sim → native (``out`` a folder, or ``.npz``); native → Accel-Sim text folder, or
    native → ``.npz`` when ``out`` ends in ``.npz`` (re-packing). ``out`` may replace only an
    output teg wrote (``force``: any file; never a folder teg did not write, a device or a pipe)."""
    s = Path(src)
    check_input(s)
    if is_native(s):
        if str(out).endswith(".npz"):
            return save(load_native(s), out, force=force)
        return write_accelsim(load_native(s), out, force=force)
    from teg.trace.accelsim import convert_accelsim

    return convert_accelsim(s, out, progress=progress, force=force)
