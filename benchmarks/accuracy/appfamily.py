"""The accuracy suite's ``apps`` family: the project's own application programs (``apps/<prog>.cu``,
each with a manifest ``apps/<prog>.yaml``) run whole under teg's CUDA runtime (``teg trace app``),
every launch estimated as soon as it has run, against Nsight Compute rows of real GPUs:

* ``gv100``: ``measured/hyfiss_gv100_apps.csv`` (Quadro GV100, the HyFiSS artifact), with the
  cycles Accel-Sim, HyFiSS and PPT-GPU predicted for the same launches; sm_75 SASS (nvcc 13 has no
  sm_70) timed on the ``quadro_gv100`` table;
* ``h200``: ``measured/h200_apps_ncu.csv`` (the same programs built for sm_90, measured by this
  project on an H200); sm_90 SASS on the ``h200`` table. The measured binaries were built by the
  same nvcc, so the traced warp instructions and global requests must equal the hardware's.

Per launch: the program is built once per source hash (``nvcc -O3 -arch=… -cudart shared`` plus
the manifest's flags), run with its manifest's command line by :class:`teg.app.session.Session`
with a :class:`LaunchHook` that takes each launch's rows into an :class:`EstimateSink` (in memory,
never on disk), counts its warp instructions and global requests, and runs the engine on it
(``Options(sms=num_sms)``: every SM) as soon as the launch has run. Only the per-launch results are
kept (JSON, cached by program, command line, machine table and teg's own sources).

Reductions, stated per row: a launch whose trace would exceed ``TEG_ACCURACY_APPS_ROWS`` rows
(default 12 M) keeps the rows of the blocks the engine's sampling deals to SMs ``0 … N-1``
(:func:`teg.engine.dealing.block_sms`, the default ``waves`` dealing: the first wave breadth-first,
later blocks R at a time to SMs in index order, so SMs ``0 … N-1`` are the most loaded), N the
largest of num_sms, num_sms / 2, … whose rows fit, and is estimated with the same
:func:`launch_options` (``Options(sms=N)``; the sampled SMs get the share of DRAM and L2 of the
blocks they run: :mod:`teg.engine.dealing`). Identical launches — the same kernel code, grid, block,
dynamic shared memory, parameter bytes, constant banks, live allocations and the same bytes in
every live allocation, i.e. everything the emulated launch can read — are traced and estimated
once; the later ones run untraced and take the first one's results.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
APPS = HERE / "apps"
ROOT = HERE.parent.parent
LAUNCH_FLOOR = 5000            # rows under this many measured cycles mostly measure the launch floor
NVCC_FLAGS = ("-O3", "-cudart", "shared")
MAX_INSTRUCTIONS = 2_000_000_000     # per launch (lavaMD's one launch: 0.52 G warp instructions on sm_90)
RESULT_VERSION = 2             # bump when what a cached launch result holds changes
PEERS = (("asim_cycles", "Accel-Sim"), ("hyfiss_cycles", "HyFiSS"), ("ppt_cycles", "PPT-GPU"))


def row_budget() -> int:
    return int(os.environ.get("TEG_ACCURACY_APPS_ROWS", 12_000_000))


def launch_policy() -> str | None:
    """The warp scheduling policy every launch is estimated with: ``None``, teg's default (the
    machine table's ``scheduler_policy``), or ``TEG_ACCURACY_POLICY`` (``gto``, ``gty``, ``lrr``)
    for a what-if run (part of the cache key)."""
    return os.environ.get("TEG_ACCURACY_POLICY") or None


@dataclass(frozen=True)
class AppSet:
    """One measured set: its CSV, the SASS built for it, the machine table that times it, the
    table the program sees as its device (None: the one of its SASS), whether peers are listed."""

    csv: str
    arch: str
    machine: str
    device: str | None
    peers: bool


SETS = {"gv100": AppSet("hyfiss_gv100_apps.csv", "sm_75", "quadro_gv100", None, True),
        "h200": AppSet("h200_apps_ncu.csv", "sm_90", "h200", "h200", False)}


class ManifestError(Exception):
    """A manifest that cannot be used (one line: file and problem)."""


# ---------------------------------------------------------------------------------------------
# manifests and measured rows

@dataclass
class Manifest:
    name: str                  # file stem: the program's name
    app: str                   # the measured set's app name (hyfiss_gv100_apps.csv's `app`)
    suite: str
    source: Path
    nvcc_flags: list
    args: list
    launches: int
    inputs: str
    notes: str
    path: Path
    request_notes: dict = field(default_factory=dict)   # "<set> <launch>" -> why the traced requests differ


OPTIONAL_KEYS = {"request_notes": dict}


MANIFEST_KEYS = {"app": str, "suite": str, "source": str, "nvcc_flags": list, "args": list, "launches": int,
                 "inputs": str, "notes": str}


def load_manifest(path: Path) -> Manifest:
    from teg.yamlfile import load_yaml_file
    try:
        doc = load_yaml_file(path, "manifest")
    except Exception as exc:              # YamlError, OSError: one line naming the file
        raise ManifestError(f"{path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{path}: expected a mapping of {', '.join(MANIFEST_KEYS)}")
    for key, typ in MANIFEST_KEYS.items():
        if key not in doc:
            raise ManifestError(f"{path}: missing key {key!r}")
        if not isinstance(doc[key], typ) or isinstance(doc[key], bool):
            raise ManifestError(f"{path}: {key!r} must be a {typ.__name__}, got {type(doc[key]).__name__}")
    extra = set(doc) - set(MANIFEST_KEYS) - set(OPTIONAL_KEYS)
    if extra:
        raise ManifestError(f"{path}: unknown key(s) {', '.join(sorted(extra))}")
    for key in ("nvcc_flags", "args"):
        if not all(isinstance(a, str) for a in doc[key]):
            raise ManifestError(f"{path}: every item of {key!r} must be a string")
    if doc["launches"] < 1:
        raise ManifestError(f"{path}: 'launches' must be at least 1")
    notes = doc.get("request_notes") or {}
    if not isinstance(notes, dict) or not all(
            isinstance(k, str) and re.fullmatch(r"(%s) \d+" % "|".join(SETS), k) and isinstance(v, str)
            for k, v in notes.items()):
        raise ManifestError(f"{path}: 'request_notes' must map '<set> <launch>' ({' or '.join(SETS)} and a launch "
                            "index from 0) to a sentence")
    src = path.parent / doc["source"]
    if not src.is_file():
        raise ManifestError(f"{path}: source {doc['source']!r} not found")
    return Manifest(path.stem, doc["app"], doc["suite"], src, list(doc["nvcc_flags"]), list(doc["args"]),
                    int(doc["launches"]), doc["inputs"], doc["notes"], path, dict(notes))


def manifests(folder: Path = APPS) -> dict[str, Manifest]:
    """Every manifest of ``folder``, by program name."""
    return {p.stem: load_manifest(p) for p in sorted(folder.glob("*.yaml"))}


def _grid(text: str) -> tuple[int, int, int]:
    dims = [int(x) for x in text.split("x")]
    return tuple(dims + [1] * (3 - len(dims)))


def _num(text: str) -> float | None:
    return float(text) if text not in ("", None) else None


def _ratio(num, den) -> float | None:
    """``num / den`` of two CSV fields (None when either is empty)."""
    a, b = _num(num), _num(den)
    return a / b if a is not None and b else None


def measured_rows(gpu: str, measured_dir: Path, mans: dict[str, Manifest]) -> list[dict]:
    """The measured set's rows as dicts: program, launch (from 0), kernel, grid, block, cycles,
    warp instructions, read / write requests, and (gv100) the peers' cycles."""
    s = SETS[gpu]
    by_app = {m.app: m.name for m in mans.values()}
    out = []
    with open(measured_dir / s.csv, newline="") as f:
        for r in csv.DictReader(f):
            if gpu == "gv100":
                prog = by_app.get(r["app"])
                if prog is None:
                    raise ManifestError(f"{measured_dir / s.csv}: app {r['app']!r} has no manifest in {APPS}")
                row = {"program": prog, "app": r["app"], "suite": r["suite"], "launch": int(r["kernel_index"]),
                       "kernel": r["kernel"], "mangled": r["mangled"], "grid": _grid(r["grid"]),
                       "block": _grid(r["block"]), "cycles": float(r["ncu_gpu_active_cycles"]),
                       "warp_insts": float(r["ncu_warp_insts"]), "read_req": int(float(r["ncu_gmem_read_req"])),
                       "write_req": int(float(r["ncu_gmem_write_req"])),
                       "sm_active_ratio": _ratio(r["ncu_sm_active_cycles"], r["ncu_gpu_active_cycles"]),
                       "peers": {name: _num(r[col]) for col, name in PEERS}}
            else:
                prog = r["program"]
                if prog not in mans:
                    raise ManifestError(f"{measured_dir / s.csv}: program {prog!r} has no manifest in {APPS}")
                row = {"program": prog, "app": mans[prog].app, "suite": mans[prog].suite, "launch": int(r["launch"]),
                       "kernel": r["kernel"], "mangled": r["kernel"], "grid": _grid(r["grid"]),
                       "block": _grid(r["block"]), "cycles": float(r["gpu_active_cycles"]),
                       "warp_insts": float(r["warp_insts"]), "read_req": int(float(r["gmem_read_req"])),
                       "write_req": int(float(r["gmem_write_req"])),
                       "sm_active_ratio": _ratio(r.get("sm_active_cycles"), r["gpu_active_cycles"]), "peers": {}}
            out.append(row)
    return out


