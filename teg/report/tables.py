"""Text, JSON and CSV views of engine results, what-if tables and sweeps."""

from __future__ import annotations

import csv
import io
import json

from teg.engine.result import Result


def _table(headers: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """Plain fixed-width table; ``align`` per column ``l``/``r`` (default: first left, rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def fmt(cells):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)).rstrip()

    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def _share(m: dict) -> str:
    """The simulated SMs' share of DRAM bandwidth and L2: ``sms / busy_sms`` (lowering, step 5)."""
    sms, busy = m.get("sms", 1), m.get("busy_sms")
    if not busy or busy <= sms:
        return "all of the DRAM bandwidth and L2"
    return f"{sms}/{busy} of the DRAM bandwidth and L2 ({busy} SMs busy)"


def setup_lines(m: dict, warps: bool = True) -> list[str]:
    """Header of every text view: kernel, machine, dependency model, policy, simulated SMs and their
    bandwidth share (and, with ``warps``, the warps and blocks simulated)."""
    sms = m.get("sms", 1)
    nw, nb = m.get("warps"), m.get("blocks")
    who = f", {nw} warp{'s' if nw != 1 else ''} in {nb} block{'s' if nb != 1 else ''}" if warps else ""
    if m.get("dealing") == "dynamic":
        parts = m.get("l2_partitions", 1)
        l2 = f"{parts} L2 partitions" if parts > 1 else "one L2"
        sim = (f"simulated   every SM ({sms}){who}, blocks dealt as the hardware deals them; "
               f"{l2} and the DRAM shared by all")
    else:
        sim = f"simulated   {sms} SM{'s' if sms != 1 else ''}{who}, with {_share(m)}"
    return [f"kernel      {m.get('kernel')}",
            f"machine     {m.get('machine')}  ({m.get('dependency_model')} dependencies, {m.get('policy')} scheduling)",
            sim]


def blocks_line(m: dict) -> str | None:
    """How the blocks were spread: SMs that ran a block, blocks per SM (fewest–most), waves
    (blocks / (resident blocks per SM x simulated SMs))."""
    per_sm = m.get("sm_blocks")
    if not per_sm:
        return None
    ran = [b for b in per_sm if b > 0]
    lo, hi = (min(ran), max(ran)) if ran else (0, 0)
    each = f"{lo}" if lo == hi else f"{lo}-{hi}"
    return (f"blocks      {sum(per_sm)} on {len(ran)} of {len(per_sm)} SMs, {each} per SM, "
            f"{m.get('waves', 0.0):.3g} waves")


def result_text(r: Result, top_pcs: int = 10, views=("summary", "stalls")) -> str:
    """Summary of one estimate: cycles, time, IPC, occupancy, stall breakdown, hottest PCs.
    ``views`` picks the sections: ``summary`` (setup, cycles, time, IPC, occupancy, blocks, notes)
    and ``stalls`` (the stall breakdown and the instructions waited on most)."""
    m = r.meta
    lines = setup_lines(m) + [f"cycles      {r.cycles}"]
    if m.get("kernel_launch_cycles"):
        lines[-1] += (f"  (of which {m['kernel_launch_cycles']} kernel launch and drain; "
                      f"what-if kernel_launch)")
    if r.time_us is not None:
        lines.append(f"time        {r.time_us:.3f} us at {r.clock_mhz:g} MHz")
    lines.append(f"IPC         {r.ipc:.3f} warp instructions/cycle ({r.instructions} instructions)")
    occ = m.get("occupancy") or {}
    if occ:
        lines.append(f"occupancy   {occ.get('blocks_per_sm')} blocks/SM, {occ.get('warps_per_sm')} warps/SM"
                     f" (limited by {occ.get('limiter')})")
    if m.get("l1_bytes"):
        carve = m.get("shared_carveout_bytes")
        lines.append(f"L1          {m['l1_bytes'] // 1024} KB per SM" + (
            f" (the driver's {carve // 1024} KB shared-memory carveout of the unified array)" if carve is not None else ""))
    bl = blocks_line(m)
    if bl:
        lines.append(bl)
    for note in m.get("notes", []):
        lines.append(f"note        {note}")
    rows = [[k, str(v), f"{100.0 * v / r.cycles:.1f}%"] for k, v in sorted(r.stalls.items(), key=lambda kv: -kv[1]) if v]
    head = "cycle breakdown (one cause per cycle)"
    if m.get("stall_sms"):
        head = (f"cycle breakdown of the average SM that ran a block ({m['stall_sms']} SMs; one cause "
                "per cycle of each)")
    stalls = ["", head, _table(["cause", "cycles", "share"], rows)]
    ops, pcs = m.get("opcodes"), m.get("pcs")
    if ops is not None and pcs is not None and top_pcs:
        order = sorted(range(len(ops)), key=lambda i: -int(r.pc_wait[i]))[:top_pcs]
        prow = [[f"{int(pcs[i]):04x}", ops[i], str(int(r.pc_count[i])), str(int(r.pc_wait[i]))]
                for i in order if r.pc_count[i]]
        if prow:
            stalls += ["", "instructions waited on most", _table(["pc", "opcode", "count", "wait"], prow, "llrr")]
    if "summary" not in views:
        return "\n".join(stalls[1:]) if "stalls" in views else ""
    return "\n".join(lines + (stalls if "stalls" in views else []))


def whatif_text(rows, meta: dict | None = None) -> str:
    """The what-if table (:func:`teg.analysis.whatif.whatif`), under the run's setup when ``meta``
    (the lowered input's) is given."""
    body = [[r.mechanism, r.description, str(r.cycles), str(r.saved), f"{r.speedup:.3f}" + (" !" if r.anomaly else ""),
             r.schedule] for r in rows]
    out = _table(["mechanism", "removed", "cycles", "saved", "speedup", "schedule"], body, "llrrrl")
    if meta:
        out = "\n".join(setup_lines(meta)) + "\n\n" + out
    out += ("\nschedule: free = re-simulated with the mechanism removed, replay = the baseline's issue order"
            " replayed; the better of the two (docs/model.md, \"what a what-if means\")")
    if any(r.anomaly for r in rows):
        out += ("\n! slower than the baseline: the balanced channel spread is a different assignment than the"
                " address pattern's, not a removed delay (docs/model.md)")
    return out


def sweep_text(rows) -> str:
    """The sweep table (:func:`teg.analysis.sweep.sweep`), under the setup of its runs: each row
    is N warps (B blocks) on the simulated SM, every SM of the GPU assumed to run the same."""
    blocks = any(r.blocks is not None for r in rows)
    head = (["blocks"] if blocks else []) + ["warps", "cycles", "instructions", "instr/cycle", "speedup"]
    body = [([str(r.blocks)] if blocks else []) + [str(r.warps), str(r.cycles), str(r.instructions),
                                                   f"{r.throughput:.4f}", f"{r.speedup:.3f}"] for r in rows]
    out = _table(head, body, "r" * len(head))
    if rows and rows[0].meta:
        out = "\n".join(setup_lines(rows[0].meta, warps=False)) + "\n\n" + out
    return out


def to_json(obj) -> str:
    """JSON of a Result or a list of rows (what-if / sweep)."""
    if isinstance(obj, Result):
        return json.dumps(obj.to_dict(), indent=2)
    return json.dumps([r.to_dict() for r in obj], indent=2)


def to_csv(rows) -> str:
    """CSV of what-if or sweep rows (header from the first row's keys)."""
    dicts = [r.to_dict() for r in rows]
    buf = io.StringIO()
    if dicts:
        w = csv.DictWriter(buf, fieldnames=list(dicts[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(dicts)
    return buf.getvalue()
