"""``teg validate predict``: teg's predictions for exactly the cases and launches the suite measures.

For each case and warp count ``W``: the launch of :func:`teg.validate.suite.launch_for` (``B``
blocks of ``T`` threads per SM), the same kernel arguments and buffer contents as the measurement
(``S`` = the measured GPU's SM count when a measured file is given, else the machine table's),
and the ``B`` blocks of one SM run in the functional emulator (:mod:`teg.emu`) to get the trace.
Then:

* ``engine`` — :func:`teg.engine.lower` + :func:`teg.engine.run` with the ``B`` traced blocks on
  one SM (``Options(blocks=B)``, resident blocks from :func:`teg.engine.occupancy`) and the issue
  timeline recorded (every SM's blocks index the same buffer, so when it fits the L2 the SM's
  data see the whole L2: ``Options(l2_share=1)``, not the 1 / SMs share of SMs with data of their
  own); the prediction is the *measured region*: per block the issue cycles of its
  first warp's two clock reads, then ``max(end) − min(start)`` over the blocks — the same
  reduction as the measurement (set-up code outside TEG_BEGIN/TEG_END, such as a chase's warm-up
  pass, still runs in the engine and warms its caches);
* every analytical model of :mod:`teg.models` (``mwp_cwp``, ``cpa``, ``mpd_cpd``, ``bsp``) on the
  profile of the trace restricted to the measured region, with the launch described as ``B``
  blocks on each of the machine's SMs (so its whole-kernel cycles are one SM's cycles).

A step that fails for one case (an instruction the emulator does not support, a model that
cannot handle a kernel) is recorded as that case's error and the other cases go on.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from teg import TegError, __version__
from teg.validate import suite as suite_mod
from teg.validate.measure import case_header
from teg.validate.suite import Case, Launch, Suite

SCHEMA = "teg.validate.predicted/1"
MODEL_NAMES = ("mwp_cwp", "cpa", "mpd_cpd", "bsp")


class PredictError(TegError):
    """Prediction cannot start (missing emulator/engine, unknown machine, no cubin)."""


@dataclasses.dataclass(frozen=True)
class Buffer:
    """A device buffer for the emulator: ``size`` bytes whose contents depend on where it lands."""

    size: int
    fill: Callable[[int], np.ndarray]       # device address -> uint8[size]


def analytical_models() -> dict[str, Callable]:
    """The analytical models available in :mod:`teg.models`: name -> ``fn(profile, params)``."""
    import importlib

    out = {}
    for name in MODEL_NAMES:
        try:
            mod = importlib.import_module(f"teg.models.{name}")
        except ModuleNotFoundError:
            continue
        fn = getattr(mod, name, None)
        if callable(fn):
            out[name] = fn
    return out


class _Kernels:
    """SASS programs and cubin metadata of one compiled suite source, parsed on first use (a
    parse failure becomes the error of every case of that source, not of the whole run)."""

    def __init__(self, cubin: Path):
        self.cubin = cubin
        self._parsed: tuple[dict, dict] | TegError | None = None

    def get(self, kernel: str):
        if self._parsed is None:
            from teg.emu.cubin import read_cubin
            from teg.sass import parse_file

            try:
                self._parsed = ({p.name: p for p in parse_file(self.cubin)}, read_cubin(self.cubin))
            except TegError as exc:
                self._parsed = exc
        if isinstance(self._parsed, TegError):
            raise self._parsed
        programs, images = self._parsed
        if kernel not in programs or kernel not in images:
            raise PredictError(f"{self.cubin}: no kernel {kernel}")
        return programs[kernel], images[kernel]


def emulate(kernels: _Kernels, kernel: str, grid: int, block: int, buffers: list[Buffer],
            scalars: tuple[int, int, float, float]):
    """Run ``grid`` blocks of ``block`` threads of ``kernel`` in :mod:`teg.emu` with the suite
    signature ``(timing, out, buf, p0, p1, a, b)``; returns (program, KernelTrace).

    The emulator places buffers deterministically in argument order (:class:`teg.emu.memory.
    DeviceMemory`), so their addresses are known before the launch and the pointer-chase buffers
    can hold device addresses; the placement is checked against the trace's memcpy list."""
    from teg.emu.launch import emulate as emu_run
    from teg.emu.memory import DeviceMemory

    prog, image = kernels.get(kernel)
    layout = DeviceMemory()
    addresses = [layout.alloc(f"arg{i}", np.empty(b.size, np.uint8)).address for i, b in enumerate(buffers)]
    arrays = [b.fill(a) for a, b in zip(addresses, buffers)]
    args = [*arrays, np.int64(scalars[0]), np.int64(scalars[1]), np.float64(scalars[2]), np.float64(scalars[3])]
    res = emu_run(prog, image, (grid, 1, 1), (block, 1, 1), args)
    placed = [addr for addr, _ in res.trace.memcpy]
    if placed[:len(addresses)] != addresses:
        raise PredictError(f"{kernel}: the emulator placed the buffers at {placed}, expected {addresses}")
    return prog, res.kernel_trace


