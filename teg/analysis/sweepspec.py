"""Sweeps over whole applications: kernels × machines × warp counts × what-ifs, described in a YAML
file, one independent point per combination (any executor can run them: :func:`run_point` is a
module-level function of a small picklable :class:`SweepPoint`).

The file (paths relative to its folder)::

    traces:                 # applications: kernelslist.g, its folder, a native trace, a .traceg
      - app1/kernelslist.g
      - {trace: k.npz, sass: k.sass}      # with the kernels' SASS
    kernels: "re:reduce"    # optional selection, the --kernel syntax (ids 1,4-9 / re:PATTERN / substring)
    machines: [sm_70, sm_80]   # optional; "auto" (the default) is the table the binary version suggests
    warps: [auto, 8, 32]    # optional; auto = the whole launch on every SM, N = N warps on one SM (TEG §5.1)
    whatif: [none, bank_conflicts, all, coalescing+bandwidth]   # optional; mechanisms removed
    options: {policy: null, dependency_model: auto, sms: null, unknown: error, blocks_per_sm: null}

A what-if point removes its mechanisms and reports the better of a free re-simulation and a replay
of the baseline's issue order, as ``teg whatif`` does (``schedule`` says which). A point that fails
(a machine that does not know the kernel's opcodes, a deadlock …) is a row with ``status`` error
and its message; the others go on.

Every point has an *experiment key* (:func:`experiment_keys`, the CSV's ``key`` column): SHA-256 over
everything that can change its result — the kernel's trace content (the ``.traceg`` file, or the
whole native trace), the SASS file's content, the machine table's content after ``extends:`` (for
``auto``: the table the kernel's binary version suggests, else every shipped table), the options,
the warps, the mechanisms removed, teg's version — and what names the row (the trace and SASS as
written, the kernel's id and position, the machine as written). A sweep resumed from its CSV skips
the points whose key is there, so a changed spec, table, trace or SASS re-runs exactly the points
it changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import yaml

from teg import TegError
from teg.analysis.kernel_task import kernel_inputs_of, largest_stall, recorded
from teg.trace.application import Application, KernelRef, open_application, select
from teg.engine.options import MECHANISMS, Options, OptionsError

SPEC_KEYS = ("traces", "trace", "sass", "kernels", "machines", "machine", "warps", "whatif", "options")
OPTION_KEYS = ("policy", "dependency_model", "sms", "unknown", "blocks_per_sm")

class SweepSpecError(TegError):
    """A sweep file that cannot be used (named with its line)."""


@dataclass(frozen=True)
class SweepPoint:
    """One point: a kernel (``trace`` as written in the spec, resolved to ``ref``), the machine
    (``"auto"``: the suggested table), ``warps`` (None: the whole launch) and the mechanisms
    ``removed`` (empty: the baseline)."""

    trace: str
    ref: KernelRef
    machine: str
    warps: int | None
    removed: tuple[str, ...]
    options: Options
    sass: str | None = None
    sass_written: str | None = None     # the SASS path as the spec wrote it
    key: str = ""                       # the experiment key (module docstring)

    @property
    def whatif(self) -> str:
        """``none``, ``all`` (every mechanism) or the removed mechanisms joined by ``+``."""
        if not self.removed:
            return "none"
        return "all" if set(self.removed) == set(MECHANISMS) else "+".join(self.removed)

    def point(self) -> tuple[str, ...]:
        """The cells of :data:`POINT_COLUMNS`."""
        return tuple(cell(v) for v in (self.trace, self.sass_written, self.ref.kernel_id, self.ref.position,
                                       self.machine, "auto" if self.warps is None else self.warps, self.whatif))


def cell(v) -> str:
    """The CSV text of a value (None → empty)."""
    return "" if v is None else str(v)


def _column(parquet: str = "string", default=None, *, required: bool = False):
    """A column of :class:`PointRow` and the type of its Parquet copy (``string``, ``int64``,
    ``float64``)."""
    meta = {"parquet": parquet}
    return field(metadata=meta) if required else field(default=default, metadata=meta)


@dataclass(frozen=True)
class PointRow:
    """One row of a sweep's table, its fields the table's columns in order: the experiment key
    (what a resumed sweep looks for), the point as written (:meth:`SweepPoint.point`: CSV text,
    ``sass`` empty when none), the kernel's launch, then what the run gave (None: not reached;
    ``status`` ``ok`` or ``error`` with its one-line ``error``; ``warnings``: the unknown opcodes
    timed as ALU, ``; ``-joined). The metadata names each column's type in the Parquet copy."""

    key: str = _column(required=True)
    trace: str = _column(required=True)
    sass: str = _column(required=True)
    kernel_id: str = _column("int64", required=True)
    position: str = _column("int64", required=True)
    machine: str = _column(required=True)
    warps: str = _column(required=True)
    whatif: str = _column(required=True)
    kernel: str = _column(required=True)
    grid: str = _column(required=True)
    block: str = _column(required=True)
    machine_table: str | None = _column()
    status: str = _column(default="error")
    cycles: int | None = _column("int64")
    baseline_cycles: int | None = _column("int64")
    time_us: float | None = _column("float64")
    instructions: int | None = _column("int64")
    ipc: float | None = _column("float64")
    top_stall: str | None = _column()
    top_stall_cycles: int | None = _column("int64")
    schedule: str | None = _column()
    error: str | None = _column()
    warnings: str = _column(default="")

    def data(self) -> dict:
        """The row as a plain dict over :data:`COLUMNS` (its JSON)."""
        return {c: getattr(self, c) for c in COLUMNS}

    @classmethod
    def from_cells(cls, cells: dict[str, str]) -> "PointRow":
        """A row read back from the table's CSV text (an empty cell: None, or ``""`` for the
        columns that are text without a None)."""
        def value(f):                     # by the declared type: f.type is its text (PEP 563)
            text = cells[f.name]
            if f.type in ("int | None", "float | None"):
                return (int if f.type.startswith("int") else float)(text) if text else None
            return None if text == "" and f.type == "str | None" else text
        return cls(**{f.name: value(f) for f in fields(cls)})


