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

import os
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from teg.emu import interp as I
from teg.emu import ops as O
from teg.emu.args import Arg, parse_arg
from teg.emu.cubin import MAX_SHARED, KernelImage, read_cubin
from teg.emu.errors import EmulatorError, MemoryFault
from teg.emu.lower import Lowered, lower, resolve_constants, specialize
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
    """Constant bank 0 of a launch with the parsed ``args`` (buffers at ``addresses``)."""
    return constant_bank0(image, pack_params(image, args, addresses), grid, block, local_size)


def pack_params(image: KernelImage, args: list[Arg], addresses: dict[int, int]) -> bytes:
    """The parameter buffer of a launch: each argument's bytes (a buffer's device address for an
    array) at its parameter's offset (``EIATTR_KPARAM_INFO``)."""
    params = image.params
    if len(args) != len(params):
        raise EmulatorError(f"kernel {image.name} takes {len(params)} arguments, {len(args)} given")
    buf = bytearray(max((p.offset + p.size for p in params), default=0))
    for i, (p, a) in enumerate(zip(params, args)):
        raw = struct.pack("<Q", addresses[i]) if a.array is not None else a.scalar
        if len(raw) != p.size:
            raise EmulatorError(f"kernel {image.name}: argument {a.name} is {len(raw)} bytes, parameter {i} has {p.size}")
        buf[p.offset:p.offset + p.size] = raw
    return bytes(buf)


