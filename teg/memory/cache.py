"""Sectored set-associative LRU caches (L1 per SM, L2 shared; 128 B lines of four 32 B
sectors: NVIDIA's answer at forums.developer.nvidia.com/t/understanding-l1-tex-cache-sectors-req/312884).

A cache of ``size`` bytes, ``line`` bytes per line, ``sector`` bytes per sector and ``assoc`` ways
has ``sets = size / (line * assoc)``. Line ``L = addr // line`` lives in set ``L mod sets`` and is
tagged with ``L`` itself. A cache that is one partition of a partitioned L2 (each address has a home
partition chosen by address bits, GTC21 near/far partitions) indexes its sets with those bits left
out (``skip``): otherwise the lines homed in a partition, which all share the bit values, would
reach only half (a quarter …) of its sets. An access hits when the tag is present *and* its sector is valid; a tag hit
with an invalid sector fills the sector (sector miss); a tag miss replaces the least recently used
line (its sectors are dropped). Every access makes its line most recently used.

State is one int64 array of shape ``(caches * sets, assoc)`` (:func:`cache_new`), a row per set:
the set's lines in recency order (most recent first, 0 = empty, empty ways last), each entry the
line's tag plus one shifted left by the number of sectors per line, or'ed with its valid-sector bit
mask (``(tag + 1) << k | mask``, ``k = line / sector``, at most 16; the empty way is 0 so that an
empty cache is all zeros, which numpy allocates as untouched pages: a whole GPU's L1s and the
50 MB L2 of sm_90 are megabytes of tags, written by no one until a line is used). Keeping the LRU order by position needs no
per-way time stamps, and packing tag and mask into one word halves what an access reads and moves:
a set of the 16-way L2 is two host cache lines. Tags (line numbers) plus one must fit in ``63 - k`` bits, which every
user-space address does (below 2**54 bytes for 128-byte lines of 16 sectors).
The engine's jitted loop keeps one L1 per simulated SM in the same array (cache ``c`` uses rows
``c*sets … c*sets+sets-1``).
"""

from __future__ import annotations

import numpy as np
from teg.jit import njit

from teg.jit import inner
from teg.machine.model import MAX_SECTORS_PER_LINE


