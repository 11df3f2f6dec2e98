"""The scoreboard (docs/model.md §2): when a warp's current instruction may issue as far as its own
dependencies go (t_dep, :func:`compute_tdep`), and the writes an issue makes — each destination
register's ready time (scoreboard model) or the dependency barriers it sets (control codes), with
the cp.async groups and the ``DEPBAR.LE`` rings (:func:`write_results`). Every entry keeps the
split time and the two causes a consumer waiting on it is charged.
"""

from __future__ import annotations

import numpy as np

from teg.engine.codes import BARRIER, CONST_MISS, FETCH
from teg.engine.fetch import fetch_line
from teg.engine.jitlib import helper, hot, nonneg
from teg.engine.state import (NQ, NSB, RC_C1, RC_C2, RS_B, RS_T, SLF_BAR, SLF_SAME, SLF_SINCE, SLF_SPLIT, SLI_C1,
                              SLI_C2, SLI_G, SLI_GMEM, SLI_SAMEC, SLI_SIDX, SLI_SM, SLI_UCNT, SLI_UOFF)
from teg.engine.static import (FW, SF_LAT, SF_RBAR, X_ASYNC, X_CC, X_CLINE, X_DEPBAR, X_DEPCAUSE, X_DST, X_FCHK,
                               X_GMEM, X_ILINE, X_NDST, X_NSRC, X_NWAW, X_RBAR, X_SRC, X_UCNT, X_UNIT, X_UPSM,
                               X_WAIT, X_WAW, X_WBAR, XW)


@hot
def compute_tdep(w, st, fe, slot):
    """t_dep of the slot's current instruction and its binding cause: the latest of its same-warp
    issue time, its line of code and constant line (:mod:`teg.engine.fetch`), a barrier release,
    and its registers' (scoreboard) or dependency barriers' (control codes) producers and a
    write-after-write wait; with the unit copy group and memory-pipeline need of the instruction."""
    sli, slf, rs, rsc, bs, bsc = w.sli, w.slf, w.rs, w.rsc, w.bs, w.bsc
    sx, sf = st.sx, st.sf
    s = nonneg(sli[slot, SLI_SIDX])
    x = nonneg(s * XW)
    t0 = slf[slot, SLF_SAME]
    c1 = sli[slot, SLI_SAMEC]
    c2 = c1
    sp = t0
    # instruction fetch: checked where a warp may enter another line (X_FCHK)
    if fe.has_fetch and sx[x + X_FCHK] != 0:
        sm = nonneg(sli[slot, SLI_SM])
        line = nonneg(sx[x + X_ILINE])
        ta = fe.ifl[sm, line]
        if ta < 0.0 or line + fe.f_pf > fe.front[sm]:
            ta = fetch_line(fe, sm, line, slf[slot, SLF_SINCE])
        if ta > t0:
            t0 = ta
            c1 = FETCH
            c2 = FETCH
            sp = t0
    # constant cache (docs/model.md §2): the first read of a line on an SM waits for it from L2
    if fe.has_const and sx[x + X_CLINE] >= 0:
        sm = nonneg(sli[slot, SLI_SM])
        cl = nonneg(sx[x + X_CLINE])
        ta = fe.cfl[sm, cl]
        if ta < 0.0:
            ta = slf[slot, SLF_SINCE] + fe.f_l2
            fe.cfl[sm, cl] = ta
        if ta > t0:
            t0 = ta
            c1 = CONST_MISS
            c2 = CONST_MISS
            sp = t0
    if st.has_bar and slf[slot, SLF_BAR] > t0:
        t0 = slf[slot, SLF_BAR]
        c1 = BARRIER
        c2 = BARRIER
        sp = t0
    if st.sw_deps:
        if sx[x + X_CC] == 0:
            for k in range(sx[x + X_NSRC]):
                r = nonneg(sx[nonneg(x + X_SRC + k)])
                if rs[slot, r, RS_T] > t0:
                    t0 = rs[slot, r, RS_T]
                    sp = rs[slot, r, RS_B]
                    c1 = rsc[slot, r, RC_C1]
                    c2 = rsc[slot, r, RC_C2]
            # write-after-write: the new result must not land before the pending one
            lx = sf[s * FW + SF_LAT]
            for k in range(sx[x + X_NWAW]):
                r = nonneg(sx[nonneg(x + X_WAW + k)])
                if rs[slot, r, RS_T] - lx > t0:
                    t0 = rs[slot, r, RS_T] - lx
                    sp = rs[slot, r, RS_B] - lx
                    c1 = rsc[slot, r, RC_C1]
                    c2 = rsc[slot, r, RC_C2]
        else:
            wm = sx[x + X_WAIT]
            for b in range(NSB):
                if (wm >> b) & 1 and bs[slot, b, RS_T] > t0:
                    t0 = bs[slot, b, RS_T]
                    sp = bs[slot, b, RS_B]
                    c1 = bsc[slot, b, RC_C1]
                    c2 = bsc[slot, b, RC_C2]
        db = sx[x + X_DEPBAR] if st.has_async else -1
        if db >= 0:
            bt, bsp, b1, b2 = depbar_wait(bs, bsc, w.bq, w.bqc, w.bqn, slot, db)
            if bt > t0:
                t0 = bt
                sp = bsp
                c1 = b1
                c2 = b2
    w.tdep[slot] = t0
    sli[slot, SLI_C1] = c1
    sli[slot, SLI_C2] = c2
    slf[slot, SLF_SPLIT] = sp
    u = sx[x + X_UNIT]
    grp = sli[slot, SLI_SM] * st.S if sx[x + X_UPSM] != 0 else sli[slot, SLI_G]
    sli[slot, SLI_UOFF] = grp * st.U + u
    sli[slot, SLI_UCNT] = sx[x + X_UCNT]
    sli[slot, SLI_GMEM] = sx[x + X_GMEM]


