"""What-if analysis (TEG §5.1, Table 3): estimate the kernel with each modelled mechanism removed
alone, then with all removed, and report the cycles each removal saves.

Lowering happens once; every variant flips one switch of the engine input
(:func:`teg.engine.input.with_switches`), so each row changes only its mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass

from teg.engine.input import EngineInput, with_switches
from teg.engine.options import MECHANISMS
from teg.engine.run import run


@dataclass(frozen=True)
class WhatIfRow:
    """One variant: ``mechanism`` is ``baseline``, an Options switch name, or ``all``."""

    mechanism: str
    description: str
    cycles: int
    saved: int
    speedup: float
    anomaly: bool = False     # removing the mechanism made it slower (a scheduling anomaly)

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "description": self.description, "cycles": self.cycles,
                "saved": self.saved, "speedup": self.speedup, "anomaly": self.anomaly}


def whatif(inp: EngineInput, mechanisms: tuple[str, ...] | None = None) -> list[WhatIfRow]:
    """Rows: ``baseline`` first, then each mechanism removed alone, then ``all`` removed.
    ``saved = baseline - cycles``; ``speedup = baseline / cycles``."""
    names = tuple(mechanisms) if mechanisms is not None else tuple(MECHANISMS)
    base = run(inp).cycles

    def row(name, desc, cycles):
        return WhatIfRow(mechanism=name, description=desc, cycles=cycles, saved=base - cycles,
                         speedup=base / cycles if cycles else float("inf"), anomaly=cycles > base)

    rows = [row("baseline", "all mechanisms modelled", base)]
    for m in names:
        rows.append(row(m, MECHANISMS[m], run(with_switches(inp, **{m: False})).cycles))
    rows.append(row("all", "all of the above removed", run(with_switches(inp, **{m: False for m in names})).cycles))
    return rows
