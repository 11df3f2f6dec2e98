"""Side-by-side comparison of the engine and the published analytical models on the same inputs.

:func:`compare` derives one :class:`~teg.models.profile.KernelProfile` from the Program + trace +
machine, runs every analytical model of :data:`teg.models.MODELS` on it with the machine's model
parameters (:func:`teg.models.params.params_for`), runs the engine (``teg.engine.estimate``) for
the ``engine`` row, and, given a measured cycle count, each row's relative error
``(estimate − measured) / measured``.

A model whose parameters the machine table lacks gives a row with ``cycles = None`` and the reason
in ``note`` (the others still run).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from teg import TegError
from teg.models import MODELS
from teg.models.params import ModelParameterError, ModelParams, params_for
from teg.models.profile import KernelProfile, ProfileError, profile_from
from teg.models.result import plain
from teg.textfile import TextFileError, read_text

ROW_ORDER = ("engine", *MODELS)


class MeasuredDataError(TegError):
    """A measured-data file that cannot be read or has no entry for the kernel."""


@dataclass
class Row:
    """One estimator's answer: cycles at the machine clock (None when it could not run), its time,
    its intermediate metrics, its relative error against the measurement, and a note."""

    model: str
    cycles: float | None
    seconds: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "cycles": self.cycles, "seconds": self.seconds, "error": self.error,
                "note": self.note, "metrics": self.metrics}


@dataclass
class Comparison:
    """The rows of one kernel on one machine (engine first, then the models in
    :data:`ROW_ORDER`), the profile they read and the measured cycles if any."""

    kernel: str
    machine: str
    rows: list[Row]
    profile: KernelProfile
    measured: float | None = None

    def row(self, model: str) -> Row:
        for r in self.rows:
            if r.model == model:
                return r
        raise KeyError(model)

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "machine": self.machine, "measured": self.measured,
                "rows": [r.to_dict() for r in self.rows], "profile": profile_summary(self.profile)}


def relative_error(estimate: float | None, measured: float | None) -> float | None:
    """(estimate − measured) / measured; None when either is missing or measured is 0."""
    if estimate is None or measured is None or measured == 0:
        return None
    return (estimate - measured) / measured


def run_models(profile: KernelProfile, params: ModelParams, models: Iterable[str] | None = None) -> list[Row]:
    """Every requested analytical model on ``profile``: one :class:`Row` each."""
    rows = []
    for name in models or MODELS:
        if name not in MODELS:
            raise TegError(f"unknown model {name!r} (models: {', '.join(MODELS)})")
        try:
            res = MODELS[name](profile, params)
        except (ModelParameterError, ProfileError) as exc:
            rows.append(Row(model=name, cycles=None, note=str(exc)))
            continue
        rows.append(Row(model=name, cycles=_finite(res.cycles), seconds=_finite(res.seconds), metrics=res.metrics()))
    return rows


def engine_row(program, kernel_trace, machine, options=None) -> Row:
    """The engine's estimate (:func:`teg.engine.runner.run_kernel`) as a row."""
    from teg.engine.kernel_inputs import load_inputs
    from teg.engine.runner import run_kernel

    result = run_kernel(load_inputs(sass=program, trace=kernel_trace, machine=machine), options).result
    cycles = float(result.cycles)
    occ = result.setup.occupancy if result.setup is not None else None
    metrics = {"instructions": result.instructions, "ipc": result.ipc,
               "stalls": dict(result.stalls), "occupancy": occ.to_dict() if occ is not None else None}
    return Row(model="engine", cycles=cycles, seconds=cycles / (machine.clock_mhz * 1e6), metrics=plain(metrics))


def _check_memory(kt, with_profile: bool, with_engine: bool) -> None:
    """Refuse up front a comparison that needs more memory than this process may use
    (:mod:`teg.hostmem`): the models' per-row profile, and the engine's lowering and run."""
    from teg.hostmem import PROFILE_ROW_BYTES, lowering_bytes, require, size_text

    n = kt.num_rows
    prof = n * PROFILE_ROW_BYTES if with_profile else 0
    eng = lowering_bytes(n, n) if with_engine else 0          # (transactions: about one per row, at most)
    smaller = "compare a smaller launch (fewer blocks in the trace), or give teg more memory"
    if eng:
        smaller = f"--no-engine leaves out the engine row (about {size_text(eng)} of it); " + smaller
    require(prof + eng, f"compare: kernel {kt.info.name or kt.info.kernel_id}, {n:,} warp instructions", smaller)


