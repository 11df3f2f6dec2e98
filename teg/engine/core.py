"""The timing engine: one numba-jitted, event-skipping loop over the simulated SMs
(docs/model.md gives the equations; this is their implementation).

Per simulated cycle ``t`` every scheduler whose earliest possible issue time has come scans its
warps. A warp's next instruction is *eligible* at

    ready(w) = max(t_dep(w), unit_free(u), slot_free(pipe), scheduler_free)

where ``t_dep`` is fixed when the instruction becomes current (same-warp issue latency or stall
count, barrier release, register scoreboard or dependency barriers), the other terms are shared
resources. The policy picks one eligible warp (loose round-robin or greedy-then-oldest); issuing
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
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from teg.engine.codes import (BANK_CONFLICT, BARRIER, CACHE_MISS, CHANNEL_QUEUE, CONST_MISS, CTR,
                              DEPMODEL_CONTROLCODES, FETCH, ISSUE, L2_QUEUE, MEM_GLOBAL, MEM_PIPE, MEM_SHARED, NO_WARP,
                              POLICY_GTO, POLICY_LRR, RUN_BLOCK_TOO_BIG, RUN_DEADLOCK, RUN_DONE, RUN_REPLAY_NOT_RESIDENT,
                              RUN_TOO_MANY_REGS, SAME_WARP, SCHEDULER, TLB_MISS, UNIT_BUSY)
from teg.engine.records import PC_STALL, REC_PCS, REC_ROWS, TX_CHAN, TX_SLICE, record_issue, record_level
from teg.jit import inner
from teg.memory.cache import _log2, cache_access_timed, cache_new, cache_shape
from teg.memory.channels import balance_scale

# ``simulate`` is the only function called from Python; it calls the helpers below, each compiled
# once on its own. (They were closures inside it: numba's front end inlines a closure's code at
# every call site before typing it, and its cost grows faster than a function's length; the cold
# compile took 35 s then, half of it now.) Their decorators:
#   _helper: set-up (run once per run) and small leaf functions;
#   _hot:    helpers of the issue path, inlined by LLVM (``forceinline``: the loop's machine code
#            is as if they were written out in it);
#   _cold:   rare events (block launch, barrier release), called.
# _hot and _cold functions take the loop's tables in a few named tuples (Warps, Scheds, ... below)
# and do no reference counting (``_nrt=False``): every array is ``simulate``'s, held for the whole
# run, and the increments and decrements numba emits for each array of a tuple at each call
# stayed in the loop otherwise (40 % more x86 instructions per simulated one).
_helper = inner()
_hot = inner(forceinline=True, _nrt=False)
_cold = inner(_nrt=False)

INF = 1e300
NSB = 6
# Results remembered per dependency barrier for ``DEPBAR.LE SBb, N`` with N > 0 (a ring of the last
# NQ): the wait ends when at most N of the barrier's results are outstanding, i.e. at the (N+1)-th
# latest of them. Exact for N < NQ while the barrier's results complete in issue order or no more
# than NQ are outstanding; DEPBAR.LE with N >= NQ does not wait (an optimistic limit).
NQ = 8
C_INSTR = CTR["instructions"]
C_SH_ACC, C_SH_WAVE, C_SH_WMIN = CTR["shared_accesses"], CTR["shared_wavefronts"], CTR["shared_wavefronts_min"]
C_G_ACC, C_TX = CTR["global_accesses"], CTR["transactions"]
C_L1H, C_L1M, C_L2H, C_L2M = CTR["l1_hits"], CTR["l1_misses"], CTR["l2_hits"], CTR["l2_misses"]
C_DRAM, C_DRAM_B, C_CHW = CTR["dram_transactions"], CTR["dram_bytes"], CTR["channel_wait_cycles"]
C_BARS, C_BLOCKS = CTR["barriers"], CTR["blocks"]
C_STEPS, C_EVALS = CTR["engine_steps"], CTR["warp_evaluations"]

# The loop's state lives in a few packed tables rather than one array per field (fewer live
# array descriptors in the jitted loop: about 10 % faster on ALU-bound traces, same results).
# Warp slots, floats ``slf[slot, SLF_*]``: the split time of the current instruction's t_dep (the
# producer's conflict/queue-free ready time), same-warp issue time, barrier release time, cycle
# the instruction became current. t_dep itself is ``tdep[slot]``, an array of its own: it is all
# a scheduler's scan reads of a warp it skips (one still waiting for a result beyond the scan's
# minimum), and the t_deps of a whole GPU's slots (8 bytes each) stay in the host's cache where
# their slot rows do not (the whole-GPU run reads each slot's row again only after visiting
# every other SM).
SLF_SPLIT, SLF_SAME, SLF_BAR, SLF_SINCE = range(4)
NUM_SLF = 4
# Warp slots, integers ``sli[slot, SLI_*]``: context (-1 = free), current row, end row, static
# index of the current row, t_dep's two causes, same-warp cause, launch order (age), yield flag,
# block, row (unit group) in ``uf`` and count of the current unit's copies, needs-a-memory-pipeline-slot
# flag; and the fixed maps: SM, scheduler, position in the scheduler's slot list.
(SLI_CTX, SLI_ROW, SLI_END, SLI_SIDX, SLI_C1, SLI_C2, SLI_SAMEC, SLI_AGE, SLI_YIELD, SLI_BLOCK,
 SLI_UOFF, SLI_UCNT, SLI_GMEM, SLI_SM, SLI_G, SLI_K) = range(16)
NUM_SLI = 16
# Schedulers, floats ``scf[g, SCF_*]``: free again at, next scan at, split of the binding wait;
# integers ``sci[g, SCI_*]``: the binding wait's two causes, round-robin position, greedy slot.
SCF_FREE, SCF_NEXT, SCF_SPLIT = range(3)
NUM_SCF = 3
SCI_C1, SCI_C2, SCI_RR, SCI_GREEDY = range(4)
NUM_SCI = 4
# Scoreboard ``rs[slot, i, RS_*]`` for register i, and ``bs[slot, b, RS_*]`` for dependency barrier b:
# ready time and split time; ``rsc``/``bsc`` (same indexes, ``RC_*``) the two causes a consumer
# waiting on it is charged (integers kept apart: a float-to-int conversion in the loop is a call).
RS_T, RS_B = range(2)
RC_C1, RC_C2 = range(2)

# Software prefetch of the trace's per-row and per-transaction arrays: a warp reads its rows in
# order, but 64 warps interleave 64 such streams (more than the hardware prefetcher follows), and
# at 10 M rows the arrays no longer fit in the host's caches. 16 rows = one 64-byte line of int32.
PREFETCH_ROWS = 16      # rows ahead of a warp's issue point whose per-row data is prefetched, at
                        # every 8th row (8 rows = 64 bytes of the int64 array: each line once)
PREFETCH_TX = 16        # transactions ahead of a global access whose data is prefetched


@intrinsic
def _prefetch(typingctx, arr, idx):
    """Hint the CPU to fetch ``arr[idx]`` into cache (``llvm.prefetch``; no effect on results, never
    faults)."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])   # read, keep, data
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _nonneg(typingctx, x):
    """``x`` itself, with the promise that it is >= 0 (``llvm.assume``). Indexing an array with a
    signed integer costs a compare and add per index (Python's negative-index wraparound) unless
    LLVM can prove the index non-negative; the engine's indexes never are negative, and saying so
    where they are loaded from the tables lets LLVM drop that code from the loop (~10 % faster)."""
    sig = x(x)

    def codegen(context, builder, signature, args):
        v = args[0]
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(1)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.assume")
        builder.call(fn, [builder.icmp_signed(">=", v, ir.Constant(v.type, 0))])
        return v

    return sig, codegen


@_helper
def _max2(a, b):
    """``max(a, b)`` for two numbers (the builtin is an out-of-line call in the big loop; this one
    LLVM inlines). Left to LLVM rather than to numba's ``inline="always"`` (IR-level inlining at
    each of the nine call sites): the engine's cold compile took 45 s instead of 52 s here, and
    the loop runs 1.5 % fewer x86 instructions per simulated instruction (750 vs 762)."""
    return a if a >= b else b


@_helper
def _min2(a, b):
    """``min(a, b)`` for two numbers (inlined by LLVM, as :func:`_max2`)."""
    return a if a <= b else b


@_helper
def _heap_replace_top(heap, p, n, value):
    """Replace the minimum of min-heap ``heap[p, :n]`` by ``value`` and restore the heap."""
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        c = left
        if left + 1 < n and heap[p, left + 1] < heap[p, left]:
            c = left + 1
        if heap[p, c] < value:
            heap[p, i] = heap[p, c]
            i = c
        else:
            break
    heap[p, i] = value


@_helper
def _charge(stall_out, c1, c2, a, b, split):
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


@_helper
def _pow2_at_least(n):
    """The smallest power of two >= ``n`` (at least 1)."""
    p = 1
    while p < n:
        p *= 2
    return p


@_helper
def _tree_set(tree, leaves, i, v):
    """Set leaf ``i`` of the min-tree ``tree`` (``leaves`` leaves, a power of two; node ``j`` holds
    the minimum of nodes ``2j`` and ``2j+1``, the root is node 1) to ``v`` and update its
    ancestors, stopping where a minimum does not change."""
    j = leaves + i
    tree[j] = v
    j >>= 1
    while j >= 1:
        a = tree[2 * j]
        b = tree[2 * j + 1]
        m = a if a <= b else b
        if tree[j] == m:
            break
        tree[j] = m
        j >>= 1


@_helper
def _tree_first_le(tree, leaves, start, t):
    """The smallest leaf index ``>= start`` whose value is ``<= t``, or -1 (O(log leaves)): from
    leaf ``start`` climb while the node is a right child, step to the right sibling, and descend
    into the leftmost qualifying subtree once a node's minimum qualifies."""
    if start >= leaves:
        return -1
    i = leaves + start
    while True:
        if tree[i] <= t:
            while i < leaves:
                i = 2 * i
                if tree[i] > t:
                    i += 1
            return i - leaves
        while i & 1:
            i >>= 1
        if i == 0:
            return -1
        i += 1


@_helper
def _depbar_wait(bs, bsc, bq, bqc, bqn, slot, db):
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


