"""Whole applications on the command line: ``teg estimate``, ``teg whatif`` and ``teg sweep`` on a
trace of several kernels (a ``kernelslist.g``, its folder, a native multi-kernel trace), and the
options that go with them: ``--jobs``/``--executor``/``--scheduler`` on all three, ``--csv`` on
estimate, ``--spec``/``-o``/``--retry-failed`` on sweep.

The three commands of :mod:`teg.cli.estimate` wear :func:`applications`. It looks at ``--trace``
first: a trace of one kernel, or a ``--kernel`` selection that leaves one kernel with nothing
missing, goes on to the single-kernel command unchanged; several kernels (or kernels listed but
missing) make the application report. A report that lacks kernels — missing files, kernels that
failed — is printed and exits with status 1.
"""

from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path

import click
from click.core import ParameterSource

from teg import UnknownOpcodeWarning
from teg.analysis.executors import EXECUTORS, Executor
from teg.cli import user_errors

EXIT_INCOMPLETE = 1
DEFAULT_WARPS = "1,2,4,8,16,32,64"
EXECUTOR_PARAMS = ("jobs", "executor_kind", "scheduler")
OWN_PARAMS = {"estimate": ("as_csv",), "whatif": (), "sweep": ("spec", "output", "retry_failed")}
# options of the commands that an application run understands; any other given is for one kernel
APP_PARAMS = {"sass", "trace_path", "kernel", "machine", "policy", "dependency_model", "sms", "unknown",
              "shared_carveout", "blocks_per_sm", "as_json", "as_csv", "warps", "force"}


def _executor_options() -> list:
    return [
        click.option("--jobs", "-j", type=int, default=None,
                     help="processes for the kernels of an application or the points of a sweep "
                          "(default: every core this process may use; 1 = all in this process)"),
        click.option("--executor", "executor_kind", type=click.Choice(EXECUTORS), default="local", show_default=True,
                     help="local: a process pool on this machine; dask: a Dask cluster (--scheduler, else a "
                          "LocalCluster of --jobs workers; extra 'dask')"),
        click.option("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://HOST:8786 "
                     "(with --executor dask; the workers must see the trace files at the same paths)"),
    ]


def _own_options(kind: str) -> list:
    if kind == "estimate":
        return [click.option("--csv", "as_csv", is_flag=True, help="one CSV line per kernel of the trace")]
    if kind == "sweep":
        return [click.option("--spec", type=click.Path(path_type=Path), default=None,
                             help="YAML sweep file: traces x kernels x machines x warps x what-ifs "
                                  "(teg/analysis/sweepspec.py describes it)"),
                click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
                             help="results CSV, appended row by row and resumed (points already in it are "
                                  "skipped); also written as .parquet beside it when pyarrow is installed"),
                click.option("--retry-failed", is_flag=True, help="with -o: run again the points recorded as failed")]
    return []


def applications(kind: str):
    """Decorator for the ``estimate``/``whatif``/``sweep`` commands (between their options and
    ``@user_errors``): adds the application options and sends applications to the code below."""

    def deco(fn):
        @functools.wraps(fn)
        def command(**kw):
            ex = {k: kw.pop(k) for k in EXECUTOR_PARAMS}
            own = {k: kw.pop(k) for k in OWN_PARAMS[kind]}
            code = _dispatch(kind, fn, kw, ex, own)
            if code:
                click.echo("teg: error: not everything was estimated (kernels listed but missing, or kernels or "
                           "points that failed: the report names them)", err=True)
                sys.exit(code)

        for opt in reversed(_executor_options() + _own_options(kind)):
            command = opt(command)
        return command

    return deco


def make_executor(jobs, executor_kind, scheduler) -> Executor:
    return Executor(kind=executor_kind, jobs=jobs, scheduler=scheduler)


