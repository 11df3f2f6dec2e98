"""The emulated device address space: buffers placed in one heap at a fake device base address,
each 256-byte aligned with a 256-byte gap after it, so that an access outside every buffer (off the
end included) is reported instead of landing in a neighbour."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DEVICE_BASE = 0x7F0000000000
ALIGN = 256


@dataclass
class Buffer:
    name: str
    address: int
    array: np.ndarray          # the host copy (shape and dtype the user gave)

    @property
    def nbytes(self) -> int:
        return int(self.array.nbytes)


@dataclass
class DeviceMemory:
    """Buffers of one launch; :meth:`heap` packs them into the byte array the interpreter reads."""

    buffers: list[Buffer] = field(default_factory=list)
    _next: int = DEVICE_BASE

    def alloc(self, name: str, array: np.ndarray) -> Buffer:
        arr = np.ascontiguousarray(array)
        buf = Buffer(name, self._next, arr)
        self.buffers.append(buf)
        size = max(arr.nbytes, 1)
        self._next += (size + ALIGN - 1) // ALIGN * ALIGN + ALIGN
        return buf

    def heap(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(heap bytes, lo, hi)``: the heap starts at ``lo[0]``; buffer ``i`` spans ``lo[i]…hi[i]``.
        Always holds one allocation so the interpreter's arrays are never empty."""
        size = max(self._next - DEVICE_BASE, ALIGN)
        heap = np.zeros((size + 3) // 4 * 4, np.uint8)
        lo = [DEVICE_BASE]
        hi = [DEVICE_BASE]
        for b in self.buffers:
            off = b.address - DEVICE_BASE
            heap[off:off + b.nbytes] = b.array.reshape(-1).view(np.uint8)
            lo.append(b.address)
            hi.append(b.address + b.nbytes)
        return heap, np.array(lo, np.int64), np.array(hi, np.int64)

    def read_back(self, heap: np.ndarray) -> dict[str, np.ndarray]:
        """The buffers' contents after the kernel ran, with their original shapes and dtypes."""
        out = {}
        for b in self.buffers:
            off = b.address - DEVICE_BASE
            out[b.name] = heap[off:off + b.nbytes].view(b.array.dtype).reshape(b.array.shape).copy()
        return out

    def owner(self, address: int) -> str | None:
        for b in self.buffers:
            if b.address <= address < b.address + b.nbytes:
                return b.name
        return None
