"""Whole applications: every kernel of a multi-kernel trace estimated (or what-if'ed) one by one,
each kernel an independent task that any process can run.

* :func:`open_application` lists the kernels of a ``kernelslist.g`` (or its folder), a native
  multi-kernel trace or one ``.traceg``: for Accel-Sim lists only the kernel headers are read (the
  files listed but absent are kept apart as *missing*), for native traces the metadata;
* :func:`select` picks kernels by id list/range (``3,5-9``), regular expression (``re:PATTERN``)
  or substring of the mangled or demangled name — the ``--kernel`` syntax;
* :class:`KernelTask` names one kernel by file and index plus the machine and options: it is
  small and picklable, and :func:`run_kernel_task` (a module-level function, so process pools and
  Dask can ship it) loads the kernel in whatever process runs it — Accel-Sim files through the
  trace cache (:func:`teg.trace.load`), native traces memory-mapped and kept per process — lowers,
  runs and returns a plain dict; an error of that kernel is recorded in the dict, not raised;
* :func:`summarize` adds up the per-kernel results: kernels of one stream run one after another,
  so the application's time is the sum of the kernels' times.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

from teg import TegError, UnknownOpcodeWarning, error_line
from teg.engine.options import MECHANISMS, Options
from teg.sass.demangle import short_name

KERNEL_FILE_ID = re.compile(r"kernel-(\d+)")
ID_LIST = re.compile(r"^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$")


class ApplicationError(TegError):
    """An application that cannot be read or a kernel selection that selects nothing."""


@dataclass(frozen=True)
class KernelRef:
    """One kernel of an application: ``position`` in launch order, the header's id and launch
    geometry, and where to load it from (``path`` a native trace or one ``.traceg[.xz]``,
    ``index`` the kernel's place in it). A missing kernel has ``present=False``, no name, and
    ``line``, its line in the kernel list."""

    position: int
    kernel_id: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    stream: int
    path: str
    index: int = 0
    present: bool = True
    line: int = 0
    demangled: str | None = None
    binary_version: int = 0
    error: str | None = None          # a kernel whose header cannot be read: recorded as failed when run

    @property
    def label(self) -> str:
        """The kernel's file name for a missing kernel, else its (demangled) name."""
        return Path(self.path).name if not self.present else (self.demangled or self.name)


@dataclass
class Application:
    """The kernels of one traced run, in launch order (``missing``: listed, file absent)."""

    source: str
    kernels: list[KernelRef]
    missing: list[KernelRef] = field(default_factory=list)
    memcpy: list[tuple[int, int]] = field(default_factory=list)
    sass: str | None = None      # the SASS listing that came with the trace (teg trace app's program.sass)

    @property
    def streams(self) -> list[int]:
        return sorted({k.stream for k in self.kernels})


# ---- reading --------------------------------------------------------------------------------------

def _file_id(path: Path, fallback: int) -> int:
    """The ``N`` of ``kernel-N.traceg``, else ``fallback``."""
    m = KERNEL_FILE_ID.search(path.name)
    return int(m.group(1)) if m else fallback


def _header_ref(position: int, path: Path) -> KernelRef:
    """A present Accel-Sim kernel from its header alone (the body is read by the task)."""
    from teg.trace.accelsim import _open_binary, read_header

    from teg.trace import TraceFormatError, TraceUnsupportedError
    from teg.trace.accelsim import _regular

    try:
        _regular(path)
        raw, stream = _open_binary(path)
        try:
            info, _, _ = read_header(stream, str(path))
        finally:
            stream.close()
            raw.close()
    except (TraceFormatError, TraceUnsupportedError, OSError, EOFError, ValueError) as exc:
        # this kernel is recorded as failed with its error when it runs; the others still run
        return KernelRef(position=position, kernel_id=_file_id(path, position + 1), name=path.name.split(".")[0],
                         grid=(0, 0, 0), block=(0, 0, 0), stream=0, path=str(path), error=error_line(exc))
    kid = info.kernel_id if info.kernel_id > 0 else _file_id(path, position + 1)
    return KernelRef(position=position, kernel_id=kid, name=info.name or path.name.split(".")[0],
                     grid=tuple(info.grid), block=tuple(info.block), stream=info.stream, path=str(path),
                     binary_version=int(info.binary_version or 0))


def _accelsim_application(p: Path) -> Application:
    from teg.textfile import read_text
    from teg.trace.accelsim import MAX_KERNELSLIST_BYTES, TRACE_SUFFIXES, read_kernelslist

    if str(p).endswith(TRACE_SUFFIXES):
        return Application(str(p), [_header_ref(0, p)])
    listing = p / "kernelslist.g" if p.is_dir() else p
    if p.is_dir() and not listing.is_file():
        raise ApplicationError(f"{p}: folder has no kernelslist.g (and is not a teg trace)")
    missing_at: list[tuple[Path, int]] = []
    _, memcpy = read_kernelslist(listing, missing=missing_at)    # checks every line; notes the absent files
    absent = {str(f): n for f, n in missing_at}
    listed = [listing.parent / s.strip() for s in read_text(listing, MAX_KERNELSLIST_BYTES, "kernel list").splitlines()
              if s.strip().startswith("kernel")]
    kernels, missing = [], []
    for pos, f in enumerate(listed):
        if str(f) not in absent:
            kernels.append(_header_ref(pos, f))
        else:
            missing.append(KernelRef(position=pos, kernel_id=_file_id(f, pos + 1), name="", grid=(0, 0, 0),
                                     block=(0, 0, 0), stream=0, path=str(f), present=False, line=absent[str(f)]))
    return Application(str(listing), kernels, missing, memcpy)


def _native_application(p: Path) -> Application:
    """The kernels of a native trace from its metadata alone (the columns are mapped and checked
    when a kernel is loaded)."""
    from teg.trace.native import read_meta

    _, infos, memcpy = read_meta(p)
    refs = []
    for i, info in enumerate(infos):
        refs.append(KernelRef(position=i, kernel_id=info.kernel_id if info.kernel_id > 0 else i + 1,
                              name=info.name, grid=tuple(info.grid), block=tuple(info.block),
                              stream=info.stream, path=str(p), index=i,
                              binary_version=int(info.binary_version or 0)))
    return Application(str(p), refs, memcpy=list(memcpy), sass=_listing_of(p))


def _listing_of(p: Path) -> str | None:
    """The SASS listing a ``teg trace app`` folder holds (its ``meta.json`` names it), else None."""
    import json

    try:
        app = json.loads((p / "meta.json").read_text()).get("application") if p.is_dir() else None
        name = app.get("sass") if isinstance(app, dict) else None
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(name, str) and "/" not in name and (p / name).is_file():
        return str(p / name)
    return None


def open_application(path: str | os.PathLike) -> Application:
    """The kernels of a trace (see the module docstring), demangled names attached."""
    from teg.sass.demangle import demangle_all
    from teg.trace.native import is_native

    from teg.trace import check_input

    p = Path(path)
    check_input(p)                 # a pipe or a device is refused by name before anything reads it
    app = _native_application(p) if is_native(p) else _accelsim_application(p)
    plain = demangle_all([k.name for k in app.kernels])
    app.kernels = [replace(k, demangled=plain.get(k.name)) for k in app.kernels]
    return app


# ---- selection ------------------------------------------------------------------------------------

def parse_ids(text: str) -> set[int]:
    """``"1,4-6"`` → ``{1, 4, 5, 6}`` (ranges inclusive)."""
    ids: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        a, b = int(lo), int(hi) if hi else int(lo)
        if b < a:
            raise ApplicationError(f"kernel id range {part.strip()!r} runs backwards")
        ids.update(range(a, b + 1))
    return ids


def kernel_matcher(spec: str):
    """Predicate over :class:`KernelRef` for a ``--kernel`` selection: an id list/range
    (``3``, ``1,4-6``), ``re:PATTERN`` (searched in the mangled and the demangled name), or a
    substring of either name."""
    if ID_LIST.match(spec):
        ids = parse_ids(spec)
        return lambda k: k.kernel_id in ids
    if spec.startswith("re:"):
        try:
            rx = re.compile(spec[3:])
        except re.error as exc:
            raise ApplicationError(f"--kernel {spec!r}: bad regular expression ({exc})") from None
        return lambda k: bool(rx.search(k.name) or (k.demangled and rx.search(k.demangled)))
    return lambda k: spec in k.name or bool(k.demangled and spec in k.demangled)


def select(app: Application, spec: str | None) -> Application:
    """The kernels ``spec`` selects (all for None). A missing kernel stays listed unless an id
    selection leaves it out (its name is unknown, so a name selection may match it). Selecting
    nothing is an error."""
    if spec is None:
        return app
    match = kernel_matcher(spec)
    kernels = [k for k in app.kernels if match(k)]
    by_id = bool(ID_LIST.match(spec))
    missing = [k for k in app.missing if match(k)] if by_id else list(app.missing)
    if not kernels and not (by_id and missing):
        have = ", ".join(f"{k.kernel_id} {short_name(k.label, 40)}" for k in app.kernels[:12])
        more = f", … ({len(app.kernels)} kernels)" if len(app.kernels) > 12 else ""
        raise ApplicationError(f"{app.source}: no kernel matches --kernel {spec!r} (have: {have}{more})")
    return Application(app.source, kernels, missing, app.memcpy, app.sass)


# ---- one kernel, in any process -------------------------------------------------------------------

def _stamp(p: Path) -> str:
    """The file's fingerprint (:func:`teg.trace.digest.fingerprint`: any edit changes it, even one
    that keeps the size and modification time)."""
    from teg.trace.digest import fingerprint

    try:
        return fingerprint(p.stat())
    except OSError:
        return ""


@functools.lru_cache(maxsize=8)
def _load_trace(path: str, stamp: str):
    """A trace loaded once per process (``stamp``, the file's fingerprint, keys a rewritten file anew):
    native traces memory-mapped, Accel-Sim text through the conversion cache."""
    import teg.trace as tt

    return tt.load(path)


@functools.lru_cache(maxsize=2)
def _programs(sass: str, stamp: str):
    from teg.sass import parse_file

    return parse_file(sass)


def load_kernel(ref: KernelRef):
    """The :class:`~teg.trace.KernelTrace` of ``ref`` (loaded in the calling process)."""
    if ref.error is not None:
        raise ApplicationError(ref.error)
    trace = _load_trace(ref.path, _stamp(Path(ref.path)))
    if ref.index >= len(trace.kernels):
        raise ApplicationError(f"{ref.path}: has {len(trace.kernels)} kernels, no kernel {ref.index}")
    return trace.kernels[ref.index]


def application_kernels(path, kernel: str | None, progress: bool = False):
    """For ``teg trace info``: None when ``path`` holds one kernel and nothing is missing, else
    (refs, kernel traces, memcpy, missing) of the kernels ``kernel`` selects, loaded in launch
    order (with ``progress``, a progress bar when tqdm is installed)."""
    from teg.analysis.executors import progress_bar

    whole = open_application(path)
    if len(whole.kernels) <= 1 and not whole.missing:
        return None
    app = select(whole, kernel)
    bar = progress_bar(len(app.kernels), "kernels") if progress else None
    kernels = []
    for ref in app.kernels:
        kernels.append(load_kernel(ref))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return app.kernels, kernels, app.memcpy, app.missing


def program_for(sass: str, name: str):
    """The function of the SASS file ``sass`` whose mangled or demangled name is ``name``."""
    programs = _programs(sass, _stamp(Path(sass)))
    for p in programs:
        if name in (p.name, p.demangled):
            return p
    raise ApplicationError(f"{sass}: no function named {name} (the kernel's name in the trace)")


@dataclass(frozen=True)
class KernelTask:
    """What one worker needs to estimate one kernel: the kernel, an optional SASS file, the machine
    (table name or YAML path; None: the one the kernel's binary version suggests), the options,
    and the mechanisms to remove (``whatif``: None = a plain estimate; ``()`` = every mechanism
    alone and all together, as ``teg whatif``)."""

    ref: KernelRef
    machine: str | None = None
    options: Options = Options()
    sass: str | None = None
    whatif: tuple[str, ...] | None = None


def largest_stall(stalls: dict[str, int]) -> tuple[str, int]:
    """The cause (other than ``issue``) with the most cycles; ``("", 0)`` when none."""
    best = max(((v, k) for k, v in stalls.items() if k != "issue" and v > 0), default=(0, ""))
    return best[1], best[0]


def _kernel_row(ref: KernelRef, task: KernelTask) -> dict:
    return {"position": ref.position, "id": ref.kernel_id, "name": ref.name, "demangled": ref.demangled,
            "grid": list(ref.grid), "block": list(ref.block), "stream": ref.stream, "machine": task.machine,
            "error": None, "warnings": []}


def kernel_inputs_of(ref: KernelRef, sass: str | None = None, machine: str | None = None):
    """The :class:`~teg.engine.kernel_inputs.KernelInputs` of an application's kernel: the kernel
    loaded (:func:`load_kernel`), its function of the SASS file ``sass`` when given, and the
    machine (None: the table the kernel's binary version suggests)."""
    from teg.engine.kernel_inputs import load_inputs

    kt = load_kernel(ref)
    program = program_for(sass, kt.info.name) if sass else None
    return load_inputs(sass=program, trace=kt, machine=machine)


def _estimate_into(row: dict, task: KernelTask) -> None:
    from teg.analysis.whatif import whatif
    from teg.engine.run import run
    from teg.engine.runner import lower_kernel

    f = kernel_inputs_of(task.ref, task.sass, task.machine)
    inp = lower_kernel(f, task.options)
    clk = inp.setup.clock_mhz
    row.update({"machine": f.machine.name, "clock_mhz": clk})
    if task.whatif is not None:
        rows = whatif(inp, task.whatif or None)
        row["whatif"] = {w.mechanism: {"cycles": w.cycles, "saved": w.saved, "schedule": w.schedule}
                         for w in rows[1:]}
        row.update({"cycles": rows[0].cycles, "time_us": rows[0].cycles / clk if clk else None})
        return
    r = run(inp)
    cause, cyc = largest_stall(r.stalls)
    row.update({"cycles": r.cycles, "time_us": r.time_us, "instructions": r.instructions, "ipc": r.ipc,
                "top_stall": cause, "top_stall_cycles": cyc, "stalls": {k: v for k, v in r.stalls.items() if v}})


def run_kernel_task(task: KernelTask) -> dict:
    """Estimate one kernel (or its what-ifs) in the calling process and return a plain dict:
    launch facts, ``cycles``, ``time_us``, ``instructions``, ``ipc``, ``top_stall`` (or
    ``whatif``), ``warnings`` (unknown opcodes timed as ALU) and ``error`` — the kernel's failure
    as one line (``None`` when it ran), so that one bad kernel does not stop the others."""
    row = _kernel_row(task.ref, task)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownOpcodeWarning)
        try:
            _estimate_into(row, task)
        except Exception as exc:      # recorded with the kernel: every other kernel still runs
            row["error"] = error_line(exc)
    row["warnings"] = sorted({str(w.message) for w in caught if issubclass(w.category, UnknownOpcodeWarning)})
    return row