@user_errors
def _dispatch(kind: str, fn, kw: dict, ex: dict, own: dict) -> int | None:
    from teg.analysis.application import load_kernel, open_application, select

    if kind == "sweep" and own["spec"] is not None:
        given = [n for n in ("sass", "trace_path", "kernel", "machine", "warps", "blocks") if kw.get(n) is not None]
        if given:
            raise click.UsageError(f"--spec describes the whole sweep; leave out {_opt_name(given[0])}")
        from teg.analysis.sweepspec import load_spec
        return _sweep(load_spec(own["spec"]), make_executor(**ex), own, kw)
    trace = kw.get("trace_path")
    forced = bool(own.get("as_csv") or own.get("output"))
    if trace is None:
        if forced:
            raise click.UsageError("--csv/-o list the kernels of a trace: give --trace")
        return fn(**kw)
    whole = open_application(trace)
    if kw.get("sass") is None and whole.sass is not None and "sass" in kw:
        kw = dict(kw, sass=Path(whole.sass))        # teg trace app's listing: the kernels' control codes
    if not forced and len(whole.kernels) == 1 and not whole.missing:
        return fn(**kw)                       # a one-kernel trace: the single-kernel command as it is
    app = select(whole, kw.get("kernel"))
    if not forced and len(app.kernels) == 1 and not app.missing:
        return fn(**dict(kw, trace_path=load_kernel(app.kernels[0]), kernel=None))
    _refuse_single_kernel_options(kw)
    executor = make_executor(**ex)
    if kind == "sweep":
        return _sweep(_implicit_spec(kw), executor, own, kw)
    return _application(kind, app, kw, own, executor)


def _refuse_single_kernel_options(kw: dict) -> None:
    """Options given on the command line that an application run would ignore are an error."""
    ctx = click.get_current_context()
    for name in kw:
        if name not in APP_PARAMS and ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None):
            raise click.UsageError(f"{_opt_name(name)} applies to one kernel; this trace has several: select one "
                                   "with --kernel")


def _opt_name(param: str) -> str:
    """The command-line spelling of the current command's parameter ``param`` (``--blocks-per-sm``)."""
    ctx = click.get_current_context()
    return next((p.opts[0] for p in ctx.command.params if p.name == param), param)


def _options(kw: dict):
    from teg.engine import Options

    names = ("policy", "dependency_model", "sms", "unknown", "shared_carveout", "blocks_per_sm")
    return Options(**{k: kw[k] for k in names if kw.get(k) is not None})


def _rewarn(rows) -> None:
    """Unknown-opcode warnings recorded by the workers, raised here (the CLI prints them, exit 1)."""
    seen = set()
    for r in rows:
        for w in r.get("warnings") or ():
            msg = f"kernel {r.get('id', r.get('kernel_id'))}: {w}"
            if msg not in seen:
                seen.add(msg)
                warnings.warn(msg, UnknownOpcodeWarning, stacklevel=2)


def _application(kind: str, app, kw: dict, own: dict, executor: Executor) -> int:
    from teg.analysis.application import estimate_application
    from teg.report import application as view

    whatif = () if kind == "whatif" else None
    rep = estimate_application(app, machine=kw.get("machine"), options=_options(kw), sass=kw.get("sass"),
                               whatif=whatif, executor=executor, progress=True)
    if kw.get("as_json"):
        out = view.application_json(rep)
    elif own.get("as_csv") or kw.get("as_csv"):
        out = view.application_csv(rep) if kind == "estimate" else view.mechanisms_csv(rep)
    else:
        out = view.application_text(rep) if kind == "estimate" else view.whatif_application_text(rep)
    click.echo(out.rstrip("\n"))
    _rewarn(rep.rows)
    return 0 if rep.complete else EXIT_INCOMPLETE


# ---- sweeps ---------------------------------------------------------------------------------------

def _implicit_spec(kw: dict):
    """``teg sweep --trace APP [--kernel …] --warps …`` as a sweep file would say it."""
    from teg.analysis.sweepspec import SweepSpec
    from teg.cli.estimate import _int_list

    trace = str(kw["trace_path"])
    sass = kw.get("sass")
    return SweepSpec(path="(command line)", traces=[(trace, trace, sass, sass)], kernels=kw.get("kernel"),
                     machines=[kw.get("machine") or "auto"], warps=_int_list(kw.get("warps") or DEFAULT_WARPS),
                     whatifs=[()], options=_options(kw))


