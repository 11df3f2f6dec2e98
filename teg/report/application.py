"""Text, JSON and CSV views of a whole application (:class:`teg.analysis.application.ApplicationReport`):
the per-kernel table of ``teg estimate``, the per-mechanism table of ``teg whatif`` and the
one-line-per-kernel listing of ``teg trace info``. The CSV columns are the fields of
:class:`KernelLine` (a kernel) and of :class:`~teg.analysis.application.MechanismSaving` (a
mechanism); the JSON is the rows' own (:meth:`teg.analysis.kernel_task.KernelRow.data`)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, fields
from typing import NamedTuple

from teg.analysis.application import ApplicationReport, MechanismSaving
from teg.analysis.kernel_task import KernelRow
from teg.report.layout import micros as _us
from teg.report.layout import table as _table
from teg.sass.demangle import short_name
from teg.trace.application import KernelRef

MISSING_SHOWN = 10     # missing kernels named in the text view (JSON lists all)


def _dims(d) -> str:
    return "x".join(str(int(v)) for v in d)


def launch(grid, block) -> str:
    """``grid x block`` as ``(gx,gy,gz)x(bx,by,bz)`` with trailing 1s dropped: ``64x256``."""
    def trim(d):
        d = list(d)
        while len(d) > 1 and d[-1] == 1:
            d.pop()
        return _dims(d)
    return f"{trim(grid)} x {trim(block)}"


def _name(row: KernelRow, width: int = 48) -> str:
    return short_name(row.demangled or row.name, width)


def missing_text(missing: list[KernelRef]) -> str:
    """How many listed kernels have no file, the first ``MISSING_SHOWN`` named with their lines."""
    shown = ", ".join(f"{k.label} (line {k.line})" for k in missing[:MISSING_SHOWN])
    more = f", … ({len(missing) - MISSING_SHOWN} more; --json lists all)" if len(missing) > MISSING_SHOWN else ""
    return f"{len(missing)} kernel(s) listed but their files are absent: {shown}{more}"


def _setup(rep: ApplicationReport) -> list[str]:
    machines = sorted({r.machine for r in rep.done if r.machine})
    streams = rep.streams
    serial = ("kernels in launch order on one stream: their times add" if len(streams) <= 1 else
              f"kernels on {len(streams)} streams ({', '.join(map(str, streams))}), added as if they ran one "
              "after another (overlap between streams is not modelled)")
    return [f"application {rep.source}",
            f"machine     {', '.join(machines) or '-'}",
            f"timing      {serial}"]


def _problems(rep: ApplicationReport) -> list[str]:
    lines = [f"missing     {missing_text(rep.missing)}; not estimated"] if rep.missing else []
    for r in rep.failed:
        lines.append(f"failed      kernel {r.id} {_name(r, 40)}: {r.error}")
    return lines


def application_text(rep: ApplicationReport) -> str:
    """The per-kernel table, longest first, with the totals and what is missing or failed."""
    t = rep.totals()
    body = []
    for r in rep.by_time():
        e = r.estimate
        top = f"{e.top_stall} {100.0 * e.top_stall_cycles / e.cycles:.0f}%" if e.top_stall else "-"
        body.append([str(r.id), _name(r), launch(r.grid, r.block), f"{e.instructions:,}", f"{e.cycles:,}",
                     _us(e.time_us), f"{e.ipc:.3f}", top, f"{100.0 * rep.share(r):.1f}%"])
    if body:
        body.append(["total", f"{t.kernels} kernel(s)", "", f"{t.instructions:,}", f"{t.cycles:,}",
                     _us(t.time_us), f"{t.ipc:.3f}" if t.ipc is not None else "-", "", "100.0%"])
    table = _table(["id", "kernel", "grid x block", "warp instr", "cycles", "time (us)", "IPC", "largest stall",
                    "share"], body, "lllrrrrlr")
    return "\n".join(_setup(rep) + _problems(rep) + ["", table])


def whatif_application_text(rep: ApplicationReport, top: int = 3) -> str:
    """Per mechanism: the application's saving and the kernels that gain most."""
    t = sum(r.time_us or 0.0 for r in rep.done)
    body = []
    for m in rep.mechanisms(top):
        gain = ", ".join(f"{g.id} {short_name(_demangled(rep, g.id), 28)} {_gain(g)}" for g in m.top)
        body.append([m.mechanism, m.description, f"{m.saved_cycles:,}", _us(m.saved_us),
                     f"{100.0 * m.share:.1f}%", f"{m.speedup:.3f}", gain or "-"])
    table = _table(["mechanism", "removed", "saved cycles", "saved (us)", "of app", "app speedup",
                    f"kernels that gain most (top {top})"], body, "llrrrrl")
    head = _setup(rep) + [f"baseline    {len(rep.done)} kernel(s), {sum(r.cycles for r in rep.done):,} cycles, "
                          f"{t:,.3f} us"] + _problems(rep)
    return "\n".join(head + ["", table, "each kernel's saving is the better of a free re-simulation and a replay of "
                                        "its baseline order (teg whatif); the application's is their sum"])


