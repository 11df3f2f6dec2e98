"""What ``teg trace app`` runs: an ELF executable that loads the shared CUDA runtime
(``libcudart.so.13``, ``nvcc -cudart shared``). Everything else is refused before it starts, in one
line that says why and what to do:

* not an ELF executable (a script, a missing file);
* no CUDA runtime: device code in the executable (an ``.nv_fatbin`` section) means the static
  runtime nvcc links by default — rebuild with ``-cudart shared``; none means not a CUDA program;
* the shared runtime of another CUDA version (``libcudart.so.12``);
* the CUDA driver API (``libcuda.so.1``: ``cuModuleLoad``, ``cuLaunchKernel`` …) or NVIDIA's kernel
  libraries (cuBLAS, cuDNN, cuFFT …), whose kernels teg cannot see.

The executable's dynamic section is read with :mod:`struct` (``DT_NEEDED`` entries, string table
``.dynstr``): only the libraries the program names itself.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

from teg import TegError

SHT_DYNAMIC, DT_NEEDED = 6, 1

# libraries whose kernels teg cannot run: soname prefix → what to call them
REFUSED_LIBRARIES = {
    "libcuda.so": "the CUDA driver API (cuModuleLoad, cuLaunchKernel …)",
    "libcublas": "cuBLAS", "libcublasLt": "cuBLASLt", "libcudnn": "cuDNN", "libcufft": "cuFFT",
    "libcusparse": "cuSPARSE", "libcurand": "cuRAND", "libcusolver": "cuSOLVER", "libnpp": "NPP",
    "libnvrtc": "NVRTC (run-time compilation)", "libnvjpeg": "nvJPEG", "libcutensor": "cuTENSOR",
    "libnccl": "NCCL", "libnvJitLink": "nvJitLink",
}
REBUILD = "rebuild it with `nvcc -cudart shared` (CUDA 13)"


class ProgramError(TegError):
    """A program ``teg trace app`` does not run."""


def resolve(program: str) -> Path:
    """``program`` as a path: as given when it names a file, else found on PATH."""
    p = Path(program)
    if os.sep not in program:
        found = shutil.which(program)
        if found and not p.exists():
            p = Path(found)
    if not p.exists():
        raise ProgramError(f"{program}: no such program")
    if not p.is_file() or not os.access(p, os.X_OK):
        raise ProgramError(f"{program}: not an executable file")
    return p


def _elf(path: Path) -> tuple[list[str], set[str]]:
    """``(DT_NEEDED sonames, section names)`` of a 64-bit little-endian ELF file."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:4] != b"\x7fELF":
        raise ProgramError(f"{path}: not an ELF executable (a script or another kind of file): teg trace app runs "
                           f"the CUDA program itself; {REBUILD}")
    if data[4] != 2 or data[5] != 1:
        raise ProgramError(f"{path}: not a 64-bit little-endian ELF executable")
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        secs = [struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize) for i in range(shnum)]
        names_off = secs[shstrndx][4]

        def cstr(off: int) -> str:
            return data[off:data.index(b"\0", off)].decode("latin1")

        names = {cstr(names_off + s[0]) for s in secs}
        needed = []
        for s in secs:
            if s[1] != SHT_DYNAMIC:
                continue
            strtab = secs[s[6]][4]
            for i in range(s[5] // 16):
                tag, val = struct.unpack_from("<qQ", data, s[4] + i * 16)
                if tag == DT_NEEDED:
                    needed.append(cstr(strtab + val))
    except (struct.error, IndexError, ValueError) as exc:
        raise ProgramError(f"{path}: damaged ELF file ({exc})") from None
    return needed, names


def check(path: Path) -> None:
    """Refuse (:class:`ProgramError`) a program teg's runtime cannot serve; see the module docstring."""
    needed, sections = _elf(path)
    for lib in needed:
        for prefix, what in REFUSED_LIBRARIES.items():
            if lib.startswith(prefix + ".") or lib == prefix or (prefix != "libcuda.so" and lib.startswith(prefix)):
                raise ProgramError(f"{path}: uses {what} ({lib}), which teg does not emulate: teg runs the kernels "
                                   "of programs that launch their own through the CUDA runtime API")
    runtimes = [lib for lib in needed if lib.startswith("libcudart.so")]
    if not runtimes:
        if ".nv_fatbin" in sections:
            raise ProgramError(f"{path}: linked with the static CUDA runtime (nvcc's default): {REBUILD}")
        raise ProgramError(f"{path}: not a CUDA program (it loads no CUDA runtime and holds no device code); "
                           f"a CUDA program runs under teg once built with `nvcc -cudart shared`")
    if "libcudart.so.13" not in runtimes:
        raise ProgramError(f"{path}: built against {runtimes[0]}; teg provides libcudart.so.13: {REBUILD}")
