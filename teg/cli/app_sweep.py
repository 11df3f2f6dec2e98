"""``teg sweep`` on applications (a sweep file, ``--spec``, or ``--trace`` of several kernels): the
library runs the points and keeps the resumable table (:func:`teg.analysis.sweepspec.run_spec`);
this module prints the rows (text, CSV, JSON) or, with ``-o``, one line of what was run and
written."""

from __future__ import annotations

import click

from teg.cli.app_report import INCOMPLETE, rewarn
from teg.cli.errors import Incomplete


def sweep_report(spec, executor, output=None, retry_failed: bool = False, force: bool = False,
                 as_json: bool = False, as_csv: bool = False) -> Incomplete | None:
    """Run ``spec`` (:class:`teg.analysis.sweepspec.SweepSpec`) and print what it gave."""
    from teg.analysis.sweepspec import run_spec
    from teg.report.application import missing_text
    from teg.report.points import points_csv, points_json, points_text

    def warn(line):
        click.echo(f"teg: warning: {line}", err=True)

    done = run_spec(spec, executor, output=output, retry_failed=retry_failed, force=force, warn=warn,
                    on_missing=lambda trace, kernels: warn(f"{trace}: {missing_text(kernels)}"))
    if output is not None:
        click.echo(f"sweep: {len(done.rows)} points, {done.ran} run now, {done.already} already in {output}, "
                   f"{done.failed} failed; wrote {', '.join(done.wrote)}")
    elif as_json:
        click.echo(points_json(done.rows))
    elif as_csv:
        click.echo(points_csv(done.rows).rstrip("\n"))
    else:
        click.echo(points_text(done.rows))
    rewarn((r.kernel_id, [r.warnings] if r.warnings else []) for r in done.rows)
    return None if done.complete else Incomplete(INCOMPLETE)
