"""``teg calibrate``: fit machine-table parameters from measured micro-benchmarks (TEG report
§3.2.1, automated) and write a table that ``extends:`` a base table.

Fits (ordinary least squares with numpy; every case family is one kernel at several lengths):

* execution latency — dependent chains at 1 warp: ``cycles = c + n · Σ lat(step)``; the slope over
  chain length ``n`` cancels the clock-read/barrier overhead ``c`` (TEG: ``(514 − 28 − 8)/20``,
  here fitted instead of subtracted by hand). When a step holds several opcodes of the same
  latency class the slope is divided among them; ops of other classes are subtracted with their
  fitted (or else base-table) latency.
* same-warp issue latency — 8 independent streams at 1 warp: slope over instructions per thread.
* unit occupancy — the same streams at the largest warp count: ``cycles = c + I · t`` with
  ``I = instructions per thread × warps`` per SM; ``occupancy = t × copies`` of the unit
  (``count × schedulers`` for a per-scheduler unit, ``count`` for a per-SM one).
* shared / L1 / L2 / DRAM latency — pointer chases at 1 warp, slope per dependent load.
* bank-conflict wavefront cost — conflicted shared chases at 1 warp, joint fit
  ``cycles = c + n · L + n · (d − 1) · w`` over chain length ``n`` and conflict degree ``d``.

Several families that fit the same parameter (FADD, FMUL and FFMA all in class ``fp32``) are
averaged; each written value carries a ``source:`` naming the measured file and its cases.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import yaml

from teg import TegError, __version__, fileio
from teg.machine import generated

LATENCY_TARGETS = {"shared_latency": ("shared", "latency"), "l1_latency": ("memory", "l1", "latency"),
                   "l2_latency": ("memory", "l2", "latency"), "dram_latency": ("memory", "dram_latency")}


class CalibrationError(TegError):
    """Measured data that cannot be fitted, or a base table that does not fit the data."""


@dataclass
class Fit:
    """One fitted parameter: its table key path, the value, the base table's value, the cases."""

    path: tuple[str, ...]
    value: float
    base: float | None
    cases: list[str]
    method: str
    r2: float | None = None
    estimates: list[float] = field(default_factory=list)

    def key(self) -> str:
        return ".".join(self.path)


def least_squares(columns: list[np.ndarray], y: np.ndarray) -> tuple[np.ndarray, float | None]:
    """Solve ``y ≈ Σ β_i · columns_i`` (numpy lstsq); returns β and the coefficient of
    determination (None when y has no variance)."""
    a = np.column_stack(columns).astype(float)
    y = np.asarray(y, dtype=float)
    if a.shape[0] < a.shape[1] or np.linalg.matrix_rank(a) < a.shape[1]:
        raise CalibrationError(f"not enough distinct points to fit {a.shape[1]} unknowns from {a.shape[0]} measurements")
    beta, *_ = np.linalg.lstsq(a, y, rcond=None)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = None if ss_tot == 0 else 1.0 - float(((y - a @ beta) ** 2).sum()) / ss_tot
    return beta, r2


def slope(x: list[float], y: list[float]) -> tuple[float, float, float | None]:
    """Least-squares line ``y = c + s·x``: (s, c, r²)."""
    xa = np.asarray(x, dtype=float)
    beta, r2 = least_squares([np.ones_like(xa), xa], np.asarray(y, dtype=float))
    return float(beta[1]), float(beta[0]), r2


# -------------------------------------------------------------------------------- data access

def _result(case: dict, warps: int | None) -> dict | None:
    """The case's result at ``warps`` (the largest warp count when None)."""
    res = case.get("results") or []
    if not res:
        return None
    if warps is None:
        return max(res, key=lambda r: r["warps"])
    hits = [r for r in res if int(r["warps"]) == warps]
    return hits[0] if hits else None


