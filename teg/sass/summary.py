"""Per-kernel summaries of a parsed :class:`~teg.sass.program.Program` (what ``teg parse`` prints):
instruction counts by unit class, opcodes a machine table does not know, and control-code
statistics. The classifier is passed in (``Machine.classify``) so this module needs no machine."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from teg.sass.program import Program

UNKNOWN = "unknown"


def class_counts(program: Program, classify: Callable[[str], Any]) -> tuple[dict[str, int], dict[str, int]]:
    """``(by_class, unknown_opcodes)``: instructions per ``OpInfo.unit_class`` (opcodes the table does
    not know count as ``"unknown"``), and each unknown full opcode with its count."""
    by_class: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    cache: dict[str, str | None] = {}
    for ins in program.instructions:
        if ins.opcode not in cache:
            info = classify(ins.opcode)
            cache[ins.opcode] = None if info is None else info.unit_class
        cls = cache[ins.opcode]
        if cls is None:
            unknown[ins.opcode] += 1
            by_class[UNKNOWN] += 1
        else:
            by_class[cls] += 1
    return dict(sorted(by_class.items())), dict(sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0])))


def control_summary(program: Program) -> dict[str, Any] | None:
    """Statistics of the decoded control fields, or None when the listing carried none
    (``nvdisasm -c`` prints no encodings). ``yield_hint`` counts instructions whose yield bit is 0
    (printed ``Y``); barrier counts are instructions that set a write / read barrier, wait on at least
    one barrier, or set any reuse flag."""
    ctrls = [ins.control for ins in program.instructions if ins.control is not None]
    if not ctrls:
        return None
    stalls = Counter(c.stall for c in ctrls)
    total = sum(c.stall for c in ctrls)
    return {
        "decoded": len(ctrls),
        "stall_total": total,
        "stall_mean": round(total / len(ctrls), 3),
        "stall_histogram": {str(k): stalls[k] for k in sorted(stalls)},
        "yield_hint": sum(1 for c in ctrls if c.yield_ == 0),
        "write_barrier": sum(1 for c in ctrls if c.wbar != 7),
        "read_barrier": sum(1 for c in ctrls if c.rbar != 7),
        "wait": sum(1 for c in ctrls if c.wait != 0),
        "reuse": sum(1 for c in ctrls if c.reuse != 0),
    }


def kernel_summary(program: Program, classify: Callable[[str], Any] | None = None,
                   machine: str | None = None) -> dict[str, Any]:
    """The ``teg parse --json`` record of one kernel (docs/formats.md). Without a classifier
    ``by_class`` and ``unknown_opcodes`` are empty and ``machine`` is None."""
    if classify is not None:
        by_class, unknown = class_counts(program, classify)
    else:
        by_class, unknown = {}, {}
    return {
        "name": program.name,
        "demangled": program.demangled,
        "arch": program.arch,
        "machine": machine,
        "instructions": len(program),
        "by_class": by_class,
        "unknown_opcodes": unknown,
        "branches": sum(1 for ins in program.instructions if ins.branch_target is not None),
        "control": control_summary(program),
    }