def clock_pcs(program) -> set[int]:
    """Addresses of the clock reads (``CS2R Rx, SR_CLOCKLO``; ``S2R … SR_CLOCK*`` on older SASS)
    that bracket the measured region of every suite kernel."""
    return {ins.address for ins in program.instructions
            if ins.base in ("CS2R", "S2R", "S2UR") and any("SR_CLOCK" in op.text for op in ins.operands)}


def region_bounds(kt, pcs: set[int]) -> np.ndarray:
    """Per warp the row range ``[first clock read, last clock read]`` (``-1, -1`` when a warp has
    fewer than two clock reads): the measured region of TEG_BEGIN … TEG_END."""
    is_clock = np.isin(np.asarray(kt.pc), np.fromiter(pcs, np.int64, len(pcs)))
    bounds = np.full((kt.num_warps, 2), -1, np.int64)
    for w in range(kt.num_warps):
        rows = np.nonzero(is_clock[kt.warp_rows(w)])[0]
        if rows.size >= 2:
            bounds[w] = int(kt.warp_start[w]) + rows[0], int(kt.warp_start[w]) + rows[-1]
    return bounds


def region_cycles(kt, timeline: np.ndarray, bounds: np.ndarray) -> float:
    """Predicted cycles of the measured region, reduced exactly as the measurement is: per block
    the issue cycles of its first warp's two clock reads (thread 0 writes the record), then on the
    one simulated SM ``max(end) − min(start)`` over the blocks (:func:`~teg.validate.measure.reduce_records`)."""
    from teg.validate.measure import reduce_records

    if timeline is None or len(timeline) != kt.num_rows:
        raise PredictError("the engine timeline does not cover the trace rows one to one")
    records = []
    for b in np.unique(np.asarray(kt.warp_block)):
        w0 = int(np.nonzero(np.asarray(kt.warp_block) == b)[0][0])
        lo, hi = bounds[w0]
        if lo < 0:
            raise PredictError(f"{kt.info.name}: block {b} has no clock-bracketed region")
        if timeline[hi] < timeline[lo]:
            raise PredictError(f"{kt.info.name}: engine timeline out of order for warp {w0} "
                               "(rows not in trace order?)")
        records.append((int(timeline[lo]), int(timeline[hi]), 0, 0))
    return reduce_records(np.array(records, np.uint64)).cycles


def region_trace(kt, bounds: np.ndarray):
    """The trace restricted to each warp's measured region (rows after its first clock read up to
    and including its last), for the analytical models."""
    keep = np.zeros(kt.num_rows, bool)
    for w, (lo, hi) in enumerate(bounds):
        if lo >= 0:
            keep[lo + 1:hi + 1] = True
    rows = np.nonzero(keep)[0]
    counts = np.diff(np.asarray(kt.addr_start))[rows]
    addr_start = np.zeros(rows.size + 1, np.int64)
    np.cumsum(counts, out=addr_start[1:])
    idx = np.repeat(np.asarray(kt.addr_start)[rows] - addr_start[:-1], counts) + np.arange(addr_start[-1], dtype=np.int64)
    per_warp = np.bincount(np.asarray(kt.warp)[rows] - int(np.asarray(kt.warp).min(initial=0)) if rows.size else [],
                           minlength=kt.num_warps) if rows.size else np.zeros(kt.num_warps, np.int64)
    warp_start = np.zeros(kt.num_warps + 1, np.int64)
    np.cumsum(per_warp, out=warp_start[1:])
    return dataclasses.replace(
        kt, warp=kt.warp[rows], block=kt.block[rows], pc=kt.pc[rows], opcode=kt.opcode[rows], mask=kt.mask[rows],
        dst=kt.dst[rows], src=kt.src[rows], mem_width=kt.mem_width[rows], imm=kt.imm[rows],
        addr_start=addr_start, addresses=kt.addresses[idx], warp_start=warp_start,
        line_num=None if kt.line_num is None else kt.line_num[rows], extras={})


