"""teg — Timing Estimation for GPUs.

Cycle estimates for NVIDIA GPU kernels from SASS (cuobjdump / nvdisasm text) plus a dynamic
instruction trace, with a numba-accelerated issue-engine timing model after Lai & Seznec,
"TEG: GPU Performance Estimation Using a Timing Model" (INRIA RR-7804, 2011).

Data flows one way: ``teg.sass`` → ``teg.machine`` / ``teg.trace`` → ``teg.engine`` → ``teg.report``.
"""

__version__ = "0.1.0"


class TegError(Exception):
    """Base class of every error teg reports to a user (the CLI prints it on one line, exit 2)."""
