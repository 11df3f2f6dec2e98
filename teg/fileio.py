"""Output files and folders that are never half written and never replace a user's file.

Mechanism (every file or folder teg writes goes through here):

* **Temporary name, then rename.** An output ``DIR/NAME`` is written as ``DIR/.NAME.partial-PID-TOKEN``
  (same folder, so same file system), flushed and ``fsync``-ed, and renamed over ``NAME`` with
  ``os.replace`` — atomic for a file, so a reader or a crash sees the old file or the new one,
  never a mix. A folder that already exists is first renamed to ``.NAME.old-PID-TOKEN``, the new
  one renamed into place, then the old one removed (two renames: a crash in between leaves the
  old folder under its ``.old-`` name, which the next run puts back).
* **Failure.** An exception removes the partial output; a full disk (``ENOSPC``, ``EDQUOT``,
  ``EFBIG``, ``EROFS``) becomes one :class:`OutputError` line naming the output.
* **Killed runs.** A process killed mid-write cannot clean up; every later write into the same
  folder (and every use of the trace cache) removes the ``.NAME.partial-*`` / ``.NAME.old-*``
  entries whose owner — the PID in the name — no longer runs, or is a newer process that reused
  the PID (its start time, ``/proc/PID/stat``, is later than the entry). Entries of a live
  writer are left alone. Entries of older teg versions carry no PID; they are removed once
  nothing in them has changed for :data:`LEGACY_AGE_S`.
* **Ownership.** An existing output is replaced only when ``owned(path)`` says teg wrote it (a
  teg trace's ``meta.json``, a calibrated table's first line, a validation document's ``schema``,
  the :data:`MARKER` file of an output folder) or when the caller passes ``force`` (files only: a
  folder teg did not write is never removed).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterator

from teg import TegError

MARKER = ".teg-output"            # JSON file inside an output folder teg wrote: {"written_by": "teg", "kind": ...}
LEGACY_AGE_S = 24 * 3600          # partials without a PID (older teg) count as stale after a day untouched
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>partial|old)-(?:(?P<pid>\d+)(?:-[0-9a-f]+)?|[A-Za-z0-9_]{8})"
                       r"(?:\..*)?$")

Owned = Callable[[Path], bool]


class OutputError(TegError):
    """An output teg must not or cannot write: ``<path>: <problem>`` on one line."""

    def __init__(self, message: str, path: str | os.PathLike):
        super().__init__(f"{path}: {message}")
        self.path = str(path)


# ---- names of temporary entries -------------------------------------------------------------------

def partial_path(target: Path, kind: str = "partial") -> Path:
    """``DIR/.NAME.<kind>-PID-TOKEN``: a fresh temporary name next to ``target``."""
    return target.parent / f".{target.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def leftover_of(entry_name: str) -> tuple[str, str, int | None] | None:
    """(output name, ``partial``/``old``, owner PID or None) of a temporary entry's name, else None."""
    m = _LEFTOVER.match(entry_name)
    if not m:
        return None
    return m.group("name"), m.group("kind"), int(m.group("pid")) if m.group("pid") else None


# ---- owners ---------------------------------------------------------------------------------------

def _boot_time() -> float | None:
    try:
        with open("/proc/stat") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def process_start(pid: int) -> float | None:
    """Start time (epoch seconds) of process ``pid`` from ``/proc/PID/stat`` field 22; None where
    unknown (no /proc)."""
    boot = _boot_time()
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK") if boot is not None else None
    except (OSError, IndexError, ValueError):
        return None


