"""Kernel arguments: parse ``--arg`` specifications and lay the values out in constant bank 0.

Specification grammar (``NAME=VALUE``; arguments are positional, ``NAME`` labels the buffer in the
outputs):

* scalars: ``n=1024`` (integer; its width follows the parameter's size), ``a=2.5`` (float32 for a
  4-byte parameter, float64 for 8 bytes), or typed ``a=float32:2.5``, ``k=int64:-3``, ``h=uint32:0x3c003c00``;
* buffers (pointer parameters): ``A=data.npy``, ``A=rand:float32:1024`` (uniform in [0, 1) for floats,
  integers in [0, 100)), ``zeros:DTYPE:SHAPE``, ``ones:DTYPE:SHAPE``, ``arange:DTYPE:SHAPE``; SHAPE is
  ``N`` or ``NxM…``; an optional ``:SEED`` ends a ``rand`` spec (default 0).

Python callers may pass numpy arrays (buffers), numpy scalars, ints or floats instead of strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from teg.emu.errors import EmulatorError
from teg.trace.npyread import NPY_ERRORS

_SCALAR_TYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                 "float32", "float64"}
_GENERATORS = ("rand", "zeros", "ones", "arange")
_FLOATISH = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+[eE][+-]?\d+|\d+\.\d*[eE][+-]?\d+|inf|nan)$", re.I)


@dataclass
class Arg:
    """One parsed argument: a buffer (``array`` set) or a scalar (``scalar`` = raw bytes)."""

    name: str
    array: np.ndarray | None = None
    scalar: bytes | None = None


def _shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        raise EmulatorError(f"bad shape {text!r} (use N or NxM)") from None
    if not dims or any(d < 0 for d in dims):
        raise EmulatorError(f"bad shape {text!r}")
    return dims


def generate(spec: str) -> np.ndarray:
    """``rand:float32:1024[:seed]`` / ``zeros:…`` / ``ones:…`` / ``arange:…`` → array."""
    parts = spec.split(":")
    if len(parts) < 3 or parts[0] not in _GENERATORS:
        raise EmulatorError(f"bad buffer spec {spec!r} (GEN:DTYPE:SHAPE with GEN in {', '.join(_GENERATORS)})")
    gen, dtype_s, shape_s = parts[:3]
    try:
        dtype = np.dtype(dtype_s)
    except TypeError:
        raise EmulatorError(f"bad dtype {dtype_s!r} in {spec!r}") from None
    shape = _shape(shape_s)
    n = int(np.prod(shape))
    if gen == "zeros":
        return np.zeros(shape, dtype)
    if gen == "ones":
        return np.ones(shape, dtype)
    if gen == "arange":
        return np.arange(n).astype(dtype).reshape(shape)
    seed = int(parts[3]) if len(parts) > 3 else 0
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        return rng.random(n).astype(dtype).reshape(shape)
    return rng.integers(0, 100, n).astype(dtype).reshape(shape)


def _scalar_bytes(value, size: int, name: str) -> bytes:
    if isinstance(value, np.generic):
        raw = value.tobytes()
    elif isinstance(value, bool) or isinstance(value, (int, np.integer)):
        raw = int(value).to_bytes(8, "little", signed=value < 0)[:size] if size <= 8 else b""
    elif isinstance(value, float):
        raw = np.array(value, {2: np.float16, 4: np.float32, 8: np.float64}.get(size, np.float64)).tobytes()
    else:
        raise EmulatorError(f"argument {name}: cannot pass {type(value).__name__} by value")
    if len(raw) != size:
        raise EmulatorError(f"argument {name}: {len(raw)} bytes given, the kernel parameter has {size}")
    return raw


def parse_value(text: str, size: int, name: str):
    """A string VALUE → numpy array (buffer) or scalar bytes for a parameter of ``size`` bytes."""
    t = text.strip()
    if t.endswith(".npy"):
        p = Path(t)
        if not p.exists():
            raise EmulatorError(f"argument {name}: {t}: no such file")
        from teg.textfile import TextFileError, check_regular

        try:
            check_regular(p, 1 << 40, ".npy file")           # a pipe or a device would be read forever
        except (TextFileError, IsADirectoryError) as exc:
            raise EmulatorError(f"argument {name}: {exc}") from None
        try:
            arr = np.load(p, allow_pickle=False)
        except NPY_ERRORS as exc:
            raise EmulatorError(f"argument {name}: {t}: not a readable .npy file "
                                f"({exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
            raise EmulatorError(f"argument {name}: {t}: expected one numeric array")
        return arr
    head = t.split(":", 1)[0]
    if head in _GENERATORS:
        return generate(t)
    if head in _SCALAR_TYPES:
        val = t.split(":", 1)[1]
        try:
            num = float(val) if np.dtype(head).kind == "f" else int(val, 0)
            return _scalar_bytes(np.array(num, head)[()], size, name)
        except (ValueError, OverflowError):
            raise EmulatorError(f"argument {name}: bad {head} value {val!r}") from None
    try:
        if _FLOATISH.match(t):
            return _scalar_bytes(float(t), size, name)
        return _scalar_bytes(int(t, 0), size, name)
    except ValueError:
        raise EmulatorError(f"argument {name}: cannot read {t!r} (a number, TYPE:VALUE, a .npy file or "
                            f"GEN:DTYPE:SHAPE)") from None


def parse_arg(spec, size: int, position: int) -> Arg:
    """One argument (string spec or Python value) for a parameter of ``size`` bytes."""
    name = f"arg{position}"
    value = spec
    if isinstance(spec, str):
        if "=" in spec:
            name, value = spec.split("=", 1)
            name = name.strip() or f"arg{position}"
        value = parse_value(value, size, name)
    elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        name, value = spec
        if isinstance(value, str):
            value = parse_value(value, size, name)
    if isinstance(value, np.ndarray):
        if size != 8:
            raise EmulatorError(f"argument {name}: a buffer needs a pointer parameter (8 bytes), this one has {size}")
        return Arg(name, array=value)
    if isinstance(value, bytes):
        return Arg(name, scalar=value)
    return Arg(name, scalar=_scalar_bytes(value, size, name))
