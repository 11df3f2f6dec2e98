"""Command-line interface: the ``teg`` group. Each command lives in a module of its own
(:data:`COMMANDS`), imported when it runs; the options estimate / whatif / sweep share are declared
once in :mod:`teg.cli.options`, how a command ends (one line and exit 2 for teg's own errors and
operating-system errors; a traceback for anything else, a bug) in :mod:`teg.cli.errors`. The
commands parse their options, call the library and print; the modules import each other in one
direction only (tests/test_cli_structure.py).
"""

from __future__ import annotations

import importlib
import sys

import click

from teg import __version__, error_line
from teg.cli.errors import (EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_UNKNOWN_OPCODES, Incomplete, memory_error_line,
                            user_errors)

# Every command of ``teg``: its name and where it is defined (module:attribute), imported when the
# command runs (or when ``teg --help`` lists it), so that a command pays only for its own imports.
COMMANDS = {
    "parse": "teg.cli.parse:parse_cmd",
    "machines": "teg.cli.machines:machines",
    "trace": "teg.cli.trace:trace_group",
    "estimate": "teg.cli.estimate:estimate",
    "whatif": "teg.cli.estimate:whatif",
    "sweep": "teg.cli.estimate:sweep",
    "compare": "teg.cli.compare:compare_cmd",
    "validate": "teg.cli.validate:validate",
    "calibrate": "teg.cli.validate:calibrate_cmd",
}


class LazyGroup(click.Group):
    """A click group whose commands are named in ``lazy`` (name -> ``module:attribute``) and
    imported on first use."""

    def __init__(self, *args, lazy: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx, name):
        if name not in self.commands and name in self.lazy:
            module, attr = self.lazy[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)


class TegGroup(LazyGroup):
    """The ``teg`` group: Ctrl-C anywhere ends with one line and exit status 130 (click's own
    "Aborted!" would exit 1, the status of an incomplete report); a report that prints a path
    that is not UTF-8 prints its bytes."""

    def invoke(self, ctx):
        # paths that are not UTF-8 (their bytes as surrogates) are printed as the bytes they are,
        # not a UnicodeEncodeError in the middle of a report
        reconfigure = getattr(sys.stdout, "reconfigure", None)
        if reconfigure is not None and getattr(sys.stdout, "encoding", "").lower().replace("-", "") == "utf8":
            try:
                reconfigure(errors="surrogateescape")
            except (ValueError, OSError):
                pass
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("teg: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)


@click.group(cls=TegGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="teg")
def main() -> None:
    """teg — estimate NVIDIA GPU kernel cycles from SASS + an instruction trace."""


__all__ = ["main", "COMMANDS", "LazyGroup", "TegGroup", "user_errors", "error_line", "memory_error_line", "Incomplete",
           "EXIT_INCOMPLETE", "EXIT_INTERRUPTED", "EXIT_UNKNOWN_OPCODES"]
