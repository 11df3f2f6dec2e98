"""The resolved machine description handed to the engine, the memory model and the analytical
models. Filled from ``isa_tables/<name>.yaml`` by :mod:`teg.machine.loader` (which validates the
YAML); Python holds no architecture numbers, only this shape.

Vocabulary (TEG report §3.2.1):
* *execution latency* — cycles from issue until a dependent instruction may use the result;
* *issue latency (multiple warps)* — cycles the scheduler waits before it may issue another warp's
  instruction after this one;
* *issue latency (same warp)* — cycles before the same warp may issue its next instruction;
* *unit occupancy* — cycles one warp instruction occupies its functional unit's dispatch
  (32 / lanes per scheduler on sm_70+: the CUDA C++ Programming Guide's "Throughput of Native
  Arithmetic Instructions" results per clock per SM, shared by the SM's four schedulers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Operation kinds (what the engine does with an instruction beyond timing it on its unit).
KINDS = ("alu", "load", "store", "atomic", "branch", "barrier", "exit", "depbar", "membar", "nop",
         "call", "ret", "sync")
# Memory spaces.
SPACES = ("none", "global", "shared", "local", "const", "generic", "texture")


@dataclass(frozen=True)
class OpInfo:
    """Classification of one SASS opcode (full text with modifiers) on one machine."""

    unit: str        # key into Machine.units
    latency: str     # key into Machine.latencies
    kind: str        # one of KINDS
    space: str       # one of SPACES
    variable: bool   # variable latency: sets a dependency barrier on sm_70+ (memory, MUFU, S2R, …)
    unit_class: str  # reporting class: int, fp32, fp16, fp64, sfu, tensor, conversion, move,
                     # predicate, uniform, memory, control, sync, other
    width: int = 0   # bytes per lane a memory op moves (LDS.128 → 16); 0 for non-memory ops
    occupancy: float | None = None  # cycles this op holds its unit when it differs from
                                    # Unit.occupancy (e.g. a shared dispatch port); None = the unit's


@dataclass(frozen=True)
class Unit:
    """A functional unit (pipe). ``count`` copies per scheduler (``per == "scheduler"``) or per SM
    (``per == "sm"``, e.g. the MIO/LSU pipe shared by the 4 sub-partitions); one warp instruction
    occupies one copy's dispatch for ``occupancy`` cycles."""

    name: str
    occupancy: float
    count: int = 1
    per: str = "scheduler"


@dataclass(frozen=True)
class Latency:
    """A latency class: execution latency, issue latency across warps, issue latency same warp."""

    name: str
    execution: float
    issue_multi: float
    issue_same: float


# Sectors per cache line the cache model handles: its state packs a line's valid-sector mask into
# the word that holds the tag (teg.memory.cache).
MAX_SECTORS_PER_LINE = 16


@dataclass(frozen=True)
class Cache:
    """A sectored set-associative LRU cache level (at most ``MAX_SECTORS_PER_LINE`` sectors per line)."""

    size_bytes: int
    line_bytes: int
    sector_bytes: int
    assoc: int
    latency: float          # load-to-use latency on a hit (cycles)
    index: str = "linear"   # set index: "linear" (line mod sets) or "xor" (XOR-based placement)
    # unified L1/shared: the shared capacities (bytes, ascending) the driver may carve out of
    # ``size_bytes`` per kernel; empty: the L1 only loses what the resident blocks allocate
    shared_carveouts: tuple[int, ...] = ()
    # unified L1/shared (sm_70+): cache lines whose tags the L1's tag stage resolves per cycle;
    # 0: not modelled, a global access takes one data-stage wavefront per line it touches
    # (docs/model.md §3, "L1 wavefronts of global accesses")
    tags_per_cycle: int = 0
    # unified L1 (sm_70+): cycles the SM's write-through store path needs per 32 B sector a global
    # store sends to L2; 0: not modelled, stores only pass the tag stage (docs/model.md §3,
    # "Store path")
    store_cycles_per_sector: float = 0.0
    # sm_70+: cycles the L1's miss stage spends on each request it sends to L2 (one per cache line
    # with sectors to fetch or write), in series with the access's wavefronts; 0: not modelled
    # (docs/model.md §3, "L2 requests")
    l2_request_cycles: float = 0.0


