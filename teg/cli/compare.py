"""``teg compare``: the engine's estimate next to every analytical model (MWP-CWP, CUDA Performance
Analyzer, MPD/CPD, BSP) on the same kernel and machine, with their key intermediate metrics and,
given a measurement, each one's error. The work is :func:`teg.analysis.compare.compare`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from teg import TegError
from teg.cli.errors import user_errors

# The intermediate metrics the text view shows per model (all of them are in --json).
KEY_METRICS = {
    "engine": ("ipc", "instructions"),
    "mwp_cwp": ("mwp", "cwp", "case", "mem_l", "departure_delay", "synch_cost"),
    "cpa": ("mwp", "cwp", "case", "mem_latency_final", "avg_dep_delay_per_tran", "active_warps_for_mwp"),
    "mpd_cpd": ("cpd", "p", "mpd_min", "type_counts"),
    "bsp": ("lam", "comp", "comm_gm", "comm_sm", "l1_hit_rate", "l2_hit_rate"),
}


def _parse_params(items: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise TegError(f"--param {item!r}: expected NAME=VALUE")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise TegError(f"--param {item!r}: {value!r} is not a number") from None
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict):
        return "/".join(f"{k}:{_fmt(x)}" for k, x in v.items())
    return str(v)


def format_comparison(cmp) -> str:
    """Text view: one line per estimator with cycles, time, error and key metrics."""
    head = f"kernel {cmp.kernel} on {cmp.machine}"
    if cmp.measured is not None:
        head += f" (measured {cmp.measured:,.0f} cycles)"
    lines = [head, f"{'model':<9} {'cycles':>14} {'time_us':>10} {'error':>8}  metrics"]
    for r in cmp.rows:
        cyc = f"{r.cycles:,.0f}" if r.cycles is not None else "-"
        us = f"{r.seconds * 1e6:.3f}" if r.seconds is not None else "-"
        err = f"{r.error:+.1%}" if r.error is not None else "-"
        if r.cycles is None:
            detail = r.note
        else:
            detail = "  ".join(f"{k}={_fmt(r.metrics[k])}" for k in KEY_METRICS.get(r.model, ())
                               if r.metrics.get(k) is not None)
        lines.append(f"{r.model:<9} {cyc:>14} {us:>10} {err:>8}  {detail}")
    p = cmp.profile
    lines.append(f"profile: {p.active_warps_per_sm} warps/SM ({p.active_blocks_per_sm} blocks) on {p.active_sms} SMs, "
                 f"#Rep {p.rep:.3g}; per warp {p.comp_insts:.4g} comp + {p.mem_insts:.4g} mem "
                 f"({p.uncoal_mem_insts:.4g} uncoalesced), {p.synch_insts:.4g} barriers, "
                 f"{len(p.periods)} periods")
    return "\n".join(lines)


@click.command("compare")
@click.option("--sass", "sass", type=click.Path(path_type=Path), default=None,
              help="SASS text (cuobjdump/nvdisasm) or a cubin/executable; optional, the trace is joined to it")
@click.option("--trace", "trace_path", required=True, type=click.Path(path_type=Path),
              help="instruction trace: kernelslist.g, its folder, a .traceg[.xz] or a native trace")
@click.option("--kernel", "kernel_name", default=None, help="kernel name (substring) or id")
@click.option("--machine", default=None, help="machine table name or YAML path (default: suggested by the "
              "kernel's binary version)")
@click.option("--measured", type=float, default=None, help="measured cycles of the kernel, for each model's error")
@click.option("--measured-file", type=click.Path(path_type=Path), default=None,
              help="measured data: a 'teg validate measure' result, JSON {kernel: cycles} or CSV kernel,cycles")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="override an analytical parameter (e.g. bsp_lambda=4.35); repeatable")
@click.option("--model", "models", multiple=True, type=click.Choice(["mwp_cwp", "cpa", "mpd_cpd", "bsp"]),
              help="only these analytical models (repeatable; default all)")
@click.option("--no-engine", is_flag=True, help="skip the engine row")
@click.option("--unknown", type=click.Choice(["error", "alu"]), default="error",
              help="opcodes the machine table does not know: error, or count them as integer ALU")
@click.option("--json", "as_json", is_flag=True, help="one row per model with cycles and metrics")
@user_errors
def compare_cmd(sass, trace_path, kernel_name, machine, measured, measured_file, params, models, no_engine,
                unknown, as_json) -> None:
    """Engine and analytical models (MWP-CWP, CPA, MPD/CPD, BSP) on one kernel.

    The inputs are resolved as for ``teg estimate``; the trace is required (it gives the dynamic
    counts every analytical model needs)."""
    from teg.analysis.compare import compare, load_measured
    from teg.engine import load_inputs
    from teg.engine.options import Options

    inp = load_inputs(sass=sass, trace=trace_path, machine=machine, kernel=kernel_name)
    kt = inp.kernel_trace
    if measured is None and measured_file is not None:
        measured = load_measured(measured_file, kt.info.name, kt.info.kernel_id, kt.num_warps)
    cmp = compare(inp.program, kt, inp.machine, options=Options(unknown=unknown), measured=measured,
                  overrides=_parse_params(params), models=models or None, engine=not no_engine, unknown=unknown)
    if as_json:
        click.echo(json.dumps(cmp.to_dict(), indent=1))
    else:
        click.echo(format_comparison(cmp))
