"""One kernel of an application, run in any process: :class:`KernelTask` names the kernel by file and
index plus the machine and options — small and picklable — and :func:`run_kernel_task` (a
module-level function, so process pools and Dask can ship it) loads the kernel where it runs
(:func:`teg.trace.application.load_kernel`), lowers, runs and returns a :class:`KernelRow`; an error
of that kernel is recorded in the row, not raised, so one bad kernel does not stop the others.

A :class:`KernelRow` holds the kernel's launch and what its run gave: a :class:`KernelEstimate`
(``teg estimate``) or a :class:`KernelWhatIfs` (``teg whatif``: one :class:`Saving` per mechanism).
Its JSON (:meth:`KernelRow.data`) is its fields in order, the outcome's flattened in, with
``clock_mhz`` once the kernel was lowered and the outcome's fields once it ran.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from teg import UnknownOpcodeWarning, error_line
from teg.engine.options import Options
from teg.trace.application import ApplicationError, KernelRef, file_stamp, load_kernel


@dataclass(frozen=True)
class KernelTask:
    """What one worker needs to estimate one kernel: the kernel, an optional SASS file, the machine
    (table name or YAML path; None: the one the kernel's binary version suggests), the options,
    and the mechanisms to remove (``whatif``: None = a plain estimate; ``()`` = every mechanism
    alone and all together, as ``teg whatif``)."""

    ref: KernelRef
    machine: str | None = None
    options: Options = Options()
    sass: str | None = None
    whatif: tuple[str, ...] | None = None


@dataclass(frozen=True)
class KernelEstimate:
    """A kernel's estimate: cycles, time (µs), warp instructions, IPC, the largest stall cause
    other than ``issue`` (:func:`largest_stall`) and the non-zero stall cycles by cause."""

    cycles: int
    time_us: float | None
    instructions: int
    ipc: float
    top_stall: str
    top_stall_cycles: int
    stalls: dict[str, int]


@dataclass(frozen=True)
class Saving:
    """One mechanism removed from one kernel (:class:`teg.analysis.whatif.WhatIfRow`): its cycles,
    the cycles saved and which schedule gave them."""

    cycles: int
    saved: int
    schedule: str


@dataclass(frozen=True)
class KernelWhatIfs:
    """A kernel's what-ifs: per mechanism (``teg whatif``'s order, ``all`` last) its saving, and
    the baseline's cycles and time (µs)."""

    whatif: dict[str, Saving]
    cycles: int
    time_us: float | None