# the output table: its columns, the key a resumed sweep looks for, the point as written, and the
# columns typed in the Parquet copy — all read off PointRow
COLUMNS = tuple(f.name for f in fields(PointRow))
KEY_COLUMNS = ("key",)
POINT_COLUMNS = COLUMNS[COLUMNS.index("trace"):COLUMNS.index("whatif") + 1]
INT_COLUMNS = tuple(f.name for f in fields(PointRow) if f.metadata["parquet"] == "int64")
FLOAT_COLUMNS = tuple(f.name for f in fields(PointRow) if f.metadata["parquet"] == "float64")


# ---- the file -------------------------------------------------------------------------------------

@dataclass
class SweepSpec:
    """A parsed sweep file: ``traces`` as (written path, resolved path, resolved sass or None, sass
    as written or None)."""

    path: str
    traces: list[tuple[str, str, str | None, str | None]]
    kernels: str | None
    machines: list[str]
    warps: list[int | None]
    whatifs: list[tuple[str, ...]]
    options: Options

    @classmethod
    def of_application(cls, trace, sass=None, kernels: str | None = None, machine: str | None = None,
                       warps=(), options: Options | None = None) -> "SweepSpec":
        """``teg sweep --trace APP [--kernel …] --warps …`` as a sweep file would say it: one
        application, one machine (None: ``auto``), the warp counts, no what-if."""
        trace = str(trace)
        return cls(path="(command line)", traces=[(trace, trace, sass, sass)], kernels=kernels,
                   machines=[machine or "auto"], warps=list(warps), whatifs=[()], options=options or Options())


def _lines(node) -> dict:
    """1-based line of each top-level key, and of each item of a top-level list as ``(key, i)``."""
    out: dict = {}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            out[k.value] = k.start_mark.line + 1
            if isinstance(v, yaml.SequenceNode):
                for i, item in enumerate(v.value):
                    out[(k.value, i)] = item.start_mark.line + 1
    return out


def _as_list(v) -> list:
    return v if isinstance(v, list) else [v]


def _mechanisms(v, err) -> tuple[str, ...]:
    """``none`` → (); ``all`` → every mechanism; ``a+b`` or a list → those."""
    if v is None or v == "none":
        return ()
    if v == "all":
        return tuple(MECHANISMS)
    names = v if isinstance(v, list) else str(v).split("+")
    bad = [n for n in names if n not in MECHANISMS]
    if bad:
        raise err(f"unknown mechanism {bad[0]!r} (expected none, all, or of: {', '.join(MECHANISMS)})")
    return tuple(names)


