"""Sectored set-associative LRU caches (L1 per SM, L2 shared; nvidia_timing_facts.md §4.2).

A cache of ``size`` bytes, ``line`` bytes per line, ``sector`` bytes per sector and ``assoc`` ways
has ``sets = size / (line * assoc)``. Line ``L = addr // line`` lives in set ``L mod sets`` with
tag ``L // sets``. An access hits when the tag is present *and* its sector is valid; a tag hit
with an invalid sector fills the sector (sector miss); a tag miss replaces the least recently used
way (its sectors are dropped). Every access makes its line most recently used.

State is three arrays of shape ``(caches * sets, assoc)`` — ``tags`` (−1 = empty), ``stamps``
(last-use counter) and ``valid`` (sector bit mask) — so the engine's jitted loop can keep one L1
per simulated SM in the same arrays (cache ``c`` uses rows ``c*sets … c*sets+sets-1``).
"""

from __future__ import annotations

from numba import njit


def cache_geometry(size_bytes: int, line_bytes: int, sector_bytes: int, assoc: int) -> tuple[int, int, int, int]:
    """``(sets, assoc, line_bytes, sector_bytes)`` with at least one set; ``assoc`` is capped at
    the number of lines. Line and sector sizes must be powers of two (the machine schema checks
    it), so that :func:`cache_shape` can turn them into shifts."""
    if line_bytes & (line_bytes - 1) or sector_bytes & (sector_bytes - 1) or sector_bytes > line_bytes:
        raise ValueError(f"cache line {line_bytes} B / sector {sector_bytes} B: both must be powers of two, "
                         "sector <= line")
    lines = max(1, size_bytes // line_bytes)
    assoc = max(1, min(assoc, lines))
    sets = max(1, lines // assoc)
    return sets, assoc, line_bytes, sector_bytes


@njit(cache=True)
def _log2(x):
    """Exponent of the power of two ``x``; -1 when ``x`` is not one."""
    if x <= 0 or x & (x - 1):
        return -1
    k = 0
    while (1 << k) < x:
        k += 1
    return k


@njit(cache=True)
def cache_shape(sets, assoc, line_bytes, sector_bytes):
    """The geometry as :func:`cache_access` uses it (arguments as :func:`cache_geometry` returns
    and checks them): ``(sets, assoc, line_shift, sector_shift, set_shift)``, where ``set_shift`` is -1 when ``sets`` is not a power of two (the set index then
    needs a division). Integer division by a run-time value is the slowest arithmetic a CPU does,
    and an access would otherwise make four of them."""
    return sets, assoc, _log2(line_bytes), _log2(sector_bytes), _log2(sets)


@njit(cache=True)
def cache_access(tags, stamps, valid, cache_index, shape, addr, stamp):
    """Access byte ``addr`` in cache ``cache_index`` of geometry ``shape`` (:func:`cache_shape`);
    returns True on a hit. ``stamp`` must grow with every call (it orders the LRU)."""
    sets, assoc, line_shift, sector_shift, set_shift = shape
    line = addr >> line_shift                       # addr // line_bytes
    if set_shift >= 0:
        tag = line >> set_shift                     # line // sets
        s = line & (sets - 1)                       # line % sets
    else:
        tag = line // sets
        s = line - tag * sets
    row = cache_index * sets + s
    bit = 1 << ((addr >> sector_shift) & ((1 << (line_shift - sector_shift)) - 1))   # sector in line
    victim = 0
    oldest = stamps[row, 0]
    for w in range(assoc):
        if tags[row, w] == tag:
            stamps[row, w] = stamp
            if valid[row, w] & bit:
                return True
            valid[row, w] |= bit
            return False
        if stamps[row, w] < oldest:
            oldest = stamps[row, w]
            victim = w
    tags[row, victim] = tag
    valid[row, victim] = bit
    stamps[row, victim] = stamp
    return False
