"""Run one kernel launch in the emulator and turn what it executed into a
:class:`~teg.trace.model.KernelTrace` plus the output buffers.

Steps: find the kernel's SASS (:func:`load_kernel`, compiling a ``.cu`` with nvcc when needed) and its
cubin metadata (:mod:`teg.emu.cubin`); lay out constant bank 0 (launch geometry, stack pointer,
parameters at the cubin's parameter base); place buffers in the device heap
(:mod:`teg.emu.memory`); lower the SASS (:mod:`teg.emu.lower`); run all blocks in the jitted
interpreter (:func:`teg.emu.interp.run_blocks`), growing the trace buffers when they fill; finally
group the rows by warp and expand the static columns (PC, opcode, registers, width, immediate).

Constant bank 0 layout used (as nvcc's SASS reads it on sm_70…sm_90: ``LDC R7, c[0x0][RZ]`` is
blockDim.x, ``c[0x0][0xc]`` gridDim.x, ``LDC R1, c[0x0][0x28]`` the stack pointer): ``0x0/0x4/0x8``
ntid.x/y/z, ``0xc/0x10/0x14`` nctaid.x/y/z, ``0x28`` the top of the per-thread local window; on
sm_100 and later (the cubin's target, :attr:`KernelImage.sm`) ``0x360``, ``0x370`` and ``0x37c``;
the parameters start at the ``EIATTR_PARAM_CBANK`` offset of the cubin (0x160 on sm_80, 0x210 on
sm_90, 0x380 on sm_100).
"""

from __future__ import annotations

import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from teg.emu import interp as I
from teg.emu import ops as O
from teg.emu.args import Arg, parse_arg
from teg.emu.cubin import MAX_SHARED, KernelImage, read_cubin
from teg.emu.errors import EmulatorError, MemoryFault
from teg.emu.lower import Lowered, lower, resolve_constants
from teg.emu.memory import DeviceMemory
from teg.sass.program import Program
from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC, KernelInfo, KernelTrace, Trace, launch_problem

# (ntid, nctaid, stack pointer) offsets in constant bank 0: sm_70 … sm_90, then sm_100 and later
# (nvcc 13's SASS of blockDim / gridDim reads: c[0x0][0x0..0x8] / c[0x0][0xc..0x14] and LDC R1,
# c[0x0][0x28] up to sm_90; c[0x0][0x360..0x368] / c[0x0][0x370..0x378] and c[0x0][0x37c] on sm_100
# and sm_120)
CB_GEOMETRY = ((0, (0x0, 0xC, 0x28)), (100, (0x360, 0x370, 0x37C)))
LOCAL_ALIGN = 16
MAX_THREADS_PER_BLOCK = 1024


@dataclass
class EmulationResult:
    """What one emulated launch produced: the trace and every buffer's final contents."""

    trace: Trace
    outputs: dict[str, np.ndarray]
    program: Program

    @property
    def kernel_trace(self) -> KernelTrace:
        return self.trace.kernels[0]


def _dim3(v) -> tuple[int, int, int]:
    """``"X[,Y[,Z]]"``, an int or a sequence → three positive ints (EmulatorError otherwise)."""
    try:
        if isinstance(v, str):
            v = [int(x) for x in v.split(",")]
        elif isinstance(v, int):
            v = [v]
        v = [int(x) for x in v] + [1] * (3 - len(v))
    except (TypeError, ValueError):
        raise EmulatorError(f"bad launch dimension {v!r} (X[,Y[,Z]] with positive integers)") from None
    if len(v) != 3 or any(x < 1 for x in v):
        raise EmulatorError(f"bad launch dimension {v!r} (X[,Y[,Z]] with positive values)")
    return v[0], v[1], v[2]


