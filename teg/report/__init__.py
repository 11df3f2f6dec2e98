"""Views of engine results: each view module holds a result's text and its JSON side by side —
:mod:`~teg.report.summary` (one estimate), :mod:`~teg.report.instructions`,
:mod:`~teg.report.timeline`, :mod:`~teg.report.whatif`, :mod:`~teg.report.sweep`,
:mod:`~teg.report.application`, :mod:`~teg.report.points` — :mod:`~teg.report.views` lists the
views of one estimate (a report is a list of them), and :mod:`~teg.report.plots` draws them."""

from teg.report.summary import setup_lines, summary_data, summary_text
from teg.report.sweep import sweep_csv, sweep_data, sweep_json, sweep_text
from teg.report.whatif import whatif_csv, whatif_data, whatif_json, whatif_text

result_text = summary_text      # the name the Python API has used

__all__ = ["summary_text", "summary_data", "result_text", "setup_lines", "whatif_text", "whatif_data", "whatif_json",
           "whatif_csv", "sweep_text", "sweep_data", "sweep_json", "sweep_csv"]
