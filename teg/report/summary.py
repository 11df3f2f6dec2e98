"""The estimate of one kernel: its text (the ``summary`` and ``stalls`` views of ``teg estimate``)
and its JSON (``--json``), side by side, both read from the :class:`~teg.engine.result.Result` —
its set-up (:class:`~teg.engine.setup.RunSetup`) and per-SM outcome
(:class:`~teg.engine.setup.SmOutcome`)."""

from __future__ import annotations

import numpy as np

from teg.engine.result import Result
from teg.engine.setup import RunSetup, SmOutcome
from teg.report.layout import table

_NO_SETUP = RunSetup()


def _share(s: RunSetup) -> str:
    """The simulated SMs' share of DRAM bandwidth and L2 (:attr:`RunSetup.share`): ``sms /
    busy_sms`` for TEG's round-robin and a sweep, the share of the blocks they run for ``waves``."""
    sms, busy = s.sms, s.busy_sms
    if (s.dealing == "waves" and s.share is not None and 0 < s.share < 1 and busy
            and abs(s.share - sms / busy) > 1e-9):
        return (f"{s.share:.3g} of the DRAM bandwidth and L2 (their {s.blocks} of the launch's "
                f"{round(s.blocks / s.share)} blocks; {busy} SMs busy)")
    if not busy or busy <= sms:
        return "all of the DRAM bandwidth and L2"
    return f"{sms}/{busy} of the DRAM bandwidth and L2 ({busy} SMs busy)"


def setup_lines(s: RunSetup | None, warps: bool = True) -> list[str]:
    """Header of every text view: kernel, machine, dependency model, policy, simulated SMs and their
    bandwidth share (and, with ``warps``, the warps and blocks simulated)."""
    s = s or _NO_SETUP
    sms = s.sms
    nw, nb = s.warps, s.blocks
    who = f", {nw} warp{'s' if nw != 1 else ''} in {nb} block{'s' if nb != 1 else ''}" if warps else ""
    if s.dealing == "dynamic":
        parts = s.l2_partitions
        l2 = f"{parts} L2 partitions" if parts > 1 else "one L2"
        sim = (f"simulated   every SM ({sms}){who}, blocks dealt as the hardware deals them; "
               f"{l2} and the DRAM shared by all")
    else:
        sim = f"simulated   {sms} SM{'s' if sms != 1 else ''}{who}, with {_share(s)}"
    return [f"kernel      {s.kernel}",
            f"machine     {s.machine}  ({s.dependency_model} dependencies, {s.policy} scheduling)",
            sim]


def blocks_line(s: RunSetup | None, o: SmOutcome | None) -> str | None:
    """How the blocks were spread: SMs that ran a block, blocks per SM (fewest–most), waves
    (blocks / (resident blocks per SM x simulated SMs))."""
    per_sm = o.sm_blocks if o is not None else None
    if not per_sm:
        return None
    ran = [b for b in per_sm if b > 0]
    lo, hi = (min(ran), max(ran)) if ran else (0, 0)
    each = f"{lo}" if lo == hi else f"{lo}-{hi}"
    waves = s.waves if s is not None else 0.0
    return f"blocks      {sum(per_sm)} on {len(ran)} of {len(per_sm)} SMs, {each} per SM, {waves:.3g} waves"


def sm_active_line(r: Result) -> str | None:
    """The average SM's active cycles and their share of the kernel's (Nsight Compute's SM active /
    GPU active cycles, :attr:`Result.sm_active_ratio`); None for one simulated SM."""
    if r.sm_cycles is None or np.asarray(r.sm_cycles).shape[0] < 2 or not r.cycles:
        return None
    return (f"SM active   {r.sm_active:.0f} cycles the average SM ({100.0 * r.sm_active_ratio:.1f}% of the "
            f"kernel's; each SM from the start until its last warp exited)")