def predict_case(case: Case, launch: Launch, kernels: _Kernels, machine,
                 models: dict[str, Callable]) -> dict:
    """Trace one case launch on one SM and run the engine and the analytical models on it; every
    prediction is of the clock-bracketed region, as measured."""
    from teg import engine
    from teg.engine.kernel_inputs import KernelInputs
    from teg.engine.runner import run_kernel

    args = suite_mod.arguments(case, launch)
    b = launch.blocks_per_sm
    nt, no = 8 * suite_mod.TIMING_WORDS * b, 8 * b * launch.threads_per_block
    nbuf = max(args.buffer_bytes, 8)
    buffers = [Buffer(nt, lambda a: np.zeros(nt, np.uint8)), Buffer(no, lambda a: np.zeros(no, np.uint8)),
               Buffer(nbuf, lambda a: suite_mod.buffer_contents(case, launch, nbuf, a))]
    result: dict = {"warps": launch.warps, "threads_per_block": launch.threads_per_block,
                    "blocks_per_sm": b, "predicted": {}, "errors": {}}
    try:
        program, kt = emulate(kernels, case.kernel, b, launch.threads_per_block, buffers,
                              (args.p0, args.p1, args.a, args.b))
        bounds = region_bounds(kt, clock_pcs(program))
    except TegError as exc:
        result["errors"]["trace"] = str(exc)
        return result
    result["trace_rows"] = int(kt.num_rows)
    try:
        occ = engine.occupancy(machine, launch.threads_per_block, kt.info.nregs, kt.info.shmem).blocks
        result["resident_blocks_per_sm"] = int(occ)
        # every SM's blocks index the same buffer, so the GPU's L2 holds at most the buffer: when it
        # fits, the simulated SM's data find the whole L2 (not 1 / SMs of it, the default for SMs
        # each with data of their own)
        l2 = machine.memory.l2
        share = 1.0 if l2 is not None and nbuf <= l2.size_bytes else None
        opts = engine.Options(blocks=b, blocks_per_sm=max(1, min(b, occ)), record_timeline=True, l2_share=share)
        res = run_kernel(KernelInputs(program=program, kernel_trace=kt, machine=machine), opts).result
        result["predicted"]["engine"] = region_cycles(kt, res.timeline, bounds)
        result["engine_kernel_cycles"] = float(res.cycles)
    except TegError as exc:
        result["errors"]["engine"] = str(exc)
    if models:
        from teg.models.params import params_for
        from teg.models.profile import profile_from

        region = region_trace(kt, bounds)
        whole = dataclasses.replace(region, info=dataclasses.replace(kt.info, grid=(b * int(machine.num_sms), 1, 1)))
        try:
            profile = profile_from(program, whole, machine)
            params = params_for(machine)
        except TegError as exc:
            for name in models:
                result["errors"][name] = str(exc)
            return result
        for name, fn in models.items():
            try:
                result["predicted"][name] = float(fn(profile, params).cycles)
            except TegError as exc:
                result["errors"][name] = str(exc)
    return result


def predict(suite: Suite, machine_name: str, cases: Iterable[Case] | None = None,
            warps: Iterable[int] | None = None, measured: dict | None = None, nvcc: str | None = None,
            cache_dir: str | os.PathLike | None = None, with_models: bool = True,
            progress: Callable[[str], None] | None = None) -> dict:
    """Predict every case at every warp count (those of ``measured`` when given); returns the
    predicted document (schema ``teg.validate.predicted/1``)."""
    from teg import machine as machine_mod

    try:
        from teg import engine
        engine.lower, engine.run, engine.Options   # noqa: B018 - the API predict needs
    except (ImportError, AttributeError) as exc:
        raise PredictError(f"the timing engine API (teg.engine.lower/run/Options) is not available: {exc}") from None
    m = machine_mod.load(machine_name)
    arch = f"sm_{m.sm}"
    chosen = list(cases) if cases is not None else suite.cases
    plan: list[tuple[Case, list[int]]] = []
    if measured is not None:
        by_name = {c["case"]: c for c in measured["cases"]}
        for case in chosen:
            if case.name in by_name:
                ws = [int(r["warps"]) for r in by_name[case.name]["results"]]
                plan.append((case, [w for w in ws if not warps or w in set(warps)]))
        num_sms = int((measured.get("gpu") or {}).get("num_sms") or m.num_sms)
        arch = measured.get("arch") or arch
    else:
        plan = [(c, [int(w) for w in (warps or suite.warps)]) for c in chosen]
        num_sms = int(m.num_sms)
    cache = Path(cache_dir) if cache_dir else suite_mod.default_cache_dir()
    cubins = suite_mod.compile_suite(suite, arch, cache, nvcc, sorted({c.source for c, _ in plan}))
    kernels = {src: _Kernels(path) for src, path in cubins.items()}
    models = analytical_models() if with_models else {}
    out_cases = []
    for case, ws in plan:
        results = []
        for w in ws:
            if progress:
                progress(f"{case.name} W={w}")
            launch = suite_mod.launch_for(case, w, num_sms)
            results.append(predict_case(case, launch, kernels[case.source], m, models))
        out_cases.append(case_header(case) | {"results": results})
    return {"schema": SCHEMA, "kind": "predicted",
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "teg_version": __version__, "suite_digest": suite.digest(), "machine": m.name, "arch": arch,
            "num_sms": num_sms, "models": ["engine", *models], "cases": out_cases}