def _families(measured: dict, quantities: tuple[str, ...]) -> dict[tuple, list[dict]]:
    """Group calibrating cases by (quantity, opcode, step, kernel family)."""
    fam: dict[tuple, list[dict]] = defaultdict(list)
    for case in measured["cases"]:
        cal = case.get("calibrates")
        if not cal or cal.get("quantity") not in quantities:
            continue
        key = (cal["quantity"], cal["opcode"], tuple(cal.get("step", ())), tuple(cal.get("step_sm90") or ()))
        fam[key].append(case)
    return fam


def _step(cal: dict, sm: int) -> tuple[str, ...]:
    s90 = cal.get("step_sm90")
    return tuple(s90) if (sm >= 90 and s90) else tuple(cal["step"])


def _name_of(case: dict) -> str:
    return case["case"]


# ------------------------------------------------------------------------------ class lookups

def _opcode_class(machine, opcode: str) -> str | None:
    """Name of the table's opcode class for ``opcode`` (the map key rule of Machine.classify)."""
    table = (machine.raw.get("opcodes") or {}).get("map") or {}
    base, *mods = opcode.split(".")
    best, best_n = None, -1
    for key, entry in table.items():
        kb, *km = str(key).split(".")
        if kb == base and len(km) > best_n and all(m in mods for m in km):
            cls = entry if isinstance(entry, str) else entry.get("class")
            best, best_n = cls, len(km)
    return best


def _info(machine, opcode: str, where: str):
    info = machine.classify(opcode)
    if info is None:
        raise CalibrationError(f"{where}: opcode {opcode} is not in machine table {machine.name}")
    return info


def _copies(machine, unit_name: str) -> float:
    unit = machine.units[unit_name]
    return unit.count * (machine.schedulers if unit.per == "scheduler" else 1)


def _get(doc: dict, path: tuple[str, ...]) -> float | None:
    node: Any = doc
    for k in path:
        if not isinstance(node, dict) or k not in node:
            return None
        node = node[k]
    if isinstance(node, dict) and "value" in node:
        node = node["value"]
    return float(node) if isinstance(node, (int, float)) else None


# ------------------------------------------------------------------------------------- fitting

def _chain_slopes(cases: list[dict], warps: int) -> tuple[float, float | None, list[str]]:
    xs, ys, names = [], [], []
    for c in cases:
        r = _result(c, warps)
        if r is not None:
            xs.append(float(c["calibrates"]["steps"]))
            ys.append(float(r["cycles"]))
            names.append(_name_of(c))
    if len(set(xs)) < 2:
        raise CalibrationError(f"{', '.join(_name_of(c) for c in cases)}: need results at {warps} warp(s) "
                               "for at least two chain lengths")
    s, _, r2 = slope(xs, ys)
    return s, r2, names


