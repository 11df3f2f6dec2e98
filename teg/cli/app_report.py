"""The application report of ``teg estimate`` and ``teg whatif`` (a trace of several kernels: one
row per kernel and the application's totals, or the savings of each mechanism), printed as text,
CSV or JSON. A report that lacks kernels — missing files, kernels that failed — is printed and
ends :class:`~teg.cli.errors.Incomplete` (exit status 1)."""

from __future__ import annotations

import warnings

import click

from teg import UnknownOpcodeWarning
from teg.cli.errors import Incomplete

INCOMPLETE = ("not everything was estimated (kernels listed but missing, or kernels or points that failed: the report "
              "names them)")


def rewarn(warned) -> None:
    """Unknown-opcode warnings recorded by the workers, raised here (``warned``: (kernel id,
    messages) pairs; the CLI prints them, exit 1)."""
    seen = set()
    for kid, messages in warned:
        for w in messages:
            msg = f"kernel {kid}: {w}"
            if msg not in seen:
                seen.add(msg)
                warnings.warn(msg, UnknownOpcodeWarning, stacklevel=2)


def application_report(kind: str, app, machine, options, sass, executor, as_json: bool = False,
                       as_csv: bool = False) -> Incomplete | None:
    """Run every kernel of ``app`` (``kind`` ``estimate``: each kernel's estimate; ``whatif``:
    each kernel's what-ifs) and print the report."""
    from teg.analysis.application import estimate_application
    from teg.report import application as view

    rep = estimate_application(app, machine=machine, options=options, sass=sass,
                               whatif=() if kind == "whatif" else None, executor=executor, progress=True)
    if as_json:
        out = view.application_json(rep)
    elif as_csv:
        out = view.application_csv(rep) if kind == "estimate" else view.mechanisms_csv(rep)
    else:
        out = view.application_text(rep) if kind == "estimate" else view.whatif_application_text(rep)
    click.echo(out.rstrip("\n"))
    rewarn((r.id, r.warnings) for r in rep.rows)
    return None if rep.complete else Incomplete(INCOMPLETE)
