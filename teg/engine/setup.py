"""What a run was set up as, and what it did per SM, as typed records beside the loop's tables.

* :class:`RunSetup` — written by :func:`teg.engine.lower.lower`: the kernel and machine, the
  models and policy, the SMs simulated and their share of the memory system, the warps and
  blocks, the residency (:class:`Residency`), the L1 and carveout, the instructions' opcodes
  and PCs, the notes lowering made. An input built by hand (:func:`teg.engine.handmade.make_input`)
  has none unless given one.
* :class:`SmOutcome` — written by :func:`teg.engine.run`: blocks run per SM, the launch and
  drain cycles added, and for several SMs the SM-cycles by cause behind the average breakdown.

Both are frozen; :meth:`RunSetup.to_dict` and :meth:`SmOutcome.to_dict` are their plain-JSON
forms (the keys of an estimate's JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class Residency:
    """Resident blocks and warps per SM and what limited them (``by_limit``: blocks each limit
    allows, when the occupancy calculation decided; None for a sweep or a SASS-only run)."""

    blocks_per_sm: int
    warps_per_sm: int
    limiter: str
    by_limit: dict | None = None

    def to_dict(self) -> dict:
        d = {"blocks_per_sm": self.blocks_per_sm, "warps_per_sm": self.warps_per_sm, "limiter": self.limiter}
        if self.by_limit is not None:
            d["by_limit"] = dict(self.by_limit)
        return d


@dataclass(frozen=True)
class RunSetup:
    """The run's set-up (module docstring). ``dealing``: ``dynamic`` (every SM, blocks dealt as
    the hardware deals them), ``waves`` or ``round-robin`` (sampled SMs, :mod:`teg.engine.dealing`)
    or ``sweep`` (N warps or B blocks on one SM); ``busy_sms``: the SMs the whole launch keeps busy;
    ``share``: the simulated SMs' share of the DRAM bandwidth and L2 (1 for the whole GPU,
    ``sms / busy_sms`` for ``round-robin``, the share of the launch's blocks they run for
    ``waves``, ``1 / num_sms`` for a sweep); ``waves``: blocks / (resident blocks per SM
    x simulated SMs); ``opcodes``/``pcs``/``units``: per static instruction and per unit, in the
    order of the lowered tables."""

    kernel: str = "kernel"
    machine: str | None = None
    clock_mhz: float | None = None
    opcodes: list | None = None
    pcs: object = None
    dependency_model: str | None = None
    policy: str | None = None
    sms: int = 1
    warps: int | None = None
    blocks: int | None = None
    notes: list = field(default_factory=list)
    occupancy: Residency | None = None
    units: list | None = None
    threads_per_block: int | None = None
    warps_per_block: int | None = None
    busy_sms: int | None = None
    dealing: str | None = None
    share: float | None = None
    waves: float = 0.0
    l2_partitions: int = 1
    l2_slices: int = 0
    mshr_lines: int = 0
    l1_bytes: int = 0
    shared_carveout_bytes: int | None = None

    def to_dict(self) -> dict:
        """Every field by name (the residency as a dict)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["occupancy"] = self.occupancy.to_dict() if self.occupancy is not None else None
        return d


@dataclass(frozen=True)
class SmOutcome:
    """What the run did per SM: ``sm_blocks`` (blocks each simulated SM ran),
    ``kernel_launch_cycles`` (added for the launch and drain; 0 with the switch off); with
    several SMs, ``sm_cycle_stalls`` (SM-cycles by cause over every SM) and ``stall_sms`` (the
    SMs that ran a block: the reported breakdown is their average)."""

    sm_blocks: list[int]
    kernel_launch_cycles: int = 0
    sm_cycle_stalls: dict[str, int] | None = None
    stall_sms: int | None = None

    def to_dict(self) -> dict:
        d = {"sm_blocks": self.sm_blocks, "kernel_launch_cycles": self.kernel_launch_cycles}
        if self.sm_cycle_stalls is not None:
            d["sm_cycle_stalls"] = self.sm_cycle_stalls
        if self.stall_sms is not None:
            d["stall_sms"] = self.stall_sms
        return d
