"""``EngineInput``: everything the jitted loop needs, as flat numpy arrays and scalars.

Built by :func:`teg.engine.lower.lower`; tests may build one by hand with :func:`make_input`.
Three tables:

* static instructions (``s_*``, one row per static instruction): unit, latencies, memory path,
  dependency cause, registers, control codes;
* dynamic rows (``r_*``, one per warp instruction, grouped by warp context): static index,
  shared-memory wavefronts, global transactions (CSR ``r_tx_start`` into ``tx_*``);
* warp contexts / blocks: the rows of each simulated warp, its block, the SM each block runs on
  (``sm_blocks`` lists each SM's blocks in launch order).

``replay_order`` (optional) is a global issue order to replay instead of scheduling freely
(docs/model.md §5: a baseline run with ``record_order`` gives it in ``Result.order``).

Machine and option scalars live in ``ipar`` (int64) and ``fpar`` (float64), indexed by the
``I_*`` / ``F_*`` constants below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# ---- ipar indexes
I_SMS, I_SCHED, I_SLOTS, I_RESIDENT, I_POLICY, I_DEPMODEL = 0, 1, 2, 3, 4, 5
I_SW_BANK, I_SW_COAL, I_SW_SKEW, I_SW_BW, I_SW_L1, I_SW_L2 = 6, 7, 8, 9, 10, 11
I_SW_DEPS, I_SW_UNITS, I_SW_SAME, I_SW_BAR = 12, 13, 14, 15
I_L1_SETS, I_L1_ASSOC, I_L1_LINE, I_L1_SECTOR = 16, 17, 18, 19
I_L2_SETS, I_L2_ASSOC, I_L2_LINE, I_L2_SECTOR = 20, 21, 22, 23
I_CHANNELS, I_SMS_PER_PIPE, I_PIPE_SLOTS, I_TIMELINE, I_WARP_SIZE = 24, 25, 26, 27, 28
I_RECORD_ORDER = 29
# whole-GPU memory system and block dealing (docs/model.md §1, §3):
# I_DEAL 1 = blocks are dealt dynamically from one grid-wide queue (every SM filled up to its
# occupancy breadth-first, then each next block to the SM whose slot frees first), 0 = each SM runs
# its own static list; I_L2_PARTS L2 partitions (each SM has a near one; an address has a home one);
# I_L2_PART_BYTES the home-partition interleave; I_L2_SLICES L2 slices in all (0 = no slice
# bandwidth); I_MSHR outstanding L1 misses per SM counted per cache line (0 = TEG's C_mem
# instruction slots, I_PIPE_SLOTS)
I_DEAL, I_L2_PARTS, I_L2_PART_BYTES, I_L2_SLICES, I_MSHR = 30, 31, 32, 33, 34
# I_SW_LAUNCH 0 = the next block on an SM starts one cycle after the slot frees (F_LAUNCH_LAT ignored)
I_SW_LAUNCH = 35
# I_SW_KLAUNCH 0 = no kernel launch/drain overhead (F_KERNEL_LAUNCH ignored); the jitted loop never
# reads either: :func:`teg.engine.run` adds the overhead to the loop's cycles
I_SW_KLAUNCH = 36
# instruction fetch (docs/model.md §2, "Instruction fetch"): I_SW_FETCH 0 = a perfect instruction cache (s_iline
# ignored); I_FETCH_PF lines fetched beyond a missing one (sequential prefetch)
I_SW_FETCH, I_FETCH_PF = 37, 38
# I_L1_HASH / I_L2_HASH 1 = XOR-based set index (teg.memory.cache.cache_shape ``hashed``), 0 = line mod sets
I_L1_HASH, I_L2_HASH = 39, 40
# I_SW_CONST 0 = a perfect constant cache (s_cline ignored; docs/model.md §2, "Constant cache")
I_SW_CONST = 41
# address translation (docs/model.md §3, "Address translation"): I_SW_TLB 0 = translations are free
# (the TLBs still evolve); I_TLB1_SETS..+3 / I_TLB2_SETS..+3 the L1 TLB's (per SM) and the L2 TLB's
# geometry as teg.memory.cache.cache_geometry gives it (entry = line of page bytes; 0 sets = none)
I_SW_TLB, I_TLB1_SETS, I_TLB2_SETS = 42, 43, 47
NUM_IPAR = 51
# ---- fpar indexes
F_ISSUE_INTERVAL, F_L1_LAT, F_L2_LAT, F_DRAM_LAT, F_SERVICE_PER_BYTE = 0, 1, 2, 3, 4
F_WAVEFRONT_CYCLES, F_RBAR_LAT, F_LAUNCH_LAT = 5, 6, 7
# F_L2_FAR_LAT: load-to-use latency of an L2 hit in the far partition; F_L2_SLICE_SPB: cycles one
# L2 slice needs per byte it serves
F_L2_FAR_LAT, F_L2_SLICE_SPB = 8, 9
# F_KERNEL_LAUNCH: cycles the kernel takes beyond its SMs' work (launch and drain)
F_KERNEL_LAUNCH = 10
# F_TLB2_LAT: cycles an L1 TLB miss that hits the L2 TLB adds; F_WALK_LAT: cycles a page walk adds
F_TLB2_LAT, F_WALK_LAT = 11, 12
NUM_FPAR = 13

POLICY_CODES = {"lrr": 0, "gto": 1}
DEPMODEL_CODES = {"scoreboard": 0, "controlcodes": 1}


@dataclass
class EngineInput:
    """Flat arrays for :func:`teg.engine.run` (see the module docstring for the layout)."""

    # static instructions [S]
    s_unit: np.ndarray          # int32 unit index
    s_occ: np.ndarray           # float64 cycles the instruction occupies one copy of its unit
    s_lat_exec: np.ndarray      # float64 execution latency (cycles)
    s_lat_multi: np.ndarray     # float64 issue latency, multiple warps
    s_lat_same: np.ndarray      # float64 issue latency, same warp
    s_mem: np.ndarray           # int32 MEM_NONE / MEM_SHARED / MEM_GLOBAL
    s_mem_lat: np.ndarray       # float64 conflict-free shared latency (MEM_SHARED rows)
    s_store: np.ndarray         # int32 1 = bypasses L1 (atomics resolve in L2, .cg loads), 2 = a write (write-through L1, write-back L2)
    s_barrier: np.ndarray       # int32 1 = BAR (waits for its block)
    s_depcause: np.ndarray      # int32 stall cause charged to a consumer waiting on this result
    s_dst: np.ndarray           # int16 [S, D] register ids written (-1 pad)
    s_src: np.ndarray           # int16 [S, K] register ids read (-1 pad)
    s_ctrl: np.ndarray          # int32 1 = control codes present
    s_stall: np.ndarray         # int32
    s_yield: np.ndarray         # int32
    s_wbar: np.ndarray          # int32 (7 = none)
    s_rbar: np.ndarray          # int32 (7 = none)
    s_wait: np.ndarray          # int32 6-bit mask
    s_depbar: np.ndarray        # int32 DEPBAR.LE SBb, N as b + 8 N (-1 = none)
    s_async: np.ndarray         # int32 1 = cp.async copy (joins the open group), 2 = commit (LDGDEPBAR)
    s_iline: np.ndarray         # int32 instruction-cache line of the instruction (-1 = fetch not modelled)
    s_cline: np.ndarray         # int32 constant-cache line of its c[bank][off] operand (-1 = none / not modelled)
    # units [U]
    u_occ: np.ndarray           # float64 cycles one warp instruction occupies a copy
    u_count: np.ndarray         # int32 copies
    u_per_sm: np.ndarray        # int32 1 = shared by the SM's schedulers
    # rows [N]
    r_sidx: np.ndarray          # int32
    r_wave: np.ndarray          # int32 shared wavefronts (0 = not a shared access)
    r_wave_min: np.ndarray      # int32 conflict-free wavefronts
    r_tx_start: np.ndarray      # int64 [N+1]
    r_tx_min: np.ndarray        # int32 perfect-coalescing transaction count
    r_tx_min_bytes: np.ndarray  # int64 perfect-coalescing bytes
    tx_addr: np.ndarray         # int64 [M] transaction byte address
    tx_bytes: np.ndarray        # int64 [M]
    tx_chan: np.ndarray         # int32 [M] DRAM channel (also the load behind chan_scale)
    # warp contexts [C] and blocks [B]
    c_start: np.ndarray         # int64
    c_end: np.ndarray           # int64
    c_block: np.ndarray         # int32
    b_ctx_start: np.ndarray     # int32 [B+1] contexts of block b
    sm_blocks_start: np.ndarray  # int32 [sms+1]
    sm_blocks: np.ndarray       # int32 block ids per SM in launch order
    sm_part: np.ndarray         # int32 [sms] each SM's near L2 partition (near_partitions)
    ipar: np.ndarray            # int64 [NUM_IPAR]
    fpar: np.ndarray            # float64 [NUM_FPAR]
    # schedule-preserving replay: dynamic rows in the order to issue them (None = free scheduling)
    replay_order: np.ndarray | None = None
    # descriptive (not used by the loop)
    meta: dict = field(default_factory=dict)

    @property
    def chan_scale(self) -> np.ndarray:
        """Per-channel DRAM service-time scale the engine applies when ``channel_skew`` is removed
        (float64 ``[channels]``, :func:`teg.memory.channels.balance_scale` of ``tx_chan``): a channel
        loaded above the mean serves at the average load's pace, the others are unchanged. The core
        derives it from ``tx_chan`` itself, so switch copies (:func:`with_switches`) and replays
        need no second lowering; with ``channel_skew`` modelled every scale is 1."""
        from teg.memory.channels import balance_scale

        return balance_scale(self.tx_chan, max(int(self.ipar[I_CHANNELS]), 1))

    @property
    def num_rows(self) -> int:
        return int(self.r_sidx.shape[0])

    @property
    def num_static(self) -> int:
        return int(self.s_unit.shape[0])


def make_input(*, lat_exec, lat_multi, lat_same, unit=None, dst=None, src=None, mem=None,
               mem_lat=None, store=None, barrier=None, depcause=None, ctrl=None, units_occ=(1.0,),
               units_count=(1,), units_per_sm=(0,), rows_per_warp=None, warps_per_block=None,
               r_wave=None, r_wave_min=None, tx=None, tx_min=None, sms=1, schedulers=1, slots=64, resident=1 << 20,
               blocks_sm=None, issue_interval=1.0, policy="gto", dependency_model="scoreboard",
               switches=None, l1=None, l2=None, dram_latency=400.0, channels=1,
               service_per_byte=0.0, sms_per_pipeline=1, pipe_slots=0, wavefront_cycles=0.0,
               rbar_latency=1.0, launch_latency=0.0, kernel_launch=0.0, record_timeline=True, record_order=False,
               deal=False, l2_partitions=1, l2_partition_bytes=8192, l2_far_latency=None, l2_partition_sms=None,
               l2_slices=0,
               l2_slice_bytes_per_clk=0.0, mshr_lines=0, iline=None, fetch_prefetch=0, cline=None,
               hashed=(False, False), tlb=None,
               meta=None) -> EngineInput:
    """Build an :class:`EngineInput` by hand (tests, synthetic experiments).

    ``lat_*``, ``unit``, ``dst``/``src`` (lists of register-id lists) … describe the static
    instructions; ``rows_per_warp`` is a list (one per warp) of static-index lists; warps are
    grouped into blocks of ``warps_per_block``; ``tx`` is a list (one per row) of
    ``(addr, nbytes, channel)`` lists (``tx_min``: the perfect-coalescing count per row, default all);
    ``blocks_sm`` gives each block's SM (default round-robin); ``deal=True`` instead deals the
    blocks dynamically (one grid-wide queue, :mod:`teg.engine.core`). ``l2_partitions`` /
    ``l2_partition_bytes`` / ``l2_far_latency`` describe near/far L2 partitions (``l2`` is then one
    partition's geometry; ``l2_partition_sms``: the SMs near each, default an even split), ``l2_slices`` / ``l2_slice_bytes_per_clk`` the L2 slices' bandwidth,
    ``mshr_lines`` the outstanding L1-miss lines per SM (0: ``pipe_slots`` C_mem slots).
    ``iline`` gives each static instruction's instruction-cache line (default: -1, a perfect
    instruction cache), ``fetch_prefetch`` the lines fetched beyond a missing one; a missing line
    takes ``dram_latency`` on its first fetch in the GPU, the L2 latency (``l2[4]``) after.
    ``cline`` gives each static instruction's constant-cache line (default -1: none); a line an SM
    has not read takes the L2 latency. ``hashed`` = (L1, L2): XOR-based set indexes instead of
    line mod sets. ``tlb`` = (page bytes, L1 TLB entries, L2 TLB entry bytes, L2 TLB entries, L2 TLB
    hit cycles, page-walk cycles): address translation of accesses past L1 (default: none).
    ``switches`` maps mechanism names of :class:`teg.engine.Options` to booleans. ``ctrl`` holds
    per-static lists of control-code fields (``ctrl`` present, ``stall``, ``yield``, ``wbar``,
    ``rbar``, ``wait``), ``depbar`` / ``depbar_n`` (``DEPBAR.LE SBb, N``) and ``async`` (1 = cp.async
    copy, 2 = group commit).
    """
    from teg.engine.codes import DEP_BASE

    S = len(lat_exec)
    f64 = lambda x, d=0.0: np.asarray(x if x is not None else [d] * S, np.float64)  # noqa: E731
    i32 = lambda x, d=0: np.asarray(x if x is not None else [d] * S, np.int32)  # noqa: E731

    def regs(lists, width):
        a = np.full((S, width), -1, np.int16)
        for i, lst in enumerate(lists or []):
            a[i, :len(lst)] = lst
        return a

    rows_per_warp = rows_per_warp if rows_per_warp is not None else [list(range(S))]
    if r_wave is None and mem is not None:      # shared rows default to one (conflict-free) wavefront
        r_wave = [1 if mem[s] == 1 else 0 for w in rows_per_warp for s in w]
    W = len(rows_per_warp)
    wpb = warps_per_block or W
    r_sidx = np.asarray([s for w in rows_per_warp for s in w], np.int32)
    N = r_sidx.shape[0]
    lens = np.asarray([len(w) for w in rows_per_warp], np.int64)
    c_start = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    c_end = (c_start + lens).astype(np.int64)
    B = (W + wpb - 1) // wpb
    c_block = (np.arange(W) // wpb).astype(np.int32)
    b_ctx_start = np.minimum(np.arange(B + 1) * wpb, W).astype(np.int32)
    bsm = np.asarray(blocks_sm if blocks_sm is not None else [b % sms for b in range(B)], np.int32)
    order = np.argsort(bsm, kind="stable").astype(np.int32)
    sm_blocks_start = np.searchsorted(bsm[order], np.arange(sms + 1)).astype(np.int32)
    tx = tx if tx is not None else [[] for _ in range(N)]
    r_tx_start = np.concatenate([[0], np.cumsum([len(t) for t in tx])]).astype(np.int64)
    flat = [x for t in tx for x in t]
    tx_addr = np.asarray([x[0] for x in flat], np.int64)
    tx_bytes = np.asarray([x[1] for x in flat], np.int64)
    tx_chan = np.asarray([x[2] for x in flat], np.int32)
    r_tx_min = np.asarray(tx_min if tx_min is not None else [len(t) for t in tx], np.int32)
    r_tx_min_bytes = np.asarray([sum(x[1] for x in t[:m]) for t, m in zip(tx, r_tx_min)], np.int64)
    sw = {"bank_conflicts": True, "coalescing": True, "channel_skew": True, "bandwidth": True,
          "l1_misses": True, "l2_misses": True, "dependencies": True, "unit_throughput": True,
          "same_warp_penalty": True, "barriers": True, "block_launch": True, "kernel_launch": True,
          "instruction_fetch": True, "constant_cache": True, "tlb": True, **(switches or {})}
    ipar = np.zeros(NUM_IPAR, np.int64)
    fpar = np.zeros(NUM_FPAR, np.float64)
    ipar[I_SMS], ipar[I_SCHED], ipar[I_SLOTS], ipar[I_RESIDENT] = sms, schedulers, slots, resident
    ipar[I_POLICY], ipar[I_DEPMODEL] = POLICY_CODES[policy], DEPMODEL_CODES[dependency_model]
    for name, idx in SWITCH_INDEX.items():
        ipar[idx] = int(bool(sw[name]))
    for base, geo in ((I_L1_SETS, l1), (I_L2_SETS, l2)):
        if geo is not None:
            ipar[base:base + 4] = geo[:4]
    ipar[I_CHANNELS], ipar[I_SMS_PER_PIPE], ipar[I_PIPE_SLOTS] = channels, sms_per_pipeline, pipe_slots
    ipar[I_TIMELINE], ipar[I_WARP_SIZE] = int(record_timeline), 32
    ipar[I_RECORD_ORDER] = int(record_order)
    ipar[I_DEAL], ipar[I_L2_PARTS], ipar[I_L2_PART_BYTES] = int(deal), l2_partitions, l2_partition_bytes
    ipar[I_L2_SLICES], ipar[I_MSHR] = l2_slices, mshr_lines
    ipar[I_FETCH_PF] = fetch_prefetch
    ipar[I_L1_HASH], ipar[I_L2_HASH] = int(hashed[0]), int(hashed[1])
    fpar[F_L2_FAR_LAT] = l2_far_latency if l2_far_latency is not None else (l2[4] if l2 is not None else 0.0)
    fpar[F_L2_SLICE_SPB] = 1.0 / l2_slice_bytes_per_clk if l2_slice_bytes_per_clk > 0 else 0.0
    fpar[F_ISSUE_INTERVAL] = issue_interval
    fpar[F_L1_LAT] = l1[4] if l1 is not None else 0.0
    fpar[F_L2_LAT] = l2[4] if l2 is not None else 0.0
    fpar[F_DRAM_LAT], fpar[F_SERVICE_PER_BYTE] = dram_latency, service_per_byte
    fpar[F_WAVEFRONT_CYCLES], fpar[F_RBAR_LAT], fpar[F_LAUNCH_LAT] = wavefront_cycles, rbar_latency, launch_latency
    fpar[F_KERNEL_LAUNCH] = kernel_launch
    if tlb is not None:
        set_tlb(ipar, fpar, *tlb)
    ctrl = ctrl or {}
    return EngineInput(
        s_unit=i32(unit), s_occ=np.asarray(units_occ, np.float64)[i32(unit)], s_lat_exec=f64(lat_exec), s_lat_multi=f64(lat_multi), s_lat_same=f64(lat_same),
        s_mem=i32(mem), s_mem_lat=f64(mem_lat), s_store=i32(store), s_barrier=i32(barrier),
        s_depcause=i32(depcause, DEP_BASE + 1), s_dst=regs(dst, 8), s_src=regs(src, 16),
        s_ctrl=i32(ctrl.get("ctrl")), s_stall=i32(ctrl.get("stall")), s_yield=i32(ctrl.get("yield"), 1),
        s_wbar=i32(ctrl.get("wbar"), 7), s_rbar=i32(ctrl.get("rbar"), 7), s_wait=i32(ctrl.get("wait")),
        s_depbar=np.where(i32(ctrl.get("depbar"), -1) >= 0,
                          i32(ctrl.get("depbar"), -1) + 8 * i32(ctrl.get("depbar_n")), -1).astype(np.int32),
        s_async=i32(ctrl.get("async")), s_iline=i32(iline, -1), s_cline=i32(cline, -1),
        u_occ=np.asarray(units_occ, np.float64), u_count=np.asarray(units_count, np.int32),
        u_per_sm=np.asarray(units_per_sm, np.int32),
        r_sidx=r_sidx, r_wave=np.asarray(r_wave if r_wave is not None else [0] * N, np.int32),
        r_wave_min=np.asarray(r_wave_min if r_wave_min is not None else (r_wave if r_wave is not None else [0] * N), np.int32),
        r_tx_start=r_tx_start, r_tx_min=r_tx_min, r_tx_min_bytes=r_tx_min_bytes,
        tx_addr=tx_addr, tx_bytes=tx_bytes, tx_chan=tx_chan,
        c_start=c_start, c_end=c_end, c_block=c_block, b_ctx_start=b_ctx_start,
        sm_blocks_start=sm_blocks_start, sm_blocks=order, sm_part=near_partitions(sms, l2_partitions, l2_partition_sms),
        ipar=ipar, fpar=fpar, meta=dict(meta or {}))


def near_partitions(n_sms: int, parts: int, counts=None) -> np.ndarray:
    """Each SM's near L2 partition (int32 ``[n_sms]``), in SM index order: ``counts[p]`` SMs near
    partition p (the table's ``memory.l2_partition_sms``: GTC21's A100 62 / 46), scaled to
    ``n_sms`` when they add up to another number (largest remainders; a table derived with fewer
    SMs keeps the proportions); without counts an even split (SM s near partition
    ⌊s · parts / n_sms⌋)."""
    if counts is None:
        return (np.arange(n_sms, dtype=np.int64) * parts // max(n_sms, 1)).astype(np.int32)
    if len(counts) != parts or sum(counts) <= 0:
        raise ValueError(f"L2 partition SM counts {list(counts)}: need one positive count per partition ({parts})")
    exact = np.asarray(counts, np.float64) * n_sms / sum(counts)
    n = np.floor(exact).astype(np.int64)
    n[np.argsort(-(exact - n), kind="stable")[:n_sms - int(n.sum())]] += 1
    return np.repeat(np.arange(parts, dtype=np.int32), n)


def set_tlb(ipar, fpar, page_bytes, l1_entries, l2_page_bytes, l2_entries, l2_latency, walk_latency) -> None:
    """Write address translation's parameters into ``ipar`` / ``fpar``: each TLB level is a fully
    associative cache (one set of ``entries`` ways) whose "line" is the page one entry translates."""
    from teg.memory.cache import cache_geometry
    ipar[I_TLB1_SETS:I_TLB1_SETS + 4] = cache_geometry(l1_entries * page_bytes, page_bytes, page_bytes, l1_entries)
    ipar[I_TLB2_SETS:I_TLB2_SETS + 4] = cache_geometry(l2_entries * l2_page_bytes, l2_page_bytes, l2_page_bytes,
                                                       l2_entries)
    fpar[F_TLB2_LAT], fpar[F_WALK_LAT] = l2_latency, walk_latency


SWITCH_INDEX = {"bank_conflicts": I_SW_BANK, "coalescing": I_SW_COAL, "channel_skew": I_SW_SKEW,
                "bandwidth": I_SW_BW, "l1_misses": I_SW_L1, "l2_misses": I_SW_L2, "dependencies": I_SW_DEPS,
                "unit_throughput": I_SW_UNITS, "same_warp_penalty": I_SW_SAME, "barriers": I_SW_BAR,
                "block_launch": I_SW_LAUNCH, "kernel_launch": I_SW_KLAUNCH, "instruction_fetch": I_SW_FETCH,
                "constant_cache": I_SW_CONST, "tlb": I_SW_TLB}


def with_switches(inp: EngineInput, **switches: bool) -> EngineInput:
    """A shallow copy of ``inp`` with mechanism switches changed (the arrays are shared; only
    ``ipar`` is copied) — what-ifs need no second lowering."""
    from dataclasses import replace

    ipar = inp.ipar.copy()
    for name, on in switches.items():
        if name not in SWITCH_INDEX:
            raise KeyError(f"unknown mechanism {name!r}")
        ipar[SWITCH_INDEX[name]] = int(bool(on))
    return replace(inp, ipar=ipar)


def with_replay(inp: EngineInput, order) -> EngineInput:
    """A shallow copy of ``inp`` that replays the issue order ``order`` (``Result.order`` of a run
    with ``record_order``; ``None`` = schedule freely again). :func:`teg.engine.run` checks that it
    is a permutation of the rows keeping each warp's rows in program order."""
    from dataclasses import replace

    return replace(inp, replay_order=None if order is None else np.ascontiguousarray(order, np.int64))


def with_record_order(inp: EngineInput, on: bool = True) -> EngineInput:
    """A shallow copy of ``inp`` whose run records its global issue order (``Result.order``)."""
    from dataclasses import replace

    ipar = inp.ipar.copy()
    ipar[I_RECORD_ORDER] = int(bool(on))
    return replace(inp, ipar=ipar)
