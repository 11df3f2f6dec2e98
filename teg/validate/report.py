"""``teg validate report``: accuracy of teg's predictions against measured cycles.

Per case and warp count the error of every model is ``(predicted − measured) / measured``
(``error_basis="measured"``, the usual definition) or ``(predicted − measured) / predicted``
(``error_basis="predicted"``, the convention of the TEG report's Tables 2–5). The mean absolute
percentage error (MAPE) is ``100 · mean |error|`` over the rows a model predicted, per group
and overall (overall averages rows, not groups). Plots (matplotlib, extra ``plot``): predicted vs
measured for every model, and per-case scaling curves — speedup ``W · T(1) / T(W)`` over warps per
SM, measured against predicted, as the TEG report's Figures 4–7.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from teg import TegError

SCHEMA = "teg.validate.report/1"
BASES = ("measured", "predicted")


class ValidationDataError(TegError):
    """A measured or predicted validation file that cannot be used."""


@dataclass
class Row:
    """One (case, warps) point: measured cycles and every model's predicted cycles."""

    case: str
    group: str
    warps: int
    measured: float
    predicted: dict[str, float | None] = field(default_factory=dict)
    spread: float | None = None


def load_document(path: str | os.PathLike, kind: str) -> dict:
    """Read a measured (``kind="measured"``) or predicted validation JSON and check its shape."""
    from teg.textfile import TextFileError, read_text

    p = Path(path)
    try:
        doc = json.loads(read_text(p, 1 << 28, f"{kind} validation document"))   # a regular file: a pipe never ends
    except TextFileError as exc:
        raise ValidationDataError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ValidationDataError(f"{p}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise ValidationDataError(f"{p}: expected a {kind} validation document with a 'cases' list")
    if doc.get("kind", kind) != kind:
        raise ValidationDataError(f"{p}: this is a {doc.get('kind')!r} document, expected {kind!r}")
    for i, case in enumerate(doc["cases"]):
        if not isinstance(case, dict) or "case" not in case or not isinstance(case.get("results"), list):
            raise ValidationDataError(f"{p}: cases[{i}]: needs 'case' and a 'results' list")
        for j, r in enumerate(case["results"]):
            if "warps" not in r:
                raise ValidationDataError(f"{p}: {case['case']}: results[{j}]: missing 'warps'")
            if kind == "measured" and not _is_pos(r.get("cycles")):
                raise ValidationDataError(f"{p}: {case['case']}: results[{j}]: 'cycles' must be a positive number")
            if kind == "predicted" and not isinstance(r.get("predicted"), dict):
                raise ValidationDataError(f"{p}: {case['case']}: results[{j}]: missing 'predicted' mapping")
    doc.setdefault("path", str(p))
    return doc


def _is_pos(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def join(measured: dict, predicted: dict) -> list[Row]:
    """Pair measured and predicted results by (case, warps); rows only for measured points."""
    pred: dict[tuple[str, int], dict] = {}
    for case in predicted["cases"]:
        for r in case["results"]:
            pred[(case["case"], int(r["warps"]))] = r["predicted"]
    rows = []
    for case in measured["cases"]:
        for r in case["results"]:
            key = (case["case"], int(r["warps"]))
            p = pred.get(key, {})
            rows.append(Row(case=case["case"], group=case.get("group", "other"), warps=key[1],
                            measured=float(r["cycles"]), spread=r.get("spread"),
                            predicted={m: (float(v) if _is_pos(v) else None) for m, v in p.items()}))
    if not any(r.predicted for r in rows):
        raise ValidationDataError("no measured case has a prediction (different suites or case names?)")
    return rows


def _ordered_groups(groups: set[str]) -> list[str]:
    """Groups in the suite's order (teg.validate.suite.GROUPS), unknown ones after, sorted."""
    from teg.validate.suite import GROUPS

    return sorted(groups, key=lambda g: (GROUPS.index(g) if g in GROUPS else len(GROUPS), g))


def error(predicted: float, measured: float, basis: str = "measured") -> float:
    """Relative error of a prediction: ``(p − m) / m`` or, TEG report style, ``(p − m) / p``."""
    if basis not in BASES:
        raise ValidationDataError(f"error basis must be one of {', '.join(BASES)}, got {basis!r}")
    return (predicted - measured) / (measured if basis == "measured" else predicted)


def models_of(rows: list[Row]) -> list[str]:
    """Model names present, ``engine`` first, then alphabetical."""
    names = {m for r in rows for m in r.predicted}
    return sorted(names, key=lambda m: (m != "engine", m))


def mape(rows: list[Row], model: str, basis: str = "measured") -> tuple[float | None, int]:
    """``100 · mean |error|`` of ``model`` over the rows it predicted, and that row count."""
    errs = [abs(error(r.predicted[model], r.measured, basis)) for r in rows if r.predicted.get(model)]
    return (100.0 * sum(errs) / len(errs) if errs else None), len(errs)


def summarize(rows: list[Row], basis: str = "measured") -> dict[str, dict]:
    """Per model: overall MAPE, row count, missing rows, and MAPE per group."""
    groups = _ordered_groups({r.group for r in rows})
    out = {}
    for m in models_of(rows):
        total, n = mape(rows, m, basis)
        per = {}
        for g in groups:
            gm, gn = mape([r for r in rows if r.group == g], m, basis)
            per[g] = {"mape": gm, "n": gn}
        out[m] = {"mape": total, "n": n, "missing": len(rows) - n, "groups": per}
    return out


def build(measured: dict, predicted: dict, basis: str = "measured") -> dict:
    """The report document (schema ``teg.validate.report/1``)."""
    rows = join(measured, predicted)
    models = models_of(rows)
    return {
        "schema": SCHEMA,
        "measured": measured.get("path"), "predicted": predicted.get("path"),
        "measured_synthetic": bool(measured.get("synthetic", False)),
        "gpu": measured.get("gpu"), "machine": predicted.get("machine"),
        "error_basis": basis,
        "models": summarize(rows, basis),
        "rows": [{"case": r.case, "group": r.group, "warps": r.warps, "measured": r.measured,
                  "spread": r.spread, "predicted": {m: r.predicted.get(m) for m in models},
                  "error": {m: (error(r.predicted[m], r.measured, basis) if r.predicted.get(m) else None)
                            for m in models}}
                 for r in rows],
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def render_text(report: dict) -> str:
    """Plain-text view: MAPE per model and group, then every (case, warps) row."""
    models = list(report["models"])
    groups = _ordered_groups({g for m in report["models"].values() for g in m["groups"]})
    lines = []
    gpu = report.get("gpu") or {}
    if report.get("measured_synthetic"):
        lines.append("NOTE: the measured file is marked synthetic (not hardware data).")
    lines.append(f"measured: {report.get('measured')}  ({gpu.get('name', '?')}, {gpu.get('clock_mhz', '?')} MHz)")
    lines.append(f"predicted: {report.get('predicted')}  (machine {report.get('machine', '?')})")
    lines.append(f"error = (predicted - measured) / {report['error_basis']}")
    lines.append("")
    w0 = max([len("model")] + [len(m) for m in models])
    head = f"{'MAPE %':<{w0}}  " + "  ".join(f"{g:>11}" for g in groups) + f"  {'overall':>9}  {'rows':>6}"
    lines.append(head)
    for m in models:
        s = report["models"][m]
        cells = [("—" if s["groups"][g]["mape"] is None else f"{s['groups'][g]['mape']:.1f}") for g in groups]
        overall = "—" if s["mape"] is None else f"{s['mape']:.1f}"
        lines.append(f"{m:<{w0}}  " + "  ".join(f"{c:>11}" for c in cells) + f"  {overall:>9}  {s['n']:>6}")
    lines.append("")
    wc = max([4] + [len(r["case"]) for r in report["rows"]])
    lines.append(f"{'case':<{wc}}  {'warps':>5}  {'measured':>11}  " + "  ".join(f"{m:>16}" for m in models))
    for r in report["rows"]:
        cells = []
        for m in models:
            p = r["predicted"].get(m)
            cells.append("—" if p is None else f"{p:.0f} {_pct(r['error'][m])}")
        lines.append(f"{r['case']:<{wc}}  {r['warps']:>5}  {r['measured']:>11.0f}  " + "  ".join(f"{c:>16}" for c in cells))
    return "\n".join(lines) + "\n"


def speedup(warps: list[int], cycles: list[float]) -> list[float]:
    """Workload-normalised speedup ``W · T(1) / T(W)`` (TEG Figures 4–7; each warp has the same
    work, so ideal scaling is ``W``). Relative to the smallest warp count present."""
    pairs = sorted(zip(warps, cycles))
    w0, t0 = pairs[0]
    return [(w / w0) * t0 / t for w, t in pairs]


def png_by_teg(path: Path) -> bool:
    """Whether ``path`` is a PNG teg drew (its ``Software`` text chunk: :data:`teg.fileio.png_owned`)."""
    from teg.fileio import png_owned

    return png_owned(path)


def save_png(fig, path: Path, dpi: int) -> None:
    """Save a matplotlib figure as PNG atomically (:mod:`teg.fileio`), tagged as written by teg so
    the next report may replace it (a user's PNG of the same name is never overwritten)."""
    from teg import __version__, fileio

    with fileio.atomic_file(path, png_by_teg) as fh:
        fig.savefig(fh, format="png", dpi=dpi, metadata={"Software": f"teg {__version__}"})


def plot(report: dict, out_dir: str | os.PathLike) -> list[str]:
    """Write ``pred_vs_measured.png`` and ``scaling_<group>.png``; returns the files written.
    Raises :class:`ValidationDataError` when matplotlib is not installed (extra ``plot``)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValidationDataError("plots need matplotlib (pip install 'teg[plot]')") from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    models = list(report["models"])
    rows = report["rows"]
    written = []
    fig, ax = plt.subplots(figsize=(6, 6))
    lo, hi = math.inf, 0.0
    for m in models:
        pts = [(r["measured"], r["predicted"][m]) for r in rows if r["predicted"].get(m)]
        if not pts:
            continue
        xs, ys = zip(*pts)
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
        mp = report["models"][m]["mape"]
        ax.scatter(xs, ys, s=10, label=f"{m} (MAPE {mp:.1f}%)")
    if hi > 0:
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set_xscale("log"), ax.set_yscale("log")
    ax.set_xlabel("measured cycles"), ax.set_ylabel("predicted cycles")
    ax.set_title("predicted vs measured")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "pred_vs_measured.png"
    save_png(fig, path, 120)
    plt.close(fig)
    written.append(str(path))
    for group in sorted({r["group"] for r in rows}):
        cases = list(dict.fromkeys(r["case"] for r in rows if r["group"] == group))[:24]
        ncol = min(4, len(cases))
        nrow = math.ceil(len(cases) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 2.6 * nrow), squeeze=False)
        for ax, case in zip(axes.ravel(), cases):
            pts = sorted((r["warps"], r) for r in rows if r["case"] == case)
            ws = [w for w, _ in pts]
            ax.plot(ws, [w / ws[0] for w in ws], ":", color="0.6", label="ideal")
            ax.plot(ws, speedup(ws, [r["measured"] for _, r in pts]), "ko-", label="measured")
            for m in models:
                if all(r["predicted"].get(m) for _, r in pts):
                    ax.plot(ws, speedup(ws, [r["predicted"][m] for _, r in pts]), ".--", label=m)
            ax.set_xscale("log", base=2)
            ax.set_title(case, fontsize=8)
            ax.set_xlabel("warps per SM", fontsize=7)
            ax.set_ylabel("speedup W·T(1)/T(W)", fontsize=7)
        for ax in axes.ravel()[len(cases):]:
            ax.axis("off")
        axes.ravel()[0].legend(fontsize=6)
        fig.tight_layout()
        path = out / f"scaling_{group}.png"
        save_png(fig, path, 110)
        plt.close(fig)
        written.append(str(path))
    return written