@_helper
def _bar_write(bs, bsc, bq, bqc, bqn, slot, b, rt, rb, c1, c2, ring):
    """Dependency barrier ``b`` of the slot counts one more result, ready at ``rt`` (split ``rb``,
    causes ``c1``/``c2``): ``bs``/``bsc`` keep the latest (a wait for zero outstanding), the ring
    ``bq``/``bqc`` the last NQ (``DEPBAR.LE`` with N > 0; kept only with ``ring``, i.e. when the
    kernel has a DEPBAR or cp.async), ``bqn`` counts them. A plain jitted
    function (inlined by LLVM): as a closure numba would inline its IR at each of its three call
    sites, which lengthened the engine's cold compile by about a third."""
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


# Per-static-instruction facts the loop reads, packed a row per instruction into one int and one
# float array with constant row widths (one base pointer each, row offsets the compiler knows) and
# folded with the run's switches where the loop would otherwise combine them at every issue.
(X_UNIT, X_UPSM, X_UCNT, X_MEM, X_GMEM, X_STORE, X_BAR, X_DEPCAUSE, X_CC, X_YIELD, X_WBAR, X_RBAR,
 X_WAIT, X_DEPBAR, X_ASYNC, X_FAST, X_NSRC, X_NDST, X_ILINE, X_FCHK, X_CLINE) = range(21)
X_SRC = 21                  # source registers: room for 16 (the lowering's MAX_SRC)
X_DST = X_SRC + 16          # destination registers: room for 14 (the lowering's MAX_DST is 8)
X_NWAW = X_DST + 14         # destinations that are not also sources (write-after-write checks)
X_WAW = X_NWAW + 1
XW = X_WAW + 14             # row width of the int table
SF_OCC, SF_LAT, SF_MEMLAT, SF_FREE, SF_SAME, SF_RBAR = range(6)
FW = 8                      # row width of the float table


@_helper
def _rbar_release(mem, sm_unit, occ, rbar_lat):
    """Cycles from issue until an instruction has read its source registers, when its read
    barrier (control codes) releases. A memory access, or an instruction of an SM-shared unit
    reached through the MIO queue, reads them when the shared pipe takes it: the table's
    read-barrier figure (``latencies.store.execution``). An instruction of a scheduler's own
    pipe narrower than the warp (FP64 on GA100: 8 lanes, a warp in 4 cycles) reads them while it
    is dispatched, over the cycles it occupies the unit."""
    if mem != 0 or sm_unit:
        return _max2(rbar_lat, occ)
    return _max2(occ, 1.0)


@_helper
def _pack_static(s_unit, s_occ, s_lat_exec, s_lat_multi, s_lat_same, s_mem, s_mem_lat, s_store, s_barrier,
                 s_depcause, s_dst, s_src, s_ctrl, s_stall, s_yield, s_wbar, s_rbar, s_wait, s_depbar, s_async,
                 s_iline, s_fchk, s_cline, u_count, u_per_sm, depmodel, pipe_limited, can_fast, issue_interval, sw_same,
                 sw_bar, rbar_lat):
    """The static tables as the loop reads them (``X_*`` / ``SF_*`` columns): ``X_CC`` = the
    instruction is timed by its control codes; ``SF_SAME`` its same-warp delay (stall count or
    same-warp latency, at least 1; 1 cycle / the multi-warp latency with that switch off);
    ``SF_FREE`` the scheduler's busy time ``max(issue interval, multi-warp latency)``;
    ``X_FAST`` a single-cycle issue (the scan may stop at the first eligible warp); ``X_ILINE`` the
    instruction-cache line the instruction lies in (-1: fetch not modelled), ``X_FCHK`` a warp may
    enter that line at this instruction (:func:`_fetch_checks`), ``X_CLINE`` the constant-cache
    line of its ``c[bank][off]`` operand (-1: none); ``SF_RBAR`` when its read barrier releases
    after issue (:func:`_rbar_release`); ``X_GMEM``
    needs a memory-pipeline slot; ``X_BAR`` a BAR that waits (free barriers: none); source and
    destination lists with their lengths (up to the first -1), and the destinations the
    write-after-write check needs (``X_WAW``: those that are not also sources)."""
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
            sx[x + X_SRC + k] = s_src[s, k]
            k += 1
        sx[x + X_NSRC] = k
        k = 0
        while k < s_dst.shape[1] and s_dst[s, k] >= 0:
            sx[x + X_DST + k] = s_dst[s, k]
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
        sf[f + SF_FREE] = _max2(issue_interval, s_lat_multi[s])
        sf[f + SF_RBAR] = _rbar_release(s_mem[s], u_per_sm[u] != 0, s_occ[s], rbar_lat)
        if cc:
            sf[f + SF_SAME] = _max2(float(s_stall[s]) if sw_same else 1.0, 1.0)
        else:
            sf[f + SF_SAME] = _max2(s_lat_same[s] if sw_same else s_lat_multi[s], 1.0)
    return sx, sf


@_helper
def _waited_on(sli, tdep, uf, heap, sch_list, sch_n, g, nxt, policy, S, spsm, L, pipe, sw_units):
    """The static instruction that scheduler ``g`` waits on until ``nxt`` (its binding wait), for the
    instruction view, which charges the SM's stall cycles to it (``REC_PCS``; looked up only then,
    so that the loop keeps no state for it): the current instruction of the scheduler's first warp,
    in age order (GTO) or slot order (LRR), whose ready time (t_dep, its unit copy, its
    memory-pipeline slot, as the scan evaluates a warp) is ``nxt``; else of its warp ready first
    (a wait for the scheduler itself); -1 when it has no warp."""
    best = -1
    bt = INF
    n = sch_n[g] if policy == POLICY_GTO else L
    for k in range(n):
        if policy == POLICY_GTO:
            slot = sch_list[g, k]
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
                m = _min2(m, uf[sli[slot, SLI_UOFF], c])
            r = _max2(r, m)
        if sli[slot, SLI_GMEM]:
            r = _max2(r, heap[pipe, 0])
        if r == nxt:
            return sli[slot, SLI_SIDX]
        if r < bt:
            bt = r
            best = sli[slot, SLI_SIDX]
    return best


# The tables the loop's helpers share, in named tuples built once per run:
#   Warps:  the per-slot tables (slot state and scoreboards);
#   Scheds: the per-scheduler tables and warp lists;
#   Static: the packed static tables, the run's switches that t_dep depends on, and the instruction
#           caches' fill times (has_fetch: fetch modelled; ifl[sm, line] the time the line is in the
#           SM's instruction cache, -1 not requested; gfl[line] the time it first arrived from DRAM;
#           front[sm] the last line the SM's sequential prefetch requested; f_l2 / f_dram the fetch
#           latencies; f_pf the lines the prefetch runs ahead of a warp) and the constant caches'
#           (has_const; cfl[sm, line] the time the line is in the SM's constant cache, -1 not read);
#   Blocks: the grid (warp contexts, blocks, each SM's block list) and the launch state.
Warps = namedtuple("Warps", ("sli", "slf", "tdep", "rs", "rsc", "bs", "bsc", "bq", "bqc", "bqn"))
Scheds = namedtuple("Scheds", ("scf", "sci", "lbo", "sch_list", "sch_n"))
Static = namedtuple("Static", ("sx", "sf", "has_bar", "sw_deps", "has_async", "S", "U", "has_fetch", "ifl",
                               "gfl", "front", "f_l2", "f_dram", "f_pf", "has_const", "cfl"))
Blocks = namedtuple("Blocks", ("c_start", "c_end", "r_sidx", "b_ctx_start", "sm_blocks_start", "sm_blocks",
                               "ctx_slot", "sm_next", "sm_res", "q_next", "age", "blk_live", "blk_arrived",
                               "blk_bar", "sm_end", "counters"))


@_cold
def _fetch_line(st, sm, line, now):
    """Instruction fetch (docs/model.md §2): the time ``line`` of the kernel's code is in ``sm``'s
    instruction cache. Each SM starts the kernel with none of its code. A warp reaching ``line``
    at ``now`` (the cycle its instruction became current) requests it if the SM has not, and keeps
    the sequential prefetch ``f_pf`` lines ahead of it (``front[sm]``: the last line requested
    ahead). A line arrives after the DRAM latency when no SM has fetched it before, else after
    the L2 latency but not before its first fetch brought it on chip."""
    ifl, gfl, front = st.ifl, st.gfl, st.front
    ahead = line + st.f_pf
    if ahead > front[sm]:
        front[sm] = ahead       # (past the code's end too: that is requested as far as it goes)
    last = ahead if ahead < ifl.shape[1] else ifl.shape[1] - 1
    for k in range(line, last + 1):
        if ifl[sm, k] < 0.0:
            if gfl[k] < 0.0:
                gfl[k] = now + st.f_dram
            ifl[sm, k] = _max2(now + st.f_l2, gfl[k])
    return ifl[sm, line]


@_hot
def _compute_tdep(w, st, slot):
    """t_dep of the slot's current instruction and its binding cause."""
    sli, slf, rs, rsc, bs, bsc = w.sli, w.slf, w.rs, w.rsc, w.bs, w.bsc
    sx, sf = st.sx, st.sf
    s = _nonneg(sli[slot, SLI_SIDX])
    x = _nonneg(s * XW)
    t0 = slf[slot, SLF_SAME]
    c1 = sli[slot, SLI_SAMEC]
    c2 = c1
    sp = t0
    # instruction fetch: checked where a warp may enter another line (X_FCHK)
    if st.has_fetch and sx[x + X_FCHK] != 0:
        sm = _nonneg(sli[slot, SLI_SM])
        line = _nonneg(sx[x + X_ILINE])
        ta = st.ifl[sm, line]
        if ta < 0.0 or line + st.f_pf > st.front[sm]:
            ta = _fetch_line(st, sm, line, slf[slot, SLF_SINCE])
        if ta > t0:
            t0 = ta
            c1 = FETCH
            c2 = FETCH
            sp = t0
    # constant cache (docs/model.md §2): the first read of a line on an SM waits for it from L2
    if st.has_const and sx[x + X_CLINE] >= 0:
        sm = _nonneg(sli[slot, SLI_SM])
        cl = _nonneg(sx[x + X_CLINE])
        ta = st.cfl[sm, cl]
        if ta < 0.0:
            ta = slf[slot, SLF_SINCE] + st.f_l2
            st.cfl[sm, cl] = ta
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
                r = _nonneg(sx[x + X_SRC + k])
                if rs[slot, r, RS_T] > t0:
                    t0 = rs[slot, r, RS_T]
                    sp = rs[slot, r, RS_B]
                    c1 = rsc[slot, r, RC_C1]
                    c2 = rsc[slot, r, RC_C2]
            # write-after-write: the new result must not land before the pending one
            lx = sf[s * FW + SF_LAT]
            for k in range(sx[x + X_NWAW]):
                r = _nonneg(sx[x + X_WAW + k])
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
            bt, bsp, b1, b2 = _depbar_wait(bs, bsc, w.bq, w.bqc, w.bqn, slot, db)
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


