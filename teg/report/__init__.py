"""teg.report — text tables and JSON/CSV views of results, what-ifs and sweeps."""

from teg.report.tables import result_text, sweep_text, to_csv, to_json, whatif_text

__all__ = ["result_text", "whatif_text", "sweep_text", "to_json", "to_csv"]
