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


def error_line(exc: BaseException) -> str:
    """One line for a user error: its message, or for an operating-system error raised by Python
    itself (no message of teg's own) ``FILE: reason`` (``out/x.npz: Not a directory``)."""
    if isinstance(exc, OSError) and exc.strerror and not isinstance(exc, TegError):
        names = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        msg = f"{names}: {exc.strerror}" if names else exc.strerror
    else:
        msg = str(exc) or exc.__class__.__name__
    # one line: control characters a damaged input carried into the message are shown escaped
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in " ".join(msg.split("\n"))).strip()


def memory_error_line(exc: MemoryError) -> str:
    """One line for an allocation that failed although the up-front estimates (:mod:`teg.hostmem`)
    let the work start: what failed and what makes the work smaller."""
    what = " ".join(str(exc).split()) or "an allocation failed"
    return (f"out of memory ({what}); make the work smaller: --sms N (estimate, whatif, sweep), --timeline-cycles A:B, "
            "--max-instructions (trace run), a smaller launch; or give teg more memory")


def user_errors(fn):
    """Decorator: turn :class:`TegError` (and file errors) into a one-line message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UnknownOpcodeWarning)
                result = fn(*args, **kwargs)
        except (TegError, OSError, LookupError) as exc:
            click.echo(f"teg: error: {error_line(exc)}", err=True)
            sys.exit(2)
        except MemoryError as exc:
            click.echo(f"teg: error: {memory_error_line(exc)}", err=True)
            sys.exit(2)
        unknown = False
        for w in caught:
            unknown |= issubclass(w.category, UnknownOpcodeWarning)
            click.echo(f"teg: warning: {w.message}", err=True)
        if unknown:
            sys.exit(EXIT_UNKNOWN_OPCODES)
        return result

    return wrapper


# Exit status of a run stopped by Ctrl-C (128 + SIGINT, as shells report it): neither an error (2)
# nor an incomplete report (1).
EXIT_INTERRUPTED = 130


class TegGroup(click.Group):
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


@click.group(cls=TegGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="teg")
def main() -> None:
    """teg — estimate NVIDIA GPU kernel cycles from SASS + an instruction trace."""


def _register() -> None:
    """Import the subcommand modules (each adds itself to ``main``)."""
    import importlib

    for mod in ("parse", "machines", "trace", "trace_run", "trace_app", "trace_cache", "estimate", "compare",
                "validate"):
        try:
            importlib.import_module(f"teg.cli.{mod}")
        except ModuleNotFoundError as exc:  # a subcommand module not written yet
            if exc.name != f"teg.cli.{mod}":
                raise


_register()
