"""CSV of plain rows (the header from the first row's keys)."""

from __future__ import annotations

import csv
import io


def rows_csv(dicts: list[dict]) -> str:
    buf = io.StringIO()
    if dicts:
        w = csv.DictWriter(buf, fieldnames=list(dicts[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(dicts)
    return buf.getvalue()
