"""The scaling sweep of one kernel (:func:`teg.analysis.sweep.sweep`): its text, its JSON and its
CSV side by side, from the same rows."""

from __future__ import annotations

import json

from teg.report.layout import table
from teg.report.rows import rows_csv
from teg.report.summary import setup_lines

COLUMNS = ("warps", "blocks", "cycles", "instructions", "throughput", "speedup")


def sweep_data(rows) -> list[dict]:
    """One plain dict per point (:data:`COLUMNS`)."""
    return [{c: getattr(r, c) for c in COLUMNS} for r in rows]


def sweep_json(rows) -> str:
    return json.dumps(sweep_data(rows), indent=2)


def sweep_csv(rows) -> str:
    return rows_csv(sweep_data(rows))


def sweep_text(rows) -> str:
    """The sweep table, under the setup of its runs: each row is N warps (B blocks) on the
    simulated SM, every SM of the GPU assumed to run the same."""
    blocks = any(r.blocks is not None for r in rows)
    head = (["blocks"] if blocks else []) + ["warps", "cycles", "instructions", "instr/cycle", "speedup"]
    body = [([str(r.blocks)] if blocks else []) + [str(r.warps), str(r.cycles), str(r.instructions),
                                                   f"{r.throughput:.4f}", f"{r.speedup:.3f}"] for r in rows]
    out = table(head, body, "r" * len(head))
    if rows and rows[0].setup is not None:
        out = "\n".join(setup_lines(rows[0].setup, warps=False)) + "\n\n" + out
    return out
