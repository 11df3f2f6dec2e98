"""What ``teg estimate``, ``teg whatif`` and ``teg sweep`` run on: one kernel or an application.

:func:`resolve_target` looks at ``--trace`` first: a trace of one kernel, or a ``--kernel``
selection that leaves one kernel with nothing missing, is a kernel (the single-kernel command as
it is); several kernels, kernels listed but missing, or an option that lists a trace's kernels
(``--csv`` of estimate, ``-o`` of sweep) make an application. Options given on the command line
that an application run would ignore are refused by name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
from click.core import ParameterSource

from teg.cli.options import APP_PARAMS, opt_name


@dataclass(frozen=True)
class Target:
    """One kernel (``sass``, ``trace``: a path or a loaded kernel, ``kernel``: the name to pick)
    or, with ``application`` set, the kernels of an application (:class:`teg.trace.application.Application`)."""

    sass: object = None
    trace: object = None
    kernel: str | None = None
    application: object = None

    @property
    def is_application(self) -> bool:
        return self.application is not None


def resolve_target(sass, trace, kernel, lists_kernels: bool = False) -> Target:
    """The kernel or application ``--sass``/``--trace``/``--kernel`` name (module docstring).
    ``lists_kernels``: an option was given that lists a trace's kernels, so the run is an
    application's even for one kernel (and needs ``--trace``)."""
    if trace is None:
        if lists_kernels:
            raise click.UsageError("--csv/-o list the kernels of a trace: give --trace")
        return Target(sass=sass, kernel=kernel)
    from teg.trace.application import load_kernel, open_application, select

    whole = open_application(trace)
    if sass is None and whole.sass is not None:
        sass = Path(whole.sass)                 # teg trace app's listing: the kernels' control codes
    if not lists_kernels and len(whole.kernels) == 1 and not whole.missing:
        return Target(sass=sass, trace=trace, kernel=kernel)      # a one-kernel trace
    app = select(whole, kernel)
    if not lists_kernels and len(app.kernels) == 1 and not app.missing:
        return Target(sass=sass, trace=load_kernel(app.kernels[0]))
    refuse_single_kernel_options()
    return Target(sass=sass, trace=trace, kernel=kernel, application=app)


def refuse_single_kernel_options() -> None:
    """Options of the current command given on the command line that an application run would
    ignore (not in :data:`teg.cli.options.APP_PARAMS`) are a usage error naming the first."""
    ctx = click.get_current_context()
    for name in ctx.params:
        if name not in APP_PARAMS and ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None):
            raise click.UsageError(f"{opt_name(name)} applies to one kernel; this trace has several: select one "
                                   "with --kernel")