def cache_geometry(size_bytes: int, line_bytes: int, sector_bytes: int, assoc: int) -> tuple[int, int, int, int]:
    """``(sets, assoc, line_bytes, sector_bytes)`` with at least one set; ``assoc`` is capped at
    the number of lines. Line and sector sizes must be powers of two (the machine schema checks
    it), so that :func:`cache_shape` can turn them into shifts, with at most
    ``MAX_SECTORS_PER_LINE`` sectors per line (the valid-sector mask shares a word with the tag)."""
    if line_bytes & (line_bytes - 1) or sector_bytes & (sector_bytes - 1) or sector_bytes > line_bytes:
        raise ValueError(f"cache line {line_bytes} B / sector {sector_bytes} B: both must be powers of two, "
                         "sector <= line")
    if line_bytes // sector_bytes > MAX_SECTORS_PER_LINE:
        raise ValueError(f"cache line {line_bytes} B / sector {sector_bytes} B: at most "
                         f"{MAX_SECTORS_PER_LINE} sectors per line")
    lines = max(1, size_bytes // line_bytes)
    assoc = max(1, min(assoc, lines))
    sets = max(1, lines // assoc)
    return sets, assoc, line_bytes, sector_bytes


@inner()
def _log2(x):
    """Exponent of the power of two ``x``; -1 when ``x`` is not one."""
    if x <= 0 or x & (x - 1):
        return -1
    k = 0
    while (1 << k) < x:
        k += 1
    return k


@njit(cache=True)
def cache_shape(sets, assoc, line_bytes, sector_bytes, skip_at=0, skip_bits=0, hashed=False):
    """The geometry as :func:`cache_access` uses it (arguments as :func:`cache_geometry` returns
    and checks them): ``(sets, assoc, line_shift, sector_shift, set_shift, mask_bits, skip_at,
    skip_bits, fold)``, where ``set_shift`` is -1 when ``sets`` is not a power of two (the set index then
    needs a division), ``mask_bits`` is the number of sectors per line (the width of an entry's
    sector mask), and the set index leaves out ``skip_bits`` bits of the line number starting at
    bit ``skip_at`` (a partition of a partitioned L2: the home-partition bits; 0 = none).
    ``hashed``: XOR-based placement — the set index's low ``fold = ⌊log2 sets⌋`` bits are the XOR of
    every ``fold``-bit field of the line number (:func:`cache_row`); ``fold`` 0 = the plain modulo.
    Integer division by a run-time value is the slowest arithmetic a CPU does, and an access would
    otherwise make four of them."""
    line_shift = _log2(line_bytes)
    sector_shift = _log2(sector_bytes)
    fold = 0
    if hashed:
        while (2 << fold) <= sets:
            fold += 1
    return (sets, assoc, line_shift, sector_shift, _log2(sets), 1 << (line_shift - sector_shift), skip_at, skip_bits,
            fold)


@njit(cache=True)
def cache_new(caches, shape):
    """Empty state (every way empty) for ``caches`` caches of geometry ``shape`` (:func:`cache_shape`)."""
    return np.zeros((caches * shape[0], shape[1]), np.int64)


@inner()
def cache_row(cache_index, shape, addr):
    """Row of the state array (:func:`cache_new`) that holds the set of byte ``addr`` in cache
    ``cache_index``, and the line's tag (its line number)."""
    sets, line_shift, set_shift, skip_at, skip_bits, fold = shape[0], shape[2], shape[4], shape[6], shape[7], shape[8]
    line = addr >> line_shift                       # addr // line_bytes
    idx = line
    if skip_bits > 0:                               # the home-partition bits do not index sets
        idx = ((line >> (skip_at + skip_bits)) << skip_at) | (line & ((1 << skip_at) - 1))
    if set_shift >= 0:
        if fold > 0:                                # XOR-based placement: fold the higher fields in
            x = idx >> fold
            while x > 0:
                idx ^= x & ((1 << fold) - 1)
                x >>= fold
        s = idx & (sets - 1)                        # idx % sets
    else:
        q = idx // sets
        s = idx - q * sets
        if fold > 0:                                # not a power of two: the remainder is rotated by
            h = 0                                   # the quotient's fold (< sets), a permutation of
            while q > 0:                            # each aligned run of `sets` lines
                h ^= q & ((1 << fold) - 1)
                q >>= fold
            s += h
            if s >= sets:
                s -= sets
    return cache_index * sets + s, line


@inner()
def _way(state, row, tag, k, assoc):
    """Where the line ``tag`` is in set ``row`` — or the way a missing line replaces (the first
    empty one, else the least recently used, the last) — and its valid-sector mask (0: absent)."""
    t1 = tag + 1                                    # entries hold tag + 1 (0: empty)
    for w in range(assoc):
        x = state[row, w]
        if x >> k == t1:                            # an empty way (0) has x >> k == 0
            return w, x & ((1 << k) - 1)
        if x == 0:                                  # first empty way: the line is absent
            return w, 0
    return assoc - 1, 0                             # full set, line absent: the LRU line drops out


@njit(cache=True)
def cache_access(state, cache_index, shape, addr):
    """Access byte ``addr`` in cache ``cache_index`` of geometry ``shape`` (:func:`cache_shape`);
    returns True on a hit. The line moves to the front of its set's recency order; a missing line
    enters there, and when the set is full the last (least recently used) line drops out."""
    assoc, sector_shift, k = shape[1], shape[3], shape[5]
    row, tag = cache_row(cache_index, shape, addr)
    bit = 1 << ((addr >> sector_shift) & (k - 1))   # the sector's bit in the line's mask
    p, mask = _way(state, row, tag, k, assoc)
    for w in range(p, 0, -1):                       # ways 0 … p-1 move back one place
        state[row, w] = state[row, w - 1]
    state[row, 0] = ((tag + 1) << k) | mask | bit
    return (mask & bit) != 0


@njit(cache=True)
def cache_access_timed(state, ready, cache_index, shape, addr):
    """:func:`cache_access` that also keeps, per way, the cycle its line's data is there
    (``ready``, the same shape as ``state``, moved with it): returns ``(hit, row, ready time)`` —
    on a hit the line's ready time (a hit on a line whose fill is still on its way completes no
    earlier: the request merges with the miss in flight), else -1. The line is then at way 0 of
    ``row``; after a miss the caller writes its fill time to ``ready[row, 0]``."""
    assoc, sector_shift, k = shape[1], shape[3], shape[5]
    row, tag = cache_row(cache_index, shape, addr)
    bit = 1 << ((addr >> sector_shift) & (k - 1))
    p, mask = _way(state, row, tag, k, assoc)
    hit = (mask & bit) != 0
    r = ready[row, p] if hit else -1.0
    for w in range(p, 0, -1):
        state[row, w] = state[row, w - 1]
        ready[row, w] = ready[row, w - 1]
    state[row, 0] = ((tag + 1) << k) | mask | bit
    ready[row, 0] = r
    return hit, row, r


@njit(cache=True)
def cache_access_dirty(state, ready, dirty, cache_index, shape, addr):
    """:func:`cache_access_timed` of a write-back cache: ``dirty`` (the shape of ``state``, moved
    with it) holds, per way, the mask of its line's sectors written since the line came in. Returns
    ``(hit, row, ready time, evicted)``, ``evicted`` the dirty-sector mask of the line that dropped
    out of the set to make room (0: none dropped out, or it was clean) — the sectors the cache must
    write back to memory. The accessed line is then at way 0 of ``row`` with its own dirty mask
    (0 for a line that just came in); a write sets its sector's bit there (the caller)."""
    assoc, sector_shift, k = shape[1], shape[3], shape[5]
    row, tag = cache_row(cache_index, shape, addr)
    bit = 1 << ((addr >> sector_shift) & (k - 1))
    p, mask = _way(state, row, tag, k, assoc)
    hit = (mask & bit) != 0
    r = ready[row, p] if hit else -1.0
    evicted = 0
    keep = dirty[row, p]
    if mask == 0:                                   # the line is absent: it takes way p's place
        if state[row, p] != 0:
            evicted = keep                          # another line dropped out
        keep = 0
    for w in range(p, 0, -1):
        state[row, w] = state[row, w - 1]
        ready[row, w] = ready[row, w - 1]
        dirty[row, w] = dirty[row, w - 1]
    state[row, 0] = ((tag + 1) << k) | mask | bit
    ready[row, 0] = r
    dirty[row, 0] = keep
    return hit, row, r, evicted
