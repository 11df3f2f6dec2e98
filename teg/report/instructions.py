"""The instruction view (``teg estimate --view instructions``): every static instruction in program
order with its SASS text, executions, the warps' average wait before issuing it split by stall cause,
and the stall cycles the breakdown charged while the SM waited on it, with their share of all stall
cycles; loops are marked.

Two measures, both from one run that recorded them (the lowered input passed through
``teg.engine.records.with_records(inp, instructions=True)``, as ``teg estimate --view instructions``
does; layouts in :mod:`teg.engine.records`):

* **wait before issue** — per execution, the cycles between the instruction becoming a warp's next
  one and its issue, cut into causes (a latency a warp sees; with many warps most of it is hidden);
* **stall cycles** — each SM cycle of the stall breakdown that is not an issue cycle is charged, with
  its cause, to the instruction the SM was waiting on (the binding wait of its scheduler that
  woke first), so that the instructions' stall cycles of each cause sum to the breakdown's cycles of
  that cause (in the units of the breakdown: the average SM that ran a block). Cycles charged while
  no instruction was waited on (no warp resident) form the last line.

Loops are found in the run itself: a warp going from an instruction to one at the same or a lower
PC is a back edge; the instructions between its target and its source are the loop's body
(``/`` head, ``|`` body, ``\\`` back edge; nested loops side by side)."""

from __future__ import annotations

import numpy as np

from teg import TegError
from teg.engine.codes import CAUSE_NAMES, ISSUE, NO_WARP
from teg.engine.lowered import EngineInput
from teg.engine.recording import recording
from teg.engine.result import Result

VIEWS = ("summary", "stalls", "instructions")


class ViewError(TegError):
    """An instruction view that cannot be made (not recorded) or an unknown view name."""


def parse_views(text: str) -> tuple[str, ...]:
    """``summary,stalls,instructions`` (any subset, in any order) → the names in the order given."""
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [v for v in names if v not in VIEWS]
    if bad or not names:
        raise ViewError(f"--view {text!r}: expected a comma-separated list of {', '.join(VIEWS)}")
    return names


def back_edges(inp: EngineInput, pcs: np.ndarray) -> list[tuple[int, int]]:
    """The loops the run took: ``(head pc, back-edge pc)`` pairs, sorted, one per distinct pair —
    consecutive rows of a warp whose PC does not increase."""
    pc = np.asarray(pcs, np.int64)[inp.rows.r_sidx]
    if pc.shape[0] < 2:
        return []
    inner = np.ones(pc.shape[0] - 1, bool)
    ends = (inp.grid.c_end - 1)[inp.grid.c_end > inp.grid.c_start]
    inner[ends[ends < pc.shape[0] - 1]] = False          # row i and i+1 of different warps
    back = np.nonzero(inner & (pc[1:] <= pc[:-1]))[0]
    return sorted(set(zip(pc[back + 1].tolist(), pc[back].tolist())))


def loop_marks(pcs: list[int], loops: list[tuple[int, int]]) -> list[str]:
    """Per instruction (``pcs`` in program order) its loop column: a character per loop, outermost
    first (``/`` head, ``|`` body, ``\\`` back edge, blank outside)."""
    order = sorted(loops, key=lambda hl: (hl[0], -hl[1]))
    marks = []
    for pc in pcs:
        cells = []
        for head, tail in order:
            cells.append("/" if pc == head else "\\" if pc == tail else "|" if head < pc < tail else " ")
        marks.append("".join(cells).rstrip())
    return marks


