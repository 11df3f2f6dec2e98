"""The warp schedulers' side of the loop: a warp's ready time as a scan sees it (t_dep, its unit
copy, its memory-pipeline slot), the schedulers' and SMs' wake-up times, the stall charging of
skipped cycles, warps joining the schedulers (block launch) and rejoining them (barrier release),
and the replay order's next event.
"""

from __future__ import annotations

import math

import numpy as np

from teg.engine.codes import C_BARS, C_BLOCKS, MEM_PIPE, NO_WARP, POLICY_GTY, POLICY_LRR, RUN_BLOCK_TOO_BIG, RUN_DONE, UNIT_BUSY
from teg.engine.jitlib import INF, cold, helper, hot, max2, min2, nonneg, tree_set
from teg.engine.scoreboard import compute_tdep
from teg.engine.state import (NSB, RS_T, SCF_NEXT, SCF_SPLIT, SCI_C1, SCI_C2, SLF_BAR, SLF_SAME, SLF_SINCE, SLF_SPLIT,
                              SLI_AGE, SLI_BLOCK, SLI_C1, SLI_C2, SLI_CTX, SLI_END, SLI_G, SLI_GMEM, SLI_ROW,
                              SLI_SAMEC, SLI_SIDX, SLI_UCNT, SLI_UOFF, SLI_YIELD)


@helper
def charge(stall_out, c1, c2, a, b, split):
    """Charge the cycles ``[a, b)`` of one SM: those before ``ceil(split)`` (clamped into the
    range) to ``c1``, the rest to ``c2`` (a producer's dependency class, then the mechanism that
    delayed it past its conflict- and queue-free time)."""
    if b > a:
        sp = math.ceil(split)
        if sp < a:
            sp = a
        if sp > b:
            sp = b
        stall_out[c1] += np.int64(sp - a)
        stall_out[c2] += np.int64(b - sp)


@hot
def note_ready(w, sd, slot):
    """Lower the slot's scheduler wake-up time to the slot's t_dep."""
    sli, slf, tdep = w.sli, w.slf, w.tdep
    scf, sci, lbo = sd.scf, sd.sci, sd.lbo
    g = nonneg(sli[slot, SLI_G])
    if tdep[slot] < lbo[g]:
        lbo[g] = tdep[slot]
    if tdep[slot] < scf[g, SCF_NEXT]:
        scf[g, SCF_NEXT] = tdep[slot]
        sci[g, SCI_C1] = sli[slot, SLI_C1]
        sci[g, SCI_C2] = sli[slot, SLI_C2]
        scf[g, SCF_SPLIT] = slf[slot, SLF_SPLIT]


@hot
def sm_wake(scf, tree, leaves, S, sm):
    """Earliest wake-up among the SM's schedulers, written into the min-tree."""
    g0 = nonneg(sm * S)
    m = scf[g0, SCF_NEXT]
    for k in range(1, S):
        if scf[nonneg(g0 + k), SCF_NEXT] < m:
            m = scf[nonneg(g0 + k), SCF_NEXT]
    tree_set(tree, leaves, sm, m)


@hot
def earliest_copy(sli, uf, slot):
    """The earliest-free copy of the unit the slot's next instruction needs: its copy index
    (first on ties) and free time."""
    off = nonneg(sli[slot, SLI_UOFF])
    bc = 0
    m = uf[off, 0]
    for cc in range(1, sli[slot, SLI_UCNT]):
        if uf[off, cc] < m:
            m = uf[off, cc]
            bc = cc
    return nonneg(bc), m


@hot
def ready_of(sli, tdep, uf, heap, wport, pp, sw_units, slot):
    """Earliest cycle the slot's instruction may issue (t_dep, unit copy, memory-pipeline slot
    ``heap[pp]``, for a global write the SM's store path ``wport[pp]``) and the binding shared
    resource (0: t_dep binds), as the scan evaluates a warp."""
    r = tdep[slot]
    bind = 0
    if sw_units:
        m = earliest_copy(sli, uf, slot)[1]
        if m > r:
            r = m
            bind = UNIT_BUSY
    if sli[slot, SLI_GMEM] and heap[pp, 0] > r:
        r = heap[pp, 0]
        bind = MEM_PIPE
    if sli[slot, SLI_GMEM] == 2 and wport[pp] > r:
        r = wport[pp]
        bind = UNIT_BUSY
    return r, bind


