"""Engine options: one switch per modelled mechanism (the what-if knobs), the scheduling policy,
the dependency model and the simulated configuration (SMs, warps, resident blocks).

A switch set to ``False`` *removes* its mechanism (``bank_conflicts=False`` = every shared access
is conflict-free). Each switch touches only its own mechanism (docs/model.md lists what each one
changes), so ``teg whatif`` can attribute cycles to mechanisms one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from teg import TegError

from teg.engine.dealing import SAMPLINGS

POLICIES = ("lrr", "gto", "gty")
DEPENDENCY_MODELS = ("auto", "scoreboard", "controlcodes")
UNKNOWN_OPCODES = ("error", "alu")

# The removable mechanisms, in the order ``teg whatif`` lists them: field name → what removing it means.
MECHANISMS: dict[str, str] = {
    "bank_conflicts": "no bank conflicts",
    "coalescing": "perfect coalescing",
    "channel_skew": "no channel skew",
    "bandwidth": "unlimited bandwidth",
    "l1_misses": "perfect L1",
    "l2_misses": "perfect L2",
    "l2_requests": "free L1-to-L2 requests",
    "dependencies": "ideal dependencies",
    "unit_throughput": "unlimited functional units",
    "same_warp_penalty": "no same-warp issue penalty",
    "barriers": "free barriers",
    "block_launch": "instant block launch",
    "kernel_launch": "no kernel launch overhead",
    "instruction_fetch": "perfect instruction cache",
    "constant_cache": "perfect constant cache",
    "tlb": "perfect TLB",
    "store_path": "unlimited store path",
    "dram_turnaround": "no DRAM read/write turnaround",
    "dram_row_misses": "every DRAM access a row hit",
}


class OptionsError(TegError):
    """An engine option with a bad value."""


@dataclass(frozen=True)
class Options:
    """Switches and configuration of one engine run.

    Mechanism switches (``True`` = modelled, ``False`` = removed):

    * ``bank_conflicts`` — shared-memory accesses take their conflict-degree wavefronts;
    * ``coalescing`` — global accesses use the transactions the coalescing rule gives (off: the
      minimum number of transactions the active lanes' bytes need);
    * ``channel_skew`` — DRAM channel from the address, channels serve their own load (off: every
      transaction keeps its channel and FIFO place, but a channel loaded above the mean serves
      with its service time scaled by ``mean_load / load[c]`` — as if it carried the average
      load; :func:`teg.memory.channels.balance_scale`);
    * ``bandwidth`` — each DRAM channel serves bytes at its share of peak (off: no service time);
    * ``l1_misses`` / ``l2_misses`` — cache misses (off: every access costs that level's hit
      latency; the caches still evolve as with the mechanism on);
    * ``l2_requests`` — each request an SM's L1 sends to L2 (a load's cache line with sectors to
      fetch, a store's, atomic's or L2-only load's line) holds its L1TEX pipeline
      ``memory.l1.l2_request_cycles``, in series with the access's wavefronts, and the access's
      requests leave one after another (off: requests cost the pipeline nothing; no effect on
      machine tables without the key);
    * ``dependencies`` — register / dependency-barrier waits (off: results ready at issue);
    * ``unit_throughput`` — functional-unit occupancy (off: units always free);
    * ``same_warp_penalty`` — same-warp issue latency (off: equals the multi-warp issue latency;
      control-code stall counts become 1);
    * ``barriers`` — ``BAR`` waits for all warps of its block (off: it does not wait);
    * ``block_launch`` — a block dealt to a freed slot issues ``block_launch_cycles`` later (off: 1);
    * ``kernel_launch`` — the kernel takes ``kernel_launch_cycles`` beyond its SMs' work, its launch
      and drain, charged to every SM as ``no_warp`` (off: 0);
    * ``instruction_fetch`` — each SM starts the kernel with a cold instruction cache: a warp waits
      for the line of code it needs to arrive from L2 (DRAM on the GPU's first fetch of it),
      charged as ``instruction_fetch`` (off: a perfect instruction cache; no effect on machine
      tables without ``icache_line_bytes``);
    * ``constant_cache`` — each SM starts the kernel with a cold constant cache: an instruction
      whose ``c[bank][offset]`` line the SM has not read waits for it from L2, charged as
      ``constant_miss`` (off: a perfect constant cache; needs SASS operands and
      ``icache_line_bytes``);
    * ``tlb`` — each SM starts the kernel with a cold L1 TLB and the GPU with a cold L2 TLB: an
      access past L1 whose page the SM's L1 TLB does not hold waits for the L2 TLB or a page walk,
      charged as ``tlb_miss`` (off: a perfect TLB; no effect on machine tables without
      ``memory.tlb``);
    * ``store_path`` — a global store occupies its SM's write-through store path
      ``memory.l1.store_cycles_per_sector`` cycles per 32 B sector it sends to L2, and the next
      store of that SM issues only once the path is free, charged as ``unit_busy`` (off: stores
      pass the L1 tag stage only; no effect on machine tables without that key).
    * ``dram_turnaround`` — a DRAM channel buffers writes and drains them in batches: each batch
      turns the channel's data bus from reads to writes and the next read turns it back, each
      turn idling the bus for the table's ``memory.dram_turnaround`` times (off: direction switches
      are free; no effect on machine tables without it).
    * ``dram_row_misses`` — each DRAM bank keeps its last row open (``memory.dram_rows``): an
      access to another row pays the table's ``row_miss_ns`` (precharge + activate) on top of a
      row hit's latency, which is ``dram_latency`` less that (off: every DRAM access is a row hit;
      no effect on machine tables without it).

    Configuration: ``policy`` (``lrr`` loose round-robin, ``gto`` greedy-then-oldest, ``gty``
    greedy-then-youngest; ``None``, the default: the machine table's ``scheduler_policy``, else
    ``gto``),
    ``dependency_model`` (``auto`` = the machine table's default when the SASS carries control
    codes, else ``scoreboard``), ``sms`` simulated SMs (``None``, the default: every SM of the
    GPU, blocks dealt dynamically, one memory system; a number N samples SMs 0…N−1, which get the
    blocks ``sampling`` deals them and its share of DRAM bandwidth and L2), ``sampling`` (how a
    sampled run deals the blocks, :mod:`teg.engine.dealing`: ``waves``, the default — the first
    wave breadth-first, later blocks R at a time to SMs in index order, as the hardware deals them
    to identical SMs, the sampled SMs getting the share of the blocks they run; ``round-robin`` —
    TEG's method, block j → SM j mod num_sms, N/busy of DRAM bandwidth and L2), ``warps`` (sweep
    mode: exactly this many concurrent warps on one SM, each running one trace warp's stream), ``blocks`` (sweep mode:
    exactly this many blocks resident together on one SM), ``blocks_per_sm`` (resident
    blocks per SM instead of the occupancy calculation), ``shared_carveout`` (the kernel's
    ``cudaFuncAttributePreferredSharedMemoryCarveout``, percent of the SM's shared capacity, 0–100:
    the driver takes the supported carveout nearest to it, at least one block's shared memory, and
    occupancy and the L1 follow from it; ``None``: the driver's own choice; docs/model.md §3),
    ``l2_share`` (the fraction of the L2's capacity the simulated SMs' data may hold, 0 < x ≤ 1;
    ``None``: their share of the busy SMs, simulated / busy — right when every SM works on data of
    its own; a run whose SMs all read the same data, that the GPU's L2 holds once, gives 1),
    ``unknown`` (``error`` or ``alu`` for
    opcodes the machine table does not know), ``record_timeline`` (issue cycle of every row,
    the wait before it by cause, and each memory transaction's queueing: :mod:`teg.engine.records`),
    ``record_order`` (the global issue order, ``Result.order``, that a replay run can follow:
    :func:`teg.engine.lowered.with_replay`)."""

    bank_conflicts: bool = True
    coalescing: bool = True
    channel_skew: bool = True
    bandwidth: bool = True
    l1_misses: bool = True
    l2_misses: bool = True
    l2_requests: bool = True
    dependencies: bool = True
    unit_throughput: bool = True
    same_warp_penalty: bool = True
    barriers: bool = True
    block_launch: bool = True
    kernel_launch: bool = True
    instruction_fetch: bool = True
    constant_cache: bool = True
    tlb: bool = True
    store_path: bool = True
    dram_turnaround: bool = True
    dram_row_misses: bool = True
    policy: str | None = None
    dependency_model: str = "auto"
    sms: int | None = None
    sampling: str = "waves"
    warps: int | None = None
    blocks: int | None = None
    blocks_per_sm: int | None = None
    shared_carveout: float | None = None
    l2_share: float | None = None
    unknown: str = "error"
    record_timeline: bool = False
    record_order: bool = False

    def __post_init__(self) -> None:
        if self.policy is not None and self.policy not in POLICIES:
            raise OptionsError(f"policy {self.policy!r}: expected one of {', '.join(POLICIES)}")
        if self.dependency_model not in DEPENDENCY_MODELS:
            raise OptionsError(f"dependency model {self.dependency_model!r}: expected one of "
                               f"{', '.join(DEPENDENCY_MODELS)}")
        if self.unknown not in UNKNOWN_OPCODES:
            raise OptionsError(f"unknown={self.unknown!r}: expected one of {', '.join(UNKNOWN_OPCODES)}")
        if self.sampling not in SAMPLINGS:
            raise OptionsError(f"sampling {self.sampling!r}: expected one of {', '.join(SAMPLINGS)}")
        if self.sms is not None and int(self.sms) < 1:
            raise OptionsError(f"sms={self.sms}: must be >= 1")
        if self.warps is not None and int(self.warps) < 1:
            raise OptionsError(f"warps={self.warps}: must be >= 1")
        if self.blocks is not None and int(self.blocks) < 1:
            raise OptionsError(f"blocks={self.blocks}: must be >= 1")
        if self.blocks_per_sm is not None and int(self.blocks_per_sm) < 1:
            raise OptionsError(f"blocks_per_sm={self.blocks_per_sm}: must be >= 1")
        if self.shared_carveout is not None and not 0 <= float(self.shared_carveout) <= 100:
            raise OptionsError(f"shared_carveout={self.shared_carveout}: a percentage from 0 to 100")
        if self.l2_share is not None and not 0 < float(self.l2_share) <= 1:
            raise OptionsError(f"l2_share={self.l2_share}: a fraction above 0 and at most 1")

    def without(self, *mechanisms: str) -> "Options":
        """A copy with the named mechanisms removed (``Options().without("bank_conflicts")``)."""
        for m in mechanisms:
            if m not in MECHANISMS:
                raise OptionsError(f"unknown mechanism {m!r}: expected one of {', '.join(MECHANISMS)}")
        return replace(self, **{m: False for m in mechanisms})

    def with_(self, **changes) -> "Options":
        """A copy with fields changed (validated)."""
        names = {f.name for f in fields(self)}
        bad = sorted(set(changes) - names)
        if bad:
            raise OptionsError(f"unknown option {bad[0]!r}")
        return replace(self, **changes)
