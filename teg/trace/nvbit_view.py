"""The registers the NVBit/Accel-Sim tracer records for a SASS instruction.

The tracer (accel-sim-framework ``util/tracer_nvbit/tracer_tool/tracer_tool.cu``: "we ignore
constant, TEX, predicates and unified registers. We only report vector registers") prints, per
dynamic instruction:

* **destination**: operand 0 when it is a general register (``R<n>``; ``RZ`` as ``R255``), else
  none — so at most one, and none for an instruction whose first operand is a predicate
  (``ISETP P0, …``) or an address (stores);
* **sources**: every other general-register operand, and the base register of every memory
  operand (``[R2.64+0x10]`` → ``R2``), in operand order; only the first register of a wide
  operand (``R2.64`` → ``R2``). Accel-Sim's trace parser accepts at most four
  (``MAX_SRC``, ``trace_parser.h``), so at most four are kept.

Predicates, uniform registers, constants and immediates are left out, as are the second and later
registers of 64- and 128-bit values. teg keeps all of them in its own traces
(:mod:`teg.trace.model`); this view is what :func:`teg.trace.write_accelsim` writes so Accel-Sim
can read teg's traces. An emulated trace (:mod:`teg.emu`) carries the view per static instruction
as the kernel extras :data:`EXTRA_PC` / :data:`EXTRA_REGS`.
"""

from __future__ import annotations

import numpy as np

from teg.sass.program import Instruction, Program

MAX_SRC = 4                  # Accel-Sim trace_parser.h MAX_SRC
RZ_ID = 255                  # RZ as the tracer prints it (R255); -1 in teg's flat register space
EXTRA_PC = "nvbit_pc"        # int64 [S]: instruction addresses, sorted
EXTRA_REGS = "nvbit_regs"    # int16 [S, 1 + MAX_SRC]: destination, then sources; -1 = none


def _gpr(op) -> int | None:
    """The general register an operand names (RZ → 255), None for any other operand."""
    if op.kind == "reg":
        name = op.text.lstrip("-~!|")
        if not name.startswith("R"):
            return None                       # UR…: uniform datapath
        return op.reg if 0 <= op.reg < RZ_ID else RZ_ID
    if op.kind == "mem" and 0 <= op.reg < RZ_ID:
        return op.reg                         # the address register ([R2.64+0x10] → R2); A<n> (GT200) is not one
    return None


def instruction_registers(ins: Instruction) -> tuple[int, tuple[int, ...]]:
    """(destination or -1, sources) the tracer prints for ``ins``."""
    dst = -1
    src: list[int] = []
    for k, op in enumerate(ins.operands):
        reg = _gpr(op)
        if reg is None:
            continue
        if k == 0 and op.kind == "reg":
            dst = reg
        elif len(src) < MAX_SRC:
            src.append(reg)
    return dst, tuple(src)


def program_table(program: Program) -> tuple[np.ndarray, np.ndarray]:
    """(addresses, registers) of every instruction of ``program``, sorted by address: the kernel
    extras :data:`EXTRA_PC` and :data:`EXTRA_REGS`."""
    ins = sorted(program.instructions, key=lambda i: i.address)
    pcs = np.array([i.address for i in ins], np.int64)
    regs = np.full((len(ins), 1 + MAX_SRC), -1, np.int16)
    for row, i in enumerate(ins):
        dst, src = instruction_registers(i)
        regs[row, 0] = dst
        regs[row, 1:1 + len(src)] = src
    return pcs, regs
