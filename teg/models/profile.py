"""The kernel profile every analytical model reads: ``KernelProfile``.

Hong & Kim (Table 1), Dasgupta (§3.1 items a–o), Luo & Suda (§3.2, eqs. 1–2) and Amarís et al.
(eqs. 3–5) all start from the same few counts of a kernel: dynamic instructions per warp by class,
global memory requests and their transactions, shared-memory requests and bank conflicts, occupancy,
and (Luo & Suda) the order of computation and memory tasks. ``KernelProfile`` holds them;
:func:`profile_from` derives them from a Program + KernelTrace + Machine (no hand counting), and the
tests build profiles by hand from the papers' worked examples.

Conventions: counts ``*_insts`` / ``trans_*`` are per warp (dynamic warp instructions of the whole
kernel divided by the number of warps, i.e. "per thread" in the papers, which count one thread of a
non-divergent warp); ``thread_*`` counts are per thread (active-lane instructions divided by threads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from teg import TegError


class ProfileError(TegError):
    """The profile cannot be derived (unknown opcode, trace/machine mismatch, empty kernel)."""


@dataclass(frozen=True)
class Period:
    """One *calculate period* (Luo & Suda §3.2): a computation task followed by a memory task.

    ``comp`` — computation instructions of the task by unit class (per warp);
    ``mem_insts`` — global memory instructions of the following memory task (per warp);
    ``mem_width`` — average bytes per thread of those instructions (D_mem of eq. 1);
    ``mem_trans`` — average transactions per memory instruction (N_trans of eq. 1)."""

    comp: Mapping[str, float] = field(default_factory=dict)
    mem_insts: float = 0.0
    mem_width: float = 4.0
    mem_trans: float = 1.0

    @property
    def comp_insts(self) -> float:
        return float(sum(self.comp.values()))


@dataclass(frozen=True)
class KernelProfile:
    """What the analytical models know about a kernel launch on a machine.

    Launch / occupancy (Hong & Kim Table 1 rows 8–12, eq. 20–21):
      ``threads_per_block``, ``blocks``, ``active_blocks_per_sm``, ``active_sms``.
    Instructions per warp (rows 13–18; Dasgupta §3.1 f, n, o):
      ``comp_insts`` — every instruction that is not a global-memory request (shared-memory
      accesses and barriers included, as in Hong & Kim's Table 2 example);
      ``mem_insts`` — global (and local) memory requests, loads + stores;
      ``coal_mem_insts`` / ``uncoal_mem_insts`` — split by Hong & Kim's rule (a request is
      coalesced when it needs no more transactions than its data size requires);
      ``uncoal_per_mw`` — average transactions of an uncoalesced request (row 20);
      ``synch_insts`` — barriers; ``high_latency_insts`` — SFU/MUFU instructions;
      ``class_counts`` — computation instructions by unit class (for per-class costs).
    Transactions per warp by size (Dasgupta eq. 16–22): ``trans_32``, ``trans_64``, ``trans_128``
      for scalar requests, ``trans_vector`` (and the bytes they move, ``vector_bytes``) for requests
      of more than 4 bytes per thread.
    Shared memory per warp (Dasgupta §3.1 k–m): ``shared_insts``, ``shared_conflicted`` and
      ``shared_conflict_latency`` (average cycles of a conflicted request).
    ``load_bytes_per_warp`` (Hong & Kim row 21); ``duplicate_loads`` and ``independent_loads``
      (Dasgupta eq. 27); per-thread counts for BSP (Amarís eqs. 3–5); ``l1_hit_rate`` /
      ``l2_hit_rate`` from the cache model (None when not computed); ``periods`` in program order
      (Luo & Suda §3.5).
    """

    threads_per_block: int
    blocks: int
    active_blocks_per_sm: int
    active_sms: int
    comp_insts: float
    mem_insts: float
    coal_mem_insts: float = 0.0
    uncoal_mem_insts: float = 0.0
    uncoal_per_mw: float = 1.0
    coal_per_mw: float = 1.0
    synch_insts: float = 0.0
    high_latency_insts: float = 0.0
    load_bytes_per_warp: float = 128.0
    trans_32: float = 0.0
    trans_64: float = 0.0
    trans_128: float = 0.0
    trans_vector: float = 0.0
    vector_bytes: float = 0.0
    shared_insts: float = 0.0
    shared_conflicted: float = 0.0
    shared_conflict_latency: float = 0.0
    duplicate_loads: float = 1.0
    independent_loads: float = 1.0
    thread_comp: float = 0.0
    thread_ld_global: float = 0.0
    thread_st_global: float = 0.0
    thread_ld_shared: float = 0.0
    thread_st_shared: float = 0.0
    l1_hit_rate: float | None = None
    l2_hit_rate: float | None = None
    class_counts: Mapping[str, float] = field(default_factory=dict)
    periods: tuple[Period, ...] = ()
    warp_size: int = 32
    name: str = "kernel"
    unknown_opcodes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.threads_per_block <= 0 or self.blocks <= 0:
            raise ProfileError(f"{self.name}: a kernel needs at least one block and one thread")
        if self.active_blocks_per_sm <= 0 or self.active_sms <= 0:
            raise ProfileError(f"{self.name}: occupancy is zero (the block does not fit on an SM)")
        split = self.coal_mem_insts + self.uncoal_mem_insts
        if abs(split - self.mem_insts) > 1e-9 * max(1.0, self.mem_insts):
            raise ProfileError(f"{self.name}: coalesced ({self.coal_mem_insts}) + uncoalesced "
                               f"({self.uncoal_mem_insts}) requests differ from mem_insts ({self.mem_insts})")

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // self.warp_size)

    @property
    def active_warps_per_sm(self) -> int:
        """N = #Active_warps_per_SM (Hong & Kim eq. 20, Table 1 row 12)."""
        return self.active_blocks_per_sm * self.warps_per_block

    @property
    def rep(self) -> float:
        """#Rep = #Blocks / (#Active_blocks_per_SM × #Active_SMs) (Hong & Kim eq. 21)."""
        return self.blocks / (self.active_blocks_per_sm * self.active_sms)

    @property
    def total_insts(self) -> float:
        """#Total_insts = #Comp_insts + #Mem_insts (Table 1 row 13)."""
        return self.comp_insts + self.mem_insts

    @property
    def threads(self) -> int:
        return self.threads_per_block * self.blocks


