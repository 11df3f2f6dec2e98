"""``teg estimate``, ``teg whatif``, ``teg sweep``: the timing engine from the command line.

With neither ``--sass`` nor ``--trace`` they run the bundled example (traces/: the TEG report's
C = A·Bᵀ kernel with its shared-memory bank conflict, sm_90 SASS + trace)."""

from __future__ import annotations

import click

from teg.cli import main, user_errors
from teg.cli.application import applications
from teg.cli.reports import EstimateReports, check_plot, estimate_report_options, plot_option

EXAMPLE_SASS = "matmul_abt.sm_90.sass"
EXAMPLE_TRACE = "matmul_abt.sm_90.trace.npz"


def _int_list(text: str, option: str = "--warps") -> list[int]:
    """``"1,2,4"`` → [1, 2, 4]; anything else (empty, not integers, below 1) is a one-line error."""
    from teg.engine.options import OptionsError

    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise OptionsError(f"{option} {text!r}: expected comma-separated integers") from None
    if not vals or min(vals) < 1:
        raise OptionsError(f"{option} {text!r}: expected comma-separated positive integers")
    return vals


def input_options(fn):
    """Options shared by estimate / whatif / sweep."""
    opts = [
        click.option("--sass", type=click.Path(), default=None, help="SASS text (cuobjdump/nvdisasm) or a cubin/ELF"),
        click.option("--trace", "trace_path", type=click.Path(), default=None,
                     help="instruction trace: Accel-Sim kernelslist.g/.traceg[.xz] or a teg native trace"),
        click.option("--kernel", default=None, help="kernel name (mangled or demangled, or a substring); of an "
                     "application's kernels also ids 1,4-9 or re:PATTERN (several: the application report)"),
        click.option("--machine", default=None, help="machine table name or YAML file (default: suggested by "
                     "the trace's binary version or the SASS target)"),
        click.option("--policy", type=click.Choice(["gto", "lrr"]), default="gto", show_default=True,
                     help="warp scheduling: greedy-then-oldest or loose round-robin"),
        click.option("--deps", "dependency_model", type=click.Choice(["auto", "scoreboard", "controlcodes"]),
                     default="auto", show_default=True, help="dependency model"),
        click.option("--sms", type=int, default=None,
                     help="sample N SMs instead of simulating every SM (the default): SMs 0..N-1 get the "
                          "blocks dealt to them round-robin and N/busy of the DRAM bandwidth and L2"),
        click.option("--unknown", type=click.Choice(["error", "alu"]), default="error", show_default=True,
                     help="opcodes the machine table does not know: error, or time them as integer ALU"),
        click.option("--shared-carveout", "shared_carveout", type=click.FloatRange(0, 100), default=None,
                     metavar="PCT", help="the kernel's cudaFuncAttributePreferredSharedMemoryCarveout (percent of "
                     "the SM's shared memory): occupancy and the L1 follow the carveout the driver picks for it "
                     "(default: the driver's own choice)"),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _load(sass, trace_path, kernel, machine):
    from teg.engine import load_inputs
    from teg.resources import traces_dir

    if sass is None and trace_path is None:
        d = traces_dir()
        sass, trace_path = d / EXAMPLE_SASS, d / EXAMPLE_TRACE
    return load_inputs(sass=sass, trace=trace_path, machine=machine, kernel=kernel)


def _options(**kw):
    from teg.engine import Options

    return Options(**{k: v for k, v in kw.items() if v is not None})


@main.command()
@input_options
@click.option("--blocks-per-sm", type=int, default=None, help="resident blocks per SM instead of the occupancy calculation")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@estimate_report_options
@applications("estimate")
@user_errors
def estimate(sass, trace_path, kernel, machine, policy, dependency_model, sms, unknown, shared_carveout, blocks_per_sm,
             as_json,
             views, timeline_path, timeline_cycles, plot_path, force):
    """Estimate cycles, time, IPC, occupancy and the stall breakdown of a kernel."""
    from teg.engine.runner import run_kernel

    reports = EstimateReports.from_cli(views, as_json, timeline_path, timeline_cycles, plot_path, force)
    inp_files = _load(sass, trace_path, kernel, machine)
    opts = _options(policy=policy, dependency_model=dependency_model, sms=sms, unknown=unknown, blocks_per_sm=blocks_per_sm,
                    shared_carveout=shared_carveout)
    click.echo(reports.render(run_kernel(inp_files, opts, prepare=reports.prepare)))


@main.command()
@input_options
@click.option("--json", "as_json", is_flag=True, help="rows as JSON: [{mechanism, cycles, …}], baseline first")
@click.option("--csv", "as_csv", is_flag=True, help="rows as CSV")
@plot_option("the savings of each mechanism (a waterfall from the baseline)")
@applications("whatif")
@user_errors
def whatif(sass, trace_path, kernel, machine, policy, dependency_model, sms, unknown, shared_carveout, as_json, as_csv,
           plot_path, force):
    """Cycles with each mechanism removed alone (and all removed): what each bottleneck costs."""
    from teg.analysis.whatif import whatif as run_whatif
    from teg.engine.runner import lower_kernel
    from teg.report import whatif_csv, whatif_json, whatif_text

    check_plot(plot_path, force)
    f = _load(sass, trace_path, kernel, machine)
    opts = _options(policy=policy, dependency_model=dependency_model, sms=sms, unknown=unknown,
                    shared_carveout=shared_carveout)
    inp = lower_kernel(f, opts)
    rows = run_whatif(inp)
    if plot_path:
        from teg.report.plots import whatif_figure

        whatif_figure(rows, plot_path, inp.setup, force=force)
    click.echo(whatif_json(rows) if as_json else whatif_csv(rows).rstrip("\n") if as_csv else whatif_text(rows, inp.setup))


@main.command()
@input_options
@click.option("--warps", default=None, help="comma-separated warp counts, e.g. 1,2,4,8,16,32,64 (N warps on one SM)")
@click.option("--blocks-per-sm", "blocks", default=None, help="comma-separated block counts (B blocks on one SM)")
@click.option("--json", "as_json", is_flag=True, help="rows as JSON")
@click.option("--csv", "as_csv", is_flag=True, help="rows as CSV")
@plot_option("cycles and speedup against warps, and the stall stack of each point", measured=True)
@applications("sweep")
@user_errors
def sweep(sass, trace_path, kernel, machine, policy, dependency_model, sms, unknown, shared_carveout, warps, blocks,
          as_json, as_csv,
          plot_path, measured_path, force):
    """TEG's scaling experiment: cycles, work-normalized throughput and speedup over the first point."""
    from teg.analysis.sweep import sweep as run_sweep
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
    warp_list = _int_list(warps) if warps is not None else None
    block_list = _int_list(blocks, "--blocks-per-sm") if blocks is not None else None
    f = _load(sass, trace_path, kernel, machine)
    if warp_list is None and block_list is None:     # TEG's points, up to what an SM of the machine holds
        warp_list = [w for w in (1, 2, 4, 8, 16, 32, 64) if w <= f.machine.limits.max_warps]
    opts = _options(policy=policy, dependency_model=dependency_model, sms=sms, unknown=unknown,
                    shared_carveout=shared_carveout)
    rows = run_sweep(f, opts, warps=warp_list, blocks=block_list)
    if plot_path:
        from teg.report.plots import sweep_figure

        sweep_figure(rows, plot_path, measured, force=force)
    click.echo(sweep_json(rows) if as_json else sweep_csv(rows).rstrip("\n") if as_csv else sweep_text(rows))
