"""The fatbinary a CUDA program registers (``__cudaRegisterFatBinary``): which SASS and PTX it holds,
and the cubin teg runs.

Layout (as nvcc 13 writes it): a 16-byte header — u32 magic ``0xBA55ED50``, u16 version, u16
header size, u64 size of what follows — then entries, each a header of its own size followed by its
payload: u16 kind (1 PTX, 2 ELF = SASS cubin) at 0x00, u32 header size at 0x04, u64 payload size at
0x08, u32 target SM at 0x1c (75 for sm_75 / compute_75), u64 flags at 0x28 (0x2000 or 0x8000: the
payload is compressed — nvcc compresses PTX, and cubins with ``-compress-mode``), u64 uncompressed
size at 0x38. A compressed cubin is extracted with ``cuobjdump -xelf all`` (which inflates it);
an uncompressed one is the payload itself.
"""

from __future__ import annotations

import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from teg.emu.errors import EmulatorError

MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
COMPRESSED = 0x2000 | 0x8000


@dataclass(frozen=True)
class Entry:
    kind: int
    sm: int
    compressed: bool
    offset: int          # payload's offset in the fatbinary
    size: int

    @property
    def label(self) -> str:
        return f"{'sm' if self.kind == KIND_ELF else 'compute'}_{self.sm}"


def entries(fb: bytes, where: str) -> list[Entry]:
    """The entries of one fatbinary (an :class:`EmulatorError` naming ``where`` when damaged)."""
    if len(fb) < 16 or struct.unpack_from("<I", fb)[0] != MAGIC:
        raise EmulatorError(f"{where}: not a CUDA fatbinary (magic {fb[:4].hex() or 'missing'})")
    _, _, hsize, fsize = struct.unpack_from("<IHHQ", fb)
    end = hsize + fsize
    if end > len(fb):
        raise EmulatorError(f"{where}: damaged fatbinary ({end} bytes announced, {len(fb)} given)")
    out, pos = [], hsize
    while pos + 0x40 <= end:
        kind, _, ehsize, psize = struct.unpack_from("<HHIQ", fb, pos)
        (sm,) = struct.unpack_from("<I", fb, pos + 0x1C)
        (flags,) = struct.unpack_from("<Q", fb, pos + 0x28)
        if ehsize < 0x40 or pos + ehsize + psize > end:
            raise EmulatorError(f"{where}: damaged fatbinary entry at byte {pos}")
        if kind in (KIND_PTX, KIND_ELF):
            out.append(Entry(kind, sm, bool(flags & COMPRESSED), pos + ehsize, psize))
        pos += ehsize + psize
    return out


def choose(found: list[Entry], target: int | None) -> Entry | None:
    """The SASS to run: for ``target`` None the newest; else the cubin for ``target`` itself, or the
    newest of the same major version not newer than it (what a GPU of that version runs); None when
    no SASS fits (teg has no PTX compiler)."""
    sass = [e for e in found if e.kind == KIND_ELF]
    if target is None:
        return max(sass, key=lambda e: e.sm, default=None)
    fits = [e for e in sass if e.sm // 10 == target // 10 and e.sm <= target]
    return max(fits, key=lambda e: e.sm, default=None)


def describe(found: list[Entry]) -> str:
    return ", ".join(e.label for e in found) or "no device code"


def cubin(fb: bytes, entry: Entry, where: str) -> bytes:
    """The cubin bytes of ``entry`` (inflated by ``cuobjdump -xelf all`` when compressed)."""
    if not entry.compressed:
        return fb[entry.offset:entry.offset + entry.size]
    from teg.sass.binaries import find_tool

    index = [e for e in entries(fb, where) if e.kind == KIND_ELF].index(entry) + 1
    with tempfile.TemporaryDirectory(prefix="teg-fatbin-") as tmp:
        (Path(tmp) / "m.fatbin").write_bytes(fb)
        proc = subprocess.run([str(find_tool("cuobjdump")), "-xelf", "all", "m.fatbin"], cwd=tmp,
                              capture_output=True, text=True, timeout=300)
        got = sorted(Path(tmp).glob(f"m.{index}.sm_{entry.sm}*.cubin"))
        if proc.returncode != 0 or not got:
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise EmulatorError(f"{where}: cuobjdump could not extract the compressed {entry.label} cubin"
                                f"{': ' + msg[0] if msg else ''}")
        return got[0].read_bytes()
