"""The first-compile notice: one line on standard error before teg's numba code compiles (numba's
``numba:compile`` event, fired only on a cache miss), nothing once numba's on-disk cache holds it."""

from __future__ import annotations

import os
import subprocess
import sys

from teg import jitnotice

# two jitted functions of the timing engine's group, quick to compile
SCRIPT = """
import teg.engine
from teg.engine.records import _clamp
from teg.memory.cache import cache_shape
print(_clamp(5.0, 0.0, 2.0), cache_shape(64, 4, 128, 32)[2])
"""


def run_script(cache_dir, notice):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), TEG_COMPILE_NOTICE=notice)
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)


def test_one_line_when_compiling_none_when_cached(tmp_path):
    cold = run_script(tmp_path, "1")
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.split() == ["2.0", "7"]
    assert cold.stderr.splitlines() == [jitnotice.notice_line("the timing engine", 30)]
    warm = run_script(tmp_path, "1")                  # same cache folder: loaded, not compiled
    assert warm.returncode == 0 and warm.stdout == cold.stdout
    assert warm.stderr == ""


def test_silenced(tmp_path):
    quiet = run_script(tmp_path, "0")
    assert quiet.returncode == 0 and quiet.stderr == ""


class Stream:
    def __init__(self, tty):
        self.tty = tty

    def isatty(self):
        return self.tty


def test_terminal_decides_unless_told(monkeypatch):
    monkeypatch.delenv("TEG_COMPILE_NOTICE", raising=False)
    assert jitnotice.wanted(Stream(True)) and not jitnotice.wanted(Stream(False))
    monkeypatch.setenv("TEG_COMPILE_NOTICE", "0")
    assert not jitnotice.wanted(Stream(True))
    monkeypatch.setenv("TEG_COMPILE_NOTICE", "1")
    assert jitnotice.wanted(Stream(False))


def test_groups():
    assert jitnotice._group("teg.engine.core") == ("the timing engine", 30)
    assert jitnotice._group("teg.trace.join") == ("the timing engine", 30)
    assert jitnotice._group("teg.trace.scanner")[0] == "the trace reader"
    assert jitnotice._group("teg.emu.interp")[0] == "the SASS emulator"
    assert jitnotice._group("numpy.linalg") is None
