"""teg.engine — the TEG-style timing engine.

* :func:`lower` — Program and/or KernelTrace + Machine + :class:`Options` → :class:`EngineInput`
  (named tables of flat arrays and the run's scalars, :mod:`teg.engine.lowered`; memory
  precomputation vectorized);
* :func:`run` — EngineInput → :class:`Result` (one numba-jitted, deterministic loop);
* :func:`estimate` — both, from file paths or objects (:mod:`teg.engine.runner`: the one way every
  caller runs a kernel).
"""

from __future__ import annotations

from teg.engine.codes import CAUSE_NAMES
from teg.engine.lowered import EngineInput, with_record_order, with_replay, with_switches
from teg.engine.lower import LoweringError, classify_all, lower
from teg.engine.occupancy import Occupancy, OccupancyError, occupancy
from teg.engine.options import MECHANISMS, Options, OptionsError
from teg.engine.result import Result
from teg.engine.run import EngineError, run
from teg.engine.kernel_inputs import KernelInputs, load_inputs
from teg.engine.runner import Estimate, lower_kernel, run_kernel
from teg.engine.setup import Residency, RunSetup, SmOutcome
from teg.jitnotice import install as _install_compile_notice

_install_compile_notice()     # one line on stderr before numba compiles (teg/jitnotice.py)


def estimate(sass=None, trace=None, machine=None, options: Options | None = None, kernel: str | None = None) -> Result:
    """Load inputs (paths or objects; see :func:`teg.engine.kernel_inputs.load_inputs`), lower and run."""
    return run_kernel(load_inputs(sass=sass, trace=trace, machine=machine, kernel=kernel), options).result


__all__ = ["lower", "run", "estimate", "Options", "MECHANISMS", "EngineInput", "Result",
           "CAUSE_NAMES", "with_switches", "with_replay", "with_record_order", "LoweringError", "EngineError",
           "OptionsError", "occupancy", "Occupancy",
           "OccupancyError", "classify_all", "KernelInputs", "load_inputs", "RunSetup", "SmOutcome", "Residency",
           "run_kernel", "lower_kernel", "Estimate"]