def _sweep(spec, executor: Executor, own: dict, kw: dict) -> int:
    from teg.analysis.sweepspec import COLUMNS, FLOAT_COLUMNS, INT_COLUMNS, KEY_COLUMNS, points, run_point
    from teg.report import application as view
    from teg.analysis.rowlog import RowLog, RowLogError, check_parquet_target, write_parquet

    out = own.get("output")
    force = bool(kw.get("force"))
    parquet = None
    if out is not None:
        out = Path(out)
        if out.suffix.lower() == ".parquet":
            raise RowLogError(f"{out}: -o names the CSV table a sweep appends to and resumes from (a Parquet copy "
                              "is written beside it): give a name ending in .csv")
        try:
            import pyarrow  # noqa: F401
            parquet = out.with_suffix(".parquet")
            check_parquet_target(parquet, force)        # before any point runs, not after all of them
        except ImportError:
            parquet = None                             # pyarrow (optional) not installed: CSV only
    pts, apps = points(spec)
    missing = [(t, k) for t, a in apps for k in a.missing]
    for t, a in apps:
        if a.missing:
            click.echo(f"teg: warning: {t}: {view.missing_text(a.missing)}", err=True)
    if out is None:
        rows = executor.map(run_point, pts, desc="points")
        if kw.get("as_json"):
            import json
            click.echo(json.dumps(rows, indent=1))
        elif kw.get("as_csv"):
            click.echo(view.points_csv(rows, COLUMNS).rstrip("\n"))
        else:
            click.echo(view.points_text(rows))
        failed = sum(r["status"] != "ok" for r in rows)
    else:
        with RowLog(out, COLUMNS, KEY_COLUMNS, force=force) as log:
            if log.dropped:
                click.echo(f"teg: warning: {out}: cut off a partial last line ({log.dropped} bytes) "
                           "left by an interrupted run", err=True)
            todo, seen = [], set()
            for p in pts:                              # each experiment once, even when listed twice
                if p.key not in seen and not _recorded(log.rows.get((p.key,)), own.get("retry_failed")):
                    todo.append(p)
                seen.add(p.key)
            for _, row in executor.run(run_point, todo, desc="points"):
                log.append(row)
            rows = [log.rows[(p.key,)] for p in pts]
        failed = sum(r["status"] != "ok" for r in rows)
        wrote = [str(out)]
        if parquet is not None:
            wrote.append(str(write_parquet(rows, COLUMNS, parquet, INT_COLUMNS, FLOAT_COLUMNS, force=force)))
        click.echo(f"sweep: {len(pts)} points, {len(todo)} run now, {len(pts) - len(todo)} already in {out}, "
                   f"{failed} failed; wrote {', '.join(wrote)}")
    _rewarn([{"id": r["kernel_id"], "warnings": [r["warnings"]] if r.get("warnings") else []} for r in rows])
    return EXIT_INCOMPLETE if failed or missing else 0


def _recorded(row: dict | None, retry_failed: bool) -> bool:
    """A point already in the output: done, or failed (unless --retry-failed)."""
    return row is not None and (row["status"] == "ok" or not retry_failed)


# ---- teg trace info -------------------------------------------------------------------------------

def application_kernels(path, kernel: str | None):
    """For ``teg trace info``: None when ``path`` holds one kernel and nothing is missing, else
    (refs, kernel traces, memcpy, missing) of the kernels ``kernel`` selects."""
    from teg.analysis.application import load_kernel, open_application, select
    from teg.analysis.executors import progress_bar

    whole = open_application(path)
    if len(whole.kernels) <= 1 and not whole.missing:
        return None
    app = select(whole, kernel)
    bar = progress_bar(len(app.kernels), "kernels")
    kernels = []
    for ref in app.kernels:
        kernels.append(load_kernel(ref))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return app.kernels, kernels, app.memcpy, app.missing
