"""The conversion cache of :func:`teg.trace.load`: list its entries with their sizes, clear it.

Each entry of :func:`teg.trace.cache_dir` is a native trace converted from one Accel-Sim input
(its ``meta.json`` names the input), or a temporary ``.KEY.partial-PID-TOKEN`` folder of a
conversion in progress or killed (:mod:`teg.fileio`). Clearing removes everything except the
temporary folders of conversions that are still running.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from teg import fileio


@dataclass(frozen=True)
class CacheEntry:
    """One entry of the cache folder."""

    path: Path
    bytes: int
    modified: float            # newest modification time (epoch seconds)
    state: str                 # "trace", "running" (a live conversion), "stale" (a killed one), "other"
    source: str = ""           # the Accel-Sim input a trace was converted from
    kernels: int = 0

    def as_json(self) -> dict:
        return {"path": str(self.path), "bytes": self.bytes, "modified": self.modified, "state": self.state,
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


def describe(path: Path) -> CacheEntry:
    """The :class:`CacheEntry` of one item of the cache folder."""
    size, changed = tree_bytes(path), fileio.last_change(path)
    leftover = fileio.leftover_of(path.name)
    if leftover is not None:
        state = "stale" if fileio.is_stale(path, leftover[2]) else "running"
        return CacheEntry(path, size, changed, state)
    try:
        meta = json.loads((path / "meta.json").read_text())
        return CacheEntry(path, size, changed, "trace", str(meta.get("source", "")), len(meta.get("kernels", [])))
    except (OSError, ValueError, AttributeError, TypeError):
        return CacheEntry(path, size, changed, "other")


def entries(root: str | os.PathLike) -> list[CacheEntry]:
    """Every item of the cache folder ``root``, newest first (none when it does not exist)."""
    r = Path(root)
    if not r.is_dir():
        return []
    return sorted((describe(p) for p in r.iterdir()), key=lambda e: -e.modified)


def clear(root: str | os.PathLike) -> tuple[list[CacheEntry], list[CacheEntry]]:
    """Remove every item of ``root`` except running conversions; return (removed, kept)."""
    removed, kept = [], []
    for e in entries(root):
        if e.state == "running":
            kept.append(e)
            continue
        fileio.remove_entry(e.path)
        removed.append(e)
    return removed, kept