# ---------------------------------------------------------------------------------------------
# building

def teg_sources_hash() -> str:
    """Hash of teg's own code and machine tables (a cached launch result is valid for these)."""
    h = hashlib.sha1()
    for base, pats in ((ROOT / "teg", ("*.py", "*.c", "*.txt")), (ROOT / "isa_tables", ("*.yaml",))):
        files = sorted({p for pat in pats for p in base.rglob(pat) if "__pycache__" not in p.parts})
        for p in files:
            h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def nvcc_version() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found: the apps family builds its programs with nvcc (CUDA 13)")
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()


def build(m: Manifest, arch: str, cache: Path) -> Path:
    """The program built for ``arch`` (cached under ``cache/bin`` by source, flags and nvcc)."""
    flags = [*NVCC_FLAGS, f"-arch={arch}", *m.nvcc_flags]
    h = hashlib.sha1(m.source.read_bytes() + json.dumps(flags).encode() + nvcc_version().encode()).hexdigest()[:16]
    out = cache / "bin" / f"{m.name}.{arch}.{h}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    proc = subprocess.run(["nvcc", *flags, "-o", str(tmp), str(m.source)], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"nvcc failed on {m.source.name} for {arch}: {last}")
    os.replace(tmp, out)
    return out


# ---------------------------------------------------------------------------------------------
# per-launch rows: counted, kept (or sampled) in memory, estimated

