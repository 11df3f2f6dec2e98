"""``teg machines``: list the shipped machine tables; ``teg machines show NAME|PATH [--json]``
prints one resolved table (``extends:`` applied)."""

from __future__ import annotations

import json

import click
import yaml

from teg.cli.errors import user_errors


@click.group(invoke_without_command=True)
@click.pass_context
@user_errors
def machines(ctx: click.Context) -> None:
    """List machine tables (name, sm, clock, SMs, description)."""
    if ctx.invoked_subcommand is not None:
        return
    from teg.machine import available, load

    rows = [load(name) for name in available()]
    width = max(len(m.name) for m in rows)
    click.echo(f"{'name':<{width}}  {'sm':>4}  {'clock MHz':>9}  {'SMs':>4}  description")
    for m in rows:
        click.echo(f"{m.name:<{width}}  {m.sm:>4}  {m.clock_mhz:>9g}  {m.num_sms:>4}  {m.description}")


@machines.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
@user_errors
def show(name: str, as_json: bool) -> None:
    """Print the resolved table NAME (a shipped name or a path to a .yaml table)."""
    from teg.machine import load, resolve

    m = load(name)
    doc = dict(m.raw)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        _, chain = resolve(m.source_path)
        click.echo(f"# resolved machine table {m.name}: {' <- '.join(str(p) for p in chain)}")
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        click.echo(yaml.dump(doc, Dumper=dumper, sort_keys=False, allow_unicode=True, width=120), nl=False)