def fit(measured: dict, machine) -> list[Fit]:
    """All parameter fits the measured document supports on ``machine`` (see module doc)."""
    sm = int((measured.get("gpu") or {}).get("sm") or machine.sm)
    raw = machine.raw
    estimates: dict[tuple[str, ...], list[tuple[float, list[str], str, float | None]]] = defaultdict(list)
    fitted_exec: dict[str, float] = {}

    def base_exec(latency_class: str) -> float:
        if latency_class in fitted_exec:
            return fitted_exec[latency_class]
        return float(machine.latencies[latency_class].execution)

    # 1) execution latency: pure families first (all step ops in the target's class), then mixed.
    lat = _families(measured, ("latency",))
    ordered = sorted(lat.items(), key=lambda kv: len({_info(machine, o, kv[1][0]["case"]).latency
                                                       for o in _step(kv[1][0]["calibrates"], sm)}))
    pending: dict[str, list[float]] = defaultdict(list)
    for (_, opcode, *_), cases in ordered:
        cal = cases[0]["calibrates"]
        where = _name_of(cases[0])
        target = _info(machine, opcode, where).latency
        s, r2, names = _chain_slopes(cases, 1)
        step_classes = [_info(machine, o, where).latency for o in _step(cal, sm)]
        same = sum(1 for c in step_classes if c == target)
        others = sum(base_exec(c) for c in step_classes if c != target)
        value = (s - others) / same
        method = "slope of cycles over chain length at 1 warp (TEG §3.2.1)"
        if same != len(step_classes):
            method += f"; minus {others:.2f} for the step's other ops"
        estimates[("latencies", target, "execution")].append((value, names, method, r2))
        pending[target].append(value)
        fitted_exec[target] = float(np.mean(pending[target]))

    # 2) same-warp issue latency and unit occupancy from independent streams.
    for (_, opcode, *_), cases in _families(measured, ("occupancy", "issue_same")).items():
        cal = cases[0]["calibrates"]
        where = _name_of(cases[0])
        info = _info(machine, opcode, where)
        classes = {_info(machine, o, where).latency for o in _step(cal, sm)}
        units = {_info(machine, o, where).unit for o in _step(cal, sm)}
        if len(classes) != 1 or len(units) != 1:
            continue  # a step mixing classes/units cannot be attributed to one of them
        s1, r2_1, names = _chain_slopes(cases, 1)
        estimates[("latencies", info.latency, "issue_same")].append(
            (s1, names, "slope of cycles over independent instructions per thread at 1 warp", r2_1))
        top = max(int(r["warps"]) for c in cases for r in c["results"])
        xs, ys, names_w = [], [], []
        for c in cases:
            r = _result(c, top)
            if r is not None:
                xs.append(float(c["calibrates"]["steps"]) * top)
                ys.append(float(r["cycles"]))
                names_w.append(_name_of(c))
        if len(set(xs)) >= 2 and top > 1:
            t, _, r2 = slope(xs, ys)
            cls = _opcode_class(machine, opcode)
            path = ("opcodes", "classes", cls, "occupancy") if cls else ("units", info.unit, "occupancy")
            estimates[path].append((t * _copies(machine, info.unit), names_w,
                                    f"cycles per warp instruction per SM at {top} warps x {_copies(machine, info.unit):g} unit copies", r2))

    # 3) memory latencies from pointer chases. Where the base table ties the opcode's latency
    #    class to the same number (latencies.shared.execution == shared.latency), both are set.
    for (quantity, opcode, *_), cases in _families(measured, tuple(LATENCY_TARGETS)).items():
        s, r2, names = _chain_slopes(cases, 1)
        path = LATENCY_TARGETS[quantity]
        estimates[path].append((s, names, "slope of cycles per dependent load at 1 warp", r2))
        cls = _info(machine, opcode, _name_of(cases[0])).latency
        tied = ("latencies", cls, "execution")
        if _get(raw, path) is not None and _get(raw, path) == _get(raw, tied):
            estimates[tied].append((s, names, f"slope of cycles per dependent load at 1 warp (tied to {'.'.join(path)})", r2))

    # 4) bank-conflict wavefront cost.
    for _key, cases in _families(measured, ("wavefront",)).items():
        n, d, y, names = [], [], [], []
        for c in cases:
            r = _result(c, 1)
            if r is not None:
                n.append(float(c["calibrates"]["steps"]))
                d.append(float(c["calibrates"]["degree"]))
                y.append(float(r["cycles"]))
                names.append(_name_of(c))
        na, da = np.asarray(n), np.asarray(d)
        beta, r2 = least_squares([np.ones_like(na), na, na * (da - 1)], np.asarray(y))
        estimates[("shared", "wavefront_cycles")].append(
            (float(beta[2]), names, "joint fit cycles = c + n*L + n*(degree-1)*w at 1 warp", r2))

    fits = []
    for path, items in estimates.items():
        vals = [v for v, *_ in items]
        cases = [n for _, names, _, _ in items for n in names]
        r2s = [r for *_, r in items if r is not None]
        fits.append(Fit(path=path, value=float(np.mean(vals)), base=_get(raw, path), cases=cases,
                        method=items[0][2] + (f" (mean of {len(vals)} families)" if len(vals) > 1 else ""),
                        r2=min(r2s) if r2s else None, estimates=vals))
    if not fits:
        raise CalibrationError("the measured file has no calibrating micro-benchmarks "
                               "(cases with a 'calibrates' record)")
    for f in fits:
        if not np.isfinite(f.value) or f.value <= 0:
            raise CalibrationError(f"{f.key()}: fitted value {f.value:.3g} from {', '.join(f.cases[:3])} "
                                   "is not positive (noisy or wrong measurements?)")
    return sorted(fits, key=lambda f: f.path)