def compare(program, kernel_trace, machine, *, options=None, measured: float | None = None,
            overrides: Mapping[str, float] | None = None, models: Iterable[str] | None = None,
            engine: bool = True, unknown: str = "error", profile: KernelProfile | None = None) -> Comparison:
    """Engine + analytical models for one kernel launch on one machine (see module docstring).
    ``measured`` must be a positive finite cycle count (:class:`MeasuredDataError` otherwise)."""
    if measured is not None and not (isinstance(measured, (int, float)) and math.isfinite(measured) and measured > 0):
        raise MeasuredDataError(f"measured cycles must be a positive finite number, got {measured!r}")
    if kernel_trace is not None:
        _check_memory(kernel_trace, engine and profile is None, engine)
    prof = profile or profile_from(program, kernel_trace, machine, unknown=unknown)
    params = params_for(machine, overrides)
    rows = [engine_row(program, kernel_trace, machine, options)] if engine else []
    rows += run_models(prof, params, models)
    for r in rows:
        r.error = relative_error(r.cycles, measured)
    return Comparison(kernel=prof.name, machine=machine.name, rows=rows, profile=prof, measured=measured)


def profile_summary(profile: KernelProfile) -> dict[str, Any]:
    """The profile as plain JSON (periods summarised by count and totals)."""
    d = {k: plain(v) for k, v in profile.__dict__.items() if k != "periods"}
    d["active_warps_per_sm"] = profile.active_warps_per_sm
    d["rep"] = profile.rep
    d["periods"] = len(profile.periods)
    return d


def load_measured(path: str | Path, kernel: str, kernel_id: int | None = None, warps: int | None = None) -> float:
    """Measured cycles of ``kernel`` from a file:

    * a ``teg validate measure`` result (schema ``teg.validate.measured/1``): the case whose kernel
      matches, and of its results the one measured with ``warps`` warps (the only one if just one);
    * JSON ``{"cycles": N}``, ``{name: N}`` or ``{name: {"cycles": N}}``;
    * CSV with columns ``kernel,cycles`` (a header line is optional).

    A name matches the kernel's mangled name, a substring of it, or its id."""
    p = Path(path)
    try:
        text = read_text(p, 1 << 26, "measured-data file")
    except TextFileError as exc:
        raise MeasuredDataError(str(exc)) from None
    entries: dict[str, Any]
    if p.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MeasuredDataError(f"{p}:{exc.lineno}: invalid JSON ({exc.msg})") from None
        if not isinstance(doc, dict):
            raise MeasuredDataError(f"{p}: expected a JSON object")
        if str(doc.get("schema", "")).startswith("teg.validate.measured"):
            return _from_validate(doc, p, kernel, warps)
        if "cycles" in doc and not isinstance(doc["cycles"], dict):
            return _cycles(doc["cycles"], p, 1)
        entries = {k: (v.get("cycles") if isinstance(v, dict) else v) for k, v in doc.items()}
        lines = {k: 1 for k in entries}
    else:
        entries, lines = {}, {}
        for n, rec in enumerate(csv.reader(text.splitlines()), 1):
            if not rec or rec[0].startswith("#"):
                continue
            if len(rec) < 2:
                raise MeasuredDataError(f"{p}:{n}: expected 'kernel,cycles'")
            if n == 1 and rec[1].strip().lower() == "cycles":
                continue
            entries[rec[0].strip()] = rec[1].strip()
            lines[rec[0].strip()] = n
    for key, value in entries.items():
        if _matches(key, kernel, kernel_id):
            return _cycles(value, p, lines[key])
    raise MeasuredDataError(f"{p}: no measured cycles for kernel {kernel!r}")


def _matches(key: str, kernel: str, kernel_id: int | None) -> bool:
    return key == kernel or bool(key and key in kernel) or (kernel_id is not None and key == str(kernel_id))


def _from_validate(doc: dict, path: Path, kernel: str, warps: int | None) -> float:
    """The measurement of ``kernel`` at ``warps`` warps in a ``teg validate measure`` result."""
    for case in doc.get("cases", []):
        if not (_matches(str(case.get("kernel", "")), kernel, None) or _matches(str(case.get("case", "")), kernel, None)):
            continue
        results = case.get("results", [])
        if warps is not None:
            hit = [r for r in results if r.get("warps") == warps]
            if hit:
                return _cycles(hit[0].get("cycles"), path, 1)
        if len(results) == 1:
            return _cycles(results[0].get("cycles"), path, 1)
        have = ", ".join(str(r.get("warps")) for r in results)
        raise MeasuredDataError(f"{path}: case {case.get('case')!r} has no measurement with {warps} warps "
                                f"(measured: {have})")
    raise MeasuredDataError(f"{path}: no measured case for kernel {kernel!r}")


def _cycles(value: Any, path: Path, line: int) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise MeasuredDataError(f"{path}:{line}: measured cycles must be a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise MeasuredDataError(f"{path}:{line}: measured cycles must be positive, got {value!r}")
    return v


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None
