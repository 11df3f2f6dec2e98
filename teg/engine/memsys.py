"""The memory system (docs/model.md §3): the global-memory path of an issue — each transaction
through its SM's L1, an MSHR entry or memory-pipeline slot, address translation, its L2 slice, the
L2 (near and far partitions) and a DRAM channel's queue — and the tables it reads and writes.
Cache hits depend on the order of accesses, so the caches are simulated here, in issue order;
the order-independent parts (coalescing, banks, channels, cache geometry) are lowered before the
loop (:mod:`teg.memory`).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from teg.engine.codes import (C_CHW, C_DRAM, C_DRAM_B, C_G_ACC, C_L1H, C_L1M, C_L2H, C_L2M, C_TX, CACHE_MISS,
                              CHANNEL_QUEUE, L2_QUEUE, MEM_PIPE, TLB_MISS)
from teg.engine.jitlib import cold, heap_replace_top, helper, hot, max2, min2, nonneg, prefetch
from teg.engine.state import aligned
from teg.engine.records import REC_ROWS, TX_CHAN, TX_SLICE, record_level
from teg.memory.cache import _log2, cache_access_dirty, cache_access_timed, cache_shape
from teg.memory.channels import balance_scale

PREFETCH_TX = 16        # transactions ahead of a global access whose data is prefetched

# The memory system's geometry, latencies and switches (built by mem_config from the run's scalars)
MemConfig = namedtuple("MemConfig", ("sw_coal", "sw_l1", "sw_l2", "sw_bw", "sw_skew", "has_l1", "has_l2", "l1_shape",
                                     "l2_shape", "channels", "n_parts", "part_bytes", "n_slices", "slices_pp",
                                     "slices_pc", "slice_line", "slice_spb", "miss", "spp", "pipe_slots",
                                     "pipe_limited", "l1_lat", "l2_lat", "l2_far_lat", "dram_lat", "spb", "record",
                                     "tlb", "store_cps", "dram"))
# address translation: whether the machine has it, its switch, the two TLB levels' geometries (teg.memory.cache.cache_shape) and
# the cycles an L2 TLB hit and a page walk add; store_cps: the cycles a global write holds its SM's
# store path per sector (0: not modelled, or the store_path switch off)
TlbConfig = namedtuple("TlbConfig", ("present", "on", "l1_shape", "l2_shape", "l2_lat", "walk_lat"))
# the L1's miss stage: MSHR entries per SM (0: C_mem slots instead), the line an entry and a request
# to L2 cover, and the cycles the stage spends on each request (0: free)
MissStage = namedtuple("MissStage", ("mshr", "line", "req_cyc"))
# DRAM read/write turnaround: modelled (the table has it), its switch on (and the bandwidth's),
# the bytes of writes per drained batch, the data-bus bubbles of a read->write and a write->read
# switch in core cycles
TurnConfig = namedtuple("TurnConfig", ("has", "on", "batch", "rtw", "wtr"))
# DRAM row buffers: modelled (the table has them), row misses charged (the dram_row_misses switch),
# banks per channel, bytes per bank row, the cycles a row miss adds to a hit, the channel interleave
# and the bytes one interleave round covers (interleave x channels)
RowConfig = namedtuple("RowConfig", ("has", "on", "banks", "row_bytes", "miss", "inter", "span"))
# the DRAM timing beyond latency and bandwidth: read/write turnaround and row buffers
DramConfig = namedtuple("DramConfig", ("turn", "rows"))


# Its state (built by new_memory): the memory pipelines' slot heaps and slots per pipeline, the DRAM
# channels' free times and service scales, each channel's bus direction (0 reads, 1 writes) and
# the write bytes it has buffered while serving reads, the L1s and L2 partitions with their lines' ready
# times (and the L2 lines' written sectors), each SM's near L2 partition, the L2 slices' free
# times, the two TLB levels, each memory pipeline's store path free time (one SM per pipeline
# on the machines that model it), and each DRAM channel's bus direction and buffered write bytes,
# and each DRAM bank's open row (-1: none yet).
Memory = namedtuple("Memory", ("heap", "pipe_n", "chan_free", "chan_scale", "chan_dir", "chan_wbuf", "l1_state", "l1_ready", "l2_state",
                               "l2_ready", "l2_dirty", "sm_part", "slice_free", "tlb1_state", "tlb1_ready",
                               "tlb2_state", "tlb2_ready", "wport", "open_row"))


@helper
def mem_config(sc):
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
    # L2 requests: the cycles the L1's miss stage spends on each (0: not modelled, or switched off)
    req_cyc = 0.0
    if sc.l2_requests and l1_sets > 0:
        req_cyc = sc.l2_request_cycles
    miss = MissStage(mshr, l1_line if l1_line > 0 else (l2_line if l2_line > 0 else 128), req_cyc)
    tlb = TlbConfig(has_tlb, sc.tlb, cache_shape(max(t1[0], 1), t1[1], t1[2], t1[3]),
                    cache_shape(max(t2[0], 1), t2[1], t2[2], t2[3]), sc.tlb2_latency, sc.walk_latency)
    # the write-through store path: cycles per sector (0: not modelled or switched off)
    store_cps = 0.0
    if sc.store_path:
        store_cps = sc.store_cycles_per_sector
    has_turn = sc.dram_write_batch > 0.0
    turn_on = sc.dram_turnaround and sc.bandwidth
    turn = TurnConfig(has_turn, turn_on, sc.dram_write_batch, sc.dram_rtw_cycles, sc.dram_wtr_cycles)
    has_rows = sc.dram_banks > 0 and sc.dram_row_bytes > 0 and sc.dram_interleave > 0
    rows = RowConfig(has_rows, sc.dram_row_misses, max(sc.dram_banks, 1), max(sc.dram_row_bytes, 1),
                     sc.dram_row_miss_cycles, max(sc.dram_interleave, 1),
                     max(sc.dram_interleave, 1) * max(sc.channels, 1))
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
        miss,
        max(sc.sms_per_pipeline, 1) if mshr == 0 else 1, pipe_slots, pipe_slots > 0,
        sc.l1_latency, sc.l2_latency, sc.l2_far_latency, sc.dram_latency, sc.dram_cycles_per_byte,
        (sc.records & REC_ROWS) != 0, tlb, store_cps, DramConfig(turn, rows))


def _empty_caches(caches, shape):
    """:func:`teg.memory.cache.cache_new`'s empty state, allocated by numpy: its zeros are
    untouched pages until the loop first uses a set (a whole GPU's L1s and L2 are megabytes)."""
    return aligned((caches * shape[0], shape[1]), np.int64)


def new_memory(mc, n_sms, tx_chan, sm_part_in):
    """The memory system's state (:class:`Memory`), empty (numpy, outside the jitted code): the
    memory pipelines' slot heaps (and slots per pipeline), DRAM channels, L1s and L2 partitions
    with their lines' ready times, each SM's near L2 partition, the L2 slices."""
    spp, pipe_slots, channels, n_parts = mc.spp, mc.pipe_slots, mc.channels, mc.n_parts
    n_pipes = (n_sms + spp - 1) // spp
    pipe_n = np.zeros(n_pipes, np.int64)
    maxslots = 1
    if pipe_slots > 0:
        for p in range(n_pipes):
            in_pipe = min(spp, n_sms - p * spp)
            pipe_n[p] = max(1, (pipe_slots * in_pipe) // spp)
            if pipe_n[p] > maxslots:
                maxslots = int(pipe_n[p])
    heap = np.zeros((n_pipes, maxslots), np.float64)
    chan_free = np.zeros(channels, np.float64)
    # channel skew removed: each channel's service time scaled to the average load (balance_scale)
    if mc.sw_skew:
        chan_scale = np.ones(channels, np.float64)
    else:
        chan_scale = balance_scale(tx_chan, channels)
    chan_dir = np.zeros(channels, np.int64)
    chan_wbuf = np.zeros(channels, np.float64)
    l1_state = _empty_caches(n_sms, mc.l1_shape)
    # per way, the cycle its line's data is there (a hit on a line still being filled waits for it)
    l1_ready = aligned(l1_state.shape, np.float64)
    # L2: one cache per partition (its geometry is one partition's); each SM has a near partition
    # (``sm_part_in``, from the lowering), each address a home partition (interleave part_bytes)
    l2_state = _empty_caches(n_parts, mc.l2_shape)
    l2_ready = aligned(l2_state.shape, np.float64)
    # per way, the sectors written since the line came in (the L2 is write-back: docs/model.md §3)
    l2_dirty = aligned(l2_state.shape, np.int64)
    sm_part = sm_part_in.astype(np.int64)
    slice_free = np.zeros(max(mc.n_slices, 1), np.float64)
    # address translation: an L1 TLB per SM and one L2 TLB, cold (empty stand-ins when not modelled)
    tlb1_state = _empty_caches(n_sms if mc.tlb.present else 1, mc.tlb.l1_shape)
    tlb1_ready = aligned(tlb1_state.shape, np.float64)
    tlb2_state = _empty_caches(1, mc.tlb.l2_shape)
    tlb2_ready = aligned(tlb2_state.shape, np.float64)
    wport = np.zeros(n_pipes, np.float64)
    rc = mc.dram.rows
    open_row = np.full((channels, rc.banks if rc.has else 1), -1, np.int64)
    return Memory(heap, pipe_n, chan_free, chan_scale, chan_dir, chan_wbuf, l1_state, l1_ready, l2_state, l2_ready, l2_dirty, sm_part,
                  slice_free, tlb1_state, tlb1_ready, tlb2_state, tlb2_ready, wport, open_row)


@cold
def tlb_fill(mem, mc, t, addr):
    """When the translation of ``addr``, missing from an SM's L1 TLB at ``t``, is there: after the
    L2 TLB's latency on an L2 TLB hit (no earlier than that entry's own walk, if it is still under
    way), else after a page walk, whose result the L2 TLB then holds."""
    tc = mc.tlb
    hit, row, ready = cache_access_timed(mem.tlb2_state, mem.tlb2_ready, 0, tc.l2_shape, addr)
    if hit:
        return max2(t + tc.l2_lat, ready)
    done = t + tc.walk_lat
    mem.tlb2_ready[row, 0] = done
    return done


@hot
def translate(mem, mc, sm, t, addr):
    """Address translation (docs/model.md §3): the cycle the translation of byte ``addr`` is
    available to ``sm`` for an access past its L1 at ``t`` — ``t`` on an L1 TLB hit (or the time
    an earlier miss of the same page on this SM brings it: requests merge), else the L2 TLB's or
    the page walk's time (:func:`tlb_fill`). The TLBs are LRU caches of page translations."""
    hit, row, ready = cache_access_timed(mem.tlb1_state, mem.tlb1_ready, sm, mc.tlb.l1_shape, addr)
    if hit:
        return max2(t, ready)
    done = tlb_fill(mem, mc, t, addr)
    mem.tlb1_ready[row, 0] = done
    return done


@hot
def store_path(mem, mc, rows, row, pp, t):
    """The write-through store path (docs/model.md §3, "Store path"): a global write issued at ``t``
    on memory pipeline ``pp`` (its SM) holds the path ``store_cps`` cycles per 32 B sector it sends
    to L2 (its transactions); the SM's next write may issue once the path is free
    (:func:`teg.engine.schedulers.ready_of`)."""
    nsec = rows.r_tx_start[row + 1] - nonneg(rows.r_tx_start[row])
    if not mc.sw_coal:
        nsec = min2(nsec, rows.r_tx_min[row])     # perfect coalescing: the fewest sectors
    mem.wport[pp] = max2(t, mem.wport[pp]) + nsec * mc.store_cps


@hot
def turnaround(mem, tc, ch, nbytes, write):
    """DRAM read/write turnaround (docs/model.md §3): the cycles channel ``ch``'s data bus idles
    before serving ``nbytes`` of a read (``write`` False) or a write. A channel serves reads and
    buffers writes; when the buffer holds ``tc.batch`` bytes it drains them in one batch, turning
    its bus to writes (``tc.rtw``: the transaction that fills the batch waits for it), and the first
    read after that turns it back (``tc.wtr``). Writes that arrive while the bus is turned to writes
    join the batch under way. The direction state evolves alike with the switch on or off (the
    bubbles are then 0); the caller adds the bubble to the channel's free time, so a turn that fits
    in an idle gap costs nothing."""
    if write:
        if mem.chan_dir[ch] == 1:
            return 0.0
        mem.chan_wbuf[ch] += nbytes
        if mem.chan_wbuf[ch] < tc.batch:
            return 0.0
        mem.chan_wbuf[ch] = 0.0
        mem.chan_dir[ch] = 1
        return tc.rtw if tc.on else 0.0
    if mem.chan_dir[ch] == 0:
        return 0.0
    mem.chan_dir[ch] = 0
    return tc.wtr if tc.on else 0.0


@hot
def row_miss(mem, rc, ch, addr):
    """DRAM row buffers (docs/model.md §3, "Row buffers"): the cycles a DRAM access to byte ``addr``
    on channel ``ch`` adds for a row miss — ``rc.miss`` when its bank's open row is another one
    (or none), 0 on a row hit or with the ``dram_row_misses`` switch off — and the row it leaves
    open. The channel-local address (the channel's interleave granules in order) is cut into pages
    of ``row_bytes``; page ``p`` is row ``p // banks`` of bank ``fold(p)``, the XOR of its
    ``banks``-sized digits (a permutation-based bank interleave: consecutive pages of one row go
    to distinct banks, and pages a power-of-two distance apart — two arrays' same elements — do
    not all alias one bank). The open rows evolve alike with the switch on or off."""
    loc = (addr // rc.span) * rc.inter + addr % rc.inter
    page = loc // rc.row_bytes
    row = page // rc.banks
    bank = 0
    x = page
    while x > 0:
        bank ^= x % rc.banks
        x //= rc.banks
    bank %= rc.banks
    hit = mem.open_row[ch, bank] == row
    mem.open_row[ch, bank] = row
    if hit or not rc.on:
        return 0.0
    return rc.miss


@hot
def global_access(mem, mc, rows, counters, tx_rec, t, row, sm, pp, store, depcause, l1x):
    """The global access of row ``row``, issued at ``t`` on ``sm`` (memory pipeline ``pp``; ``store``
    and ``depcause`` its instruction's X_STORE and X_DEPCAUSE): each transaction through L1, an
    MSHR entry or memory-pipeline slot, its L2 slice, the L2 and a DRAM channel; an L1 hit's data
    come ``l1x`` cycles later than the latency (the access's further wavefronts). The access's
    requests to L2 (one per cache line past L1: a load's line with sectors to fetch, every line of
    a store, atomic or L2-only load) leave the L1's miss stage in order, ``mc.miss.req_cyc`` cycles
    apart, each no earlier than its MSHR entry and translation allow (docs/model.md §3, "L2
    requests"). Returns ``(done, base, c1, c2, n_req)``: when its last result is back, the same
    without queueing (the split), the causes a consumer waiting on it is charged, and its requests
    to L2 (counted only where ``req_cyc`` is modelled; the caller holds the L1 pipeline
    ``n_req·req_cyc`` longer)."""
    heap, pipe_n, chan_free, chan_scale = mem.heap, mem.pipe_n, mem.chan_free, mem.chan_scale
    l1_state, l1_ready, l2_state, l2_ready = mem.l1_state, mem.l1_ready, mem.l2_state, mem.l2_ready
    l2_dirty, slice_free = mem.l2_dirty, mem.slice_free
    r_tx_start, tx_addr, tx_bytes, tx_chan = rows.r_tx_start, rows.tx_addr, rows.tx_bytes, rows.tx_chan
    sw_coal, sw_l1, sw_l2, sw_bw = mc.sw_coal, mc.sw_l1, mc.sw_l2, mc.sw_bw
    has_l1, has_l2, l1_shape, l2_shape = mc.has_l1, mc.has_l2, mc.l1_shape, mc.l2_shape
    n_parts, part_bytes, mshr, mshr_line = mc.n_parts, mc.part_bytes, mc.miss.mshr, mc.miss.line
    n_slices, slices_pp, slices_pc = mc.n_slices, mc.slices_pp, mc.slices_pc
    slice_line, slice_spb = mc.slice_line, mc.slice_spb
    l1_lat, l2_lat, l2_far_lat, dram_lat, spb = mc.l1_lat, mc.l2_lat, mc.l2_far_lat, mc.dram_lat, mc.spb
    k0 = nonneg(r_tx_start[row])
    ntx = r_tx_start[row + 1] - k0
    kp = k0 + PREFETCH_TX
    if kp < tx_addr.shape[0]:
        prefetch(tx_addr, kp)
        prefetch(tx_bytes, kp)
        prefetch(tx_chan, kp)
    nb_each = 0.0
    if not sw_coal:
        ntx = min2(ntx, rows.r_tx_min[row])
        if ntx > 0:
            nb_each = rows.r_tx_min_bytes[row] / ntx
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
    req_cyc = mc.miss.req_cyc
    req_line = -1           # cache line of the last request to L2 (transactions come sorted)
    req_sent = t            # when it left the miss stage
    n_req = 0
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
        evicted = 0             # written sectors of the lines this access pushed out of the L2
        if has_l2 and not l1_hit:
            l2_hit, l2_row, l2_rt, ev = cache_access_dirty(l2_state, l2_ready, l2_dirty, near, l2_shape, addr)
            evicted |= ev
            near_hit = l2_hit
            if n_parts > 1:
                home = (addr // part_bytes) % n_parts
                if home != near and not l2_hit:
                    far = True
                    serve = home
                    l2_hit, h_row, l2_rt, ev = cache_access_dirty(l2_state, l2_ready, l2_dirty, home, l2_shape,
                                                                  addr)
                    evicted = ev if ev != 0 else evicted
            if is_write and l2_hit:
                # a write that hits a line makes its sector dirty: written back when the line
                # leaves (a write that misses pays its channel now, below)
                wrow = l2_row if near_hit else h_row
                l2_dirty[wrow, 0] |= 1 << ((addr >> l2_shape[3]) & (l2_shape[5] - 1))
        if j >= k0 + ntx:
            # perfect coalescing: surplus transactions cost nothing, but the DRAM rows they would
            # open evolve as with coalescing modelled (as the caches do)
            if mc.dram.rows.has and not l1_hit and not (has_l2 and l2_hit):
                row_miss(mem, mc.dram.rows, nonneg(tx_chan[j]), addr)
            continue
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
        s_req = t
        # MSHR mode: each cache line past L1 holds one of the SM's entries until its
        # last sector is back; its requests leave when an entry is free
        if mshr > 0:
            ln = addr // mshr_line
            if ln != line:
                if line >= 0:
                    heap_replace_top(heap, pp, pipe_n[pp], line_done)
                line = ln
                line_done = t
                mshr_free = heap[pp, 0]
            if mshr_free > s_req:
                s_req = mshr_free
        qw = s_req - t          # waiting for the miss stage or an MSHR entry
        qc = MEM_PIPE
        if mc.tlb.present:
            # the L2 is physically addressed: an access past L1 needs its page's translation
            tr = translate(mem, mc, sm, t, addr)
            if mc.tlb.on and tr > s_req:
                if tr - t > qw:
                    qc = TLB_MISS
                    qw = tr - t
                s_req = tr
        if req_cyc > 0.0:
            # L2 requests: one per cache line with sectors past L1 (its sectors travel in one
            # request); the miss stage sends them in order, req_cyc apart, each once it may leave
            rl = addr // mshr_line
            if rl != req_line:
                req_line = rl
                n_req += 1
                if n_req > 1 and req_sent + req_cyc > s_req:
                    # charged to the miss stage when it holds the request longer than what came before
                    if req_sent + req_cyc - s_req >= qw:
                        qc = MEM_PIPE
                    s_req = req_sent + req_cyc
                req_sent = s_req
            elif req_sent > s_req:
                s_req = req_sent
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
                    slice_free[sn] = max2(slice_free[sn], s1) + nb * slice_spb
            if s1 - s_req > 0.0:
                qc = L2_QUEUE if s1 - s_req >= qw else qc
            if mc.record:
                record_level(tx_rec, j, TX_SLICE, sl, s_req, s1, max2(slice_free[sl], s1))
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
            ch = nonneg(tx_chan[j])
            s0 = s_req
            free = chan_free[ch]
            if mc.dram.turn.has:
                # a write past the L2 is a DRAM write; every other DRAM trip reads
                free += turnaround(mem, mc.dram.turn, ch, nb, is_write and has_l2)
            # a row miss adds precharge + activate to a row hit (dram_lat is the row-miss latency);
            # a write opens its row too, but its acknowledgement comes from the L2
            row_cut = 0.0
            if mc.dram.rows.has:
                row_cut = mc.dram.rows.miss - row_miss(mem, mc.dram.rows, ch, addr)
            if free > s0:
                s0 = free
                qc = CHANNEL_QUEUE if s0 - s_req >= s_req - t else qc
            cq = s0 - t
            if sw_bw:
                chan_free[ch] = s0 + nb * spb * chan_scale[ch]
            if mc.record:
                record_level(tx_rec, j, TX_CHAN, ch, s_req, s0, max2(chan_free[ch], s0))
            if evicted != 0:
                # write-back: the dirty sectors of the line this miss replaced go to DRAM behind
                # it; no one waits for them, but the channel is busy as long (charged to this
                # transaction's channel: the lines' channels are spread alike by the hash)
                wb = 0
                while evicted != 0:
                    wb += evicted & 1
                    evicted >>= 1
                wb_bytes = wb * (1 << l2_shape[3])
                if mc.dram.turn.has:
                    # the write-back is a write: it may fill the channel's batch (the bus turns)
                    chan_free[ch] += turnaround(mem, mc.dram.turn, ch, float(wb_bytes), True)
                if sw_bw:
                    chan_free[ch] += wb_bytes * spb * chan_scale[ch]
                counters[C_DRAM_B] += np.int64(wb_bytes)
            if is_write and has_l2:
                # the L2 is write-back: a write is acknowledged by its L2 slice once the
                # channel can take the write-back (no DRAM round trip for the ack)
                d = s_req + (l2_far_lat if far else l2_lat)
                if s0 > d:
                    d = s0
            else:
                # a far home partition adds its extra crossbar latency to the DRAM trip
                d = s0 + dram_lat - row_cut + (l2_far_lat - l2_lat if far else 0.0)
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
        heap_replace_top(heap, pp, pipe_n[pp], line_done)
    # C_mem: the instruction holds one memory-pipeline slot until its last transaction is back
    if mc.pipe_limited and beyond_l1 and mshr == 0:
        heap_replace_top(heap, pp, pipe_n[pp], done)
    if missed:
        c1 = CACHE_MISS if (has_l1 or has_l2) else depcause
    return done, base, c1, c2, n_req
