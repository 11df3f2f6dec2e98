"""The fixed-width text table every text view prints, and the number formats its cells share."""

from __future__ import annotations


def table(headers: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """Plain fixed-width table; ``align`` per column ``l``/``r`` (default: first left, rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def fmt(cells):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)).rstrip()

    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def count(v) -> str:
    """A whole number with thousands separators, ``-`` for None."""
    return "-" if v is None else f"{v:,}"


def micros(v) -> str:
    """Microseconds to three decimals with thousands separators, ``-`` for None."""
    return "-" if v is None else f"{v:,.3f}"