def load_spec(path: str | os.PathLike) -> SweepSpec:
    """Read and check a sweep file; every problem names the file and line."""
    from teg.textfile import TextFileError, read_text
    from teg.yamlfile import YamlError, load_yaml

    p = Path(path)
    try:
        text = read_text(p, 1 << 20, "sweep file")     # a regular UTF-8 file, bounded size and lines
    except TextFileError as exc:
        raise SweepSpecError(str(exc)) from None
    try:
        doc, node = load_yaml(text)                     # no aliases, no duplicate keys, bounded depth
    except YamlError as exc:
        where = f"{p}:{exc.line}" if exc.line is not None else str(p)
        raise SweepSpecError(f"{where}: {exc.problem}") from None
    lines = _lines(node) if node is not None else {}
    if not isinstance(doc, dict):
        raise SweepSpecError(f"{p}: a sweep file is a YAML mapping (traces:, machines:, warps:, whatif: …)")

    def err_at(key, i=None):
        line = lines.get((key, i), lines.get(key)) if i is not None else lines.get(key)
        return lambda msg: SweepSpecError(f"{p}:{line}: {key}: {msg}" if line else f"{p}: {key}: {msg}")

    for k in doc:
        if k not in SPEC_KEYS:
            raise err_at(k)(f"unknown key (expected: {', '.join(SPEC_KEYS)})")
    tkey = "traces" if "traces" in doc else "trace"
    if not doc.get(tkey):
        raise SweepSpecError(f"{p}: no traces: list the applications to sweep under 'traces:'")
    traces = []
    for i, t in enumerate(_as_list(doc[tkey])):
        t = t if isinstance(t, dict) else {"trace": t}
        if (not isinstance(t.get("trace"), str) or not t["trace"] or set(t) - {"trace", "sass"}
                or not isinstance(t.get("sass", ""), str)):
            raise err_at(tkey, i)("expected a path, or {trace: PATH, sass: PATH}")
        sass = t.get("sass")
        resolved = [str(x if Path(x).is_absolute() else p.parent / x) if x else None for x in (t["trace"], sass)]
        if not Path(resolved[0]).exists():
            raise err_at(tkey, i)(f"{t['trace']}: no such file or folder (looked for {resolved[0]})")
        if resolved[1] is not None and not Path(resolved[1]).is_file():
            raise err_at(tkey, i)(f"{sass}: no such file (looked for {resolved[1]})")
        traces.append((t["trace"], resolved[0], resolved[1], sass))
    mkey = "machines" if "machines" in doc else "machine"
    machines = _as_list(doc.get(mkey) or "auto")
    for i, m in enumerate(machines):
        if not isinstance(m, str) or not m:
            raise err_at(mkey, i)(f"{m!r}: expected a machine table name or a path to a .yaml table")
        if m != "auto":
            _check_machine(m, p.parent, err_at(mkey, i))
    machines = [m if m == "auto" or not m.endswith((".yaml", ".yml")) or Path(m).is_absolute() else str(p.parent / m)
                for m in machines]
    warps = []
    for i, w in enumerate(_as_list(doc.get("warps") if doc.get("warps") is not None else "auto")):
        if w in ("auto", None):
            warps.append(None)
        elif isinstance(w, int) and not isinstance(w, bool) and w >= 1:
            warps.append(w)
        else:
            raise err_at("warps", i)(f"{w!r}: expected auto or a positive warp count")
    whatifs = [_mechanisms(w, err_at("whatif", i)) for i, w in enumerate(_as_list(doc.get("whatif") or "none"))]
    opts = doc.get("options") or {}
    if not isinstance(opts, dict) or set(opts) - set(OPTION_KEYS):
        raise err_at("options")(f"expected a mapping of {', '.join(OPTION_KEYS)}")
    try:
        options = Options(**{k: v for k, v in opts.items() if v is not None})
    except (OptionsError, TypeError, ValueError) as exc:
        raise err_at("options")(str(exc)) from None
    return SweepSpec(str(p), traces, _kernel_selection(doc.get("kernels"), err_at("kernels")), machines, warps,
                     whatifs, options)


def _kernel_selection(v, err) -> str | None:
    """``kernels:`` as the ``--kernel`` syntax: a string (ids ``1,4-9``, ``re:PATTERN``, a name), a
    kernel id, or a list of kernel ids; anything else is an error, never its ``str()``."""
    if v is None:
        return None
    if isinstance(v, str) and v.strip():
        return v
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return str(v)
    if isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v):
        return ",".join(str(x) for x in v)
    raise err(f"{v!r}: expected a selection (ids such as 1,4-9, re:PATTERN or a name), a kernel id, or a list "
              "of kernel ids")


