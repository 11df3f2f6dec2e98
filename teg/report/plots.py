"""Figures of teg's reports, drawn with matplotlib (the ``plot`` extra: ``pip install teg[plot]``),
written as PNG or SVG by the file's suffix:

* :func:`sweep_figure` — ``teg sweep --plot``: cycles and speedup against warps (or blocks) per SM,
  with measured points overlaid (``--measured FILE``), and the stall stack of every point;
* :func:`whatif_figure` — ``teg whatif --plot``: the savings of each removed mechanism, a waterfall
  whose every step starts again at the baseline (mechanisms overlap, so savings do not add up);
* :func:`stall_figure` — ``teg estimate --plot``: the stall stack of one estimate;
* :func:`application_bars` — the application table as a bar chart of time by kernel (for the
  multi-kernel reports): ``application_bars(rows, path)`` with ``rows`` the report's per-kernel
  dicts (``name``, ``time_us`` or ``cycles``, optionally ``stalls``: cause → cycles, which then
  split each bar by cause).

Every function returns the path written. matplotlib is imported only when a figure is drawn, with
the non-interactive Agg backend; without it a :class:`PlotError` says how to install it."""

from __future__ import annotations

import csv
import os
from pathlib import Path

from teg import TegError

FORMATS = (".png", ".svg")
# a fixed colour per stall cause, so that a cause looks the same in every figure: matplotlib's
# qualitative tab20 then tab20b colours, in CAUSE_NAMES order (40 distinct colours for the causes)
_CMAPS = ("tab20", "tab20b")


class PlotError(TegError):
    """A figure that cannot be drawn: matplotlib missing, unknown suffix, unreadable measurements."""


