"""The static tables as the loop reads them: the lowered per-instruction facts
(:class:`~teg.engine.lowered.StaticTable`) packed a row per instruction into one int and one float
array with constant row widths (one base pointer each, row offsets the compiler knows; columns
``X_*`` and ``SF_*``) and folded with the run's switches where the loop would otherwise combine
them at every issue.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from teg.engine.codes import DEPMODEL_CONTROLCODES, MEM_GLOBAL
from teg.engine.jitlib import helper, max2

(X_UNIT, X_UPSM, X_UCNT, X_MEM, X_GMEM, X_STORE, X_BAR, X_DEPCAUSE, X_CC, X_YIELD, X_WBAR, X_RBAR,
 X_WAIT, X_DEPBAR, X_ASYNC, X_FAST, X_NSRC, X_NDST, X_ILINE, X_FCHK, X_CLINE) = range(21)
X_SRC = 21                  # source registers: room for 16 (the lowering's MAX_SRC)
X_DST = X_SRC + 16          # destination registers: room for 14 (the lowering's MAX_DST is 8)
X_NWAW = X_DST + 14         # destinations that are not also sources (write-after-write checks)
X_WAW = X_NWAW + 1
XW = X_WAW + 14             # row width of the int table
SF_OCC, SF_LAT, SF_MEMLAT, SF_FREE, SF_SAME, SF_RBAR = range(6)
FW = 8                      # row width of the float table

# The packed tables with the kernel-wide facts t_dep depends on: whether it has a BAR that waits,
# whether register and barrier dependencies are modelled, whether it has cp.async / DEPBAR; the
# schedulers per SM and the unit count (a unit copy's row in ``uf`` is group * U + unit).
Static = namedtuple("Static", ("sx", "sf", "has_bar", "sw_deps", "has_async", "S", "U"))


@helper
def rbar_release(mem, sm_unit, occ, rbar_lat):
    """Cycles from issue until an instruction has read its source registers, when its read
    barrier (control codes) releases. A memory access, or an instruction of an SM-shared unit
    reached through the MIO queue, reads them when the shared pipe takes it: the table's
    read-barrier figure (``latencies.store.execution``). An instruction of a scheduler's own
    pipe narrower than the warp (FP64 on GA100: 8 lanes, a warp in 4 cycles) reads them while it
    is dispatched, over the cycles it occupies the unit."""
    if mem != 0 or sm_unit:
        return max2(rbar_lat, occ)
    return max2(occ, 1.0)


def register_map(s_dst, s_src):
    """The scoreboard's row of each register the kernel names (``rmap[id]``; -1: never named) and
    their count (at least 1): dense, in order of first appearance (an instruction's sources, then
    its destinations, in static order). The flat register-id space is sparse (predicates, uniform
    registers lie far above the general ones), and a warp's scoreboard row is read at every
    issue: numbered densely, a warp's registers take a few host cache lines instead of lines
    registers apart, and the instructions of a loop body, which name the same few registers, find
    them in the same lines. A bijection of the registers named: the same results. (numpy, for
    :func:`teg.engine.core.new_state`.)"""
    ids = np.concatenate([np.asarray(s_src, np.int64), np.asarray(s_dst, np.int64)], axis=1).ravel()
    ids = ids[ids >= 0]
    rmap = np.full(int(ids.max()) + 1 if ids.shape[0] else 1, -1, np.int64)
    uniq, first = np.unique(ids, return_index=True)
    rmap[uniq[np.argsort(first, kind="stable")]] = np.arange(uniq.shape[0], dtype=np.int64)
    return rmap, max(int(uniq.shape[0]), 1)


@helper
def pack_static(static, s_fchk, rmap, depmodel, pipe_limited, can_fast, issue_interval, sw_same, sw_bar, rbar_lat,
                store_path):
    """The static tables as the loop reads them (``X_*`` / ``SF_*`` columns): ``X_CC`` = the
    instruction is timed by its control codes; ``SF_SAME`` its same-warp delay (stall count or
    same-warp latency, at least 1; 1 cycle / the multi-warp latency with that switch off);
    ``SF_FREE`` the scheduler's busy time ``max(issue interval, multi-warp latency)``;
    ``X_FAST`` a single-cycle issue (the scan may stop at the first eligible warp); ``X_ILINE`` the
    instruction-cache line the instruction lies in (-1: fetch not modelled), ``X_FCHK`` a warp may
    enter that line at this instruction (:func:`_fetch_checks`), ``X_CLINE`` the constant-cache
    line of its ``c[bank][off]`` operand (-1: none); ``SF_RBAR`` when its read barrier releases
    after issue (:func:`_rbar_release`); ``X_GMEM``
    1: needs a memory-pipeline slot, 2: a global write that also needs its SM's store path
    (``store_path``: the path is modelled); ``X_BAR`` a BAR that waits (free barriers: none); source and
    destination lists with their lengths (up to the first -1), as scoreboard rows (``rmap``:
    :func:`register_map`), and the destinations the write-after-write check needs (``X_WAW``:
    those that are not also sources)."""
    (s_unit, s_occ, s_lat_exec, s_lat_multi, s_lat_same, s_mem, s_mem_lat, s_store, s_barrier, s_depcause, s_dst,
     s_src, s_ctrl, s_stall, s_yield, s_wbar, s_rbar, s_wait, s_depbar, s_async, s_iline, s_cline, u_occ, u_count,
     u_per_sm) = static
    n = s_unit.shape[0]
    sx = np.zeros(n * XW, np.int64)
    sf = np.zeros(n * FW, np.float64)
    for s in range(n):
        x = s * XW
        f = s * FW
        u = s_unit[s]
        cc = depmodel == DEPMODEL_CONTROLCODES and s_ctrl[s] != 0
        sx[x + X_UNIT] = u
        sx[x + X_UPSM] = u_per_sm[u] != 0
        sx[x + X_UCNT] = u_count[u]
        sx[x + X_MEM] = s_mem[s]
        sx[x + X_GMEM] = pipe_limited and s_mem[s] == MEM_GLOBAL
        if store_path and s_mem[s] == MEM_GLOBAL and s_store[s] == 2:
            sx[x + X_GMEM] = 2
        sx[x + X_STORE] = s_store[s]      # 0 = through L1, 1 = bypasses L1, 2 = a write (bypasses L1)
        sx[x + X_BAR] = sw_bar and s_barrier[s] != 0
        sx[x + X_DEPCAUSE] = s_depcause[s]
        sx[x + X_CC] = cc
        sx[x + X_YIELD] = s_yield[s]
        sx[x + X_WBAR] = s_wbar[s]
        sx[x + X_RBAR] = s_rbar[s]
        sx[x + X_WAIT] = s_wait[s]
        sx[x + X_DEPBAR] = s_depbar[s]
        sx[x + X_ASYNC] = s_async[s]
        sx[x + X_FAST] = can_fast and s_lat_multi[s] <= 1.0
        sx[x + X_ILINE] = s_iline[s]
        sx[x + X_FCHK] = s_fchk[s]
        sx[x + X_CLINE] = s_cline[s]
        k = 0
        while k < s_src.shape[1] and s_src[s, k] >= 0:
            sx[x + X_SRC + k] = rmap[s_src[s, k]]
            k += 1
        sx[x + X_NSRC] = k
        k = 0
        while k < s_dst.shape[1] and s_dst[s, k] >= 0:
            sx[x + X_DST + k] = rmap[s_dst[s, k]]
            k += 1
        sx[x + X_NDST] = k
        # a destination that is also a source never binds the write-after-write check: the source
        # check already raised t_dep to its ready time, and the check subtracts a latency >= 0
        nw = 0
        for kd in range(k):
            r = sx[x + X_DST + kd]
            also_src = False
            for ks in range(sx[x + X_NSRC]):
                also_src = also_src or sx[x + X_SRC + ks] == r
            if not (also_src and s_lat_exec[s] >= 0.0):
                sx[x + X_WAW + nw] = r
                nw += 1
        sx[x + X_NWAW] = nw
        sf[f + SF_OCC] = s_occ[s]
        sf[f + SF_LAT] = s_lat_exec[s]
        sf[f + SF_MEMLAT] = s_mem_lat[s]
        sf[f + SF_FREE] = max2(issue_interval, s_lat_multi[s])
        sf[f + SF_RBAR] = rbar_release(s_mem[s], u_per_sm[u] != 0, s_occ[s], rbar_lat)
        if cc:
            sf[f + SF_SAME] = max2(float(s_stall[s]) if sw_same else 1.0, 1.0)
        else:
            sf[f + SF_SAME] = max2(s_lat_same[s] if sw_same else s_lat_multi[s], 1.0)
    return sx, sf


@helper
def table_sizes(static):
    """Copies of the most replicated unit (the unit table's row width)."""
    u_count = static.u_count
    maxc = 1
    for u in range(u_count.shape[0]):
        if u_count[u] > maxc:
            maxc = u_count[u]
    return maxc


@helper
def kernel_uses(static, sw_bar):
    """Whether the kernel has a BAR that waits (else the loop skips the barrier checks) and any
    cp.async copy, commit or DEPBAR (else it skips their checks and keeps no barrier ring)."""
    s_barrier, s_async, s_depbar = static.s_barrier, static.s_async, static.s_depbar
    has_bar = False
    has_async = False
    for i in range(s_barrier.shape[0]):
        if s_barrier[i] != 0 and sw_bar:
            has_bar = True
    for i in range(s_async.shape[0]):
        if s_async[i] != 0 or s_depbar[i] >= 0:
            has_async = True
    return has_bar, has_async
