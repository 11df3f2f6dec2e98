"""Shared-memory bank conflicts (TEG §3.3.3; docs/model.md §3 "Shared memory").

Shared memory has ``banks`` banks of ``bank_bytes``; word ``a // bank_bytes`` lives in bank
``(a // bank_bytes) % banks``. The lanes of a warp are served in *phases*: a phase holds
``min(phase_lanes, banks * bank_bytes // width)`` consecutive lanes (16 lanes = a half-warp on
GT200; on sm_70+ 32 lanes for 32-bit accesses, 16 for 64-bit, 8 for 128-bit, so that one phase moves
at most one row of banks). A lane's access covers ``ceil(width / bank_bytes)`` consecutive words.
Within a phase, lanes reading the same word share it (broadcast), and *n* distinct words in one bank
take *n* wavefronts. So

    wavefronts(access) = Σ_phases max_bank |{distinct words of the phase in that bank}|

and the conflict-free minimum is the number of phases with an active lane (a phase with no active
lane costs nothing). The conflict degree is ``wavefronts - minimum``; the engine adds
``(wavefronts - 1) * wavefront_cycles`` to the latency.

Sources for the wide-access phases: CUDA C Programming Guide v4.2, App. F.4.3.2 "Larger Than 32-Bit
Access" (cc 2.x: 64-bit conflicts only within a half-warp, 128-bit within a quarter-warp); NVIDIA
GTC 2019 S9593 (cuTENSOR) slides: 128-bit accesses in phases of threads 0-7, 8-15, …; NVIDIA
Developer Forums t/77228: LDS.128 on cc 7.x needs 4 requests (128 B/cycle return).

*Paired loads* (:func:`shared_wavefronts_paired`, tables with ``shared.paired_loads``): the same
forum answer (NVIDIA staff, t/77228) says that on cc 7.0-7.5 a shared *load* whose active lanes pair
up — T(n) == T(n^1) for every active lane, or T(n) == T(n^2) (a warp-wide broadcast included) —
returns its registers packed, two lanes' data per register-row slot, and needs half the requests
(LDS.128 2 instead of 4); Nsight Compute on cc 8.6 and 9.0 counts 2 wavefronts for an LDS.128 whose
lanes 0-15 read one address and lanes 16-31 another (forum t/373160, access pattern 2). teg models
it as phases of twice the lanes (``min(2 · lanes per phase, warp size)``): a paired LDS.128 is
served by half-warps, a paired LDS.64 by the whole warp, and bank conflicts are evaluated within
those phases. Stores never pack. Hand-computed cases: tests/test_memory_shared_wide.py.
"""

from __future__ import annotations

import numpy as np
from teg.jit import njit

from teg.jit import inner
from teg.memory.sort import sort_prefix


@inner()
def _phase_wavefronts(words, n, banks, counts):
    """Max over banks of the number of distinct words among ``words[:n]`` (sorted in place;
    ``counts`` is scratch of length ``banks``, all zero on entry and on return)."""
    sort_prefix(words, n)
    best = 0
    bm = banks - 1
    pow2 = banks > 0 and banks & bm == 0      # bank by a mask (= % banks, also below zero)
    for i in range(n):
        if i > 0 and words[i] == words[i - 1]:
            continue
        b = words[i] & bm if pow2 else words[i] % banks
        counts[b] += 1
        if counts[b] > best:
            best = counts[b]
    for i in range(n):
        counts[words[i] & bm if pow2 else words[i] % banks] = 0
    return best


@inner()
def _phase_cost(words, n, lo, hi, banks, counts):
    """Wavefronts of one phase whose ``n`` words lie in ``lo … hi``: words within one row of
    banks (``hi - lo < banks``: broadcasts, consecutive or permuted words) are in distinct banks
    and take one; otherwise :func:`_phase_wavefronts` counts."""
    if hi - lo < banks:
        return 1
    return _phase_wavefronts(words, n, banks, counts)


@inner()
def _span(addresses, k, warp_size):
    """Lowest and highest of ``addresses[k : k + warp_size]`` (as int64)."""
    lo = np.int64(addresses[k])
    hi = lo
    if warp_size == 32:           # a constant trip count: unrolled and vectorized
        for j in range(1, 32):
            v = np.int64(addresses[k + j])
            lo = min(lo, v)
            hi = max(hi, v)
    else:
        for j in range(1, warp_size):
            v = np.int64(addresses[k + j])
            lo = min(lo, v)
            hi = max(hi, v)
    return lo, hi


