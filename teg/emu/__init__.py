"""teg.emu — a functional emulator of NVIDIA SASS (sm_75…sm_90): runs a compiled kernel on the CPU
for one launch and writes the trace the NVBit tracer would record, plus the output buffers.

    >>> from teg.emu import run
    >>> r = run("saxpy.cu", "saxpy", grid=4, block=256, args=["n=1024", "a=2.0", "x=rand:float32:1024",
    ...         "y=zeros:float32:1024"], arch="sm_90")
    >>> r.trace, r.outputs["y"]

See docs/emulator.md for the execution model (divergence, memory spaces, trace conventions).
"""

from teg.emu.errors import EmulatorError, MemoryFault, UnsupportedInstruction
from teg.emu.launch import EmulationResult, emulate, load_kernel, run
from teg.jitnotice import install as _install_compile_notice

_install_compile_notice()     # one line on stderr before numba compiles (teg/jitnotice.py)

__all__ = ["EmulationResult", "EmulatorError", "MemoryFault", "UnsupportedInstruction", "emulate", "load_kernel", "run"]
