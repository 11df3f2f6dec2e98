"""Locate the data shipped with teg: machine tables (``isa_tables/``) and bundled example traces
(``traces/``).

From an installed wheel they live in ``teg/_data/`` (hatch ``force-include``); from a source
checkout or an editable install they are the top-level folders of the repository.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    """Return the directory holding shipped data ``name`` (wheel layout first, then checkout)."""
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"teg data folder {name!r} not found (looked in {_PKG / '_data' / name} and {_PKG.parent / name})"
    )


def isa_tables_dir() -> Path:
    """Directory of the machine tables ``*.yaml``."""
    return _data_dir("isa_tables")


def traces_dir() -> Path:
    """Directory of the bundled example inputs (SASS + traces)."""
    return _data_dir("traces")
