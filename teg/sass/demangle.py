"""Demangle C++ kernel names with ``c++filt`` (binutils) when it is on PATH; teg carries no demangler
of its own. All names go to one ``c++filt`` process, one name per line. :func:`short_name` shortens a
demangled name for a table."""

from __future__ import annotations

import re
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


def short_name(name: str, width: int = 60) -> str:
    """A demangled C++ name shortened for a table: no return type, no argument lists, no
    namespaces, lambdas and ``operator()`` scopes dropped, cut to ``width`` characters
    (``void at::native::reduce_kernel<512, 1, …>(…)`` → ``reduce_kernel<512, 1, …``)."""
    s = re.sub(r"^(void|static|__global__)\s+", "", name.strip())
    s = _until_stable(s, r"::(\{lambda\([^()]*\)#\d+\}|operator\(\)\(\)( const)?)")
    s = _until_stable(s, r"\([^()]*\)")
    s = re.sub(r"\b\w+::", "", s)
    s = re.sub(r"\s*\bconst\b", "", s)
    s = re.sub(r"\s+>", ">", s).strip() or name
    return s if len(s) <= width else s[: width - 1] + "…"


def _until_stable(s: str, pattern: str) -> str:
    """Delete ``pattern`` repeatedly until nothing matches (nested groups go inside out)."""
    prev = None
    while prev != s:
        prev, s = s, re.sub(pattern, "", s)
    return s
