"""Lowering: Program (SASS) and/or KernelTrace + Machine + Options → :class:`EngineInput`
(:mod:`teg.engine.lowered`).

Steps (all vectorized over rows; per-static-instruction work is Python over the few hundred
static instructions):

1. static table — from the SASS (``Program.table()``, rows mapped by :func:`teg.trace.join`), or,
   with a trace alone, one pseudo-static instruction per distinct PC with the trace's opcode text
   and register lists; with SASS alone, the straight-line path from the first instruction to the
   first ``EXIT`` is the dynamic stream of every warp;
2. classification — ``machine.classify`` gives unit, latency class, kind, space; unknown opcodes
   are an error (or, with ``Options(unknown="alu")``, the ``int`` class with a warning);
3. simulated warps — by default every block of the trace on every SM of the GPU, dealt by the
   engine as the hardware block scheduler deals them (one grid-wide queue: every SM filled up to
   its occupancy, then each next block to the SM whose slot frees first), with one memory system
   (L2 partitions and slices, DRAM channels at full bandwidth, MSHRs per SM). ``Options(sms=N)``
   samples instead: the blocks dealt to SMs by ``Options.sampling``'s rule (:mod:`teg.engine.dealing`:
   ``waves``, the hardware's dealing on identical SMs, or TEG's ``round-robin``) and those of SMs
   ``0 … N-1`` kept, with the rule's share of DRAM bandwidth and L2. Sweep modes instead put exactly
   ``warps`` warps (or ``blocks`` blocks) on one SM, reusing trace warps cyclically, with every SM
   of the GPU assumed to run the same configuration (TEG §5.1's measurement setup);
4. memory precomputation on the kept rows — shared wavefronts (:mod:`teg.memory.shared`),
   coalesced transactions (:mod:`teg.memory.coalesce`) and their DRAM channels
   (:mod:`teg.memory.channels`). Cache hits are order-dependent, so L1/L2 are simulated inside
   the jitted loop in issue order;
5. scalars — occupancy, cache geometry, the simulated SMs' share of DRAM bandwidth and of the L2.
"""

from __future__ import annotations

import math
from dataclasses import replace
import warnings

import numpy as np

from teg import TegError, UnknownOpcodeWarning
from teg.engine.dealing import block_sms, launch_resident, sampled_share
from teg.engine.codes import (DEP_BASE, DEP_GLOBAL, DEP_SHARED, DEPMODEL_CODES, MEM_GLOBAL, MEM_SHARED, POLICY_CODES,
                              UNIT_CLASSES)
from teg.engine.lowered import EngineInput, Grid, RowTable, StaticTable, near_partitions
from teg.engine.occupancy import OccupancyError, l1_data_bytes, occupancy, preferred_carveout
from teg.engine.options import MECHANISMS, Options
from teg.engine.records import REC_ROWS
from teg.engine.scalars import scalars, tlb_scalars
from teg.engine.setup import Residency, RunSetup
from teg.machine.model import Machine, OpInfo
from teg.memory.cache import cache_geometry
from teg.memory.cachepolicy import bypasses_l1
from teg.memory.channels import channel_of
from teg.memory.coalesce import cc13_transactions, line_wavefronts, sector_transactions, tag_bank_wavefronts
from teg.memory.shared import shared_wavefronts, shared_wavefronts_paired
from teg.sass.effects import ASYNC_COMMIT_OPS, ASYNC_COPY_OPS

MAX_DST = 8
MAX_SRC = 16
MEMORY_KINDS = ("load", "store", "atomic")


class LoweringError(TegError):
    """Inputs the engine cannot model (unknown opcodes, control flow without a trace, …)."""


# ------------------------------------------------------------------------------------ static side


def _static_from_program(program) -> dict:
    tab = program.table()
    n = len(program.instructions)
    shared_operand = np.zeros(n, bool)
    depbar = np.full(n, -1, np.int32)
    wait = np.asarray(tab["wait"], np.int32).copy()
    barrier_waits = np.ones(n, bool)
    for i, ins in enumerate(program.instructions):
        for op in ins.operands:
            if op.kind == "mem" and op.space == "shared":
                shared_operand[i] = True
        if ins.base == "DEPBAR":
            depbar[i], extra = _depbar_operands(ins)
            wait[i] |= extra
        if ins.base == "BAR" and "ARV" in ins.modifiers:
            barrier_waits[i] = False
    opcodes = [ins.opcode for ins in program.instructions]
    const_at = np.full(n, -1, np.int64)         # bank << 32 | byte offset of the first c[bank][off]
    for i, ins in enumerate(program.instructions):
        for op in ins.operands:
            if op.kind == "const" and op.bank is not None and op.offset is not None:
                const_at[i] = (int(op.bank) << 32) | max(int(op.offset), 0)
                break
    return {"opcodes": opcodes, "pcs": tab["address"].astype(np.int64), "const_at": const_at,
            "dst": _pad(tab["dst"], MAX_DST), "src": _pad(tab["src"], MAX_SRC),
            "ctrl": tab["has_ctrl"], "stall": tab["stall"], "yield": tab["yield_"], "wbar": tab["wbar"],
            "rbar": tab["rbar"], "wait": wait, "mem_width": tab["mem_width"],
            "shared_operand": shared_operand, "depbar": depbar, "async": _async_roles(opcodes),
            "barrier_waits": barrier_waits}


