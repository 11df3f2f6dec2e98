"""teg — Timing Estimation for GPUs.

Cycle estimates for NVIDIA GPU kernels from SASS (cuobjdump / nvdisasm text) plus a dynamic
instruction trace, with a numba-accelerated issue-engine timing model after Lai & Seznec,
"TEG: GPU Performance Estimation Using a Timing Model" (INRIA RR-7804, 2011).

Data flows one way: ``teg.sass`` → ``teg.machine`` / ``teg.trace`` → ``teg.engine`` → ``teg.report``.
"""

__version__ = "0.1.0"


class TegError(Exception):
    """Base class of every error teg reports to a user (the CLI prints it on one line, exit 2)."""


class UnknownOpcodeWarning(UserWarning):
    """Opcodes the machine table does not know were timed as integer ALU instructions because the
    user asked for it (``--unknown alu``). The CLI prints it and exits 1, never 0."""


def error_line(exc: BaseException) -> str:
    """One line naming a failure, the same wherever teg reports one (the CLI's ``teg: error:``
    line, the error column of an application's kernel or a sweep's point):

    * a :class:`TegError`: its message (it names the file, line and problem);
    * an :class:`OSError` raised by Python itself (no message of teg's own): ``FILE: reason``
      (``out/x.npz: Not a directory``); one with a message of its own: that message;
    * anything else is a bug, not a user error: its class and message (``KeyError: 'x'``).

    Control characters a damaged input carried into the message are shown escaped, and line
    breaks become spaces."""
    if isinstance(exc, OSError) and exc.strerror and not isinstance(exc, TegError):
        names = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        msg = f"{names}: {exc.strerror}" if names else exc.strerror
    elif isinstance(exc, (TegError, OSError)):
        msg = str(exc) or exc.__class__.__name__
    else:
        text = " ".join(str(exc).split("\n")).strip()
        msg = f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in " ".join(msg.split("\n"))).strip()
