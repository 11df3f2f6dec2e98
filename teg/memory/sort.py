"""Small jitted helpers shared by the memory precomputations."""

from __future__ import annotations

from teg.jit import njit


@njit(cache=True)
def sort_prefix(a, n):
    """Sort ``a[:n]`` in place by insertion: the lanes of a warp access are mostly in address
    order already, so this is near-linear there, and it allocates nothing (``np.sort`` would copy
    at every call)."""
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