def _prefetch_lines(machine) -> int:
    """How far the sequential instruction prefetch runs ahead of a warp (docs/model.md §2,
    "Instruction fetch"): the table's ``icache_prefetch_lines``, else the lines a warp issuing one instruction per cycle
    consumes during one L2 hit latency (instructions are 16 B from Volta on, 8 B before), so that
    straight-line code never waits once the kernel's first line has arrived."""
    gm = machine.memory
    if not gm.icache_line_bytes:
        return 0
    if gm.icache_prefetch_lines is not None:
        return int(gm.icache_prefetch_lines)
    l2_latency = gm.l2.latency if gm.l2 is not None else gm.dram_latency
    per_line = gm.icache_line_bytes // (16 if machine.sm >= 70 else 8)
    return max(1, math.ceil(l2_latency / max(per_line, 1)))


def _const_lines(const_at, line_bytes: int | None, n: int) -> np.ndarray:
    """Constant-cache line of each of the ``n`` static instructions' (first) ``c[bank][offset]``
    operand, numbered densely in the kernel; -1 for none, and everywhere without a constant-cache
    model or without SASS operands (``const_at`` None: a trace alone has none)."""
    if const_at is None or not line_bytes:
        return np.full(n, -1, np.int32)
    const_at = np.asarray(const_at, np.int64)
    key = np.where(const_at >= 0, (const_at >> 32) * (1 << 20) + (const_at & 0xFFFFFFFF) // int(line_bytes), -1)
    used = np.unique(key[key >= 0])
    return np.where(key >= 0, np.searchsorted(used, key), -1).astype(np.int32)


def _icache_lines(pcs, line_bytes: int | None) -> np.ndarray:
    """Instruction-cache line of every static instruction, counted from the kernel's first line
    (``-1`` everywhere when the machine has no instruction-fetch model: a perfect cache)."""
    pcs = np.asarray(pcs, np.int64)
    if not line_bytes or pcs.shape[0] == 0:
        return np.full(pcs.shape[0], -1, np.int32)
    lines = pcs // int(line_bytes)
    return (lines - lines.min()).astype(np.int32)


def _depbar_operands(ins) -> tuple[int, int]:
    """``DEPBAR.LE SBb, N[, {i,j}]`` → (``b + 8 N``, wait mask of the braced barriers): wait until
    barrier b counts at most N outstanding results, and the listed barriers none."""
    sb, count, extra = -1, 0, 0
    for op in ins.operands:
        t = op.text.strip()
        if t.startswith("SB") and t[2:].isdigit() and int(t[2:]) < 6:    # SB0 … SB5
            sb = int(t[2:])
        elif op.kind == "imm" and sb >= 0:
            count = int(t, 0)
        elif t.startswith("{") and t.endswith("}"):
            for b in t[1:-1].split(","):
                if b.strip().isdigit() and int(b) < 6:
                    extra |= 1 << int(b)
    return (sb + 8 * count if sb >= 0 else -1), extra


def _async_roles(opcodes) -> np.ndarray:
    """Per static instruction: 1 = asynchronous copy (its result joins the warp's open cp.async
    group), 2 = commit of the open group (LDGDEPBAR), 0 = neither."""
    base = [op.split(".")[0] for op in opcodes]
    return np.array([1 if b in ASYNC_COPY_OPS else 2 if b in ASYNC_COMMIT_OPS else 0 for b in base], np.int32)


def _static_from_trace(kt) -> tuple[dict, np.ndarray]:
    """One pseudo-static instruction per distinct PC (registers and opcode of its first row).
    Every row of a PC must execute that opcode (one address holds one instruction), so classifying
    the PCs' opcodes classifies every row's; a row that differs is a :class:`LoweringError`."""
    from teg.trace.join import distinct_pcs
    pcs, first, inv = distinct_pcs(kt.pc)
    n = pcs.shape[0]
    op = np.asarray(kt.opcode)
    first_op = op[first]
    differ = np.flatnonzero(op != first_op[inv])
    if differ.shape[0]:
        r = int(differ[0])
        k = int(inv[r])
        raise LoweringError(f"kernel {kt.info.name or kt.info.kernel_id}: PC 0x{int(pcs[k]):04x} executes "
                            f"{kt.opcodes[int(first_op[k])]} at trace row {int(first[k])} but {kt.opcodes[int(op[r])]} "
                            f"at row {r} ({differ.shape[0]:,} rows differ; one address holds one instruction: "
                            "a damaged trace?)")
    opcodes = [kt.opcodes[int(o)] for o in first_op]
    zeros = np.zeros(n, np.int32)
    return ({"opcodes": opcodes, "pcs": pcs, "dst": _pad(np.asarray(kt.dst)[first], MAX_DST),
             "src": _pad(np.asarray(kt.src)[first], MAX_SRC), "ctrl": zeros, "stall": zeros,
             "yield": zeros + 1, "wbar": zeros + 7, "rbar": zeros + 7, "wait": zeros,
             "mem_width": np.asarray(kt.mem_width)[first].astype(np.int32), "shared_operand": np.zeros(n, bool),
             # a trace has no operands: DEPBAR waits for all committed cp.async groups (SB0, N = 0)
             "depbar": np.array([0 if op.split(".")[0] == "DEPBAR" else -1 for op in opcodes], np.int32),
             "async": _async_roles(opcodes),
             "barrier_waits": np.array(["ARV" not in op.split(".")[1:] for op in opcodes], bool)},
            inv)


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    """Register lists as ``width`` columns, valid ids first then -1 (the engine stops at the first
    -1; a trace may print RZ = -1 between real registers)."""
    a = np.asarray(a, np.int16)
    if a.ndim == 2 and a.shape[1]:
        a = np.take_along_axis(a, np.argsort(a < 0, axis=1, kind="stable"), axis=1)
    out = np.full((a.shape[0], width), -1, np.int16)
    w = min(width, a.shape[1]) if a.ndim == 2 else 0
    if w:
        out[:, :w] = a[:, :w]
    return out


def _used(sidx: np.ndarray, n: int) -> np.ndarray:
    """The static instructions (of ``n``) that some row executes, as a boolean mask."""
    return np.bincount(sidx, minlength=n) > 0 if sidx.shape[0] else np.zeros(n, bool)


def _straight_line(program) -> np.ndarray:
    """Static indices of the straight-line path 0 … first EXIT; control flow is an error."""
    path = []
    for ins in program.instructions:
        path.append(ins.index)
        if ins.base == "EXIT" and ins.guard in (None, "PT"):
            break
        if ins.branch_target is not None or ins.base in ("BRA", "BRX", "JMP", "JMX", "CALL", "RET", "SSY",
                                                         "BSSY", "BREAK", "BRK", "CAL", "JCAL"):
            raise LoweringError(f"{program.source or program.name}:{ins.line}: {ins.opcode} at "
                                f"/*{ins.address:04x}*/ is control flow; estimating this kernel needs a trace (--trace)")
    return np.asarray(path, np.int32)


def _fallback_info(machine: Machine) -> OpInfo:
    for name in ("int", "alu", "sp"):
        if name in machine.latencies:
            lat = name
            break
    else:
        lat = next(iter(machine.latencies))
    unit = next((u for u in ("alu", "sp", "int") if u in machine.units), next(iter(machine.units)))
    return OpInfo(unit=unit, latency=lat, kind="alu", space="none", variable=False, unit_class="int")


def classify_all(opcodes: list[str], machine: Machine, unknown: str = "error", where: str = "") -> list[OpInfo]:
    """OpInfo per opcode; unknown opcodes raise :class:`LoweringError` naming them all (or, with
    ``unknown="alu"``, get the integer-ALU class and a warning)."""
    infos = [machine.classify(op) for op in opcodes]
    missing = sorted({op for op, info in zip(opcodes, infos) if info is None})
    if missing:
        if unknown != "alu":
            raise LoweringError(f"{where or 'kernel'}: machine table {machine.name} does not know "
                                f"{len(missing)} opcode(s): {', '.join(missing)} (add them to the table, or "
                                "pass --unknown alu to time them as integer ALU instructions)")
        warnings.warn(f"timing unknown opcodes as integer ALU: {', '.join(missing)}", UnknownOpcodeWarning,
                      stacklevel=2)
        fb = _fallback_info(machine)
        infos = [info if info is not None else fb for info in infos]
    return infos


# ------------------------------------------------------------------------------------ dynamic side


def _gather_csr(start: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | slice]:
    """New CSR offsets and element indices for the subset/repetition ``rows`` of a CSR table (the
    indices as a ``slice`` when ``rows`` is one consecutive run: indexing gives a view, no copy)."""
    from teg.trace.csr import gather
    return gather(start, rows)


def _rows_of(warp_start: np.ndarray, warps: np.ndarray) -> tuple[np.ndarray | slice, np.ndarray]:
    """Concatenated row indices of ``warps`` and their per-warp lengths (the warps' rows are a CSR
    table over ``warp_start``); the indices as a ``slice`` when they are one consecutive run (every
    warp of a whole-GPU run: indexing the trace's columns with it gives views, no copies)."""
    off, rows = _gather_csr(warp_start, warps)
    return rows, np.diff(off)


def _addresses_of(addr_start: np.ndarray, rows: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray | slice]:
    """CSR offsets and element indices of the addresses of ``rows`` (:func:`_rows_of`)."""
    if isinstance(rows, slice):
        start = np.asarray(addr_start, np.int64)
        return start[rows.start:rows.stop + 1] - start[rows.start], slice(int(start[rows.start]), int(start[rows.stop]))
    return _gather_csr(addr_start, rows)


def _select(kt, machine: Machine, options: Options):
    """Trace warps to simulate: (trace warp per context, block per context, SM per block,
    resident-block override, slots per SM, number of busy SMs on the GPU, the simulated SMs'
    share of DRAM bandwidth and L2: 1 for the whole GPU, :func:`teg.engine.dealing.sampled_share`
    for sampled SMs, 1/num_sms for a sweep's one SM)."""
    W = kt.num_warps
    wblock = np.asarray(kt.warp_block, np.int64)
    blocks, first_warp = np.unique(wblock, return_index=True)
    order = np.argsort(first_warp, kind="stable")
    blocks = blocks[order]
    pos = {int(b): j for j, b in enumerate(blocks)}
    wpb = kt.info.warps_per_block if kt.info.threads_per_block > 1 else max(1, W // max(len(blocks), 1))
    if options.warps is not None:
        n = int(options.warps)
        ctx_warp = np.arange(n, dtype=np.int64) % W
        ctx_block = np.arange(n, dtype=np.int64) // max(wpb, 1)
        nb = int(ctx_block[-1]) + 1
        return (ctx_warp, ctx_block, np.zeros(nb, np.int64), nb, max(machine.limits.max_warps, n), machine.num_sms,
                1.0 / machine.num_sms)
    if options.blocks is not None:
        nbk = int(options.blocks)
        ctx_warp, ctx_block = [], []
        for k in range(nbk):
            b = blocks[k % len(blocks)]
            ws = np.nonzero(wblock == b)[0]
            ctx_warp.append(ws)
            ctx_block.append(np.full(ws.shape[0], k))
        ctx_warp = np.concatenate(ctx_warp)
        ctx_block = np.concatenate(ctx_block)
        return (ctx_warp, ctx_block, np.zeros(nbk, np.int64), nbk,
                max(machine.limits.max_warps, ctx_warp.shape[0]), machine.num_sms, 1.0 / machine.num_sms)
    sms = simulated_sms(options, machine)
    if sms > machine.num_sms:
        raise LoweringError(f"--sms {sms}: {machine.name} has {machine.num_sms} SMs")
    grid_blocks = max(kt.info.num_blocks, len(blocks))
    busy = min(machine.num_sms, grid_blocks)
    if sms == machine.num_sms:
        # the whole GPU: the engine deals the blocks from one queue in block order
        sm_of_pos = np.zeros(len(blocks), np.int64)
        share = 1.0
    else:
        # sampled SMs: each block's SM by the sampling's rule (teg.engine.dealing), the blocks in
        # launch order
        try:
            resident = launch_resident(machine, kt.info, options)
        except OccupancyError as e:
            raise LoweringError(f"{kt.info.name}: {e}") from None
        sm_of_pos = block_sms(np.arange(len(blocks)), machine.num_sms, resident, options.sampling)
        share = sampled_share(sm_of_pos, sms, busy, options.sampling)
    keep_pos = np.nonzero(sm_of_pos < sms)[0]
    keep_blocks = blocks[keep_pos]
    ctx_warp = np.nonzero(np.isin(wblock, keep_blocks))[0]
    # contexts grouped by block in block order (warps are stored by block already)
    bpos = np.array([pos[int(b)] for b in wblock[ctx_warp]], np.int64)
    srt = np.argsort(bpos, kind="stable")
    ctx_warp = ctx_warp[srt]
    bpos = bpos[srt]
    uniq_pos, ctx_block = np.unique(bpos, return_inverse=True)
    return ctx_warp, ctx_block, sm_of_pos[uniq_pos], None, machine.limits.max_warps, max(busy, sms), share


def _check_sweep_size(options: Options, machine: Machine, kt) -> None:
    """A sweep point, and ``--blocks-per-sm``, must fit on one SM of ``machine``: at most
    ``limits.max_warps`` warps, at most ``limits.max_blocks`` blocks (of the trace's block size);
    else :class:`LoweringError`."""
    lim = machine.limits
    if options.blocks_per_sm is not None and int(options.blocks_per_sm) > lim.max_blocks:
        raise LoweringError(f"--blocks-per-sm {options.blocks_per_sm}: an SM of {machine.name} holds at most "
                            f"{lim.max_blocks} blocks")
    if options.warps is not None and int(options.warps) > lim.max_warps:
        raise LoweringError(f"--warps {options.warps}: an SM of {machine.name} holds at most {lim.max_warps} warps")
    if options.blocks is not None:
        nb = int(options.blocks)
        wpb = kt.info.warps_per_block if kt is not None else 1
        if nb > lim.max_blocks or nb * wpb > lim.max_warps:
            raise LoweringError(f"--blocks-per-sm {nb}: an SM of {machine.name} holds at most {lim.max_blocks} "
                                f"blocks and {lim.max_warps} warps ({wpb} warps per block here)")


def _engine_state_bytes(machine: Machine, sms: int, st: dict) -> int:
    """The engine run's state that does not grow with the trace (teg.engine.core): per warp slot a
    scoreboard of the kernel's registers (two float64 and two int64 per register: 32 bytes), per
    SM its L1 tags, the L2's tags (a tag and a ready time: 16 bytes a line)."""
    from teg.hostmem import CACHE_LINE_STATE_BYTES, ENGINE_ENTRY_BYTES

    nreg = max(int(np.max(st["dst"], initial=0)), int(np.max(st["src"], initial=0)), 0) + 1
    gm = machine.memory
    l1 = gm.l1.size_bytes // max(gm.l1.line_bytes, 1) if gm.l1 is not None else 0
    l2 = gm.l2.size_bytes // max(gm.l2.line_bytes, 1) if gm.l2 is not None else 0
    slots = sms * max(machine.limits.max_warps, 1)
    return ENGINE_ENTRY_BYTES * slots * (nreg + 16) + CACHE_LINE_STATE_BYTES * (sms * l1 + l2)


def _check_memory(name: str, rows: int, transactions: int, gathered: int, options: Options, machine: Machine,
                  fixed: int = 0) -> None:
    """Refuse, before its arrays exist, a lowering (and engine run) that needs more memory than
    this process may use (:mod:`teg.hostmem`), naming the memory and what makes the run smaller;
    ``fixed``: the engine's state (:func:`_engine_state_bytes`)."""
    from teg.hostmem import lowering_bytes, require, size_text

    need = lowering_bytes(rows, transactions, gathered, timeline=bool(options.record_timeline),
                          counted=transactions > 0) + fixed
    sms = simulated_sms(options, machine) if options.warps is None and options.blocks is None else 1
    if sms > 1:
        per_sm = need / sms
        smaller = (f"simulate fewer SMs with --sms N (estimate, whatif, sweep; about {size_text(per_sm)} per SM "
                   "here: TEG's sampling method), or give teg more memory")
    else:
        smaller = "estimate a smaller launch (fewer blocks in the trace), or give teg more memory"
    what = f"{name}: lowering {rows:,} warp instructions" + (f" ({transactions:,} memory transactions)"
                                                            if transactions else "")
    require(need, what, smaller)


def simulated_sms(options: Options, machine: Machine) -> int:
    """SMs a run simulates: ``options.sms``, or every SM of the machine when it is ``None``."""
    return machine.num_sms if options.sms is None else int(options.sms)


# ------------------------------------------------------------------------------------ main entry


def resolve_dependency_model(options: Options, machine: Machine, has_ctrl: bool) -> tuple[str, str | None]:
    """The dependency model to use and a note when ``auto`` had to fall back."""
    want = options.dependency_model
    if want == "controlcodes" and not has_ctrl:
        raise LoweringError("dependency model controlcodes needs SASS with control codes (sm_70+ cuobjdump/nvdisasm text)")
    if want == "auto":
        if machine.dependency_model == "controlcodes" and not has_ctrl:
            return "scoreboard", "no control codes in the input (no SASS, or pre-Volta SASS): register scoreboard used"
        return machine.dependency_model, None
    return want, None


def _preferred_carveout(machine: Machine, options: Options, shmem: int, name: str) -> int | None:
    """The carveout (bytes) ``options.shared_carveout`` asks for, or None (the driver's choice)."""
    if options.shared_carveout is None:
        return None
    try:
        return preferred_carveout(machine, float(options.shared_carveout), shmem)
    except OccupancyError as e:
        raise LoweringError(f"{name}: --shared-carveout: {e}") from None


def lower(program, kernel_trace, machine: Machine, options: Options | None = None) -> EngineInput:
    """Build the :class:`EngineInput` for ``program`` (a :class:`teg.sass.Program` or None) and/or
    ``kernel_trace`` (a :class:`teg.trace.KernelTrace` or None) on ``machine``."""
    options = options or Options()
    if program is None and kernel_trace is None:
        raise LoweringError("nothing to estimate: give SASS (--sass), a trace (--trace) or both")
    notes: list[str] = []
    kt = kernel_trace
    name = (kt.info.name if kt is not None else None) or (program.name if program is not None else "kernel")

    # 1. static table and the row → static map
    if program is not None:
        st = _static_from_program(program)
        if kt is not None:
            from teg.trace import join
            sidx_trace = join(kt, program)
        else:
            path = _straight_line(program)
    else:
        st, sidx_trace = _static_from_trace(kt)
    S = len(st["opcodes"])
    infos = classify_all(st["opcodes"], machine, options.unknown, where=name)
    has_ctrl = program is not None and bool(np.any(st["ctrl"][_used(sidx_trace, S) if kt is not None else path]))
    depmodel, note = resolve_dependency_model(options, machine, has_ctrl)
    policy = options.policy or machine.scheduler_policy     # the options' order, else the table's
    if note:
        notes.append(note)

    # 2. per static instruction
    unit_names = list(machine.units)
    s_unit = np.array([unit_names.index(i.unit) for i in infos], np.int32)
    s_occ = np.array([machine.occupancy(i) for i in infos], np.float64)
    lat = [machine.latencies[i.latency] for i in infos]
    s_lat_exec = np.array([x.execution for x in lat], np.float64)
    s_lat_multi = np.array([x.issue_multi for x in lat], np.float64)
    s_lat_same = np.array([x.issue_same for x in lat], np.float64)
    s_mem = np.zeros(S, np.int32)
    s_mem_lat = np.zeros(S, np.float64)
    s_depcause = np.zeros(S, np.int32)
    s_store = np.zeros(S, np.int32)
    s_barrier = np.zeros(S, np.int32)
    s_width = np.zeros(S, np.int64)
    s_paired_load = np.zeros(S, np.bool_)      # LDS (not LDSM): may pack paired lanes (teg.memory.shared)
    for i, info in enumerate(infos):
        cls = DEP_BASE + (UNIT_CLASSES.index(info.unit_class) if info.unit_class in UNIT_CLASSES else len(UNIT_CLASSES) - 1)
        s_depcause[i] = cls
        is_mem = info.kind in MEMORY_KINDS
        if is_mem and info.space in ("global", "local", "generic", "texture"):
            # (a cp.async copy, LDGSTS, also names its shared destination: timed by its global read)
            s_mem[i] = MEM_GLOBAL
            s_depcause[i] = DEP_GLOBAL
        elif (is_mem and info.space == "shared") or st["shared_operand"][i]:
            s_mem[i] = MEM_SHARED
            s_depcause[i] = DEP_SHARED if is_mem else cls
            s_mem_lat[i] = s_lat_exec[i] if is_mem else s_lat_exec[i] + machine.shared.latency
        # L2-only: stores (write-through, no L1 allocate), atomics, .cg/.cv/strong-GPU/SYS loads,
        # and plain global loads where the L1 does not cache them (Maxwell/Pascal)
        # (2: a write — no data returns; the write-back L2 acknowledges it)
        s_store[i] = 2 if info.kind == "store" else int(bypasses_l1(st["opcodes"][i], info.kind, info.space,
                                                                  machine.memory.l1_caches_global_loads))
        s_barrier[i] = int(info.kind == "barrier" and bool(st["barrier_waits"][i]))
        s_width[i] = int(st["mem_width"][i]) or int(getattr(info, "width", 0) or 0) or 4
        s_paired_load[i] = (info.kind == "load" and info.space == "shared"
                            and str(st["opcodes"][i]).split(".")[0] == "LDS")

    # 3. simulated warps and their rows
    _check_sweep_size(options, machine, kt)
    if kt is not None:
        ctx_warp, ctx_block, block_sm, nblocks_override, slots, busy, share = _select(kt, machine, options)
        rows, lens = _rows_of(kt.warp_start, ctx_warp)
        keep = lens > 0
        gathered = 0 if isinstance(rows, slice) else int(np.sum(np.asarray(kt.addr_start)[rows + 1]
                                                                   - np.asarray(kt.addr_start)[rows]))
        sms_run = simulated_sms(options, machine) if options.warps is None and options.blocks is None else 1
        fixed = _engine_state_bytes(machine, sms_run, st)
        _check_memory(name, int(lens.sum()), 0, gathered, options, machine, fixed)   # before the per-row arrays
        r_sidx = sidx_trace[rows]
        addr_start, aidx = _addresses_of(kt.addr_start, rows)
        addresses = np.asarray(kt.addresses)[aidx]
        mask = np.array(np.asarray(kt.mask)[rows], np.uint32)     # a writable copy: the jitted passes' usual type
        width = np.asarray(kt.mem_width, np.int64)[rows]
        unset = np.flatnonzero(width <= 0)
        width[unset] = s_width[r_sidx[unset]]          # in place: no temporaries the size of the rows
        del unset
        info = kt.info
        threads, regs, shmem = info.threads_per_block, info.nregs, info.shmem
        wpb_real = info.warps_per_block
    else:
        if options.blocks is not None:
            raise LoweringError(f"{name}: a block sweep needs a trace (the block shape comes from its launch)")
        n = int(options.warps or 1)
        ctx_warp = np.zeros(n, np.int64)
        ctx_block = np.zeros(n, np.int64)
        block_sm = np.zeros(1, np.int64)
        nblocks_override, slots, busy = 1, max(machine.limits.max_warps, n), machine.num_sms
        share = 1.0 / machine.num_sms
        lens = np.full(n, path.shape[0], np.int64)
        keep = lens > 0
        r_sidx = np.tile(path, n).astype(np.int32)
        rows = np.arange(r_sidx.shape[0])
        addr_start = np.zeros(r_sidx.shape[0] + 1, np.int64)
        addresses = np.zeros(0, np.uint64)
        mask = np.full(r_sidx.shape[0], 0xFFFFFFFF, np.uint32)
        width = s_width[r_sidx]
        gathered, fixed = 0, _engine_state_bytes(machine, 1, st)
        threads, regs, shmem, wpb_real = n * machine.warp_size, 0, 0, n
        notes.append("SASS only: every warp runs the straight-line path; memory accesses use the "
                     "conflict-free, fully coalesced pattern (no addresses)")
    ctx_lens = lens[keep]
    kept_blocks, ctx_block = np.unique(np.asarray(ctx_block)[keep], return_inverse=True)
    block_sm = np.asarray(block_sm, np.int64)[kept_blocks]
    if ctx_lens.shape[0] == 0:
        raise LoweringError(f"{name}: the trace has no instructions for the simulated warps")
    N = r_sidx.shape[0]

    # 4. memory precomputation
    is_shared = (s_mem == MEM_SHARED)[r_sidx]
    is_global = (s_mem == MEM_GLOBAL)[r_sidx]
    r_wave = np.zeros(N, np.int32)
    r_wave_min = np.zeros(N, np.int32)
    sh = machine.shared
    if is_shared.any():
        if sh.paired_loads:
            # 64/128-bit LDS whose lanes pair up are served in phases of twice the lanes (stores,
            # atomics and LDSM are not: teg.memory.shared, "Paired loads")
            paired = (s_paired_load[r_sidx] & (width >= 8)).astype(np.bool_)
            shared_wavefronts_paired(addr_start, np.asarray(addresses, np.uint64), mask, width, is_shared, paired,
                                     sh.banks, sh.bank_bytes, sh.phase_lanes, machine.warp_size, r_wave, r_wave_min)
            del paired
        else:
            shared_wavefronts(addr_start, np.asarray(addresses, np.uint64), mask, width, is_shared, sh.banks,
                              sh.bank_bytes, sh.phase_lanes, machine.warp_size, r_wave, r_wave_min)
    gm = machine.memory

    def counted(m: int) -> None:          # the transactions are counted, not yet allocated
        _check_memory(name, N, m, gathered, options, machine, fixed)

    if gm.coalescing == "cc13":
        tx_start, tx_addr, tx_bytes, tx_min, tx_min_bytes = cc13_transactions(
            addr_start, addresses, mask, width, is_global, machine.warp_size, counted=counted)
    else:
        tx_start, tx_addr, tx_bytes, tx_min, tx_min_bytes = sector_transactions(
            addr_start, addresses, mask, width, is_global, gm.segment_bytes[0], machine.warp_size, counted=counted)
    if gm.coalescing == "sector" and gm.l1 is not None:
        # every global access passes the unified L1's data stage: one cache line per cycle, or,
        # where the table gives the tag stage's rate, its tag lookups, its sectors (128 B per
        # cycle) or its lanes' bank conflicts, whichever takes longest
        g_wave, g_wave_min = line_wavefronts(tx_start, tx_addr, tx_min_bytes, gm.l1.line_bytes)
        if gm.l1.tags_per_cycle > 0 and is_global.any():
            b_wave = np.zeros(N, np.int32)
            shared_wavefronts(addr_start, np.asarray(addresses, np.uint64), mask, width, is_global, sh.banks,
                              sh.bank_bytes, sh.phase_lanes, machine.warp_size, b_wave, np.zeros(N, np.int32))
            g_wave = tag_bank_wavefronts(g_wave, np.diff(tx_start), b_wave, gm.l1.tags_per_cycle,
                                         gm.l1.line_bytes // gm.l1.sector_bytes)
            g_wave_min = np.minimum(g_wave_min, g_wave)
            del b_wave
        r_wave[is_global] = g_wave[is_global]
        r_wave_min[is_global] = g_wave_min[is_global]
        del g_wave, g_wave_min
    del addresses, mask, width
    # DRAM channel of every global transaction; their per-channel counts are the load behind the
    # "no channel skew" service scale (EngineInput.chan_scale, derived by the core from tx_chan)
    tx_chan = channel_of(tx_addr, gm.channels, gm.interleave_bytes, gm.channel_hash)

    # 5. blocks, SMs, occupancy
    B = int(ctx_block.max()) + 1 if ctx_block.shape[0] else 0
    counts = np.bincount(ctx_block, minlength=B)
    b_ctx_start = np.zeros(B + 1, np.int32)
    np.cumsum(counts, out=b_ctx_start[1:])
    sweep_mode = options.warps is not None or options.blocks is not None or kt is None
    n_sms = 1 if sweep_mode else simulated_sms(options, machine)
    whole_gpu = not sweep_mode and n_sms == machine.num_sms
    order = np.argsort(block_sm, kind="stable").astype(np.int32)
    sm_blocks_start = np.searchsorted(block_sm[order], np.arange(n_sms + 1)).astype(np.int32)
    occ = None
    carveout = _preferred_carveout(machine, options, shmem, name)
    if nblocks_override is not None:
        resident = nblocks_override
    else:
        occ = occupancy(machine, threads, regs, shmem, carveout)
        resident = occ.blocks
    if options.blocks_per_sm is not None:
        resident = int(options.blocks_per_sm)
    wpb_max = int(counts.max()) if B else 1
    if wpb_max > slots:
        raise LoweringError(f"{name}: a block of {wpb_max} warps exceeds the {slots} warp slots of an SM")
    resident = max(1, min(resident, slots // max(wpb_max, 1)))
    c_start = np.zeros(ctx_lens.shape[0], np.int64)
    np.cumsum(ctx_lens[:-1], out=c_start[1:])
    c_end = c_start + ctx_lens

    # 6. scalars (share: the simulated SMs' part of DRAM bandwidth and L2, from _select)
    sc = dict(sms=n_sms, schedulers=machine.schedulers, slots=slots, resident=resident, warp_size=machine.warp_size,
              policy=POLICY_CODES[policy], depmodel=DEPMODEL_CODES[depmodel], deal=whole_gpu,
              issue_interval=machine.issue_interval,
              rbar_latency=machine.latencies["store"].execution if "store" in machine.latencies else 1.0,
              block_launch_latency=max(1.0, machine.block_launch_cycles),
              kernel_launch_cycles=machine.kernel_launch_cycles,
              **{mech: getattr(options, mech) for mech in MECHANISMS})
    l1_size = 0
    if gm.l1 is not None:
        l1_size = l1_data_bytes(machine, threads, regs, shmem, resident, carveout)
        if l1_size >= gm.l1.line_bytes:
            sc.update(l1=cache_geometry(l1_size, gm.l1.line_bytes, gm.l1.sector_bytes, gm.l1.assoc),
                      l1_hashed=gm.l1.index == "xor", l1_latency=gm.l1.latency,
                      store_cycles_per_sector=gm.l1.store_cycles_per_sector,
                      l2_request_cycles=gm.l1.l2_request_cycles)
        else:
            notes.append("no L1 left beside the blocks' shared memory")
    if gm.l2 is not None:
        # the whole GPU: one L2 per partition (near/far, each SM with a near one) and its slices'
        # bandwidth; sampled SMs or a sweep: their share of one L2, no partitions or slice limits
        parts = gm.l2_partitions if whole_gpu else 1
        l2_frac = share if options.l2_share is None else float(options.l2_share)
        l2_size = max(int(gm.l2.size_bytes * l2_frac / parts), gm.l2.line_bytes)
        sc.update(l2=cache_geometry(l2_size, gm.l2.line_bytes, gm.l2.sector_bytes, gm.l2.assoc),
                  l2_hashed=gm.l2.index == "xor", l2_latency=gm.l2.latency,
                  l2_far_latency=gm.l2_far_latency if (parts > 1 and gm.l2_far_latency) else gm.l2.latency,
                  l2_partitions=parts, l2_partition_bytes=gm.l2_partition_bytes)
        if whole_gpu and gm.l2_slices and gm.l2_bandwidth_bytes_per_clk:
            sc.update(l2_slices=gm.l2_slices, l2_slice_cycles_per_byte=gm.l2_slices / gm.l2_bandwidth_bytes_per_clk)
    if gm.tlb is not None:
        t = gm.tlb
        sc.update(tlb_scalars(t.page_bytes, t.l1_entries, t.l2_page_bytes, t.l2_entries, t.l2_latency,
                              t.walk_latency))
    bytes_per_cycle = gm.bandwidth_gbs * 1e9 / (machine.clock_mhz * 1e6) * share / gm.channels
    if gm.dram_turnaround is not None:
        # the bubbles in core cycles; sampled SMs get the share N/busy of each channel, so a
        # turnaround (like a byte's service) takes 1/share as long for them
        t = gm.dram_turnaround
        sc.update(dram_write_batch=t.write_batch_bytes,
                  dram_rtw_cycles=t.read_to_write_ns * machine.clock_mhz / 1e3 / share,
                  dram_wtr_cycles=t.write_to_read_ns * machine.clock_mhz / 1e3 / share)
    if gm.dram_rows is not None:
        # a latency, not a rate: the same in core cycles for sampled SMs
        r = gm.dram_rows
        sc.update(dram_banks=r.banks, dram_row_bytes=r.row_bytes, dram_interleave=gm.interleave_bytes,
                  dram_row_miss_cycles=r.row_miss_ns * machine.clock_mhz / 1e3)
    sc = scalars(**sc, mshr_lines=gm.l1_mshr_lines or 0, fetch_prefetch=_prefetch_lines(machine),
                 channels=gm.channels, sms_per_pipeline=max(1, min(gm.sms_per_pipeline, busy)),
                 pipe_slots=int(gm.max_outstanding), dram_latency=gm.dram_latency,
                 dram_cycles_per_byte=1.0 / bytes_per_cycle, wavefront_cycles=sh.wavefront_cycles,
                 records=REC_ROWS if options.record_timeline else 0, record_order=options.record_order)

    if occ is not None:
        residency = Residency(blocks_per_sm=occ.blocks, warps_per_sm=occ.warps, limiter=occ.limiter,
                              by_limit=dict(occ.by_limit))
    else:
        residency = Residency(blocks_per_sm=resident, warps_per_sm=int(ctx_lens.shape[0]),
                              limiter="sweep" if kt is not None else "sass-only")
    if options.blocks_per_sm is not None:
        residency = replace(residency, blocks_per_sm=resident, limiter="--blocks-per-sm")
    setup = RunSetup(
        kernel=name, machine=machine.name, clock_mhz=machine.clock_mhz, opcodes=st["opcodes"], pcs=st["pcs"],
        dependency_model=depmodel, policy=policy, sms=n_sms, warps=int(ctx_lens.shape[0]), blocks=B,
        notes=notes, occupancy=residency, units=unit_names, threads_per_block=threads, warps_per_block=wpb_real,
        busy_sms=int(max(busy, n_sms)),
        dealing="dynamic" if whole_gpu else ("sweep" if sweep_mode else options.sampling), share=share,
        waves=B / max(resident * n_sms, 1), l2_partitions=sc.l2_partitions, l2_slices=sc.l2_slices,
        mshr_lines=sc.mshr_lines, l1_bytes=int(max(l1_size, 0)),
        shared_carveout_bytes=(gm.l1.size_bytes - l1_size if gm.l1 is not None and gm.l1.shared_carveouts else None))
    static = StaticTable(
        s_unit=s_unit, s_occ=s_occ, s_lat_exec=s_lat_exec, s_lat_multi=s_lat_multi, s_lat_same=s_lat_same,
        s_mem=s_mem, s_mem_lat=s_mem_lat, s_store=s_store, s_barrier=s_barrier, s_depcause=s_depcause,
        s_dst=st["dst"], s_src=st["src"], s_ctrl=np.asarray(st["ctrl"], np.int32),
        s_stall=np.asarray(st["stall"], np.int32), s_yield=np.asarray(st["yield"], np.int32),
        s_wbar=np.asarray(st["wbar"], np.int32), s_rbar=np.asarray(st["rbar"], np.int32),
        s_wait=np.asarray(st["wait"], np.int32), s_depbar=np.asarray(st["depbar"], np.int32),
        s_async=np.asarray(st["async"], np.int32), s_iline=_icache_lines(st["pcs"], gm.icache_line_bytes),
        s_cline=_const_lines(st.get("const_at"), gm.icache_line_bytes, S),
        u_occ=np.array([machine.units[u].occupancy for u in unit_names], np.float64),
        u_count=np.array([machine.units[u].count for u in unit_names], np.int32),
        u_per_sm=np.array([int(machine.units[u].per == "sm") for u in unit_names], np.int32))
    rows = RowTable(
        r_sidx=np.asarray(r_sidx, np.int32), r_wave=r_wave.astype(np.int32, copy=False),
        r_wave_min=r_wave_min.astype(np.int32, copy=False), r_tx_start=tx_start,
        r_tx_min=tx_min.astype(np.int32, copy=False), r_tx_min_bytes=tx_min_bytes.astype(np.int64, copy=False),
        tx_addr=tx_addr.astype(np.int64, copy=False), tx_bytes=tx_bytes.astype(np.int64, copy=False),
        tx_chan=tx_chan.astype(np.int32, copy=False))
    grid = Grid(
        c_start=c_start, c_end=c_end, c_block=ctx_block.astype(np.int32), b_ctx_start=b_ctx_start,
        sm_blocks_start=sm_blocks_start, sm_blocks=order,
        sm_part=near_partitions(n_sms, sc.l2_partitions, gm.l2_partition_sms if sc.l2_partitions > 1 else None))
    return EngineInput(static=static, rows=rows, grid=grid, scalars=sc, setup=setup)
