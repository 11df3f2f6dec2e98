"""The numba decorator for teg's jitted helpers, and the freshness of a cached entry's callees."""

from __future__ import annotations

import os

from numba import njit


def inner(**options):
    """``njit(cache=True, **options)`` for a function that only jitted code calls: compiled
    without numba's Python and C entry points (the wrappers a call from Python goes through,
    which a jitted caller never uses; generating them is a good part of a small function's
    compile time, about 1 s of the engine's cold start). Such a function cannot be called from
    Python. ``cache=False`` leaves it out of numba's on-disk cache (it is compiled into the cached
    function that calls it)."""
    return njit(**{"cache": True, **options}, no_cpython_wrapper=True, no_cfunc_wrapper=True)


def stamp_sources(dispatcher, modules) -> None:
    """Make the on-disk cache of the jitted ``dispatcher`` stale whenever the source file of any of
    ``modules`` changes, not only its own: numba keys a cached function by its own file's time and
    size, but the cached machine code holds its callees' too (inlined or linked in), so an edit of
    a callee's module alone would leave the old code in use. The stamp numba compares on load
    becomes the pair of its own and ``(name, mtime, size)`` of each of those files."""
    files = sorted({os.path.abspath(m.__file__) for m in modules})
    stamp = tuple((os.path.basename(f), os.stat(f).st_mtime, os.stat(f).st_size) for f in files)
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is not None and hasattr(cache_file, "_source_stamp"):
        cache_file._source_stamp = (cache_file._source_stamp, stamp)