@_hot
def _note_ready(w, sc, slot):
    """Lower the slot's scheduler wake-up time to the slot's t_dep."""
    sli, slf, tdep = w.sli, w.slf, w.tdep
    scf, sci, lbo = sc.scf, sc.sci, sc.lbo
    g = _nonneg(sli[slot, SLI_G])
    if tdep[slot] < lbo[g]:
        lbo[g] = tdep[slot]
    if tdep[slot] < scf[g, SCF_NEXT]:
        scf[g, SCF_NEXT] = tdep[slot]
        sci[g, SCI_C1] = sli[slot, SLI_C1]
        sci[g, SCI_C2] = sli[slot, SLI_C2]
        scf[g, SCF_SPLIT] = slf[slot, SLF_SPLIT]


@_hot
def _sm_wake(scf, tree, leaves, S, sm):
    """Earliest wake-up among the SM's schedulers, written into the min-tree."""
    m = scf[sm * S, SCF_NEXT]
    for k in range(1, S):
        if scf[sm * S + k, SCF_NEXT] < m:
            m = scf[sm * S + k, SCF_NEXT]
    _tree_set(tree, leaves, sm, m)


@_hot
def _earliest_copy(sli, uf, slot):
    """The earliest-free copy of the unit the slot's next instruction needs: its copy index
    (first on ties) and free time."""
    off = _nonneg(sli[slot, SLI_UOFF])
    bc = 0
    m = uf[off, 0]
    for cc in range(1, sli[slot, SLI_UCNT]):
        if uf[off, cc] < m:
            m = uf[off, cc]
            bc = cc
    return _nonneg(bc), m


@_hot
def _ready_of(sli, tdep, uf, heap, pp, sw_units, slot):
    """Earliest cycle the slot's instruction may issue (t_dep, unit copy, memory-pipeline slot
    ``heap[pp]``) and the binding shared resource (0: t_dep binds), as the scan evaluates a warp."""
    r = tdep[slot]
    bind = 0
    if sw_units:
        m = _earliest_copy(sli, uf, slot)[1]
        if m > r:
            r = m
            bind = UNIT_BUSY
    if sli[slot, SLI_GMEM] and heap[pp, 0] > r:
        r = heap[pp, 0]
        bind = MEM_PIPE
    return r, bind


@_hot
def _replay_next(order_in, r_ctx, ctx_slot, sli, parked, scf, g_sm, tree, leaves, S, ptr, now):
    """Make the order's event ``ptr`` the one that may issue next; a scheduler parked while
    waiting for the order is scanned again from ``now`` (next cycle when this sweep has passed
    it). Returns the event's slot, or -1 when its warp is not resident at that row."""
    row = order_in[ptr]
    c = r_ctx[row]
    slot = ctx_slot[c]
    if slot < 0 or sli[slot, SLI_CTX] != c or sli[slot, SLI_ROW] != row:
        return -1
    g = _nonneg(sli[slot, SLI_G])
    if parked[g]:
        parked[g] = False
        scf[g, SCF_NEXT] = now
        _sm_wake(scf, tree, leaves, S, g_sm[g])
    return slot


@_cold
def _launch_blocks(w, sc, st, bl, sm, t0, most, resident, deal, q_end, spsm):
    """Launch up to ``most`` blocks on ``sm`` until its resident-block limit (occupancy) or
    the blocks it may take are exhausted (its own list, or with dynamic dealing the grid-wide
    queue): each warp of a block takes the lowest free slot of the SM, becomes eligible at
    ``t0`` (kernel start, or the launch latency after a block retires) with a clean scoreboard,
    and joins its scheduler's list. Returns RUN_BLOCK_TOO_BIG when no slot is free (inconsistent
    occupancy), else RUN_DONE."""
    sli, slf = w.sli, w.slf
    sch_list, sch_n = sc.sch_list, sc.sch_n
    sm_res, sm_next, q_next, b_ctx_start = bl.sm_res, bl.sm_next, bl.q_next, bl.b_ctx_start
    n_launched = 0
    while sm_res[sm] < resident and n_launched < most:
        if deal:
            if q_next[0] >= q_end:
                break
            b = bl.sm_blocks[q_next[0]]
            q_next[0] += 1
        else:
            if sm_next[sm] >= bl.sm_blocks_start[sm + 1]:
                break
            b = bl.sm_blocks[sm_next[sm]]
            sm_next[sm] += 1
        n_launched += 1
        sm_res[sm] += 1
        bl.sm_end[sm, 1] += 1.0
        bl.counters[C_BLOCKS] += 1
        bl.blk_live[b] = b_ctx_start[b + 1] - b_ctx_start[b]
        bl.blk_arrived[b] = 0
        for c in range(b_ctx_start[b], b_ctx_start[b + 1]):
            slot = -1
            for loc in range(spsm):
                if sli[sm * spsm + loc, SLI_CTX] < 0:
                    slot = sm * spsm + loc
                    break
            if slot < 0:
                return RUN_BLOCK_TOO_BIG
            bl.ctx_slot[c] = slot
            sli[slot, SLI_CTX] = c
            sli[slot, SLI_ROW] = bl.c_start[c]
            sli[slot, SLI_END] = bl.c_end[c]
            sli[slot, SLI_SIDX] = bl.r_sidx[bl.c_start[c]]
            slf[slot, SLF_SAME] = t0
            sli[slot, SLI_SAMEC] = NO_WARP
            slf[slot, SLF_BAR] = 0.0
            sli[slot, SLI_AGE] = bl.age[0]
            bl.age[0] += 1
            sli[slot, SLI_YIELD] = 1
            slf[slot, SLF_SINCE] = t0
            sli[slot, SLI_BLOCK] = b
            w.rs[slot, :, :] = 0.0
            w.bs[slot, :, :] = 0.0
            w.rsc[slot, :, :] = 0
            w.bsc[slot, :, :] = 0
            w.bqn[slot, :] = 0
            w.bq[slot, NSB, 0, RS_T] = 0.0
            _compute_tdep(w, st, slot)
            _note_ready(w, sc, slot)
            g2 = sli[slot, SLI_G]
            sch_list[g2, sch_n[g2]] = slot
            sch_n[g2] += 1
    return RUN_DONE


@_cold
def _release(w, sc, st, bl, blk, rel):
    """All warps of ``blk`` have arrived at the barrier: the waiting ones may go on at ``rel``."""
    bl.blk_arrived[blk] = 0
    bl.blk_bar[blk, 0] = 0.0
    bl.blk_bar[blk, 1] = 0.0
    bl.counters[C_BARS] += 1
    for c in range(bl.b_ctx_start[blk], bl.b_ctx_start[blk + 1]):
        slot = bl.ctx_slot[c]
        if slot >= 0 and w.sli[slot, SLI_CTX] == c and w.slf[slot, SLF_BAR] >= INF:
            w.slf[slot, SLF_BAR] = rel
            _compute_tdep(w, st, slot)
            _note_ready(w, sc, slot)


# The global-memory path of an issue, and the tables it reads and writes (built once per run):
#   Tx:        the trace's transactions (per row: first transaction, minimum count and bytes; per
#              transaction: address, bytes, DRAM channel);
#   MemConfig: the memory system's geometry, latencies and switches;
#   Memory:    its state (built by _new_memory).
Tx = namedtuple("Tx", ("r_tx_start", "r_tx_min", "r_tx_min_bytes", "tx_addr", "tx_bytes", "tx_chan"))
MemConfig = namedtuple("MemConfig", ("sw_coal", "sw_l1", "sw_l2", "sw_bw", "sw_skew", "has_l1", "has_l2", "l1_shape",
                                     "l2_shape", "channels", "n_parts", "part_bytes", "n_slices", "slices_pp",
                                     "slices_pc", "slice_line", "slice_spb", "mshr", "mshr_line", "spp", "pipe_slots",
                                     "pipe_limited", "l1_lat", "l2_lat", "l2_far_lat", "dram_lat", "spb", "record",
                                     "has_tlb", "tlb"))
# address translation's switch, the two TLB levels' geometries (teg.memory.cache.cache_shape) and
# the cycles an L2 TLB hit and a page walk add
TlbConfig = namedtuple("TlbConfig", ("on", "l1_shape", "l2_shape", "l2_lat", "walk_lat"))


