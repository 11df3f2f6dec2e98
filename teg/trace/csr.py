"""CSR (ragged) tables of a trace — warps' rows over ``warp_start``, rows' addresses over
``addr_start`` — gathered for a subset or repetition of their entries without per-entry Python
and without temporaries the size of the result."""

from __future__ import annotations

import numpy as np

from teg.jit import njit


def gather(start: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | slice]:
    """New CSR offsets (int64 ``[len(rows) + 1]``) and the element indices of entries ``rows``
    of the CSR table over ``start``, in order. The indices are an int64 array, or — when ``rows``
    is one ascending run of consecutive entries (every warp of a whole-GPU run) — the equivalent
    ``slice``, so that indexing with them gives a view instead of a copy."""
    start = np.asarray(start, np.int64)
    rows = np.asarray(rows, np.int64)
    n = rows.shape[0]
    if n and _consecutive(rows):
        r0, r1 = int(rows[0]), int(rows[-1]) + 1
        return start[r0:r1 + 1] - start[r0], slice(int(start[r0]), int(start[r1]))
    new_start = np.zeros(n + 1, np.int64)
    np.cumsum(start[rows + 1] - start[rows], out=new_start[1:])
    idx = np.empty(int(new_start[-1]), np.int64)
    _fill(start, rows, idx)
    return new_start, idx


@njit(cache=True)
def _consecutive(rows):
    for j in range(1, rows.shape[0]):
        if rows[j] != rows[j - 1] + 1:
            return False
    return True


@njit(cache=True)
def _fill(start, rows, idx):
    pos = 0
    for j in range(rows.shape[0]):
        for k in range(start[rows[j]], start[rows[j] + 1]):
            idx[pos] = k
            pos += 1