@dataclass(frozen=True)
class Tlb:
    """Address translation of global accesses that go past L1 (docs/model.md §3, "Address
    translation"): a per-SM L1 TLB and one L2 TLB shared by the GPU, each a fully associative LRU
    set of ``entries`` translations of ``page_bytes`` each, cold when a kernel starts."""

    page_bytes: int             # bytes one L1 TLB entry translates (the GPU's large page)
    l1_entries: int             # L1 TLB entries per SM
    l2_page_bytes: int          # bytes one L2 TLB entry translates
    l2_entries: int             # L2 TLB entries (whole GPU)
    l2_latency: float           # cycles an L1 TLB miss that hits the L2 TLB adds to the access
    walk_latency: float         # cycles a miss in both (a page-table walk) adds to the access


@dataclass(frozen=True)
class DramTurnaround:
    """DRAM read/write turnaround (docs/model.md §3, "Read/write turnaround"): each channel buffers
    writes and drains them in batches of ``write_batch_bytes``; turning its data bus from reads to
    writes idles it ``read_to_write_ns``, turning back ``write_to_read_ns``."""

    read_to_write_ns: float     # data-bus bubble of a read-to-write switch
    write_to_read_ns: float     # data-bus bubble of a write-to-read switch (tWTR + read latency)
    write_batch_bytes: int      # bytes of writes drained per direction switch (write-queue watermarks)


@dataclass(frozen=True)
class DramRows:
    """DRAM row buffers (docs/model.md §3, "Row buffers"): each DRAM channel has ``banks`` banks,
    each keeping its last row of ``row_bytes`` (channel-local bytes) open; an access to another
    row than its bank's open one pays ``row_miss_ns`` more (precharge + activate, tRP + tRCD) than
    a row hit. The table's ``dram_latency`` is the row-miss latency (a pointer chase's)."""

    banks: int                  # banks per channel
    row_bytes: int              # bytes of one row (page) of one bank, channel-local addresses
    row_miss_ns: float          # tRP + tRCD: what a row miss adds to a row hit


@dataclass(frozen=True)
class SharedMemory:
    """Shared-memory banking (TEG §3.3.3; CUDA C++ Programming Guide, shared memory of
    compute capability 5.x and later: 32 banks of 4 bytes)."""

    banks: int                  # 16 (GT200) or 32
    bank_bytes: int             # 4
    phase_lanes: int            # lanes whose conflicts are evaluated together: 16 (half-warp) or 32
    latency: float              # conflict-free latency
    wavefront_cycles: float     # extra cycles per extra wavefront (serialized access)
    size_per_sm: int            # bytes available to blocks per SM
    max_per_block: int
    alloc_unit: int             # allocation granularity in bytes
    reserved_per_block: int = 0  # shared memory the CUDA driver reserves for every block (sm_80+: 1 KB)
    paired_loads: bool = False  # 64/128-bit loads whose lanes pair up are served in phases of twice the lanes


@dataclass(frozen=True)
class GlobalMemory:
    """Global memory path: coalescing rule, caches, DRAM channels (TEG §3.2.4, §3.3.4, §3.3.5)."""

    coalescing: str             # "cc13" (GT200 segments per half-warp) or "sector" (32 B sectors / 128 B lines)
    segment_bytes: tuple[int, ...]  # cc13: (32, 64, 128); sector: (32,)
    dram_latency: float         # cycles from issue to data for a DRAM access (no queueing)
    channels: int               # DRAM channels / partitions
    interleave_bytes: int       # channel interleave granularity
    channel_hash: str           # "linear" | "xor" | "ipoly"
    bandwidth_gbs: float        # peak DRAM bandwidth, whole GPU
    max_outstanding: int        # memory pipeline slots (C_mem) per pipeline
    sms_per_pipeline: int       # SMs sharing one memory pipeline (3 per TPC on GT200, 1 otherwise)
    l1: Cache | None = None
    l2: Cache | None = None
    l2_bandwidth_bytes_per_clk: float | None = None
    local_latency: float | None = None
    const_latency: float | None = None
    l2_partitions: int = 1              # near/far L2 partitions: each SM has a near one, each address a home one
    l2_partition_bytes: int = 8192      # home-partition interleave of addresses
    l2_partition_sms: tuple[int, ...] | None = None  # SMs near each partition, in SM order (None: even split)
    l2_far_latency: float | None = None  # load-to-use latency of a hit in the far partition
    l2_slices: int | None = None        # L2 slices in all; each serves l2_bandwidth_bytes_per_clk / l2_slices
    l1_mshr_lines: int | None = None    # outstanding L1 misses per SM, one entry per cache line (None: C_mem)
    icache_line_bytes: int | None = None  # instruction-cache line; None: a perfect instruction cache
    icache_prefetch_lines: int | None = None  # lines the sequential prefetch runs ahead (None: derived)
    tlb: Tlb | None = None              # address translation (None: not modelled)
    dram_turnaround: DramTurnaround | None = None  # read/write turnaround (None: not modelled)
    dram_rows: DramRows | None = None   # open-row buffers of the DRAM banks (None: not modelled)
    l1_caches_global_loads: bool = True  # False: plain global/generic loads are L2-only and only
                                         # loads that ask for L1 (.CI/.CONSTANT = .nc, .CA) use it
                                         # (Maxwell/Pascal; teg.memory.cachepolicy.bypasses_l1)


