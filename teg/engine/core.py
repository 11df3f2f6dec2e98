"""The timing engine: one numba-jitted, event-skipping loop over the simulated SMs
(docs/model.md gives the equations; this is their implementation).

Per simulated cycle ``t`` every scheduler whose earliest possible issue time has come scans its
warps. A warp's next instruction is *eligible* at

    ready(w) = max(t_dep(w), unit_free(u), slot_free(pipe), scheduler_free)

where ``t_dep`` is fixed when the instruction becomes current (same-warp issue latency or stall
count, barrier release, register scoreboard or dependency barriers), the other terms are shared
resources. The policy picks one eligible warp (loose round-robin, greedy-then-oldest or
greedy-then-youngest); issuing
sets the scheduler busy for ``max(issue_interval, issue_multi)``, occupies the unit, computes the
result time (execution latency, shared wavefronts, or the global path through L1 → memory pipeline
slot → L2 → DRAM channel queue) and writes it to the destination registers / dependency barrier.

GTO keeps, per scheduler, a lower bound on the ready time of its warps other than the greedy one
(a warp's ready time never falls while it does not issue). A scheduler woken for its greedy warp
whose ready time lies strictly below that bound knows the scan's outcome without scanning: no warp
is eligible and the greedy one is the minimum, with its causes. This skips most scans after a
greedy issue (half of all warp evaluations on the engine_speed trace); the result is the same.

When no scheduler can issue, time jumps to the earliest ``ready`` over all schedulers and every
skipped cycle is charged to the binding constraint of that warp (split at the producer's
conflict-free/queue-free time into the dependency class and the mechanism that delayed it), so
the stall breakdown sums to the total cycles. No Python objects, no randomness: identical inputs
give identical results.

Schedule-preserving replay (``order_in``, docs/model.md §5): the same loop, but only the order's
next row may issue — when a scheduler's policy picks another warp, the order's row issues instead
if it is eligible, else nothing does (a scheduler whose eligible warps are not next waits for the
order). Resources are allocated at issue, so in the order's sequence; replaying a run's own
recorded order (``order_out``) retraces that run step by step.

Channel skew removed (``channel_skew`` switch off): each DRAM transaction still goes to the channel
``tx_chan`` names, in the same FIFO order, but its service time is multiplied by that channel's
``balance_scale`` (``min(1, mean_load / load[c])``): a hot channel serves as if it carried only the
average load. Service times only shrink, so the replay stays monotone for this switch too.

Reading order. :func:`new_state` allocates the run's :class:`~teg.engine.state.State`;
:func:`simulate` launches the first blocks (:func:`_launch_first`) and runs the loop until the run
ends or its step budget is spent (``RUN_PAUSED``: called again with the same state, it goes on bit
for bit as if it had not stopped). Each step visits the SMs with a scheduler due (:func:`_visit_sm`);
each such scheduler picks a warp (:func:`_pick_warp`; in a replay :func:`_replay_gate`) or sleeps
until one may issue, and an issue (:func:`_issue`) computes the result time
(:func:`_result_time`, the global path in :mod:`teg.engine.memsys`), writes the scoreboard
(:mod:`teg.engine.scoreboard`), arrives at a barrier (:func:`_arrive_at_barrier`), advances or
retires the warp (:func:`_advance_or_retire`) and sets the scheduler's next wake-up
(:func:`_next_wake`). The run ends with :func:`_tail`.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from teg.engine import fetch, jitlib, memsys, records, schedulers, scoreboard, state, static as static_tables
from teg.engine.codes import (BANK_CONFLICT, C_EVALS, C_INSTR, C_SH_ACC, C_SH_WAVE, C_SH_WMIN, C_STEPS, ISSUE,
                              MEM_GLOBAL, MEM_SHARED, NO_WARP, NUM_CAUSES, POLICY_GTY, POLICY_LRR, RUN_BLOCK_TOO_BIG,
                              RUN_DEADLOCK, RUN_DONE, RUN_PAUSED, RUN_REPLAY_NOT_RESIDENT, SAME_WARP, SCHEDULER)
from teg.engine.fetch import fetch_checks, new_fetch
from teg.engine.jitlib import (INF, cold, fixed_dim, helper, hot, max2, min2, nonneg, pow2_at_least, prefetch,
                               tree_first_le)
from teg.engine.memsys import global_access, mem_config, new_memory, store_path
from teg.engine.records import NTL, NTX, PC_STALL, REC_PCS, record_issue
from teg.engine.schedulers import (charge, earliest_copy, launch_blocks, ready_of, release, replay_next, sm_wake,
                                   waited_on)
from teg.engine.scoreboard import compute_tdep, write_results
from teg.engine.state import (NUM_POS, POS_FINISHED, POS_RP_G, POS_RP_PTR, POS_RP_SLOT, POS_SPSM, POS_STARTED, SCF_FREE,
                              SCF_NEXT, SCF_SPLIT, SCI_C1, SCI_C2, SCI_GREEDY, SCI_RR, SLF_BAR, SLF_SAME, SLF_SINCE,
                              SLF_SPLIT, SLI_AGE, SLI_BLOCK, SLI_C1, SLI_C2, SLI_CTX, SLI_END, SLI_G, SLI_GMEM,
                              SLI_K, SLI_ROW, SLI_SAMEC, SLI_SIDX, SLI_UOFF, SLI_YIELD, State, aligned, fixed_widths,
                              index_maps, new_launch,
                              new_scheds, new_tally, new_warps, row_contexts, slots_per_sm)
from teg.engine.static import (FW, SF_FREE, SF_LAT, SF_MEMLAT, SF_OCC, SF_RBAR, SF_SAME, X_BAR, X_CC, X_DEPCAUSE,
                               X_DST, X_FAST, X_GMEM, X_MEM, X_NWAW, X_SRC, X_STORE, X_YIELD, XW, Static, kernel_uses,
                               pack_static, register_map, table_sizes)
from teg import jit
from teg.jit import njit, stamp_sources
from teg.memory import cache as cache_model, channels

# Software prefetch of the trace's per-row arrays: a warp reads its rows in order, but 64 warps
# interleave 64 such streams (more than the hardware prefetcher follows), and at 10 M rows the
# arrays no longer fit in the host's caches. 16 rows = one 64-byte line of int32.
PREFETCH_ROWS = 16      # rows ahead of a warp's issue point whose per-row data is prefetched, at
                        # every 8th row (8 rows = 64 bytes of the int64 array: each line once)

# What the loop writes (allocated by teg.engine.run; layouts in simulate's docstring and
# teg.engine.records).
Outputs = namedtuple("Outputs", ("stall", "pc_count", "pc_wait", "counters", "timeline", "sm_end", "order_out",
                                 "pcc", "tx_rec"))

# The loop's constants, derived once per call from the scalars and the state: SMs, schedulers per
# SM, warp slots per SM, slots per scheduler list, warp contexts, resident blocks, policy, the
# switches the loop reads itself, what the kernel uses and what the run records, replay, dealing,
# the wavefront and block-launch cycles, the dealing queue's end, the min-tree's leaves, the
# per-instruction attribution's row for "no instruction", the memory system (memsys.MemConfig).
Config = namedtuple("Config", ("n_sms", "S", "spsm", "L", "C", "resident", "policy", "sw_bank", "sw_deps",
                               "sw_units", "sw_bar", "has_bar", "has_async", "attrib", "rec_any", "rec_order",
                               "replay", "n_order", "deal", "wfc", "launch_lat", "q_end", "leaves", "pc_none", "mc"))


def new_state(static, rows, grid, sc, out, replay):
    """The run's :class:`~teg.engine.state.State`, for :func:`simulate`: the static tables packed
    with the run's switches (:func:`pack_tables`, jitted), every other table empty, built by numpy
    (no block launched; ``replay``: the run follows a replay order); ``out`` gets each SM's end
    and block count zeroed. numpy's zeros are untouched pages until the loop first writes them
    (calloc), where a jitted allocation writes every byte of the whole GPU's caches and
    scoreboards at every run; and the loop is compiled once, in :func:`simulate`."""
    n_sms = sc.sms
    S = sc.schedulers
    rmap, nreg = register_map(static.s_dst, static.s_src)
    sx, sf, has_bar, has_async, spsm, maxc, mc = pack_tables(static, rows, grid, sc, rmap)
    G = n_sms * S
    L = (spsm + S - 1) // S
    U = static.u_occ.shape[0]
    pos = np.zeros(NUM_POS, np.int64)
    pos[POS_RP_SLOT] = -1
    pos[POS_RP_G] = -1
    pos[POS_SPSM] = spsm
    # the largest value the integer slot table may hold (rows, contexts, blocks, unit rows, instructions)
    largest = max(rows.r_sidx.shape[0], grid.c_start.shape[0], grid.b_ctx_start.shape[0], G * U, static.u_occ.shape[0],
                  sx.shape[0])
    return State(new_warps(n_sms, spsm, S, nreg, has_async, largest), new_scheds(G, L),
                 Static(sx, sf, has_bar, sc.dependencies, has_async, S, U),
                 new_fetch(static.s_iline, static.s_cline, n_sms, sc),
                 new_launch(n_sms, grid.c_start.shape[0], grid.b_ctx_start, grid.sm_blocks_start, out.sm_end),
                 new_memory(mc, n_sms, rows.tx_chan, grid.sm_part),
                 aligned((n_sms * S * U, maxc), np.float64),       # unit copies' free times, a row per (group, unit)
                 np.full(2 * pow2_at_least(n_sms), INF, np.float64),  # min-tree over the SMs' wake-ups
                 new_tally(n_sms), index_maps(n_sms, S, mc.spp),
                 row_contexts(grid.c_start, grid.c_end, rows.r_sidx.shape[0] if replay else 0),
                 np.zeros(G, np.bool_),      # a scheduler waits for the replay order (its wake-up is no bound)
                 pos, np.zeros(1, np.float64))


@njit(cache=True, error_model="numpy")
def pack_tables(static, rows, grid, sc, rmap):
    """The run's packed static tables (:func:`teg.engine.static.pack_static`, folded with its
    switches, the registers named by their scoreboard rows ``rmap``:
    :func:`teg.engine.static.register_map`), whether the kernel has a waiting BAR and cp.async /
    DEPBAR, the warp slots per SM (:func:`teg.engine.state.slots_per_sm`), the unit table's width,
    and the memory system's configuration (:func:`teg.engine.memsys.mem_config`): what :func:`new_state`
    needs from jitted code (the loop's other entry, so that the loop itself is compiled once, in
    :func:`simulate`)."""
    spsm = slots_per_sm(sc, grid.b_ctx_start, grid.sm_blocks_start)
    maxc = table_sizes(static)
    mc = mem_config(sc)
    issue_interval = sc.issue_interval
    sx, sf = pack_static(static, fetch_checks(static.s_iline, rows.r_sidx, grid.c_start, grid.c_end,
                                              sc.instruction_fetch), rmap,
                         sc.depmodel, mc.pipe_limited, issue_interval <= 1.0, issue_interval, sc.same_warp_penalty,
                         sc.barriers, sc.rbar_latency, mc.store_cps > 0.0)
    has_bar, has_async = kernel_uses(static, sc.barriers)
    return sx, sf, has_bar, has_async, spsm, maxc, mc


@njit(cache=True, error_model="numpy")
def simulate(rows, grid, sc, order_in, out, sim, stop_at):
    """Run the timing model on the lowered kernel (:class:`~teg.engine.lowered.RowTable`,
    :class:`~teg.engine.lowered.Grid`, :class:`~teg.engine.scalars.Scalars`; the static table is
    packed in the state) from the state ``sim`` (:func:`new_state`), until the run ends or
    ``out.counters[C_STEPS]`` reaches ``stop_at``; fills the :class:`Outputs` ``out`` and returns
    ``(outcome, cycles)``: the outcome a ``RUN_*`` code of :mod:`teg.engine.codes`, the kernel's
    cycles (``RUN_DONE``) or the cycle reached. After ``RUN_PAUSED``, a call with the same
    arguments and a later ``stop_at`` goes on bit for bit as if the run had not stopped.

    ``out.stall`` receives the stall cycles by cause, ``out.pc_count`` / ``out.pc_wait`` each
    static instruction's executions and waits before issue, ``out.counters`` the counters
    (:data:`teg.engine.codes.COUNTER_NAMES`), ``out.sm_end[sm, 0]`` the SM's last completion (its
    writes' acknowledgements included), ``out.sm_end[sm, 1]`` the blocks it ran and
    ``out.sm_end[sm, 2]`` when its last block retired (its last warp exited: every result in, the
    writes' acknowledgements not awaited).

    ``order_in`` (non-empty: replay) is the global issue order to follow, ``out.order_out``
    (non-empty: record) receives this run's issue order; both hold dynamic row indexes.

    With ``sc.records`` bits (:mod:`teg.engine.records`): ``REC_ROWS`` fills ``out.timeline`` (a row
    per dynamic row) and ``out.tx_rec`` (a row per transaction); ``REC_PCS`` fills ``out.pcc`` (the
    waits before issue and the charged stall cycles per static instruction)."""
    if sim.pos[POS_STARTED] == 0:
        sim.pos[POS_STARTED] = 1
        outcome = _launch_first(grid, rows, sc, order_in, out, sim)
        if outcome != RUN_DONE:
            return outcome, np.int64(0)
    cf = _config(sc, sim, grid, order_in, out)
    fixed_widths(sim)
    fixed_dim(out.sm_end, 1, 3)
    fixed_dim(out.timeline, 1, NTL)
    fixed_dim(out.tx_rec, 1, NTX)
    fixed_dim(out.pcc, 2, NUM_CAUSES)
    S = cf.S
    counters = out.counters
    sd = sim.scheds
    scf = sd.scf
    t = sim.clock[0]
    # the event-skipping loop: one step per cycle at which some scheduler may issue
    while counters[C_STEPS] < stop_at:
        counters[C_STEPS] += 1
        # cycle t: the schedulers whose wake-up has come try to issue — the SMs in index order, as
        # the min-tree names them (an SM's entry is refreshed when it is left), within an SM one
        # after the other from scheduler t mod S, so the sub-partitions take turns at the SM's
        # shared units (MIO, CBU) round-robin and none starves behind a lower-numbered one
        rot = nonneg(np.int64(t)) % S
        g = np.int64(-1)   # int64 from the start: typed as the literal -1 first, numba compiled _visit_sm twice
        kq = S - 1          # (no SM entered yet: the first turn enters one)
        gbase = 0
        sm_iss = False
        while True:
            if kq < S - 1:
                kq += 1
                g += 1
                if g == gbase + S:
                    g = gbase
            else:
                nsm = _visit_sm(out, sim, cf, t, g, sm_iss)
                if nsm < 0:
                    break
                gbase = nsm * S
                kq = 0
                g = gbase + rot
                sm_iss = False
            g = nonneg(g)
            if scf[g, SCF_NEXT] > t:
                continue
            if scf[g, SCF_FREE] > t:        # the scheduler is busy: it sleeps until free
                _wait(sd, g, scf[g, SCF_FREE], SCHEDULER, SCHEDULER, scf[g, SCF_FREE])
                continue
            best, best_k, others_ready, fast, minr, mc1, mc2, msp = _pick_warp(out, sim, cf, t, g)
            if cf.replay:
                best, best_k, others_ready = _replay_gate(sim, cf, t, g, best, best_k, others_ready)
            if best < 0:                    # nothing to issue: sleep until the first warp may
                if best == -1:
                    _wait(sd, g, minr, mc1, mc2, msp)
                continue
            sm_iss = True
            outcome = _issue(rows, grid, order_in, out, sim, cf, t, g, best, best_k, others_ready, fast, minr, mc1,
                             mc2, msp)
            if outcome != RUN_DONE:
                return outcome, np.int64(t)
        if sim.pos[POS_FINISHED] >= cf.C:
            return RUN_DONE, _tail(out, sim, cf, t)
        # jump to the next cycle at which something may issue (each SM charges the cycles it
        # skipped when it is visited next)
        nmin = sim.tree[1]
        if nmin >= INF:
            return RUN_DEADLOCK, np.int64(t)
        tn = math.ceil(nmin)
        if tn < t + 1.0:
            tn = t + 1.0
        t = tn
    sim.clock[0] = t
    return RUN_PAUSED, np.int64(t)


# numba keys a cached entry by its own file only; the code of these modules is compiled into it
for _entry in (pack_tables, simulate):
    stamp_sources(_entry, (fetch, jitlib, memsys, records, schedulers, scoreboard, state, static_tables, cache_model,
                           channels, jit))


# ---------------------------------------------------------------------------------------- set-up

@hot
def _config(sc, sim, grid, order_in, out):
    """The loop's :data:`Config` for this call."""
    n_sms = sc.sms
    S = nonneg(sc.schedulers)
    spsm = sim.pos[POS_SPSM]
    mc = mem_config(sc)
    attrib = (sc.records & REC_PCS) != 0
    return Config(n_sms, S, spsm, (spsm + S - 1) // S, grid.c_start.shape[0], sc.resident, sc.policy,
                  sc.bank_conflicts, sc.dependencies, sc.unit_throughput, sc.barriers, sim.static.has_bar,
                  sim.static.has_async, attrib, mc.record or attrib, out.order_out.shape[0] > 0,
                  order_in.shape[0] > 0, order_in.shape[0], sc.deal, sc.wavefront_cycles,
                  sc.block_launch_latency if sc.block_launch else 1.0, grid.sm_blocks_start[n_sms],
                  (sim.tree.shape[0] // 2), out.pcc.shape[1] - 1, mc)


@helper
def _launch_first(grid, rows, sc, order_in, out, sim):
    """The first blocks: each SM takes blocks until its resident limit; dealt dynamically, the SMs
    take one block each in turn (breadth-first), so a grid smaller than a full wave spreads over
    all SMs. With a replay, the order's first event is made the one that may issue."""
    cf = _config(sc, sim, grid, order_in, out)
    w, sd, st, fe, ln = sim.warps, sim.scheds, sim.static, sim.fetch, sim.launch
    per_turn = 1 if cf.deal else cf.resident
    more = True
    while more:
        before = ln.q_next[0]
        for sm in range(cf.n_sms):
            if launch_blocks(w, sd, st, fe, ln, grid, rows.r_sidx, out.sm_end, out.counters, sm, 0.0, per_turn,
                             cf.resident, cf.deal, cf.q_end, cf.spsm) != RUN_DONE:
                return RUN_BLOCK_TOO_BIG
        more = cf.deal and ln.q_next[0] > before
    for sm in range(cf.n_sms):
        sm_wake(sd.scf, sim.tree, cf.leaves, cf.S, sm)
    if cf.replay:
        return _replay_advance(order_in, sim, cf, 0.0, np.int64(0))
    return RUN_DONE


# -------------------------------------------------------------------------------------- the loop

# ------------------------------------------------------------------------ the phases of a step

@hot
def _visit_sm(out, sim, cf, t, g, sm_iss):
    """Leave the SM of scheduler ``g`` (none when ``g`` < 0) and enter the next SM with a scheduler
    due at ``t``: the cycle left is an issue cycle or is charged at the SM's next visit; entering,
    the SM's skipped cycles go to the binding cause of its scheduler that woke first (first in
    index order on ties). Returns the SM entered, -1 when none is due."""
    S = cf.S
    scf, sci = sim.scheds.scf, sim.scheds.sci
    sm_t = sim.tally.sm_t
    tree = sim.tree
    stall_out = out.stall
    first = 0       # the first SM that may be next
    if g >= 0:
        lsm = nonneg(sim.maps.g_sm[g])
        if sm_iss:
            stall_out[ISSUE] += 1
            sm_t[lsm] = t + 1.0
        else:
            sm_t[lsm] = t
        sm_wake(scf, tree, cf.leaves, S, lsm)
        first = lsm + 1
    nsm = tree_first_le(tree, cf.leaves, first, t)
    if nsm < 0:
        return -1
    gbase = nonneg(nsm * S)
    gm = gbase
    for k in range(gbase + 1, gbase + S):
        if scf[nonneg(k), SCF_NEXT] < scf[gm, SCF_NEXT]:
            gm = nonneg(k)
    charge(stall_out, sci[gm, SCI_C1], sci[gm, SCI_C2], sm_t[nsm], t, scf[gm, SCF_SPLIT])
    if cf.attrib and t > sm_t[nsm]:
        w = sim.warps
        ks = waited_on(w.sli, w.tdep, sim.uf, sim.memory.heap, sim.memory.wport, sim.scheds.sch_list, sim.scheds.sch_n, gm,
                       scf[gm, SCF_NEXT], cf.policy, S, cf.spsm, cf.L, sim.maps.sm_pipe[nsm], cf.sw_units)
        charge(out.pcc[PC_STALL, ks if ks >= 0 else cf.pc_none], sci[gm, SCI_C1], sci[gm, SCI_C2], sm_t[nsm], t,
               scf[gm, SCF_SPLIT])
    return nsm


@hot
def _wait(sd, g, nxt, c1, c2, split):
    """Scheduler ``g`` sleeps until ``nxt``, charging the wait to ``c1`` then ``c2`` (split at ``split``)."""
    sd.scf[g, SCF_NEXT] = nxt
    sd.sci[g, SCI_C1] = c1
    sd.sci[g, SCI_C2] = c2
    sd.scf[g, SCF_SPLIT] = split


@hot
def _pick_warp(out, sim, cf, t, g):
    """The warp scheduler ``g`` issues at ``t`` (-1: none eligible), with the earliest ready time
    among the others and its causes (the scheduler's next wake-up when it issues nothing).

    GTO: the greedy warp first; else the oldest eligible warp (scan in age order). GTY: the greedy
    warp first; else the youngest eligible warp (scan in reverse age order). LRR: the scan
    starts after the last warp issued. When the scheduler is free again next cycle, the scan stops
    at the chosen warp (no cycle is skipped before the next scan, so nothing else needs
    evaluating). A greedy warp not yet ready whose ready time lies below the others' lower bound
    (``lbo``) is the known minimum: no scan. Returns ``(best, its list position, others ready,
    single-cycle issue, minimum, its two causes, its split)``."""
    w, sd, st = sim.warps, sim.scheds, sim.static
    sli, slf, tdep = w.sli, w.slf, w.tdep
    sci, lbo, sch_list, sch_n = sd.sci, sd.lbo, sd.sch_list, sd.sch_n
    sx = st.sx
    uf = sim.uf
    heap = sim.memory.heap
    wport = sim.memory.wport
    sw_units = cf.sw_units
    policy = cf.policy
    sm = nonneg(sim.maps.g_sm[g])
    pp = nonneg(sim.maps.sm_pipe[sm])     # the SM's memory pipeline
    best = -1
    best_k = -1
    others_ready = False
    minr = INF
    mc1 = NO_WARP
    mc2 = NO_WARP
    msp = INF
    fast = False
    gs = sci[g, SCI_GREEDY]
    gdone = False       # the greedy warp was evaluated here; the scan leaves it out
    rg = INF
    gbind = 0
    if policy != POLICY_LRR and gs >= 0 and sli[gs, SLI_CTX] >= 0:
        gs = nonneg(gs)
        rg, gbind = ready_of(sli, tdep, uf, heap, wport, pp, sw_units, gs)
        if rg > t:
            gdone = True
            if rg < lbo[g] and not cf.replay:
                # no other warp is ready before lbo[g]: the scan would find none eligible and the
                # greedy warp as the strict minimum, so its result is known
                return (-1, -1, False, False, rg, sli[gs, SLI_C1] if gbind == 0 else gbind,
                        sli[gs, SLI_C2] if gbind == 0 else gbind, slf[gs, SLF_SPLIT] if gbind == 0 else rg)
        elif sli[gs, SLI_YIELD] != 0:
            gdone = True
            best = gs
            best_k = sli[gs, SLI_K]
            fast = sx[nonneg(sli[gs, SLI_SIDX] * XW) + X_FAST] != 0
    gskip = gs if gdone else -1
    mslot = -1
    L = cf.L
    S = cf.S
    spsm = cf.spsm
    sch = sim.maps.g_sch[g]
    nscan = 0 if fast else (L if policy == POLICY_LRR else sch_n[g])
    last = sch_n[g] - 1     # GTY scans the age-ordered list from its end (the youngest warp)
    hmin = heap[pp, 0]
    k = sci[g, SCI_RR]
    nev = 0
    for kk in range(nscan):
        if policy == POLICY_LRR:
            k += 1
            if k == L:
                k = 0
            loc = sch + k * S
            if loc >= spsm:
                continue
            slot = nonneg(sm * spsm + loc)
            if sli[slot, SLI_CTX] < 0:
                continue
        else:
            slot = nonneg(sch_list[g, last - kk if policy == POLICY_GTY else kk])
            if slot == gskip:
                continue
        nev += 1
        r = tdep[slot]
        if r > t and r >= minr:
            continue            # r only grows below: neither eligible nor the new minimum
        # (the pipeline's time tested first: the slot's row is read only when it may bind)
        if hmin > t and hmin >= minr and sli[slot, SLI_GMEM]:
            continue            # waits for a memory-pipeline slot beyond the minimum
        r, bind = ready_of(sli, tdep, uf, heap, wport, pp, sw_units, slot)
        if r <= t:
            if best < 0:
                best = slot
                best_k = k if policy == POLICY_LRR else sli[slot, SLI_K]
                if sx[nonneg(sli[slot, SLI_SIDX] * XW) + X_FAST] != 0:
                    fast = True
                    break
            else:
                others_ready = True
        elif r < minr:
            minr = r
            mslot = slot
            if bind == 0:
                mc1 = sli[slot, SLI_C1]
                mc2 = sli[slot, SLI_C2]
                msp = slf[slot, SLF_SPLIT]
            else:
                mc1 = bind
                mc2 = bind
                msp = r
    out.counters[C_EVALS] += nev
    if gdone:
        if best != gs:
            # the greedy warp is not eligible: it takes its place in the minimum (first in the
            # scan's age order on ties: the older for GTO, the younger for GTY); the others'
            # minimum bounds their wait
            lbo[g] = minr if best < 0 else -INF
            tie = False
            if rg == minr and mslot >= 0:
                ga = sli[gs, SLI_AGE]
                ma = sli[nonneg(mslot), SLI_AGE]
                tie = ga > ma if policy == POLICY_GTY else ga < ma
            if rg < minr or tie:
                minr = rg
                mc1 = sli[gs, SLI_C1] if gbind == 0 else gbind
                mc2 = sli[gs, SLI_C2] if gbind == 0 else gbind
                msp = slf[gs, SLF_SPLIT] if gbind == 0 else rg
        elif nscan > 0:
            lbo[g] = -INF if others_ready else minr
    return best, best_k, others_ready, fast, minr, mc1, mc2, msp


@hot
def _replay_gate(sim, cf, t, g, best, best_k, others_ready):
    """Schedule-preserving replay: only the order's next event may issue. A scheduler whose
    eligible warps are not next waits for the order (parked); the next event's scheduler issues
    it when it is eligible, else sleeps until it is. Returns ``(best, best_k, others_ready)``,
    ``best`` -2 when the scheduler was put to sleep here."""
    sli, slf, tdep = sim.warps.sli, sim.warps.slf, sim.warps.tdep
    rp_slot = sim.pos[POS_RP_SLOT]
    if g != sim.pos[POS_RP_G]:
        if best >= 0:       # eligible warps, none of them next: wait for the order
            sim.scheds.scf[g, SCF_NEXT] = INF
            sim.parked[g] = True
            return -2, best_k, others_ready
    elif best >= 0 and best != rp_slot:
        pp = nonneg(sim.maps.sm_pipe[sim.maps.g_sm[g]])
        r, bind = ready_of(sli, tdep, sim.uf, sim.memory.heap, sim.memory.wport, pp, cf.sw_units, rp_slot)
        if r <= t:
            return rp_slot, sli[rp_slot, SLI_K], True     # the scan's choice is eligible too
        _wait(sim.scheds, g, r, sli[rp_slot, SLI_C1] if bind == 0 else bind,
              sli[rp_slot, SLI_C2] if bind == 0 else bind, slf[rp_slot, SLF_SPLIT] if bind == 0 else r)
        return -2, best_k, others_ready
    return best, best_k, others_ready


@hot
def _issue(rows, grid, order_in, out, sim, cf, t, g, best, best_k, others_ready, fast, minr, mc1, mc2, msp):
    """Scheduler ``g`` issues warp slot ``best`` at ``t``: the scheduler busy for the instruction's
    issue time, its unit copy occupied, the same-warp delay, the result time and the scoreboard
    writes, the SM's latest result, a barrier arrival, the warp's next instruction (or its exit
    and its block's retirement), the scheduler's next wake-up and, in a replay, the order's next
    event. Returns the outcome (``RUN_DONE`` unless a launch or the replay fails)."""
    w, sd, st = sim.warps, sim.scheds, sim.static
    sli, slf, tdep = w.sli, w.slf, w.tdep
    scf, sci = sd.scf, sd.sci
    sx, sf = st.sx, st.sf
    counters = out.counters
    sm = nonneg(sim.maps.g_sm[g])
    pp = nonneg(sim.maps.sm_pipe[sm])
    slot = nonneg(best)
    scf[g, SCF_NEXT] = INF     # recomputed below; releases/launches during the issue may lower it
    sci[g, SCI_RR] = best_k
    if slot != sci[g, SCI_GREEDY]:
        sd.lbo[g] = -INF        # the old greedy warp joins the others
    sci[g, SCI_GREEDY] = slot
    row = nonneg(sli[slot, SLI_ROW])
    s = nonneg(sli[slot, SLI_SIDX])
    x = nonneg(s * XW)
    f = nonneg(s * FW)
    counters[C_INSTR] += 1
    out.pc_count[s] += 1
    out.pc_wait[s] += t - slf[slot, SLF_SINCE]
    if cf.rec_any:
        ucopy = -1
        ufree = -INF
        if cf.sw_units:
            ucopy, ufree = earliest_copy(sli, sim.uf, slot)
        record_issue(out.timeline, out.pcc, row, s, g, t, slf[slot, SLF_SINCE], tdep[slot], slf[slot, SLF_SPLIT],
                     sli[slot, SLI_C1], sli[slot, SLI_C2], ufree, ucopy,
                     sim.memory.heap[pp, 0] if sli[slot, SLI_GMEM] else -INF)
    if cf.rec_order:
        out.order_out[counters[C_INSTR] - 1] = row
    scf[g, SCF_FREE] = t + sf[f + SF_FREE]
    mem = sx[x + X_MEM]
    wv, wmin, active = _wavefronts(rows, counters, cf, row, mem)
    bc = 0
    if cf.sw_units:
        bc, m = earliest_copy(sli, sim.uf, slot)
        sim.uf[nonneg(sli[slot, SLI_UOFF]), bc] = t + sf[f + SF_OCC] * wv
    if sx[x + X_GMEM] == 2:
        store_path(sim.memory, cf.mc, rows, row, pp, t)
    cc = sx[x + X_CC] != 0
    slf[slot, SLF_SAME] = t + sf[f + SF_SAME]
    if cc:
        sli[slot, SLI_YIELD] = sx[x + X_YIELD]
    sli[slot, SLI_SAMEC] = SAME_WARP
    done, base, c1, c2, n_req = _result_time(rows, out, sim, cf, t, row, sm, pp, x, f, mem, wv, wmin, active)
    if n_req > 0 and cf.sw_units:
        # the L1's miss stage sends the access's requests to L2 one after another, behind its
        # wavefronts: the pipeline takes no other access meanwhile (docs/model.md §3)
        sim.uf[nonneg(sli[slot, SLI_UOFF]), bc] += n_req * cf.mc.miss.req_cyc
    rd = done
    rb = base
    if not cf.sw_deps:
        rd = t
        rb = t
    c1, c2 = write_results(w, sx, sf, cc, cf.has_async, cf.sw_deps, slot, x, f, t, rd, rb, c1, c2)
    blk = nonneg(sli[slot, SLI_BLOCK])
    _note_result(sim, t, sm, slot, blk, s, x, f, done, base, c1, c2)
    _arrive_at_barrier(grid, out, sim, cf, t, slot, blk, x, f)
    outcome = _advance_or_retire(rows, grid, out, sim, cf, t, g, sm, slot, row, blk)
    if outcome != RUN_DONE:
        return outcome
    _next_wake(sim, t, g, slot, others_ready, fast, minr, mc1, mc2, msp)
    if cf.replay:
        return _replay_advance(order_in, sim, cf, t, sim.pos[POS_RP_PTR] + 1)
    return RUN_DONE


@hot
def _wavefronts(rows, counters, cf, row, mem):
    """The wavefronts of an issued row (``(with conflicts, without, any lane active)``): a shared
    access's (one per conflict degree; 0 rows are predicated off), a global access's L1 data
    stage (one per cache line; 0 where not modelled); 1 for anything else."""
    wv = 1
    wmin = 1
    active = True
    if mem == MEM_SHARED:
        active = rows.r_wave_min[row] > 0      # 0: no active lane (predicated off)
        wmin = max2(1, rows.r_wave_min[row])
        wv = max2(1, rows.r_wave[row]) if cf.sw_bank else wmin
        counters[C_SH_ACC] += 1
        counters[C_SH_WAVE] += wv
        counters[C_SH_WMIN] += wmin
    elif mem == MEM_GLOBAL:
        # the L1 data stage's wavefronts: one per cache line (0 where not modelled)
        wmin = max2(1, rows.r_wave_min[row])
        wv = max2(1, rows.r_wave[row]) if cf.mc.sw_coal else wmin
    return wv, wmin, active


@hot
def _result_time(rows, out, sim, cf, t, row, sm, pp, x, f, mem, wv, wmin, active):
    """When the issued instruction's result is ready (docs/model.md §3): ``(done, base, c1, c2,
    n_req)``, the same without queueing or conflicts (the split), the causes a consumer waiting on
    it is charged — its execution latency, a shared access's conflict wavefronts, or the global
    path (:func:`teg.engine.memsys.global_access`) — and a global access's requests to L2 (0
    for anything else)."""
    sx, sf = sim.static.sx, sim.static.sf
    wfc = cf.wfc
    n_req = 0
    if mem == MEM_SHARED and not active:
        done = t + 1.0
        base = done
        c1 = sx[x + X_DEPCAUSE]
        c2 = c1
    elif mem == MEM_SHARED:
        done = t + sf[f + SF_MEMLAT] + (wv - 1) * wfc
        base = t + sf[f + SF_MEMLAT] + (wmin - 1) * wfc
        c1 = sx[x + X_DEPCAUSE]
        c2 = BANK_CONFLICT
    elif mem == MEM_GLOBAL:
        done, base, c1, c2, n_req = global_access(sim.memory, cf.mc, rows, out.counters, out.tx_rec, t, row, sm,
                                                  pp, sx[x + X_STORE], sx[x + X_DEPCAUSE], (wv - 1) * wfc)
    else:
        done = t + sf[f + SF_LAT]
        base = done
        c1 = sx[x + X_DEPCAUSE]
        c2 = c1
    return done, base, c1, c2, n_req


@hot
def _note_result(sim, t, sm, slot, blk, s, x, f, done, base, c1, c2):
    """The block's latest completion and the SM's latest result (what the tail charges)."""
    ln, ty = sim.launch, sim.tally
    # a block retires with its writes still in flight: a store holds the warp only until its data
    # have left the registers (read-barrier release); the write's acknowledgement counts for the
    # kernel's end (sm_kf), not for the block's slot
    held = t + sim.static.sf[f + SF_RBAR] if sim.static.sx[x + X_STORE] == 2 else done
    if held > ln.blk_done[blk]:
        ln.blk_done[blk] = held
    if done > ty.sm_kf[sm, 0]:
        ty.sm_kf[sm, 0] = done
        ty.sm_kf[sm, 1] = base
        ty.sm_ks[sm] = s
        ty.sm_kc[sm, 0] = c1
        ty.sm_kc[sm, 1] = c2


@hot
def _arrive_at_barrier(grid, out, sim, cf, t, slot, blk, x, f):
    """A BAR that waits: the barrier resolves at the latest arrival + its BAR latency (the largest
    such time, so that an earlier arrival never resolves it later). The last arrival is released at
    once (it computes its next instruction's t_dep as it advances; a t_dep of this BAR, already
    issued, would wake its scheduler early and charge the BAR's terms), then the waiting warps."""
    if not (cf.has_bar and sim.static.sx[x + X_BAR] != 0):
        return
    ln = sim.launch
    sf = sim.static.sf
    slf = sim.warps.slf
    ln.blk_arrived[blk] += 1
    ln.blk_bar[blk, 0] = max2(ln.blk_bar[blk, 0], t + sf[f + SF_LAT])
    ln.blk_bar[blk, 1] = max2(ln.blk_bar[blk, 1], sf[f + SF_LAT])
    if ln.blk_arrived[blk] >= ln.blk_live[blk]:
        slf[slot, SLF_BAR] = ln.blk_bar[blk, 0]
        release(sim.warps, sim.scheds, sim.static, sim.fetch, ln, grid, out.counters, blk, ln.blk_bar[blk, 0])
    else:
        slf[slot, SLF_BAR] = INF


@hot
def _advance_or_retire(rows, grid, out, sim, cf, t, g, sm, slot, row, blk):
    """The warp goes on to its next row (whose t_dep is computed now), or exits: it leaves its
    scheduler's list and the greedy place, its block's barrier episode, and the last warp of a
    block retires the block, whose SM launches the next block when it has retired (its last issue
    and all its outstanding results complete, plus the launch latency). Returns the outcome."""
    w, sd, ln = sim.warps, sim.scheds, sim.launch
    sli, slf = w.sli, w.slf
    sch_list, sch_n = sd.sch_list, sd.sch_n
    sli[slot, SLI_ROW] = row + 1
    ahead = row + PREFETCH_ROWS
    if (ahead & 7) == 0 and ahead < sli[slot, SLI_END]:
        prefetch(rows.r_sidx, ahead)
        prefetch(rows.r_tx_start, ahead)
        prefetch(rows.r_wave, ahead)
        prefetch(rows.r_wave_min, ahead)
    if row + 1 < sli[slot, SLI_END]:
        sli[slot, SLI_SIDX] = rows.r_sidx[row + 1]
        slf[slot, SLF_SINCE] = t + 1.0
        compute_tdep(w, sim.static, sim.fetch, slot)
        return RUN_DONE
    sli[slot, SLI_CTX] = -1
    ln.free_from[sm] = min2(ln.free_from[sm], slot - sm * cf.spsm)
    pos = 0
    while sch_list[g, pos] != slot:
        pos += 1
    for q in range(pos, sch_n[g] - 1):
        sch_list[g, q] = sch_list[g, q + 1]
    sch_n[g] -= 1
    sch_list[g, sch_n[g]] = -1
    # GTO: the finished warp is greedy no longer; a warp launched into its slot later is the
    # youngest, not the one to stay with
    sd.sci[g, SCI_GREEDY] = -1
    sim.pos[POS_FINISHED] += 1
    ln.blk_live[blk] -= 1
    if cf.has_bar and slf[slot, SLF_BAR] >= INF:
        # its last instruction was a BAR still waiting: the warp leaves the episode (its arrival
        # time stays in it), so the others still wait for each other
        ln.blk_arrived[blk] -= 1
    if ln.blk_live[blk] == 0:
        ln.sm_res[sm] -= 1
        retired = max2(t + 1.0, math.ceil(ln.blk_done[blk]))
        if retired > out.sm_end[sm, 2]:
            out.sm_end[sm, 2] = retired
        t_launch = max2(t + max2(cf.launch_lat, 1.0), math.ceil(ln.blk_done[blk]))
        if launch_blocks(w, sd, sim.static, sim.fetch, ln, grid, rows.r_sidx, out.sm_end, out.counters, sm, t_launch,
                         cf.resident, cf.resident, cf.deal, cf.q_end, cf.spsm) != RUN_DONE:
            return RUN_BLOCK_TOO_BIG
    elif cf.sw_bar and ln.blk_arrived[blk] > 0 and ln.blk_arrived[blk] >= ln.blk_live[blk]:
        # the last warp not waiting exited: the barrier resolves now
        release(w, sd, sim.static, sim.fetch, ln, grid, out.counters, blk,
                max2(ln.blk_bar[blk, 0], t + ln.blk_bar[blk, 1]))
    return RUN_DONE


@hot
def _next_wake(sim, t, g, slot, others_ready, fast, minr, mc1, mc2, msp):
    """When scheduler ``g`` may issue next after issuing ``slot`` at ``t``: the next cycle when
    other warps were ready (or the issue took one cycle), else the earliest of the others' ready
    time and the issued warp's new t_dep, but not before the scheduler is free again; kept when a
    release or launch during the issue set an earlier one."""
    scf, sci = sim.scheds.scf, sim.scheds.sci
    sli, slf, tdep = sim.warps.sli, sim.warps.slf, sim.warps.tdep
    nxt = minr
    n1 = mc1
    n2 = mc2
    nsp = msp
    if others_ready or fast:
        nxt = t
        n1 = SCHEDULER
        n2 = SCHEDULER
        nsp = t
    if sli[slot, SLI_CTX] >= 0 and tdep[slot] < nxt:
        nxt = tdep[slot]
        n1 = sli[slot, SLI_C1]
        n2 = sli[slot, SLI_C2]
        nsp = slf[slot, SLF_SPLIT]
    if scf[g, SCF_FREE] >= nxt:
        nxt = scf[g, SCF_FREE]
        n1 = SCHEDULER
        n2 = SCHEDULER
        nsp = nxt
    if nxt < scf[g, SCF_NEXT]:
        _wait(sim.scheds, g, nxt, n1, n2, nsp)


@hot
def _replay_advance(order_in, sim, cf, t, ptr):
    """The replay order's event ``ptr`` becomes the next to issue (none past the order's end).
    Returns ``RUN_REPLAY_NOT_RESIDENT`` when its warp is not resident at that row."""
    pos = sim.pos
    pos[POS_RP_PTR] = ptr
    if ptr < cf.n_order:
        rp_slot = replay_next(order_in, sim.r_ctx, sim.launch.ctx_slot, sim.warps.sli, sim.parked, sim.scheds.scf,
                              sim.maps.g_sm, sim.tree, cf.leaves, cf.S, ptr, t)
        if rp_slot < 0:
            return RUN_REPLAY_NOT_RESIDENT
        pos[POS_RP_SLOT] = rp_slot
        pos[POS_RP_G] = sim.warps.sli[rp_slot, SLI_G]
    return RUN_DONE


@helper
def _tail(out, sim, cf, t):
    """The kernel ends at its last issue cycle or when its last result is back; each SM's cycles
    after its last visit go to its latest result's causes while that is pending, then to no_warp
    (the SM is idle: no block left for it). Returns the kernel's cycles."""
    ty = sim.tally
    sm_t, sm_kf, sm_kc, sm_ks = ty.sm_t, ty.sm_kf, ty.sm_kc, ty.sm_ks
    stall_out, pcc = out.stall, out.pcc
    n_sms = cf.n_sms
    pc_none = cf.pc_none
    total = t + 1.0
    for sm in range(n_sms):
        if math.ceil(sm_kf[sm, 0]) > total:
            total = math.ceil(sm_kf[sm, 0])
    for sm in range(n_sms):
        a = sm_t[sm]
        e = math.ceil(sm_kf[sm, 0])
        if e > total:
            e = total
        if e > a:
            charge(stall_out, sm_kc[sm, 0], sm_kc[sm, 1], a, e, sm_kf[sm, 1])
            if cf.attrib:
                charge(pcc[PC_STALL, sm_ks[sm] if sm_ks[sm] >= 0 else pc_none], sm_kc[sm, 0], sm_kc[sm, 1], a, e,
                       sm_kf[sm, 1])
            a = e
        if total > a:
            stall_out[NO_WARP] += np.int64(total - a)
            if cf.attrib:
                pcc[PC_STALL, pc_none, NO_WARP] += np.int64(total - a)
    for sm in range(n_sms):
        # the SM's end: its last issue cycle (sm_t after its last visit) or its last result
        out.sm_end[sm, 0] = max2(sm_t[sm], math.ceil(sm_kf[sm, 0]))
    return np.int64(total)
