"""What-if analysis (TEG §5.1, Table 3): estimate the kernel with each modelled mechanism removed
alone, then with all removed, and report the cycles each removal saves.

Lowering happens once; every variant flips one switch of the engine input
(:func:`teg.engine.lowered.with_switches`), so each row changes only its mechanism.

What a what-if means: the cycles of *some* schedule the what-if machine can run under the same
scheduler — the better of two (docs/model.md §5):

* ``free`` — the engine re-simulated with the mechanism removed (the greedy scheduler decides
  again, so the issue order may change);
* ``replay`` — the baseline's own global issue order replayed on the what-if machine
  (:func:`teg.engine.lowered.with_replay`): every instruction issues at the earliest cycle its
  constraints allow, no earlier than its predecessor in the order, and every shared resource
  (scheduler, unit, memory-pipeline slot, DRAM channel, caches) is allocated in that same order.
  Each issue time is then a max-plus expression of earlier issue times and non-negative delays,
  so removing a delay can only move issues earlier: the replay never exceeds the baseline.

Greedy list scheduling alone can show Graham's anomaly (removing a delay reorders issues and
another warp ends later); taking the minimum with the replay removes it from the report, so a
row's ``cycles`` never exceeds the baseline, and ``schedule`` says which of the two gave it.
``channel_skew`` too is a shortened delay, not a re-assignment: every transaction keeps its
channel and the overloaded channels serve as if they carried the mean load
(:func:`teg.memory.channels.balance_scale`).
"""

from __future__ import annotations

from dataclasses import dataclass

from teg.engine.lowered import EngineInput, with_record_order, with_replay, with_switches
from teg.engine.options import MECHANISMS
from teg.engine.result import Result
from teg.engine.run import run

SCHEDULES = ("free", "replay")


@dataclass(frozen=True)
class WhatIfRow:
    """One variant: ``mechanism`` is ``baseline``, an Options switch name, or ``all``.

    ``cycles = min(free_cycles, replay_cycles)``; ``schedule`` names the one that gave it
    (``free`` on ties and for the baseline, whose replay reproduces it exactly)."""

    mechanism: str
    description: str
    cycles: int
    saved: int
    speedup: float
    schedule: str = "free"
    free_cycles: int | None = None
    replay_cycles: int | None = None

    @property
    def anomaly(self) -> bool:
        """The reported what-if is slower than the baseline. The replay rules this out for every
        mechanism; the flag stays as a guard that the report shows if it ever happens."""
        return self.saved < 0


def without(inp: EngineInput, removed: tuple[str, ...], base: Result | None = None) -> tuple[Result, str, int]:
    """The run of ``inp`` with the mechanisms ``removed`` (none: the baseline itself): the better of
    a free re-simulation and a replay of the baseline's issue order (module docstring). Returns
    that run, which schedule gave it (``free`` on ties) and the baseline's cycles. ``base``: the
    baseline run with its order recorded (:func:`teg.engine.lowered.with_record_order`), when the
    caller has it."""
    if not removed:
        r = run(inp) if base is None else base
        return r, "free", r.cycles
    base = base if base is not None else run(with_record_order(inp))
    changed = with_switches(inp, **{m: False for m in removed})
    free, replay = run(changed), run(with_replay(changed, base.order))
    return (free, "free", base.cycles) if free.cycles <= replay.cycles else (replay, "replay", base.cycles)


def whatif(inp: EngineInput, mechanisms: tuple[str, ...] | None = None) -> list[WhatIfRow]:
    """Rows: ``baseline`` first, then each mechanism removed alone, then ``all`` removed.
    ``saved = baseline - cycles``; ``speedup = baseline / cycles``; each variant is the better of
    a free re-simulation and a replay of the baseline's issue order (:func:`without`)."""
    names = tuple(mechanisms) if mechanisms is not None else tuple(MECHANISMS)
    base_run = run(with_record_order(inp))
    base = base_run.cycles

    def row(name, desc, free, replay):
        cycles = min(free, replay)
        return WhatIfRow(mechanism=name, description=desc, cycles=cycles, saved=base - cycles,
                         speedup=base / cycles if cycles else float("inf"),
                         schedule="free" if free <= replay else "replay", free_cycles=free, replay_cycles=replay)

    def variant(name, desc, removed):
        changed = with_switches(inp, **{m: False for m in removed})
        return row(name, desc, run(changed).cycles, run(with_replay(changed, base_run.order)).cycles)

    rows = [row("baseline", "all mechanisms modelled", base, base)]
    for m in names:
        rows.append(variant(m, MECHANISMS[m], (m,)))
    rows.append(variant("all", "all of the above removed", names))
    return rows
