"""The fixed-width text table every text view prints."""

from __future__ import annotations


def table(headers: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """Plain fixed-width table; ``align`` per column ``l``/``r`` (default: first left, rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def fmt(cells):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)).rstrip()

    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])
