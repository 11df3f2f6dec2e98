"""The trace cache: Accel-Sim text converted once to teg's native format, kept for reuse
(:func:`teg.trace.load`), listed and cleared by ``teg trace cache``.

Where: ``$TEG_CACHE_DIR`` (``~`` expanded, relative to the working folder), else
``$XDG_CACHE_HOME/teg/traces`` (an absolute ``XDG_CACHE_HOME`` only: the XDG specification calls a
relative one invalid), else ``~/.cache/teg/traces``. A location that cannot be used (``HOME=/dev/null``,
a read-only home, a folder teg may not write) is replaced by a temporary folder that is removed
once the trace is mapped (one warning line; the mapped columns stay readable).

Entries (all named so that nothing else in the folder is mistaken for one):

* ``t-KEY`` — a converted trace. ``KEY`` is SHA-256 over the cache layout and Accel-Sim reader
  versions, teg's version, the kernel list's content and every kernel file's name and content
  (:mod:`teg.trace.digest`: full content, memoized by a fingerprint that an edit always changes);
  a same-size edit under the same modification time (``cp -p``, ``rsync -t``) is a new key.
* ``npz-KEY`` — compressed members of a ``.npz``, and long compact kernels of a native trace, decoded
  once (KEY: the archive's content, or that of a trace folder's ``.frames`` files; :class:`Spill`).
* ``digests/`` — the digest memo.
* ``.NAME.partial-PID-TOKEN`` — a conversion in progress (its writer holds a lock on it) or left
  by a killed one (:mod:`teg.fileio`).

Concurrency: a conversion is written under its temporary name and *published* — renamed into
place only if no other process published the same entry first (:func:`teg.fileio.publish_folder`);
the loser drops its copy and maps the winner's, so fillers never fail. A reader holds a shared
``flock`` on the entry while it maps the columns; ``--clear`` takes each entry's lock exclusively
without waiting and keeps an entry it cannot lock (in use), so a running estimate never loses its
trace; once mapped, the columns stay readable even after the files are removed. ``--clear``
removes only teg's own entries: anything else in the folder is listed as such and left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from teg import __version__, fileio
from teg.trace import digest

LAYOUT_VERSION = 2             # names and keys of the entries (1: 20 hex digits of a sampled hash)
SPILL_KIND = "npz-spill"       # teg.fileio marker kind of an ``npz-KEY`` folder
_TRACE = re.compile(r"^t-[0-9a-f]{32}$")
_SPILL = re.compile(r"^npz-[0-9a-f]{20,32}$")
_LEGACY_TRACE = re.compile(r"^[0-9a-f]{20}$")      # layout 1


class CacheWarning(UserWarning):
    """The cache folder cannot be used; a temporary one is used and removed."""


def cache_dir() -> Path:
    """The configured cache folder (module docstring), whether or not it can be used."""
    env = os.environ.get("TEG_CACHE_DIR")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path(os.path.expanduser("~")) / ".cache"
    return base / "teg" / "traces"


_USABLE: dict[str, str | None] = {}


def unusable(root: Path) -> str | None:
    """Why ``root`` cannot hold cache entries (None when it can): created if missing, then a probe
    file made and removed in it (checked once per process)."""
    key = os.fsencode(root)
    if key in _USABLE:
        return _USABLE[key]
    why = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        if not root.is_dir():
            why = "not a folder"
        else:
            fd, probe = tempfile.mkstemp(prefix=".teg-probe-", dir=root)
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        why = exc.strerror or str(exc)
    _USABLE[key] = why
    return why


def usable_root(root: Path | None = None) -> Path | None:
    """``root`` (default :func:`cache_dir`) when entries can be kept there, else None with one
    :class:`CacheWarning` naming the folder and the reason."""
    root = cache_dir() if root is None else Path(root)
    why = unusable(root)
    if why is None:
        return root
    warnings.warn(f"trace cache {root} cannot be used ({why}); converting into a temporary folder that is "
                  "removed afterwards (set TEG_CACHE_DIR to a writable folder to keep conversions)",
                  CacheWarning, stacklevel=3)
    return None


# ---- keys -----------------------------------------------------------------------------------------

def entry_key(files: list[Path], listing: Path, memo_root: Path | None) -> str:
    """Key of the conversion of ``files`` (listed by ``listing``): module docstring."""
    from teg.trace.accelsim import READER_VERSION
    from teg.trace.native import FORMAT_VERSION

    h = hashlib.sha256(f"teg-trace-cache|layout {LAYOUT_VERSION}|format {FORMAT_VERSION}|reader "
                       f"{READER_VERSION}|teg {__version__}".encode())
    if listing not in files:                            # a kernelslist.g: its copies and order count
        h.update(b"|list|" + digest.file_digest(listing, memo_root).encode())
    for f in files:
        h.update(b"|" + os.fsencode(f.name) + b"|" + digest.file_digest(f, memo_root).encode())
    return "t-" + h.hexdigest()[:32]


# ---- holding an entry while it is read ------------------------------------------------------------

def open_entry(target: Path, load):
    """``load(target)`` while holding a shared lock on the entry (``--clear`` waits or keeps it);
    None when the entry is not there (or was removed while we waited)."""
    fd, _ = fileio.open_lock(target, exclusive=False, wait=True)
    if fd is None:
        return None
    try:
        try:
            if os.stat(target).st_ino != os.fstat(fd).st_ino:
                return None                  # removed (or replaced) while we waited
        except OSError:
            return None
        return load(target)
    finally:
        fileio.close_fd(fd)


def remove_if_unused(target: Path) -> bool:
    """Remove the entry ``target`` unless a reader holds it (then False)."""
    fd, taken = fileio.open_lock(target, exclusive=True, wait=False)
    if fd is None:
        return True
    try:
        if taken is False:
            return False
        fileio.remove_entry(target)
        return True
    finally:
        fileio.close_fd(fd)


def load_accelsim(src: Path, files: list[Path], listing: Path, root: Path | None, progress: bool = False):
    """The Accel-Sim input ``src`` as a native :class:`~teg.trace.Trace`, from its cache entry in
    ``root`` (converted and published when missing; a damaged entry is converted again), or —
    ``root`` None or unusable — converted into a temporary folder removed once mapped."""
    from teg.trace.accelsim import convert_accelsim
    from teg.trace.errors import TraceFormatError
    from teg.trace.native import load_native

    root = usable_root(root)
    if root is None:
        return load_temporary(src, progress)
    fileio.sweep(root)                        # conversions killed earlier (their writer is gone)
    target = root / entry_key(files, listing, root)

    def load(t: Path):
        if not (t / "meta.json").is_file():
            return None
        try:
            return load_native(t)
        except TraceFormatError:
            return "damaged"

    for _ in range(3):
        got = open_entry(target, load)
        if got == "damaged":
            if not remove_if_unused(target):
                break                          # damaged but in use elsewhere: use a private copy
            got = None
        if got is not None:
            return got
        convert_accelsim(src, target, progress=progress, publish=True)
    return load_temporary(src, progress)


def load_temporary(src: Path, progress: bool = False):
    """Convert ``src`` into a temporary folder, map it, remove the folder (the mapped columns stay
    readable; where the folder cannot be removed it is left to the OS's temporary-file cleaning)."""
    from teg.trace.accelsim import convert_accelsim
    from teg.trace.native import load_native

    tmp = Path(tempfile.mkdtemp(prefix="teg-trace-"))
    try:
        convert_accelsim(src, tmp / "trace", progress=progress)
        return load_native(tmp / "trace")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Spill:
    """Where the compressed members of one ``.npz``, and the long compact kernels of a native trace
    (``.npz`` or folder), are decoded (``npz-KEY`` in the cache, KEY the content of the archive or
    of the folder's ``.frames`` files; held with a shared lock while members are mapped; a
    temporary folder when the cache cannot be used, removed by :meth:`close`). Created on first
    use: a stored archive of ``.npy`` columns, or a short trace, never needs one."""

    def __init__(self, archive: Path):
        self.archive = Path(archive)
        self.path: Path | None = None
        self.fd: int | None = None
        self.temporary = False

    def folder(self) -> Path:
        if self.path is None:
            root = usable_root()
            if root is None:
                self.path, self.temporary = Path(tempfile.mkdtemp(prefix="teg-npz-")), True
            else:
                self.path = root / ("npz-" + self._content_key(root)[:32])
                self.path.mkdir(parents=True, exist_ok=True)     # (the root may have gone since it was checked)
                if not (self.path / fileio.MARKER).exists():
                    fileio.mark_folder(self.path, SPILL_KIND)
                self.fd, _ = fileio.open_lock(self.path, exclusive=False, wait=True)
        return self.path

    def _content_key(self, root: Path) -> str:
        """The archive's digest; of a folder, SHA-256 over its ``.frames`` files' names and digests."""
        if not self.archive.is_dir():
            return digest.file_digest(self.archive, root)
        h = hashlib.sha256(b"teg-frames")
        for f in sorted(self.archive.glob("*/*.frames")):
            h.update(b"|" + os.fsencode(f.relative_to(self.archive)) + b"|" + digest.file_digest(f, root).encode())
        return h.hexdigest()

    def close(self) -> None:
        fileio.close_fd(self.fd)
        self.fd = None
        if self.temporary and self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


# ---- listing and clearing ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CacheEntry:
    """One item of the cache folder."""

    path: Path
    bytes: int
    modified: float            # newest modification time (epoch seconds)
    state: str                 # trace, spill, digests, running (live conversion), stale (killed one), other
    source: str = ""           # the Accel-Sim input a trace was converted from
    kernels: int = 0

    @property
    def teg_owns(self) -> bool:
        return self.state != "other"

    def as_json(self) -> dict:
        return {"path": os.fsdecode(self.path), "bytes": self.bytes, "modified": self.modified, "state": self.state,
                "source": self.source, "kernels": self.kernels}


def tree_bytes(path: Path) -> int:
    """Bytes of the files below ``path`` (a file: its size); unreadable parts count 0."""
    if not path.is_dir() or path.is_symlink():
        try:
            return path.lstat().st_size
        except OSError:
            return 0
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def _trace_meta(path: Path) -> dict | None:
    try:
        meta = json.loads((path / "meta.json").read_bytes()[:1 << 24])
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == "teg-trace" else None


def _legacy_spill(path: Path) -> bool:
    """An ``npz-KEY`` folder of layout 1 (no marker): only ``k*/NAME.npy`` files in it."""
    try:
        return all(f.suffix == ".npy" and f.parent.parent == path and f.parent.name.startswith("k")
                   for f in path.rglob("*") if not f.is_dir())
    except OSError:
        return False


def kind_of(path: Path) -> str:
    """``trace``, ``spill``, ``digests`` for teg's entries, else ``other``."""
    name = path.name
    if path.is_symlink() or not path.is_dir():
        return "other"
    if (_TRACE.match(name) or _LEGACY_TRACE.match(name)) and _trace_meta(path) is not None:
        return "trace"
    if _SPILL.match(name) and (fileio.folder_marked(path, SPILL_KIND) or _legacy_spill(path)):
        return "spill"
    if name == digest.DIGESTS and fileio.folder_marked(path, digest.DIGESTS_KIND):
        return "digests"
    return "other"


def _temporary_of_teg(name: str) -> bool:
    """A temporary (``.NAME.partial-…``) of one of teg's entries."""
    stem = fileio.leftover_of(name)
    return stem is not None and bool(_TRACE.match(stem[0]) or _LEGACY_TRACE.match(stem[0]) or _SPILL.match(stem[0])
                                     or stem[0] == digest.DIGESTS)


def describe(path: Path) -> CacheEntry:
    """The :class:`CacheEntry` of one item of the cache folder."""
    size, changed = tree_bytes(path), fileio.last_change(path)
    leftover = fileio.leftover_of(path.name)
    if leftover is not None and _temporary_of_teg(path.name):
        state = "stale" if fileio.is_stale(path, leftover[2]) else "running"
        return CacheEntry(path, size, changed, state)
    kind = kind_of(path)
    if kind == "trace":
        meta = _trace_meta(path) or {}
        kernels = meta.get("kernels")
        return CacheEntry(path, size, changed, "trace", str(meta.get("source", "")),
                          len(kernels) if isinstance(kernels, list) else 0)
    return CacheEntry(path, size, changed, kind)


def entries(root: str | os.PathLike) -> list[CacheEntry]:
    """Every item of the cache folder ``root``, newest first (none when it does not exist)."""
    r = Path(root)
    if not r.is_dir():
        return []
    try:
        items = list(r.iterdir())
    except OSError:
        return []
    return sorted((describe(p) for p in items), key=lambda e: -e.modified)


def clear(root: str | os.PathLike) -> tuple[list[CacheEntry], list[CacheEntry]]:
    """Remove teg's own entries of ``root`` — not conversions still running, not entries a
    running teg is reading, never anything teg did not write; return (removed, kept)."""
    removed, kept = [], []
    for e in entries(root):
        if e.state in ("running", "other"):
            kept.append(e)
        elif e.state == "stale" or remove_if_unused(e.path):
            if e.state == "stale":
                fileio.remove_entry(e.path)
            removed.append(e)
        else:
            kept.append(CacheEntry(e.path, e.bytes, e.modified, "in use", e.source, e.kernels))
    return removed, kept