def compile_cu(source: str | Path, arch: str, out_dir: str | Path) -> Path:
    """``nvcc -cubin -O3 -arch=ARCH`` into ``out_dir``; raises EmulatorError (with nvcc's message)."""
    from teg.sass.binaries import find_tool

    nvcc = find_tool("nvcc")
    out = Path(out_dir) / (Path(source).stem + f".{arch}.cubin")
    proc = subprocess.run([str(nvcc), "-cubin", "-O3", f"-arch={arch}", "-o", str(out), str(source)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise EmulatorError(f"{source}: nvcc failed: {msg[0] if msg else proc.returncode}")
    return out


def _match(programs: list[Program], kernel: str | None, where: str) -> Program:
    if kernel is None:
        if len(programs) != 1:
            raise EmulatorError(f"{where}: {len(programs)} kernels; choose one with --kernel "
                                f"({', '.join(p.name for p in programs)})")
        return programs[0]
    for test in (lambda p: p.name == kernel,
                 lambda p: p.demangled is not None and p.demangled.split("(")[0] == kernel,
                 lambda p: p.demangled is not None and kernel in p.demangled):
        hits = [p for p in programs if test(p)]
        if hits:
            return hits[0]
    raise EmulatorError(f"{where}: no kernel {kernel!r} (have {', '.join(p.name for p in programs)})")


def load_kernel(source: str | Path, kernel: str | None = None, arch: str = "sm_90",
                sass: str | Path | None = None, work_dir: str | Path | None = None) -> tuple[Program, KernelImage]:
    """SASS program and cubin metadata of ``kernel`` in ``source`` (.cu compiled for ``arch``, or a
    .cubin). The SASS comes from ``sass`` when given, else from a ``<stem>.sass`` next to the cubin,
    else from cuobjdump. A ``.cu`` is compiled into ``work_dir`` when given (the cubin stays there),
    else into a temporary folder removed before returning (everything needed is read by then)."""
    source = Path(source)
    if not source.exists():
        raise EmulatorError(f"{source}: no such file")
    from teg.textfile import TextFileError, check_regular

    try:
        check_regular(source, 1 << 34, "CUDA source or cubin")    # nvcc would wait on a pipe forever
    except (TextFileError, IsADirectoryError) as exc:
        raise EmulatorError(str(exc)) from None
    if source.suffix == ".cu":
        if work_dir is not None:
            return _read_kernel(compile_cu(source, arch, work_dir), source, kernel, sass)
        with tempfile.TemporaryDirectory(prefix="teg-emu-") as tmp:
            return _read_kernel(compile_cu(source, arch, tmp), source, kernel, sass)
    if source.suffix == ".cubin":
        return _read_kernel(source, source, kernel, sass)
    raise EmulatorError(f"{source}: expected a .cu or .cubin file")


def _read_kernel(cubin: Path, source: Path, kernel: str | None, sass) -> tuple[Program, KernelImage]:
    """The SASS program and cubin metadata of ``kernel`` read from ``cubin`` (built from ``source``)."""
    from teg.sass import parse_file

    images = read_cubin(cubin)
    sibling = cubin.with_suffix(".sass")
    if sass is not None:
        programs = parse_file(sass)
    elif sibling.exists():
        programs = parse_file(sibling)
    else:
        programs = parse_file(cubin)
    prog = _match(programs, kernel, str(source))
    if prog.name not in images:
        raise EmulatorError(f"{cubin}: no metadata for kernel {prog.name}")
    return prog, images[prog.name]


def _geometry_offsets(sm: int) -> tuple[int, int, int]:
    """Where the SASS of a cubin for ``sm`` reads blockDim, gridDim and the stack pointer."""
    return next(offsets for first, offsets in reversed(CB_GEOMETRY) if sm >= first)


def _constant_bank(image: KernelImage, args: list[Arg], addresses: dict[int, int], grid, block, local_size) -> bytes:
    params = image.params
    if len(args) != len(params):
        raise EmulatorError(f"kernel {image.name} takes {len(params)} arguments, {len(args)} given")
    end = image.param_base + (max((p.offset + p.size for p in params), default=0))
    ntid, nctaid, stack = _geometry_offsets(image.sm)
    size = max(len(image.constant0), end, stack + 8)
    cb = bytearray(image.constant0.ljust(size, b"\0"))
    struct.pack_into("<3I", cb, ntid, *block)
    struct.pack_into("<3I", cb, nctaid, *grid)
    struct.pack_into("<I", cb, stack, local_size)
    for i, (p, a) in enumerate(zip(params, args)):
        raw = struct.pack("<Q", addresses[i]) if a.array is not None else a.scalar
        if len(raw) != p.size:
            raise EmulatorError(f"kernel {image.name}: argument {a.name} is {len(raw)} bytes, parameter {i} has {p.size}")
        cb[image.param_base + p.offset:image.param_base + p.offset + p.size] = raw
    return bytes(cb.ljust((len(cb) + 7) // 8 * 8, b"\0"))


def _static_columns(prog: Program, lw: Lowered):
    """Per static instruction: opcode-table index, dst/src register ids for the trace."""
    opcodes: list[str] = []
    index: dict[str, int] = {}
    n = len(prog.instructions)
    opc = np.zeros(n, np.int32)
    dst = np.full((n, MAX_TRACE_DST), -1, np.int16)
    src = np.full((n, MAX_TRACE_SRC), -1, np.int16)
    for ins in prog.instructions:
        if ins.opcode not in index:
            index[ins.opcode] = len(opcodes)
            opcodes.append(ins.opcode)
        opc[ins.index] = index[ins.opcode]
        d = [r for r in ins.dst_regs if r >= 0][:MAX_TRACE_DST]
        s = [r for r in ins.src_regs if r >= 0][:MAX_TRACE_SRC]
        dst[ins.index, :len(d)] = d
        src[ins.index, :len(s)] = s
    return opcodes, opc, dst, src


def _fault(err, sched, lw: Lowered, mem: DeviceMemory, grid, block, local_size, shared_size) -> Exception:
    code, ins, tid, addr = (int(x) for x in err[:4])
    prog = lw.program
    if code == I.E_UNSUPPORTED:
        return lw.error_for(ins)
    blk = int(sched[0])
    bxyz = (blk % grid[0], blk // grid[0] % grid[1], blk // (grid[0] * grid[1]))
    txyz = (tid % block[0], tid // block[0] % block[1], tid // (block[0] * block[1]))
    i = prog.instructions[min(max(ins, 0), len(prog) - 1)]
    where = (f"kernel {prog.name}: {i.opcode} at PC {i.address:#06x} by thread ({txyz[0]},{txyz[1]},{txyz[2]}) "
             f"of block ({bxyz[0]},{bxyz[1]},{bxyz[2]})")
    if code == I.E_GLOBAL:
        spans = ", ".join(f"{b.name} [{b.address:#x}, {b.address + b.nbytes:#x})" for b in mem.buffers) or "none"
        return MemoryFault(f"{where}: out-of-bounds global access at address {addr:#x} (buffers: {spans})")
    if code == I.E_SHARED:
        return MemoryFault(f"{where}: shared-memory access at offset {addr:#x} outside the {shared_size}-byte window")
    if code == I.E_LOCAL:
        return MemoryFault(f"{where}: local-memory access at offset {addr:#x} outside the {local_size}-byte window")
    if code == I.E_ALIGN:
        return MemoryFault(f"{where}: misaligned access at address {addr:#x}")
    if code == I.E_CONST:
        return MemoryFault(f"{where}: constant-bank read at offset {addr:#x} outside bank 0")
    if code == I.E_DEADLOCK:
        return EmulatorError(f"{where}: every live lane of the warp waits on a convergence barrier (deadlock)")
    return EmulatorError(f"{where}: control transfer to byte address {addr:#x}, not an instruction")


def emulate(prog: Program, image: KernelImage, grid, block, args: list, shmem: int = 0,
            initial_rows: int = 1 << 16, max_rows: int = 64_000_000) -> EmulationResult:
    """Run ``prog`` for the launch ``grid`` × ``block`` with ``args`` (specs or values, see
    :mod:`teg.emu.args`) and ``shmem`` bytes of dynamic shared memory. A launch that executes more
    than ``max_rows`` warp instructions stops with an error (an endless loop, or a launch too big
    to trace)."""
    grid, block = _dim3(grid), _dim3(block)
    problem = launch_problem(grid, block)
    if problem:
        raise EmulatorError(f"bad launch: {problem}")
    if not 0 <= int(shmem) <= MAX_SHARED:
        raise EmulatorError(f"--shmem {shmem}: dynamic shared memory must be between 0 and {MAX_SHARED} bytes")
    if int(max_rows) < 1:
        raise EmulatorError(f"--max-instructions {max_rows}: must be at least 1")
    nthreads = block[0] * block[1] * block[2]
    if nthreads > MAX_THREADS_PER_BLOCK:
        raise EmulatorError(f"block of {nthreads} threads exceeds {MAX_THREADS_PER_BLOCK}")
    if shmem < 0:
        raise EmulatorError("dynamic shared memory size must be ≥ 0")
    if len(args) != len(image.params):
        raise EmulatorError(f"kernel {prog.name} takes {len(image.params)} arguments, {len(args)} given")
    parsed = [parse_arg(a, p.size, i) for i, (a, p) in enumerate(zip(args, image.params))]
    mem = DeviceMemory()
    addresses = {i: mem.alloc(a.name, a.array).address for i, a in enumerate(parsed) if a.array is not None}
    local_size = max((image.local_frame + LOCAL_ALIGN - 1) // LOCAL_ALIGN * LOCAL_ALIGN, LOCAL_ALIGN)
    cb = _constant_bank(image, parsed, addresses, grid, block, local_size)
    lw = lower(prog)
    banks = dict(image.banks)
    banks[0] = cb
    okind, oval = resolve_constants(lw, banks)
    heap, alo, ahi = mem.heap()
    shared_size = (image.shared_static + shmem + 3) // 4 * 4 or 4
    nw = (nthreads + 31) // 32
    nblocks = grid[0] * grid[1] * grid[2]
    s8 = np.zeros(shared_size, np.uint8)
    l8 = np.zeros(nw * 32 * local_size, np.uint8)
    regs = np.zeros((nw, O.NUM_ROWS, 32), np.uint32)
    pm = np.zeros((nw, O.NUM_PSLOTS), np.int64)
    lane_pc = np.zeros((nw, 32), np.int64)
    lane_st = np.zeros((nw, 32), np.int64)
    lane_wait = np.zeros((nw, 32), np.int64)
    bar = np.zeros((nw, 16), np.int64)
    grp = np.zeros((nw, 2), np.int64)
    wstat = np.zeros(nw, np.int64)
    sched = np.zeros(2, np.int64)
    cnt = np.zeros(2, np.int64)
    err = np.zeros(4, np.int64)
    ins_addr = np.array([i.address for i in prog.instructions], np.int64)
    rows_w = np.zeros(initial_rows, np.int32)
    rows_i = np.zeros(initial_rows, np.int32)
    rows_m = np.zeros(initial_rows, np.uint32)
    rows_na = np.zeros(initial_rows, np.int32)
    addrs = np.zeros(initial_rows * 4, np.uint64)
    g32, s32, l32, cb32 = heap.view(np.uint32), s8.view(np.uint32), l8.view(np.uint32), np.frombuffer(cb, np.uint32).copy()
    code = lw.code
    while True:
        st = I.run_blocks(code, okind, lw.oreg, oval, lw.oflag, ins_addr, np.array(grid, np.int64),
                          np.array(block, np.int64), nblocks, heap, g32, alo, ahi, s8, s32, l8, l32, local_size,
                          cb32, regs, pm, lane_pc, lane_st, lane_wait, bar, grp, wstat, sched,
                          rows_w, rows_i, rows_m, rows_na, addrs, cnt, err)
        if st == I.ST_OK:
            break
        if st != I.ST_FULL:
            raise _fault(err, sched, lw, mem, grid, block, local_size, shared_size)
        n = int(cnt[0])
        if n >= max_rows:
            raise EmulatorError(f"kernel {prog.name}: more than {max_rows:,} warp instructions executed "
                                f"(stopped in block {int(sched[0])}): an endless loop, or a launch larger than that "
                                "(raise --max-instructions)")
        grow = min(rows_w.shape[0] * 2, max_rows + 1) if n >= rows_w.shape[0] else rows_w.shape[0]
        grow_a = addrs.shape[0] * 2 if int(cnt[1]) + 64 > addrs.shape[0] else addrs.shape[0]
        _check_recording(prog.name, n, grow, grow_a, max_rows)
        if grow > rows_w.shape[0]:
            rows_w, rows_i, rows_m, rows_na = (_grown(a, grow) for a in (rows_w, rows_i, rows_m, rows_na))
        if grow_a > addrs.shape[0]:
            addrs = _grown(addrs, grow_a)
    n, na = int(cnt[0]), int(cnt[1])
    kt = _build_trace(prog, lw, image, grid, block, shmem, nw, rows_w[:n], rows_i[:n], rows_m[:n], rows_na[:n], addrs[:na])
    outputs = mem.read_back(heap)
    trace = Trace(kernels=[kt], memcpy=[(b.address, b.nbytes) for b in mem.buffers], source=prog.source)
    return EmulationResult(trace, outputs, prog)


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    """``a``'s entries at the start of a new array of ``n`` (the rest zero)."""
    out = np.zeros(n, a.dtype)
    out[:a.shape[0]] = a
    return out


def _check_recording(kernel: str, done: int, rows: int, addresses: int, max_rows: int) -> None:
    """Refuse, before the record grows to ``rows`` rows and ``addresses`` addresses, a trace whose
    recording and building would need more memory than this process may use (:mod:`teg.hostmem`)."""
    from teg.hostmem import EMU_ADDRESS_BYTES, EMU_ROW_BYTES, require

    require(rows * EMU_ROW_BYTES + addresses * EMU_ADDRESS_BYTES,
            f"kernel {kernel}: recording its trace past {done:,} warp instructions",
            f"lower --max-instructions (now {max_rows:,}) to stop it sooner, or emulate a smaller launch (--grid)")


def _build_trace(prog, lw, image, grid, block, shmem, nw, rw, ri, rm, rna, addrs) -> KernelTrace:
    """Group rows by warp (stable: each warp's rows stay in execution order) and expand the static
    columns of each row's instruction."""
    order = np.argsort(rw, kind="stable")
    counts = rna.astype(np.int64)
    starts = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    c_sorted = counts[order]
    addr_start = np.zeros(len(order) + 1, np.int64)
    np.cumsum(c_sorted, out=addr_start[1:])
    gather = np.repeat(starts[:-1][order] - addr_start[:-1], c_sorted) + np.arange(addr_start[-1], dtype=np.int64)
    addresses = addrs[gather] if len(gather) else np.zeros(0, np.uint64)
    warp = rw[order].astype(np.int32)
    ins = ri[order]
    nblocks = grid[0] * grid[1] * grid[2]
    nwarps = nblocks * nw
    per_warp = np.bincount(warp, minlength=nwarps) if len(warp) else np.zeros(nwarps, np.int64)
    warp_start = np.zeros(nwarps + 1, np.int64)
    np.cumsum(per_warp, out=warp_start[1:])
    opcodes, opc, dst, src = _static_columns(prog, lw)
    ins_addr = np.array([i.address for i in prog.instructions], np.int64)
    b = np.arange(nblocks)
    block_xyz = np.stack([b % grid[0], b // grid[0] % grid[1], b // (grid[0] * grid[1])], axis=1).astype(np.int32)
    info = KernelInfo(name=prog.name, grid=grid, block=block, shmem=image.shared_static + shmem, nregs=image.nregs,
                      binary_version=prog.sm)
    return KernelTrace(
        info=info, opcodes=opcodes, warp=warp, block=(warp // nw).astype(np.int32), pc=ins_addr[ins],
        opcode=opc[ins], mask=rm[order].astype(np.uint32), dst=dst[ins], src=src[ins],
        mem_width=lw.mem_width[ins], imm=lw.imm[ins], addr_start=addr_start, addresses=addresses.astype(np.uint64),
        warp_start=warp_start, warp_block=(np.arange(nwarps) // nw).astype(np.int32), block_xyz=block_xyz,
        extras=_tracer_view(prog))


def _tracer_view(prog: Program) -> dict[str, np.ndarray]:
    """The registers the NVBit tracer would record per instruction (:mod:`teg.trace.nvbit_view`),
    kept with the trace so that its Accel-Sim text is what the tracer writes."""
    from teg.trace import nvbit_view

    pcs, regs = nvbit_view.program_table(prog)
    return {nvbit_view.EXTRA_PC: pcs, nvbit_view.EXTRA_REGS: regs}


def run(source: str | Path, kernel: str | None, grid, block, args: list, shmem: int = 0, arch: str = "sm_90",
        sass: str | Path | None = None, max_rows: int = 64_000_000) -> EmulationResult:
    """Compile (for ``.cu``) or read (``.cubin``) ``source``, then emulate ``kernel`` (see :func:`emulate`)."""
    prog, image = load_kernel(source, kernel, arch, sass)
    return emulate(prog, image, grid, block, args, shmem, max_rows=max_rows)
