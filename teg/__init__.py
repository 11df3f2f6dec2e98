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