def _check_machine(name: str, base: Path, err) -> None:
    import teg.machine as tm

    target = name
    if name.endswith((".yaml", ".yml")) and not Path(name).is_absolute():
        target = str(base / name)
    try:
        tm.load(target)
    except (TegError, FileNotFoundError) as exc:
        raise err(str(exc)) from None


def points(spec: SweepSpec) -> tuple[list[SweepPoint], list[tuple[str, Application]]]:
    """Every point of ``spec`` (traces × selected kernels × machines × warps × what-ifs, in that
    nesting), each with its experiment key, and each trace's selected application (for its
    missing kernels)."""
    out, apps = [], []
    for written, resolved, sass, sass_written in spec.traces:
        app = select(open_application(resolved), spec.kernels)
        apps.append((written, app))
        for ref in app.kernels:
            for m in spec.machines:
                for w in spec.warps:
                    for removed in spec.whatifs:
                        out.append(SweepPoint(trace=written, ref=ref, machine=m, warps=w, removed=removed,
                                              options=spec.options, sass=sass, sass_written=sass_written))
    keys = experiment_keys(out)
    return [replace(pt, key=k) for pt, k in zip(out, keys)], apps


# ---- experiment keys ------------------------------------------------------------------------------

def _memo_root() -> Path | None:
    """The trace cache folder when usable (it keeps the digest memo), silently None otherwise."""
    from teg.trace.cache import cache_dir, unusable

    root = cache_dir()
    return root if unusable(root) is None else None


def _json_digest(doc) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str, ensure_ascii=True).encode()).hexdigest()


def machine_digest(name: str, binary_version: int = 0) -> str:
    """Digest of the machine table ``name`` (shipped name or YAML path) after ``extends:``; for
    ``auto`` the table ``binary_version`` suggests, else (no version) every shipped table."""
    from teg.machine import loader

    if name == "auto":
        if binary_version:
            try:
                name = loader.for_arch(binary_version)
            except TegError:
                return "auto:" + str(binary_version)      # the point fails the same way each time
        else:
            from teg.resources import isa_tables_dir
            from teg.trace.digest import tree_digest

            return "auto:" + tree_digest(isa_tables_dir())
    doc, _ = loader.resolve(loader._locate(name))
    return _json_digest(doc)


def experiment_keys(pts: list[SweepPoint]) -> list[str]:
    """The experiment key of every point (module docstring); each input is hashed once."""
    from teg import __version__
    from teg.trace.digest import path_digest

    memo = _memo_root()
    content: dict[str, str] = {}

    def digest_of(path: str | None) -> str | None:
        if path is None:
            return None
        if path not in content:
            content[path] = path_digest(path, memo)
        return content[path]

    machines: dict[tuple[str, int], str] = {}
    keys = []
    for pt in pts:
        r = pt.ref
        mk = (pt.machine, r.binary_version if pt.machine == "auto" else 0)
        if mk not in machines:
            machines[mk] = machine_digest(*mk)
        doc = {"teg": __version__, "point": list(pt.point()), "kernel": [r.kernel_id, r.position, r.index, r.name],
               "trace_content": digest_of(r.path) if r.present and r.error is None else r.error,
               "sass_content": digest_of(pt.sass), "machine_content": machines[mk],
               "options": asdict(pt.options), "warps": pt.warps, "removed": sorted(pt.removed)}
        keys.append(_json_digest(doc)[:24])
    return keys


# ---- one point ------------------------------------------------------------------------------------

def _launch_row(pt: SweepPoint) -> PointRow:
    """The row of ``pt`` before it runs (status ``error`` until it has run)."""
    r = pt.ref
    return PointRow(pt.key, *pt.point(), kernel=r.name, grid="x".join(map(str, r.grid)),
                    block="x".join(map(str, r.block)))


def _run_point_into(got: dict, pt: SweepPoint) -> None:
    """Run ``pt``, putting each result into ``got`` as soon as it is known (a failure keeps what
    was reached: the machine table once the kernel is lowered, the schedule once it ran)."""
    from teg.analysis.whatif import without
    from teg.engine.runner import lower_kernel

    f = kernel_inputs_of(pt.ref, pt.sass, None if pt.machine == "auto" else pt.machine)
    opts = replace(pt.options, warps=pt.warps) if pt.warps is not None else pt.options
    inp = lower_kernel(f, opts)
    got["machine_table"] = f.machine.name
    r, schedule, base = without(inp, pt.removed)
    got.update(schedule=schedule, baseline_cycles=base)
    cause, cyc = largest_stall(r.stalls)
    got.update(status="ok", cycles=r.cycles, time_us=r.time_us, instructions=r.instructions, ipc=r.ipc,
               top_stall=cause, top_stall_cycles=cyc)