def instruction_rows(result: Result, inp: EngineInput, program=None) -> list[dict]:
    """One dict per static instruction in program order (PC order), and a last one (``pc`` None)
    for the stall cycles charged with no instruction waited on. Keys: ``index``, ``pc``, ``sass``,
    ``loop``, ``executions``, ``wait_per_execution`` (cause → cycles), ``wait`` (total),
    ``stall_cycles`` (cause → cycles of the average SM, issue cycles excluded), ``stall_total``,
    ``stall_share`` (of all stall cycles)."""
    rec = recording(result, inp)
    if rec.pcs is None:
        raise ViewError("instruction view: the run did not record per-instruction waits "
                        "(run a copy made by teg.engine.records.with_records(inp, instructions=True))")
    setup, outcome = result.setup, result.outcome
    n = inp.num_static
    named_pcs = setup.pcs if setup is not None else None
    pcs = np.asarray(named_pcs if named_pcs is not None else np.arange(n), np.int64)
    ops = list((setup.opcodes if setup is not None else None) or [f"#{s}" for s in range(n)])
    texts = ops
    if program is not None and len(program.instructions) == n:
        texts = [ins.text or ins.opcode for ins in program.instructions]
    stall = rec.pc_stalls().astype(np.float64)
    sms = (outcome.stall_sms if outcome is not None else None) or 1
    if outcome is not None and outcome.stall_sms:
        # as the breakdown (teg.engine.run): SMs that ran no block are left out, the rest averaged
        stall[n, NO_WARP] -= (len(outcome.sm_blocks) - sms) * result.cycles
    stall /= sms
    stall[:, ISSUE] = 0.0
    total_stall = float(stall.sum()) or 1.0
    order = sorted(range(n), key=lambda s: (int(pcs[s]), s))
    marks = loop_marks([int(pcs[s]) for s in order], back_edges(inp, pcs))
    out = []
    for s, mark in zip(order, marks):
        count = int(result.pc_count[s])
        waits = rec.pc_waits()[s]
        out.append({
            "index": s, "pc": int(pcs[s]), "sass": texts[s], "opcode": ops[s], "loop": mark, "executions": count,
            "wait_per_execution": _by_cause(waits / count) if count else {}, "wait": int(waits.sum()),
            "stall_cycles": _by_cause(stall[s]),
            "stall_total": float(stall[s].sum()), "stall_share": float(stall[s].sum()) / total_stall})
    none = stall[n]
    out.append({"index": None, "pc": None, "sass": "(no instruction waited on)", "opcode": None,
                "loop": "", "executions": 0, "wait_per_execution": {}, "wait": 0,
                "stall_cycles": _by_cause(none),
                "stall_total": float(none.sum()), "stall_share": float(none.sum()) / total_stall})
    return out


def _by_cause(values: np.ndarray) -> dict[str, float]:
    """``cause name → value`` for the causes with a non-zero value."""
    return {CAUSE_NAMES[c]: float(values[c]) for c in np.nonzero(values)[0]}


def _top(d: dict, k: int = 2) -> str:
    """The ``k`` largest entries of ``cause → cycles`` as ``cause value`` pairs."""
    items = sorted(d.items(), key=lambda kv: -kv[1])[:k]
    return ", ".join(f"{name} {v:.3g}" for name, v in items if v > 0)


def instructions_text(rows: list[dict]) -> str:
    """The instruction view as a text table (see :func:`instruction_rows`)."""
    from teg.report.layout import table as _table

    body = []
    for r in rows:
        per = sum(r["wait_per_execution"].values())
        body.append(["" if r["pc"] is None else f"{r['pc']:04x}", r["loop"], r["sass"], str(r["executions"]),
                     f"{per:.1f}" if r["executions"] else "", _top(r["wait_per_execution"]),
                     f"{r['stall_total']:.0f}", f"{100.0 * r['stall_share']:.1f}%", _top(r["stall_cycles"])])
    head = ["pc", "loop", "instruction", "executions", "wait", "wait by cause (per execution)", "stall cycles",
            "share", "stall cycles by cause"]
    return ("instructions (wait: cycles from becoming a warp's next instruction to its issue, per execution; "
            "stall cycles: the breakdown's non-issue cycles charged to the instruction the SM waited on)\n"
            + _table(head, body, "llllrlrrl"))
