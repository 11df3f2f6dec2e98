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
    the number of lines."""
    lines = max(1, size_bytes // line_bytes)
    assoc = max(1, min(assoc, lines))
    sets = max(1, lines // assoc)
    return sets, assoc, line_bytes, sector_bytes


@njit(cache=True)
def cache_access(tags, stamps, valid, cache_index, sets, assoc, line_bytes, sector_bytes, addr, stamp):
    """Access byte ``addr`` in cache ``cache_index``; returns True on a hit. ``stamp`` must grow
    with every call (it orders the LRU)."""
    line = addr // line_bytes
    s = line % sets
    tag = line // sets
    row = cache_index * sets + s
    bit = 1 << ((addr % line_bytes) // sector_bytes)
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
