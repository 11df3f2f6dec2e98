"""Global-memory coalescing: the transactions one warp instruction's active lanes need
(TEG §3.3.4; CUDA C Programming Guide, compute capability 1.2/1.3 and 5.x+ global-memory rules).

Both functions work on the trace's ragged address column (one address per active lane, in lane
order) and return CSR arrays: the transactions of row ``i`` are ``start[i]:start[i+1]`` with their
byte address ``addr`` (aligned) and size ``nbytes``. They also return, per row, the *perfect
coalescing* minimum: how many transactions the active lanes' bytes would need if packed
contiguously, and their total bytes (the ``coalescing=False`` what-if), capped by what the rule
itself gives (a broadcast needs less than the packed bytes).

Rows with ``width == 0`` or no memory access produce no transactions. Rows that are memory
accesses but carry no addresses (SASS-only input) are given the contiguous pattern
``lane * width`` from address 0 — the perfectly coalesced case.
"""

from __future__ import annotations

import numpy as np
from teg.jit import njit

from teg.jit import inner
from teg.memory.sort import sort_prefix


@inner()
def _lane_addresses(i, addr_start, addresses, mask, width, warp_size, lanes, addrs):
    """Active lanes of row ``i`` and their addresses; returns the count."""
    k = addr_start[i]
    kend = addr_start[i + 1]
    n = 0
    m = np.uint64(mask[i])
    for lane in range(warp_size):
        if (m >> np.uint64(lane)) & np.uint64(1) == 0:
            continue
        lanes[n] = lane
        if k < kend:
            addrs[n] = np.int64(addresses[k])
            k += 1
        else:
            addrs[n] = np.int64(lane) * width
        n += 1
    return n


