"""Kernel-profile statistics computed from a KernelTrace (helpers of :func:`teg.models.profile.profile_from`).

Each function is one counting rule of the analytical papers, applied to the trace's columns:

* :func:`g80_coalesced` — compute capability 1.0/1.1 coalescing (CUDA Programming Guide 2.x
  §5.1.2.1, the rule Hong & Kim use for the 8800GTX, FX5600 and 8800GT);
* :func:`duplicate_loads` — Dasgupta's duplicate loads (§3.2.1.3, §5.2.4);
* :func:`independent_loads` — Dasgupta's independent loads (§3.2.1.3);
* :func:`period_table` — Luo & Suda's calculate periods in program order (§3.2);
* :func:`cache_hit_rates` — L1/L2 load hit rates for the BSP model (Amarís eq. 5), from the
  machine's caches simulated with :mod:`teg.memory.cache`.
"""

from __future__ import annotations

import numpy as np

from teg.jit import njit
from teg.memory.cache import cache_access, cache_geometry, cache_new, cache_shape


def popcount32(x: np.ndarray) -> np.ndarray:
    """Number of set bits of each uint32."""
    x = np.asarray(x, np.uint32).astype(np.uint64)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x55555555))
    x = (x & np.uint64(0x33333333)) + ((x >> np.uint64(2)) & np.uint64(0x33333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F)
    return ((x * np.uint64(0x01010101)) & np.uint64(0xFFFFFFFF)) >> np.uint64(24)


def g80_coalesced(addresses: np.ndarray, lanes: np.ndarray, width: int) -> bool:
    """Compute capability 1.0/1.1 rule for one warp request: every half-warp's active lane k reads
    word k of a segment aligned to 16 × width, with width 4, 8 or 16 bytes (inactive lanes allowed).
    ``addresses`` and ``lanes`` are the active lanes' byte addresses and lane numbers."""
    if width not in (4, 8, 16):
        return False
    for half in np.unique(lanes // 16):
        sel = lanes // 16 == half
        a = addresses[sel].astype(np.int64)
        k = lanes[sel].astype(np.int64) % 16
        base = a - k * width
        if np.any(base != base[0]) or base[0] % (16 * width):
            return False
    return True


def occurrence(warp: np.ndarray, pc: np.ndarray) -> np.ndarray:
    """For each row, how many earlier rows of the same warp have the same PC (0 for the first)."""
    n = warp.shape[0]
    order = np.lexsort((np.arange(n), pc, warp))
    w, p = warp[order], pc[order]
    new = np.ones(n, bool)
    new[1:] = (w[1:] != w[:-1]) | (p[1:] != p[:-1])
    idx = np.arange(n)
    group_start = np.maximum.accumulate(np.where(new, idx, 0))
    out = np.empty(n, np.int64)
    out[order] = idx - group_start
    return out


def duplicate_loads(rows: np.ndarray, block: np.ndarray, pc: np.ndarray, occ: np.ndarray,
                    txn_row: np.ndarray, txn_addr: np.ndarray) -> float:
    """Duplicate loads (Dasgupta §3.2.1.3): loads "that fetch the same data and are being handled by
    the memory subsystem within the same timeframe". The timeframe is one dynamic instance of a load
    in one thread block (same block, PC and occurrence): the factor is the transactions those warps
    request divided by the distinct transactions among them (1 = no duplicates; the warps per block
    when all warps of a block load the same data, Dasgupta §5.2.4). ``rows`` are the scalar global
    load rows; ``txn_row`` / ``txn_addr`` their transactions."""
    if txn_row.shape[0] == 0:
        return 1.0
    keep = np.isin(txn_row, rows)
    r = txn_row[keep]
    if r.shape[0] == 0:
        return 1.0
    group = np.stack([block[r].astype(np.int64), pc[r].astype(np.int64), occ[r], txn_addr[keep].astype(np.int64)], 1)
    distinct = np.unique(group, axis=0).shape[0]
    return float(r.shape[0]) / distinct


@njit(cache=True)
def _load_batches(warp, is_load, src, dst, nregs):
    pending = np.zeros(nregs, np.bool_)
    touched = np.empty(nregs, np.int64)
    nt = 0
    loads = 0
    batches = 0
    open_batch = False
    prev_warp = -1
    for i in range(warp.shape[0]):
        if warp[i] != prev_warp:
            for k in range(nt):
                pending[touched[k]] = False
            nt = 0
            open_batch = False
            prev_warp = warp[i]
        consumer = False
        for k in range(src.shape[1]):
            r = src[i, k]
            if r >= 0 and r < nregs and pending[r]:
                consumer = True
        if consumer:
            for k in range(nt):
                pending[touched[k]] = False
            nt = 0
            open_batch = False
        if is_load[i]:
            loads += 1
            if not open_batch:
                batches += 1
                open_batch = True
            for k in range(dst.shape[1]):
                r = dst[i, k]
                if r >= 0 and r < nregs and not pending[r]:
                    pending[r] = True
                    touched[nt] = r
                    nt += 1
    return loads, batches


def independent_loads(warp: np.ndarray, is_load: np.ndarray, src: np.ndarray, dst: np.ndarray,
                      nregs: int = 344) -> float:
    """Independent loads (Dasgupta §3.2.1.3): "the average number of independent memory loads per
    thread", i.e. loads one warp has in flight together. A batch is a run of global loads a warp
    issues before any instruction reads one of their destination registers (a load whose address
    depends on an earlier load of the batch ends it, too); the factor is loads / batches."""
    loads, batches = _load_batches(np.asarray(warp, np.int64), np.asarray(is_load, np.bool_),
                                   np.asarray(src, np.int64), np.asarray(dst, np.int64), nregs)
    return loads / batches if batches else 1.0


def period_table(warp_start: np.ndarray, is_mem: np.ndarray, comp_class: np.ndarray, n_classes: int,
                 mem_width: np.ndarray, mem_trans: np.ndarray):
    """Luo & Suda's calculate periods (§3.2) of the average warp: per warp, a period is a maximal
    run of computation rows followed by the maximal run of global-memory rows after it; period k of
    the profile averages period k of every warp over all warps (a warp with fewer periods adds
    nothing to the later ones), so the periods sum to the per-warp instruction counts.
    Returns ``(comp[n_periods, n_classes], mem_insts, mem_width, mem_trans)``: counts per warp,
    ``mem_width`` the mean bytes per thread and ``mem_trans`` the mean transactions of the memory
    task's instructions."""
    n = is_mem.shape[0]
    nw = warp_start.shape[0] - 1
    if n == 0 or nw == 0:
        return np.zeros((0, n_classes)), np.zeros(0), np.zeros(0), np.zeros(0)
    lengths = np.diff(warp_start)
    warp_of = np.repeat(np.arange(nw), lengths)
    first = np.zeros(n, bool)
    first[warp_start[:-1][lengths > 0]] = True
    prev_mem = np.zeros(n, bool)
    prev_mem[1:] = is_mem[:-1]
    start = first | (~is_mem & prev_mem)
    cum = np.cumsum(start)
    at = np.minimum(warp_start[:-1], n - 1)
    before = cum[at] - start[at]
    pidx = cum - 1 - before[warp_of]
    periods = int(pidx.max()) + 1
    comp = np.zeros((periods, n_classes))
    cm = ~is_mem
    np.add.at(comp, (pidx[cm], comp_class[cm]), 1.0)
    mem = np.bincount(pidx[is_mem], minlength=periods).astype(float)
    wsum = np.bincount(pidx[is_mem], weights=mem_width[is_mem], minlength=periods)
    tsum = np.bincount(pidx[is_mem], weights=mem_trans[is_mem], minlength=periods)
    safe = np.maximum(mem, 1)
    width = np.where(mem > 0, wsum / safe, 4.0)
    trans = np.where(mem > 0, tsum / safe, 1.0)
    return comp / nw, mem / nw, width, trans


@njit(cache=True)
def _simulate(order, txn_start, txn_addr, is_load, skips_l1, sm_of_row, n_sms, l1_on, l1_geo, l2_on, l2_geo):
    s1, a1, line1, sec1, h1 = l1_geo
    s2, a2, line2, sec2, h2 = l2_geo
    shape1 = cache_shape(s1, a1, line1, sec1, 0, 0, h1 != 0)
    shape2 = cache_shape(s2, a2, line2, sec2, 0, 0, h2 != 0)
    c1 = cache_new(n_sms, shape1)
    c2 = cache_new(1, shape2)
    loads = 0
    l1_hits = 0
    l2_access = 0
    l2_hits = 0
    for j in range(order.shape[0]):
        i = order[j]
        for t in range(txn_start[i], txn_start[i + 1]):
            addr = txn_addr[t]
            if is_load[i]:
                loads += 1
                if l1_on and not skips_l1[i] and cache_access(c1, sm_of_row[i], shape1, addr):
                    l1_hits += 1
                    continue
                if l2_on:
                    l2_access += 1
                    if cache_access(c2, 0, shape2, addr):
                        l2_hits += 1
            elif l2_on:
                cache_access(c2, 0, shape2, addr)
    return loads, l1_hits, l2_access, l2_hits


def cache_hit_rates(machine, warp_start: np.ndarray, rows: np.ndarray, is_load: np.ndarray,
                    block: np.ndarray, txn_start: np.ndarray, txn_addr: np.ndarray,
                    active_sms: int, skips_l1: np.ndarray | None = None) -> tuple[float | None, float | None]:
    """L1 and L2 hit rates of global loads (per transaction) for the BSP model: the machine's caches
    (:mod:`teg.memory.cache`, sectored LRU) see the trace's global accesses with the warps
    interleaved round-robin (the k-th instruction of every warp before the (k+1)-th), blocks dealt
    to ``active_sms`` L1s round-robin, stores allocating in L2 only, loads that ``skips_l1`` marks
    (the engine's cache policy, :func:`teg.memory.cachepolicy.bypasses_l1`) going straight to L2 and
    counting as L1 misses. L2 rate = L2 hits / L1 misses.
    A level the machine lacks gives None."""
    mem = machine.memory
    if mem.l1 is None and mem.l2 is None:
        return None, None
    nw = warp_start.shape[0] - 1
    warp_of = np.repeat(np.arange(nw), np.diff(warp_start))
    pos = np.arange(warp_start[-1]) - warp_start[:-1][warp_of]
    sel = rows
    order = sel[np.lexsort((warp_of[sel], pos[sel]))].astype(np.int64)
    geo1 = (cache_geometry(mem.l1.size_bytes, mem.l1.line_bytes, mem.l1.sector_bytes, mem.l1.assoc)
            + (int(mem.l1.index == "xor"),) if mem.l1 else (1, 1, 128, 32, 0))
    geo2 = (cache_geometry(mem.l2.size_bytes, mem.l2.line_bytes, mem.l2.sector_bytes, mem.l2.assoc)
            + (int(mem.l2.index == "xor"),) if mem.l2 else (1, 1, 128, 32, 0))
    sm_of_row = (np.asarray(block, np.int64) % max(1, active_sms))
    loads, l1h, l2a, l2h = _simulate(order, np.asarray(txn_start, np.int64), np.asarray(txn_addr, np.int64),
                                     np.asarray(is_load, np.bool_),
                                     np.zeros(len(is_load), np.bool_) if skips_l1 is None else np.asarray(skips_l1, np.bool_),
                                     sm_of_row, max(1, active_sms),
                                     mem.l1 is not None, tuple(int(x) for x in geo1),
                                     mem.l2 is not None, tuple(int(x) for x in geo2))
    h1 = (l1h / loads if loads else 0.0) if mem.l1 is not None else None
    h2 = (l2h / l2a if l2a else 0.0) if mem.l2 is not None else None
    return h1, h2