@helper
def depbar_wait(bs, bsc, bq, bqc, bqn, slot, db):
    """``DEPBAR.LE SBb, N`` (``db = b + 8 N``): when it may issue, with the split and causes of the
    result it waits for: the latest for N = 0 (none outstanding), else the (N+1)-th latest of the
    barrier's remembered results (-1.0 when fewer than N+1 are remembered: nothing to wait for)."""
    b = db & 7
    n = db >> 3
    if n == 0:
        return bs[slot, b, RS_T], bs[slot, b, RS_B], bsc[slot, b, RC_C1], bsc[slot, b, RC_C2]
    m = min(bqn[slot, b], NQ)
    for i in range(m):
        later = 0
        for j in range(m):
            if bq[slot, b, j, RS_T] > bq[slot, b, i, RS_T] or (bq[slot, b, j, RS_T] == bq[slot, b, i, RS_T] and j > i):
                later += 1
        if later == n:
            return bq[slot, b, i, RS_T], bq[slot, b, i, RS_B], bqc[slot, b, i, RC_C1], bqc[slot, b, i, RC_C2]
    return -1.0, -1.0, np.int64(0), np.int64(0)


@helper
def bar_write(bs, bsc, bq, bqc, bqn, slot, b, rt, rb, c1, c2, ring):
    """Dependency barrier ``b`` of the slot counts one more result, ready at ``rt`` (split ``rb``,
    causes ``c1``/``c2``): ``bs``/``bsc`` keep the latest (a wait for zero outstanding), the ring
    ``bq``/``bqc`` the last NQ (``DEPBAR.LE`` with N > 0; kept only with ``ring``, i.e. when the
    kernel has a DEPBAR or cp.async), ``bqn`` counts them."""
    if rt > bs[slot, b, RS_T]:
        bs[slot, b, RS_T] = rt
        bs[slot, b, RS_B] = rb
        bsc[slot, b, RC_C1] = c1
        bsc[slot, b, RC_C2] = c2
    if not ring:
        return      # no DEPBAR.LE N > 0 in the kernel reads the ring: leave it (and its memory) alone
    q = bqn[slot, b] & (NQ - 1)
    bqn[slot, b] += 1
    bq[slot, b, q, RS_T] = rt
    bq[slot, b, q, RS_B] = rb
    bqc[slot, b, q, RC_C1] = c1
    bqc[slot, b, q, RC_C2] = c2


@hot
def write_results(w, sx, sf, cc, has_async, sw_deps, slot, x, f, t, rd, rb, c1, c2):
    """The issue's writes at cycle ``t``: its result, ready at ``rd`` (split ``rb``, causes ``c1`` /
    ``c2``), to its destination registers, or with control codes (``cc``) to its write barrier and, read
    barrier, the release of its sources; a cp.async copy joins the warp's open group instead and a
    commit closes it (counted on a barrier). Returns the causes written (a commit's are its
    group's latest copy's when that one completes later)."""
    bs, bsc, bq, bqc, bqn = w.bs, w.bsc, w.bq, w.bqc, w.bqn
    asy = sx[x + X_ASYNC] if has_async else 0
    if asy == 1:
        # cp.async copy: its result joins the warp's open group (no register receives it)
        if rd > bq[slot, NSB, 0, RS_T]:
            bq[slot, NSB, 0, RS_T] = rd
            bq[slot, NSB, 0, RS_B] = rb
            bqc[slot, NSB, 0, RC_C1] = c1
            bqc[slot, NSB, 0, RC_C2] = c2
    elif asy == 2:
        # commit: the group's result is ready when its last copy is (or the commit itself)
        if bq[slot, NSB, 0, RS_T] > rd:
            rd = bq[slot, NSB, 0, RS_T]
            rb = bq[slot, NSB, 0, RS_B]
            c1 = bqc[slot, NSB, 0, RC_C1]
            c2 = bqc[slot, NSB, 0, RC_C2]
        bq[slot, NSB, 0, RS_T] = 0.0
        if not cc:
            # without control codes the group is counted on its barrier (SB0 by default)
            b = nonneg(sx[x + X_WBAR])
            bar_write(bs, bsc, bq, bqc, bqn, slot, b if b < NSB else 0, rd, rb, c1, c2, has_async)
    if cc:
        b = nonneg(sx[x + X_WBAR])
        if b < NSB:
            bar_write(bs, bsc, bq, bqc, bqn, slot, b, rd, rb, c1, c2, has_async)
        b = nonneg(sx[x + X_RBAR])
        if b < NSB:
            rt = t + sf[f + SF_RBAR] if sw_deps else t
            bar_write(bs, bsc, bq, bqc, bqn, slot, b, rt, rt, sx[x + X_DEPCAUSE], sx[x + X_DEPCAUSE], has_async)
    else:
        rs, rsc = w.rs, w.rsc
        for k in range(sx[x + X_NDST]):
            r = nonneg(sx[nonneg(x + X_DST + k)])
            rs[slot, r, RS_T] = rd
            rs[slot, r, RS_B] = rb
            rsc[slot, r, RC_C1] = c1
            rsc[slot, r, RC_C2] = c2
    return c1, c2