@dataclass(frozen=True)
class Limits:
    """Occupancy limits per SM (CUDA Programming Guide, compute-capability tables)."""

    max_warps: int
    max_blocks: int
    max_threads: int
    max_threads_per_block: int
    registers: int
    max_regs_per_thread: int
    reg_alloc_unit: int         # registers per warp allocation granularity
    reg_alloc_per: str = "warp"  # "warp" or "block"


@dataclass
class Machine:
    """A fully resolved machine table."""

    name: str
    description: str
    sm: int                     # compute capability as an integer: 13 (GT200), 70, 80, 86, 90 …
    clock_mhz: float
    num_sms: int
    warp_size: int
    schedulers: int             # issue engines per SM (1 on GT200, 4 sub-partitions on sm_70+)
    issue_interval: float       # cycles between two issues of one scheduler (2 on GT200, 1 on sm_70+)
    dependency_model: str       # default: "scoreboard" or "controlcodes"
    limits: Limits
    units: dict[str, Unit]
    latencies: dict[str, Latency]
    shared: SharedMemory
    memory: GlobalMemory
    opcodes: dict[str, OpInfo] = field(default_factory=dict)  # "IMAD", "IMAD.WIDE", "MUFU.RSQ" … → OpInfo
    extras: dict[str, Any] = field(default_factory=dict)   # model-only parameters (analytical models)
    source_path: str = ""
    raw: dict[str, Any] = field(default_factory=dict)      # the resolved YAML document
    # cycles from a block slot freeing on an SM to the first issue of the next block dealt there
    # (the CWD's completion tracking and dispatch); 0 where no measurement exists
    block_launch_cycles: float = 0.0
    # the warp schedulers' issue order when the options name none (teg.engine.Options.policy):
    # "gto" greedy-then-oldest, "gty" greedy-then-youngest, "lrr" loose round-robin
    scheduler_policy: str = "gto"
    # cycles a kernel takes beyond its SMs' work: launch (the front end reading the launch and
    # dealing the first blocks) and drain (completion after the last block); 0 where unmeasured
    kernel_launch_cycles: float = 0.0

    def occupancy(self, info: OpInfo) -> float:
        """Cycles one warp instruction classified as ``info`` holds its unit: the opcode's own
        ``occupancy`` when the table gives one, else its unit's."""
        return info.occupancy if info.occupancy is not None else self.units[info.unit].occupancy

    def classify(self, opcode: str) -> OpInfo | None:
        """Classify a full opcode (``"IMAD.WIDE.U32"``); None when the table does not know it.

        Table keys are a base opcode optionally followed by modifiers (``"LDS.128"``); a key
        matches when its base equals the opcode's base and all its modifiers occur among the
        opcode's modifiers. The key with the most modifiers wins (ties: table order)."""
        key = self.match_key(opcode)
        return None if key is None else self.opcodes[key]

    def match_key(self, opcode: str) -> str | None:
        """The ``opcodes`` key that :meth:`classify` uses for ``opcode`` (None when none matches;
        remembered per opcode text, like the key index, for the table as first classified)."""
        memo = self.__dict__.setdefault("_match_memo", {})
        if opcode not in memo:
            memo[opcode] = self._match_key(opcode)
        return memo[opcode]

    def _match_key(self, opcode: str) -> str | None:
        base, *mods = opcode.split(".")
        best: str | None = None
        best_n = -1
        for key_mods, key in self._index().get(base, ()):
            if len(key_mods) > best_n and all(m in mods for m in key_mods):
                best, best_n = key, len(key_mods)
        return best

    def _index(self) -> dict[str, list[tuple[tuple[str, ...], str]]]:
        idx = self.__dict__.get("_opcode_index")
        if idx is None:
            idx = {}
            for key in self.opcodes:
                kb, *km = key.split(".")
                idx.setdefault(kb, []).append((tuple(km), key))
            self.__dict__["_opcode_index"] = idx
        return idx