def _pyplot():
    """matplotlib.pyplot with the file-only Agg backend, or :class:`PlotError` naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise PlotError("plots need matplotlib: pip install 'teg[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _target(path) -> Path:
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise PlotError(f"{p}: the plot's format comes from its suffix: {' or '.join(FORMATS)}")
    return p


def _save(fig, path: Path, force: bool = False) -> Path:
    """Write ``fig`` to ``path`` through :mod:`teg.fileio` (atomic; an existing file is replaced only
    if teg drew it — its PNG ``Software`` or SVG ``Creator`` tag says so — or with ``force``)."""
    from teg import __version__, fileio

    fmt = path.suffix.lower().lstrip(".")
    tag = {"Software": f"teg {__version__}"} if fmt == "png" else {"Creator": f"teg {__version__}"}
    try:
        with fileio.atomic_file(path, fileio.figure_owned, force) as fh:
            fig.savefig(fh, format=fmt, dpi=110, bbox_inches="tight", metadata=tag)
    except OSError as exc:
        raise PlotError(f"{path}: cannot write the plot: {exc.strerror or exc}") from None
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    return path


def cause_colors() -> dict[str, tuple]:
    """Stall cause → colour, the same in every figure."""
    import matplotlib

    from teg.engine.codes import CAUSE_NAMES

    colors = [c for name in _CMAPS for c in matplotlib.colormaps[name].colors]
    return {name: colors[i % len(colors)] for i, name in enumerate(CAUSE_NAMES)}


def _stack(ax, labels: list[str], breakdowns: list[dict], horizontal: bool = False, scale: list[float] | None = None):
    """Stacked bars, one per label, each split by stall cause (``breakdowns``: cause → cycles),
    scaled by ``scale[i] / sum`` when given (the bar's length is then ``scale[i]``)."""
    import numpy as np

    colors = cause_colors()
    causes = [c for c in colors if any(b.get(c, 0) for b in breakdowns)]
    pos = np.arange(len(labels))
    base = np.zeros(len(labels))
    for c in causes:
        vals = np.array([float(b.get(c, 0)) for b in breakdowns])
        if scale is not None:
            tot = np.array([max(float(sum(b.values())), 1e-300) for b in breakdowns])
            vals = vals / tot * np.asarray(scale, float)
        if horizontal:
            ax.barh(pos, vals, left=base, color=colors[c], label=c)
        else:
            ax.bar(pos, vals, bottom=base, color=colors[c], label=c)
        base += vals
    if horizontal:
        ax.set_yticks(pos, labels)
        ax.invert_yaxis()
    else:
        ax.set_xticks(pos, labels)
    return causes


def read_measured(path) -> dict[int, float]:
    """Measured cycles per point from a CSV file with a header naming a ``warps`` (or ``blocks``)
    column and a ``cycles`` column (other columns ignored): ``{point: cycles}``."""
    from teg.textfile import TextFileError, read_text

    p = Path(path)
    try:
        text = read_text(p, 64 << 20, "measurements file")
    except TextFileError as exc:
        raise PlotError(str(exc)) from None
    reader = csv.DictReader(text.splitlines())
    fields = [f.strip().lower() for f in (reader.fieldnames or [])]
    key = "warps" if "warps" in fields else "blocks" if "blocks" in fields else None
    if key is None or "cycles" not in fields:
        raise PlotError(f"{p}:1: expected a CSV header with a warps (or blocks) column and a cycles column")
    out: dict[int, float] = {}
    for line, rec in enumerate(reader, start=2):
        rec = {(k or "").strip().lower(): (v or "").strip() for k, v in rec.items()}
        try:
            point, cycles = int(rec[key]), float(rec["cycles"])
        except (TypeError, ValueError):
            raise PlotError(f"{p}:{line}: expected a whole number of {key} and a number of cycles, got "
                            f"{rec.get(key)!r}, {rec.get('cycles')!r}") from None
        if point < 1 or cycles <= 0:
            raise PlotError(f"{p}:{line}: {key} and cycles must be positive")
        out[point] = cycles
    if not out:
        raise PlotError(f"{p}: no measurements after the header")
    return out


def sweep_figure(rows, path, measured: dict[int, float] | None = None, force: bool = False) -> Path:
    """Cycles and speedup against warps (or blocks) per SM for the rows of :func:`teg.analysis.sweep.sweep`
    (speedup: work-normalized throughput over the first point's), with ``measured`` cycles per point
    overlaid (their speedup from the same work: the sweep's instructions at that point, else the
    first point's instructions per warp times the warps), and the stall stack of every point
    (from each row's ``stalls`` when the rows carry them)."""
    target = _target(path)
    plt = _pyplot()
    if not rows:
        raise PlotError("sweep plot: no points")
    blocks = any(r.blocks is not None for r in rows)
    xs = [r.blocks if blocks else r.warps for r in rows]
    what = "blocks per SM" if blocks else "warps per SM"
    stalls = [r.stalls for r in rows]
    panels = 3 if all(stalls) else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.2))
    ax_c, ax_s = axes[0], axes[1]
    ax_c.plot(xs, [r.cycles for r in rows], "o-", label="teg")
    ax_s.plot(xs, [r.speedup for r in rows], "o-", label="teg")
    if measured:
        per = {(r.blocks if blocks else r.warps): r.instructions for r in rows}
        unit = rows[0].instructions / max(xs[0], 1)
        mx = sorted(measured)
        work = [per.get(x, unit * x) for x in mx]
        thr = [w / measured[x] for w, x in zip(work, mx)]
        ax_c.plot(mx, [measured[x] for x in mx], "s--", color="black", label="measured")
        ax_s.plot(mx, [t / thr[0] for t in thr], "s--", color="black", label="measured")
    for ax, ylabel in ((ax_c, "cycles"), (ax_s, "speedup over the first point")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel(what)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend()
    ax_c.set_title(_kernel_on_machine(rows[0].setup), fontsize=10)
    if panels == 3:
        _stack(axes[2], [str(x) for x in xs], stalls)
        axes[2].set_xlabel(what)
        axes[2].set_ylabel("cycles by stall cause")
        axes[2].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return _save(fig, target, force)


def _kernel_on_machine(setup) -> str:
    """``KERNEL on MACHINE`` of a run's set-up (:class:`teg.engine.setup.RunSetup`; blanks without one)."""
    return f"{setup.kernel} on {setup.machine}" if setup is not None else " on "


def whatif_figure(rows, path, setup=None, force: bool = False) -> Path:
    """The what-if savings (rows of :func:`teg.analysis.whatif.whatif`, baseline first): per
    mechanism a bar from the cycles without it up to the baseline, labelled with the cycles saved;
    the last bar all mechanisms removed together."""
    target = _target(path)
    plt = _pyplot()
    if not rows:
        raise PlotError("what-if plot: no rows")
    base = rows[0].cycles
    rest = rows[1:]
    fig, ax = plt.subplots(figsize=(8.5, 0.42 * (len(rows) + 2) + 1.2))
    labels = [rows[0].mechanism] + [r.mechanism for r in rest]
    ax.barh(0, base, color="0.55")
    for i, r in enumerate(rest, start=1):
        lo, hi = min(r.cycles, base), max(r.cycles, base)
        color = "tab:red" if r.saved < 0 else ("tab:green" if i == len(rows) - 1 else "tab:blue")
        ax.barh(i, hi - lo, left=lo, color=color)
        ax.text(hi, i, f"  {'+' if r.saved < 0 else '−'}{abs(r.saved)} ({100.0 * abs(r.saved) / base:.1f} %)",
                va="center", fontsize=8)
    ax.axvline(base, color="black", lw=0.8)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, base * 1.25)
    ax.set_xlabel("cycles (each bar: from the cycles without the mechanism up to the baseline)")
    ax.set_title(f"what each mechanism costs: {_kernel_on_machine(setup)}", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return _save(fig, target, force)


def stall_figure(result, path, force: bool = False) -> Path:
    """The stall stack of one estimate: a bar of its cycles split by stall cause."""
    target = _target(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 2.8))
    s = result.setup
    _stack(ax, [s.kernel if s is not None else "kernel"], [{k: v for k, v in result.stalls.items() if v}],
           horizontal=True)
    several = result.outcome is not None and result.outcome.stall_sms
    ax.set_xlabel("cycles (of the average SM that ran a block)" if several else "cycles")
    ax.set_title(f"{_kernel_on_machine(s)}: {result.cycles} cycles by stall cause", fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return _save(fig, target, force)


def application_bars(rows: list[dict], path, force: bool = False) -> Path:
    """The application table as bars of time by kernel, one per row in the order given: ``rows`` are
    dicts with ``name`` and ``time_us`` (µs; ``cycles`` when no row has a time); rows that carry
    ``stalls`` (cause → cycles) have their bar split by cause in proportion. Rows with an ``error``
    are left out."""
    target = _target(path)
    plt = _pyplot()
    done = [r for r in rows if not r.get("error")]
    if not done:
        raise PlotError("application plot: no kernel ran")
    timed = all(r.get("time_us") is not None for r in done)
    vals = [float(r["time_us"] if timed else r["cycles"]) for r in done]
    names = [_short(str(r.get("name", f"kernel {i}"))) for i, r in enumerate(done)]
    fig, ax = plt.subplots(figsize=(8.5, 0.35 * len(done) + 1.4))
    if all(r.get("stalls") for r in done):
        _stack(ax, names, [r["stalls"] for r in done], horizontal=True, scale=vals)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.barh(range(len(done)), vals, color="tab:blue")
        ax.set_yticks(range(len(done)), names)
        ax.invert_yaxis()
    ax.set_xlabel("time (µs)" if timed else "cycles")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return _save(fig, target, force)


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else name[:width - 1] + "…"


def suffix_ok(path) -> bool:
    """Whether ``path`` names a format the plots write (checked before a long run)."""
    return os.path.splitext(str(path))[1].lower() in FORMATS