def launch_shape(machine, blocks: int, occupancy_limit: int) -> tuple[int, int]:
    """(#Active_blocks_per_SM, #Active_SMs) for ``blocks`` blocks: the grid is spread over
    min(SMs, blocks) SMs, each holding at most ``occupancy_limit`` blocks at a time."""
    if occupancy_limit <= 0:
        raise ProfileError(f"{machine.name}: the block does not fit on an SM (occupancy 0)")
    active_sms = min(machine.num_sms, blocks)
    per_sm = min(occupancy_limit, -(-blocks // active_sms))
    return per_sm, active_sms


# --------------------------------------------------------------------------------------------
# Deriving a profile from a trace

_MEM_KINDS = ("load", "store", "atomic")
_GLOBAL_SPACES = ("global", "local", "generic")


def _classify(machine, opcodes: list[str], unknown: str, where: str):
    """OpInfo of every opcode text; unknown opcodes raise (``unknown="error"``) or count as
    integer ALU instructions (``unknown="alu"``). Returns (infos, names of unknown opcodes)."""
    infos, missing = [], []
    for op in opcodes:
        info = machine.classify(op)
        if info is None:
            missing.append(op)
        infos.append(info)
    if missing and unknown != "alu":
        shown = ", ".join(sorted(set(missing))[:8]) + (" …" if len(set(missing)) > 8 else "")
        raise ProfileError(f"{where}: opcodes unknown to machine table {machine.name!r}: {shown} "
                           "(add them to its opcodes map, or count them as integer ALU: --unknown alu)")
    if missing:
        import warnings

        from teg import UnknownOpcodeWarning

        warnings.warn(f"{where}: counting opcodes unknown to {machine.name!r} as integer ALU: "
                      f"{', '.join(sorted(set(missing)))}", UnknownOpcodeWarning, stacklevel=2)
    return infos, sorted(set(missing))


@dataclass(frozen=True)
class _Rows:
    """Per-row classification of a trace (boolean columns, unit-class index, active lanes)."""

    is_memop: np.ndarray
    is_gmem: np.ndarray
    is_smem: np.ndarray
    is_load: np.ndarray
    is_lds: np.ndarray     # bool per row: an LDS (shared load that may pack paired lanes; not LDSM)
    skips_l1: np.ndarray   # bool per row: the access bypasses L1 (teg.memory.cachepolicy, shared with the engine)
    is_barrier: np.ndarray
    is_sfu: np.ndarray
    cls_idx: np.ndarray
    classes: list[str]
    active: np.ndarray
    width: np.ndarray
    unknown: tuple[str, ...]


def _rows(program, kt, machine, unknown: str, where: str) -> _Rows:
    """Classify every row by the machine table (the program's static opcode text when given)."""
    from teg.models.trace_stats import popcount32

    opcode_ids = np.asarray(kt.opcode, np.int64)
    texts = list(kt.opcodes)
    if program is not None:
        from teg.trace import join

        static = join(kt, program).astype(np.int64)
        pairs = np.unique(np.stack([static, opcode_ids], 1), axis=0)
        texts = [program.instructions[s].opcode for s in pairs[:, 0].tolist()]
        opcode_ids = _remap_pairs(static, opcode_ids, pairs)
    infos, unknown_ops = _classify(machine, texts, unknown, where)
    kind_tab = np.array([i.kind if i else "alu" for i in infos], object)
    space_tab = np.array([i.space if i else "none" for i in infos], object)
    uclass_tab = [i.unit_class if i else "int" for i in infos]
    active = popcount32(np.asarray(kt.mask, np.uint32)).astype(np.int64)
    is_memop = np.isin(kind_tab, _MEM_KINDS)[opcode_ids]
    is_gmem = is_memop & np.isin(space_tab, _GLOBAL_SPACES)[opcode_ids] & (active > 0)
    is_smem = is_memop & (space_tab == "shared")[opcode_ids] & (active > 0)
    from teg.memory.cachepolicy import bypasses_l1

    l1_flag = machine.memory.l1_caches_global_loads
    skip_l1_tab = np.array([bool(i) and bypasses_l1(t, i.kind, i.space, l1_flag) for t, i in zip(texts, infos)], bool)
    classes = sorted(set(uclass_tab) | {"shared"})
    cls_idx = np.array([classes.index(c) for c in uclass_tab], np.int64)[opcode_ids]
    cls_idx[is_smem] = classes.index("shared")
    return _Rows(
        is_memop=is_memop, is_gmem=is_gmem, is_smem=is_smem,
        is_load=(kind_tab == "load")[opcode_ids],
        is_lds=np.array([t.split(".")[0] == "LDS" for t in texts], bool)[opcode_ids] if texts else
        np.zeros(opcode_ids.shape[0], bool),
        is_barrier=(kind_tab == "barrier")[opcode_ids],
        skips_l1=skip_l1_tab[opcode_ids],
        is_sfu=(np.array(uclass_tab, object) == "sfu")[opcode_ids] & ~is_gmem,
        cls_idx=cls_idx, classes=classes, active=active,
        width=np.asarray(kt.mem_width, np.int64), unknown=tuple(unknown_ops))


def _coalesced(kt, machine, rows: _Rows, gmem_width: np.ndarray, n_trans: np.ndarray,
               min_count: np.ndarray) -> np.ndarray:
    """Hong & Kim's coalesced requests: no more transactions than the data needs (footnote 8); on
    compute capability 1.0/1.1 the G80 rule (:func:`~teg.models.trace_stats.g80_coalesced`)."""
    from teg.models.trace_stats import g80_coalesced

    if machine.sm >= 12:
        return rows.is_gmem & (n_trans <= min_count)
    ws = machine.warp_size
    out = np.zeros(kt.num_rows, bool)
    for i in np.flatnonzero(rows.is_gmem):
        lanes = np.flatnonzero((int(kt.mask[i]) >> np.arange(ws)) & 1)
        a = kt.addresses[kt.addr_start[i]:kt.addr_start[i + 1]]
        out[i] = a.shape[0] == lanes.shape[0] and g80_coalesced(a, lanes, int(gmem_width[i]))
    return out


def _transactions(kt, machine, rows: _Rows, gmem_width: np.ndarray):
    """Transactions of every global request by the machine's coalescing rule (:mod:`teg.memory.coalesce`):
    ``(start, addr, nbytes, min_count)`` in CSR form."""
    from teg.memory.coalesce import cc13_transactions, sector_transactions

    args = (np.asarray(kt.addr_start, np.int64), np.asarray(kt.addresses, np.uint64), np.asarray(kt.mask, np.uint32),
            gmem_width, rows.is_gmem)
    if machine.memory.coalescing == "cc13":
        start, addr, nbytes, min_count, _ = cc13_transactions(*args, machine.warp_size)
    else:
        start, addr, nbytes, min_count, _ = sector_transactions(*args, machine.memory.segment_bytes[0], machine.warp_size)
    return start, addr, nbytes, min_count


def _bank_conflicts(kt, machine, rows: _Rows) -> tuple[np.ndarray, np.ndarray]:
    """(conflicted shared rows, wavefronts per row) from :func:`teg.memory.shared.shared_wavefronts`
    (:func:`~teg.memory.shared.shared_wavefronts_paired` for the LDS rows on a table with
    ``shared.paired_loads``, as the engine counts them)."""
    from teg.memory.shared import shared_wavefronts, shared_wavefronts_paired

    sh = machine.shared
    wave = np.zeros(kt.num_rows, np.int64)
    wave_min = np.zeros(kt.num_rows, np.int64)
    width = np.where(rows.width > 0, rows.width, sh.bank_bytes)
    args = (np.asarray(kt.addr_start, np.int64), np.asarray(kt.addresses, np.uint64),
            np.asarray(kt.mask, np.uint32), width, rows.is_smem)
    if sh.paired_loads:
        shared_wavefronts_paired(*args, rows.is_lds & (width >= 8), sh.banks, sh.bank_bytes, sh.phase_lanes,
                                 machine.warp_size, wave, wave_min)
    else:
        shared_wavefronts(*args, sh.banks, sh.bank_bytes, sh.phase_lanes, machine.warp_size, wave, wave_min)
    return rows.is_smem & (wave > wave_min), wave


def _periods(kt, rows: _Rows, gmem_width: np.ndarray, n_trans: np.ndarray) -> tuple[Period, ...]:
    """Luo & Suda's calculate periods of the average warp (:func:`~teg.models.trace_stats.period_table`)."""
    from teg.models.trace_stats import period_table

    comp, mem, width, trans = period_table(np.asarray(kt.warp_start, np.int64), rows.is_gmem, rows.cls_idx,
                                           len(rows.classes), gmem_width.astype(float), n_trans.astype(float))
    return tuple(Period(comp={rows.classes[c]: float(comp[k, c]) for c in range(len(rows.classes)) if comp[k, c]},
                        mem_insts=float(mem[k]), mem_width=float(width[k]), mem_trans=float(trans[k]))
                 for k in range(comp.shape[0]))


def profile_from(program, kernel_trace, machine, *, unknown: str = "error", cache_model: bool = True,
                 active_blocks_per_sm: int | None = None) -> KernelProfile:
    """Derive the :class:`KernelProfile` of one traced kernel launch on ``machine``.

    * Instructions are classified by the machine table (:meth:`Machine.classify`; with a
      ``program`` the trace is joined to it and its static opcode text is used). Global-memory
      requests are loads/stores/atomics to global, local or generic space with an active lane;
      everything else is computation (Hong & Kim §3.6 count shared accesses and barriers there).
    * Transactions follow the machine's coalescing rule (:mod:`teg.memory.coalesce`: GT200 segments
      or 32 B sectors). A request is *coalesced* (Hong & Kim footnote 8) when it needs no more
      transactions than its bytes require (``min_count``); on compute capability 1.0/1.1 machines
      the stricter G80 rule decides (:func:`~teg.models.trace_stats.g80_coalesced`).
    * Shared requests, their bank conflicts (:func:`teg.memory.shared.shared_wavefronts`) and the
      average conflicted latency = wavefronts × ``shared.wavefront_cycles``.
    * Occupancy from registers, shared memory and block size (the engine's rule,
      :func:`teg.engine.occupancy.occupancy`), unless ``active_blocks_per_sm`` is given.
    * Duplicate / independent loads, calculate periods and cache hit rates as in
      :mod:`teg.models.trace_stats`.
    """
    from teg.models import trace_stats as ts

    kt = kernel_trace
    info = kt.info
    where = f"kernel {info.name or info.kernel_id}"
    if kt.num_rows == 0:
        raise ProfileError(f"{where}: the trace has no instructions")
    rows = _rows(program, kt, machine, unknown, where)
    warps = kt.num_warps
    ws = machine.warp_size
    threads = info.threads_per_block * info.num_blocks
    gmem, load, active = rows.is_gmem, rows.is_load, rows.active
    gmem_width = np.where(rows.width > 0, rows.width, 4)

    t_start, t_addr, t_bytes, min_count = _transactions(kt, machine, rows, gmem_width)
    n_trans = np.diff(t_start)
    coalesced = _coalesced(kt, machine, rows, gmem_width, n_trans, min_count)
    uncoal = gmem & ~coalesced
    vector = gmem & (gmem_width > 4)
    txn_row = np.repeat(np.arange(kt.num_rows), n_trans)
    scalar_txn = ~vector[txn_row]
    vec_txn = vector[txn_row]
    conflicted, wave = _bank_conflicts(kt, machine, rows)
    n_conf = int(conflicted.sum())

    occ = ts.occurrence(np.asarray(kt.warp, np.int64), np.asarray(kt.pc, np.int64))
    dup = ts.duplicate_loads(np.flatnonzero(gmem & load & ~vector), np.asarray(kt.block), np.asarray(kt.pc), occ,
                             txn_row, t_addr)
    indep = ts.independent_loads(kt.warp, gmem & load, kt.src, kt.dst)
    per_class = np.bincount(rows.cls_idx[~gmem], minlength=len(rows.classes))

    if active_blocks_per_sm is None:
        from teg.engine.occupancy import occupancy

        limit = occupancy(machine, info.threads_per_block, info.nregs, info.shmem).blocks
    else:
        limit = active_blocks_per_sm
    per_sm, active_sms = launch_shape(machine, info.num_blocks, limit)
    h1 = h2 = None
    if cache_model:
        h1, h2 = ts.cache_hit_rates(machine, np.asarray(kt.warp_start, np.int64), np.flatnonzero(gmem), gmem & load,
                                    np.asarray(kt.block), t_start, t_addr, active_sms, rows.skips_l1)

    def per_warp(x) -> float:
        return float(np.count_nonzero(x)) / warps

    def per_thread(sel) -> float:
        return float(active[sel].sum()) / threads

    n_g = int(gmem.sum())
    return KernelProfile(
        name=info.name or f"kernel-{info.kernel_id}",
        threads_per_block=info.threads_per_block, blocks=info.num_blocks,
        active_blocks_per_sm=per_sm, active_sms=active_sms, warp_size=ws,
        comp_insts=per_warp(~gmem), mem_insts=n_g / warps,
        coal_mem_insts=per_warp(gmem & coalesced), uncoal_mem_insts=per_warp(uncoal),
        uncoal_per_mw=float(n_trans[uncoal].mean()) if uncoal.any() else 1.0,
        coal_per_mw=float(n_trans[gmem & coalesced].mean()) if (gmem & coalesced).any() else 1.0,
        synch_insts=per_warp(rows.is_barrier), high_latency_insts=per_warp(rows.is_sfu),
        load_bytes_per_warp=float(gmem_width[gmem].mean() * ws) if n_g else float(4 * ws),
        trans_32=per_warp(scalar_txn & (t_bytes == 32)), trans_64=per_warp(scalar_txn & (t_bytes == 64)),
        trans_128=per_warp(scalar_txn & (t_bytes == 128)),
        trans_vector=per_warp(vec_txn), vector_bytes=float(t_bytes[vec_txn].sum()) / warps,
        shared_insts=per_warp(rows.is_smem), shared_conflicted=n_conf / warps,
        shared_conflict_latency=float(wave[conflicted].mean() * machine.shared.wavefront_cycles) if n_conf else 0.0,
        duplicate_loads=dup, independent_loads=indep,
        thread_comp=per_thread(~rows.is_memop & ~rows.is_barrier),
        thread_ld_global=per_thread(gmem & load), thread_st_global=per_thread(gmem & ~load),
        thread_ld_shared=per_thread(rows.is_smem & load), thread_st_shared=per_thread(rows.is_smem & ~load),
        l1_hit_rate=h1, l2_hit_rate=h2,
        class_counts={rows.classes[c]: float(per_class[c]) / warps for c in range(len(rows.classes)) if per_class[c]},
        periods=_periods(kt, rows, gmem_width, n_trans), unknown_opcodes=rows.unknown,
    )


def _remap_pairs(static: np.ndarray, opcode_ids: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Row → index into ``pairs`` (the unique (static index, trace opcode) pairs), vectorized."""
    key = static.astype(np.int64) * (int(opcode_ids.max()) + 1) + opcode_ids
    pkey = pairs[:, 0] * (int(opcode_ids.max()) + 1) + pairs[:, 1]
    return np.searchsorted(pkey, key)