def tasks_for(app: Application, machine: str | None = None, options: Options | None = None,
              sass: str | None = None, whatif: tuple[str, ...] | None = None) -> list[KernelTask]:
    """One task per present kernel of ``app``, in launch order."""
    opts = options or Options()
    return [KernelTask(ref=k, machine=machine, options=opts, sass=sass, whatif=whatif) for k in app.kernels]


# ---- the application's totals ---------------------------------------------------------------------

@dataclass
class ApplicationReport:
    """Per-kernel rows (launch order) plus what the application adds up to."""

    source: str
    rows: list[dict]
    missing: list[KernelRef]
    streams: list[int]

    @property
    def done(self) -> list[dict]:
        return [r for r in self.rows if r["error"] is None]

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.rows if r["error"] is not None]

    @property
    def complete(self) -> bool:
        """Every listed kernel was there and ran."""
        return not self.missing and not self.failed

    def totals(self) -> dict:
        """Sums over the kernels that ran: cycles, time (µs), warp instructions; IPC over the sum."""
        done = self.done
        cyc = sum(r["cycles"] for r in done)
        times = [r.get("time_us") for r in done]
        ins = [r.get("instructions") for r in done]
        return {"kernels": len(done), "cycles": cyc,
                "time_us": sum(times) if times and None not in times else None,
                "instructions": sum(ins) if ins and None not in ins else None,
                "ipc": (sum(ins) / cyc if cyc and ins and None not in ins else None),
                "missing": len(self.missing), "failed": len(self.failed)}

    def by_time(self) -> list[dict]:
        """The kernels that ran, longest first (time, else cycles; ties in launch order)."""
        return sorted(self.done, key=lambda r: (-(r["time_us"] if r["time_us"] is not None else r["cycles"]),
                                                r["position"]))

    def share(self, row: dict) -> float:
        """The kernel's share of the application's time (of its cycles when a clock is unknown)."""
        t = self.totals()
        if t["time_us"]:
            return row["time_us"] / t["time_us"]
        return row["cycles"] / t["cycles"] if t["cycles"] else 0.0

    def mechanisms(self, top: int = 3) -> list[dict]:
        """What-if rows of the application: per mechanism the summed saving (cycles; µs at each
        kernel's clock), its share of the application's time, the application's speedup
        ``T / (T - saved)`` and the ``top`` kernels that gain most."""
        done = [r for r in self.done if "whatif" in r]
        if not done:
            return []
        total_t = sum(_time(r, r["cycles"]) for r in done)
        names = list(done[0]["whatif"])
        out = []
        for m in names:
            gains = [(_time(r, r["whatif"][m]["saved"]), r) for r in done]
            saved_t = sum(g for g, _ in gains)
            best = sorted((g for g in gains if g[0] > 0), key=lambda g: (-g[0], g[1]["position"]))[:top]
            out.append({"mechanism": m, "description": MECHANISMS.get(m, "all of the above removed"),
                        "saved_cycles": sum(r["whatif"][m]["saved"] for r in done),
                        "saved_us": saved_t if _clocked(done) else None,
                        "share": saved_t / total_t if total_t else 0.0,
                        "speedup": total_t / (total_t - saved_t) if total_t > saved_t else float("inf"),
                        "top": [{"id": r["id"], "name": r["name"], "saved_us": g if _clocked(done) else None,
                                 "saved_cycles": r["whatif"][m]["saved"]} for g, r in best]})
        return out


