"""The inputs of one kernel: the user's ``--sass FILE``, ``--trace PATH``, ``--kernel NAME`` and
``--machine NAME|FILE.yaml`` (paths or objects) resolved into a Program, a KernelTrace and a
Machine (:class:`KernelInputs`, :func:`load_inputs`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from teg import TegError

if TYPE_CHECKING:
    from teg.machine import Machine
    from teg.sass import Program
    from teg.trace import KernelTrace


class InputError(TegError):
    """Inputs that do not fit together (no such kernel, no machine to suggest …)."""


@dataclass
class KernelInputs:
    """One kernel's SASS and/or trace and the machine to time it on (with the paths they came from)."""

    program: Program | None
    kernel_trace: KernelTrace | None
    machine: Machine
    sass_path: str | None = None
    trace_path: str | None = None


def _pick_program(programs, name: str | None, source: str):
    if not programs:
        raise InputError(f"{source}: no kernel (Function) found in the SASS")
    if name is None:
        if len(programs) == 1:
            return programs[0]
        names = ", ".join(p.name for p in programs)
        raise InputError(f"{source}: {len(programs)} kernels ({names}); choose one with --kernel")
    exact = [p for p in programs if name in (p.name, p.demangled)]
    if exact:
        return exact[0]
    part = [p for p in programs if name in p.name or (p.demangled and name in p.demangled)]
    if len(part) == 1:
        return part[0]
    if not part:
        raise InputError(f"{source}: no kernel matching {name!r} (have: {', '.join(p.name for p in programs)})")
    raise InputError(f"{source}: {name!r} matches several kernels: {', '.join(p.name for p in part)}")


def load_inputs(sass=None, trace=None, machine=None, kernel: str | None = None) -> KernelInputs:
    """``sass``: path or :class:`~teg.sass.Program`; ``trace``: path, :class:`~teg.trace.Trace` or
    :class:`~teg.trace.KernelTrace`; ``machine``: table name, YAML path or
    :class:`~teg.machine.Machine` (default: the table the trace's binary version or the SASS
    target suggests)."""
    from teg import machine as tm

    if sass is None and trace is None:
        raise InputError("nothing to estimate: give --sass FILE and/or --trace PATH")
    kt = None
    trace_path = None
    if trace is not None:
        from teg.trace import KernelTrace, Trace
        from teg.trace import load as load_trace
        if isinstance(trace, KernelTrace):
            kt = trace
        else:
            tr = trace if isinstance(trace, Trace) else load_trace(trace)
            trace_path = None if isinstance(trace, Trace) else os.fspath(trace)
            kt = tr.kernel(kernel)
    program = None
    sass_path = None
    if sass is not None:
        from teg.sass import Program, parse_file
        if isinstance(sass, Program):
            program = sass
        else:
            sass_path = os.fspath(sass)
            want = kernel if kernel is not None else (kt.info.name if kt is not None else None)
            programs = parse_file(sass_path)
            if kernel is None and kt is not None:
                matches = [p for p in programs if p.name == kt.info.name or (p.demangled and p.demangled == kt.info.name)]
                program = matches[0] if matches else _pick_program(programs, want if len(programs) > 1 else None, sass_path)
            else:
                program = _pick_program(programs, want, sass_path)
    if machine is None:
        sm = None
        if kt is not None and kt.info.binary_version:
            sm = kt.info.binary_version
        elif program is not None and program.sm:
            sm = program.sm
        if sm is None:
            raise InputError("no machine given and none can be suggested (no binary version in the trace, no "
                             "SASS target); pass --machine NAME")
        machine = tm.for_arch(sm)
    if not isinstance(machine, tm.Machine):
        machine = tm.load(machine)
    return KernelInputs(program=program, kernel_trace=kt, machine=machine, sass_path=sass_path, trace_path=trace_path)
