"""``teg estimate``, ``teg whatif``, ``teg sweep``: the timing engine from the command line.

Each command decides first what it runs on (:func:`teg.cli.target.resolve_target`): one kernel, or
an application (a trace of several kernels) whose report :mod:`teg.cli.app_report` and
:mod:`teg.cli.app_sweep` print. With neither ``--sass`` nor ``--trace`` they run the bundled
example (traces/: the TEG report's C = A·Bᵀ kernel with its shared-memory bank conflict, sm_90
SASS + trace)."""

from __future__ import annotations

from pathlib import Path

import click

from teg.cli.errors import user_errors
from teg.cli.options import (EXAMPLE_SASS, EXAMPLE_TRACE, engine_options, executor_options,
                             input_options, int_list, kernel_inputs, make_executor, opt_name)
from teg.cli.reports import EstimateReports, check_plot, estimate_report_options, plot_option
from teg.cli.target import resolve_target

__all__ = ["estimate", "whatif", "sweep", "EXAMPLE_SASS", "EXAMPLE_TRACE"]


@click.command()
@input_options
@click.option("--blocks-per-sm", type=int, default=None, help="resident blocks per SM instead of the occupancy calculation")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@estimate_report_options
@executor_options
@click.option("--csv", "as_csv", is_flag=True, help="one CSV line per kernel of the trace")
@user_errors
def estimate(sass, trace_path, kernel, machine, policy, dependency_model, sms, sampling, unknown, shared_carveout,
             blocks_per_sm, as_json, views, timeline_path, timeline_cycles, plot_path, force, jobs, executor_kind, scheduler, as_csv):
    """Estimate cycles, time, IPC, occupancy and the stall breakdown of a kernel."""
    params = click.get_current_context().params
    target = resolve_target(sass, trace_path, kernel, lists_kernels=as_csv)
    if target.is_application:
        from teg.cli.app_report import application_report

        return application_report("estimate", target.application, machine, engine_options(params), target.sass,
                                  make_executor(params), as_json=as_json, as_csv=as_csv)
    from teg.engine.runner import run_kernel

    reports = EstimateReports.from_cli(views, as_json, timeline_path, timeline_cycles, plot_path, force)
    est = run_kernel(kernel_inputs(target.sass, target.trace, target.kernel, machine), engine_options(params),
                     prepare=reports.prepare)
    click.echo(reports.render(est))


@click.command()
@input_options
@click.option("--json", "as_json", is_flag=True, help="rows as JSON: [{mechanism, cycles, …}], baseline first")
@click.option("--csv", "as_csv", is_flag=True, help="rows as CSV")
@plot_option("the savings of each mechanism (a waterfall from the baseline)")
@executor_options
@user_errors
def whatif(sass, trace_path, kernel, machine, policy, dependency_model, sms, sampling, unknown, shared_carveout, as_json,
           as_csv, plot_path, force, jobs, executor_kind, scheduler):
    """Cycles with each mechanism removed alone (and all removed): what each bottleneck costs."""
    params = click.get_current_context().params
    target = resolve_target(sass, trace_path, kernel)
    if target.is_application:
        from teg.cli.app_report import application_report

        return application_report("whatif", target.application, machine, engine_options(params), target.sass,
                                  make_executor(params), as_json=as_json, as_csv=as_csv)
    from teg.analysis.whatif import whatif as run_whatif
    from teg.engine.runner import lower_kernel
    from teg.report import whatif_csv, whatif_json, whatif_text

    check_plot(plot_path, force)
    inp = lower_kernel(kernel_inputs(target.sass, target.trace, target.kernel, machine), engine_options(params))
    rows = run_whatif(inp)
    if plot_path:
        from teg.report.plots import whatif_figure

        whatif_figure(rows, plot_path, inp.setup, force=force)
    click.echo(whatif_json(rows) if as_json else whatif_csv(rows).rstrip("\n") if as_csv else whatif_text(rows, inp.setup))


@click.command()
@input_options
@click.option("--warps", default=None, help="comma-separated warp counts, e.g. 1,2,4,8,16,32,64 (N warps on one SM)")
@click.option("--blocks-per-sm", "blocks", default=None, help="comma-separated block counts (B blocks on one SM)")
@click.option("--json", "as_json", is_flag=True, help="rows as JSON")
@click.option("--csv", "as_csv", is_flag=True, help="rows as CSV")
@plot_option("cycles and speedup against warps, and the stall stack of each point", measured=True)
@executor_options
@click.option("--spec", type=click.Path(path_type=Path), default=None,
              help="YAML sweep file: traces x kernels x machines x warps x what-ifs "
                   "(teg/analysis/sweepspec.py describes it)")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="results CSV, appended row by row and resumed (points already in it are "
                   "skipped); also written as .parquet beside it when pyarrow is installed")
@click.option("--retry-failed", is_flag=True, help="with -o: run again the points recorded as failed")
@user_errors
def sweep(sass, trace_path, kernel, machine, policy, dependency_model, sms, sampling, unknown, shared_carveout, warps,
          blocks, as_json, as_csv, plot_path, measured_path, force, jobs, executor_kind, scheduler, spec, output, retry_failed):
    """TEG's scaling experiment: cycles, work-normalized throughput and speedup over the first point."""
    params = click.get_current_context().params
    if spec is not None:
        given = [n for n in ("sass", "trace_path", "kernel", "machine", "warps", "blocks") if params[n] is not None]
        if given:
            raise click.UsageError(f"--spec describes the whole sweep; leave out {opt_name(given[0])}")
        from teg.analysis.sweepspec import load_spec
        from teg.cli.app_sweep import sweep_report

        return sweep_report(load_spec(spec), make_executor(params), output, retry_failed, force, as_json, as_csv)
    target = resolve_target(sass, trace_path, kernel, lists_kernels=output is not None)
    if target.is_application:
        from teg.analysis.sweep import DEFAULT_WARPS
        from teg.analysis.sweepspec import SweepSpec
        from teg.cli.app_sweep import sweep_report

        app_spec = SweepSpec.of_application(trace_path, target.sass, kernel, machine,
                                            int_list(warps) if warps else DEFAULT_WARPS, engine_options(params))
        return sweep_report(app_spec, make_executor(params), output, retry_failed, force, as_json, as_csv)
    from teg.analysis.sweep import DEFAULT_WARPS, sweep as run_sweep
    from teg.report import sweep_csv, sweep_json, sweep_text

    if measured_path and not plot_path:
        raise click.UsageError("--measured points are drawn on the --plot: give --plot FILE too")
    check_plot(plot_path, force)
    measured = None
    if measured_path:
        from teg.report.plots import read_measured

        measured = read_measured(measured_path)
    if warps is not None and blocks is not None:
        raise click.UsageError("give --warps or --blocks-per-sm, not both")
    warp_list = int_list(warps) if warps is not None else None
    block_list = int_list(blocks, "--blocks-per-sm") if blocks is not None else None
    f = kernel_inputs(target.sass, target.trace, target.kernel, machine)
    if warp_list is None and block_list is None:     # TEG's points, up to what an SM of the machine holds
        warp_list = [w for w in DEFAULT_WARPS if w <= f.machine.limits.max_warps]
    rows = run_sweep(f, engine_options(params), warps=warp_list, blocks=block_list)
    if plot_path:
        from teg.report.plots import sweep_figure

        sweep_figure(rows, plot_path, measured, force=force)
    click.echo(sweep_json(rows) if as_json else sweep_csv(rows).rstrip("\n") if as_csv else sweep_text(rows))
