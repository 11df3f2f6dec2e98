"""The what-if table of one kernel (:func:`teg.analysis.whatif.whatif`): its text, its JSON and
its CSV side by side, from the same rows."""

from __future__ import annotations

import json

from teg.report.layout import table
from teg.report.rows import rows_csv
from teg.report.summary import setup_lines

COLUMNS = ("mechanism", "description", "cycles", "saved", "speedup", "schedule", "free_cycles", "replay_cycles")


def whatif_data(rows) -> list[dict]:
    """One plain dict per row (:data:`COLUMNS`), baseline first."""
    return [{c: getattr(r, c) for c in COLUMNS} for r in rows]


def whatif_json(rows) -> str:
    return json.dumps(whatif_data(rows), indent=2)


def whatif_csv(rows) -> str:
    return rows_csv(whatif_data(rows))


def whatif_text(rows, setup=None) -> str:
    """The what-if table, under the run's setup (:class:`teg.engine.setup.RunSetup`) when given."""
    body = [[r.mechanism, r.description, str(r.cycles), str(r.saved), f"{r.speedup:.3f}" + (" !" if r.anomaly else ""),
             r.schedule] for r in rows]
    out = table(["mechanism", "removed", "cycles", "saved", "speedup", "schedule"], body, "llrrrl")
    if setup is not None:
        out = "\n".join(setup_lines(setup)) + "\n\n" + out
    out += ("\nschedule: free = re-simulated with the mechanism removed, replay = the baseline's issue order"
            " replayed; the better of the two (docs/model.md, \"what a what-if means\")")
    if any(r.anomaly for r in rows):
        out += ("\n! slower than the baseline: the balanced channel spread is a different assignment than the"
                " address pattern's, not a removed delay (docs/model.md)")
    return out
