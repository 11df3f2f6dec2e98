"""teg.machine — machine tables (``isa_tables/*.yaml``) loaded, validated and resolved into
:class:`Machine` (functional units, latency classes, memory system, opcode classification).

Public API: :func:`load`, :func:`available`, :func:`for_arch`, :class:`MachineTableError`,
:func:`c_mem` (TEG §3.2.4), and the dataclasses of :mod:`teg.machine.model`.
"""

from teg.machine.formulas import c_mem, c_mem_from, c_mem_slots
from teg.machine.loader import MachineTableError, available, for_arch, load, resolve
from teg.machine.model import (KINDS, SPACES, Cache, GlobalMemory, Latency, Limits, Machine, OpInfo,
                               SharedMemory, Unit)

__all__ = [
    "load", "available", "for_arch", "resolve", "MachineTableError", "c_mem", "c_mem_from", "c_mem_slots",
    "Machine", "OpInfo", "Unit", "Latency", "Cache", "SharedMemory", "GlobalMemory", "Limits", "KINDS", "SPACES",
]
