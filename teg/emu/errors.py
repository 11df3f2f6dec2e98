"""Errors the emulator reports to a user (all :class:`teg.TegError`)."""

from __future__ import annotations

from teg import TegError


class EmulatorError(TegError):
    """A kernel could not be emulated: bad launch, bad argument, unreadable cubin."""


class UnsupportedInstruction(EmulatorError):
    """An opcode (or modifier combination) outside the emulated set; names opcode, PC and kernel."""


class MemoryFault(EmulatorError):
    """An access outside every allocated buffer / the shared or local window; names thread and address."""