GLOBAL_KINDS = {"load": 1, "store": 2, "atomic": 3}


def global_kind_table(opcodes: list[str], machine) -> np.ndarray:
    """Per opcode text: 1 global load, 2 global store, 3 global atomic, 0 anything else (what
    ``teg trace info`` counts as global requests, :func:`teg.trace.summary.kernel_summary`)."""
    out = np.zeros(len(opcodes) + 1, np.int8)
    for i, op in enumerate(opcodes):
        oi = machine.classify(op)
        if oi is not None and oi.space == "global":
            out[i] = GLOBAL_KINDS.get(oi.kind, 0)
    return out


def sms_ladder(num_sms: int) -> list[int]:
    """The sampled SM counts tried, largest first: num_sms, num_sms // 2, …, 1."""
    out, n = [], num_sms
    while n >= 1:
        out.append(n)
        n //= 2
    return out


def _row_sink_base():
    from teg.emu.launch import RowSink
    return RowSink


def launch_options(sms: int):
    """The engine options every launch is estimated with: ``sms`` simulated SMs (``num_sms``: the
    whole GPU), the warp scheduling policy of :func:`launch_policy`, the rest teg's defaults — also
    the sampling whose blocks :class:`EstimateSink` keeps."""
    from teg.engine import Options
    return Options(sms=sms, policy=launch_policy())


