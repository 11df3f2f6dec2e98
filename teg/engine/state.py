"""The loop's state: per warp slot (:class:`Warps`), per scheduler (:class:`Scheds`), the block
launch state (:class:`Launch`) and the whole of it (:class:`State`), which outlives one call of the
loop: a paused run (``RUN_PAUSED``) goes on from it. Column layouts are the ``SLF_*`` / ``SLI_*`` /
``SCF_*`` / ``SCI_*`` / ``RS_*`` / ``RC_*`` constants; the ``new_*`` functions allocate empty tables
with numpy, outside the jitted code (:func:`teg.engine.core.new_state`): numpy's zeros are pages
no one touches until the loop first writes them, where a jitted allocation writes every byte.

The state lives in a few packed tables rather than one array per field (fewer live array
descriptors in the jitted loop; the same results).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from teg.engine.codes import NO_WARP
from teg.engine.jitlib import INF, fixed_dim, helper, hot

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
# Scoreboard ``rs[slot, i, RS_*]`` for register row i (teg.engine.static.register_map), and ``bs[slot, b, RS_*]`` for dependency barrier b:
# ready time and split time; ``rsc``/``bsc`` (same indexes, ``RC_*``) the two causes a consumer
# waiting on it is charged (integers kept apart: a float-to-int conversion in the loop is a call).
RS_T, RS_B = range(2)
RC_C1, RC_C2 = range(2)
NSB = 6             # dependency barriers per warp (SB0..SB5)
# Results remembered per dependency barrier for ``DEPBAR.LE SBb, N`` with N > 0 (a ring of the last
# NQ): the wait ends when at most N of the barrier's results are outstanding, i.e. at the (N+1)-th
# latest of them. Exact for N < NQ while the barrier's results complete in issue order or no more
# than NQ are outstanding; DEPBAR.LE with N >= NQ does not wait (an optimistic limit).
NQ = 8
# The causes in the scoreboard tables (``rsc``/``bsc``/``bqc``): one byte each (cause codes are
# below teg.engine.codes.NUM_CAUSES), an eighth of int64's, so that more of a whole GPU's
# scoreboards stay in the host's caches.
CAUSE_DTYPE = np.int8

# The per-slot tables (slot state and scoreboards), the per-scheduler tables and warp lists, and
# the grid's launch state (which warp context holds which slot, each SM's next block in its list,
# its resident blocks, the dealing queue's head, the launch counter that orders warps by age, each
# block's live warps, its warps arrived at the current barrier and that barrier episode, the
# latest completion of anything it issued; per SM the lowest slot position that may be free, and
# the lowest that no warp has held yet: its scoreboard is still numpy's untouched zeros, so a
# launch into it clears nothing — a whole GPU's warps would otherwise write every register's entry
# of their slot, used or not, at launch).
Warps = namedtuple("Warps", ("sli", "slf", "tdep", "rs", "rsc", "bs", "bsc", "bq", "bqc", "bqn"))
Scheds = namedtuple("Scheds", ("scf", "sci", "lbo", "sch_list", "sch_n"))
Launch = namedtuple("Launch", ("ctx_slot", "sm_next", "sm_res", "q_next", "age", "blk_live", "blk_arrived", "blk_bar",
                               "blk_done", "free_from", "fresh_from"))
# Per SM, the stall accounting (each SM's cycles get one cause each; the run's breakdown sums
# them): the first cycle not yet charged, the SM's latest result (done, base), its causes and its
# static instruction.
Tally = namedtuple("Tally", ("sm_t", "sm_kf", "sm_kc", "sm_ks"))
# Fixed index maps: each scheduler's SM and index in it, each SM's memory pipeline.
Maps = namedtuple("Maps", ("g_sm", "g_sch", "sm_pipe"))

# Everything a run keeps between two calls of the loop: the tables above, the packed static
# tables (teg.engine.static.Static), the instruction and constant caches (teg.engine.fetch.Fetch),
# the memory system (teg.engine.memsys.Memory), the unit copies' free times ``uf[group * U + u,
# copy]``, the min-tree over the SMs' wake-ups, the replay's row contexts and parked schedulers,
# and the loop's position: ``clock[0]`` the cycle, ``pos[POS_*]``.
State = namedtuple("State", ("warps", "scheds", "static", "fetch", "launch", "memory", "uf", "tree", "tally", "maps",
                             "r_ctx", "parked", "pos", "clock"))
# ``pos``: warps finished, the replay order's next event, its slot and scheduler, warp slots per
# SM, whether the first blocks are launched
POS_FINISHED, POS_RP_PTR, POS_RP_SLOT, POS_RP_G, POS_SPSM, POS_STARTED = range(6)
NUM_POS = 6


LINE = 64          # bytes in a host cache line


def aligned(shape, dtype, fill=0):
    """``np.full(shape, fill, dtype)`` whose data start on a host cache-line boundary (numpy's
    large arrays start 16 bytes past one: calloc's header on an mmapped chunk). A table with rows
    of whole lines (a warp slot's, a scheduler's, a cache set's) then has every row in as few lines
    as it can: the whole GPU reads each warp's rows after every other SM's, by when they have left
    the host's caches, so each line a row straddles is one more miss. Zero-filled tables keep
    calloc's untouched pages."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    buf = np.zeros(n * dtype.itemsize + LINE, np.uint8)
    off = (-buf.ctypes.data) % LINE
    a = buf[off:off + n * dtype.itemsize].view(dtype).reshape(shape)
    if fill != 0:
        a.fill(fill)
    return a


def padded(n, itemsize):
    """``n`` rounded up so that a row of ``n`` items of ``itemsize`` bytes is whole host cache
    lines, an odd number of them when more than one: rows a power-of-two number of lines apart
    would put the same line of every slot's row into a fraction of the host cache's sets (each
    set takes the lines whose index agrees in the low bits), so that a whole GPU's hot scoreboard
    lines would compete for a quarter of the cache while the rest idles."""
    per = max(1, LINE // itemsize)
    lines = -(-n // per)
    if lines > 1 and lines % 2 == 0:
        lines += 1
    return max(lines, 1) * per


@hot
def fixed_widths(sim):
    """Tell LLVM the constant widths of the state's tables (:func:`teg.engine.jitlib.fixed_dim`)."""
    w, sd = sim.warps, sim.scheds
    fixed_dim(w.sli, 1, NUM_SLI)
    fixed_dim(w.slf, 1, NUM_SLF)
    fixed_dim(w.rs, 2, 2)
    fixed_dim(w.rsc, 2, 2)
    fixed_dim(w.bs, 1, NSB)
    fixed_dim(w.bs, 2, 2)
    fixed_dim(w.bsc, 1, NSB)
    fixed_dim(w.bsc, 2, 2)
    fixed_dim(w.bq, 1, NSB + 1)
    fixed_dim(w.bq, 3, 2)
    fixed_dim(w.bqc, 1, NSB + 1)
    fixed_dim(w.bqc, 3, 2)
    fixed_dim(w.bqn, 1, NSB)
    fixed_dim(sd.scf, 1, NUM_SCF)
    fixed_dim(sd.sci, 1, NUM_SCI)
    fixed_dim(sim.launch.blk_bar, 1, 2)
    fixed_dim(sim.tally.sm_kf, 1, 2)
    fixed_dim(sim.tally.sm_kc, 1, 2)


def sli_dtype(largest):
    """The integer slot table's type: int32 when every value it may hold (rows, warp contexts,
    blocks, launch order, unit rows, static instructions: all below ``largest``) fits, so that a
    slot's 16 integers are one host cache line (the loop reads most of them at every issue and
    scan); int64 otherwise (a launch of 2**31 rows or more: the same loop, compiled for it)."""
    return np.int32 if largest < 2**31 - 1 else np.int64


def new_warps(n_sms, spsm, S, nreg, has_async, largest):
    """The warp-slot tables (:class:`Warps`), every slot free, with its fixed SM / scheduler /
    list-position maps (so the hot loop needs no integer division); the integers in
    :func:`sli_dtype` of ``largest``. Built by numpy, outside the jitted code: its zeros are
    untouched pages until the loop first writes a slot's rows."""
    n_slots = n_sms * spsm
    # one float and one int table, a row per slot
    slf = aligned((n_slots, NUM_SLF), np.float64)
    sli = aligned((n_slots, NUM_SLI), sli_dtype(largest))
    sli[:, SLI_CTX] = -1
    sli[:, SLI_YIELD] = 1
    sli[:, SLI_UCNT] = 1
    slot = np.arange(n_slots, dtype=np.int64)
    sli[:, SLI_SM] = slot // spsm
    sli[:, SLI_G] = sli[:, SLI_SM] * S + (slot % spsm) % S
    sli[:, SLI_K] = (slot % spsm) // S
    # scoreboard: registers and dependency barriers (see RS_*); the causes in one byte each
    # (each slot's registers whole lines: a slot's row starts a line)
    rs = aligned((n_slots, padded(nreg, 16), 2), np.float64)
    bs = aligned((n_slots, NSB, 2), np.float64)
    rsc = aligned((n_slots, padded(nreg, 2), 2), CAUSE_DTYPE)
    bsc = aligned((n_slots, NSB, 2), CAUSE_DTYPE)
    # counted barriers: ``bq[slot, b, e, RS_*]`` / ``bqc`` (as bs/bsc) a ring of barrier b's last
    # NQ results, ``bqn[slot, b]`` its results so far; at b = NSB, e = 0 the slot's open cp.async
    # group (its latest copy result so far). The ring is read and written only when has_async
    # (bar_write's ``ring``): one entry otherwise (e = 0 still holds the open group, reset at launch)
    bq = aligned((n_slots, NSB + 1, NQ if has_async else 1, 2), np.float64)
    bqc = aligned((n_slots, NSB + 1, NQ if has_async else 1, 2), CAUSE_DTYPE)
    bqn = aligned((n_slots, NSB), np.int64)
    return Warps(sli, slf, aligned((n_slots,), np.float64), rs, rsc, bs, bsc, bq, bqc, bqn)


def new_scheds(G, L):
    """The scheduler tables (:class:`Scheds`): nothing to wake for, no warps."""
    scf = aligned((G, NUM_SCF), np.float64)
    sci = aligned((G, NUM_SCI), np.int64)
    scf[:, SCF_NEXT] = INF
    scf[:, SCF_SPLIT] = INF
    sci[:, SCI_C1] = NO_WARP
    sci[:, SCI_C2] = NO_WARP
    sci[:, SCI_RR] = L - 1
    sci[:, SCI_GREEDY] = -1
    sch_list = aligned((G, L), np.int64, -1)   # each scheduler's warp slots, oldest first (GTO order)
    # GTO: a lower bound on the ready time of every warp of the scheduler but its greedy one (-INF:
    # unknown). A warp's ready time never falls while it does not issue (its t_dep is fixed, unit
    # and pipeline-slot free times only grow), so a scan's minimum stays a bound until the greedy
    # warp changes or a warp is launched or released.
    lbo = aligned((G,), np.float64, -INF)
    sch_n = aligned((G,), np.int64)
    return Scheds(scf, sci, lbo, sch_list, sch_n)


def new_launch(n_sms, n_ctx, b_ctx_start, sm_blocks_start, sm_end):
    """The grid's launch state (:class:`Launch`): no block launched, no warp in a slot (and each
    SM's end, block count and last retirement in ``sm_end`` zeroed)."""
    B = b_ctx_start.shape[0] - 1
    ctx_slot = np.full(n_ctx, -1, np.int64)
    blk_live = np.zeros(B, np.int64)
    blk_arrived = np.zeros(B, np.int64)
    # the current barrier episode of each block: latest (arrival + its BAR latency), largest BAR
    # latency among the arrivals
    blk_bar = np.zeros((B, 2), np.float64)
    sm_next = np.ascontiguousarray(sm_blocks_start[:n_sms], dtype=np.int64).copy()
    sm_res = np.zeros(n_sms, np.int64)
    sm_end[:n_sms, :3] = 0.0
    # dynamic dealing: one queue over sm_blocks[0 : sm_blocks_start[n_sms]] (all SMs' lists)
    q_next = np.zeros(1, np.int64)
    age = np.zeros(1, np.int64)   # launch order of warps (GTO's "oldest")
    # the latest completion of anything a block issued (loads and stores alike): the block holds
    # its SM's slots until then (a warp exits only when its stores are acknowledged)
    blk_done = np.zeros(B, np.float64)
    return Launch(ctx_slot, sm_next, sm_res, q_next, age, blk_live, blk_arrived, blk_bar, blk_done,
                  np.zeros(n_sms, np.int64), np.zeros(n_sms, np.int64))


def new_tally(n_sms):
    """Per-SM stall accounting (:class:`Tally`): nothing charged, no result yet."""
    return Tally(np.zeros(n_sms, np.float64), np.zeros((n_sms, 2), np.float64), np.full((n_sms, 2), NO_WARP, np.int64),
                 np.full(n_sms, -1, np.int64))


def index_maps(n_sms, S, spp):
    """Each scheduler's SM and index in it, each SM's memory pipeline (:class:`Maps`)."""
    g = np.arange(n_sms * S, dtype=np.int64)
    return Maps(g // S, g % S, np.arange(n_sms, dtype=np.int64) // spp)


@helper
def slots_per_sm(sc, b_ctx_start, sm_blocks_start):
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


def row_contexts(c_start, c_end, n_rows):
    """The warp context of each of the ``n_rows`` first rows (replay: ``n_rows`` = all rows)."""
    r_ctx = np.zeros(n_rows, np.int64)
    if n_rows > 0:
        lens = np.maximum(c_end - c_start, 0).astype(np.int64)
        first = np.repeat(c_start.astype(np.int64) - (np.cumsum(lens) - lens), lens)
        r_ctx[first + np.arange(int(lens.sum()), dtype=np.int64)] = np.repeat(np.arange(c_start.shape[0]), lens)
    return r_ctx
