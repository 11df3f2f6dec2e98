"""Device memory of a program run by ``teg trace app``: one sparse shared file (``memfd``) that the
program maps (its runtime, :file:`cudart.c`) and teg maps (a numpy view), so a device address in the
program is an address the emulator reads and writes directly.

Allocations (``cudaMalloc``, ``cudaMallocManaged``, ``cudaMallocHost``, the modules' variables) are
made here, in the parent: first fit in a sorted free list, 256-byte aligned, each followed by a
256-byte gap so an access just past an allocation lands in no allocation and faults. A freed range
of at least :data:`RELEASE_BYTES` gives its pages back to the system (``fallocate`` punching a hole).
The file is sized (``ftruncate``) but holds pages only where the program wrote, so its size is a
limit, not a cost.
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import mmap
import os
from dataclasses import dataclass

import numpy as np

ALIGN = 256
GAP = 256
RELEASE_BYTES = 1 << 20
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
KIND_NAMES = {0: "cudaMalloc", 1: "cudaMallocHost", 2: "cudaMallocManaged", 3: "variables"}


def default_size() -> int:
    """The device memory a program gets: the machine's RAM (``MemTotal``), at most 64 GiB."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return min(int(line.split()[1]) * 1024 // (1 << 30) * (1 << 30) or (1 << 30), 64 << 30)
    except OSError:
        pass
    return 16 << 30


@dataclass
class Allocation:
    offset: int
    size: int
    kind: int
    label: str


class DeviceHeap:
    """The shared file, its mapping in this process, and the allocations in it."""

    def __init__(self, size: int):
        self.size = int(size)
        self.fd = os.memfd_create("teg-device-memory", 0)       # inherited by the program (no CLOEXEC)
        os.ftruncate(self.fd, self.size)
        self.map = mmap.mmap(self.fd, self.size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.bytes = np.frombuffer(self.map, np.uint8)
        self.base = 0                     # the program's address of byte 0 (HELLO tells it)
        self.allocs: dict[int, Allocation] = {}
        self.starts: list[int] = []       # sorted offsets of the allocations
        self.free: list[tuple[int, int]] = [(0, self.size)]     # sorted (offset, size)
        self.used = 0
        self._ranges = None

    # ---- allocation --------------------------------------------------------------------------

    def alloc(self, size: int, kind: int, label: str = "") -> int | None:
        """Offset of a new allocation of ``size`` bytes, or None when no free range is large enough."""
        need = (max(int(size), 1) + ALIGN - 1) // ALIGN * ALIGN + GAP
        for i, (off, n) in enumerate(self.free):
            if n >= need:
                if n == need:
                    del self.free[i]
                else:
                    self.free[i] = (off + need, n - need)
                a = Allocation(off, int(size), kind, label or f"{KIND_NAMES.get(kind, 'allocation')} of {int(size):,} bytes")
                self.allocs[off] = a
                bisect.insort(self.starts, off)
                self.used += need
                self._ranges = None
                return off
        return None

    def release(self, offset: int) -> Allocation | None:
        """Free the allocation starting at ``offset`` (None when there is none)."""
        a = self.allocs.pop(offset, None)
        if a is None:
            return None
        self.starts.remove(offset)
        need = (max(a.size, 1) + ALIGN - 1) // ALIGN * ALIGN + GAP
        self.used -= need
        self._ranges = None
        i = bisect.bisect_left(self.free, (offset, 0))
        lo, n = offset, need
        if i < len(self.free) and self.free[i][0] == lo + n:          # merge with the range after
            n += self.free.pop(i)[1]
        if i > 0 and self.free[i - 1][0] + self.free[i - 1][1] == lo:  # and the one before
            lo, n = self.free[i - 1][0], self.free[i - 1][1] + n
            self.free[i - 1] = (lo, n)
        else:
            self.free.insert(i, (lo, n))
        if need >= RELEASE_BYTES:
            _punch(self.fd, offset, need)
        return a

    def reset(self, keep_kind: int = 3) -> None:
        """Free every allocation but the modules' variables (``cudaDeviceReset``)."""
        for off in [o for o, a in self.allocs.items() if a.kind != keep_kind]:
            self.release(off)

    # ---- lookups -----------------------------------------------------------------------------

    def find(self, address: int) -> Allocation | None:
        """The allocation holding the program's ``address``."""
        off = address - self.base
        i = bisect.bisect_right(self.starts, off) - 1
        if i >= 0:
            a = self.allocs[self.starts[i]]
            if a.offset <= off < a.offset + max(a.size, 1):
                return a
        return None

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` for the emulator: ``lo[0] = hi[0]`` the base, then each allocation's
        ``[start, end)`` in the program's addresses, ascending."""
        if self._ranges is None:
            lo = [self.base] + [self.base + o for o in self.starts]
            hi = [self.base] + [self.base + o + self.allocs[o].size for o in self.starts]
            self._ranges = (np.array(lo, np.int64), np.array(hi, np.int64))
        return self._ranges

    def describe(self, address: int) -> str:
        """The allocations around ``address``: the one below it and the one above, for a fault."""
        off = address - self.base
        i = bisect.bisect_right(self.starts, off)
        near = [self.allocs[self.starts[j]] for j in (i - 1, i) if 0 <= j < len(self.starts)]
        if not near:
            return "no allocation"
        text = ", ".join(f"{a.label} at [{self.base + a.offset:#x}, {self.base + a.offset + a.size:#x})" for a in near)
        return f"nearest allocations: {text}"

    def close(self) -> None:
        self.bytes = None
        try:
            self.map.close()
        except BufferError:       # a numpy view still alive elsewhere: the mapping goes with it
            pass
        os.close(self.fd)


def _punch(fd: int, offset: int, length: int) -> None:
    """Give the pages of ``[offset, offset + length)`` back (they read as zero afterwards)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.fallocate(ctypes.c_int(fd), ctypes.c_int(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE),
                   ctypes.c_long(offset), ctypes.c_long(length))