@helper
def waited_on(sli, tdep, uf, heap, wport, sch_list, sch_n, g, nxt, policy, S, spsm, L, pipe, sw_units):
    """The static instruction that scheduler ``g`` waits on until ``nxt`` (its binding wait), for the
    instruction view, which charges the SM's stall cycles to it (``REC_PCS``; looked up only then,
    so that the loop keeps no state for it): the current instruction of the scheduler's first warp,
    in age order (GTO), reverse age order (GTY) or slot order (LRR), whose ready time (t_dep, its unit copy, its
    memory-pipeline slot, a write's store path, as the scan evaluates a warp) is ``nxt``; else of its warp ready first
    (a wait for the scheduler itself); -1 when it has no warp."""
    best = -1
    bt = INF
    n = L if policy == POLICY_LRR else sch_n[g]
    for k in range(n):
        if policy != POLICY_LRR:
            slot = sch_list[g, n - 1 - k if policy == POLICY_GTY else k]
        else:
            loc = (g % S) + k * S
            if loc >= spsm:
                continue
            slot = (g // S) * spsm + loc
        if sli[slot, SLI_CTX] < 0:
            continue
        r = tdep[slot]
        if sw_units:
            m = uf[sli[slot, SLI_UOFF], 0]
            for c in range(1, sli[slot, SLI_UCNT]):
                m = min2(m, uf[sli[slot, SLI_UOFF], c])
            r = max2(r, m)
        if sli[slot, SLI_GMEM]:
            r = max2(r, heap[pipe, 0])
        if sli[slot, SLI_GMEM] == 2:
            r = max2(r, wport[pipe])
        if r == nxt:
            return sli[slot, SLI_SIDX]
        if r < bt:
            bt = r
            best = sli[slot, SLI_SIDX]
    return best


@hot
def replay_next(order_in, r_ctx, ctx_slot, sli, parked, scf, g_sm, tree, leaves, S, ptr, now):
    """Make the order's event ``ptr`` the one that may issue next; a scheduler parked while
    waiting for the order is scanned again from ``now`` (next cycle when this sweep has passed
    it). Returns the event's slot, or -1 when its warp is not resident at that row."""
    row = order_in[ptr]
    c = r_ctx[row]
    slot = ctx_slot[c]
    if slot < 0 or sli[slot, SLI_CTX] != c or sli[slot, SLI_ROW] != row:
        return -1
    g = nonneg(sli[slot, SLI_G])
    if parked[g]:
        parked[g] = False
        scf[g, SCF_NEXT] = now
        sm_wake(scf, tree, leaves, S, g_sm[g])
    return slot


@cold
def launch_blocks(w, sd, st, fe, ln, grid, r_sidx, sm_end, counters, sm, t0, most, resident, deal, q_end, spsm):
    """Launch up to ``most`` blocks on ``sm`` until its resident-block limit (occupancy) or
    the blocks it may take are exhausted (its own list, or with dynamic dealing the grid-wide
    queue): each warp of a block takes the lowest free slot of the SM, becomes eligible at
    ``t0`` (kernel start, or the launch latency after a block retires) with a clean scoreboard,
    and joins its scheduler's list (the search for a free slot starts at ``ln.free_from[sm]``:
    every slot below it is taken). Returns RUN_BLOCK_TOO_BIG when no slot is free (inconsistent
    occupancy), else RUN_DONE."""
    sli, slf = w.sli, w.slf
    sch_list, sch_n = sd.sch_list, sd.sch_n
    sm_res, sm_next, q_next, b_ctx_start = ln.sm_res, ln.sm_next, ln.q_next, grid.b_ctx_start
    n_launched = 0
    while sm_res[sm] < resident and n_launched < most:
        if deal:
            if q_next[0] >= q_end:
                break
            b = grid.sm_blocks[q_next[0]]
            q_next[0] += 1
        else:
            if sm_next[sm] >= grid.sm_blocks_start[sm + 1]:
                break
            b = grid.sm_blocks[sm_next[sm]]
            sm_next[sm] += 1
        n_launched += 1
        sm_res[sm] += 1
        sm_end[sm, 1] += 1.0
        counters[C_BLOCKS] += 1
        ln.blk_live[b] = b_ctx_start[b + 1] - b_ctx_start[b]
        ln.blk_arrived[b] = 0
        for c in range(b_ctx_start[b], b_ctx_start[b + 1]):
            slot = -1
            for loc in range(ln.free_from[sm], spsm):
                if sli[nonneg(sm * spsm + loc), SLI_CTX] < 0:
                    slot = sm * spsm + loc
                    ln.free_from[sm] = loc + 1
                    break
            if slot < 0:
                return RUN_BLOCK_TOO_BIG
            ln.ctx_slot[c] = slot
            sli[slot, SLI_CTX] = c
            sli[slot, SLI_ROW] = grid.c_start[c]
            sli[slot, SLI_END] = grid.c_end[c]
            sli[slot, SLI_SIDX] = r_sidx[grid.c_start[c]]
            slf[slot, SLF_SAME] = t0
            sli[slot, SLI_SAMEC] = NO_WARP
            slf[slot, SLF_BAR] = 0.0
            sli[slot, SLI_AGE] = ln.age[0]
            ln.age[0] += 1
            sli[slot, SLI_YIELD] = 1
            slf[slot, SLF_SINCE] = t0
            sli[slot, SLI_BLOCK] = b
            if slot - sm * spsm < ln.fresh_from[sm]:
                # a slot held before: its scoreboard is cleared (a slot never held is all zeros)
                w.rs[slot, :, :] = 0.0
                w.bs[slot, :, :] = 0.0
                w.rsc[slot, :, :] = 0
                w.bsc[slot, :, :] = 0
                w.bqn[slot, :] = 0
                w.bq[slot, NSB, 0, RS_T] = 0.0
            else:
                ln.fresh_from[sm] = slot - sm * spsm + 1
            compute_tdep(w, st, fe, slot)
            note_ready(w, sd, slot)
            g2 = sli[slot, SLI_G]
            sch_list[g2, sch_n[g2]] = slot
            sch_n[g2] += 1
    return RUN_DONE


@cold
def release(w, sd, st, fe, ln, grid, counters, blk, rel):
    """All warps of ``blk`` have arrived at the barrier: the waiting ones may go on at ``rel``."""
    ln.blk_arrived[blk] = 0
    ln.blk_bar[blk, 0] = 0.0
    ln.blk_bar[blk, 1] = 0.0
    counters[C_BARS] += 1
    for c in range(grid.b_ctx_start[blk], grid.b_ctx_start[blk + 1]):
        slot = ln.ctx_slot[c]
        if slot >= 0 and w.sli[slot, SLI_CTX] == c and w.slf[slot, SLF_BAR] >= INF:
            w.slf[slot, SLF_BAR] = rel
            compute_tdep(w, st, fe, slot)
            note_ready(w, sd, slot)
