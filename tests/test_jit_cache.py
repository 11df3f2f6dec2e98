"""numba keys a cached function by its own source file (an entry whose callee module alone was edited
keeps its old machine code); teg.jit.stamp_sources makes the cache of the engine's entries go stale
when a module whose code is compiled into them changes as well."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ENTRY = """
from numba import njit

import callee
from teg.jit import stamp_sources


@njit(cache=True)
def entry():
    return callee.value()


stamp_sources(entry, [callee])
"""


def _call(folder: Path) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]),
               NUMBA_CACHE_DIR=str(folder / "cache"))
    return subprocess.run([sys.executable, "-c", "import entry; print(entry.entry())"], env=env, cwd=folder,
                          capture_output=True, text=True, check=True).stdout.strip()


def _setup(folder: Path) -> Path:
    folder.mkdir()
    (folder / "entry.py").write_text(ENTRY)
    callee = folder / "callee.py"
    callee.write_text("from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return 1\n")
    return callee


def _edit(callee: Path) -> None:
    before = callee.stat()
    callee.write_text(callee.read_text().replace("return 1", "return 22"))
    os.utime(callee, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))   # a later time, as an editor gives


def test_an_edited_callee_module_recompiles_the_stamped_entry(tmp_path):
    callee = _setup(tmp_path / "stamped")
    assert _call(tmp_path / "stamped") == "1"
    _edit(callee)
    assert _call(tmp_path / "stamped") == "22"

