"""``teg trace cache``: list or clear the folder of converted Accel-Sim traces (:mod:`teg.trace.cache`)."""

from __future__ import annotations

import json
import os
import time

import click

from teg.cli.errors import user_errors


def human_bytes(n: int) -> str:
    """``1536`` → ``1.5 KiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


_WHAT = {"running": "conversion in progress", "stale": "left by a killed conversion", "spill": "inflated .npz members",
         "digests": "content digests of inputs (memo)", "in use": "being read by a running teg",
         "other": "not teg's: --clear leaves it alone"}


def _line(e) -> str:
    age = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.modified))
    what = f"{e.kernels} kernel(s) from {e.source}" if e.state == "trace" else _WHAT[e.state]
    return f"  {e.path.name:<38} {human_bytes(e.bytes):>10}  {age}  {what}"


def _kept_text(kept) -> str:
    counts = {}
    for e in kept:
        counts[e.state] = counts.get(e.state, 0) + 1
    parts = [f"{counts['running']} conversion(s) still running" if "running" in counts else "",
             f"{counts['in use']} entr{'y' if counts['in use'] == 1 else 'ies'} in use" if "in use" in counts else "",
             f"{counts['other']} item(s) teg did not write" if "other" in counts else ""]
    return "; kept " + ", ".join(p for p in parts if p) if kept else ""


@click.command("cache")
@click.option("--clear", is_flag=True, help="remove teg's entries (conversions still running, entries being read and "
              "anything teg did not write are kept)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@user_errors
def trace_cache(clear: bool, as_json: bool) -> None:
    """List the converted Accel-Sim traces kept for reuse (folder: $TEG_CACHE_DIR, else
    $XDG_CACHE_HOME/teg/traces or ~/.cache/teg/traces) with their sizes, or --clear them."""
    from teg.trace import cache

    root = cache.cache_dir()
    if clear:
        removed, kept = cache.clear(root)
        freed = sum(e.bytes for e in removed)
        if as_json:
            click.echo(json.dumps({"folder": os.fsdecode(root), "removed": [e.as_json() for e in removed],
                                   "kept": [e.as_json() for e in kept], "freed_bytes": freed}, indent=1))
            return
        click.echo(f"{root}: removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} "
                   f"({human_bytes(freed)})" + _kept_text(kept))
        return
    items = cache.entries(root)
    total = sum(e.bytes for e in items if e.teg_owns)
    if as_json:
        click.echo(json.dumps({"folder": os.fsdecode(root), "bytes": total,
                               "entries": [e.as_json() for e in items]}, indent=1))
        return
    click.echo(f"{root}: {len(items)} entr{'y' if len(items) == 1 else 'ies'}, {human_bytes(total)} of teg's")
    for e in items:
        click.echo(_line(e))
