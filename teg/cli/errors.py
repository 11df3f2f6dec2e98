"""How the commands end: the exit statuses, :func:`user_errors` (a user error is one line and exit
status 2, never a traceback) and :class:`Incomplete` (a report printed whole but lacking parts).

User errors are :class:`teg.TegError` (teg's own: they name the file, line and problem) and
:class:`OSError` (a file that cannot be read or written); a failed allocation gets a line of its
own (:func:`memory_error_line`). Anything else — a ``KeyError``, an ``IndexError`` — is a bug and
surfaces as a traceback."""

from __future__ import annotations

import functools
import sys
import warnings
from dataclasses import dataclass

import click

from teg import TegError, UnknownOpcodeWarning, error_line

# Exit status of a report that completed but met opcodes the machine table does not know (`teg
# parse`, `teg trace info`): the report is printed, and the status is never 0. Errors exit 2.
EXIT_UNKNOWN_OPCODES = 1
# Exit status of a report that lacks parts (kernels listed but missing, kernels or points that failed)
EXIT_INCOMPLETE = 1
EXIT_USER_ERROR = 2
# Exit status of a run stopped by Ctrl-C (128 + SIGINT, as shells report it): neither an error (2)
# nor an incomplete report (1).
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Incomplete:
    """What a command returns when its report is printed but lacks parts: :func:`user_errors`
    prints the warnings first, then ``message`` as an error line, and exits with ``status``."""

    message: str
    status: int = EXIT_INCOMPLETE


def memory_error_line(exc: MemoryError) -> str:
    """One line for an allocation that failed although the up-front estimates (:mod:`teg.hostmem`)
    let the work start: what failed and what makes the work smaller."""
    what = " ".join(str(exc).split()) or "an allocation failed"
    return (f"out of memory ({what}); make the work smaller: --sms N (estimate, whatif, sweep), --timeline-cycles A:B, "
            "--max-instructions (trace run), a smaller launch; or give teg more memory")


def user_errors(fn):
    """Decorator of a command: a :class:`TegError` or :class:`OSError` becomes ``teg: error: …`` on
    one line and exit status 2; the warnings the command raised are printed after it, an
    unknown-opcode warning makes the status 1; a returned :class:`Incomplete` ends with its line
    and status."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UnknownOpcodeWarning)
                result = fn(*args, **kwargs)
        except (TegError, OSError) as exc:
            click.echo(f"teg: error: {error_line(exc)}", err=True)
            sys.exit(EXIT_USER_ERROR)
        except MemoryError as exc:
            click.echo(f"teg: error: {memory_error_line(exc)}", err=True)
            sys.exit(EXIT_USER_ERROR)
        unknown = False
        for w in caught:
            unknown |= issubclass(w.category, UnknownOpcodeWarning)
            click.echo(f"teg: warning: {w.message}", err=True)
        if unknown:
            sys.exit(EXIT_UNKNOWN_OPCODES)
        if isinstance(result, Incomplete):
            click.echo(f"teg: error: {result.message}", err=True)
            sys.exit(result.status)
        return result

    return wrapper
