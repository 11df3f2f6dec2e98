"""Shared-memory bank conflicts (TEG §3.3.3; nvidia_timing_facts.md §4.1).

Shared memory has ``banks`` banks of ``bank_bytes``; word ``a // bank_bytes`` lives in bank
``(a // bank_bytes) % banks``. The lanes of a warp are served in *phases*: a phase holds
``min(phase_lanes, banks * bank_bytes // width)`` consecutive lanes (16 lanes = a half-warp on
GT200; on sm_70+ 32 lanes for 32-bit accesses, 16 for 64-bit, 8 for 128-bit, so that one phase moves
at most one row of banks). Within a phase, lanes reading the same word share it (broadcast), and
*n* distinct words in one bank take *n* wavefronts. So

    wavefronts(access) = Σ_phases max_bank |{distinct words of the phase in that bank}|

and the conflict-free minimum is the number of phases with an active lane. The conflict degree is
``wavefronts - minimum``; the engine adds ``(wavefronts - 1) * wavefront_cycles`` to the latency.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _phase_wavefronts(words, n, banks, counts):
    """Max over banks of the number of distinct words among ``words[:n]`` (``counts`` is scratch
    of length ``banks``)."""
    ws = np.sort(words[:n])
    counts[:] = 0
    best = 0
    for i in range(n):
        if i > 0 and ws[i] == ws[i - 1]:
            continue
        b = ws[i] % banks
        counts[b] += 1
        if counts[b] > best:
            best = counts[b]
    return best


@njit(cache=True)
def shared_wavefronts(addr_start, addresses, mask, width, is_shared, banks, bank_bytes, phase_lanes,
                      warp_size, wave, wave_min):
    """Fill ``wave[i]`` (wavefronts) and ``wave_min[i]`` (conflict-free wavefronts) for every row
    ``i`` with ``is_shared[i]``; rows without addresses (SASS-only input) get the conflict-free
    contiguous pattern; rows with no active lane get 0 / 0. Other rows are left untouched."""
    row_bytes = banks * bank_bytes
    words = np.empty(4096, np.int64)
    counts = np.zeros(banks, np.int64)
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
        have_addr = kend > k
        total = 0
        phases = 0
        n = 0
        cur_phase = -1
        m = np.uint64(mask[i])
        for lane in range(warp_size):
            if (m >> np.uint64(lane)) & np.uint64(1) == 0:
                continue
            ph = lane // lpp
            if ph != cur_phase:
                if n > 0:
                    total += _phase_wavefronts(words, n, banks, counts)
                    phases += 1
                n = 0
                cur_phase = ph
            if have_addr and k < kend:
                a = np.int64(addresses[k])
                k += 1
            else:
                a = np.int64(lane) * w    # no addresses: the conflict-free contiguous pattern
            base = a // bank_bytes
            for q in range(nwords_lane):
                if n < words.shape[0]:
                    words[n] = base + q
                    n += 1
        if n > 0:
            total += _phase_wavefronts(words, n, banks, counts)
            phases += 1
        wave[i] = total           # 0 / 0 when no lane is active (predicated off)
        wave_min[i] = phases