class EstimateSink(_row_sink_base()):
    """Keeps a launch's rows in memory for the engine and counts them as they come: warp
    instructions and global load / store / atomic requests (rows of global memory instructions
    with an active lane) over *every* row. When the kept rows exceed ``budget``, only the blocks
    the engine's sampling (:func:`launch_options`, :func:`teg.engine.dealing.block_sms` with the
    launch's resident blocks per SM) deals to SMs ``0 … N-1`` are kept, N stepping down
    :func:`sms_ladder`; the final N is the largest whose blocks' rows fit (independent of how the
    rows were chunked)."""

    def __init__(self, machine, budget: int):
        self.machine = machine
        self.num_sms = machine.num_sms
        self.budget = int(budget)

    def start(self, info, compiled, nwarps) -> None:
        from teg.engine.dealing import launch_resident
        from teg.engine.occupancy import OccupancyError
        super().start(info, compiled, nwarps)
        self.options = launch_options(self.num_sms)
        try:
            self.resident = launch_resident(self.machine, info, self.options)
        except OccupancyError:          # the engine refuses the launch by name; any rule keeps its rows
            self.resident = 1
        self.kind = global_kind_table(list(compiled.static[0]), self.machine)
        self.ladder = sms_ladder(self.num_sms)
        self.step = 0
        self.parts: list[tuple[dict, np.ndarray, np.ndarray]] = []
        self.kept = 0
        self.rows = 0
        self.requests = np.zeros(4, np.int64)
        self.too_large = False

    @property
    def sms(self) -> int:
        return self.ladder[self.step]

    def accept(self, expanded: tuple) -> None:
        """Count every row of these whole blocks and keep those of the sampled SMs' blocks (the
        emulator hands them over expanded, from one thread or several)."""
        rows, n_addr, addresses = expanded
        n = len(rows["warp"])
        self.rows += n
        k = self.kind[rows["opcode"]]
        live = (rows["mem_width"] > 0) & (rows["mask"] != 0)
        self.requests += np.bincount(k[live], minlength=4)[:4]
        if self.too_large:
            return
        self._keep(rows, n_addr, addresses)
        while self.kept > self.budget and self.step + 1 < len(self.ladder):
            self.step += 1
            parts, self.parts, self.kept = self.parts, [], 0
            self.per_warp[:] = 0
            for p in parts:
                self._keep(*p)
        if self.kept > self.budget:         # even one SM's blocks do not fit: nothing is estimated
            self.too_large = True
            self.parts, self.kept = [], 0

    def _keep(self, rows: dict, n_addr: np.ndarray, addresses: np.ndarray) -> None:
        from teg.engine.dealing import block_sms
        keep = block_sms(rows["block"], self.num_sms, self.resident, self.options.sampling) < self.sms
        if not keep.all():
            rows = {c: v[keep] for c, v in rows.items()}
            addresses = addresses[np.repeat(keep, n_addr)]
            n_addr = n_addr[keep]
        if len(rows["warp"]):
            u, c = np.unique(rows["warp"], return_counts=True)
            self.per_warp[u] += c
            self.parts.append((rows, n_addr, addresses))
            self.kept += len(rows["warp"])

    def take(self, rows, n_addr, addresses) -> None:        # add() does the work
        raise AssertionError("EstimateSink.accept keeps the rows itself")

    def kernel_trace(self):
        """The kept rows as a :class:`teg.trace.KernelTrace`: every warp of the launch is listed
        (``warp_block``), those of blocks not kept with no rows."""
        from teg.emu.launch import COLUMN_SHAPES, _tracer_view
        from teg.trace.model import KernelTrace
        cols = {name: (np.concatenate([p[0][name] for p in self.parts]) if self.parts
                       else np.zeros((0, *COLUMN_SHAPES[name][1]), COLUMN_SHAPES[name][0]))
                for name in COLUMN_SHAPES}
        # rows grouped by warp: parts hold whole blocks in ascending order, each sorted by warp
        n_addr = np.concatenate([p[1] for p in self.parts]) if self.parts else np.zeros(0, np.int64)
        addresses = np.concatenate([p[2] for p in self.parts]) if self.parts else np.zeros(0, np.uint64)
        self.parts = []
        addr_start = np.zeros(len(n_addr) + 1, np.int64)
        np.cumsum(n_addr, out=addr_start[1:])
        warp_start, warp_block, block_xyz = self.layout()
        return KernelTrace(info=self.info, opcodes=list(self.compiled.static[0]), addr_start=addr_start,
                           addresses=addresses, warp_start=warp_start, warp_block=warp_block, block_xyz=block_xyz,
                           extras=_tracer_view(self.compiled.program), **cols)


