"""Blocks of a launch emulated on several threads (teg.emu.launch, TEG_EMU_THREADS): the trace,
the buffers, the row count of an untraced run and the errors are those of the serial run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from teg.emu import EmulatorError, MemoryFault, emulate, load_kernel
from teg.emu.launch import (Discard, GlobalMemory, emu_threads, execute, pack_params, serial_only, Compiled,
                            check_launch)
from teg.emu.args import parse_arg
from teg.emu.memory import DeviceMemory

EMU = Path(__file__).parent / "fixtures" / "emu"
COLUMNS = ("warp", "block", "pc", "opcode", "mask", "dst", "src", "mem_width", "imm", "addr_start", "addresses",
           "warp_start", "warp_block", "block_xyz")


def _emulate(monkeypatch, threads, kernel, grid, block, args, arch="sm_90", **kw):
    monkeypatch.setenv("TEG_EMU_THREADS", str(threads))
    prog, image = load_kernel(EMU / f"kernels.{arch}.cubin", kernel)
    return emulate(prog, image, grid, block, args, **kw)


def _same(a, b):
    ka, kb = a.kernel_trace, b.kernel_trace
    assert ka.num_rows == kb.num_rows > 0
    for col in COLUMNS:
        np.testing.assert_array_equal(np.asarray(getattr(ka, col)), np.asarray(getattr(kb, col)), err_msg=col)
    assert a.outputs.keys() == b.outputs.keys()
    for name in a.outputs:
        assert a.outputs[name].tobytes() == b.outputs[name].tobytes(), name


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case", [
    ("matmul_ab", (4, 4), (16, 16), ["A=rand:float32:64x64", "B=rand:float32:64x64", "C=zeros:float32:64x64", "n=64"]),
    ("transpose_shared", (4, 4), (16, 16), ["in=rand:float32:64x64", "out=zeros:float32:64x64", "n=64"]),
    ("divergent_loop", 7, 96, ["c=rand:int32:672", "o=zeros:float32:672"]),
    ("local_spill", 5, 64, ["idx=rand:int32:320", "out=zeros:float32:320", "n=320"]),
])
def test_threads_give_the_serial_trace_and_buffers(monkeypatch, arch, case):
    """1, 2 and 3 threads (more threads than blocks in a wave, ranges of several blocks, small
    row buffers so that ranges fill them): every trace column and every buffer byte identical."""
    kernel, grid, block, args = case
    serial = _emulate(monkeypatch, 1, kernel, grid, block, args, arch)
    for threads in (2, 3):
        _same(serial, _emulate(monkeypatch, threads, kernel, grid, block, args, arch))
        _same(serial, _emulate(monkeypatch, threads, kernel, grid, block, args, arch, initial_rows=1024))


def test_global_atomics_and_clock_reads_run_serially(monkeypatch):
    """The old values an atomic returns follow the order of the blocks: such kernels keep one
    thread, and give the serial results."""
    prog, image = load_kernel(EMU / "kernels.sm_90.cubin", "histogram")
    lw = Compiled.of(prog, image).lowered
    assert serial_only(lw, lw.okind, lw.oval) == "global atomics"
    prog, image = load_kernel(EMU / "kernels.sm_90.cubin", "matmul_ab")
    lw = Compiled.of(prog, image).lowered
    assert serial_only(lw, lw.okind, lw.oval) is None
    args = ["data=rand:uint32:4096", "hist=zeros:uint32:256", "extrema=zeros:int32:3", "n=4096"]
    _same(_emulate(monkeypatch, 1, "histogram", 8, 128, args), _emulate(monkeypatch, 2, "histogram", 8, 128, args))


def test_fault_is_the_serial_runs_first(monkeypatch):
    """y has 512 elements, n = 1024: block 8 of 16 (64 threads each) is the first to leave it."""
    args = ["n=1024", "a=1.0", "x=ones:float32:1024", "y=zeros:float32:512"]
    msgs = []
    for threads in (1, 2, 3):
        with pytest.raises(MemoryFault) as info:
            _emulate(monkeypatch, threads, "saxpy", 16, 64, args)
        msgs.append(str(info.value))
    assert "thread (0,0,0) of block (8,0,0)" in msgs[0] and msgs[1] == msgs[0] == msgs[2]


def test_instruction_limit_names_the_serial_block(monkeypatch):
    args = ["A=ones:float32:64x64", "B=ones:float32:64x64", "C=zeros:float32:64x64", "n=64"]
    msgs = []
    for threads in (1, 2, 3):
        with pytest.raises(EmulatorError) as info:
            _emulate(monkeypatch, threads, "matmul_ab", (4, 4), (16, 16), args, max_rows=20_000, initial_rows=4096)
        msgs.append(str(info.value))
    assert "more than 20,000 warp instructions" in msgs[0] and msgs[1] == msgs[0] == msgs[2]


def test_untraced_launch_counts_the_same_rows(monkeypatch):
    prog, image = load_kernel(EMU / "kernels.sm_90.cubin", "matmul_ab")
    args = ["A=rand:float32:64x64", "B=rand:float32:64x64", "C=zeros:float32:64x64", "n=64"]
    traced = _emulate(monkeypatch, 1, "matmul_ab", (4, 4), (16, 16), args)
    for threads in (1, 2):
        grid, block = check_launch(prog, image, (4, 4), (16, 16), 0, 1 << 30)
        parsed = [parse_arg(a, p.size, i) for i, (a, p) in enumerate(zip(args, image.params))]
        mem = DeviceMemory()
        addresses = {i: mem.alloc(a.name, a.array).address for i, a in enumerate(parsed) if a.array is not None}
        heap, lo, hi = mem.heap()
        n = execute(prog, image, grid, block, 0, pack_params(image, parsed, addresses),
                    GlobalMemory(heap, lo, hi, str), Discard(), threads=threads, chunk_rows=4096)
        assert n == traced.kernel_trace.num_rows
        assert mem.read_back(heap)["C"].tobytes() == traced.outputs["C"].tobytes()


def test_thread_setting(monkeypatch):
    monkeypatch.setenv("TEG_EMU_THREADS", "3")
    assert emu_threads() == 3
    monkeypatch.setenv("TEG_EMU_THREADS", "0")
    with pytest.raises(EmulatorError, match="TEG_EMU_THREADS='0': must be a positive integer"):
        emu_threads()
    monkeypatch.delenv("TEG_EMU_THREADS")
    assert emu_threads() >= 1