@inner()
def _row_wavefronts(m, k, kend, w, lpp, nwords_lane, addresses, warp_size, shift, bank_bytes, banks,
                    words, counts):
    """(wavefronts, phases) of one access: active lanes of mask ``m`` in order, their addresses
    ``addresses[k:kend]`` (missing ones: the contiguous pattern ``lane * w``)."""
    have_addr = kend > k
    total = 0
    phases = 0
    n = np.int64(0)            # (not the literal 0: numba would compile _phase_cost for both)
    phase_end = -1            # first lane past the current phase
    lo = np.int64(0)
    hi = np.int64(0)
    for lane in range(warp_size):
        if (m >> np.uint64(lane)) & np.uint64(1) == 0:
            continue
        if lane >= phase_end:
            if n > 0:
                total += _phase_cost(words, n, lo, hi, banks, counts)
                phases += 1
            n = 0
            phase_end = (lane // lpp + 1) * lpp
        if have_addr and k < kend:
            a = np.int64(addresses[k])
            k += 1
        else:
            a = np.int64(lane) * w    # no addresses: the conflict-free contiguous pattern
        base = a >> shift if shift >= 0 else a // bank_bytes
        for q in range(nwords_lane):
            if n < words.shape[0]:
                v = base + q
                words[n] = v
                if n == 0 or v < lo:
                    lo = v
                if n == 0 or v > hi:
                    hi = v
                n += 1
    if n > 0:
        total += _phase_cost(words, n, lo, hi, banks, counts)
        phases += 1
    return total, phases


@inner()
def _lanes_pair_up(m, k, kend, addresses, warp_size, xor):
    """True when every active lane ``n`` whose partner ``n ^ xor`` is active reads the partner's
    address (``addresses[k:kend]``: the active lanes' addresses in lane order). A row without
    addresses (SASS-only input: the contiguous pattern) never pairs."""
    if kend - k <= 0:
        return False
    q = k
    for lane in range(warp_size):
        if (m >> np.uint64(lane)) & np.uint64(1) == 0:
            continue
        partner = lane ^ xor
        if partner > lane and partner < warp_size and (m >> np.uint64(partner)) & np.uint64(1) != 0:
            # the partner's address: skip the active lanes between them
            r = q + 1
            for j in range(lane + 1, partner):
                if (m >> np.uint64(j)) & np.uint64(1) != 0:
                    r += 1
            if r >= kend or addresses[r] != addresses[q]:
                return False
        q += 1
    return True


@njit(cache=True)
def shared_wavefronts(addr_start, addresses, mask, width, is_shared, banks, bank_bytes, phase_lanes,
                      warp_size, wave, wave_min):
    """Fill ``wave[i]`` (wavefronts) and ``wave_min[i]`` (conflict-free wavefronts) for every row
    ``i`` with ``is_shared[i]``; rows without addresses (SASS-only input) get the conflict-free
    contiguous pattern; rows with no active lane get 0 / 0. Other rows are left untouched."""
    _wavefronts(addr_start, addresses, mask, width, is_shared, is_shared[:0], banks, bank_bytes, phase_lanes,
                warp_size, wave, wave_min)


@njit(cache=True)
def shared_wavefronts_paired(addr_start, addresses, mask, width, is_shared, paired, banks, bank_bytes,
                             phase_lanes, warp_size, wave, wave_min):
    """:func:`shared_wavefronts`, where a row with ``paired[i]`` (a shared load of 8 or 16 bytes per
    lane on a machine with ``shared.paired_loads``) whose active lanes pair up (T(n) == T(n^1) or
    T(n) == T(n^2)) is served in phases of twice the lanes (module docstring, *Paired loads*)."""
    _wavefronts(addr_start, addresses, mask, width, is_shared, paired, banks, bank_bytes, phase_lanes,
                warp_size, wave, wave_min)


@inner()
def _wavefronts(addr_start, addresses, mask, width, is_shared, paired, banks, bank_bytes, phase_lanes,
                warp_size, wave, wave_min):
    """The loop of :func:`shared_wavefronts` (``paired`` empty: no row pairs)."""
    row_bytes = banks * bank_bytes
    words = np.empty(4096, np.int64)
    counts = np.zeros(banks, np.int64)
    # word index by a shift when bank_bytes is a power of two (it always is on real machines)
    shift = -1
    if bank_bytes > 0 and bank_bytes & (bank_bytes - 1) == 0:
        shift = 0
        while (1 << shift) < bank_bytes:
            shift += 1
    full = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - warp_size)
    for i in range(mask.shape[0]):
        if not is_shared[i]:
            continue
        w = width[i] if width[i] > 0 else bank_bytes
        lpp = row_bytes // w
        if lpp < 1:
            lpp = 1
        if lpp > phase_lanes:
            lpp = phase_lanes
        nwords_lane = (w + bank_bytes - 1) // bank_bytes
        k = addr_start[i]
        kend = addr_start[i + 1]
        m = np.uint64(mask[i])
        if paired.shape[0] > 0 and paired[i] and lpp < warp_size and (
                _lanes_pair_up(m, k, kend, addresses, warp_size, 1)
                or _lanes_pair_up(m, k, kend, addresses, warp_size, 2)):
            lpp = min(2 * lpp, warp_size)
        if shift >= 0 and kend - k == warp_size and m == full:
            # every lane active with its address (the common case): when all the warp's words lie
            # within one row of banks, every phase (a chunk of lpp lanes) takes one wavefront
            lo, hi = _span(addresses, k, warp_size)
            if (hi >> shift) + nwords_lane - 1 - (lo >> shift) < banks:
                nph = (warp_size + lpp - 1) // lpp
                wave[i] = nph
                wave_min[i] = nph
                continue
        total, phases = _row_wavefronts(m, k, kend, w, lpp, nwords_lane, addresses, warp_size, shift,
                                        bank_bytes, banks, words, counts)
        wave[i] = total           # 0 / 0 when no lane is active (predicated off)
        wave_min[i] = phases