def launch_fingerprint(v) -> str:
    """Everything an emulated launch can read, hashed: the kernel's code, geometry, dynamic shared
    memory, parameter bytes, constant banks, the live allocations and their bytes. Two launches with
    the same fingerprint produce the same trace (the emulator is deterministic)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(json.dumps([v.kernel, list(v.grid), list(v.block), int(v.shmem)]).encode())
    h.update(v.params)
    h.update(np.asarray([i.address for i in v.program.instructions], np.int64).tobytes())
    h.update("\n".join(i.text for i in v.program.instructions).encode())
    for b in sorted(v.banks):
        h.update(b"bank%d" % b + bytes(v.banks[b]))
    for addr, n in v.allocations:
        h.update(np.asarray([addr, n], np.int64).tobytes())
        off = addr - v.base
        h.update(memoryview(v.memory[off:off + n]))
    return h.hexdigest()


def _stalls(res) -> dict:
    """Every non-zero stall reason as a share of the cycles, largest first (the table prints the top 4)."""
    tot = res.cycles or 1
    top = sorted(((v, k) for k, v in res.stalls.items() if v), reverse=True)
    return {k: round(v / tot, 4) for v, k in top}


def reset_peak_rss() -> None:
    """Restart this process's resident-set high-water mark (Linux: ``5`` into /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_mb() -> float | None:
    """This process's resident-set high-water mark since the last :func:`reset_peak_rss`, in MiB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def estimate_launch(program, kt, machine, sms: int) -> dict:
    from teg.engine import KernelInputs
    from teg.engine.runner import run_kernel
    res = run_kernel(KernelInputs(program=program, kernel_trace=kt, machine=machine), launch_options(sms)).result
    return {"cycles": float(res.cycles), "engine_instructions": int(res.instructions), "stalls": _stalls(res),
            "sm_active_ratio": round(res.sm_active_ratio, 6)}


def make_hook(machine, wanted: set[int], cached: dict[int, dict], budget: int, store):
    """The :class:`teg.app.session.LaunchHook` of one program run: launches in ``wanted`` (counted
    from 1) and not in ``cached`` are taken by an :class:`EstimateSink` (or, when identical to an
    earlier launch, run untraced and given its results); ``store(lid, result)`` keeps each result."""
    from teg.app.session import LaunchHook

    class Hook(LaunchHook):
        def __init__(self):
            self.sinks: dict[int, EstimateSink] = {}
            self.first_of: dict[str, int] = {}
            self.same_as: dict[int, int] = {}
            self.results: dict[int, dict] = {}
            self.t0: dict[int, float] = {}
            self.rows: dict[int, int] = {}
            self.run_peak = 0.0            # MiB: the largest per-launch high-water mark so far

        def before(self, v):
            self.t0[v.id] = time.perf_counter()
            self.run_peak = max(self.run_peak, peak_rss_mb() or 0.0)
            reset_peak_rss()
            if v.id not in wanted or v.id in cached:
                return None
            fp = launch_fingerprint(v)
            if fp in self.first_of:
                self.same_as[v.id] = self.first_of[fp]
                return None
            self.first_of[fp] = v.id
            self.sinks[v.id] = EstimateSink(machine, budget)
            return self.sinks[v.id]

        def after(self, v, rows, fault):
            emu_s = time.perf_counter() - self.t0.pop(v.id)
            self.rows[v.id] = rows
            if v.id not in wanted or v.id in cached:
                return
            base = {"launch": v.id - 1, "kernel": v.kernel, "grid": list(v.grid), "block": list(v.block),
                    "warp_instructions": rows, "emulate_s": round(emu_s, 3), "error": None}
            sink = self.sinks.pop(v.id, None)
            if fault is not None:
                r = dict(base, error=f"the launch faulted: {fault}")
            elif sink is None:
                first = self.results.get(self.same_as[v.id], {})
                r = dict(first, **base, same_as=self.same_as[v.id] - 1)
                r["emulate_s"] = round(emu_s, 3)
            else:
                r = dict(base, global_load_requests=int(sink.requests[1]),
                         global_store_requests=int(sink.requests[2]),
                         global_atomic_requests=int(sink.requests[3]), sms=sink.sms, num_sms=sink.num_sms,
                         kept_rows=sink.kept, same_as=None)
                if sink.too_large:
                    r["error"] = (f"the blocks of one SM alone exceed the row budget of {budget:,} rows "
                                  "(TEG_ACCURACY_APPS_ROWS)")
                else:
                    t = time.perf_counter()
                    try:
                        kt = sink.kernel_trace()
                        r.update(estimate_launch(v.program, kt, machine, sink.sms))
                    except Exception as exc:        # reported on the row, never dropped
                        r["error"] = f"{type(exc).__name__}: {exc}"
                    r["estimate_s"] = round(time.perf_counter() - t, 3)
                    del sink
            r["peak_rss_mb"] = peak_rss_mb()       # emulation (and estimate) of this launch
            self.run_peak = max(self.run_peak, r["peak_rss_mb"] or 0.0)
            self.results[v.id] = r
            store(v.id, r)

    return Hook()


# ---------------------------------------------------------------------------------------------
# one program run

def result_key(binary: Path, m: Manifest, s: AppSet) -> str:
    h = hashlib.sha1()
    h.update(binary.read_bytes())
    h.update(json.dumps([m.args, s.machine, s.device, row_budget(), RESULT_VERSION]).encode())
    if launch_policy() is not None:
        h.update(launch_policy().encode())
    h.update(teg_sources_hash().encode())
    return h.hexdigest()[:16]


class _Capture:
    """File descriptors 1 and 2 redirected into files while a program runs (the program inherits them)."""

    def __init__(self, out: Path, err: Path):
        self.paths = (out, err)

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = [os.dup(1), os.dup(2)]
        self.files = [open(p, "wb") for p in self.paths]
        os.dup2(self.files[0].fileno(), 1)
        os.dup2(self.files[1].fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        for f in self.files:
            f.close()
        return False


def run_program(gpu: str, m: Manifest, launches: list[int], cache: Path, cached_only: bool = False) -> dict:
    """Run program ``m`` of set ``gpu`` (cached per launch): ``{"results": {launch from 0: dict},
    "stdout": text, "status": int | None, "error": str | None, "wall_s": float}``. With
    ``cached_only`` nothing runs: the launches without a cached result get an error saying so (a
    run stopped part-way is reported as far as it got)."""
    from teg.machine import load
    s = SETS[gpu]
    t_start = time.perf_counter()
    binary = build(m, s.arch, cache)
    key = result_key(binary, m, s)
    rdir = cache / "results" / gpu / f"{m.name}.{key}"
    rdir.mkdir(parents=True, exist_ok=True)
    wanted = {i + 1 for i in launches}
    cached = {}
    for lid in wanted:
        p = rdir / f"launch{lid - 1}.json"
        if p.exists():
            try:
                cached[lid] = json.loads(p.read_text())
            except (OSError, ValueError):
                pass
    done_path = rdir / "run.json"
    if len(cached) == len(wanted) and done_path.exists():
        run = json.loads(done_path.read_text())
        return {"results": {lid - 1: r for lid, r in cached.items()}, "stdout": run["stdout"],
                "status": run["status"], "error": run["error"], "wall_s": run.get("wall_s"),
                "peak_rss_mb": run.get("peak_rss_mb"), "complete_run": run.get("complete_run"),
                "cached": True, "binary": str(binary)}
    if cached_only:
        results = {lid - 1: r for lid, r in cached.items()}
        for lid in wanted - set(cached):
            results[lid - 1] = {"launch": lid - 1, "error": "not run yet (no cached result; --cached-only)"}
        return {"results": results, "stdout": None, "status": None,
                "error": f"{len(wanted) - len(cached)} of {len(wanted)} launches not run yet", "wall_s": None,
                "peak_rss_mb": None, "complete_run": False, "cached": True, "binary": str(binary)}

    def store(lid, r):
        tmp = rdir / f".launch{lid - 1}.tmp{os.getpid()}"
        tmp.write_text(json.dumps(r))
        os.replace(tmp, rdir / f"launch{lid - 1}.json")

    from teg.app.session import Session
    machine = load(s.machine)
    hook = make_hook(machine, wanted, cached, row_budget(), store)
    work = Path(tempfile.mkdtemp(prefix=f"teg-apps-{m.name}-"))
    reset_peak_rss()
    error = None
    status = None
    try:
        with _Capture(work / "stdout", work / "stderr"):
            try:
                status = Session([str(binary), *m.args], work / "out", machine=s.device, launches="0",
                                 max_instructions=MAX_INSTRUCTIONS, progress=False, hook=hook).run()
            except Exception as exc:            # refused before it ran, or teg's own failure
                error = f"{type(exc).__name__}: {exc}"
        stdout = (work / "stdout").read_text(errors="replace")
        stderr = (work / "stderr").read_text(errors="replace")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if error is None and status != 0:
        tail = [ln for ln in stderr.splitlines() if ln.strip()][-3:]
        error = f"exit status {status}: " + " | ".join(tail)
    peak = max(hook.run_peak, peak_rss_mb() or 0.0)
    wall = time.perf_counter() - t_start
    results = {lid - 1: r for lid, r in cached.items()}
    results.update({lid - 1: r for lid, r in hook.results.items()})
    for lid in wanted:
        if lid not in hook.rows and lid - 1 not in results:
            results[lid - 1] = {"launch": lid - 1, "error": f"launch {lid} never ran" + (f" ({error})" if error else "")}
    if error is None:
        tmp = rdir / f".run.tmp{os.getpid()}"
        tmp.write_text(json.dumps({"stdout": stdout, "status": status, "error": error,
                                   "launches": len(hook.rows), "wall_s": round(wall, 1), "peak_rss_mb": peak,
                                   "complete_run": not cached}))
        os.replace(tmp, done_path)
    return {"results": results, "stdout": stdout, "status": status, "error": error,
            "wall_s": wall, "peak_rss_mb": peak, "cached": False, "binary": str(binary),
            "launches_run": len(hook.rows), "complete_run": not cached}


# ---------------------------------------------------------------------------------------------
# native output of the measured H200 runs

def native_stdout(path: Path) -> dict[str, dict]:
    """``h200_apps_stdout.txt``: per program, its command line, exit status and printed text."""
    out: dict[str, dict] = {}
    cur = None
    for line in path.read_text().splitlines():
        mt = re.match(r"^\$ (\S+)(.*?)\s+\(exit (\d+)\)$", line)
        if mt:
            cur = {"args": mt.group(2).split(), "status": int(mt.group(3)), "lines": []}
            out[mt.group(1)] = cur
        elif cur is not None and line.strip():
            cur["lines"].append(line)
        elif cur is not None:
            cur = None if cur["lines"] else cur
    return {k: dict(v, text="\n".join(v["lines"]) + "\n") for k, v in out.items()}


# ---------------------------------------------------------------------------------------------
# summaries: teg beside the peers on exactly the same rows

def _mape(errs: list[float]) -> tuple[float, float] | None:
    if not errs:
        return None
    a = [abs(e) for e in errs]
    return statistics.fmean(a), statistics.median(a)


def tool_errors(points, tool: str) -> list[float]:
    """Signed errors of ``tool`` ('teg' or a peer's name) on the points teg has a value for."""
    out = []
    for p in points:
        if p.error is None:
            continue
        if tool == "teg":
            out.append(p.error)
        else:
            v = p.detail.get("peers", {}).get(tool)
            if v is not None:
                out.append(v / p.measured - 1.0)
    return out


def side_by_side(points, tools: list[str]) -> list[dict]:
    """Rows of the side-by-side table: per app, then overall, rows >= / < LAUNCH_FLOOR and the
    app-balanced mean / median of the per-app MAPEs. Each cell: (MAPE, median, n) on the rows teg
    has a value for (a peer without a value on a row leaves it out of its own numbers only)."""
    apps: dict[str, list] = {}
    for p in points:
        apps.setdefault(p.detail["app"], []).append(p)
    table = []

    def signed(ps):
        e = tool_errors(ps, "teg")
        return statistics.median(e) if e else None
    for app, ps in apps.items():
        table.append({"label": app, "rows": len(ps), "failed": sum(p.error is None for p in ps),
                      "cycles": (min(p.measured for p in ps), max(p.measured for p in ps)), "signed": signed(ps),
                      **{t: (_mape(tool_errors(ps, t)), len(tool_errors(ps, t))) for t in tools}})
    groups = [("all rows", points), (f"rows >= {LAUNCH_FLOOR:,} cycles", [p for p in points if p.measured >= LAUNCH_FLOOR]),
              (f"rows < {LAUNCH_FLOOR:,} cycles", [p for p in points if p.measured < LAUNCH_FLOOR])]
    for label, ps in groups:
        table.append({"label": label, "rows": len(ps), "failed": sum(p.error is None for p in ps), "cycles": None,
                      "signed": signed(ps), **{t: (_mape(tool_errors(ps, t)), len(tool_errors(ps, t))) for t in tools}})
    bal = {}
    for t in tools:
        per_app = [row[t][0][0] for row in table[:len(apps)] if row[t][0] is not None]
        bal[t] = ((statistics.fmean(per_app), statistics.median(per_app)), len(per_app)) if per_app else (None, 0)
    table.append({"label": "app-balanced (mean / median of the app MAPEs)", "rows": len(apps), "failed": None,
                  "cycles": None, "signed": None, **bal})
    return table


def format_side_by_side(table: list[dict], tools: list[str], markdown: bool = False, signed: bool = False) -> str:
    """The table of :func:`side_by_side` as text or Markdown; ``signed`` adds teg's signed median error."""
    def cell(c, rows):
        (v, n) = c
        if v is None:
            return "-"
        txt = f"{v[0] * 100:.1f} / {v[1] * 100:.1f}"
        return txt + (f" ({n})" if rows is not None and n != rows else "")

    def sgn(row):
        return "-" if row.get("signed") is None else f"{row['signed'] * 100:+.1f}"

    lines = []
    if markdown:
        lines.append("| app | rows | " + " | ".join(f"{t} MAPE / median %" for t in tools) + " |"
                     + (" teg signed median % |" if signed else ""))
        lines.append("|---|---|" + "---|" * (len(tools) + signed))
    else:
        lines.append(f"{'app':48} {'rows':>5} " + " ".join(f"{t + ' MAPE/med %':>22}" for t in tools)
                     + (f" {'teg signed med %':>22}" if signed else ""))
    for row in table:
        n_ok = None if row["failed"] is None else row["rows"] - row["failed"]
        rows_txt = f"{row['rows']}" + (f" ({row['failed']} failed)" if row["failed"] else "")
        cells = [cell(row[t], n_ok) for t in tools] + ([sgn(row)] if signed else [])
        if markdown:
            lines.append(f"| {row['label']} | {rows_txt} | " + " | ".join(cells) + " |")
        else:
            lines.append(f"{row['label'][:48]:48} {rows_txt:>5} " + " ".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)