def constant_bank0(image: KernelImage, params: bytes, grid, block, local_size: int) -> bytes:
    """Constant bank 0 of a launch: the cubin's image with the launch geometry, the stack pointer
    and the packed parameter buffer ``params`` (:func:`pack_params`) written in."""
    ntid, nctaid, stack = _geometry_offsets(image.sm)
    size = max(len(image.constant0), image.param_base + len(params), stack + 8)
    cb = bytearray(image.constant0.ljust(size, b"\0"))
    struct.pack_into("<3I", cb, ntid, *block)
    struct.pack_into("<3I", cb, nctaid, *grid)
    struct.pack_into("<I", cb, stack, local_size)
    cb[image.param_base:image.param_base + len(params)] = params
    return bytes(cb.ljust((len(cb) + 7) // 8 * 8, b"\0"))


def local_window(image: KernelImage) -> int:
    """Bytes of the per-thread local window: the frame rounded up to 16, at least 16."""
    return max((image.local_frame + LOCAL_ALIGN - 1) // LOCAL_ALIGN * LOCAL_ALIGN, LOCAL_ALIGN)


def flatten_banks(lw: Lowered, banks: dict[int, bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per launch: ``(okind, oval, oflag, cb32)`` — ``c[bank][offset]`` operands resolved to
    immediates (:func:`resolve_constants`), and the banks laid one after another in ``cb32`` (bank 0
    first, each further bank at a 16-byte boundary) with every register-indexed read of bank ``b``
    (``LDC R, c[0x3][R2+0x10]``: user ``__constant__`` data) turned into a read of bank 0 at
    ``offset + base of b``, so the interpreter reads every bank through one array."""
    okind, oval = resolve_constants(lw, banks)
    oflag = lw.oflag
    flat = bytearray(banks[0])
    base = {0: 0}
    for b in sorted(k for k in banks if k != 0):
        flat.extend(b"\0" * (-len(flat) % 16))
        base[b] = len(flat)
        flat.extend(banks[b])
    rows, cols = np.nonzero(okind == O.K_CIDX)
    if len(rows):
        bank = (oflag[rows, cols] >> 24) & 0xFF
        move = (bank != 0) & np.isin(bank, list(base))
        if move.any():
            oflag = oflag.copy()
            r, c = rows[move], cols[move]
            oval[r, c] += np.array([base[int(b)] for b in bank[move]], np.int64)
            oflag[r, c] &= ~np.int64(0xFF << 24)
    flat.extend(b"\0" * (-len(flat) % 16 or 16))
    return okind, oval, oflag, np.frombuffer(bytes(flat), np.uint32).copy()


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


@dataclass
class GlobalMemory:
    """Device memory as one launch sees it: ``heap`` (bytes; byte 0 is address ``lo[0]``) and the
    address ranges an access may touch, ``[lo[i], hi[i])`` for ``i >= 1``, ascending and disjoint
    (``lo[0] == hi[0]``, the heap's base). ``describe(address)`` names the ranges for a fault message."""

    heap: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    describe: Callable[[int], str]


def _buffers_text(mem: DeviceMemory) -> Callable[[int], str]:
    return lambda addr: "buffers: " + (", ".join(f"{b.name} [{b.address:#x}, {b.address + b.nbytes:#x})"
                                                  for b in mem.buffers) or "none")


def _fault(err, sched, lw: Lowered, describe: Callable[[int], str], grid, block, local_size, shared_size) -> Exception:
    exc = _fault_of(err, sched, lw, describe, grid, block, local_size, shared_size)
    exc.emu_code = int(err[0])         # the interpreter's E_* code (what a runtime reports to the program)
    return exc


def _fault_of(err, sched, lw: Lowered, describe, grid, block, local_size, shared_size) -> Exception:
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
        return MemoryFault(f"{where}: out-of-bounds global access at address {addr:#x} ({describe(addr)})")
    if code == I.E_SHARED:
        return MemoryFault(f"{where}: shared-memory access at offset {addr:#x} outside the {shared_size}-byte window")
    if code == I.E_LOCAL:
        return MemoryFault(f"{where}: local-memory access at offset {addr:#x} outside the {local_size}-byte window")
    if code == I.E_ALIGN:
        return MemoryFault(f"{where}: misaligned access at address {addr:#x}")
    if code == I.E_CONST:
        return MemoryFault(f"{where}: constant-bank read at offset {addr:#x} outside the constant banks")
    if code == I.E_DEADLOCK:
        return EmulatorError(f"{where}: every live lane of the warp waits on a convergence barrier (deadlock)")
    return EmulatorError(f"{where}: control transfer to byte address {addr:#x}, not an instruction")


def check_launch(prog: Program, image: KernelImage, grid, block, shmem: int, max_rows: int):
    """The launch as three-int ``(grid, block)``; an :class:`EmulatorError` for a launch no GPU runs."""
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
    return grid, block


def emulate(prog: Program, image: KernelImage, grid, block, args: list, shmem: int = 0,
            initial_rows: int = 1 << 20, max_rows: int = 64_000_000) -> EmulationResult:
    """Run ``prog`` for the launch ``grid`` × ``block`` with ``args`` (specs or values, see
    :mod:`teg.emu.args`) and ``shmem`` bytes of dynamic shared memory. A launch that executes more
    than ``max_rows`` warp instructions stops with an error (an endless loop, or a launch too big
    to trace)."""
    sink = TraceCollector()
    mem, outputs = _emulate_into(sink, prog, image, grid, block, args, shmem, max_rows, initial_rows)
    trace = Trace(kernels=[sink.kernel_trace()], memcpy=[(b.address, b.nbytes) for b in mem.buffers], source=prog.source)
    return EmulationResult(trace, outputs, prog)


def _emulate_into(sink: RowSink, prog: Program, image: KernelImage, grid, block, args: list, shmem: int,
                  max_rows: int, chunk_rows: int = 1 << 20) -> tuple[DeviceMemory, dict[str, np.ndarray]]:
    """:func:`emulate` with the rows handed to ``sink``: ``(device memory, buffers after the run)``."""
    grid, block = check_launch(prog, image, grid, block, shmem, max_rows)
    if len(args) != len(image.params):
        raise EmulatorError(f"kernel {prog.name} takes {len(image.params)} arguments, {len(args)} given")
    parsed = [parse_arg(a, p.size, i) for i, (a, p) in enumerate(zip(args, image.params))]
    mem = DeviceMemory()
    addresses = {i: mem.alloc(a.name, a.array).address for i, a in enumerate(parsed) if a.array is not None}
    params = pack_params(image, parsed, addresses)
    heap, alo, ahi = mem.heap()
    execute(prog, image, grid, block, shmem, params, GlobalMemory(heap, alo, ahi, _buffers_text(mem)), sink,
            max_rows=max_rows, chunk_rows=max(int(chunk_rows), 1 << 10))
    return mem, mem.read_back(heap)


def emulate_to_trace(writer, prog: Program, image: KernelImage, grid, block, args: list, shmem: int = 0,
                     max_rows: int = 64_000_000) -> tuple[dict[str, np.ndarray], dict]:
    """:func:`emulate` writing the trace as it runs: the launch is kernel 0 of the native
    :class:`~teg.trace.native.TraceWriter` ``writer`` (its rows streamed in chunks, never held
    whole; the caller commits the writer), with the buffers' device ranges as its ``memcpy``.
    Returns the buffers after the run and the kernel's entry (``rows``, ``warps`` …)."""
    sink = TraceStreamer(writer.kernel())
    mem, outputs = _emulate_into(sink, prog, image, grid, block, args, shmem, max_rows)
    entry = sink.finish()
    writer.add(entry)
    writer.meta["source"] = prog.source
    writer.meta["memcpy"] = [[b.address, b.nbytes] for b in mem.buffers]
    return outputs, entry


# ---- running a launch with the trace streamed out in whole blocks --------------------------------

CHUNK_ROWS = 1 << 20          # trace rows held before the finished blocks' rows are handed on
ADDRS_PER_ROW = 8             # address slots per row slot (a memory row of a full warp takes 32)


@dataclass
class Compiled:
    """What one kernel's launches share: the lowered code and the trace's static columns."""

    program: Program
    image: KernelImage
    lowered: Lowered
    static: tuple
    ins_addr: np.ndarray

    @classmethod
    def of(cls, prog: Program, image: KernelImage) -> "Compiled":
        lw = lower(prog)
        return cls(prog, image, lw, _static_columns(prog, lw),
                   np.array([i.address for i in prog.instructions], np.int64))


class RowSink:
    """Where the rows of a launch go, handed over in whole blocks (execution order, blocks
    ascending). ``record = False``: nothing is kept (the rows are counted and dropped);
    ``keeps``: every row stays in memory until the launch ends (its growth is checked against the
    memory this process may use, :func:`_check_recording`); ``reuses``: :meth:`take` holds on to
    none of the arrays it is handed (it writes or copies them), so the serial run hands over every
    chunk in the same arrays (:class:`ExpandBuffers`)."""

    record = True
    keeps = False
    reuses = False
    static_rows = True           # the rows it is handed carry the static columns (False: the pc only, TraceStreamer)

    def start(self, info: KernelInfo, compiled: Compiled, nwarps: int) -> None:
        self.info, self.compiled, self.nwarps = info, compiled, nwarps
        self.per_warp = np.zeros(nwarps, np.int64)

    def add(self, rw, ri, rm, rna, addrs) -> None:
        if not self.reuses:
            self.accept(expand_rows(self.compiled, self.info, rw, ri, rm, rna, addrs, static=self.static_rows))
        else:                    # nothing it is handed is kept: one set of arrays for every chunk
            if getattr(self, "_buffers", None) is None or self._buffers.info is not self.info:
                self._buffers = ExpandBuffers(self.info)
            self.accept(expand_rows(self.compiled, self.info, rw, ri, rm, rna, addrs, self._buffers,
                                    static=self.static_rows))

    def full_rows(self, rows: dict) -> dict:
        """``rows`` as :meth:`take` got them, with the static columns (looked up by pc when the
        sink was handed the pc only)."""
        return rows

    @staticmethod
    def addresses_of(n_addr: np.ndarray, addresses) -> np.ndarray:
        """The addresses :meth:`take` got, in row order (copied when they were handed where they
        lie, :class:`teg.trace.codec.Gathered`)."""
        return addresses.materialize(n_addr) if hasattr(addresses, "materialize") else addresses

    def accept(self, expanded: tuple) -> None:
        """Take the rows :func:`expand_rows` made of whole blocks (grouped by warp)."""
        rows, n_addr, addresses = expanded
        warp = rows["warp"]
        if len(warp):                # grouped by warp, ascending: each warp's rows found by bisection
            first, last = int(warp[0]), int(warp[-1])
            counts = np.diff(np.searchsorted(warp, np.arange(first, last + 2, dtype=warp.dtype)))
            self.per_warp[first:last + 1] += counts
        self.take(rows, n_addr, addresses)

    def take(self, rows: dict, n_addr: np.ndarray, addresses: np.ndarray) -> None:
        raise NotImplementedError

    def layout(self):
        """``(warp_start, warp_block, block_xyz)`` of the launch once every row was handed over."""
        info, nw = self.info, self.info.warps_per_block
        grid = info.grid
        warp_start = np.zeros(self.nwarps + 1, np.int64)
        np.cumsum(self.per_warp, out=warp_start[1:])
        b = np.arange(info.num_blocks)
        block_xyz = np.stack([b % grid[0], b // grid[0] % grid[1], b // (grid[0] * grid[1])], axis=1).astype(np.int32)
        return warp_start, (np.arange(self.nwarps) // nw).astype(np.int32), block_xyz


class Discard(RowSink):
    """Rows counted, not kept (a launch that runs untraced)."""

    record = False


class TraceCollector(RowSink):
    """Keeps the rows in memory and builds the launch's :class:`KernelTrace`."""

    keeps = True

    def start(self, info, compiled, nwarps) -> None:
        super().start(info, compiled, nwarps)
        self.parts: list[tuple[dict, np.ndarray, np.ndarray]] = []

    def take(self, rows, n_addr, addresses) -> None:
        self.parts.append((rows, n_addr, addresses))

    def kernel_trace(self) -> KernelTrace:
        cols = {name: (np.concatenate([p[0][name] for p in self.parts]) if self.parts
                       else np.zeros((0, *COLUMN_SHAPES[name][1]), COLUMN_SHAPES[name][0]))
                for name in COLUMN_SHAPES}
        n_addr = np.concatenate([p[1] for p in self.parts]) if self.parts else np.zeros(0, np.int64)
        addresses = np.concatenate([p[2] for p in self.parts]) if self.parts else np.zeros(0, np.uint64)
        addr_start = np.zeros(len(n_addr) + 1, np.int64)
        np.cumsum(n_addr, out=addr_start[1:])
        warp_start, warp_block, block_xyz = self.layout()
        return KernelTrace(info=self.info, opcodes=list(self.compiled.static[0]), addr_start=addr_start,
                           addresses=addresses, warp_start=warp_start, warp_block=warp_block, block_xyz=block_xyz,
                           extras=_tracer_view(self.compiled.program), **cols)


class TraceStreamer(RowSink):
    """Appends the rows to a native trace's :class:`~teg.trace.native.KernelWriter` as they come
    (memory stays bounded by one chunk of rows whatever the launch's length)."""

    reuses = True                # the writer encodes, writes or copies what it is handed

    def __init__(self, writer):
        self.writer = writer

    def start(self, info, compiled, nwarps) -> None:
        super().start(info, compiled, nwarps)
        # the static columns are looked up per instruction and the pc is its address: with distinct
        # addresses they are functions of the pc, so the writer need not check each row, and a
        # writer that stores them once per pc takes them per pc, not expanded into every row
        self.static_rows, self.by_pc = True, None
        if np.unique(compiled.ins_addr).shape[0] == compiled.ins_addr.shape[0]:
            self.by_pc = static_by_pc(compiled)
            self.static_rows = not self.writer.promise_static_by_pc(*self.by_pc)

    def take(self, rows, n_addr, addresses) -> None:
        self.writer.append_rows(rows, n_addr, addresses)

    def full_rows(self, rows: dict) -> dict:
        if self.static_rows:
            return rows
        pcs, tables = self.by_pc
        at = np.searchsorted(pcs, rows["pc"])
        return {**rows, **{k: t[at] for k, t in tables.items()}}

    def finish(self) -> dict:
        warp_start, warp_block, block_xyz = self.layout()
        return self.writer.finish(self.info, list(self.compiled.static[0]), warp_start, warp_block, block_xyz,
                                  _tracer_view(self.compiled.program))


# trace columns a RowSink receives per row: dtype and trailing shape (teg.trace.model.KernelTrace)
COLUMN_SHAPES = {"warp": (np.int32, ()), "block": (np.int32, ()), "pc": (np.int64, ()), "opcode": (np.int32, ()),
                 "mask": (np.uint32, ()), "dst": (np.int16, (MAX_TRACE_DST,)), "src": (np.int16, (MAX_TRACE_SRC,)),
                 "mem_width": (np.int16, ()), "imm": (np.int64, ())}


def static_by_pc(compiled: Compiled) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(pcs ascending, {column: its value at each of those pcs})``: the trace's static columns
    per instruction, in the types of :data:`COLUMN_SHAPES`."""
    _, opc, dst, src = compiled.static
    lw = compiled.lowered
    order = np.argsort(compiled.ins_addr, kind="stable")
    cols = {"opcode": opc, "dst": dst, "src": src, "mem_width": lw.mem_width, "imm": lw.imm}
    return (np.ascontiguousarray(compiled.ins_addr[order]),
            {k: np.ascontiguousarray(np.asarray(v)[order], COLUMN_SHAPES[k][0]) for k, v in cols.items()})


class ExpandBuffers:
    """The trace columns :func:`expand_rows` writes, kept and reused from chunk to chunk of one
    launch (grown when a chunk needs more) for a sink that does not keep the arrays it is handed."""

    def __init__(self, info: KernelInfo):
        self.info = info
        self.rows = -1
        self.addrs = -1

    def views(self, n: int, n_addr: int) -> tuple:
        if n > self.rows:
            self.rows = max(n, 2 * self.rows)
            self.cols = tuple(np.empty((self.rows, *COLUMN_SHAPES[k][1]), COLUMN_SHAPES[k][0]) for k in COLUMN_SHAPES)
            self.na = np.empty(self.rows, np.int64)
        if n_addr > self.addrs:
            self.addrs = max(n_addr, 2 * self.addrs)
            self.out = np.empty(self.addrs, np.uint64)
        return (*(c[:n] for c in self.cols), self.na[:n], self.out[:n_addr])


def expand_rows(compiled: Compiled, info: KernelInfo, rw, ri, rm, rna, addrs, buffers: ExpandBuffers | None = None,
                static: bool = True):
    """Rows of whole blocks in execution order → trace columns grouped by warp (a stable sort:
    each warp's rows stay in execution order) with each row's static columns expanded (unless
    ``static`` is False: then only warp, block, pc and mask, and the addresses left where they
    were recorded, :class:`teg.trace.codec.Gathered`); returns ``(columns, addresses per row,
    addresses)`` (:func:`teg.emu.rows.expand`), in new arrays or, given ``buffers``, in views of
    those (valid until the next call with them, as ``addrs`` must stay)."""
    from teg.emu.rows import expand, expand_into

    from teg.trace.codec import Gathered

    _, opc, dst, src = compiled.static
    lw = compiled.lowered
    gather = not static           # a writer of compact frames: it reads the addresses where they were recorded
    if buffers is None:
        warp, block, pc, opcode, mask, d, s, mw, im, na, addresses = expand(
            rw, ri, rm, rna, addrs, info.warps_per_block, compiled.ins_addr, opc, dst, src, lw.mem_width, lw.imm,
            static, gather)
    else:
        warp, block, pc, opcode, mask, d, s, mw, im, na, addresses = out = buffers.views(
            rw.shape[0], rw.shape[0] if gather else addrs.shape[0])
        expand_into(rw, ri, rm, rna, addrs, info.warps_per_block, compiled.ins_addr, opc, dst, src, lw.mem_width,
                    lw.imm, *out, static, gather)
    rows = {"warp": warp, "block": block, "pc": pc, "mask": mask}
    if static:
        rows.update({"opcode": opcode, "dst": d, "src": s, "mem_width": mw, "imm": im})
    if gather:
        addresses = Gathered(addresses.view(np.int64), addrs)
    return rows, na, addresses


THREADS_ENV = "TEG_EMU_THREADS"


def emu_threads() -> int:
    """Worker threads a launch's blocks may run on: ``$TEG_EMU_THREADS`` (a positive integer),
    else every core this process may use."""
    env = os.environ.get(THREADS_ENV, "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise EmulatorError(f"{THREADS_ENV}={env!r}: must be a positive integer")
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # no affinity on this OS
        return max(1, os.cpu_count() or 1)


def serial_only(lw: Lowered, okind: np.ndarray, oval: np.ndarray) -> str | None:
    """Why the blocks of this kernel must run one after another (None: they may run in parallel):
    global atomics (the old values they return, and float sums, follow the order of the blocks)
    and clock reads (``SR_CLOCKLO``/``HI`` read the rows recorded so far)."""
    code = lw.code
    op, space = code[:, O.C_OP], code[:, O.C_M]
    if np.any((op == O.OP_ATOM) & (space == O.SP_GLOBAL)):
        return "global atomics"
    clock = ((op == O.OP_S2R) | (op == O.OP_CS2R)) & (okind[:, 1] == O.K_SREG) & ((oval[:, 1] == 12) | (oval[:, 1] == 13))
    if np.any(clock):
        return "clock reads"
    return None


class _Worker:
    """One thread's interpreter state for blocks of a launch: the block's warps (registers,
    predicates, lanes, convergence barriers), its shared and local memory, and row buffers of
    ``cap`` rows."""

    def __init__(self, nw: int, shared_size: int, local_size: int, cap: int):
        self.s8 = np.zeros(shared_size, np.uint8)
        self.l8 = np.zeros(nw * 32 * local_size, np.uint8)
        self.regs = np.zeros((nw, O.NUM_ROWS, 32), np.uint32)
        self.pm = np.zeros((nw, O.NUM_PSLOTS), np.int64)
        self.lane_pc = np.zeros((nw, 32), np.int64)
        self.lane_st = np.zeros((nw, 32), np.int64)
        self.lane_wait = np.zeros((nw, 32), np.int64)
        self.bar = np.zeros((nw, 16), np.int64)
        self.grp = np.zeros((nw, 2), np.int64)
        self.wstat = np.zeros(nw, np.int64)
        self.sched = np.zeros(2, np.int64)
        self.cnt = np.zeros(3, np.int64)          # rows held, addresses held, rows already handed on
        self.err = np.zeros(4, np.int64)
        self.rows_w = np.empty(cap, np.int32)
        self.rows_i = np.empty(cap, np.int32)
        self.rows_m = np.empty(cap, np.uint32)
        self.rows_na = np.empty(cap, np.int32)
        self.addrs = np.empty(cap * ADDRS_PER_ROW + 64, np.uint64)
        su, sq = np.zeros(1, np.uint32), np.zeros(1, np.int64)
        self.scratch = (su, su.view(np.float32), sq, sq.view(np.float64), np.zeros(32, np.int64),
                        np.zeros(32, np.int64), np.zeros(512, np.float64))      # run_blocks allocates nothing

    def run(self, launch: tuple, nblocks: int, room: int, record: bool) -> int:
        """Run blocks ``sched[0]…nblocks-1`` until done, full (``room`` rows at most) or a fault."""
        code, fx, okind, oreg, oval, oflag, ins_addr, grid_a, block_a, heap, g32, lo, hi, local_size, cb32 = launch
        room = min(self.rows_w.shape[0], room)
        return I.run_blocks(code, fx, okind, oreg, oval, oflag, ins_addr, grid_a, block_a, nblocks,
                            heap, g32, lo, hi, self.s8, self.s8.view(np.uint32), self.l8, self.l8.view(np.uint32),
                            local_size, cb32, self.regs, self.pm, self.lane_pc, self.lane_st, self.lane_wait, self.bar,
                            self.grp, self.wstat, self.sched, self.rows_w[:room], self.rows_i[:room],
                            self.rows_m[:room], self.rows_na[:room], self.addrs, self.cnt, self.err, *self.scratch,
                            record)

    def grow(self, rows: int, addrs: int) -> None:
        """Larger row buffers (``rows``) and address buffer (``addrs``), the recorded rows kept: one
        new array per buffer, filled from the old one (what :func:`_check_recording` counted)."""
        if rows > self.rows_w.shape[0]:
            self.rows_w = _grown(self.rows_w, rows)
            self.rows_i = _grown(self.rows_i, rows)
            self.rows_m = _grown(self.rows_m, rows)
            self.rows_na = _grown(self.rows_na, rows)
        if addrs > self.addrs.shape[0]:
            self.addrs = _grown(self.addrs, addrs)


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    b = np.empty(n, a.dtype)
    b[:a.shape[0]] = a
    return b


def execute(prog: Program, image: KernelImage, grid, block, shmem: int, params: bytes, mem: GlobalMemory,
            sink: RowSink, banks: dict[int, bytes] | None = None, max_rows: int = 64_000_000,
            compiled: Compiled | None = None, kernel_id: int = 0, stream: int = 0,
            chunk_rows: int = CHUNK_ROWS, progress: Callable[[int], None] | None = None,
            threads: int | None = None) -> int:
    """Run one launch (``grid``/``block`` checked by :func:`check_launch`) on ``mem`` with the
    packed parameter buffer ``params`` and the module's constant ``banks`` (default: the cubin's),
    handing its rows to ``sink`` in whole blocks; returns the warp instructions executed.

    The rows are recorded into fixed buffers of ``chunk_rows`` rows; when they fill, the rows of
    the blocks already finished go to the sink and the running block's rows move to the front
    (only a block longer than the buffers makes them grow). More than ``max_rows`` warp
    instructions is an :class:`EmulatorError`.

    With ``threads`` > 1 (default :func:`emu_threads`) the blocks run in waves on that many
    threads, each thread a contiguous range of blocks with its own state (:class:`_Worker`); the
    rows of a wave go to the sink in block order, so the trace and the memory are those of the
    serial run (:func:`serial_only` names the kernels that always run serially)."""
    nthreads = block[0] * block[1] * block[2]
    compiled = compiled or Compiled.of(prog, image)
    lw = compiled.lowered
    local_size = local_window(image)
    cb = constant_bank0(image, params, grid, block, local_size)
    all_banks = dict(image.banks if banks is None else banks)
    all_banks[0] = cb
    okind, oval, oflag, cb32 = flatten_banks(lw, all_banks)
    fx = specialize(lw.code, okind, lw.oreg, oval, oflag)
    shared_size = (image.shared_static + shmem + 3) // 4 * 4 or 4
    nw = (nthreads + 31) // 32
    nblocks = grid[0] * grid[1] * grid[2]
    info = KernelInfo(name=prog.name, kernel_id=kernel_id, grid=grid, block=block, shmem=image.shared_static + shmem,
                      nregs=image.nregs, binary_version=prog.sm, stream=stream)
    sink.start(info, compiled, nblocks * nw)
    heap = mem.heap
    launch = (lw.code, fx, okind, lw.oreg, oval, oflag, compiled.ins_addr, np.array(grid, np.int64),
              np.array(block, np.int64), heap, heap.view(np.uint32), mem.lo, mem.hi, local_size, cb32)
    nthr = emu_threads() if threads is None else max(1, int(threads))
    nthr = min(nthr, nblocks)
    if nthr > 1 and serial_only(lw, okind, oval) is None:
        return _execute_parallel(prog, lw, launch, nblocks, nw, shared_size, local_size, sink, max_rows, chunk_rows,
                                 progress, nthr, mem.describe, grid, block)
    cap = int(chunk_rows)
    if sink.record:
        _check_recording(prog.name, 0, cap * 16 + (cap * ADDRS_PER_ROW + 64) * 8, max_rows, sink, 0)
    wk = _Worker(nw, shared_size, local_size, cap)
    cnt, sched = wk.cnt, wk.sched
    while True:
        st = wk.run(launch, nblocks, max_rows + 1 - int(cnt[2]), sink.record)   # the row past max_rows stops the run
        rows_w, rows_i, rows_m, rows_na, addrs = wk.rows_w, wk.rows_i, wk.rows_m, wk.rows_na, wk.addrs
        n, na = int(cnt[0]), int(cnt[1])
        if st == I.ST_OK:
            if sink.record and n:
                sink.add(rows_w[:n], rows_i[:n], rows_m[:n], rows_na[:n], addrs[:na])
            return int(cnt[2]) + n
        if st != I.ST_FULL:
            raise _fault(wk.err, sched, lw, mem.describe, grid, block, local_size, shared_size)
        if int(cnt[2]) + n > max_rows:
            raise EmulatorError(f"kernel {prog.name}: more than {max_rows:,} warp instructions executed "
                                f"(stopped in block {int(sched[0])}): an endless loop, or a launch longer than --max-instructions")
        if progress is not None:
            progress(int(cnt[2]) + n)
        if not sink.record:
            cnt[0], cnt[1], cnt[2] = 0, 0, cnt[2] + n
            continue
        done = int(np.searchsorted(rows_w[:n] // nw, int(sched[0]), side="left"))   # rows of finished blocks
        if done == 0:            # one block fills the buffers: make them larger
            grow = 2 * rows_w.shape[0] if n >= rows_w.shape[0] else rows_w.shape[0]
            grow_a = 2 * addrs.shape[0] if na + 64 > addrs.shape[0] else addrs.shape[0]
            # each larger buffer is allocated while the one it replaces still holds the rows
            _check_recording(prog.name, int(cnt[2]) + n, (grow * 16 if grow > rows_w.shape[0] else 0)
                             + (grow_a * 8 if grow_a > addrs.shape[0] else 0), max_rows, sink, int(cnt[2]) + n)
            wk.grow(grow, grow_a)
            continue
        if sink.keeps:           # the rows handed on stay in memory, and are copied once more at the end
            _check_recording(prog.name, int(cnt[2]) + n, 0, max_rows, sink, int(cnt[2]) + done)
        adone = int(rows_na[:done].sum())
        sink.add(rows_w[:done], rows_i[:done], rows_m[:done], rows_na[:done], addrs[:adone])
        for a in (rows_w, rows_i, rows_m, rows_na):
            a[:n - done] = a[done:n].copy()
        addrs[:na - adone] = addrs[adone:na].copy()
        cnt[0], cnt[1], cnt[2] = n - done, na - adone, cnt[2] + done


def _run_range(wk: _Worker, launch: tuple, lo: int, hi: int, room: int, sink: RowSink, max_rows: int, before: int):
    """Blocks ``lo…hi-1`` on ``wk``, from a worker thread: ``(status, parts, rows, expanded)`` —
    the rows in execution order as copied parts when recording (a full buffer is emptied into a
    part), the count of rows, the status of the last call (ST_OK, a fault code, or ST_FULL when
    ``room`` rows were recorded and more were coming) and, when the range ran to its end, its rows
    expanded into trace columns (:func:`expand_rows`, in this thread). A part that would need more
    memory than the process may use is refused (:func:`_check_recording`; ``before``: the rows of
    the launch before this wave, for its message)."""
    wk.sched[0], wk.sched[1] = lo, 0
    wk.cnt[:] = 0
    parts = []
    record = sink.record
    while True:
        st = wk.run(launch, hi, room - int(wk.cnt[2]), record)
        n, na = int(wk.cnt[0]), int(wk.cnt[1])
        if record and n and st == I.ST_FULL:     # a copy of the full buffers: refused if memory lacks
            _check_recording(sink.info.name, before + int(wk.cnt[2]) + n, n * 16 + na * 8, max_rows, sink, 0)
        if record and n:
            parts.append((wk.rows_w[:n].copy(), wk.rows_i[:n].copy(), wk.rows_m[:n].copy(), wk.rows_na[:n].copy(),
                          wk.addrs[:na].copy()))
        wk.cnt[0], wk.cnt[1], wk.cnt[2] = 0, 0, wk.cnt[2] + n
        if st != I.ST_FULL or int(wk.cnt[2]) >= room:
            break
    expanded = None
    if record and st == I.ST_OK and parts:
        raw = parts[0] if len(parts) == 1 else tuple(np.concatenate(c) for c in zip(*parts))
        expanded = expand_rows(sink.compiled, sink.info, *raw, static=sink.static_rows)
    return st, parts, int(wk.cnt[2]), expanded


def _execute_parallel(prog, lw, launch, nblocks, nw, shared_size, local_size, sink, max_rows, chunk_rows, progress,
                      nthr, describe, grid, block) -> int:
    """:func:`execute` on ``nthr`` threads: waves of ``nthr`` contiguous block ranges (sized so
    that a wave records about ``chunk_rows`` rows), each range on its own :class:`_Worker`, its
    rows expanded into trace columns in its thread; the next wave runs while the main thread
    hands the last one's rows to the sink, in block order and, as the serial run does, in chunks
    of at least ``chunk_rows`` rows. The first fault in block order is the launch's error (ranges
    after it in its wave have run: global memory may hold their stores); more
    than ``max_rows`` rows names the block the serial run would have stopped in."""
    cap = max(int(chunk_rows) // nthr, 1 << 10)
    if sink.record:
        _check_recording(prog.name, 0, nthr * (cap * 16 + (cap * ADDRS_PER_ROW + 64) * 8), max_rows, sink, 0)
    workers = [_Worker(nw, shared_size, local_size, cap) for _ in range(nthr)]
    pool = _pool(nthr)
    total = 0
    nxt = 0
    per = 1                   # blocks per range: grows to about cap rows per range

    def submit(room: int):
        nonlocal nxt
        ranges = []
        for _ in range(nthr):
            if nxt < nblocks:
                ranges.append((nxt, min(nxt + per, nblocks)))
                nxt = ranges[-1][1]
        return ranges, [pool.submit(_run_range, wk, launch, lo, hi, room, sink, max_rows, max_rows + 1 - room)
                        for wk, (lo, hi) in zip(workers, ranges)]

    ranges, futures = submit(max_rows + 1)
    pending: list = []        # expanded rows not yet handed on (up to chunk_rows of them)
    try:
        while futures:
            results = [f.result() for f in futures]
            futures = []
            wave_rows = 0
            ready = []
            for wk, (lo, hi), (st, parts, rows, expanded) in zip(workers, ranges, results):
                if st >= 10:
                    raise _fault(wk.err, wk.sched, lw, describe, grid, block, local_size, shared_size)
                if total + rows > max_rows:
                    stop = _serial_stop(parts, max_rows - total, nw) if sink.record else int(wk.sched[0])
                    raise EmulatorError(f"kernel {prog.name}: more than {max_rows:,} warp instructions executed "
                                        f"(stopped in block {lo if stop is None else stop}): an endless loop, or a "
                                        f"launch longer than --max-instructions")
                total += rows
                wave_rows += rows
                if expanded is not None:
                    ready.append((total, expanded))
            per_block = max(wave_rows // (ranges[-1][1] - ranges[0][0]), 1)
            per = int(min(max(cap // per_block, 1), max(-(-(nblocks - nxt) // nthr), 1)))
            if nxt < nblocks:        # the next wave runs while this one's rows are handed on
                ranges, futures = submit(max_rows + 1 - total)
            pending.extend(ready)
            held = sum(e[1][0]["warp"].shape[0] for e in pending)
            if held >= chunk_rows or not futures:      # as the serial run: in chunks, whole blocks
                for upto, expanded in pending:
                    if sink.keeps:
                        _check_recording(prog.name, upto, 0, max_rows, sink, upto)
                    sink.accept(expanded)
                pending = []
            if progress is not None and futures:
                progress(total)
    finally:
        for f in futures:            # an error here: the running ranges end before the state goes
            f.exception()
    return total


_POOL: list = []


def _pool(n: int):
    """The process's worker threads for launches (at least ``n``; kept between launches: a
    program under ``teg trace app`` makes thousands)."""
    from concurrent.futures import ThreadPoolExecutor

    if _POOL and _POOL[0][1] != os.getpid():      # a forked child has none of the parent's threads
        _POOL.clear()
    if not _POOL or _POOL[0][0]._max_workers < n:
        if _POOL:
            _POOL.pop()[0].shutdown(wait=False)
        _POOL.append((ThreadPoolExecutor(max_workers=n, thread_name_prefix="teg-emu"), os.getpid()))
    return _POOL[0][0]


def _serial_stop(parts, k: int, nw: int) -> int | None:
    """The block of row ``k`` of a range's rows (the row past ``max_rows``: where the serial run stops)."""
    for p in parts:
        if k < p[0].shape[0]:
            return int(p[0][k]) // nw
        k -= p[0].shape[0]
    return None


def _check_recording(kernel: str, done: int, buffers: int, max_rows: int, sink: RowSink, kept: int) -> None:
    """Refuse, before it allocates, a recording that would need more memory than this process may
    use (:mod:`teg.hostmem`): ``buffers`` more bytes of row buffers, and for a sink that keeps its
    rows (``kept`` of them by then) their trace columns and the final trace built from them."""
    from teg.hostmem import EMU_ROW_BYTES, require

    need = buffers + (kept * EMU_ROW_BYTES if sink.keeps else 0)
    what = f"past {done:,} warp instructions" if done else "(its row buffers)"
    require(need, f"kernel {kernel}: recording its trace {what}",
            f"lower --max-instructions (now {max_rows:,}) to stop it sooner, or emulate a smaller launch (--grid)")


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
