"""The numba decorator for teg's jitted helpers."""

from __future__ import annotations

from numba import njit


def inner(**options):
    """``njit(cache=True, **options)`` for a function that only jitted code calls: compiled
    without numba's Python and C entry points (the wrappers a call from Python goes through,
    which a jitted caller never uses; generating them is a good part of a small function's
    compile time, about 1 s of the engine's cold start). Such a function cannot be called from
    Python."""
    return njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True, **options)
