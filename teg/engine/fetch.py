"""Instruction fetch and the constant cache (docs/model.md §2): each SM starts the kernel with
none of its code and none of its constants; a warp entering a line of code, or reading a
``c[bank][offset]`` line, waits for it from L2 (DRAM on the GPU's first fetch of a code line).

:class:`Fetch` holds the caches' fill times: ``has_fetch`` (fetch modelled), ``ifl[sm, line]`` the
time the line is in the SM's instruction cache (-1: not requested), ``gfl[line]`` the time it
first arrived from DRAM, ``front[sm]`` the last line the SM's sequential prefetch requested,
``f_l2`` / ``f_dram`` the fetch latencies, ``f_pf`` the lines the prefetch runs ahead of a warp;
``has_const`` and ``cfl[sm, line]`` the time a constant line is in the SM's constant cache.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from teg.engine.jitlib import cold, helper, max2

Fetch = namedtuple("Fetch", ("has_fetch", "ifl", "gfl", "front", "f_l2", "f_dram", "f_pf", "has_const", "cfl"))


@cold
def fetch_line(fe, sm, line, now):
    """Instruction fetch (docs/model.md §2): the time ``line`` of the kernel's code is in ``sm``'s
    instruction cache. Each SM starts the kernel with none of its code. A warp reaching ``line``
    at ``now`` (the cycle its instruction became current) requests it if the SM has not, and keeps
    the sequential prefetch ``f_pf`` lines ahead of it (``front[sm]``: the last line requested
    ahead). A line arrives after the DRAM latency when no SM has fetched it before, else after
    the L2 latency but not before its first fetch brought it on chip."""
    ifl, gfl, front = fe.ifl, fe.gfl, fe.front
    ahead = line + fe.f_pf
    if ahead > front[sm]:
        front[sm] = ahead       # (past the code's end too: that is requested as far as it goes)
    last = ahead if ahead < ifl.shape[1] else ifl.shape[1] - 1
    for k in range(line, last + 1):
        if ifl[sm, k] < 0.0:
            if gfl[k] < 0.0:
                gfl[k] = now + fe.f_dram
            ifl[sm, k] = max2(now + fe.f_l2, gfl[k])
    return ifl[sm, line]


@helper
def fetch_checks(s_iline, r_sidx, c_start, c_end, on):
    """Per static instruction, 1 where a warp may enter a new instruction-cache line: the first
    instruction of a line (the one before it, in static order = PC order, lies in another line), a
    warp's first instruction, and every instruction a warp reaches other than from the one before
    it (a branch target in this trace). Everywhere else the warp is still in the line it entered,
    whose fetch it has waited for, so the loop checks nothing there."""
    n = s_iline.shape[0]
    chk = np.zeros(n, np.int64)
    lines = False           # some instruction has a line (a loop, not s_iline.max(): numba's max is
    for s in range(n):      # numba.np.arraymath's, which a warm run would import, and scipy with it)
        if s_iline[s] >= 0:
            lines = True
            break
    if not on or not lines:
        return chk          # fetch switched off or not modelled: nothing to check
    for s in range(n):
        if s_iline[s] >= 0 and (s == 0 or s_iline[s - 1] != s_iline[s]):
            chk[s] = 1
    for c in range(c_start.shape[0]):
        if c_end[c] > c_start[c]:
            chk[r_sidx[c_start[c]]] = 1
        for row in range(c_start[c] + 1, c_end[c]):
            if r_sidx[row] != r_sidx[row - 1] + 1:
                chk[r_sidx[row]] = 1
    return chk


def line_table(lines, on, n_sms):
    """Whether a per-SM cache of code or constant lines is modelled (its switch ``on`` and some
    instruction with a line in ``lines``), and its table ``[sm, line]`` of arrival times, every
    line not yet requested (-1; one dummy entry when not modelled)."""
    n = max(int(lines.max()) + 1, 0) if lines.shape[0] > 0 else 0
    used = bool(on) and n > 0
    return used, np.full((n_sms if used else 1, n if used else 1), -1.0, np.float64)


def new_fetch(s_iline, s_cline, n_sms, sc):
    """The :class:`Fetch` tables, empty (numpy, outside the jitted code): each cache is modelled
    when its switch is on and some instruction has a line (``s_iline`` / ``s_cline`` >= 0)."""
    has_fetch, ifl = line_table(s_iline, sc.instruction_fetch, n_sms)
    gfl = np.full(ifl.shape[1], -1.0, np.float64)
    front = np.full(ifl.shape[0], -1, np.int64)
    has_const, cfl = line_table(s_cline, sc.constant_cache, n_sms)
    return Fetch(has_fetch, ifl, gfl, front, sc.l2_latency, sc.dram_latency, sc.fetch_prefetch, has_const, cfl)