@njit(cache=True)
def _sector_pass(addr_start, addresses, mask, width, is_global, sector, warp_size, fill, start,
                 out_addr, out_bytes, min_count, min_bytes):
    lanes = np.empty(64, np.int64)
    addrs = np.empty(64, np.int64)
    buf = np.empty(64 * 8, np.int64)
    # sector index by a shift when the sector size is a power of two (integer division costs tens
    # of cycles per lane)
    shift = -1
    if sector > 0 and sector & (sector - 1) == 0:
        shift = 0
        while (np.int64(1) << shift) < sector:
            shift += 1
    pos = 0
    for i in range(mask.shape[0]):
        if fill:
            start[i] = pos
        if not is_global[i] or width[i] <= 0:
            continue
        w = np.int64(width[i])
        n = _lane_addresses(i, addr_start, addresses, mask, w, warp_size, lanes, addrs)
        nb = 0
        for j in range(n):
            if shift >= 0:
                s0 = addrs[j] >> shift
                s1 = (addrs[j] + w - 1) >> shift
            else:
                s0 = addrs[j] // sector
                s1 = (addrs[j] + w - 1) // sector
            for s in range(s0, s1 + 1):
                if nb < buf.shape[0]:
                    buf[nb] = s
                    nb += 1
        # sort and drop duplicates in place
        sort_prefix(buf, nb)
        nu = 0
        for a in range(nb):
            if nu == 0 or buf[a] != buf[nu - 1]:
                buf[nu] = buf[a]
                nu += 1
        if fill:
            for j in range(nu):
                out_addr[pos + j] = buf[j] * sector
                out_bytes[pos + j] = sector
            total = n * w
            # packed bytes, but never more than the access really needs (broadcasts)
            min_count[i] = min((total + sector - 1) // sector, nu)
            min_bytes[i] = min_count[i] * sector
        pos += nu
    if fill:
        start[mask.shape[0]] = pos
    return pos


def sector_transactions(addr_start, addresses, mask, width, is_global, sector_bytes, warp_size=32, counted=None):
    """sm_70+ rule: a warp access is split into the distinct ``sector_bytes`` (32 B) sectors its
    active lanes touch (one request per instruction; sectors of 128-byte lines). Minimum =
    ``ceil(active_lanes * width / sector_bytes)``. Returns ``(start, addr, nbytes, min_count,
    min_bytes)``."""
    return _two_pass(_sector_pass, addr_start, addresses, mask, width, is_global,
                     np.int64(sector_bytes), np.int64(warp_size), counted=counted)


@njit(cache=True)
def _cc13_pass(addr_start, addresses, mask, width, is_global, warp_size, fill, start, out_addr,
               out_bytes, min_count, min_bytes):
    lanes = np.empty(64, np.int64)
    addrs = np.empty(64, np.int64)
    done = np.zeros(64, np.bool_)
    pos = 0
    for i in range(mask.shape[0]):
        if fill:
            start[i] = pos
        if not is_global[i] or width[i] <= 0:
            continue
        w = np.int64(width[i])
        seg = np.int64(32) if w == 1 else (np.int64(64) if w == 2 else np.int64(128))
        n = _lane_addresses(i, addr_start, addresses, mask, w, warp_size, lanes, addrs)
        done[:n] = False
        mc = 0
        mb = 0
        for h in range((warp_size + 15) // 16):
            active_h = 0
            for j in range(n):
                if lanes[j] // 16 == h:
                    active_h += 1
            if active_h == 0:
                continue
            # perfect coalescing: the half-warp's bytes packed into the fewest, smallest segments
            byt = active_h * w
            full = byt // 128
            rest = byt - full * 128
            mc += full
            mb += full * 128
            if rest > 0:
                mc += 1
                mb += 32 if rest <= 32 else (64 if rest <= 64 else 128)
            # the compute-1.2/1.3 algorithm: lowest active lane's segment, then shrink
            while True:
                lead = -1
                for j in range(n):
                    if lanes[j] // 16 == h and not done[j]:
                        lead = j
                        break
                if lead < 0:
                    break
                base = (addrs[lead] // seg) * seg
                lo = addrs[lead]
                hi = addrs[lead] + w
                for j in range(n):
                    if lanes[j] // 16 == h and not done[j] and base <= addrs[j] < base + seg:
                        done[j] = True
                        if addrs[j] < lo:
                            lo = addrs[j]
                        if addrs[j] + w > hi:
                            hi = addrs[j] + w
                size = seg
                tbase = base
                while size > 32:
                    half = size // 2
                    if hi <= tbase + half:
                        size = half
                    elif lo >= tbase + half:
                        tbase += half
                        size = half
                    else:
                        break
                if fill:
                    out_addr[pos] = tbase
                    out_bytes[pos] = size
                pos += 1
        if fill:
            # packed segments, but never more than the access really needs (broadcasts)
            got_n = pos - start[i]
            got_b = 0
            for q in range(start[i], pos):
                got_b += out_bytes[q]
            min_count[i] = min(mc, got_n)
            min_bytes[i] = min(mb, got_b)
    if fill:
        start[mask.shape[0]] = pos
    return pos


def cc13_transactions(addr_start, addresses, mask, width, is_global, warp_size=32, counted=None):
    """GT200 (compute 1.2/1.3) rule, per half-warp: take the segment (32 B for 1-byte words, 64 B
    for 2-byte, 128 B for 4/8/16-byte) holding the lowest active lane's address, serve every lane
    of the half-warp in that segment, halve the segment while the used bytes fit in one half
    (128 → 64 → 32), repeat for the lanes left. Minimum: the half-warp's bytes in 128-byte
    segments, the last one shrunk to 32/64 B. Returns ``(start, addr, nbytes, min_count, min_bytes)``."""
    return _two_pass(_cc13_pass, addr_start, addresses, mask, width, is_global, np.int64(warp_size), counted=counted)


def _two_pass(pass_fn, addr_start, addresses, mask, width, is_global, *rule_args, counted=None):
    """Run a jitted coalescing pass twice: first to count each row's transactions (CSR ``start``
    and the minimum counts/bytes), then to fill the transaction arrays of exactly that size
    (``counted(m)`` is called with their number in between, before anything of that size is
    allocated: a caller may refuse the work there). Returns ``(start, addr, nbytes, min_count,
    min_bytes)``."""
    n = mask.shape[0]
    args = (np.asarray(addr_start, np.int64), np.asarray(addresses, np.uint64), np.asarray(mask, np.uint32),
            np.asarray(width, np.int64), np.asarray(is_global, np.bool_), *rule_args)
    start = np.zeros(n + 1, np.int64)
    min_count = np.zeros(n, np.int32)
    min_bytes = np.zeros(n, np.int64)
    empty = np.zeros(0, np.int64)
    m = pass_fn(*args, False, start, empty, empty, min_count, min_bytes)
    if counted is not None:
        counted(int(m))
    out_addr = np.zeros(m, np.int64)
    out_bytes = np.zeros(m, np.int64)
    pass_fn(*args, True, start, out_addr, out_bytes, min_count, min_bytes)
    return start, out_addr, out_bytes, min_count, min_bytes


def line_wavefronts(start, tx_addr, min_bytes, line_bytes):
    """L1 data-stage wavefronts of every row (sm_70+ unified L1/shared memory: the data stage
    reads one ``line_bytes`` cache line per cycle, Nsight Compute's *wavefronts*): the distinct
    lines among the row's sectors (``sector_transactions`` lists them sorted), and the minimum
    under perfect coalescing, ``ceil(min_bytes / line_bytes)`` but never more than the rule's own
    count. Rows without transactions get 0 (shared-memory rows keep their own wavefronts).
    One jitted pass over the rows: no temporary the size of the transactions."""
    start = np.asarray(start, np.int64)
    n_rows = start.shape[0] - 1
    wave = np.zeros(n_rows, np.int32)
    wave_min = np.zeros(n_rows, np.int32)
    _line_wavefronts(start, np.asarray(tx_addr, np.int64), np.asarray(min_bytes, np.int64), np.int64(line_bytes),
                     wave, wave_min)
    return wave, wave_min


@njit(cache=True)
def _line_wavefronts(start, tx_addr, min_bytes, line_bytes, wave, wave_min):
    for i in range(wave.shape[0]):
        n = 0
        prev = np.int64(0)
        for j in range(start[i], start[i + 1]):
            line = tx_addr[j] // line_bytes
            if n == 0 or line != prev:
                n += 1
            prev = line
        wave[i] = n
        lo = (min_bytes[i] + line_bytes - 1) // line_bytes
        wave_min[i] = lo if lo < n else n



def tag_bank_wavefronts(lines, sectors, banks, tags_per_cycle, sectors_per_wavefront):
    """L1 data-stage wavefronts of global accesses on a unified L1/shared array whose tag stage
    resolves ``tags_per_cycle`` cache lines per cycle (docs/model.md §3): the largest of
    ``ceil(lines / tags_per_cycle)`` (tag lookups), ``ceil(sectors / sectors_per_wavefront)``
    (the data stage moves one line's bytes, 128 B, per cycle) and ``banks`` (the lanes' words in
    the 32-bank SRAM, counted as shared memory counts them: the most distinct words any bank
    holds, per phase), but never more than ``lines`` — a wavefront reads a whole line, so one per
    line always suffices. Arrays per row (``lines`` 0: no access, kept 0); returns int32."""
    lines = np.asarray(lines, np.int64)
    t = max(int(tags_per_cycle), 1)
    spw = max(int(sectors_per_wavefront), 1)
    lower = np.maximum(np.maximum((lines + t - 1) // t, (np.asarray(sectors, np.int64) + spw - 1) // spw),
                       np.asarray(banks, np.int64))
    return np.where(lines > 0, np.minimum(lines, lower), 0).astype(np.int32)
