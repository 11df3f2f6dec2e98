"""One line on standard error before teg's numba code compiles, nothing when it does not:

    teg: compiling the timing engine once (about 30 s); later runs load it from numba's cache

Mechanism: numba's event API. A dispatcher fires a ``numba:compile`` event only when it really
compiles; a signature found in the on-disk cache (``cache=True``) is loaded without one. A
listener registered once per process (:func:`install`, called when :mod:`teg.engine` or
:mod:`teg.emu` is imported — both import numba anyway) prints the line at the first such event
of a function in each group of teg's jitted modules, so a cold ``teg estimate`` says it once and
a warm one says nothing.

The line is written only when standard error is a terminal (a person is waiting; scripts and
tests that read standard error see nothing); ``TEG_COMPILE_NOTICE=1`` asks for it anyway,
``TEG_COMPILE_NOTICE=0`` never. The seconds are the cold compile times measured on the
development machine (docs/performance.md, "Start-up"); machines differ."""

from __future__ import annotations

import os
import sys

# module prefix → (what compiles, seconds it took cold on the development machine); the first
# matching prefix names the group, one line per group and process
GROUPS: tuple[tuple[str, str, int], ...] = (
    ("teg.engine.", "the timing engine", 30),
    ("teg.memory.", "the timing engine", 30),
    ("teg.trace.join", "the timing engine", 30),
    ("teg.trace.csr", "the timing engine", 30),
    ("teg.emu.", "the SASS emulator", 60),
    ("teg.trace.", "the trace reader", 10),
    ("teg.", "teg's numba code", 10),
)

_state = {"listener": None}


def _group(module: str) -> tuple[str, int] | None:
    for prefix, what, seconds in GROUPS:
        if module.startswith(prefix):
            return what, seconds
    return None


def wanted(stream=None) -> bool:
    """Whether the notice is printed: ``TEG_COMPILE_NOTICE`` (1/0) if set, else whether the
    stream (standard error) is a terminal."""
    env = os.environ.get("TEG_COMPILE_NOTICE")
    if env is not None and env.strip() != "":
        return env.strip() not in ("0", "no", "false", "off")
    stream = stream or sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def notice_line(what: str, seconds: int) -> str:
    return f"teg: compiling {what} once (about {seconds} s); later runs load it from numba's cache"


def install() -> None:
    """Register the compile listener once per process (idempotent)."""
    if _state["listener"] is not None:
        return
    from numba.core import event

    class _Notice(event.Listener):
        """Prints :func:`notice_line` at the first compile event of each group."""

        def __init__(self):
            self.said: set[str] = set()

        def on_start(self, ev) -> None:
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            group = _group(getattr(func, "__module__", "") or "")
            if group is None or group[0] in self.said:
                return
            self.said.add(group[0])
            if wanted():
                print(notice_line(*group), file=sys.stderr, flush=True)

        def on_end(self, ev) -> None:
            pass

    listener = _Notice()
    event.register("numba:compile", listener)
    _state["listener"] = listener
