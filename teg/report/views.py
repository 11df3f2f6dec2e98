"""The views of one estimate (``teg estimate``), each owning its text and its part of the JSON side by
side, as llvm-mca's views do (``printView`` / ``toJSON``): a report is a list of views, its text
their texts one after another, its JSON their parts merged in order.

* :class:`SummaryView` — the summary (setup, cycles, time, IPC, occupancy, blocks, notes) and/or the
  stall breakdown (:mod:`teg.report.summary`); its JSON is the estimate's own
  (:func:`~teg.report.summary.summary_data`);
* :class:`InstructionsView` — every static instruction with its waits by cause
  (:mod:`teg.report.instructions`); its JSON is ``instructions``; the run must record them
  (``records``).

Each view takes an :class:`teg.engine.runner.Estimate` (the result, the lowered input and the
kernel's inputs)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

SECTIONS = ("summary", "stalls")    # the --view names SummaryView draws


class View(Protocol):
    """A view of one estimate: what the run must record for it, its text, its part of the JSON."""

    records: frozenset[str]

    def text(self, est) -> str: ...

    def data(self, est) -> dict: ...


@dataclass(frozen=True)
class SummaryView:
    """The summary and stall sections named in ``sections`` (:data:`SECTIONS`)."""

    sections: tuple[str, ...] = SECTIONS
    records: frozenset[str] = frozenset()

    def text(self, est) -> str:
        from teg.report.summary import summary_text

        return summary_text(est.result, views=self.sections)

    def data(self, est) -> dict:
        from teg.report.summary import summary_data

        return summary_data(est.result)


@dataclass(frozen=True)
class InstructionsView:
    """The per-instruction table; the run records its waits (``records``)."""

    records: frozenset[str] = frozenset({"instructions"})

    def text(self, est) -> str:
        from teg.report.instructions import instructions_text

        return instructions_text(self._rows(est))

    def data(self, est) -> dict:
        return {"instructions": self._rows(est)}

    @staticmethod
    def _rows(est) -> list[dict]:
        from teg.report.instructions import instruction_rows

        return instruction_rows(est.result, est.lowered, est.inputs.program)


ALL_VIEWS: tuple[View, ...] = (SummaryView(), InstructionsView())     # what --json carries


def estimate_views(names: tuple[str, ...]) -> tuple[View, ...]:
    """The views ``--view`` names (:func:`teg.report.instructions.parse_views`): the summary and
    stall sections in one :class:`SummaryView`, first, then the instructions."""
    sections = tuple(n for n in names if n in SECTIONS)
    return ((SummaryView(sections),) if sections else ()) + ((InstructionsView(),) if "instructions" in names else ())


def views_text(views, est) -> str:
    """The views' texts, one after another."""
    return "\n\n".join(v.text(est) for v in views)


def views_json(views, est) -> str:
    """The views' JSON parts merged in order, as one document."""
    doc: dict = {}
    for v in views:
        doc.update(v.data(est))
    return json.dumps(doc, indent=2)


def records_of(views) -> frozenset[str]:
    """What the run must record for ``views``."""
    return frozenset().union(*(v.records for v in views))
