"""Reading an application: the kernels of a multi-kernel trace, in launch order, and the
``--kernel`` selection among them (nothing here runs the engine).

* :func:`open_application` lists the kernels of a ``kernelslist.g`` (or its folder), a native
  multi-kernel trace or one ``.traceg``: for Accel-Sim lists only the kernel headers are read (the
  files listed but absent are kept apart as *missing*), for native traces the metadata;
* :func:`select` picks kernels by id list/range (``3,5-9``), regular expression (``re:PATTERN``)
  or substring of the mangled or demangled name — the ``--kernel`` syntax;
* :func:`load_kernel` loads one listed kernel in whatever process calls it — Accel-Sim files
  through the trace cache (:func:`teg.trace.load`), native traces memory-mapped — once per process.

The tasks that run the kernels are :mod:`teg.analysis.kernel_task`; what they add up to,
:mod:`teg.analysis.application`.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from teg import TegError, error_line
from teg.sass.demangle import short_name

KERNEL_FILE_ID = re.compile(r"kernel-(\d+)")
ID_LIST = re.compile(r"^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$")


class ApplicationError(TegError):
    """An application that cannot be read or a kernel selection that selects nothing."""


@dataclass(frozen=True)
class KernelRef:
    """One kernel of an application: ``position`` in launch order, the header's id and launch
    geometry, and where to load it from (``path`` a native trace or one ``.traceg[.xz]``,
    ``index`` the kernel's place in it). A missing kernel has ``present=False``, no name, and
    ``line``, its line in the kernel list."""

    position: int
    kernel_id: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    stream: int
    path: str
    index: int = 0
    present: bool = True
    line: int = 0
    demangled: str | None = None
    binary_version: int = 0
    error: str | None = None          # a kernel whose header cannot be read: recorded as failed when run

    @property
    def label(self) -> str:
        """The kernel's file name for a missing kernel, else its (demangled) name."""
        return Path(self.path).name if not self.present else (self.demangled or self.name)


@dataclass
class Application:
    """The kernels of one traced run, in launch order (``missing``: listed, file absent)."""

    source: str
    kernels: list[KernelRef]
    missing: list[KernelRef] = field(default_factory=list)
    memcpy: list[tuple[int, int]] = field(default_factory=list)
    sass: str | None = None      # the SASS listing that came with the trace (teg trace app's program.sass)

    @property
    def streams(self) -> list[int]:
        return sorted({k.stream for k in self.kernels})


# ---- reading --------------------------------------------------------------------------------------

def _file_id(path: Path, fallback: int) -> int:
    """The ``N`` of ``kernel-N.traceg``, else ``fallback``."""
    m = KERNEL_FILE_ID.search(path.name)
    return int(m.group(1)) if m else fallback


def _header_ref(position: int, path: Path) -> KernelRef:
    """A present Accel-Sim kernel from its header alone (the body is read by the task)."""
    from teg.trace.accelsim import _open_binary, read_header

    from teg.trace import TraceFormatError, TraceUnsupportedError
    from teg.trace.accelsim import _regular

    try:
        _regular(path)
        raw, stream = _open_binary(path)
        try:
            info, _, _ = read_header(stream, str(path))
        finally:
            stream.close()
            raw.close()
    except (TraceFormatError, TraceUnsupportedError, OSError, EOFError, ValueError) as exc:
        # this kernel is recorded as failed with its error when it runs; the others still run
        return KernelRef(position=position, kernel_id=_file_id(path, position + 1), name=path.name.split(".")[0],
                         grid=(0, 0, 0), block=(0, 0, 0), stream=0, path=str(path), error=error_line(exc))
    kid = info.kernel_id if info.kernel_id > 0 else _file_id(path, position + 1)
    return KernelRef(position=position, kernel_id=kid, name=info.name or path.name.split(".")[0],
                     grid=tuple(info.grid), block=tuple(info.block), stream=info.stream, path=str(path),
                     binary_version=int(info.binary_version or 0))


def _accelsim_application(p: Path) -> Application:
    from teg.textfile import read_text
    from teg.trace.accelsim import MAX_KERNELSLIST_BYTES, TRACE_SUFFIXES, read_kernelslist

    if str(p).endswith(TRACE_SUFFIXES):
        return Application(str(p), [_header_ref(0, p)])
    listing = p / "kernelslist.g" if p.is_dir() else p
    if p.is_dir() and not listing.is_file():
        raise ApplicationError(f"{p}: folder has no kernelslist.g (and is not a teg trace)")
    missing_at: list[tuple[Path, int]] = []
    _, memcpy = read_kernelslist(listing, missing=missing_at)    # checks every line; notes the absent files
    absent = {str(f): n for f, n in missing_at}
    listed = [listing.parent / s.strip() for s in read_text(listing, MAX_KERNELSLIST_BYTES, "kernel list").splitlines()
              if s.strip().startswith("kernel")]
    kernels, missing = [], []
    for pos, f in enumerate(listed):
        if str(f) not in absent:
            kernels.append(_header_ref(pos, f))
        else:
            missing.append(KernelRef(position=pos, kernel_id=_file_id(f, pos + 1), name="", grid=(0, 0, 0),
                                     block=(0, 0, 0), stream=0, path=str(f), present=False, line=absent[str(f)]))
    return Application(str(listing), kernels, missing, memcpy)


def _native_application(p: Path) -> Application:
    """The kernels of a native trace from its metadata alone (the columns are mapped and checked
    when a kernel is loaded)."""
    from teg.trace.native import read_meta

    _, infos, memcpy = read_meta(p)
    refs = []
    for i, info in enumerate(infos):
        refs.append(KernelRef(position=i, kernel_id=info.kernel_id if info.kernel_id > 0 else i + 1,
                              name=info.name, grid=tuple(info.grid), block=tuple(info.block),
                              stream=info.stream, path=str(p), index=i,
                              binary_version=int(info.binary_version or 0)))
    return Application(str(p), refs, memcpy=list(memcpy), sass=_listing_of(p))


def _listing_of(p: Path) -> str | None:
    """The SASS listing a ``teg trace app`` folder holds (its ``meta.json`` names it), else None."""
    import json

    try:
        app = json.loads((p / "meta.json").read_text()).get("application") if p.is_dir() else None
        name = app.get("sass") if isinstance(app, dict) else None
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(name, str) and "/" not in name and (p / name).is_file():
        return str(p / name)
    return None


def open_application(path: str | os.PathLike) -> Application:
    """The kernels of a trace (see the module docstring), demangled names attached."""
    from teg.sass.demangle import demangle_all
    from teg.trace.native import is_native

    from teg.trace import check_input

    p = Path(path)
    check_input(p)                 # a pipe or a device is refused by name before anything reads it
    app = _native_application(p) if is_native(p) else _accelsim_application(p)
    plain = demangle_all([k.name for k in app.kernels])
    app.kernels = [replace(k, demangled=plain.get(k.name)) for k in app.kernels]
    return app


# ---- selection ------------------------------------------------------------------------------------

def parse_ids(text: str) -> set[int]:
    """``"1,4-6"`` → ``{1, 4, 5, 6}`` (ranges inclusive)."""
    ids: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        a, b = int(lo), int(hi) if hi else int(lo)
        if b < a:
            raise ApplicationError(f"kernel id range {part.strip()!r} runs backwards")
        ids.update(range(a, b + 1))
    return ids


def kernel_matcher(spec: str):
    """Predicate over :class:`KernelRef` for a ``--kernel`` selection: an id list/range
    (``3``, ``1,4-6``), ``re:PATTERN`` (searched in the mangled and the demangled name), or a
    substring of either name."""
    if ID_LIST.match(spec):
        ids = parse_ids(spec)
        return lambda k: k.kernel_id in ids
    if spec.startswith("re:"):
        try:
            rx = re.compile(spec[3:])
        except re.error as exc:
            raise ApplicationError(f"--kernel {spec!r}: bad regular expression ({exc})") from None
        return lambda k: bool(rx.search(k.name) or (k.demangled and rx.search(k.demangled)))
    return lambda k: spec in k.name or bool(k.demangled and spec in k.demangled)


def select(app: Application, spec: str | None) -> Application:
    """The kernels ``spec`` selects (all for None). A missing kernel stays listed unless an id
    selection leaves it out (its name is unknown, so a name selection may match it). Selecting
    nothing is an error."""
    if spec is None:
        return app
    match = kernel_matcher(spec)
    kernels = [k for k in app.kernels if match(k)]
    by_id = bool(ID_LIST.match(spec))
    missing = [k for k in app.missing if match(k)] if by_id else list(app.missing)
    if not kernels and not (by_id and missing):
        have = ", ".join(f"{k.kernel_id} {short_name(k.label, 40)}" for k in app.kernels[:12])
        more = f", … ({len(app.kernels)} kernels)" if len(app.kernels) > 12 else ""
        raise ApplicationError(f"{app.source}: no kernel matches --kernel {spec!r} (have: {have}{more})")
    return Application(app.source, kernels, missing, app.memcpy, app.sass)


# ---- loading ------------------------------------------------------------------------------------

def file_stamp(p: Path) -> str:
    """The file's fingerprint (:func:`teg.trace.digest.fingerprint`: any edit changes it, even one
    that keeps the size and modification time)."""
    from teg.trace.digest import fingerprint

    try:
        return fingerprint(p.stat())
    except OSError:
        return ""


@functools.lru_cache(maxsize=8)
def _load_trace(path: str, stamp: str):
    """A trace loaded once per process (``stamp``, the file's fingerprint, keys a rewritten file anew):
    native traces memory-mapped, Accel-Sim text through the conversion cache."""
    import teg.trace as tt

    return tt.load(path)


def load_kernel(ref: KernelRef):
    """The :class:`~teg.trace.KernelTrace` of ``ref`` (loaded in the calling process)."""
    if ref.error is not None:
        raise ApplicationError(ref.error)
    trace = _load_trace(ref.path, file_stamp(Path(ref.path)))
    if ref.index >= len(trace.kernels):
        raise ApplicationError(f"{ref.path}: has {len(trace.kernels)} kernels, no kernel {ref.index}")
    return trace.kernels[ref.index]


def selected_application(path, kernel: str | None) -> Application | None:
    """For ``teg trace info``: None when ``path`` holds one kernel and nothing is missing, else the
    kernels ``kernel`` selects (with the missing ones)."""
    whole = open_application(path)
    if len(whole.kernels) <= 1 and not whole.missing:
        return None
    return select(whole, kernel)


__all__ = ["Application", "ApplicationError", "KernelRef", "ID_LIST", "open_application", "parse_ids",
           "kernel_matcher", "select", "load_kernel", "selected_application"]