@_helper
def _mem_config(sc):
    """The memory system's parameters (:class:`MemConfig`) from the run's scalars."""
    l1_sets, l1_assoc, l1_line, l1_sector = sc.l1
    l2_sets, l2_assoc, l2_line, l2_sector = sc.l2
    mshr = sc.mshr_lines
    # MSHR mode: outstanding L1 misses per SM, counted per cache line (MSHR entries), instead of
    # TEG's C_mem instruction slots per memory pipeline
    pipe_slots = sc.pipe_slots if mshr == 0 else mshr
    n_parts = max(sc.l2_partitions, 1)
    n_slices = sc.l2_slices
    # each partition's cache indexes its sets without the home-partition bits (powers of two)
    skip_at = _log2(max(sc.l2_partition_bytes, 1) // max(l2_line, 1)) if n_parts > 1 else -1
    skip_bits = _log2(n_parts) if skip_at >= 0 else -1
    # address translation: the L1 TLB (per SM) and the L2 TLB, each a cache of page translations
    t1, t2 = sc.tlb1, sc.tlb2
    has_tlb = t1[0] > 0 and t2[0] > 0
    tlb = TlbConfig(sc.tlb, cache_shape(max(t1[0], 1), t1[1], t1[2], t1[3]),
                    cache_shape(max(t2[0], 1), t2[1], t2[2], t2[3]), sc.tlb2_latency, sc.walk_latency)
    return MemConfig(
        sc.coalescing, sc.l1_misses, sc.l2_misses, sc.bandwidth, sc.channel_skew,
        l1_sets > 0, l2_sets > 0,
        cache_shape(max(l1_sets, 1), l1_assoc, l1_line, l1_sector, 0, 0, sc.l1_hashed),
        cache_shape(max(l2_sets, 1), l2_assoc, l2_line, l2_sector, max(skip_at, 0), max(skip_bits, 0),
                    sc.l2_hashed),
        max(sc.channels, 1), n_parts, max(sc.l2_partition_bytes, 1), n_slices,
        max(n_slices // n_parts, 1),
        max(n_slices // max(sc.channels, 1), 1),          # slices per DRAM channel
        l2_line if l2_line > 0 else 128, sc.l2_slice_cycles_per_byte,
        mshr, l1_line if l1_line > 0 else (l2_line if l2_line > 0 else 128),
        max(sc.sms_per_pipeline, 1) if mshr == 0 else 1, pipe_slots, pipe_slots > 0,
        sc.l1_latency, sc.l2_latency, sc.l2_far_latency, sc.dram_latency, sc.dram_cycles_per_byte,
        (sc.records & REC_ROWS) != 0, has_tlb, tlb)


@_cold
def _tlb_fill(mem, mc, t, addr):
    """When the translation of ``addr``, missing from an SM's L1 TLB at ``t``, is there: after the
    L2 TLB's latency on an L2 TLB hit (no earlier than that entry's own walk, if it is still under
    way), else after a page walk, whose result the L2 TLB then holds."""
    tc = mc.tlb
    hit, row, ready = cache_access_timed(mem.tlb2_state, mem.tlb2_ready, 0, tc.l2_shape, addr)
    if hit:
        return _max2(t + tc.l2_lat, ready)
    done = t + tc.walk_lat
    mem.tlb2_ready[row, 0] = done
    return done


@_hot
def _translate(mem, mc, sm, t, addr):
    """Address translation (docs/model.md §3): the cycle the translation of byte ``addr`` is
    available to ``sm`` for an access past its L1 at ``t`` — ``t`` on an L1 TLB hit (or the time
    an earlier miss of the same page on this SM brings it: requests merge), else the L2 TLB's or
    the page walk's time (:func:`_tlb_fill`). The TLBs are LRU caches of page translations."""
    hit, row, ready = cache_access_timed(mem.tlb1_state, mem.tlb1_ready, sm, mc.tlb.l1_shape, addr)
    if hit:
        return _max2(t, ready)
    done = _tlb_fill(mem, mc, t, addr)
    mem.tlb1_ready[row, 0] = done
    return done


@_hot
def _global_access(mem, mc, tx, counters, tx_rec, t, row, sm, pp, store, depcause, l1x):
    """The global access of row ``row``, issued at ``t`` on ``sm`` (memory pipeline ``pp``; ``store``
    and ``depcause`` its instruction's X_STORE and X_DEPCAUSE): each transaction through L1, an
    MSHR entry or memory-pipeline slot, its L2 slice, the L2 and a DRAM channel; an L1 hit's data
    come ``l1x`` cycles later than the latency (the access's further wavefronts). Returns
    ``(done, base, c1, c2)``: when its last result is back, the same without queueing (the
    split), and the causes a consumer waiting on it is charged."""
    heap, pipe_n, chan_free, chan_scale = mem.heap, mem.pipe_n, mem.chan_free, mem.chan_scale
    l1_state, l1_ready, l2_state, l2_ready = mem.l1_state, mem.l1_ready, mem.l2_state, mem.l2_ready
    slice_free = mem.slice_free
    r_tx_start, tx_addr, tx_bytes, tx_chan = tx.r_tx_start, tx.tx_addr, tx.tx_bytes, tx.tx_chan
    sw_coal, sw_l1, sw_l2, sw_bw = mc.sw_coal, mc.sw_l1, mc.sw_l2, mc.sw_bw
    has_l1, has_l2, l1_shape, l2_shape = mc.has_l1, mc.has_l2, mc.l1_shape, mc.l2_shape
    n_parts, part_bytes, mshr, mshr_line = mc.n_parts, mc.part_bytes, mc.mshr, mc.mshr_line
    n_slices, slices_pp, slices_pc = mc.n_slices, mc.slices_pp, mc.slices_pc
    slice_line, slice_spb = mc.slice_line, mc.slice_spb
    l1_lat, l2_lat, l2_far_lat, dram_lat, spb = mc.l1_lat, mc.l2_lat, mc.l2_far_lat, mc.dram_lat, mc.spb
    k0 = _nonneg(r_tx_start[row])
    ntx = r_tx_start[row + 1] - k0
    kp = k0 + PREFETCH_TX
    if kp < tx_addr.shape[0]:
        _prefetch(tx_addr, kp)
        _prefetch(tx_bytes, kp)
        _prefetch(tx_chan, kp)
    nb_each = 0.0
    if not sw_coal:
        ntx = _min2(ntx, tx.r_tx_min[row])
        if ntx > 0:
            nb_each = tx.r_tx_min_bytes[row] / ntx
    counters[C_G_ACC] += 1
    counters[C_TX] += ntx
    is_store = store != 0
    is_write = store == 2
    c1 = depcause
    c2 = CHANNEL_QUEUE
    if ntx == 0:                  # no active lane: nothing to fetch
        done = t + 1.0
        base = done
    else:
        done = t
        base = t
    missed = False
    beyond_l1 = False
    best_extra = 0.0
    near = mem.sm_part[sm]
    line = -1               # cache line of the open MSHR entry (MSHR mode)
    line_done = 0.0
    mshr_free = t
    for j in range(k0, r_tx_start[row + 1]):
        addr = tx_addr[j]
        # The caches always evolve as with every mechanism on: a removed mechanism
        # (perfect L1/L2, perfect coalescing) changes what an access costs, never which
        # sectors the caches hold, so it cannot turn a later hit into a miss.
        # (each access also returns its line's ready time: a hit on a line whose fill
        # is still on its way merges with that miss and completes no earlier)
        l1_hit = False
        l1_row = -1
        l1_rt = -1.0
        if has_l1 and not is_store:
            l1_hit, l1_row, l1_rt = cache_access_timed(l1_state, l1_ready, sm, l1_shape, addr)
        # L2: the near partition first (it may hold a copy of a far line); a miss there
        # looks up the address's home partition, which fills on a miss, and the near
        # partition keeps a copy either way (near/far partitions, docs/model.md §3)
        l2_hit = False
        near_hit = False
        far = False
        serve = near
        l2_row = -1
        h_row = -1
        l2_rt = -1.0
        if has_l2 and not l1_hit:
            l2_hit, l2_row, l2_rt = cache_access_timed(l2_state, l2_ready, near, l2_shape, addr)
            near_hit = l2_hit
            if n_parts > 1:
                home = (addr // part_bytes) % n_parts
                if home != near and not l2_hit:
                    far = True
                    serve = home
                    l2_hit, h_row, l2_rt = cache_access_timed(l2_state, l2_ready, home, l2_shape, addr)
        if j >= k0 + ntx:
            continue        # perfect coalescing: surplus transactions cost nothing
        nb = float(tx_bytes[j]) if sw_coal else nb_each
        if has_l1 and not is_store:
            if l1_hit or not sw_l1:
                counters[C_L1H] += 1
                d = t + l1_lat + l1x
                if sw_l1 and l1_rt > d:
                    d = l1_rt       # the line's fill is still on its way
                    missed = True
                if d > done:
                    done = d
                if d > base:
                    base = d
                continue
            counters[C_L1M] += 1
            missed = True
        beyond_l1 = True
        # MSHR mode: each cache line past L1 holds one of the SM's entries until its
        # last sector is back; its requests leave when an entry is free
        s_req = t
        if mshr > 0:
            ln = addr // mshr_line
            if ln != line:
                if line >= 0:
                    _heap_replace_top(heap, pp, pipe_n[pp], line_done)
                line = ln
                line_done = t
                mshr_free = heap[pp, 0]
            if mshr_free > s_req:
                s_req = mshr_free
        qw = s_req - t          # waiting for an MSHR entry
        qc = MEM_PIPE
        if mc.has_tlb:
            # the L2 is physically addressed: an access past L1 needs its page's translation
            tr = _translate(mem, mc, sm, t, addr)
            if mc.tlb.on and tr > s_req:
                if tr - t > qw:
                    qc = TLB_MISS
                    qw = tr - t
                s_req = tr
        # the L2 slice that serves the request (bandwidth per slice)
        if n_slices > 0:
            # the slices sit in front of the DRAM channels (two or more per channel):
            # the channel hash spreads strided patterns over them, the line's low
            # bits pick one of its channel's slices
            sl = serve * slices_pp + (tx_chan[j] * slices_pc + (addr // slice_line) % slices_pc) % slices_pp
            s1 = s_req
            if slice_free[sl] > s1:
                s1 = slice_free[sl]
            if sw_bw:
                slice_free[sl] = s1 + nb * slice_spb
                if far:
                    # the far line is copied into the near partition (GTC21): the copy's fill takes
                    # the near partition's slice of the same index as long
                    sn = near * slices_pp + (sl - serve * slices_pp)
                    slice_free[sn] = _max2(slice_free[sn], s1) + nb * slice_spb
            if s1 - s_req > 0.0:
                qc = L2_QUEUE if s1 - s_req >= qw else qc
            if mc.record:
                record_level(tx_rec, j, TX_SLICE, sl, s_req, s1, _max2(slice_free[sl], s1))
            s_req = s1
        to_dram = True
        if has_l2:
            if l2_hit or not sw_l2:
                counters[C_L2H] += 1
                d = s_req + (l2_far_lat if far and sw_l2 else l2_lat)
                if sw_l2 and l2_rt > d:
                    d = l2_rt       # the line's fill is still on its way
                    missed = True
                to_dram = False
            else:
                counters[C_L2M] += 1
                missed = True
        cq = s_req - t
        if to_dram:
            # every transaction keeps its own channel and FIFO position; without
            # channel skew an overloaded channel serves at the average load's pace
            ch = _nonneg(tx_chan[j])
            s0 = s_req
            if chan_free[ch] > s0:
                s0 = chan_free[ch]
                qc = CHANNEL_QUEUE if s0 - s_req >= s_req - t else qc
            cq = s0 - t
            if sw_bw:
                chan_free[ch] = s0 + nb * spb * chan_scale[ch]
            if mc.record:
                record_level(tx_rec, j, TX_CHAN, ch, s_req, s0, _max2(chan_free[ch], s0))
            if is_write and has_l2:
                # the L2 is write-back: a write is acknowledged by its L2 slice once the
                # channel can take the write-back (no DRAM round trip for the ack)
                d = s_req + (l2_far_lat if far else l2_lat)
                if s0 > d:
                    d = s0
            else:
                # a far home partition adds its extra crossbar latency to the DRAM trip
                d = s0 + dram_lat + (l2_far_lat - l2_lat if far else 0.0)
            counters[C_DRAM] += 1
            counters[C_DRAM_B] += np.int64(nb)
            counters[C_CHW] += np.int64(s0 - s_req)
        # the lines this access brought in are there at d
        if l1_row >= 0:
            l1_ready[l1_row, 0] = d
        if l2_row >= 0 and not near_hit:
            l2_ready[l2_row, 0] = d
        if h_row >= 0 and not l2_hit:
            l2_ready[h_row, 0] = d
        if d > done:
            done = d
        if d - cq > base:
            base = d - cq
        if cq > best_extra:
            best_extra = cq
            c2 = qc
        if mshr > 0 and d > line_done:
            line_done = d
    if mshr > 0 and line >= 0:
        _heap_replace_top(heap, pp, pipe_n[pp], line_done)
    # C_mem: the instruction holds one memory-pipeline slot until its last transaction is back
    if mc.pipe_limited and beyond_l1 and mshr == 0:
        _heap_replace_top(heap, pp, pipe_n[pp], done)
    if missed:
        c1 = CACHE_MISS if (has_l1 or has_l2) else depcause
    return done, base, c1, c2


# ---- per-run set-up: allocation and initialisation of the loop's tables, in functions of their
# own (run once per call, so nothing is lost by not inlining them; ``simulate`` itself stays small
# enough for numba's front end, whose cost grows faster than a function's length)
Memory = namedtuple("Memory", ("heap", "pipe_n", "chan_free", "chan_scale", "l1_state", "l1_ready", "l2_state",
                               "l2_ready", "sm_part", "slice_free", "tlb1_state", "tlb1_ready", "tlb2_state",
                               "tlb2_ready"))


@_helper
def _slots_per_sm(sc, b_ctx_start, sm_blocks_start):
    """The warp slots an SM can ever hold: at most min(resident, blocks) blocks of the largest
    block's warps live at once and a launching warp takes the lowest free slot, so slots past that
    count stay empty: leaving them out changes no result and shrinks the per-slot state (a small
    kernel on a whole GPU would otherwise allocate every SM's 64 slots of scoreboard)."""
    spsm = sc.slots
    resident = sc.resident
    wpb_max = 1
    for b in range(b_ctx_start.shape[0] - 1):
        if b_ctx_start[b + 1] - b_ctx_start[b] > wpb_max:
            wpb_max = b_ctx_start[b + 1] - b_ctx_start[b]
    live = min(resident, b_ctx_start.shape[0] - 1)        # blocks an SM can hold at once
    if sc.deal:
        # dealt breadth-first: a grid that fits in one wave gives each SM ceil(B / SMs) blocks
        n_b = b_ctx_start.shape[0] - 1
        if n_b <= sc.sms * resident:
            live = min(live, (n_b + sc.sms - 1) // sc.sms)
    else:
        longest = 0                                          # static lists: the longest one
        for sm in range(sc.sms):
            longest = max(longest, sm_blocks_start[sm + 1] - sm_blocks_start[sm])
        live = min(live, longest)
    if live * wpb_max < spsm:
        spsm = max(1, live * wpb_max)
    return spsm


@_helper
def _table_sizes(u_count, s_dst, s_src):
    """Copies of the most replicated unit (the unit table's row width) and the registers the
    instructions name (the scoreboard's rows per slot)."""
    maxc = 1
    for u in range(u_count.shape[0]):
        if u_count[u] > maxc:
            maxc = u_count[u]
    nreg = 1
    for i in range(s_dst.shape[0]):
        for k in range(s_dst.shape[1]):
            if s_dst[i, k] + 1 > nreg:
                nreg = s_dst[i, k] + 1
        for k in range(s_src.shape[1]):
            if s_src[i, k] + 1 > nreg:
                nreg = s_src[i, k] + 1
    return maxc, nreg


@_helper
def _kernel_uses(s_barrier, s_async, s_depbar, sw_bar):
    """Whether the kernel has a BAR that waits (else the loop skips the barrier checks) and any
    cp.async copy, commit or DEPBAR (else it skips their checks and keeps no barrier ring)."""
    has_bar = False
    has_async = False
    for i in range(s_barrier.shape[0]):
        if s_barrier[i] != 0 and sw_bar:
            has_bar = True
    for i in range(s_async.shape[0]):
        if s_async[i] != 0 or s_depbar[i] >= 0:
            has_async = True
    return has_bar, has_async


@_helper
def _fetch_checks(s_iline, r_sidx, c_start, c_end, on):
    """Per static instruction, 1 where a warp may enter a new instruction-cache line: the first
    instruction of a line (the one before it, in static order = PC order, lies in another line), a
    warp's first instruction, and every instruction a warp reaches other than from the one before
    it (a branch target in this trace). Everywhere else the warp is still in the line it entered,
    whose fetch it has waited for, so the loop checks nothing there."""
    n = s_iline.shape[0]
    chk = np.zeros(n, np.int64)
    if not on or n == 0 or s_iline.max() < 0:
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


@_helper
def _line_table(lines, on, n_sms):
    """Whether a per-SM cache of code or constant lines is modelled (its switch ``on`` and some
    instruction with a line in ``lines``), and its table ``[sm, line]`` of arrival times, every
    line not yet requested (-1; one dummy entry when not modelled)."""
    n = 0
    for s in range(lines.shape[0]):
        if lines[s] + 1 > n:
            n = lines[s] + 1
    used = on and n > 0
    return used, np.full((n_sms if used else 1, n if used else 1), -1.0, np.float64)


@_helper
def _new_fetch(sx, sf, has_bar, sw_deps, has_async, S, U, s_iline, s_cline, n_sms, sc):
    """The :class:`Static` tuple with empty instruction and constant caches: each is modelled when
    its switch is on and some instruction has a line (``s_iline`` / ``s_cline`` >= 0)."""
    has_fetch, ifl = _line_table(s_iline, sc.instruction_fetch, n_sms)
    gfl = np.full(ifl.shape[1], -1.0, np.float64)
    front = np.full(ifl.shape[0], -1, np.int64)
    has_const, cfl = _line_table(s_cline, sc.constant_cache, n_sms)
    return Static(sx, sf, has_bar, sw_deps, has_async, S, U, has_fetch, ifl, gfl, front, sc.l2_latency,
                  sc.dram_latency, sc.fetch_prefetch, has_const, cfl)


@_helper
def _new_warps(n_sms, spsm, S, nreg, has_async):
    """The warp-slot tables (:class:`Warps`), every slot free, with its fixed SM / scheduler /
    list-position maps (so the hot loop needs no integer division)."""
    n_slots = n_sms * spsm
    # one float and one int table, a row per slot
    slf = np.zeros((n_slots, NUM_SLF), np.float64)
    sli = np.zeros((n_slots, NUM_SLI), np.int64)
    sli[:, SLI_CTX] = -1
    sli[:, SLI_YIELD] = 1
    sli[:, SLI_UCNT] = 1
    for slot in range(n_slots):
        sli[slot, SLI_SM] = slot // spsm
        sli[slot, SLI_G] = sli[slot, SLI_SM] * S + (slot % spsm) % S
        sli[slot, SLI_K] = (slot % spsm) // S
    # scoreboard: registers and dependency barriers (see RS_*)
    rs = np.zeros((n_slots, nreg, 2), np.float64)
    bs = np.zeros((n_slots, NSB, 2), np.float64)
    rsc = np.zeros((n_slots, nreg, 2), np.int64)
    bsc = np.zeros((n_slots, NSB, 2), np.int64)
    # counted barriers: ``bq[slot, b, e, RS_*]`` / ``bqc`` (as bs/bsc) a ring of barrier b's last
    # NQ results, ``bqn[slot, b]`` its results so far; at b = NSB, e = 0 the slot's open cp.async
    # group (its latest copy result so far). The ring is read and written only when has_async
    # (_bar_write's ``ring``): one entry otherwise (e = 0 still holds the open group, reset at launch)
    bq = np.zeros((n_slots, NSB + 1, NQ if has_async else 1, 2), np.float64)
    bqc = np.zeros((n_slots, NSB + 1, NQ if has_async else 1, 2), np.int64)
    bqn = np.zeros((n_slots, NSB), np.int64)
    return Warps(sli, slf, np.zeros(n_slots, np.float64), rs, rsc, bs, bsc, bq, bqc, bqn)


@_helper
def _new_scheds(G, L):
    """The scheduler tables (:class:`Scheds`): nothing to wake for, no warps."""
    scf = np.zeros((G, NUM_SCF), np.float64)
    sci = np.zeros((G, NUM_SCI), np.int64)
    scf[:, SCF_NEXT] = INF
    scf[:, SCF_SPLIT] = INF
    sci[:, SCI_C1] = NO_WARP
    sci[:, SCI_C2] = NO_WARP
    sci[:, SCI_RR] = L - 1
    sci[:, SCI_GREEDY] = -1
    sch_list = np.full((G, L), -1, np.int64)   # each scheduler's warp slots, oldest first (GTO order)
    # GTO: a lower bound on the ready time of every warp of the scheduler but its greedy one (-INF:
    # unknown). A warp's ready time never falls while it does not issue (its t_dep is fixed, unit
    # and pipeline-slot free times only grow), so a scan's minimum stays a bound until the greedy
    # warp changes or a warp is launched or released.
    lbo = np.full(G, -INF, np.float64)
    sch_n = np.zeros(G, np.int64)
    return Scheds(scf, sci, lbo, sch_list, sch_n)


@_helper
def _index_maps(n_sms, S, spp):
    """Each scheduler's SM and index in it, each SM's memory pipeline."""
    G = n_sms * S
    g_sm = np.empty(G, np.int64)
    g_sch = np.empty(G, np.int64)
    for g in range(G):
        g_sm[g] = g // S
        g_sch[g] = g % S
    sm_pipe = np.empty(n_sms, np.int64)
    for sm in range(n_sms):
        sm_pipe[sm] = sm // spp
    return g_sm, g_sch, sm_pipe


@_helper
def _new_memory(mc, n_sms, tx_chan, sm_part_in):
    """The memory system's state (:class:`Memory`), empty: the memory pipelines' slot heaps (and
    slots per pipeline), DRAM channels, L1s and L2 partitions with their lines' ready times, each
    SM's near L2 partition, the L2 slices."""
    spp, pipe_slots, channels, n_parts = mc.spp, mc.pipe_slots, mc.channels, mc.n_parts
    n_pipes = (n_sms + spp - 1) // spp
    pipe_n = np.zeros(n_pipes, np.int64)
    maxslots = 1
    if pipe_slots > 0:
        for p in range(n_pipes):
            in_pipe = min(spp, n_sms - p * spp)
            pipe_n[p] = max(1, (pipe_slots * in_pipe) // spp)
            if pipe_n[p] > maxslots:
                maxslots = pipe_n[p]
    heap = np.zeros((n_pipes, maxslots), np.float64)
    chan_free = np.zeros(channels, np.float64)
    # channel skew removed: each channel's service time scaled to the average load (balance_scale)
    if mc.sw_skew:
        chan_scale = np.ones(channels, np.float64)
    else:
        chan_scale = balance_scale(tx_chan, channels)
    l1_state = cache_new(n_sms, mc.l1_shape)
    # per way, the cycle its line's data is there (a hit on a line still being filled waits for it)
    l1_ready = np.zeros(l1_state.shape, np.float64)
    # L2: one cache per partition (its geometry is one partition's); each SM has a near partition
    # (``sm_part_in``, from the lowering), each address a home partition (interleave part_bytes)
    l2_state = cache_new(n_parts, mc.l2_shape)
    l2_ready = np.zeros(l2_state.shape, np.float64)
    sm_part = sm_part_in.astype(np.int64)
    slice_free = np.zeros(max(mc.n_slices, 1), np.float64)
    # address translation: an L1 TLB per SM and one L2 TLB, cold (empty stand-ins when not modelled)
    tlb1_state = cache_new(n_sms if mc.has_tlb else 1, mc.tlb.l1_shape)
    tlb1_ready = np.zeros(tlb1_state.shape, np.float64)
    tlb2_state = cache_new(1, mc.tlb.l2_shape)
    tlb2_ready = np.zeros(tlb2_state.shape, np.float64)
    return Memory(heap, pipe_n, chan_free, chan_scale, l1_state, l1_ready, l2_state, l2_ready, sm_part, slice_free,
                  tlb1_state, tlb1_ready, tlb2_state, tlb2_ready)


@_helper
def _new_grid(n_sms, c_start, c_end, r_sidx, b_ctx_start, sm_blocks_start, sm_blocks, sm_end, counters):
    """The grid and its launch state (:class:`Blocks`): no block launched, no warp in a slot."""
    B = b_ctx_start.shape[0] - 1
    ctx_slot = np.full(c_start.shape[0], -1, np.int64)
    blk_live = np.zeros(B, np.int64)
    blk_arrived = np.zeros(B, np.int64)
    # the current barrier episode of each block: latest (arrival + its BAR latency), largest BAR
    # latency among the arrivals
    blk_bar = np.zeros((B, 2), np.float64)
    sm_next = np.zeros(n_sms, np.int64)
    sm_res = np.zeros(n_sms, np.int64)
    for sm in range(n_sms):
        sm_next[sm] = sm_blocks_start[sm]
        sm_end[sm, 0] = 0.0
        sm_end[sm, 1] = 0.0
    # dynamic dealing: one queue over sm_blocks[0 : sm_blocks_start[n_sms]] (all SMs' lists)
    q_next = np.zeros(1, np.int64)
    age = np.zeros(1, np.int64)   # launch order of warps (GTO's "oldest")
    return Blocks(c_start, c_end, r_sidx, b_ctx_start, sm_blocks_start, sm_blocks, ctx_slot, sm_next, sm_res, q_next,
                  age, blk_live, blk_arrived, blk_bar, sm_end, counters)


@_helper
def _row_contexts(c_start, c_end, n_rows):
    """The warp context of each of the ``n_rows`` first rows (replay: ``n_rows`` = all rows)."""
    r_ctx = np.zeros(n_rows, np.int64)
    if n_rows > 0:
        for c in range(c_start.shape[0]):
            for rr in range(c_start[c], c_end[c]):
                r_ctx[rr] = c
    return r_ctx


# What the loop writes (allocated by teg.engine.run, layouts in simulate's docstring and
# teg.engine.records).
Outputs = namedtuple("Outputs", ("stall", "pc_count", "pc_wait", "counters", "timeline", "sm_end", "order_out",
                                 "pcc", "tx_rec"))


@njit(cache=True, error_model="numpy")
def simulate(static, rows, grid, sc, order_in, out):
    """Run the timing model on the lowered kernel (:class:`~teg.engine.lowered.StaticTable`,
    :class:`~teg.engine.lowered.RowTable`, :class:`~teg.engine.lowered.Grid`,
    :class:`~teg.engine.scalars.Scalars`); fills the :class:`Outputs` ``out`` and returns
    ``(outcome, total_cycles)``, the outcome a ``RUN_*`` code of :mod:`teg.engine.codes`.

    ``out.stall`` receives the stall cycles by cause, ``out.pc_count`` / ``out.pc_wait`` each
    static instruction's executions and waits before issue, ``out.counters`` the counters
    (:data:`teg.engine.codes.COUNTER_NAMES`), ``out.sm_end[sm, 0]`` the SM's last completion and
    ``out.sm_end[sm, 1]`` the blocks it ran.

    ``order_in`` (non-empty: replay) is the global issue order to follow, ``out.order_out``
    (non-empty: record) receives this run's issue order; both hold dynamic row indexes.

    With ``sc.records`` bits (:mod:`teg.engine.records`): ``REC_ROWS`` fills ``out.timeline`` (a row
    per dynamic row) and ``out.tx_rec`` (a row per transaction); ``REC_PCS`` fills ``out.pcc`` (the
    waits before issue and the charged stall cycles per static instruction)."""
    (s_unit, s_occ, s_lat_exec, s_lat_multi, s_lat_same, s_mem, s_mem_lat, s_store, s_barrier, s_depcause, s_dst,
     s_src, s_ctrl, s_stall, s_yield, s_wbar, s_rbar, s_wait, s_depbar, s_async, s_iline, s_cline, u_occ, u_count,
     u_per_sm) = static
    r_sidx, r_wave, r_wave_min, r_tx_start, r_tx_min, r_tx_min_bytes, tx_addr, tx_bytes, tx_chan = rows
    c_start, c_end, c_block, b_ctx_start, sm_blocks_start, sm_blocks, sm_part_in = grid
    stall_out, pc_count, pc_wait, counters, timeline, sm_end, order_out, pcc, tx_rec = out
    n_sms = sc.sms
    S = sc.schedulers
    spsm = _slots_per_sm(sc, b_ctx_start, sm_blocks_start)
    resident = sc.resident
    policy = sc.policy
    depmodel = sc.depmodel
    sw_bank = sc.bank_conflicts
    sw_deps = sc.dependencies
    sw_units = sc.unit_throughput
    sw_same = sc.same_warp_penalty
    sw_bar = sc.barriers
    mc = _mem_config(sc)
    attrib = (sc.records & REC_PCS) != 0
    rec_any = mc.record or attrib
    rec_order = order_out.shape[0] > 0
    replay = order_in.shape[0] > 0
    n_order = order_in.shape[0]
    issue_interval = sc.issue_interval
    deal = sc.deal
    wfc = sc.wavefront_cycles
    rbar_lat = sc.rbar_latency
    launch_lat = sc.block_launch_latency if sc.block_launch else 1.0

    G = n_sms * S
    L = (spsm + S - 1) // S
    C = c_start.shape[0]
    U = u_occ.shape[0]
    maxc, nreg = _table_sizes(u_count, s_dst, s_src)
    if s_src.shape[1] > X_DST - X_SRC or s_dst.shape[1] > X_NWAW - X_DST:
        return RUN_TOO_MANY_REGS, 0
    sx, sf = _pack_static(s_unit, s_occ, s_lat_exec, s_lat_multi, s_lat_same, s_mem, s_mem_lat, s_store,
                          s_barrier, s_depcause, s_dst, s_src, s_ctrl, s_stall, s_yield, s_wbar, s_rbar,
                          s_wait, s_depbar, s_async, s_iline,
                          _fetch_checks(s_iline, r_sidx, c_start, c_end, sc.instruction_fetch), s_cline,
                          u_count, u_per_sm, depmodel, mc.pipe_limited,
                          issue_interval <= 1.0, issue_interval, sw_same, sw_bar, rbar_lat)
    has_bar, has_async = _kernel_uses(s_barrier, s_async, s_depbar, sw_bar)
    packed = _new_fetch(sx, sf, has_bar, sw_deps, has_async, S, U, s_iline, s_cline, n_sms, sc)

    # ---- the loop's tables (Warps, Scheds, Memory, Blocks above say what they hold)
    warps = _new_warps(n_sms, spsm, S, nreg, has_async)
    sli, slf, tdep, rs, rsc, bs, bsc, bq, bqc, bqn = warps
    scheds = _new_scheds(G, L)
    scf, sci, lbo, sch_list, sch_n = scheds
    g_sm, g_sch, sm_pipe = _index_maps(n_sms, S, mc.spp)
    uf = np.zeros((n_sms * S * U, maxc), np.float64)   # unit copies' free times, a row per (group, unit)
    memory = _new_memory(mc, n_sms, tx_chan, sm_part_in)
    heap = memory.heap
    txs = Tx(r_tx_start, r_tx_min, r_tx_min_bytes, tx_addr, tx_bytes, tx_chan)
    blocks = _new_grid(n_sms, c_start, c_end, r_sidx, b_ctx_start, sm_blocks_start, sm_blocks, sm_end, counters)
    ctx_slot, sm_res, blk_live, blk_arrived = blocks.ctx_slot, blocks.sm_res, blocks.blk_live, blocks.blk_arrived
    blk_bar = blocks.blk_bar
    q_end = sm_blocks_start[n_sms]
    # the latest completion of anything a block issued (loads and stores alike): the block holds
    # its SM's slots until then (a warp exits only when its stores are acknowledged)
    blk_done = np.zeros(b_ctx_start.shape[0] - 1, np.float64)
    # min-tree over the SMs' earliest scheduler wake-ups: a step visits only SMs with work due
    leaves = _pow2_at_least(n_sms)
    tree = np.full(2 * leaves, INF, np.float64)
    finished = 0
    # stall accounting per SM (each SM's cycles get one cause each; the run's breakdown sums them):
    # the first cycle of the SM not yet charged, and the SM's latest result (done, base, causes)
    sm_t = np.zeros(n_sms, np.float64)
    sm_kf = np.zeros((n_sms, 2), np.float64)
    sm_kc = np.full((n_sms, 2), NO_WARP, np.int64)
    sm_ks = np.full(n_sms, -1, np.int64)       # static index of the SM's latest result
    pc_none = pcc.shape[1] - 1                 # pcc row of stall cycles with no instruction waited on
    sm_iss = False
    status = RUN_DONE
    # ---- schedule-preserving replay: the context of every row, the order's next event
    r_ctx = _row_contexts(c_start, c_end, r_sidx.shape[0] if replay else 0)
    rp_ptr = np.int64(0)    # (an int64, not the literal 0: _replay_next compiles for one signature)
    rp_slot = -1
    rp_g = -1
    parked = np.zeros(G, np.bool_)      # scheduler waits for the order (sched_next is no bound)

    # ---------------------------------------------------------------- main loop
    t = 0.0
    # the first blocks: each SM takes blocks until its resident limit; dealt dynamically, the SMs
    # take one block each in turn (breadth-first), so a grid smaller than a full wave spreads over
    # all SMs
    per_turn = 1 if deal else resident
    more = True
    while more:
        before = blocks.q_next[0]
        for sm in range(n_sms):
            if _launch_blocks(warps, scheds, packed, blocks, sm, 0.0, per_turn, resident, deal, q_end, spsm) != RUN_DONE:
                return RUN_BLOCK_TOO_BIG, 0
        more = deal and blocks.q_next[0] > before
    for sm in range(n_sms):
        _sm_wake(scf, tree, leaves, S, sm)

    if replay:
        rp_slot = _replay_next(order_in, r_ctx, ctx_slot, sli, parked, scf, g_sm, tree, leaves, S, rp_ptr, t)
        if rp_slot < 0:
            return RUN_REPLAY_NOT_RESIDENT, 0
        rp_g = sli[rp_slot, SLI_G]

    while finished < C:
        counters[C_STEPS] += 1
        # the schedulers whose wake-up has come: the SMs in index order, as the min-tree names them
        # (an SM's tree entry is refreshed when it is left); within an SM one after the other from
        # scheduler t mod S, so the sub-partitions take turns at the SM's shared units (MIO, CBU)
        # round-robin and none starves behind a lower-numbered one
        rot = np.int64(t) % S
        g = -1
        kq = 0
        gbase = 0
        while True:
            if g >= 0 and kq < S - 1:
                kq += 1
                g += 1
                if g == gbase + S:
                    g = gbase
            else:
                first = 0       # the first SM that may be next
                if g >= 0:
                    # leaving the SM: an issue cycle, or cycle t is charged at its next visit
                    lsm = _nonneg(g_sm[g])
                    if sm_iss:
                        stall_out[ISSUE] += 1
                        sm_t[lsm] = t + 1.0
                    else:
                        sm_t[lsm] = t
                    _sm_wake(scf, tree, leaves, S, lsm)
                    first = lsm + 1
                nsm = _tree_first_le(tree, leaves, first, t)
                if nsm < 0:
                    break
                # entering the SM: its skipped cycles go to the binding cause of its scheduler
                # that woke first (first in index order on ties)
                gbase = nsm * S
                gm = gbase
                kq = 0
                g = gbase + rot
                for k in range(gbase + 1, gbase + S):
                    if scf[k, SCF_NEXT] < scf[gm, SCF_NEXT]:
                        gm = k
                _charge(stall_out, sci[gm, SCI_C1], sci[gm, SCI_C2], sm_t[nsm], t, scf[gm, SCF_SPLIT])
                if attrib and t > sm_t[nsm]:
                    ks = _waited_on(sli, tdep, uf, heap, sch_list, sch_n, gm, scf[gm, SCF_NEXT], policy, S, spsm, L,
                                    sm_pipe[nsm], sw_units)
                    _charge(pcc[PC_STALL, ks if ks >= 0 else pc_none], sci[gm, SCI_C1], sci[gm, SCI_C2], sm_t[nsm], t,
                            scf[gm, SCF_SPLIT])
                sm_iss = False
            g = _nonneg(g)
            if scf[g, SCF_NEXT] > t:
                continue
            sm = _nonneg(g_sm[g])
            pp = _nonneg(sm_pipe[sm])     # the SM's memory pipeline
            sch = g_sch[g]
            if scf[g, SCF_FREE] > t:
                scf[g, SCF_NEXT] = scf[g, SCF_FREE]
                sci[g, SCI_C1] = SCHEDULER
                sci[g, SCI_C2] = SCHEDULER
                scf[g, SCF_SPLIT] = scf[g, SCF_FREE]
                continue
            best = -1
            best_k = -1
            others_ready = False
            minr = INF
            mc1 = NO_WARP
            mc2 = NO_WARP
            msp = INF
            # GTO: the greedy warp first; else the oldest eligible warp (scan in age order). When
            # the scheduler is free again next cycle, the scan stops at the chosen warp (no cycle
            # is skipped before the next scan, so nothing else needs evaluating).
            fast = False
            gs = sci[g, SCI_GREEDY]
            gdone = False       # the greedy warp was evaluated here; the scan leaves it out
            rg = INF
            gbind = 0
            if policy == POLICY_GTO and gs >= 0 and sli[gs, SLI_CTX] >= 0:
                gs = _nonneg(gs)
                rg, gbind = _ready_of(sli, tdep, uf, heap, pp, sw_units, gs)
                if rg > t:
                    gdone = True
                    if rg < lbo[g] and not replay:
                        # no other warp is ready before lbo[g]: the scan would find none eligible
                        # and the greedy warp as the strict minimum, so its result is known
                        scf[g, SCF_NEXT] = rg
                        sci[g, SCI_C1] = sli[gs, SLI_C1] if gbind == 0 else gbind
                        sci[g, SCI_C2] = sli[gs, SLI_C2] if gbind == 0 else gbind
                        scf[g, SCF_SPLIT] = slf[gs, SLF_SPLIT] if gbind == 0 else rg
                        continue
                elif sli[gs, SLI_YIELD] != 0:
                    gdone = True
                    best = gs
                    best_k = sli[gs, SLI_K]
                    fast = sx[_nonneg(sli[gs, SLI_SIDX] * XW) + X_FAST] != 0
            gskip = gs if gdone else -1
            mslot = -1
            nscan = 0 if fast else (L if policy == POLICY_LRR else sch_n[g])
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
                    slot = _nonneg(sm * spsm + loc)
                    if sli[slot, SLI_CTX] < 0:
                        continue
                else:
                    slot = _nonneg(sch_list[g, kk])
                    if slot == gskip:
                        continue
                nev += 1
                r = tdep[slot]
                if r > t and r >= minr:
                    continue            # r only grows below: neither eligible nor the new minimum
                # (the pipeline's time tested first: the slot's row is read only when it may bind)
                if hmin > t and hmin >= minr and sli[slot, SLI_GMEM]:
                    continue            # waits for a memory-pipeline slot beyond the minimum
                r, bind = _ready_of(sli, tdep, uf, heap, pp, sw_units, slot)
                if r <= t:
                    if best < 0:
                        best = slot
                        best_k = k if policy == POLICY_LRR else sli[slot, SLI_K]
                        if sx[_nonneg(sli[slot, SLI_SIDX] * XW) + X_FAST] != 0:
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
            counters[C_EVALS] += nev
            if gdone:
                if best != gs:
                    # the greedy warp is not eligible: it takes its place in the minimum (first in
                    # age order on ties, as in the scan); the others' minimum bounds their wait
                    lbo[g] = minr if best < 0 else -INF
                    if rg < minr or (rg == minr and mslot >= 0 and sli[gs, SLI_AGE] < sli[_nonneg(mslot), SLI_AGE]):
                        minr = rg
                        mc1 = sli[gs, SLI_C1] if gbind == 0 else gbind
                        mc2 = sli[gs, SLI_C2] if gbind == 0 else gbind
                        msp = slf[gs, SLF_SPLIT] if gbind == 0 else rg
                elif nscan > 0:
                    lbo[g] = -INF if others_ready else minr
            if replay:
                # schedule-preserving replay: only the order's next event may issue
                if g != rp_g:
                    if best >= 0:       # eligible warps, none of them next: wait for the order
                        scf[g, SCF_NEXT] = INF
                        parked[g] = True
                        continue
                elif best >= 0 and best != rp_slot:
                    r, bind = _ready_of(sli, tdep, uf, heap, pp, sw_units, rp_slot)
                    if r <= t:
                        others_ready = True     # the scan's choice is eligible too
                        best = rp_slot
                        best_k = sli[rp_slot, SLI_K]
                    else:
                        scf[g, SCF_NEXT] = r
                        sci[g, SCI_C1] = sli[rp_slot, SLI_C1] if bind == 0 else bind
                        sci[g, SCI_C2] = sli[rp_slot, SLI_C2] if bind == 0 else bind
                        scf[g, SCF_SPLIT] = slf[rp_slot, SLF_SPLIT] if bind == 0 else r
                        continue
            if best < 0:
                scf[g, SCF_NEXT] = minr
                sci[g, SCI_C1] = mc1
                sci[g, SCI_C2] = mc2
                scf[g, SCF_SPLIT] = msp
                continue

            # ------------------------------------------------------------ issue `best` at t
            slot = _nonneg(best)
            sm_iss = True
            scf[g, SCF_NEXT] = INF     # recomputed below; releases/launches during the issue may lower it
            sci[g, SCI_RR] = best_k
            if slot != sci[g, SCI_GREEDY]:
                lbo[g] = -INF           # the old greedy warp joins the others
            sci[g, SCI_GREEDY] = slot
            row = _nonneg(sli[slot, SLI_ROW])
            s = _nonneg(sli[slot, SLI_SIDX])
            x = _nonneg(s * XW)
            f = _nonneg(s * FW)
            counters[C_INSTR] += 1
            pc_count[s] += 1
            pc_wait[s] += t - slf[slot, SLF_SINCE]
            if rec_any:
                ucopy = -1
                ufree = -INF
                if sw_units:
                    ucopy, ufree = _earliest_copy(sli, uf, slot)
                record_issue(timeline, pcc, row, s, g, t, slf[slot, SLF_SINCE], tdep[slot],
                             slf[slot, SLF_SPLIT], sli[slot, SLI_C1], sli[slot, SLI_C2], ufree, ucopy,
                             heap[pp, 0] if sli[slot, SLI_GMEM] else -INF)
            if rec_order:
                order_out[counters[C_INSTR] - 1] = row
            scf[g, SCF_FREE] = t + sf[f + SF_FREE]
            mem = sx[x + X_MEM]
            w = 1
            wmin = 1
            active = True
            if mem == MEM_SHARED:
                active = r_wave_min[row] > 0      # 0: no active lane (predicated off)
                wmin = _max2(1, r_wave_min[row])
                w = _max2(1, r_wave[row]) if sw_bank else wmin
                counters[C_SH_ACC] += 1
                counters[C_SH_WAVE] += w
                counters[C_SH_WMIN] += wmin
            elif mem == MEM_GLOBAL:
                # the L1 data stage's wavefronts: one per cache line (0 where not modelled)
                wmin = _max2(1, r_wave_min[row])
                w = _max2(1, r_wave[row]) if mc.sw_coal else wmin
            if sw_units:
                bc, m = _earliest_copy(sli, uf, slot)
                uf[_nonneg(sli[slot, SLI_UOFF]), bc] = t + sf[f + SF_OCC] * w
            cc = sx[x + X_CC] != 0
            slf[slot, SLF_SAME] = t + sf[f + SF_SAME]
            if cc:
                sli[slot, SLI_YIELD] = sx[x + X_YIELD]
            sli[slot, SLI_SAMEC] = SAME_WARP
            # ---- result time
            if mem == MEM_SHARED and not active:
                done = t + 1.0
                base = done
                c1 = sx[x + X_DEPCAUSE]
                c2 = c1
            elif mem == MEM_SHARED:
                done = t + sf[f + SF_MEMLAT] + (w - 1) * wfc
                base = t + sf[f + SF_MEMLAT] + (wmin - 1) * wfc
                c1 = sx[x + X_DEPCAUSE]
                c2 = BANK_CONFLICT
            elif mem == MEM_GLOBAL:
                done, base, c1, c2 = _global_access(memory, mc, txs, counters, tx_rec, t, row, sm, pp, sx[x + X_STORE],
                                                    sx[x + X_DEPCAUSE], (w - 1) * wfc)
            else:
                done = t + sf[f + SF_LAT]
                base = done
                c1 = sx[x + X_DEPCAUSE]
                c2 = c1
            rd = done
            rb = base
            if not sw_deps:
                rd = t
                rb = t
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
                    b = _nonneg(sx[x + X_WBAR])
                    _bar_write(bs, bsc, bq, bqc, bqn, slot, b if b < NSB else 0, rd, rb, c1, c2, has_async)
            if cc:
                b = _nonneg(sx[x + X_WBAR])
                if b < NSB:
                    _bar_write(bs, bsc, bq, bqc, bqn, slot, b, rd, rb, c1, c2, has_async)
                b = _nonneg(sx[x + X_RBAR])
                if b < NSB:
                    rt = t + sf[f + SF_RBAR] if sw_deps else t
                    _bar_write(bs, bsc, bq, bqc, bqn, slot, b, rt, rt, sx[x + X_DEPCAUSE], sx[x + X_DEPCAUSE],
                               has_async)
            else:
                for k in range(sx[x + X_NDST]):
                    r = _nonneg(sx[x + X_DST + k])
                    rs[slot, r, RS_T] = rd
                    rs[slot, r, RS_B] = rb
                    rsc[slot, r, RC_C1] = c1
                    rsc[slot, r, RC_C2] = c2
            blk = _nonneg(sli[slot, SLI_BLOCK])
            # a block retires with its writes still in flight: a store holds the warp only until
            # its data have left the registers (read-barrier release); the write's acknowledgement
            # counts for the kernel's end (sm_kf below), not for the block's slot
            held = t + sf[f + SF_RBAR] if sx[x + X_STORE] == 2 else done
            if held > blk_done[blk]:
                blk_done[blk] = held
            if done > sm_kf[sm, 0]:
                sm_kf[sm, 0] = done
                sm_kf[sm, 1] = base
                sm_ks[sm] = s
                sm_kc[sm, 0] = c1
                sm_kc[sm, 1] = c2
            # ---- barrier arrival
            if has_bar and sx[x + X_BAR] != 0:
                blk_arrived[blk] += 1
                # the barrier resolves at the latest arrival + its BAR latency (the largest such
                # time, so that an earlier arrival never resolves it later)
                blk_bar[blk, 0] = _max2(blk_bar[blk, 0], t + sf[f + SF_LAT])
                blk_bar[blk, 1] = _max2(blk_bar[blk, 1], sf[f + SF_LAT])
                if blk_arrived[blk] >= blk_live[blk]:
                    # the last arrival: released at once (it computes its next instruction's t_dep
                    # as it advances; a t_dep of this BAR, already issued, would wake its
                    # scheduler early and charge the BAR's terms), then the waiting warps
                    slf[slot, SLF_BAR] = blk_bar[blk, 0]
                    _release(warps, scheds, packed, blocks, blk, blk_bar[blk, 0])
                else:
                    slf[slot, SLF_BAR] = INF
            # ---- advance the warp
            sli[slot, SLI_ROW] = row + 1
            ahead = row + PREFETCH_ROWS
            if (ahead & 7) == 0 and ahead < sli[slot, SLI_END]:
                _prefetch(r_sidx, ahead)
                _prefetch(r_tx_start, ahead)
                _prefetch(r_wave, ahead)
                _prefetch(r_wave_min, ahead)
            if row + 1 < sli[slot, SLI_END]:
                sli[slot, SLI_SIDX] = r_sidx[row + 1]
                slf[slot, SLF_SINCE] = t + 1.0
                _compute_tdep(warps, packed, slot)
            else:
                sli[slot, SLI_CTX] = -1
                pos = 0
                while sch_list[g, pos] != slot:
                    pos += 1
                for q in range(pos, sch_n[g] - 1):
                    sch_list[g, q] = sch_list[g, q + 1]
                sch_n[g] -= 1
                sch_list[g, sch_n[g]] = -1
                # GTO: the finished warp is greedy no longer; a warp launched into its slot later
                # is the youngest, not the one to stay with
                sci[g, SCI_GREEDY] = -1
                finished += 1
                blk_live[blk] -= 1
                if has_bar and slf[slot, SLF_BAR] >= INF:
                    # its last instruction was a BAR still waiting: the warp leaves the episode
                    # (its arrival time stays in it), so the others still wait for each other
                    blk_arrived[blk] -= 1
                if blk_live[blk] == 0:
                    sm_res[sm] -= 1
                    # the next block starts when this one has retired: its last issue and all its
                    # outstanding results complete (plus the launch latency)
                    t_launch = _max2(t + _max2(launch_lat, 1.0), math.ceil(blk_done[blk]))
                    if _launch_blocks(warps, scheds, packed, blocks, sm, t_launch, resident, resident, deal, q_end,
                                      spsm) != RUN_DONE:
                        return RUN_BLOCK_TOO_BIG, 0
                elif sw_bar and blk_arrived[blk] > 0 and blk_arrived[blk] >= blk_live[blk]:
                    # the last warp not waiting exited: the barrier resolves now
                    _release(warps, scheds, packed, blocks, blk, _max2(blk_bar[blk, 0], t + blk_bar[blk, 1]))
            # ---- when may this scheduler issue next?
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
                scf[g, SCF_NEXT] = nxt
                sci[g, SCI_C1] = n1
                sci[g, SCI_C2] = n2
                scf[g, SCF_SPLIT] = nsp
            if replay:
                rp_ptr += 1
                if rp_ptr < n_order:
                    rp_slot = _replay_next(order_in, r_ctx, ctx_slot, sli, parked, scf, g_sm, tree, leaves, S, rp_ptr,
                                           t)
                    if rp_slot < 0:
                        return RUN_REPLAY_NOT_RESIDENT, np.int64(t)
                    rp_g = sli[rp_slot, SLI_G]

        if finished >= C:
            break
        # ---- jump to the next cycle at which something may issue (each SM charges the cycles it
        # skipped when it is visited next)
        nmin = tree[1]
        if nmin >= INF:
            status = RUN_DEADLOCK
            break
        tn = math.ceil(nmin)
        if tn < t + 1.0:
            tn = t + 1.0
        t = tn

    if status != RUN_DONE:
        return status, np.int64(t)
    # ---- tail: the kernel ends at its last issue cycle or when its last result is back; each
    # SM's cycles after its last visit go to its latest result's causes while that is pending,
    # then to no_warp (the SM is idle: no block left for it)
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
            _charge(stall_out, sm_kc[sm, 0], sm_kc[sm, 1], a, e, sm_kf[sm, 1])
            if attrib:
                _charge(pcc[PC_STALL, sm_ks[sm] if sm_ks[sm] >= 0 else pc_none], sm_kc[sm, 0], sm_kc[sm, 1], a, e,
                        sm_kf[sm, 1])
            a = e
        if total > a:
            stall_out[NO_WARP] += np.int64(total - a)
            if attrib:
                pcc[PC_STALL, pc_none, NO_WARP] += np.int64(total - a)
    for sm in range(n_sms):
        # the SM's end: its last issue cycle (sm_t after its last visit) or its last result
        sm_end[sm, 0] = _max2(sm_t[sm], math.ceil(sm_kf[sm, 0]))
    return RUN_DONE, np.int64(total)
