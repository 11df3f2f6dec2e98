"""The parts of ``teg trace app`` that need no compiler: the device-memory allocator, the fatbinary
reader and SASS choice, the device description from a machine table, the protocol header."""

from __future__ import annotations

import ctypes
import os
import struct

import pytest

import teg.machine as tm
from teg.app import fatbin, protocol
from teg.app.device import DeviceProp, FuncAttributes, attribute, func_attributes, max_threads, properties
from teg.app.heap import ALIGN, GAP, DeviceHeap
from teg.emu.errors import EmulatorError


@pytest.fixture
def heap():
    h = DeviceHeap(1 << 24)
    h.base = 0x7F0000000000
    yield h
    h.close()


def test_allocations_are_aligned_with_a_gap_and_found(heap):
    a = heap.alloc(100, 0)
    b = heap.alloc(1000, 2)
    assert a == 0 and b == ALIGN + GAP                      # 100 bytes take one 256-byte slot + the gap
    lo, hi = heap.ranges()
    assert list(lo) == [heap.base, heap.base, heap.base + b] and list(hi) == [heap.base, heap.base + 100, heap.base + b + 1000]
    assert heap.find(heap.base + 99).offset == a and heap.find(heap.base + 100) is None     # the gap
    assert heap.find(heap.base + b + 999).kind == 2
    assert "cudaMallocManaged of 1,000 bytes" in heap.describe(heap.base + b + 1200)


def test_free_ranges_merge_and_are_reused(heap):
    offs = [heap.alloc(4096, 0) for _ in range(3)]
    heap.release(offs[1])
    heap.release(offs[0])
    assert heap.free[0] == (0, 2 * (4096 + GAP))            # the two freed ranges are one again
    assert heap.alloc(8192, 0) == 0                          # and hold a larger allocation
    assert heap.release(12345) is None
    used = heap.used
    heap.alloc(64, 3)
    heap.reset(keep_kind=3)                                  # cudaDeviceReset keeps the modules' variables
    assert [a.kind for a in heap.allocs.values()] == [3] and heap.used < used


def test_memory_is_shared_and_released_pages_read_zero(heap):
    off = heap.alloc(2 << 20, 0)
    heap.bytes[off:off + 4] = [1, 2, 3, 4]
    assert os.pread(heap.fd, 4, off) == b"\x01\x02\x03\x04"   # the file the program maps holds them
    heap.release(off)                                        # 2 MiB: its pages go back
    assert heap.bytes[off:off + 4].tolist() == [0, 0, 0, 0]
    assert heap.alloc(1 << 30, 0) is None                    # larger than the file: out of memory


def _fatbin(entries: list[tuple[int, int, int, bytes]]) -> bytes:
    """A fatbinary of (kind, sm, flags, payload) entries, laid out as nvcc 13 writes them."""
    body = b""
    for kind, sm, flags, payload in entries:
        head = bytearray(64)
        struct.pack_into("<HHIQ", head, 0, kind, 0x0101, 64, len(payload))
        struct.pack_into("<I", head, 0x1C, sm)
        struct.pack_into("<Q", head, 0x28, flags)
        body += bytes(head) + payload
    return struct.pack("<IHHQ", fatbin.MAGIC, 1, 16, len(body)) + body


def test_fatbin_entries_and_the_sass_chosen():
    fb = _fatbin([(2, 75, 0x11, b"\x7fELF-75"), (2, 80, 0x11, b"\x7fELF-80"), (2, 90, 0x11, b"\x7fELF-90"),
                  (1, 90, 0x8011, b"ptx")])
    found = fatbin.entries(fb, "t")
    assert [(e.label, e.compressed) for e in found] == [("sm_75", False), ("sm_80", False), ("sm_90", False),
                                                        ("compute_90", True)]
    pick = {t: (fatbin.choose(found, t).sm if fatbin.choose(found, t) else None) for t in (None, 75, 86, 89, 90, 100, 70)}
    assert pick == {None: 90, 75: 75, 86: 80, 89: 80, 90: 90, 100: None, 70: None}   # same major, not newer
    assert fatbin.cubin(fb, found[1], "t") == b"\x7fELF-80"
    assert fatbin.describe(found) == "sm_75, sm_80, sm_90, compute_90"


@pytest.mark.parametrize("data,problem", [(b"\x00" * 16, "not a CUDA fatbinary"),
                                          (struct.pack("<IHHQ", fatbin.MAGIC, 1, 16, 500), "516 bytes announced, 16 given")])
def test_damaged_fatbin_is_named(data, problem):
    with pytest.raises(EmulatorError, match=problem):
        fatbin.entries(data, "prog: module 1")


def test_device_description_from_the_machine_table():
    m = tm.load("sm_90")
    p = DeviceProp.from_buffer_copy(properties(m, 16 << 30))
    assert (p.major, p.minor, p.multiProcessorCount, p.warpSize) == (9, 0, m.num_sms, 32)
    assert p.totalGlobalMem == 16 << 30 and p.sharedMemPerBlock == 48 * 1024
    assert p.sharedMemPerBlockOptin == m.shared.max_per_block and p.maxThreadsPerMultiProcessor == m.limits.max_threads
    assert p.name.startswith(b"teg emulator: sm_90")
    assert attribute(m, 0, 16) == m.num_sms and attribute(m, 0, 13) == round(m.clock_mhz * 1000)
    assert attribute(m, 0, 75) == 9 and attribute(m, 0, 36) is None and attribute(m, 0, 9999) is None


def test_function_attributes_and_register_limited_block():
    m = tm.load("sm_75")
    assert max_threads(m, 32) == 1024                        # 32 registers: a full block fits
    per_warp = -(-255 * 32 // m.limits.reg_alloc_unit) * m.limits.reg_alloc_unit
    assert max_threads(m, 255) == min(65536, m.limits.registers) // per_warp * 32 < 1024
    a = FuncAttributes.from_buffer_copy(func_attributes(m, 1024, 64, 16, 40, 75, 48 * 1024 - 1024))
    assert (a.sharedSizeBytes, a.constSizeBytes, a.localSizeBytes, a.numRegs, a.binaryVersion) == (1024, 64, 16, 40, 75)
    assert a.maxDynamicSharedSizeBytes == 47 * 1024 and ctypes.sizeof(a) == 144


def test_protocol_header_declares_every_number():
    h = protocol.c_header()
    for name, value in protocol.MESSAGES.items():
        assert f"#define MSG_{name} {value}\n" in h
    for value, name, _ in protocol.ERRORS:
        assert f"#define {name} {value}\n" in h
    assert f"#define DEVICE_PROP_BYTES {ctypes.sizeof(DeviceProp)}\n" in h