def _clocked(rows: list[dict]) -> bool:
    return all(r.get("clock_mhz") for r in rows)


def _time(row: dict, cycles: int) -> float:
    """``cycles`` of ``row``'s kernel in µs at its clock (in cycles when it has none)."""
    clk = row.get("clock_mhz")
    return cycles / clk if clk else float(cycles)


def summarize(app: Application, rows: list[dict]) -> ApplicationReport:
    """The report of ``rows`` (any order) for ``app``."""
    return ApplicationReport(source=app.source, rows=sorted(rows, key=lambda r: r["position"]),
                             missing=list(app.missing), streams=app.streams)


def estimate_application(app: Application, machine: str | None = None, options: Options | None = None,
                         sass: str | None = None, whatif: tuple[str, ...] | None = None,
                         executor=None, progress: bool = False) -> ApplicationReport:
    """Run every present kernel of ``app`` on ``executor`` (:class:`teg.analysis.executors.Executor`;
    default: all local cores) and add the results up."""
    from teg.analysis.executors import Executor

    ex = executor or Executor()
    tasks = tasks_for(app, machine, options, sass, whatif)
    rows = [r for _, r in ex.run(run_kernel_task, tasks, desc="kernels" if progress else None)]
    return summarize(app, rows)


__all__ = ["Application", "ApplicationError", "ApplicationReport", "KernelRef", "KernelTask",
           "open_application", "select", "short_name", "kernel_matcher", "run_kernel_task", "tasks_for",
           "summarize", "estimate_application", "load_kernel", "largest_stall", "kernel_inputs_of",
           "application_kernels"]