def run_point(pt: SweepPoint) -> PointRow:
    """The row of one point; a failure is recorded in ``status``/``error``, never raised."""
    got, caught = recorded(_run_point_into, pt)
    return replace(_launch_row(pt), **got, warnings="; ".join(caught))


# ---- a whole sweep --------------------------------------------------------------------------------

@dataclass
class SweepOutcome:
    """What :func:`run_spec` did: ``rows`` (one :class:`PointRow` per point, in the spec's order),
    how many points ``ran`` now and how many were ``already`` in the output,
    the ``failed`` points, the kernels listed but ``missing`` (trace as written, kernel) and the
    files it ``wrote`` (the CSV, and its Parquet copy)."""

    rows: list[PointRow]
    ran: int
    already: int = 0
    failed: int = 0
    missing: list[tuple[str, KernelRef]] = field(default_factory=list)
    wrote: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every point ran and every listed kernel was there."""
        return not self.failed and not self.missing


def run_spec(spec: SweepSpec, executor, output: str | Path | None = None, retry_failed: bool = False,
             force: bool = False, warn=None, on_missing=None) -> SweepOutcome:
    """Run every point of ``spec`` on ``executor`` (:class:`teg.analysis.executors.Executor`).

    With ``output`` (a ``.csv``), the sweep is resumable: the table is opened (a partial last line an
    interrupted run left is cut off), points whose experiment key is already there are skipped
    (failed ones too, unless ``retry_failed``), each point's row is appended as it completes, and a
    Parquet copy is written beside it when pyarrow is installed (its target checked before any
    point runs). Before any point runs, ``on_missing(trace, kernels)`` is called for each trace
    with kernels listed but missing, and ``warn(line)`` for a partial line cut off the output."""
    from teg.analysis.rowlog import RowLog, RowLogError, check_parquet_target, write_parquet

    warn = warn or (lambda line: None)
    on_missing = on_missing or (lambda trace, kernels: None)
    parquet = None
    if output is not None:
        output = Path(output)
        if output.suffix.lower() == ".parquet":
            raise RowLogError(f"{output}: -o names the CSV table a sweep appends to and resumes from (a Parquet "
                              "copy is written beside it): give a name ending in .csv")
        try:
            import pyarrow  # noqa: F401
            parquet = output.with_suffix(".parquet")
            check_parquet_target(parquet, force)        # before any point runs, not after all of them
        except ImportError:
            parquet = None                             # pyarrow (optional) not installed: CSV only
    pts, apps = points(spec)
    missing = [(t, k) for t, a in apps for k in a.missing]
    for t, a in apps:
        if a.missing:
            on_missing(t, a.missing)
    if output is None:
        rows = executor.map(run_point, pts, desc="points")
        return SweepOutcome(rows=rows, ran=len(pts), failed=sum(r.status != "ok" for r in rows), missing=missing)
    with RowLog(output, COLUMNS, KEY_COLUMNS, force=force) as log:
        if log.dropped:
            warn(f"{output}: cut off a partial last line ({log.dropped} bytes) left by an interrupted run")
        todo, seen = [], set()
        for p in pts:                              # each experiment once, even when listed twice
            if p.key not in seen and not _recorded(log.rows.get((p.key,)), retry_failed):
                todo.append(p)
            seen.add(p.key)
        for _, row in executor.run(run_point, todo, desc="points"):
            log.append(row.data())
        cells = [log.rows[(p.key,)] for p in pts]
    wrote = [str(output)]
    if parquet is not None:
        wrote.append(str(write_parquet(cells, COLUMNS, parquet, INT_COLUMNS, FLOAT_COLUMNS, force=force)))
    rows = [PointRow.from_cells(c) for c in cells]
    return SweepOutcome(rows=rows, ran=len(todo), already=len(pts) - len(todo),
                        failed=sum(r.status != "ok" for r in rows), missing=missing, wrote=wrote)


def _recorded(row: dict | None, retry_failed: bool) -> bool:
    """A point already in the output: done, or failed (unless ``retry_failed``)."""
    return row is not None and (row["status"] == "ok" or not retry_failed)