def table(fits: list[Fit], base: str, name: str, measured_path: str, gpu: dict | None) -> dict:
    """The machine-table document: ``extends: base`` plus one value leaf per fit."""
    src_file = os.path.basename(measured_path)
    doc: dict[str, Any] = {"name": name, "extends": base,
                           "description": f"{base} calibrated from measured micro-benchmarks "
                                          f"({src_file}{', ' + gpu['name'] if gpu and gpu.get('name') else ''})"}
    if gpu and gpu.get("clock_mhz"):
        doc["clock_mhz"] = {"value": float(gpu["clock_mhz"]), "source": f"{src_file}: gpu.clock_mhz (cuDeviceGetAttribute)"}
    if gpu and gpu.get("num_sms"):
        doc["num_sms"] = {"value": int(gpu["num_sms"]), "source": f"{src_file}: gpu.num_sms (cuDeviceGetAttribute)"}
    for f in fits:
        node = doc
        for k in f.path[:-1]:
            node = node.setdefault(k, {})
        cases = ", ".join(f.cases if len(f.cases) <= 6 else f.cases[:6] + [f"… {len(f.cases) - 6} more"])
        r2 = f", r2={f.r2:.4f}" if f.r2 is not None else ""
        node[f.path[-1]] = {"value": round(f.value, 2),
                            "source": f"teg calibrate from {src_file}: {f.method}{r2}; cases {cases}"}
    return doc


def table_text(doc: dict, measured_path: str) -> str:
    """The table file: YAML framed by the comment lines of :mod:`teg.machine.generated` (its first
    line names teg and the input, its last line proves the file complete)."""
    return generated.frame(yaml.safe_dump(doc, sort_keys=False, width=120, allow_unicode=True),
                           f"(teg {__version__}) on {_dt.date.today().isoformat()} from {measured_path}",
                           "Fitted values override the base table; everything else is inherited from it.")


def write(doc: dict, path: str | os.PathLike, measured_path: str, force: bool = False,
          check: Callable[[Path], object] | None = None) -> None:
    """Write the table atomically (:func:`teg.fileio.atomic_file`): an existing file is replaced only
    if ``teg calibrate`` wrote it (or ``force``), and only after ``check(temporary file)`` accepted
    the new one."""
    with fileio.atomic_file(path, generated.written_by_teg, force) as fh:
        fh.write(table_text(doc, measured_path).encode("utf-8"))
        fh.flush()
        if check is not None:
            # absolute, so that a loader taking names or paths reads the temporary file as a path
            # even when the output is a bare file name in the working folder
            check(Path(fh.name).absolute())


def calibrate(measured: dict, base: str, output: str | os.PathLike, name: str | None = None,
              force: bool = False) -> list[Fit]:
    """Fit ``measured`` on machine table ``base``, write the derived table to ``output`` and check
    that :func:`teg.machine.load` accepts it. Returns the fits."""
    from teg import machine as machine_mod

    m = machine_mod.load(base)
    fits = fit(measured, m)
    out = Path(output)
    ext = base
    if base.endswith((".yaml", ".yml")) or os.sep in base:
        ext = os.path.relpath(Path(base).resolve(), out.resolve().parent)
    doc = table(fits, ext, name or out.stem, measured.get("path", "measured.json"), measured.get("gpu"))
    # the loader validates the new table (schema + source rule) before it replaces anything
    write(doc, out, measured.get("path", "measured.json"), force, check=machine_mod.load)
    return fits
