"""Errors raised by :mod:`teg.sass`; all are :class:`teg.TegError` so the CLI prints one line."""

from __future__ import annotations

from teg import TegError


class SassParseError(TegError):
    """A line of SASS text that cannot be parsed. Carries ``source`` (file name), ``line`` (1-based)
    and ``text`` (the offending line), and says all three in its message."""

    def __init__(self, problem: str, source: str = "<text>", line: int = 0, text: str = ""):
        self.problem = problem
        self.source = source
        self.line = line
        self.text = text
        where = f"{source}:{line}" if line else source
        if len(problem) > 300:       # a damaged line can carry an operand of thousands of characters
            problem = problem[:297] + "..."
        shown = text.strip()
        if len(shown) > 120:
            shown = shown[:117] + "..."
        super().__init__(f"{where}: {problem}" + (f": {shown!r}" if shown else ""))


class OperandError(ValueError):
    """Internal: one operand's text is malformed (turned into :class:`SassParseError` with the line)."""


class ToolNotFoundError(TegError):
    """A CUDA binary tool (cuobjdump, nvdisasm, nvcc) is not installed where teg looks for it."""


class DisassemblyError(TegError):
    """cuobjdump ran but could not disassemble the input (not a CUDA binary, or no SASS inside)."""