def _gain(g) -> str:
    return f"{g.saved_us:,.3f} us" if g.saved_us is not None else f"{g.saved_cycles:,} cycles"


def _demangled(rep: ApplicationReport, kid: int) -> str:
    r = next(r for r in rep.rows if r.id == kid)
    return r.demangled or r.name


def _missing_dict(k: KernelRef) -> dict:
    return {"id": k.kernel_id, "file": k.path, "line": k.line}


def application_dict(rep: ApplicationReport) -> dict:
    """JSON-ready: source, totals, per-kernel rows (launch order; ``share`` added), mechanisms
    (what-if runs), missing kernels and the timing assumption."""
    rows = []
    for r in rep.rows:
        d = r.data()
        if r.error is None:
            d["share"] = rep.share(r)
        rows.append(d)
    out = {"source": rep.source, "streams": rep.streams,
           "timing": "kernels in launch order, one after another: times add", "totals": asdict(rep.totals()),
           "kernels": rows, "missing": [_missing_dict(k) for k in rep.missing]}
    mech = rep.mechanisms(top=5)
    if mech:
        out["mechanisms"] = [asdict(m) for m in mech]
    return out


def application_json(rep: ApplicationReport) -> str:
    return json.dumps(application_dict(rep), indent=1)


class KernelLine(NamedTuple):
    """One line of the per-kernel CSV (its fields are the header): a kernel that ran or failed,
    or one listed but missing (``error`` says which file and line)."""

    position: int
    id: int
    name: str
    grid: str
    block: str
    stream: int | None
    machine: str | None
    instructions: int | None
    cycles: int | None
    time_us: float | None
    ipc: float | None
    top_stall: str | None
    top_stall_cycles: int | None
    share: float | None
    error: str | None

    @classmethod
    def of_row(cls, r: KernelRow, share: float | None) -> "KernelLine":
        e = r.estimate

        def got(name):                    # a plain estimate's field; None for a failed kernel
            return getattr(e, name) if e is not None else None
        return cls(r.position, r.id, r.name, _dims(r.grid), _dims(r.block), r.stream, r.machine,
                   got("instructions"), r.cycles, r.time_us, got("ipc"), got("top_stall"), got("top_stall_cycles"),
                   share, r.error)

    @classmethod
    def of_missing(cls, k: KernelRef) -> "KernelLine":
        return cls(k.position, k.kernel_id, "", "", "", None, None, None, None, None, None, None, None, None,
                   f"missing: {k.path} (line {k.line}) not found")


def application_csv(rep: ApplicationReport) -> str:
    """One line per listed kernel in launch order (missing kernels with ``error`` = missing file)."""
    lines = {r.position: KernelLine.of_row(r, rep.share(r) if r.error is None else None) for r in rep.rows}
    lines.update({k.position: KernelLine.of_missing(k) for k in rep.missing})
    return _csv(KernelLine._fields, (lines[pos] for pos in sorted(lines)))


MECHANISM_COLUMNS = tuple(f.name for f in fields(MechanismSaving) if f.name != "top") + ("top_kernels",)


def mechanisms_csv(rep: ApplicationReport) -> str:
    """One line per mechanism: savings, share, speedup, and the top kernels as ``id:saved`` pairs."""
    return _csv(MECHANISM_COLUMNS, ([getattr(m, c) for c in MECHANISM_COLUMNS[:-1]]
                                    + [";".join(f"{g.id}:{g.saved_cycles}" for g in m.top)]
                                    for m in rep.mechanisms()))


def _csv(header, lines) -> str:
    """``header`` and ``lines`` as CSV, None written as an empty cell."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(["" if v is None else v for v in line] for line in lines)
    return buf.getvalue()


def trace_lines_text(source: str, summaries: list[dict], missing: list[KernelRef]) -> str:
    """``teg trace info`` on an application: one line per kernel (launch order) and the missing ones."""
    body = [[str(s["id"]), short_name(s.get("demangled") or s["name"], 48), launch(s["grid"], s["block"]),
             str(s["blocks"]), str(s["warps"]), f"{s['warp_instructions']:,}", f"{s['memory_instructions']:,}",
             f"{s['avg_active_lanes']:.1f}", str(s["binary_version"])] for s in summaries]
    total = sum(s["warp_instructions"] for s in summaries)
    lines = [f"{source}: {len(summaries)} kernel(s), {total:,} warp instructions"]
    if missing:
        lines.append(f"missing: {missing_text(missing)}")
    lines += ["", _table(["id", "kernel", "grid x block", "blocks", "warps", "warp instr", "memory", "lanes", "sm"],
                         body, "lllrrrrrr")]
    return "\n".join(lines)
