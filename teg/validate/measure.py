"""``teg validate measure``: run the validation suite on the local GPU and record cycles.

The launcher talks to the CUDA driver (``libcuda.so``) through ctypes — no CuPy/PyTorch needed:
cubins compiled by nvcc are loaded with ``cuModuleLoadData`` and launched with ``cuLaunchKernel``.

Per case and warp count (method of TEG report §5.1, adapted to per-SM clocks; see
:mod:`teg.validate.suite`): one untimed warm-up launch, then ``repeats`` launches; each launch
writes per block ``clock64`` start/end and ``%smid``; the launch's cycles are the median over SMs of
``max(end) − min(start)`` over the SM's blocks; the case's cycles are the median over launches,
with min/max and the spread. Kernel time from CUDA events (includes launch overhead) is recorded
alongside, as milliseconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as _dt
import os
import platform
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from teg import TegError, __version__
from teg.validate import suite as suite_mod
from teg.validate.suite import Case, Launch, Suite

SCHEMA = "teg.validate.measured/1"


class CudaError(TegError):
    """No usable CUDA driver or GPU, or a driver call failed."""


# ------------------------------------------------------------------------ timing-record reduction

@dataclass(frozen=True)
class LaunchCycles:
    """Cycles of one launch, reduced from the per-block records."""

    cycles: float                 # median over SMs of per-SM elapsed cycles
    per_sm: dict[int, float]      # smid -> max(end) - min(start) of its blocks
    blocks_per_sm: dict[int, int]  # smid -> number of blocks it ran


def reduce_records(records: np.ndarray) -> LaunchCycles:
    """Per-SM elapsed cycles from block records ``[G, 4] = (start, end, smid, 0)``.

    Counters of different SMs are unrelated (CUDA C++ Programming Guide, "Time Function":
    ``clock64()`` reads a per-multiprocessor counter), so a span is only taken
    within one SM: ``max(end) − min(start)`` over the blocks that ran there."""
    rec = np.asarray(records, dtype=np.uint64).reshape(-1, suite_mod.TIMING_WORDS)
    if rec.shape[0] == 0:
        raise CudaError("no timing records")
    start, end, smid = rec[:, 0].astype(np.int64), rec[:, 1].astype(np.int64), rec[:, 2].astype(np.int64)
    if np.any(end < start) or np.any((start == 0) & (end == 0)):
        raise CudaError("a block wrote no timing record or end < start (kernel did not run as expected)")
    per_sm: dict[int, float] = {}
    counts: dict[int, int] = {}
    for sm in np.unique(smid):
        sel = smid == sm
        per_sm[int(sm)] = float(end[sel].max() - start[sel].min())
        counts[int(sm)] = int(sel.sum())
    return LaunchCycles(cycles=float(statistics.median(per_sm.values())), per_sm=per_sm, blocks_per_sm=counts)


def summarize(samples: list[float]) -> dict[str, float]:
    """Median of the repeats and their spread (min, max, (max−min)/median)."""
    if not samples:
        raise CudaError("no samples to summarize")
    med = float(statistics.median(samples))
    lo, hi = float(min(samples)), float(max(samples))
    return {"cycles": med, "cycles_min": lo, "cycles_max": hi,
            "spread": (hi - lo) / med if med else 0.0, "repeats": len(samples)}


# ---------------------------------------------------------------------------------- the driver

_ATTR = {"clock_rate_khz": 13, "multiprocessor_count": 16, "memory_clock_khz": 36, "bus_width": 37,
         "l2_cache_size": 38, "max_threads_per_sm": 39, "cc_major": 75, "cc_minor": 76,
         "max_shared_per_sm": 81}
_FUNC_ATTR = {"shared_bytes": 1, "num_regs": 4}


class Driver:
    """Minimal ctypes binding to the CUDA driver API (the calls the suite needs)."""

    def __init__(self, device: int = 0, library: str | None = None):
        name = library or os.environ.get("TEG_LIBCUDA") or ctypes.util.find_library("cuda") or "libcuda.so.1"
        try:
            self.lib = ctypes.CDLL(name)
        except OSError as exc:
            raise CudaError(f"cannot load the CUDA driver library ({name}): {exc}; "
                            "`teg validate measure` needs an NVIDIA GPU with its driver") from None
        self._check(self.lib.cuInit(0), "cuInit")
        count = ctypes.c_int()
        self._check(self.lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        if count.value <= device:
            raise CudaError(f"no CUDA device {device} (the driver sees {count.value})")
        self.device = ctypes.c_int()
        self._check(self.lib.cuDeviceGet(ctypes.byref(self.device), device), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device),
                    "cuDevicePrimaryCtxRetain")
        self._check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        self.lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        self.lib.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
        self.lib.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
        self.lib.cuMemsetD8_v2.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t]
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]

    def _check(self, status: int, call: str) -> None:
        if status != 0:
            msg = ctypes.c_char_p()
            try:
                self.lib.cuGetErrorName(status, ctypes.byref(msg))
                name = msg.value.decode() if msg.value else str(status)
            except AttributeError:
                name = str(status)
            raise CudaError(f"CUDA driver call {call} failed: {name} ({status})")

    # -- device facts
    def attribute(self, key: str) -> int | None:
        val = ctypes.c_int()
        status = self.lib.cuDeviceGetAttribute(ctypes.byref(val), _ATTR[key], self.device)
        return val.value if status == 0 else None

    def name(self) -> str:
        buf = ctypes.create_string_buffer(256)
        self._check(self.lib.cuDeviceGetName(buf, 256, self.device), "cuDeviceGetName")
        return buf.value.decode(errors="replace")

    def driver_version(self) -> int:
        v = ctypes.c_int()
        self._check(self.lib.cuDriverGetVersion(ctypes.byref(v)), "cuDriverGetVersion")
        return v.value

    def info(self) -> dict:
        major, minor = self.attribute("cc_major"), self.attribute("cc_minor")
        clock = self.attribute("clock_rate_khz")
        mem_clock = self.attribute("memory_clock_khz")
        drv = self.driver_version()
        return {"name": self.name(), "sm": 10 * (major or 0) + (minor or 0), "arch": f"sm_{major}{minor}",
                "num_sms": self.attribute("multiprocessor_count"),
                "clock_mhz": clock / 1000.0 if clock else None,
                "memory_clock_mhz": mem_clock / 1000.0 if mem_clock else None,
                "memory_bus_bits": self.attribute("bus_width"), "l2_bytes": self.attribute("l2_cache_size"),
                "max_shared_per_sm": self.attribute("max_shared_per_sm"),
                "driver_version": f"{drv // 1000}.{(drv % 1000) // 10}", "driver_version_int": drv}

    # -- modules and memory
    def load_module(self, cubin: Path) -> ctypes.c_void_p:
        image = Path(cubin).read_bytes()
        mod = ctypes.c_void_p()
        self._check(self.lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), f"cuModuleLoadData({cubin})")
        return mod

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self._check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), f"cuModuleGetFunction({name})")
        return fn

    def function_attribute(self, fn: ctypes.c_void_p, key: str) -> int:
        val = ctypes.c_int()
        self._check(self.lib.cuFuncGetAttribute(ctypes.byref(val), _FUNC_ATTR[key], fn), "cuFuncGetAttribute")
        return val.value

    def occupancy(self, fn: ctypes.c_void_p, threads: int) -> int:
        val = ctypes.c_int()
        self._check(self.lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(val), fn, threads, ctypes.c_size_t(0)),
                    "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        return val.value

    def alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc_v2(ctypes.byref(ptr), max(int(nbytes), 8)), f"cuMemAlloc({nbytes})")
        return ptr.value

    def free(self, ptr: int) -> None:
        self._check(self.lib.cuMemFree_v2(ptr), "cuMemFree")

    def upload(self, ptr: int, data: np.ndarray) -> None:
        data = np.ascontiguousarray(data)
        self._check(self.lib.cuMemcpyHtoD_v2(ptr, data.ctypes.data, data.nbytes), "cuMemcpyHtoD")

    def download(self, ptr: int, nbytes: int, dtype=np.uint8) -> np.ndarray:
        out = np.empty(nbytes // np.dtype(dtype).itemsize, dtype=dtype)
        self._check(self.lib.cuMemcpyDtoH_v2(out.ctypes.data, ptr, out.nbytes), "cuMemcpyDtoH")
        return out

    def memset(self, ptr: int, nbytes: int) -> None:
        self._check(self.lib.cuMemsetD8_v2(ptr, 0, nbytes), "cuMemsetD8")

    # -- launching
    def launch(self, fn: ctypes.c_void_p, grid: int, block: int, ptrs: tuple[int, int, int],
               p0: int, p1: int, a: float, b: float) -> float:
        """Launch with the suite signature, wait, return the event-timed milliseconds."""
        vals = [ctypes.c_uint64(ptrs[0]), ctypes.c_uint64(ptrs[1]), ctypes.c_uint64(ptrs[2]),
                ctypes.c_longlong(p0), ctypes.c_longlong(p1), ctypes.c_double(a), ctypes.c_double(b)]
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
        ev0, ev1 = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.lib.cuEventCreate(ctypes.byref(ev0), 0), "cuEventCreate")
        self._check(self.lib.cuEventCreate(ctypes.byref(ev1), 0), "cuEventCreate")
        try:
            self._check(self.lib.cuEventRecord(ev0, None), "cuEventRecord")
            self._check(self.lib.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, None, params, None), "cuLaunchKernel")
            self._check(self.lib.cuEventRecord(ev1, None), "cuEventRecord")
            self._check(self.lib.cuEventSynchronize(ev1), "cuEventSynchronize (kernel)")
            ms = ctypes.c_float()
            self._check(self.lib.cuEventElapsedTime(ctypes.byref(ms), ev0, ev1), "cuEventElapsedTime")
            return float(ms.value)
        finally:
            self.lib.cuEventDestroy_v2(ev0)
            self.lib.cuEventDestroy_v2(ev1)


# ------------------------------------------------------------------------------------ measuring

def _run_case(drv: Driver, fn, case: Case, launch: Launch, repeats: int, flush: Callable[[], None]) -> dict:
    if drv.occupancy(fn, launch.threads_per_block) < 1:
        raise CudaError(f"{case.name}: a block of {launch.threads_per_block} threads does not fit on an SM "
                        f"({drv.function_attribute(fn, 'num_regs')} registers/thread)")
    args = suite_mod.arguments(case, launch)
    timing = drv.alloc(8 * args.timing_words)
    out = drv.alloc(8 * args.out_words)
    buf = drv.alloc(max(args.buffer_bytes, 8))
    try:
        drv.upload(buf, suite_mod.buffer_contents(case, launch, max(args.buffer_bytes, 8), buf))
        cycles, ms, blocks = [], [], []
        for rep in range(repeats + 1):                      # launch 0 is the warm-up
            if case.flush_l2:
                flush()
            drv.memset(timing, 8 * args.timing_words)
            t = drv.launch(fn, launch.grid, launch.threads_per_block, (timing, out, buf), args.p0, args.p1, args.a, args.b)
            red = reduce_records(drv.download(timing, 8 * args.timing_words, np.uint64))
            if rep:
                cycles.append(red.cycles)
                ms.append(t)
                blocks.extend(red.blocks_per_sm.values())
        res = {"warps": launch.warps, "threads_per_block": launch.threads_per_block,
               "blocks_per_sm": launch.blocks_per_sm, "grid": launch.grid,
               **summarize(cycles), "cycles_all": cycles,
               "kernel_ms": float(statistics.median(ms)),
               "observed_blocks_per_sm": [int(min(blocks)), int(max(blocks))],
               "resident_blocks_per_sm": drv.occupancy(fn, launch.threads_per_block),
               "registers": drv.function_attribute(fn, "num_regs"),
               "static_shared_bytes": drv.function_attribute(fn, "shared_bytes"),
               "args": {"p0": args.p0, "p1": args.p1, "a": args.a, "b": args.b,
                        "buffer_bytes": args.buffer_bytes}}
        if min(blocks) != launch.blocks_per_sm or max(blocks) != launch.blocks_per_sm:
            res["warning"] = (f"block scheduler gave {min(blocks)}..{max(blocks)} blocks per SM, "
                              f"expected {launch.blocks_per_sm}")
        return res
    finally:
        for p in (timing, out, buf):
            drv.free(p)


def measure(suite: Suite, cases: Iterable[Case] | None = None, warps: Iterable[int] | None = None,
            repeats: int = 5, device: int = 0, arch: str | None = None, nvcc: str | None = None,
            cache_dir: str | os.PathLike | None = None,
            progress: Callable[[str], None] | None = None) -> dict:
    """Compile the suite for the local GPU, run every case at every warp count, return the
    measured document (schema ``teg.validate.measured/1``)."""
    if repeats < 1:
        raise CudaError("repeats must be >= 1")
    drv = Driver(device)
    gpu = drv.info()
    arch = arch or gpu["arch"]
    chosen = list(cases) if cases is not None else suite.cases
    warp_list = [int(w) for w in (warps or suite.warps)]
    cache = Path(cache_dir) if cache_dir else suite_mod.default_cache_dir()
    sources = list(dict.fromkeys([c.source for c in chosen] + ["latency.cu"]))
    cubins = suite_mod.compile_suite(suite, arch, cache, nvcc, sources)
    modules = {s: drv.load_module(p) for s, p in cubins.items()}
    flush_fn = drv.function(modules["latency.cu"], "teg_l2_flush")
    flush_bytes = 2 * (gpu["l2_bytes"] or 64 << 20)
    flush_buf = drv.alloc(flush_bytes)
    flush_grid = 4 * (gpu["num_sms"] or 1)
    scratch = drv.alloc(8 * 4 * flush_grid)
    scratch_out = drv.alloc(8 * 1024 * flush_grid)

    def flush() -> None:
        drv.launch(flush_fn, flush_grid, 1024, (scratch, scratch_out, flush_buf), flush_bytes, 0, 0.0, 0.0)

    doc_cases = []
    try:
        for case in chosen:
            fn = drv.function(modules[case.source], case.kernel)
            results = []
            for w in warp_list:
                launch = suite_mod.launch_for(case, w, gpu["num_sms"])
                if progress:
                    progress(f"{case.name} W={w}")
                results.append(_run_case(drv, fn, case, launch, repeats, flush))
            doc_cases.append(case_header(case) | {"results": results})
    finally:
        for p in (flush_buf, scratch, scratch_out):
            drv.free(p)
    return {"schema": SCHEMA, "kind": "measured", "synthetic": False,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "teg_version": __version__, "suite_digest": suite.digest(), "host": platform.node(),
            "gpu": gpu, "arch": arch, "repeats": repeats,
            "method": ("per block clock64 start/end + %smid; per launch the median over SMs of "
                       "max(end)-min(start) of the SM's blocks; median over repeats after one warm-up; "
                       "grid = SMs x blocks per SM (TEG report §5.1, adapted)"),
            "cases": doc_cases}


def case_header(case: Case) -> dict:
    """The case description stored with each measured/predicted case."""
    head = {"case": case.name, "group": case.group, "kernel": case.kernel, "source": case.source,
            "variables": dict(case.variables)}
    cal = case.calibration_values()
    if cal:
        head["calibrates"] = cal
    return head