def owner_alive(pid: int, since: float) -> bool:
    """Whether ``pid`` runs and is the process that last touched an entry at time ``since`` (a
    process that started after ``since`` merely reused the PID)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass                      # runs, under another user
    except OSError:
        return False
    start = process_start(pid)
    return start is None or start <= since + 2.0


def last_change(path: Path, depth: int = 2) -> float:
    """Newest modification time of ``path`` and the entries up to ``depth`` levels below it."""
    try:
        newest = path.lstat().st_mtime
    except OSError:
        return 0.0
    if depth and path.is_dir() and not path.is_symlink():
        try:
            for child in path.iterdir():
                newest = max(newest, last_change(child, depth - 1))
        except OSError:
            pass
    return newest


def is_stale(entry: Path, pid: int | None, now: float | None = None) -> bool:
    """A temporary entry whose writer is gone (see the module docstring)."""
    changed = last_change(entry)
    if pid is None:
        return (now or time.time()) - changed > LEGACY_AGE_S
    return not owner_alive(pid, changed)


def remove_entry(path: Path) -> None:
    """Remove a file, link or folder; missing is fine."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def sweep(folder: Path, name: str | None = None) -> list[Path]:
    """Remove the stale temporary entries in ``folder`` (of output ``name`` only, or of every
    output); a stale ``.NAME.old-*`` folder is renamed back to ``NAME`` when ``NAME`` is missing
    (the run died between its two renames). Returns the entries removed or restored."""
    done = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return done
    for entry in entries:
        parsed = leftover_of(entry.name)
        if parsed is None or (name is not None and parsed[0] != name) or not is_stale(entry, parsed[2]):
            continue
        target = entry.parent / parsed[0]
        try:
            if parsed[1] == "old" and not os.path.lexists(target):
                os.replace(entry, target)
            else:
                remove_entry(entry)
        except OSError:
            continue              # someone else's entry we may not touch: leave it
        done.append(entry)
    return done


# ---- ownership ------------------------------------------------------------------------------------

def file_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of a file (empty when it cannot be read): for ownership tests."""
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return b""


def folder_marked(path: Path, kind: str | None = None) -> bool:
    """Whether ``path`` is an output folder teg wrote (its :data:`MARKER` says so), of ``kind``
    when given."""
    try:
        doc = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(doc, dict) and doc.get("written_by") == "teg"
            and (kind is None or doc.get("kind") == kind))


def mark_folder(folder: Path, kind: str) -> None:
    """Write the :data:`MARKER` of an output folder of ``kind``."""
    from teg import __version__

    (folder / MARKER).write_text(json.dumps({"written_by": "teg", "version": __version__, "kind": kind}) + "\n")


def json_schema_owned(prefix: str) -> Owned:
    """``owned`` test for JSON documents teg writes: a top-level ``"schema"`` starting with ``prefix``."""
    def owned(path: Path) -> bool:
        try:
            with open(path, "rb") as fh:
                doc = json.loads(fh.read())
        except (OSError, ValueError):
            return False
        return isinstance(doc, dict) and str(doc.get("schema", "")).startswith(prefix)
    return owned


def check_target(target: Path, owned: Owned | None, force: bool) -> None:
    """Refuse a target that exists and that teg did not write (``force`` overrides it for a file;
    a non-empty folder teg did not write is never replaced)."""
    if not os.path.lexists(target) or (owned is not None and owned(target)):
        return
    if target.is_dir() and not target.is_symlink():
        if not any(target.iterdir()):
            return
        raise OutputError("is a folder that teg did not write; not replacing it (remove it or choose another name)",
                          target)
    if not force:
        raise OutputError("exists and was not written by teg; not overwriting it (--force overwrites it)", target)


def is_stream(path: Path) -> bool:
    """An existing target that is neither a regular file nor a folder (``/dev/null``, a pipe, a
    terminal): written in place, since renaming over it would replace the device itself."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def prepare(target: str | os.PathLike, owned: Owned | None = None, force: bool = False) -> Path:
    """Make ``target``'s folder, remove stale temporaries of ``target`` there, check the target may
    be replaced; return it as a Path (a link to a file resolved to that file)."""
    t = Path(target)
    if is_stream(t):
        return t
    if t.name in ("", ".", ".."):
        raise OutputError("an output needs a file or folder name", t)
    if t.is_symlink() and t.is_file():
        t = Path(os.path.realpath(t))
    parent = t.parent
    if os.path.lexists(parent) and not parent.is_dir():
        raise OutputError(f"cannot write here: {parent} is not a folder", t)
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputError("cannot write here: a part of its folder path is a file", t) from None
    sweep(parent, t.name)
    check_target(t, owned, force)
    return t


