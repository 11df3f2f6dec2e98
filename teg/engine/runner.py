"""One way to run a kernel: its inputs (:class:`~teg.engine.kernel_inputs.KernelInputs`) lowered
with the :class:`~teg.engine.options.Options` (:func:`lower_kernel`) and run (:func:`run_kernel`),
kept together as an :class:`Estimate` — what the reports read. Every caller — the commands,
applications, sweeps, the validation suite, ``teg trace app --estimate`` — goes through here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from teg.engine.kernel_inputs import KernelInputs
from teg.engine.lower import lower
from teg.engine.lowered import EngineInput
from teg.engine.options import Options
from teg.engine.result import Result
from teg.engine.run import run


@dataclass(frozen=True)
class Estimate:
    """One kernel's run: the ``inputs`` it was given, the ``options``, the ``lowered`` input the
    loop ran (with what it was set to record) and the ``result``."""

    inputs: KernelInputs
    options: Options
    lowered: EngineInput
    result: Result


def lower_kernel(inputs: KernelInputs, options: Options | None = None) -> EngineInput:
    """``inputs`` lowered for the engine (:func:`teg.engine.lower.lower`)."""
    return lower(inputs.program, inputs.kernel_trace, inputs.machine, options or Options())


def run_kernel(inputs: KernelInputs, options: Options | None = None,
               prepare: Callable[[EngineInput], EngineInput] | None = None) -> Estimate:
    """Lower ``inputs`` and run them; ``prepare`` may change the lowered input before the run (set
    it to record a timeline or per-instruction waits: :func:`teg.engine.records.with_records`)."""
    options = options or Options()
    inp = lower_kernel(inputs, options)
    if prepare is not None:
        inp = prepare(inp)
    return Estimate(inputs=inputs, options=options, lowered=inp, result=run(inp))
