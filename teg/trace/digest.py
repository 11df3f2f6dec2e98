"""Content digests of input files: SHA-256 of the bytes, for keys that must change whenever an
input's content does (the trace cache's entries, a sweep point's experiment key).

Hashing is verified, not sampled: every byte is read once (about 1.2 GB/s here). The digest is then
memoized under the file's *fingerprint* — device, inode, size, modification time and status-change
time (``ctime``) — in memory and in the trace cache's ``digests/`` folder, so a later run only
``stat``-s the file. ``ctime`` is what makes the fingerprint trustworthy: the kernel sets it on every
write and every metadata change, and nothing a user runs can set it back (``cp -p``, ``rsync -t``
and ``touch -d`` restore the modification time only), so an edit of the same size under the same
modification time still changes the fingerprint. A file whose ``ctime`` is less than
:data:`RACY_S` before its hashing began could still change within the same timestamp tick; its
digest is used but not memoized (git's "racily clean" rule). A file that changes while it is being
hashed is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path

RACY_S = 2.0
CHUNK = 1 << 20
DIGESTS = "digests"            # folder of the memo inside the trace cache
DIGESTS_KIND = "digest-memo"    # its teg.fileio marker kind

_MEMO: dict[str, str] = {}


def fingerprint(st: os.stat_result) -> str:
    """The stat fields that change whenever a file's content may have (module docstring)."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _memo_file(root: Path | None, fp: str) -> Path | None:
    if root is None:
        return None
    return root / DIGESTS / hashlib.sha1(fp.encode()).hexdigest()[:32]


def _recall(root: Path | None, fp: str) -> str | None:
    if fp in _MEMO:
        return _MEMO[fp]
    f = _memo_file(root, fp)
    if f is None:
        return None
    try:
        doc = json.loads(f.read_bytes()[:4096])
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and doc.get("fingerprint") == fp and isinstance(doc.get("sha256"), str):
        _MEMO[fp] = doc["sha256"]
        return doc["sha256"]
    return None


def _remember(root: Path | None, fp: str, digest: str) -> None:
    _MEMO[fp] = digest
    f = _memo_file(root, fp)
    if f is None:
        return
    from teg import fileio

    try:
        if not f.parent.is_dir():
            f.parent.mkdir(parents=True, exist_ok=True)
            fileio.mark_folder(f.parent, DIGESTS_KIND)
        fileio.write_text(f, json.dumps({"fingerprint": fp, "sha256": digest}) + "\n", lambda _: True)
    except (OSError, fileio.OutputError):
        pass                               # a memo that cannot be stored: hashed again next time


def file_digest(path: str | os.PathLike, memo_root: Path | None = None) -> str:
    """SHA-256 (hex) of the regular file ``path``, memoized by fingerprint (in ``memo_root``'s
    ``digests/`` too when given)."""
    for _ in range(3):
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{os.fsdecode(os.fspath(path))}: not a regular file")
        fp = fingerprint(st)
        known = _recall(memo_root, fp)
        if known is not None:
            return known
        began = time.time()
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while True:
                block = fh.read(CHUNK)
                if not block:
                    break
                h.update(block)
        if fingerprint(os.stat(path)) != fp:
            continue                       # changed while read: hash the new content
        digest = h.hexdigest()
        if began - st.st_ctime > RACY_S:
            _remember(memo_root, fp, digest)
        return digest
    return digest                           # still changing: the last complete read's digest


def tree_digest(root: str | os.PathLike, memo_root: Path | None = None) -> str:
    """SHA-256 over the relative names and digests of every file below the folder ``root``."""
    h = hashlib.sha256(b"teg-tree-v1")
    base = Path(root)
    for dirpath, dirs, files in os.walk(base):
        dirs.sort()
        for name in sorted(files):
            f = Path(dirpath) / name
            h.update(os.fsencode(f.relative_to(base).as_posix()) + b"\0")
            h.update(file_digest(f, memo_root).encode() + b"\0")
    return h.hexdigest()


def path_digest(path: str | os.PathLike, memo_root: Path | None = None) -> str:
    """:func:`file_digest` of a file, :func:`tree_digest` of a folder."""
    return tree_digest(path, memo_root) if Path(path).is_dir() else file_digest(path, memo_root)
