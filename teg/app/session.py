"""``teg trace app``: run a CUDA program with teg's runtime in place of ``libcudart.so.13`` and every
kernel launch in the emulator, recording the launches asked for into one native trace folder.

The parent (this module) creates the device memory (:class:`teg.app.heap.DeviceHeap`) and a socket
pair, starts the program with ``LD_LIBRARY_PATH`` pointing at the runtime it built
(:mod:`teg.app.build`) and the two file descriptors in its environment, then answers the runtime's
requests (:mod:`teg.app.protocol`) until the program closes its end:

* ``MODULE``: the fatbinary → the cubin for the chosen architecture (:mod:`teg.app.fatbin`), read
  with :func:`teg.emu.cubin.read_module`; its variable sections get storage in device memory,
  initialised from the image, and the relocations that hold variables' addresses are applied;
* ``FUNCTION`` / ``VAR``: a kernel's parameter layout / a variable's device address;
* ``LAUNCH``: :func:`teg.emu.launch.execute` on the program's own memory with the module's
  constant banks as they are now (so ``cudaMemcpyToSymbol`` before a launch is seen); a selected
  launch streams its trace into the output, others run untraced. A memory fault is reported on
  stderr and returned to the program as a sticky error (later calls fail, as on a GPU); an opcode
  the emulator lacks, a launch past ``--max-instructions`` or a call teg does not implement stops
  the program, and teg exits 2 with no output written.

A *launch hook* (``Session(hook=…)``, :class:`LaunchHook`) sees every launch before it runs (a
:class:`LaunchView`: kernel, geometry, parameters, SASS, constant banks, device memory) and may
take its rows instead of the output folder, as a :class:`teg.emu.launch.RowSink` of its own (to
estimate each launch as soon as it ran and keep no trace on disk); it is told when the launch has
run, with its warp instructions or its fault.

The output is the native trace format (:mod:`teg.trace.native`) with one kernel per traced launch,
in launch order (kernel id = launch number, counted from 1), and an ``application`` entry in
``meta.json``: the command line, the exit status, the machine, the launch count and, per traced
launch, its parameters and the allocations live when it ran. ``program.sass`` beside it holds the
disassembly of every module that ran a kernel (cuobjdump), which ``teg estimate --trace FOLDER``
reads for the control codes.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from teg import TegError
from teg.app import protocol as P
from teg.app.device import (DEFAULT_SHARED_PER_BLOCK, attribute, func_attributes, max_threads, properties)
from teg.app.heap import DeviceHeap, default_size
from teg.emu import interp as I
from teg.emu.errors import EmulatorError, MemoryFault

MSG = {v: k for k, v in P.MESSAGES.items()}
OK, ERR, TERM = P.STATUS["OK"], P.STATUS["ERROR"], P.STATUS["TERMINATE"]
VARIABLES = 3                  # heap allocation kind of the modules' variable sections
FAULT_CODES = {I.E_GLOBAL: 700, I.E_SHARED: 700, I.E_LOCAL: 700, I.E_CONST: 700, I.E_ALIGN: 716}
EXIT_TEG = 2
SASS_FILE = "program.sass"     # the disassembly of the modules whose kernels ran, in the output folder


class AppError(TegError):
    """``teg trace app`` could not run the program (refused before it started)."""


class Stop(Exception):
    """teg stops the program: the message is printed, the program exits, teg exits 2."""


@dataclass
class Module:
    """One registered fatbinary."""

    id: int
    error: str | None = None          # why none of its kernels can run
    image: object = None              # teg.emu.cubin.ModuleImage
    cubin: Path | None = None
    storage: dict[str, int] = field(default_factory=dict)     # variable section → heap offset
    text_refs: dict[str, list[str]] = field(default_factory=dict)   # kernel → symbols its code holds
    unresolved: dict[tuple[int, int], str] = field(default_factory=dict)  # (bank, offset) → function named
    unresolved_data: list[str] = field(default_factory=list)   # functions whose address a variable holds
    programs: dict | None = None      # kernel name → teg.sass.Program (disassembled on first launch)


@dataclass
class Kernel:
    id: int
    module: Module
    name: str
    image: object = None              # teg.emu.cubin.KernelImage
    compiled: object = None           # teg.emu.launch.Compiled
    max_dynamic: int = 0
    demangled: str | None = None
    launch_id: int = 0

    @property
    def kernel_id(self) -> int:       # for teg.trace.application.kernel_matcher
        return self.launch_id


@dataclass
class LaunchView:
    """One launch as a :class:`LaunchHook` sees it, before it runs: ``id`` counted from 1, the
    kernel's mangled name, geometry, dynamic shared memory, stream, the packed parameter buffer, the
    SASS (``program``, a :class:`teg.sass.Program` with control codes) and cubin image, the constant
    banks the launch reads, and device memory as the launch finds it: ``memory`` (bytes; byte 0 is
    the program's address ``base``) and the live ``allocations`` (program address, bytes)."""

    id: int
    kernel: str
    grid: tuple
    block: tuple
    shmem: int
    stream: int
    params: bytes
    program: object
    image: object
    banks: dict
    memory: np.ndarray
    base: int
    allocations: list


class LaunchHook:
    """Per-launch callbacks of a :class:`Session` (the default does nothing)."""

    def before(self, launch: LaunchView):
        """A :class:`teg.emu.launch.RowSink` that receives the launch's rows (then the launch is not
        written to the output folder), or None (the session's own choice: traced if selected)."""
        return None

    def after(self, launch: LaunchView, rows: int | None, fault: str | None) -> None:
        """The launch has run: ``rows`` warp instructions, or ``fault`` (rows None)."""


class Session:
    """One run of one program (see the module docstring)."""

    def __init__(self, argv: list[str], out: Path, machine: str | None = None, launches: str | None = None,
                 max_instructions: int = 500_000_000, estimate: bool = False, force: bool = False,
                 device_memory: int | None = None, progress: bool | None = None, stop_after: int | None = None,
                 hook: LaunchHook | None = None):
        from teg.trace.application import ApplicationError, kernel_matcher
        from teg.app.program import check, resolve

        if not argv:
            raise AppError("no program given: teg trace app -o FOLDER -- PROGRAM [ARGS...]")
        self.program = resolve(argv[0])
        check(self.program)
        self.argv = list(argv)
        self.command = list(argv)
        self.out = Path(out)
        self.machine_name = machine
        self.machine = None
        self.target: int | None = None
        if machine is not None:
            import teg.machine as tm
            self.machine = tm.load(machine)
            self.target = self.machine.sm
        try:
            self.match = kernel_matcher(launches) if launches else None
        except ApplicationError as exc:
            raise AppError(str(exc).replace("--kernel", "--launches")) from None
        self.launch_spec = launches
        self.max_rows = int(max_instructions)
        if self.max_rows < 1:
            raise AppError(f"--max-instructions {max_instructions}: must be at least 1")
        self.estimate = estimate
        self.force = force
        self.stop_after = stop_after
        if stop_after is not None and stop_after < 1:
            raise AppError(f"--stop-after {stop_after}: must be at least 1")
        self.stopped_after: int | None = None
        self.hook = hook
        self.device_memory = int(device_memory) if device_memory else default_size()
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.modules: list[Module] = []
        self.kernels: list[Kernel] = []
        self.launch_count = 0
        self.traced: list[dict] = []
        self.memcpy: list[tuple[int, int]] = []
        self.faults: list[str] = []
        self.rows_total = 0
        self.emulated_s = 0.0
        self.clock_us = 0.0
        self.stopped: str | None = None
        self.hello = False
        self.sass_texts: list[str] = []
        self.sass_lines = 0
        self._last_progress = 0.0

    # ---- the run ---------------------------------------------------------------------------------

    def run(self) -> int:
        """Run the program; returns the exit status teg should exit with."""
        from teg import fileio
        from teg.app.build import library_dir
        from teg.trace.native import TraceWriter, replaceable

        fileio.prepare(self.out, replaceable, self.force)          # refuse before running, not after
        libdir = library_dir()
        self.writer = TraceWriter(self.out, source=str(self.program), force=self.force)
        self.work = Path(tempfile.mkdtemp(prefix="teg-app-"))
        self.heap = parent = child = proc = None
        start = time.perf_counter()
        try:
            self.heap = DeviceHeap(self.device_memory)
            parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            env = dict(os.environ)
            env["LD_LIBRARY_PATH"] = os.pathsep.join([str(libdir)] + ([env["LD_LIBRARY_PATH"]]
                                                                       if env.get("LD_LIBRARY_PATH") else []))
            env[P.ENV_SOCKET], env[P.ENV_MEMFD] = str(child.fileno()), str(self.heap.fd)
            env[P.ENV_MEMSIZE] = str(self.heap.size)
            proc = subprocess.Popen(self.argv, executable=str(self.program.resolve()), env=env,
                                    pass_fds=(child.fileno(), self.heap.fd))
            child.close()
            self._serve(parent)
            status = proc.wait()
        except BaseException:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
            self.writer.abort()
            raise
        finally:
            for end in (parent, child):
                if end is not None and end.fileno() >= 0:
                    end.close()
            if self.heap is not None:
                self.heap.close()
            shutil.rmtree(self.work, ignore_errors=True)
        self._clear_progress()
        wall = time.perf_counter() - start
        if self.stopped_after is not None:
            status = None
        elif status < 0:
            name = signal.Signals(-status).name if -status in signal.Signals._value2member_map_ else str(-status)
            self._say(f"the program was killed by signal {-status} ({name})")
            status = 128 - status
        if self.stopped is not None:
            self.writer.abort()
            return EXIT_TEG
        if not self.hello:
            self.writer.abort()
            raise AppError(f"{self.program}: ran without loading teg's libcudart.so.13 (exit status {status}); "
                           "an RPATH in the program may point at the real CUDA runtime: rebuild without it")
        if self.sass_texts:
            (self.writer.tmp / SASS_FILE).write_text("".join(self.sass_texts))
        self.writer.meta["memcpy"] = [list(m) for m in self.memcpy]
        self.writer.meta["application"] = {
            "command": self.command, "program": str(self.program), "exit_status": status,
            "machine": self.machine.name if self.machine is not None else None,
            "stopped_after": self.stopped_after,
            "launches": self.launch_count, "traced": len(self.traced), "launch_selection": self.launch_spec,
            "warp_instructions": self.rows_total, "faults": self.faults,
            "sass": SASS_FILE if self.sass_texts else None, "traced_launches": self.traced}
        self.writer.commit()
        end = (f"teg stopped the program after launch {self.stopped_after} (--stop-after)" if status is None
               else f"the program exited with status {status}")
        self._say(f"{self.launch_count} launch{'es' if self.launch_count != 1 else ''} ({len(self.traced)} traced), "
                  f"{self.rows_total:,} warp instructions emulated in {self.emulated_s:.1f} s ({wall:.1f} s in all); "
                  f"trace {self.out}; {end}")
        if status is None:
            return 0
        if self.faults and status == 0:
            self._say("a kernel faulted but the program exited with status 0: teg exits 1")
            return 1
        return status

    def _say(self, text: str) -> None:
        self._clear_progress()
        print(f"teg: {text}", file=sys.stderr, flush=True)

    # ---- the conversation ------------------------------------------------------------------------

    def _serve(self, sock: socket.socket) -> None:
        rf = sock.makefile("rb", buffering=1 << 16)
        handlers = {P.MESSAGES[name]: getattr(self, f"_on_{name.lower()}") for name in P.MESSAGES}
        no_reply = {P.MESSAGES[n] for n in P.NO_REPLY}
        while True:
            head = rf.read(16)
            if len(head) < 16:
                return
            typ, _, n = struct.unpack(P.HEADER, head)
            payload = rf.read(n)
            if len(payload) < n:
                return
            handler = handlers.get(typ)
            try:
                if handler is None:
                    raise Stop(f"unknown request {typ} from teg's runtime (a runtime of another teg version?)")
                status, code, reply = handler(payload)
            except Stop as exc:
                self._say(f"error: {exc}")
                self.stopped = str(exc)
                status, code, reply = TERM, EXIT_TEG, b""
            if typ not in no_reply:
                try:
                    sock.sendall(struct.pack(P.HEADER, status, code, len(reply)) + reply)
                except OSError:
                    return

    def _on_hello(self, payload: bytes):
        base, size, _pid, _ = struct.unpack_from("<QQII", payload)
        if size != self.heap.size:
            raise Stop(f"the runtime mapped {size} bytes of device memory, teg shares {self.heap.size}")
        self.heap.base = base
        self.hello = True
        return OK, 0, b""

    def _on_missing(self, payload: bytes):
        name = payload.decode("latin1")
        raise Stop(f"{self.program.name} called {name}, which teg's CUDA runtime does not implement")

    def _on_copy(self, payload: bytes):
        dst, n = struct.unpack("<QQ", payload)
        self.memcpy.append((dst, n))
        return OK, 0, b""

    # ---- modules, kernels, variables -------------------------------------------------------------

    def _on_module(self, fb: bytes):
        from teg.app import fatbin
        from teg.emu.cubin import read_module

        m = Module(len(self.modules) + 1)
        self.modules.append(m)
        where = f"{self.program.name}: module {m.id}"
        try:
            found = fatbin.entries(fb, where)
        except EmulatorError as exc:
            m.error = str(exc)
            return OK, 0, struct.pack("<I", m.id)
        if self.target is None and fatbin.choose(found, None) is not None:
            self.target = fatbin.choose(found, None).sm
        entry = fatbin.choose(found, self.target) if self.target is not None else None
        if entry is None:
            want = f"sm_{self.target}" if self.target else "any GPU"
            m.error = (f"{where} holds {fatbin.describe(found)}: no SASS that {want} runs, and teg has no PTX "
                       f"compiler: rebuild with -arch=sm_{self.target or 90}" +
                       (" or choose another --machine" if self.machine_name else ""))
            return OK, 0, struct.pack("<I", m.id)
        try:
            m.cubin = self.work / f"module{m.id}.sm_{entry.sm}.cubin"
            m.cubin.write_bytes(fatbin.cubin(fb, entry, where))
            m.image = read_module(m.cubin)
            self._place_variables(m)
        except (EmulatorError, Stop) as exc:
            m.error = str(exc)
        return OK, 0, struct.pack("<I", m.id)

    def _place_variables(self, m: Module) -> None:
        """Storage for the module's variable sections (initialised from the image), then the
        relocations that write variables' addresses into them."""
        from teg.emu.cubin import R_CUDA_64, R_CUDA_G64, is_module_data

        img, heap = m.image, self.heap
        for name, (size, data) in img.sections.items():
            off = heap.alloc(size, VARIABLES, f"{name} of module {m.id}")
            if off is None:
                raise Stop(f"no device memory left for the variables of module {m.id}")
            if data:
                heap.bytes[off:off + len(data)] = memoryview(data)
            m.storage[name] = off
        for r in img.relocations:
            if r.section.startswith(".text."):
                if r.symbol.type == 1 or not r.symbol.section:     # a variable's address, or a call outside
                    m.text_refs.setdefault(r.section[len(".text."):], []).append(r.symbol.name)
                continue
            if r.section not in m.storage:
                continue
            if not is_module_data(r.symbol.section):
                # a function's address (vprintf for device printf, a __device__ function): left 0;
                # a kernel that reads it is refused at its launch
                if r.section.startswith(".nv.constant"):
                    m.unresolved[(int(r.section[len(".nv.constant"):]), r.offset)] = r.symbol.name
                else:
                    m.unresolved_data.append(r.symbol.name)
                continue
            if r.type not in (R_CUDA_64, R_CUDA_G64):
                raise Stop(f"module {m.id}: relocation type {r.type} of {r.symbol.name} in {r.section} is not "
                           "supported by teg")
            place = m.storage[r.section] + r.offset
            addend = r.addend if r.explicit else int.from_bytes(heap.bytes[place:place + 8].tobytes(), "little")
            value = heap.base + m.storage[r.symbol.section] + r.symbol.value + addend
            heap.bytes[place:place + 8] = memoryview(struct.pack("<Q", value & (2**64 - 1)))

    def _on_function(self, payload: bytes):
        mid, _, _host = struct.unpack_from("<IIQ", payload)
        name = payload[16:].decode("latin1")
        m = self.modules[mid - 1]
        k = Kernel(len(self.kernels), m, name)
        self.kernels.append(k)
        params = []
        if m.error is None and m.image is not None and name in m.image.kernels:
            k.image = m.image.kernels[name]
            params = k.image.params
            k.max_dynamic = max(0, DEFAULT_SHARED_PER_BLOCK - k.image.shared_static)
        pbytes = max((p.offset + p.size for p in params), default=0)
        body = struct.pack("<IIII", k.id, len(params), pbytes, 0) + b"".join(struct.pack("<II", p.offset, p.size)
                                                                             for p in params)
        return OK, 0, body

    def _on_var(self, payload: bytes):
        mid, _flags, _host, size = struct.unpack_from("<IIQQ", payload)
        name = payload[24:].decode("latin1")
        m = self.modules[mid - 1]
        sym = m.image.objects.get(name) if m.image is not None else None
        if sym is not None and sym.section in m.storage:
            return OK, 0, struct.pack("<Q", self.heap.base + m.storage[sym.section] + sym.value)
        off = self.heap.alloc(size, VARIABLES, f"variable {name} of module {m.id} (not in its cubin)")
        if off is None:
            raise Stop(f"no device memory left for variable {name}")
        return OK, 0, struct.pack("<Q", self.heap.base + off)

    # ---- memory ----------------------------------------------------------------------------------

    def _on_malloc(self, payload: bytes):
        kind, _, n = struct.unpack("<IIQ", payload)
        off = self.heap.alloc(n, kind)
        if off is None:
            return ERR, P.ERROR["cudaErrorMemoryAllocation"], b""
        return OK, 0, struct.pack("<Q", self.heap.base + off)

    def _on_free(self, payload: bytes):
        kind, _, addr = struct.unpack("<IIQ", payload)
        a = self.heap.allocs.get(addr - self.heap.base)
        allowed = (P.ALLOC_KINDS["HOST"],) if kind == P.ALLOC_KINDS["HOST"] else (P.ALLOC_KINDS["DEVICE"],
                                                                                   P.ALLOC_KINDS["MANAGED"])
        if a is None or a.kind not in allowed:
            return ERR, P.ERROR["cudaErrorInvalidValue"], b""
        self.heap.release(a.offset)
        return OK, 0, b""

    def _on_pointer(self, payload: bytes):
        (addr,) = struct.unpack("<Q", payload)
        a = self.heap.find(addr)
        if a is None:
            return OK, 0, struct.pack("<IIQQ", 0, 0, 0, 0)
        typ = {P.ALLOC_KINDS["HOST"]: 1, P.ALLOC_KINDS["MANAGED"]: 3}.get(a.kind, 2)
        return OK, 0, struct.pack("<IIQQ", typ, 0, self.heap.base + a.offset, a.size)

    def _on_reset(self, payload: bytes):
        self.heap.reset(VARIABLES)
        return OK, 0, b""

    def _on_meminfo(self, payload: bytes):
        return OK, 0, struct.pack("<QQ", max(self.heap.size - self.heap.used, 0), self.heap.size)

    # ---- device ----------------------------------------------------------------------------------

    def _need_machine(self, what: str):
        if self.machine is None:
            if self.target is None:
                raise Stop(f"the program asked for {what} before registering any SASS: give --machine")
            import teg.machine as tm
            self.machine = tm.load(tm.for_arch(self.target))
        return self.machine

    def _on_properties(self, payload: bytes):
        return OK, 0, properties(self._need_machine("the device properties"), self.heap.size)

    def _on_device_attr(self, payload: bytes):
        attr, _dev = struct.unpack("<II", payload)
        value = attribute(self._need_machine("a device attribute"), self.heap.size, attr)
        if value is None:
            raise Stop(f"{self.program.name} called cudaDeviceGetAttribute for attribute {attr}, for which teg's "
                       "machine table has no value")
        return OK, 0, struct.pack("<i", value)

    def _kernel(self, kid: int) -> Kernel:
        if not 0 <= kid < len(self.kernels):
            raise Stop(f"the runtime named kernel {kid}, which was never registered")
        k = self.kernels[kid]
        if k.module.error is not None:
            raise Stop(f"kernel {k.name}: {k.module.error}")
        if k.image is None:
            raise Stop(f"kernel {k.name} is not in module {k.module.id}'s cubin")
        return k

    def _on_func_attrs(self, payload: bytes):
        k = self._kernel(struct.unpack("<I", payload[:4])[0])
        m = self._need_machine("kernel attributes")
        const = k.module.image.sections.get(".nv.constant3", (0, None))[0]
        return OK, 0, func_attributes(m, k.image.shared_static, const, k.image.local_frame, k.image.nregs,
                                      k.module.image.sm, k.max_dynamic)

    def _on_func_set(self, payload: bytes):
        kid, attr, value = struct.unpack("<IIq", payload)
        k = self._kernel(kid)
        m = self._need_machine("kernel attributes")
        if attr == 8:            # cudaFuncAttributeMaxDynamicSharedMemorySize
            if value < 0 or value + k.image.shared_static > m.shared.max_per_block:
                return ERR, P.ERROR["cudaErrorInvalidValue"], b""
            k.max_dynamic = int(value)
        elif attr != 9:          # cudaFuncAttributePreferredSharedMemoryCarveout: a hint
            raise Stop(f"{self.program.name} called cudaFuncSetAttribute with attribute {attr}, which teg's "
                       "runtime does not implement")
        return OK, 0, b""

    def _on_occupancy(self, payload: bytes):
        from teg.engine.occupancy import OccupancyError, occupancy

        kid, threads, dyn, what, blocks = struct.unpack("<IIQII", payload)
        k = self._kernel(kid)
        m = self._need_machine("occupancy")
        if what == P.OCC["BLOCKS"]:
            try:
                n = occupancy(m, threads, k.image.nregs, k.image.shared_static + dyn).blocks
            except OccupancyError:
                n = 0
            return OK, 0, struct.pack("<q", n)
        # the dynamic shared memory left per block when `blocks` blocks share an SM
        sh = m.shared
        per_block = (sh.size_per_sm // max(blocks, 1)) // sh.alloc_unit * sh.alloc_unit - sh.reserved_per_block
        return OK, 0, struct.pack("<q", max(0, min(per_block, sh.max_per_block) - k.image.shared_static))

    # ---- launches --------------------------------------------------------------------------------

    def _on_launch(self, payload: bytes):
        from teg.trace.model import launch_problem

        kid, gx, gy, gz, bx, by, bz, _, shmem, stream = struct.unpack_from("<IIIIIIIIQQ", payload)
        params = payload[48:]
        k = self._kernel(kid)
        m = self._need_machine("a launch")
        grid, block = (gx, gy, gz), (bx, by, bz)
        if launch_problem(grid, block):
            return ERR, P.ERROR["cudaErrorInvalidConfiguration"], b""
        if bx * by * bz > max_threads(m, k.image.nregs):
            return ERR, P.ERROR["cudaErrorLaunchOutOfResources"], b""
        if shmem > k.max_dynamic:
            return ERR, P.ERROR["cudaErrorInvalidValue"], b""
        refs = k.module.text_refs.get(k.name)
        if refs:
            raise Stop(f"kernel {k.name}: its code refers to {', '.join(sorted(set(refs)))} through relocated "
                       "immediates (device printf, function pointers or -rdc linking), which teg does not emulate")
        self.launch_count += 1
        lid = self.launch_count
        fault = self._run_launch(k, lid, grid, block, int(shmem), int(stream), params)
        if lid == self.stop_after:
            self.stopped_after = lid
            return TERM, 0, b""                # the program exits (status 0) inside this launch call
        return OK, 0, struct.pack("<IId", fault, 0, self.clock_us)

    def _selected(self, k: Kernel, lid: int) -> bool:
        if self.match is None:
            return True
        from teg.trace.application import ID_LIST

        if k.demangled is None and not ID_LIST.match(self.launch_spec):
            from teg.sass.demangle import demangle_all
            k.demangled = demangle_all([k.name]).get(k.name) or ""
        k.launch_id = lid
        return bool(self.match(k))

    def _compiled(self, k: Kernel):
        from teg.emu.launch import Compiled

        if k.compiled is None:
            m = k.module
            if m.programs is None:
                m.programs = self._disassemble(m)
            prog = m.programs.get(k.name)
            if prog is None:
                raise Stop(f"kernel {k.name}: no SASS for it in the disassembly of module {m.id}")
            k.compiled = Compiled.of(prog, k.image)
            self._check_references(k)
        return k.compiled

    def _check_references(self, k: Kernel) -> None:
        """Refuse a kernel that reads the address of a function teg does not provide (device-side
        printf reads vprintf's from bank 4) or whose module initialises variables with function
        addresses (function-pointer tables): the emulator has no code at those addresses."""
        from teg.emu import ops as O

        m, lw = k.module, k.compiled.lowered
        names = set(m.unresolved_data)
        if m.unresolved:
            banks = {b for b, _ in m.unresolved}
            for r, c in zip(*np.nonzero(lw.okind == O.K_CONST)):
                name = m.unresolved.get((int(lw.oreg[r, c]), int(lw.oval[r, c])))
                if name is not None:
                    names.add(name)
            cidx = lw.okind == O.K_CIDX
            if cidx.any() and banks & {int(b) for b in (lw.oflag[cidx] >> 24) & 0xFF}:
                names.update(m.unresolved.values())
        if names:
            what = ", ".join(sorted(names))
            why = "device-side printf" if names == {"vprintf"} else "function addresses"
            raise Stop(f"kernel {k.name} uses {what} ({why}), which teg does not emulate")

    def _disassemble(self, m: Module) -> dict:
        """The kernels of ``m``'s cubin, disassembled by cuobjdump; the listing is appended to the
        output's ``program.sass`` (and parsed as lines of that file, so messages name its lines)."""
        from teg.sass.parser import parse_text
        from teg.sass.reader import disassemble

        text = disassemble(m.cubin)
        if not text.endswith("\n"):
            text += "\n"
        source = str(self.out / SASS_FILE)
        programs = parse_text("\n" * self.sass_lines + text, source=source)
        self.sass_texts.append(text)
        self.sass_lines += text.count("\n")
        return {p.name: p for p in programs}

    def _banks(self, k: Kernel) -> dict[int, bytes]:
        """The kernel's constant banks with the module's ``__constant__`` banks read from device
        memory now (the values ``cudaMemcpyToSymbol`` wrote)."""
        banks = dict(k.image.banks)
        m, heap = k.module, self.heap
        for name, off in m.storage.items():
            if name.startswith(".nv.constant"):
                size = m.image.sections[name][0]
                banks[int(name[len(".nv.constant"):])] = heap.bytes[off:off + size].tobytes()
        return banks

    def _run_launch(self, k: Kernel, lid: int, grid, block, shmem: int, stream: int, params: bytes) -> int:
        from teg.emu.launch import Discard, GlobalMemory, TraceStreamer, execute
        from teg.trace.native import KernelWriter

        compiled = self._compiled(k)
        lo, hi = self.heap.ranges()
        banks = self._banks(k)
        view = hooked = None
        if self.hook is not None:
            view = LaunchView(lid, k.name, grid, block, shmem, stream, params, compiled.program, k.image, banks,
                              self.heap.bytes, self.heap.base, [(int(a), int(b) - int(a)) for a, b in zip(lo[1:], hi[1:])])
            hooked = self.hook.before(view)
        selected = hooked is None and self._selected(k, lid)
        writer = None
        if selected:
            writer = self.writer.kernel()
        elif self.estimate and hooked is None:
            writer = KernelWriter(self.work / f"scratch{lid}", compact=False)    # mapped by _estimate, not decoded
        sink = hooked if hooked is not None else TraceStreamer(writer) if writer is not None else Discard()
        mem = GlobalMemory(self.heap.bytes, lo, hi, self.heap.describe)
        t0 = time.perf_counter()
        try:
            rows = execute(compiled.program, k.image, grid, block, shmem, params, mem, sink, banks,
                           max_rows=self.max_rows, compiled=compiled, kernel_id=lid, stream=stream,
                           progress=lambda n: self._show(lid, k, n))
        except MemoryFault as exc:
            if writer is not None:
                writer.abort()
            code = FAULT_CODES.get(getattr(exc, "emu_code", None), 700)
            self._say(f"launch {lid}: {exc}")
            self.faults.append(f"launch {lid}: {exc}")
            if view is not None:
                self.hook.after(view, None, str(exc))
            return code
        except EmulatorError as exc:
            if writer is not None:
                writer.abort()
            raise Stop(f"launch {lid} ({k.name}): {exc}") from None
        finally:
            self.emulated_s += time.perf_counter() - t0
        self.rows_total += rows
        if view is not None:
            self.hook.after(view, rows, None)
        entry = sink.finish() if writer is not None else None
        if selected:
            self.writer.add(entry)
            self.traced.append({"id": lid, "kernel": k.name, "grid": list(grid), "block": list(block),
                                "dynamic_shared": shmem, "stream": stream, "warp_instructions": rows,
                                "params": params.hex(),
                                "allocations": [[int(a), int(b) - int(a)] for a, b in zip(lo[1:], hi[1:])]})
        if self.estimate and writer is not None:
            self.clock_us += self._estimate(compiled, writer.dir.parent, entry)
            if not selected:
                shutil.rmtree(writer.dir, ignore_errors=True)
        self._show(lid, k, rows, force=True)
        return 0

    def _estimate(self, compiled, folder: Path, entry: dict) -> float:
        """teg's estimate (µs) of the launch whose trace ``entry`` was written under ``folder``."""
        from teg.engine.kernel_inputs import load_inputs
        from teg.engine.runner import run_kernel
        from teg.trace.native import load_kernel_folder

        kt = load_kernel_folder(folder, entry)
        r = run_kernel(load_inputs(sass=compiled.program, trace=kt, machine=self.machine)).result
        return float(r.time_us or 0.0)

    # ---- progress (a terminal only) --------------------------------------------------------------

    def _show(self, lid: int, k: Kernel, rows: int, force: bool = False) -> None:
        if not self.progress:
            return
        now = time.perf_counter()
        if not force and now - self._last_progress < 0.25:
            return
        self._last_progress = now
        text = f"teg: launch {lid} {k.name[:40]}: {rows:,} warp instructions ({self.rows_total:,} in all)"
        sys.stderr.write("\r" + text[:120].ljust(120))
        sys.stderr.flush()
        self._shown = True

    def _clear_progress(self) -> None:
        if self.progress and getattr(self, "_shown", False):
            sys.stderr.write("\r" + " " * 120 + "\r")
            sys.stderr.flush()
            self._shown = False
