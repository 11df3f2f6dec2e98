"""``teg estimate``, ``teg whatif``, ``teg sweep``: the timing engine from the command line.

With neither ``--sass`` nor ``--trace`` they run the bundled example (traces/: the TEG report's
C = A·Bᵀ kernel with its shared-memory bank conflict, sm_90 SASS + trace)."""

from __future__ import annotations

import click

from teg.cli import main, user_errors

EXAMPLE_SASS = "matmul_abt.sm_90.sass"
EXAMPLE_TRACE = "matmul_abt.sm_90.trace.npz"


def _int_list(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise click.BadParameter(f"expected positive integers, got {text!r}")
    return vals


def input_options(fn):
    """Options shared by estimate / whatif / sweep."""
    opts = [
        click.option("--sass", type=click.Path(), default=None, help="SASS text (cuobjdump/nvdisasm) or a cubin/ELF"),
        click.option("--trace", "trace_path", type=click.Path(), default=None,
                     help="instruction trace: Accel-Sim kernelslist.g/.traceg[.xz] or a teg native trace"),
        click.option("--kernel", default=None, help="kernel name (mangled or demangled, or a substring)"),
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
@user_errors
def estimate(sass, trace_path, kernel, machine, policy, dependency_model, sms, unknown, blocks_per_sm, as_json):
    """Estimate cycles, time, IPC, occupancy and the stall breakdown of a kernel."""
    from teg.engine import lower, run
    from teg.report import result_text, to_json

    inp_files = _load(sass, trace_path, kernel, machine)
    opts = _options(policy=policy, dependency_model=dependency_model, sms=sms, unknown=unknown, blocks_per_sm=blocks_per_sm)
    result = run(lower(inp_files.program, inp_files.kernel_trace, inp_files.machine, opts))
    click.echo(to_json(result) if as_json else result_text(result))


@main.command()
@input_options
@click.option("--json", "as_json", is_flag=True, help="rows as JSON: [{mechanism, cycles, …}], baseline first")
@click.option("--csv", "as_csv", is_flag=True, help="rows as CSV")
@user_errors
def whatif(sass, trace_path, kernel, machine, policy, dependency_model, sms, unknown, as_json, as_csv):
    """Cycles with each mechanism removed alone (and all removed): what each bottleneck costs."""
    from teg.analysis.whatif import whatif as run_whatif
    from teg.engine import lower
    from teg.report import to_csv, to_json, whatif_text

    f = _load(sass, trace_path, kernel, machine)
    opts = _options(policy=policy, dependency_model=dependency_model, sms=sms, unknown=unknown)
    inp = lower(f.program, f.kernel_trace, f.machine, opts)
    rows = run_whatif(inp)
    click.echo(to_json(rows) if as_json else to_csv(rows).rstrip("\n") if as_csv else whatif_text(rows, inp.meta))


@main.command()
@input_options
@click.option("--warps", default=None, help="comma-separated warp counts, e.g. 1,2,4,8,16,32,64 (N warps on one SM)")
@click.option("--blocks-per-sm", "blocks", default=None, help="comma-separated block counts (B blocks on one SM)")
@click.option("--json", "as_json", is_flag=True, help="rows as JSON")
@click.option("--csv", "as_csv", is_flag=True, help="rows as CSV")
@user_errors
def sweep(sass, trace_path, kernel, machine, policy, dependency_model, sms, unknown, warps, blocks, as_json, as_csv):
    """TEG's scaling experiment: cycles, work-normalized throughput and speedup over the first point."""
    from teg.analysis.sweep import sweep as run_sweep
    from teg.report import sweep_text, to_csv, to_json

    if (warps is None) == (blocks is None):
        if warps is None and blocks is None:
            warps = "1,2,4,8,16,32,64"
        else:
            raise click.UsageError("give --warps or --blocks-per-sm, not both")
    f = _load(sass, trace_path, kernel, machine)
    opts = _options(policy=policy, dependency_model=dependency_model, sms=sms, unknown=unknown)
    rows = run_sweep(f.program, f.kernel_trace, f.machine, opts,
                     warps=_int_list(warps) if warps else None, blocks=_int_list(blocks) if blocks else None)
    click.echo(to_json(rows) if as_json else to_csv(rows).rstrip("\n") if as_csv else sweep_text(rows))
