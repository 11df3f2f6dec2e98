"""Find the CUDA command-line tools teg runs (``cuobjdump``, ``nvdisasm``, ``nvcc``).

Search order: ``PATH``; ``$CUDA_HOME/bin`` and ``$CUDA_PATH/bin``; ``/usr/local/cuda/bin``; the
``bin/`` folders of NVIDIA's pip wheels (``site-packages/nvidia/cu13/bin``, ``nvidia/cuda_nvcc/bin``
…, installed by ``pip install teg[cuda]`` or ``teg[test]``), found through the ``nvidia`` namespace
package (``importlib.util.find_spec``) and through the wheels' own file lists
(``importlib.metadata``). A missing tool raises :class:`ToolNotFoundError` that
says where teg looked and how to install it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from teg.sass.errors import ToolNotFoundError

INSTALL_HINT = {
    "cuobjdump": "install it with `pip install teg[cuda]` (nvidia-cuda-cuobjdump) or set CUDA_HOME",
    "nvdisasm": "install it with `pip install teg[cuda]` (nvidia-cuda-nvdisasm) or set CUDA_HOME",
    "nvcc": "install the CUDA toolkit or `pip install nvidia-cuda-nvcc`, or set CUDA_HOME",
}


def wheel_bin_dirs() -> list[Path]:
    """``bin`` folders inside the installed ``nvidia`` namespace package (pip CUDA wheels)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    dirs: list[Path] = []
    for root in spec.submodule_search_locations:
        dirs.extend(sorted(p for p in Path(root).glob("*/bin") if p.is_dir()))
    return dirs


def wheel_record_dirs(name: str) -> list[Path]:
    """Folders of the files named ``bin/<name>`` that installed distributions list in their
    ``RECORD`` (``importlib.metadata``): finds the wheel's tool wherever the ``nvidia`` package
    lives, even when another ``nvidia`` package on ``sys.path`` hides the namespace."""
    from importlib import metadata

    dirs: list[Path] = []
    for dist in metadata.distributions():
        if not str(dist.metadata.get("Name") or "").lower().startswith("nvidia-"):
            continue
        for f in dist.files or ():
            if f.name == name and f.parent.name == "bin":
                d = Path(dist.locate_file(f)).parent
                if d not in dirs:
                    dirs.append(d)
    return dirs


def candidate_dirs(name: str = "") -> list[Path]:
    """Folders searched after PATH, in order (with ``name``: also the wheels' recorded folders)."""
    dirs = [Path(os.environ[v]) / "bin" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    dirs.append(Path("/usr/local/cuda/bin"))
    dirs.extend(wheel_bin_dirs())
    if name:
        dirs.extend(d for d in wheel_record_dirs(name) if d not in dirs)
    return dirs


def find_tool(name: str) -> Path:
    """Path of the CUDA tool ``name``; raises :class:`ToolNotFoundError` when none is found."""
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    for d in candidate_dirs():         # the wheels' file lists (slow to read: 0.1 s) only if needed
        exe = d / name
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    dirs = candidate_dirs(name)
    for d in dirs:
        exe = d / name
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    looked = ", ".join(["PATH", *(str(d) for d in dirs)])
    blocked = [str(d / name) for d in dirs if (d / name).is_file()]
    if blocked:
        raise ToolNotFoundError(f"{name} found but not executable: {blocked[0]} (chmod +x it)")
    hint = INSTALL_HINT.get(name, "install the CUDA toolkit or set CUDA_HOME")
    raise ToolNotFoundError(f"{name} not found (looked in {looked}); {hint}")


def run_tool(name: str, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    """Run CUDA tool ``name`` with ``args``; returns the completed process (text mode, not checked)."""
    exe = find_tool(name)
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, check=False)
