"""Output files and folders that are never half written and never replace what a user owns.

One rule for every file or folder teg writes — native traces and conversions, the trace cache,
Accel-Sim folders, sweep CSV and Parquet, timelines, plots, calibrated tables, validation
documents and figures, emulator buffers:

* **Temporary name, then rename.** An output ``DIR/NAME`` is written as ``DIR/.NAME.partial-PID-TOKEN``
  (same folder, so same file system), flushed and ``fsync``-ed, and renamed over ``NAME`` with
  ``os.replace`` — atomic for a file, so a reader or a crash sees the old file or the new one,
  never a mix. A folder that already exists is first renamed to ``.NAME.old-PID-TOKEN``, the new
  one renamed into place, then the old one removed (two renames: a crash in between leaves the
  old folder under its ``.old-`` name, which the next run puts back). Where ``.NAME.partial-…``
  would pass the file system's longest name (``NAME_MAX``, 255 bytes), the temporary carries a
  shortened ``NAME`` and a hash of it instead, so every name the file system accepts is writable.
  A cache entry is *published* instead (:func:`publish_folder`): renamed into place only if
  nothing is there yet, so that concurrent fillers of one entry never disturb each other.
* **Ownership.** An existing output is replaced only when ``owned(path)`` says teg wrote it (a
  teg trace's ``meta.json``, a calibrated table's first line, a validation document's ``schema``,
  a timeline's ``generator``, a figure's ``Software``/``Creator`` tag, a results table's header,
  the :data:`MARKER` file of an output folder) or when the caller passes ``force`` — for a
  regular file only: a folder teg did not write is never replaced.
* **Devices and pipes** are never replaced, with or without ``force``. A character device or a
  pipe (``/dev/null``, ``/dev/stdout``, a FIFO) is written in place: the output is made complete
  in a temporary file elsewhere (a zip archive or a figure needs a seekable file), then copied
  into it; a pipe without a reader is refused rather than waited on. A block device or a socket
  is refused, and so is a folder output where any of them is.
* **Links** are followed to what they name, and the rules apply there; ``force`` never writes
  through a link into another format: a folder output through a link to a file, a file output
  through a link to a folder, or a forced file output through a link to a file of another
  suffix is refused.
* **Failure.** An exception removes the partial output; a full disk (``ENOSPC``, ``EDQUOT``,
  ``EFBIG``, ``EROFS``) becomes one :class:`OutputError` line naming the output.
* **Killed runs.** A process killed mid-write cannot clean up; every later write into the same
  folder (and every use of the trace cache) removes the ``.NAME.partial-*`` / ``.NAME.old-*``
  entries whose writer is gone. The writer holds an exclusive ``flock`` on its temporary while
  it writes, so an entry whose lock is held is alive whatever its PID says (a writer in another
  PID namespace — a container, a node of a cluster sharing the file system — has a PID this
  process cannot see). An entry whose lock is free is stale when its owner PID no longer runs,
  or is a newer process that reused the PID (its start time, ``/proc/PID/stat``, is later than
  the entry), or when nothing in it changed for :data:`LEGACY_AGE_S`. On a file system without
  ``flock`` the PID must be gone *and* the entry untouched for :data:`QUIET_S`. Entries of
  older teg versions carry no PID; they are removed once untouched for :data:`LEGACY_AGE_S`.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterator

from teg import TegError

try:
    import fcntl
except ImportError:               # no POSIX locks (Windows): liveness falls back to PIDs and age
    fcntl = None

MARKER = ".teg-output"            # JSON file inside an output folder teg wrote: {"written_by": "teg", "kind": ...}
LEGACY_AGE_S = 24 * 3600          # temporaries untouched this long are stale whatever their PID says
QUIET_S = 600                     # without flock: a temporary of a gone PID must also be untouched this long
NAME_MAX = 255                    # longest file name (bytes) where the file system does not say
_TEMP_RESERVE = 40                # bytes a temporary name adds to its output's: "." ".partial-" PID "-" token
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>partial|old)-(?:(?P<pid>\d+)(?:-[0-9a-f]+)?|[A-Za-z0-9_]{8})"
                       r"(?:\..*)?$", re.S)

Owned = Callable[[Path], bool]


class OutputError(TegError):
    """An output teg must not or cannot write: ``<path>: <problem>`` on one line."""

    def __init__(self, message: str, path: str | os.PathLike):
        super().__init__(f"{path}: {message}")
        self.path = str(path)


# ---- names of temporary entries -------------------------------------------------------------------

def name_max(folder: Path) -> int:
    """Longest file name (bytes) the file system of ``folder`` takes (its nearest existing ancestor's)."""
    f = Path(folder)
    while not f.exists() and f != f.parent:
        f = f.parent
    try:
        return int(os.pathconf(f, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return NAME_MAX


def temp_stem(name: str, limit: int = NAME_MAX) -> str:
    """``name`` as its temporaries carry it: itself, or where ``.NAME.partial-PID-TOKEN`` would pass
    ``limit`` bytes, its first bytes, ``~`` and 12 hex digits of its SHA-1."""
    raw = os.fsencode(name)
    if len(raw) + _TEMP_RESERVE <= limit:
        return name
    return os.fsdecode(raw[:max(1, limit - _TEMP_RESERVE - 13)]) + "~" + hashlib.sha1(raw).hexdigest()[:12]


def partial_path(target: Path, kind: str = "partial") -> Path:
    """``DIR/.NAME.<kind>-PID-TOKEN``: a fresh temporary name next to ``target``."""
    target = Path(target)
    stem = temp_stem(target.name, name_max(target.parent))
    return target.parent / f".{stem}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def leftover_of(entry_name: str) -> tuple[str, str, int | None] | None:
    """(output name as temporaries carry it, ``partial``/``old``, owner PID or None) of a temporary
    entry's name, else None."""
    m = _LEFTOVER.match(entry_name)
    if not m:
        return None
    return m.group("name"), m.group("kind"), int(m.group("pid")) if m.group("pid") else None


# ---- locks: who is still writing (or reading) an entry ---------------------------------------------

def flock(fd: int, exclusive: bool = True, wait: bool = False) -> bool | None:
    """``flock`` ``fd``: True when taken, False when another holder has it (and ``wait`` is False),
    None when the file system (or the OS) does not lock."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB))
        return True
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        return None


def open_lock(path: Path, exclusive: bool = True, wait: bool = False) -> tuple[int | None, bool | None]:
    """Open ``path`` (file or folder) and ``flock`` it: ``(fd, taken)`` — close ``fd`` to release;
    ``fd`` None when ``path`` cannot be opened (gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None, None
    taken = flock(fd, exclusive, wait)
    if taken is None and exclusive and not os.path.isdir(path):    # NFS: exclusive locks need write access
        try:
            fd2 = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
            os.close(fd)
            fd = fd2
            taken = flock(fd, exclusive, wait)
        except OSError:
            pass
    return fd, taken


def close_fd(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def lock_held(path: Path) -> bool | None:
    """Whether some process holds a lock on ``path`` (None: no locks on this file system, or gone)."""
    fd, taken = open_lock(path, exclusive=True, wait=False)
    close_fd(fd)
    return None if taken is None else not taken


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
    """A temporary entry whose writer is gone (see the module docstring): its lock is free and its
    PID gone, reused or silent for a day; without locks, its PID gone and quiet for QUIET_S."""
    held = lock_held(entry)
    if held:
        return False
    age = (now or time.time()) - last_change(entry)
    if pid is None or age > LEGACY_AGE_S:
        return age > LEGACY_AGE_S
    gone = not owner_alive(pid, time.time() - age)
    return gone if held is False else gone and age > QUIET_S


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
    stems = None if name is None else {name, temp_stem(name, name_max(Path(folder)))}
    for entry in entries:
        parsed = leftover_of(entry.name)
        if parsed is None or (stems is not None and parsed[0] not in stems) or not is_stale(entry, parsed[2]):
            continue
        target = entry.parent / (name if name is not None else parsed[0])
        try:
            if parsed[1] == "old" and not os.path.lexists(target):
                if name is None and temp_stem(parsed[0]) != parsed[0]:
                    continue      # a shortened name: only a write of that output knows where it goes back
                os.replace(entry, target)
            else:
                remove_entry(entry)
        except OSError:
            continue              # someone else's entry we may not touch: leave it
        done.append(entry)
    return done


# ---- ownership ------------------------------------------------------------------------------------

def file_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of a regular file (empty when it cannot be read, or is not a
    regular file: a pipe or a device would block or never end): for ownership tests."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return b""
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

    doc = json.dumps({"written_by": "teg", "version": __version__, "kind": kind}) + "\n"
    write_text(folder / MARKER, doc, owned=lambda _: True)      # atomic: never a cut marker


def json_schema_owned(prefix: str) -> Owned:
    """``owned`` test for JSON documents teg writes: a top-level ``"schema"`` starting with ``prefix``."""
    def owned(path: Path) -> bool:
        head = file_head(path, 1 << 26)
        try:
            doc = json.loads(head)
        except ValueError:
            return False
        return isinstance(doc, dict) and str(doc.get("schema", "")).startswith(prefix)
    return owned


def head_owned(*marks: bytes, start: bytes = b"") -> Owned:
    """``owned`` test: the file begins with ``start`` and its first 4 KiB hold one of ``marks``."""
    def owned(path: Path) -> bool:
        head = file_head(path)
        return head.startswith(start) and any(m in head for m in marks)
    return owned


# a figure teg drew: PNG tEXt "Software" = "teg …", SVG dc:creator "teg …" (teg.report.plots)
png_owned = head_owned(b"Software\x00teg ", start=b"\x89PNG")
svg_owned = head_owned(b"<dc:title>teg ", start=b"<?xml")


def figure_owned(path: Path) -> bool:
    """A PNG or SVG figure teg drew."""
    return png_owned(path) or svg_owned(path)


# ---- the target -----------------------------------------------------------------------------------

def stream_kind(path: Path) -> str | None:
    """What an existing non-regular, non-folder target is (``character device``, ``pipe``, ``block
    device``, ``socket``), following links; None for a regular file, a folder or nothing."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, name in ((stat.S_ISCHR, "character device"), (stat.S_ISFIFO, "pipe"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def is_stream(path: Path) -> bool:
    """An existing target that is neither a regular file nor a folder (``/dev/null``, a pipe, a
    terminal)."""
    return stream_kind(path) is not None


def writable_in_place(kind: str | None) -> bool:
    return kind in ("character device", "pipe")


def check_target(target: Path, owned: Owned | None, force: bool, folder: bool | None = None,
                 link: Path | None = None) -> None:
    """Refuse a target that exists and may not be replaced (module docstring): a device, pipe or
    socket; a non-empty folder teg did not write; a file teg did not write unless ``force`` — and
    never when reached through ``link`` into another format (a folder output, another suffix)."""
    target = Path(target)
    if not os.path.lexists(target):
        return
    kind = stream_kind(target)
    if kind is not None:
        raise OutputError(f"is a {kind}; teg never replaces one, with or without --force (choose another name)",
                          target)
    if owned is not None and owned(target):
        return
    if target.is_dir() and not target.is_symlink():
        if not any(target.iterdir()):
            return
        raise OutputError("is a folder that teg did not write; not replacing it (remove it or choose another name)",
                          target)
    if not force:
        raise OutputError("exists and was not written by teg; not overwriting it (--force overwrites it)", target)
    if link is not None and (folder or Path(link).suffix.lower() != target.suffix.lower()):
        raise OutputError(f"is a link to {target}, a file of another format; --force does not write through a "
                          "link into another format (remove the link or choose another name)", link)


def prepare(target: str | os.PathLike, owned: Owned | None = None, force: bool = False,
            folder: bool | None = None) -> Path:
    """Check that ``target`` may be written (``folder``: True a folder, False a file, None not said:
    the checks that depend on the kind are left to the writer), make its folder, remove stale
    temporaries of it there; return the path to write (a link resolved to what it names; a
    character device or pipe as it is: written in place)."""
    t = Path(target)
    if t.name in ("", ".", ".."):
        raise OutputError("an output needs a file or folder name", t)
    kind = stream_kind(t)
    if kind is not None:
        if folder:
            raise OutputError(f"is not a folder but a {kind}; teg writes a folder here and never replaces a "
                              f"{kind}, with or without --force (choose another name)", t)
        if not writable_in_place(kind):
            raise OutputError(f"is a {kind}; teg writes into character devices and pipes only, and never "
                              "replaces one (choose another name)", t)
        return t
    link = None
    if t.is_symlink():
        link, t = t, Path(os.path.realpath(t))
        if folder is not None and os.path.lexists(t) and not t.is_symlink() and t.is_dir() != folder:
            raise OutputError(f"is a link to a {'folder' if t.is_dir() else 'file'} ({t}); teg writes a "
                              f"{'folder' if folder else 'file'} here and does not write through a link into "
                              "another format, even with --force", link)
    parent = t.parent
    if os.path.lexists(parent) and not parent.is_dir():
        raise OutputError(f"cannot write here: {parent} is not a folder", t)
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputError("cannot write here: a part of its folder path is a file", t) from None
    sweep(parent, t.name)
    check_target(t, owned, force, folder, link)
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


def open_in_place(target: Path):
    """A binary write handle on the character device or pipe ``target``; a pipe must have a reader
    (opened without waiting: a FIFO nobody reads is refused, not waited on forever)."""
    if stream_kind(target) == "pipe":
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise OutputError("is a pipe that nobody reads; nothing written", target) from None
            raise
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb")
    return open(target, "wb")


def _copy_in_place(src, target: Path) -> None:
    src.seek(0)
    try:
        with open_in_place(target) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except BrokenPipeError:
        raise OutputError("the pipe's reader went away; the output is incomplete there", target) from None
    except OSError as exc:
        if is_write_failure(exc):
            raise OutputError(f"cannot write: {exc.strerror or exc}", target) from None
        raise


@contextmanager
def atomic_file(target: str | os.PathLike, owned: Owned | None = None, force: bool = False,
                mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file next to ``target`` for writing; on success flush, ``fsync`` and rename
    it to ``target``; on failure remove it. A character device or pipe is written in place once
    the output is complete. See the module docstring."""
    t = prepare(target, owned, force, folder=False)
    if is_stream(t):
        with tempfile.NamedTemporaryFile("w+b", prefix="teg-out-") as tmpf:
            if "b" in mode:
                yield tmpf
            else:
                text = io.TextIOWrapper(tmpf, encoding="utf-8")
                yield text
                text.flush()
                text.detach()
            tmpf.flush()
            _copy_in_place(tmpf, t)
        return
    tmp = partial_path(t)
    try:
        with open(tmp, "x" + mode.replace("w", "")) as fh:
            flock(fh.fileno())                 # alive while held (module docstring)
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        check_target(t, owned, force, folder=False)          # nothing else appeared meanwhile
        if t.is_dir() and not t.is_symlink():  # an output folder teg wrote, replaced by a file
            replace_folder(tmp, t)
        else:
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
    """Move the finished ``tmp`` (a folder, or a file replacing an output folder) to ``target``
    (renaming an existing target aside first and removing it after)."""
    if tmp.is_dir():
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


def publish_folder(tmp: Path, target: Path) -> bool:
    """Rename the finished folder ``tmp`` to ``target`` only if nothing is there yet (a cache entry:
    the first filler wins, and a reader of the entry already there is never disturbed). Returns
    False, leaving ``tmp`` in place, when ``target`` exists."""
    fsync_tree(tmp)
    if os.path.lexists(target) and not (target.is_dir() and not any(target.iterdir())):
        return False
    try:
        os.rename(tmp, target)            # a non-empty folder there (a concurrent filler): refused
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return False
        raise
    fsync_path(target.parent)
    return True


class TempFolder:
    """A temporary folder next to ``target`` (:func:`partial_path`), locked while it is filled."""

    def __init__(self, target: Path):
        self.path = partial_path(target)
        self.path.mkdir()
        self.fd, _ = open_lock(self.path)

    def release(self) -> None:
        close_fd(self.fd)
        self.fd = None

    def discard(self) -> None:
        self.release()
        remove_entry(self.path)


@contextmanager
def atomic_folder(target: str | os.PathLike, owned: Owned | None = None, kind: str | None = None,
                  force: bool = False) -> Iterator[Path]:
    """A temporary folder next to ``target`` to fill; on success it replaces ``target`` (which may
    be replaced only if empty or ``owned``, or by default an output folder teg wrote; a file there
    only with ``force``; never a device or pipe), on failure it is removed. With ``kind`` the
    folder gets teg's :data:`MARKER`, so a later run may replace it."""
    test = owned or (folder_marked if kind else None)
    t = prepare(target, test, force, folder=True)
    tmp = TempFolder(t)
    try:
        yield tmp.path
        if kind:
            mark_folder(tmp.path, kind)
        check_target(t, test, force, folder=True)
        replace_folder(tmp.path, t)
        tmp.release()
    except BaseException as exc:
        tmp.discard()
        if is_write_failure(exc):
            raise write_failure(exc, t) from None
        raise