# ---- writing --------------------------------------------------------------------------------------

def fsync_path(path: Path) -> None:
    """``fsync`` a file or folder (folders: where the OS allows it)."""
    flags = os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() and hasattr(os, "O_DIRECTORY") else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.EISDIR):
            raise
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """``fsync`` every file below ``root``, then the folders bottom-up."""
    for dirpath, _, files in os.walk(root, topdown=False):
        for f in files:
            fsync_path(Path(dirpath) / f)
        fsync_path(Path(dirpath))


def is_write_failure(exc: BaseException) -> bool:
    """An OSError that means the output cannot be stored (full disk, quota, file size, read-only)."""
    return isinstance(exc, OSError) and exc.errno in _WRITE_ERRNOS


def write_failure(exc: OSError, target: Path) -> OutputError:
    return OutputError(f"cannot write: {exc.strerror or exc} (nothing written; partial output removed)", target)


@contextmanager
def atomic_file(target: str | os.PathLike, owned: Owned | None = None, force: bool = False,
                mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file next to ``target`` for writing; on success flush, ``fsync`` and rename
    it to ``target``; on failure remove it. See the module docstring."""
    t = prepare(target, owned, force)
    if is_stream(t):
        with open(t, mode) as fh:
            yield fh
        return
    tmp = partial_path(t)
    try:
        with open(tmp, "x" + mode.replace("w", "")) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        check_target(t, owned, force)     # nothing else appeared meanwhile
        os.replace(tmp, t)
        fsync_path(t.parent)
    except BaseException as exc:
        remove_entry(tmp)
        if is_write_failure(exc):
            raise write_failure(exc, t) from None
        raise


def write_bytes(target: str | os.PathLike, data: bytes, owned: Owned | None = None, force: bool = False) -> Path:
    """Write ``data`` to ``target`` atomically (:func:`atomic_file`)."""
    with atomic_file(target, owned, force) as fh:
        fh.write(data)
    return Path(target)


def write_text(target: str | os.PathLike, text: str, owned: Owned | None = None, force: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``target`` atomically."""
    return write_bytes(target, text.encode("utf-8"), owned, force)


def replace_folder(tmp: Path, target: Path) -> None:
    """Move the finished folder ``tmp`` to ``target`` (renaming an existing target aside first and
    removing it after)."""
    fsync_tree(tmp)
    if os.path.lexists(target):
        old = partial_path(target, "old")
        os.replace(target, old)
        try:
            os.replace(tmp, target)
        except BaseException:
            os.replace(old, target)
            raise
        remove_entry(old)
    else:
        os.replace(tmp, target)
    fsync_path(target.parent)


@contextmanager
def atomic_folder(target: str | os.PathLike, owned: Owned | None = None, kind: str | None = None,
                  force: bool = False) -> Iterator[Path]:
    """A temporary folder next to ``target`` to fill; on success it replaces ``target`` (which may
    be replaced only if empty or ``owned``, or by default an output folder teg wrote; a file there
    only with ``force``), on failure it is removed. With ``kind`` the folder gets teg's :data:`MARKER`, so a
    later run may replace it."""
    test = owned or (folder_marked if kind else None)
    t = prepare(target, test, force)
    if is_stream(t):
        raise OutputError("is not a folder (a device or pipe); cannot write a folder there", t)
    tmp = partial_path(t)
    tmp.mkdir()
    try:
        yield tmp
        if kind:
            mark_folder(tmp, kind)
        check_target(t, test, force)
        replace_folder(tmp, t)
    except BaseException as exc:
        remove_entry(tmp)
        if is_write_failure(exc):
            raise write_failure(exc, t) from None
        raise