@dataclass(frozen=True)
class KernelRow:
    """One kernel of an application and what its run gave: the launch facts of its header, the
    machine table (as asked until the kernel is lowered, then the one used), ``error`` (its
    failure as one line, None when it ran), ``warnings`` (unknown opcodes timed as ALU),
    ``clock_mhz`` (once lowered) and the ``outcome`` (None when it failed)."""

    position: int
    id: int
    name: str
    demangled: str | None
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    stream: int
    machine: str | None
    error: str | None = None
    warnings: tuple[str, ...] = ()
    clock_mhz: float | None = None
    outcome: KernelEstimate | KernelWhatIfs | None = field(default=None, repr=False)

    @classmethod
    def of(cls, ref: KernelRef, machine: str | None = None) -> "KernelRow":
        """The row of ``ref`` before it runs."""
        return cls(position=ref.position, id=ref.kernel_id, name=ref.name, demangled=ref.demangled,
                   grid=tuple(ref.grid), block=tuple(ref.block), stream=ref.stream, machine=machine)

    @property
    def cycles(self) -> int | None:
        return self.outcome.cycles if self.outcome is not None else None

    @property
    def time_us(self) -> float | None:
        return self.outcome.time_us if self.outcome is not None else None

    @property
    def estimate(self) -> KernelEstimate | None:
        """The outcome of a plain estimate (None for what-ifs or a failure)."""
        return self.outcome if isinstance(self.outcome, KernelEstimate) else None

    @property
    def whatifs(self) -> dict[str, Saving] | None:
        """The savings of a what-if run (None for a plain estimate or a failure)."""
        return self.outcome.whatif if isinstance(self.outcome, KernelWhatIfs) else None

    def data(self) -> dict:
        """JSON-ready: the fields in order (grid, block and warnings as lists), ``clock_mhz`` only
        once the kernel was lowered, then the outcome's fields."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("clock_mhz", "outcome")}
        out.update(grid=list(self.grid), block=list(self.block), warnings=list(self.warnings))
        if self.clock_mhz is not None:
            out["clock_mhz"] = self.clock_mhz
        if self.outcome is not None:
            out.update(asdict(self.outcome))
        return out


def largest_stall(stalls: dict[str, int]) -> tuple[str, int]:
    """The cause (other than ``issue``) with the most cycles; ``("", 0)`` when none."""
    best = max(((v, k) for k, v in stalls.items() if k != "issue" and v > 0), default=(0, ""))
    return best[1], best[0]


@functools.lru_cache(maxsize=2)
def _programs(sass: str, stamp: str):
    from teg.sass import parse_file

    return parse_file(sass)


def program_for(sass: str, name: str):
    """The function of the SASS file ``sass`` whose mangled or demangled name is ``name``."""
    for p in _programs(sass, file_stamp(Path(sass))):
        if name in (p.name, p.demangled):
            return p
    raise ApplicationError(f"{sass}: no function named {name} (the kernel's name in the trace)")


def kernel_inputs_of(ref: KernelRef, sass: str | None = None, machine: str | None = None):
    """The :class:`~teg.engine.kernel_inputs.KernelInputs` of an application's kernel: the kernel
    loaded (:func:`~teg.trace.application.load_kernel`), its function of the SASS file ``sass``
    when given, and the machine (None: the table the kernel's binary version suggests)."""
    from teg.engine.kernel_inputs import load_inputs

    kt = load_kernel(ref)
    program = program_for(sass, kt.info.name) if sass else None
    return load_inputs(sass=program, trace=kt, machine=machine)


def _run_into(got: dict, task: KernelTask) -> None:
    """Run ``task``, putting into ``got`` the machine and clock once the kernel is lowered, then
    the outcome (a failure keeps what was reached)."""
    from teg.analysis.whatif import whatif
    from teg.engine.run import run
    from teg.engine.runner import lower_kernel

    f = kernel_inputs_of(task.ref, task.sass, task.machine)
    inp = lower_kernel(f, task.options)
    clk = inp.setup.clock_mhz
    got.update(machine=f.machine.name, clock_mhz=clk)
    if task.whatif is not None:
        rows = whatif(inp, task.whatif or None)
        got["outcome"] = KernelWhatIfs(whatif={w.mechanism: Saving(w.cycles, w.saved, w.schedule) for w in rows[1:]},
                                       cycles=rows[0].cycles, time_us=rows[0].cycles / clk if clk else None)
        return
    r = run(inp)
    cause, cyc = largest_stall(r.stalls)
    got["outcome"] = KernelEstimate(cycles=r.cycles, time_us=r.time_us, instructions=r.instructions, ipc=r.ipc,
                                    top_stall=cause, top_stall_cycles=cyc,
                                    stalls={k: v for k, v in r.stalls.items() if v})


def recorded(fill, item) -> tuple[dict, tuple[str, ...]]:
    """``fill(got, item)`` with a fresh dict ``got``: what it filled in, an exception's one line as
    ``got["error"]`` (recorded with the item: every other item still runs), and the distinct
    unknown-opcode warnings it raised, sorted."""
    got: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownOpcodeWarning)
        try:
            fill(got, item)
        except Exception as exc:
            got["error"] = error_line(exc)
    return got, tuple(sorted({str(w.message) for w in caught if issubclass(w.category, UnknownOpcodeWarning)}))


def run_kernel_task(task: KernelTask) -> KernelRow:
    """Estimate one kernel (or its what-ifs) in the calling process (module docstring)."""
    from dataclasses import replace

    got, caught = recorded(_run_into, task)
    return replace(KernelRow.of(task.ref, task.machine), **got, warnings=caught)


def tasks_for(app, machine: str | None = None, options: Options | None = None, sass: str | None = None,
              whatif: tuple[str, ...] | None = None) -> list[KernelTask]:
    """One task per present kernel of ``app`` (:class:`~teg.trace.application.Application`), in
    launch order."""
    opts = options or Options()
    return [KernelTask(ref=k, machine=machine, options=opts, sass=sass, whatif=whatif) for k in app.kernels]


__all__ = ["KernelTask", "KernelRow", "KernelEstimate", "KernelWhatIfs", "Saving", "run_kernel_task", "tasks_for",
           "kernel_inputs_of", "program_for", "largest_stall"]
