"""Errors of the trace layer (all :class:`teg.TegError`, printed on one line by the CLI)."""

from __future__ import annotations

from teg import TegError
from teg.fileio import OutputError


class TraceFormatError(TegError):
    """A trace file that cannot be read: ``<file>:<line>: <problem>`` (line omitted when unknown)."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class TraceUnsupportedError(TraceFormatError):
    """A well-formed trace feature this reader deliberately does not decode (TMA address lists)."""


class KernelNotFoundError(TegError, LookupError):
    """A ``--kernel`` selection that names no kernel of a trace, or several where one is needed."""


class TraceMismatchError(TegError):
    """The trace does not belong to the SASS program it is joined with."""


# An output path that must not be overwritten, or cannot be written (teg.fileio).
TraceOutputError = OutputError
