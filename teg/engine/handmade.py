"""Hand-built engine inputs, for tests and synthetic experiments: :func:`make_input` describes a
kernel instruction by instruction and warp by warp, without SASS, trace or machine table, so that
the expected cycles follow from the model's equations (docs/model.md). Not used by teg's own
pipeline (:func:`teg.engine.lower.lower` builds the inputs of real kernels); it encodes the
scalars with the same encoder (:func:`teg.engine.scalars.scalars`).
"""

from __future__ import annotations

import numpy as np

from teg.engine.codes import DEP_BASE, DEPMODEL_CODES, POLICY_CODES
from teg.engine.lowered import EngineInput, Grid, RowTable, StaticTable, near_partitions
from teg.engine.records import REC_ROWS
from teg.engine.scalars import NO_CACHE, scalars, tlb_scalars


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
               hashed=(False, False), tlb=None, store_cycles_per_sector=0.0, l2_request_cycles=0.0,
               turnaround=None, dram_rows=None, setup=None) -> EngineInput:
    """Build an :class:`EngineInput` by hand (tests, synthetic experiments).

    ``lat_*``, ``unit``, ``dst``/``src`` (lists of register-id lists) … describe the static
    instructions; ``rows_per_warp`` is a list (one per warp) of static-index lists; warps are
    grouped into blocks of ``warps_per_block``; ``tx`` is a list (one per row) of
    ``(addr, nbytes, channel)`` lists (``tx_min``: the perfect-coalescing count per row, default all);
    ``blocks_sm`` gives each block's SM (default round-robin); ``deal=True`` instead deals the
    blocks dynamically (one grid-wide queue, :func:`teg.engine.schedulers.launch_blocks`). ``l2_partitions`` /
    ``l2_partition_bytes`` / ``l2_far_latency`` describe near/far L2 partitions (``l2`` is then one
    partition's geometry; ``l2_partition_sms``: the SMs near each, default an even split), ``l2_slices`` / ``l2_slice_bytes_per_clk`` the L2 slices' bandwidth,
    ``mshr_lines`` the outstanding L1-miss lines per SM (0: ``pipe_slots`` C_mem slots).
    ``iline`` gives each static instruction's instruction-cache line (default: -1, a perfect
    instruction cache), ``fetch_prefetch`` the lines fetched beyond a missing one; a missing line
    takes ``dram_latency`` on its first fetch in the GPU, the L2 latency (``l2[4]``) after.
    ``cline`` gives each static instruction's constant-cache line (default -1: none); a line an SM
    has not read takes the L2 latency. ``hashed`` = (L1, L2): XOR-based set indexes instead of
    line mod sets. ``store_cycles_per_sector``: the SM's store path per sector a global write (``store``
    2) sends (0: none). ``tlb`` = (page bytes, L1 TLB entries, L2 TLB entry bytes, L2 TLB entries, L2 TLB
    hit cycles, page-walk cycles): address translation of accesses past L1 (default: none).
    ``l2_request_cycles``: the cycles the L1 pipeline (the SM-shared unit of the row) spends on each
    request it sends to L2, one per cache line (``l1[2]`` bytes; default 0: free).
    ``turnaround`` = (write batch bytes, read-to-write cycles, write-to-read cycles): DRAM read/write
    turnaround (default: none). ``dram_rows`` = (banks per channel, row bytes, row-miss cycles,
    channel interleave bytes): the DRAM banks' open rows (default: none; ``dram_latency`` is then
    the row-miss latency).
    ``switches`` maps mechanism names of :class:`teg.engine.Options` to booleans. ``ctrl`` holds
    per-static lists of control-code fields (``ctrl`` present, ``stall``, ``yield``, ``wbar``,
    ``rbar``, ``wait``), ``depbar`` / ``depbar_n`` (``DEPBAR.LE SBb, N``) and ``async`` (1 = cp.async
    copy, 2 = group commit). ``setup`` is the :class:`teg.engine.setup.RunSetup` the reports read
    (opcodes, PCs, the kernel's name; default: none, the instructions unnamed).
    """
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
    sc = scalars(
        sms=sms, schedulers=schedulers, slots=slots, resident=resident, warp_size=32,
        policy=POLICY_CODES[policy], depmodel=DEPMODEL_CODES[dependency_model], deal=deal,
        issue_interval=issue_interval, rbar_latency=rbar_latency, block_launch_latency=launch_latency,
        kernel_launch_cycles=kernel_launch, wavefront_cycles=wavefront_cycles,
        l1=l1[:4] if l1 is not None else NO_CACHE, l1_hashed=hashed[0], l1_latency=l1[4] if l1 is not None else 0.0,
        store_cycles_per_sector=store_cycles_per_sector,
        l2=l2[:4] if l2 is not None else NO_CACHE, l2_hashed=hashed[1], l2_latency=l2[4] if l2 is not None else 0.0,
        l2_far_latency=l2_far_latency if l2_far_latency is not None else (l2[4] if l2 is not None else 0.0),
        l2_partitions=l2_partitions, l2_partition_bytes=l2_partition_bytes, l2_slices=l2_slices,
        l2_slice_cycles_per_byte=1.0 / l2_slice_bytes_per_clk if l2_slice_bytes_per_clk > 0 else 0.0,
        channels=channels, dram_latency=dram_latency, dram_cycles_per_byte=service_per_byte,
        sms_per_pipeline=sms_per_pipeline, pipe_slots=pipe_slots, mshr_lines=mshr_lines,
        l2_request_cycles=l2_request_cycles,
        fetch_prefetch=fetch_prefetch, records=REC_ROWS if record_timeline else 0, record_order=record_order,
        **(tlb_scalars(*tlb) if tlb is not None else {}),
        **(dict(zip(("dram_write_batch", "dram_rtw_cycles", "dram_wtr_cycles"), turnaround))
           if turnaround is not None else {}),
        **(dict(zip(("dram_banks", "dram_row_bytes", "dram_row_miss_cycles", "dram_interleave"), dram_rows))
           if dram_rows is not None else {}),
        **(switches or {}))
    ctrl = ctrl or {}
    static = StaticTable(
        s_unit=i32(unit), s_occ=np.asarray(units_occ, np.float64)[i32(unit)], s_lat_exec=f64(lat_exec),
        s_lat_multi=f64(lat_multi), s_lat_same=f64(lat_same), s_mem=i32(mem), s_mem_lat=f64(mem_lat),
        s_store=i32(store), s_barrier=i32(barrier), s_depcause=i32(depcause, DEP_BASE + 1), s_dst=regs(dst, 8),
        s_src=regs(src, 16), s_ctrl=i32(ctrl.get("ctrl")), s_stall=i32(ctrl.get("stall")),
        s_yield=i32(ctrl.get("yield"), 1), s_wbar=i32(ctrl.get("wbar"), 7), s_rbar=i32(ctrl.get("rbar"), 7),
        s_wait=i32(ctrl.get("wait")),
        s_depbar=np.where(i32(ctrl.get("depbar"), -1) >= 0,
                          i32(ctrl.get("depbar"), -1) + 8 * i32(ctrl.get("depbar_n")), -1).astype(np.int32),
        s_async=i32(ctrl.get("async")), s_iline=i32(iline, -1), s_cline=i32(cline, -1),
        u_occ=np.asarray(units_occ, np.float64), u_count=np.asarray(units_count, np.int32),
        u_per_sm=np.asarray(units_per_sm, np.int32))
    rows = RowTable(
        r_sidx=r_sidx, r_wave=np.asarray(r_wave if r_wave is not None else [0] * N, np.int32),
        r_wave_min=np.asarray(r_wave_min if r_wave_min is not None else (r_wave if r_wave is not None else [0] * N),
                              np.int32),
        r_tx_start=r_tx_start, r_tx_min=r_tx_min, r_tx_min_bytes=r_tx_min_bytes,
        tx_addr=tx_addr, tx_bytes=tx_bytes, tx_chan=tx_chan)
    grid = Grid(c_start=c_start, c_end=c_end, c_block=c_block, b_ctx_start=b_ctx_start,
                sm_blocks_start=sm_blocks_start, sm_blocks=order,
                sm_part=near_partitions(sms, l2_partitions, l2_partition_sms))
    return EngineInput(static=static, rows=rows, grid=grid, scalars=sc, setup=setup)
