"""Demangle C++ kernel names with ``c++filt`` (binutils) when it is on PATH; teg carries no demangler
of its own. All names go to one ``c++filt`` process, one name per line."""

from __future__ import annotations

import shutil
import subprocess


def demangle_all(names: list[str]) -> dict[str, str | None]:
    """Map each Itanium-mangled name (``_Z…``) to its demangled form; other names, and every name
    when ``c++filt`` is missing or fails, map to None."""
    mangled = sorted({n for n in names if n.startswith("_Z")})
    out: dict[str, str | None] = {n: None for n in names}
    tool = shutil.which("c++filt")
    if not mangled or tool is None:
        return out
    try:
        proc = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return out
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(mangled):
        return out
    for name, plain in zip(mangled, lines):
        out[name] = plain if plain != name else None
    return out
