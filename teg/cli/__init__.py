"""Command-line interface: a thin click group; each subcommand lives in its own module and calls
the library. Errors a user can fix (:class:`teg.TegError` and subclasses) print one line and exit 2.
"""

from __future__ import annotations

import functools
import sys
import warnings

import click

from teg import TegError, UnknownOpcodeWarning, __version__


# Exit status of a report that completed but met opcodes the machine table does not know (`teg
# parse`, `teg trace info`): the report is printed, and the status is never 0. Errors exit 2.
EXIT_UNKNOWN_OPCODES = 1


def user_errors(fn):
    """Decorator: turn :class:`TegError` (and file errors) into a one-line message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UnknownOpcodeWarning)
                result = fn(*args, **kwargs)
        except (TegError, FileNotFoundError, IsADirectoryError, PermissionError, LookupError) as exc:
            msg = str(exc) or exc.__class__.__name__
            click.echo(f"teg: error: {msg}", err=True)
            sys.exit(2)
        unknown = False
        for w in caught:
            unknown |= issubclass(w.category, UnknownOpcodeWarning)
            click.echo(f"teg: warning: {w.message}", err=True)
        if unknown:
            sys.exit(EXIT_UNKNOWN_OPCODES)
        return result

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="teg")
def main() -> None:
    """teg — estimate NVIDIA GPU kernel cycles from SASS + an instruction trace."""


def _register() -> None:
    """Import the subcommand modules (each adds itself to ``main``)."""
    import importlib

    for mod in ("parse", "machines", "trace", "trace_run", "estimate", "compare", "validate"):
        try:
            importlib.import_module(f"teg.cli.{mod}")
        except ModuleNotFoundError as exc:  # a subcommand module not written yet
            if exc.name != f"teg.cli.{mod}":
                raise


_register()
