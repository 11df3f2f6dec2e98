"""The rows of an application sweep (:func:`teg.analysis.sweepspec.run_spec`, one
:class:`~teg.analysis.sweepspec.PointRow` per point): their text, JSON and CSV side by side, the
CSV's columns those of the row (:data:`teg.analysis.sweepspec.COLUMNS`, the ``-o`` table's)."""

from __future__ import annotations

import json

from teg.analysis.sweepspec import COLUMNS
from teg.report.layout import count, micros, table
from teg.sass.demangle import short_name


def points_text(rows) -> str:
    """The points as a table, in point order."""
    body = [[r.kernel_id, short_name(r.kernel or "", 40), r.machine_table or r.machine, r.warps, r.whatif,
             count(r.cycles), count(r.baseline_cycles), micros(r.time_us), "-" if r.ipc is None else f"{r.ipc:.3f}",
             r.schedule or "", "ok" if r.status == "ok" else f"error: {r.error}"] for r in rows]
    return table(["id", "kernel", "machine", "warps", "whatif", "cycles", "baseline", "time (us)", "IPC",
                  "schedule", "status"], body, "lllrlrrrrll")


def points_json(rows) -> str:
    """One object per point, its keys :data:`~teg.analysis.sweepspec.COLUMNS`."""
    return json.dumps([r.data() for r in rows], indent=1)


def points_csv(rows) -> str:
    """The points as CSV, the ``-o`` table's header and lines."""
    from teg.analysis.rowlog import csv_line

    data = csv_line(COLUMNS) + b"".join(csv_line([getattr(r, c) for c in COLUMNS]) for r in rows)
    return data.decode("utf-8", "surrogateescape")