def summary_text(r: Result, top_pcs: int = 10, views=("summary", "stalls")) -> str:
    """Summary of one estimate: cycles, time, IPC, occupancy, stall breakdown, hottest PCs.
    ``views`` picks the sections: ``summary`` (setup, cycles, time, IPC, occupancy, blocks, notes)
    and ``stalls`` (the stall breakdown and the instructions waited on most)."""
    s = r.setup or _NO_SETUP
    o = r.outcome
    lines = setup_lines(s) + [f"cycles      {r.cycles}"]
    if o is not None and o.kernel_launch_cycles:
        lines[-1] += (f"  (of which {o.kernel_launch_cycles} kernel launch and drain; "
                      f"what-if kernel_launch)")
    if r.time_us is not None:
        lines.append(f"time        {r.time_us:.3f} us at {r.clock_mhz:g} MHz")
    lines.append(f"IPC         {r.ipc:.3f} warp instructions/cycle ({r.instructions} instructions)")
    occ = s.occupancy
    if occ is not None:
        lines.append(f"occupancy   {occ.blocks_per_sm} blocks/SM, {occ.warps_per_sm} warps/SM"
                     f" (limited by {occ.limiter})")
    if s.l1_bytes:
        carve = s.shared_carveout_bytes
        lines.append(f"L1          {s.l1_bytes // 1024} KB per SM" + (
            f" (the driver's {carve // 1024} KB shared-memory carveout of the unified array)" if carve is not None else ""))
    bl = blocks_line(s, o)
    if bl:
        lines.append(bl)
    act = sm_active_line(r)
    if act:
        lines.append(act)
    for note in s.notes:
        lines.append(f"note        {note}")
    rows = [[k, str(v), f"{100.0 * v / r.cycles:.1f}%"] for k, v in sorted(r.stalls.items(), key=lambda kv: -kv[1]) if v]
    head = "cycle breakdown (one cause per cycle)"
    if o is not None and o.stall_sms:
        head = (f"cycle breakdown of the average SM that ran a block ({o.stall_sms} SMs; one cause "
                "per cycle of each)")
    stalls = ["", head, table(["cause", "cycles", "share"], rows)]
    ops, pcs = s.opcodes, s.pcs
    if ops is not None and pcs is not None and top_pcs:
        order = sorted(range(len(ops)), key=lambda i: -int(r.pc_wait[i]))[:top_pcs]
        prow = [[f"{int(pcs[i]):04x}", ops[i], str(int(r.pc_count[i])), str(int(r.pc_wait[i]))]
                for i in order if r.pc_count[i]]
        if prow:
            stalls += ["", "instructions waited on most", table(["pc", "opcode", "count", "wait"], prow, "llrr")]
    if "summary" not in views:
        return "\n".join(stalls[1:]) if "stalls" in views else ""
    return "\n".join(lines + (stalls if "stalls" in views else []))


def summary_data(r: Result) -> dict:
    """Plain-JSON form of one estimate (per-PC table included when the input named its instructions)."""
    s = r.setup or _NO_SETUP
    o = r.outcome
    d = {
        "kernel": s.kernel if r.setup is not None else None,
        "machine": s.machine,
        "cycles": r.cycles,
        "time_us": r.time_us,
        "clock_mhz": r.clock_mhz,
        "instructions": r.instructions,
        "ipc": r.ipc,
        "occupancy": s.occupancy.to_dict() if s.occupancy is not None else None,
        "dependency_model": s.dependency_model,
        "policy": s.policy,
        "sms": s.sms if r.setup is not None else None,
        "dealing": s.dealing,
        "sm_blocks": o.sm_blocks if o is not None else None,
        "waves": s.waves if r.setup is not None else None,
        "sm_active_cycles": round(r.sm_active, 1),
        "sm_active_ratio": round(r.sm_active_ratio, 4),
        "l1_bytes": s.l1_bytes if r.setup is not None else None,
        "shared_carveout_bytes": s.shared_carveout_bytes,
        "stalls": {k: v for k, v in r.stalls.items() if v},
        "counters": r.counters,
        "notes": s.notes,
    }
    pcs, ops = s.pcs, s.opcodes
    if pcs is not None and ops is not None:
        d["per_pc"] = [{"pc": int(pcs[i]), "opcode": ops[i], "count": int(r.pc_count[i]),
                        "wait": int(r.pc_wait[i])} for i in range(len(ops)) if r.pc_count[i]]
    return d
