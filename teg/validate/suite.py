"""The validation suite: the CUDA micro-benchmarks and application cases under
``teg/validate/cuda/`` (shipped inside the package, so an installed wheel can measure too), the
manifest ``cases.yaml`` that lists them, launch configurations per warp count, kernel arguments
and the initial contents of each case's buffer.

Launch method (TEG report §5.1, adapted): a case run at ``W`` warps per SM uses blocks of
``min(W, max_warps_per_block)`` warps and ``B = W / that`` blocks per SM, and launches ``G = S·B``
blocks on a GPU with ``S`` SMs, so that the block scheduler gives every SM the same ``B`` blocks
(the measurement records ``%smid`` per block and checks it). The cycles of a run are, per SM,
``max(end) − min(start)`` of its blocks' ``clock64`` stamps; the value reported is the median over
SMs and then over repeats. Prediction traces the ``B`` blocks of one SM with the same arguments.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import operator
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from teg import TegError
from teg.textfile import TextFileError
from teg.yamlfile import load_yaml_file

SUITE_DIR = Path(__file__).resolve().parent / "cuda"
MANIFEST = SUITE_DIR / "cases.yaml"
GROUPS = ("latency", "throughput", "bank", "coalescing", "channel", "hongkim", "teg_app")
QUANTITIES = ("latency", "issue_same", "occupancy", "shared_latency", "wavefront", "l1_latency",
              "l2_latency", "dram_latency")
INITS = ("zeros", "random_f32", "chase")
TIMING_WORDS = 4            # u64 per block: start, end, smid, 0
KERNEL_ARGS = ("timing", "out", "buf", "p0", "p1", "a", "b")


class SuiteError(TegError):
    """A malformed validation manifest or a suite that cannot be compiled."""


# ---------------------------------------------------------------------------------- expressions

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}


def evaluate(expr: Any, variables: dict[str, Any], where: str = "<expr>") -> Any:
    """Evaluate a manifest expression: a number, or a string of integer arithmetic
    (``+ - * // / % **``, comparisons, ``x if c else y``) over ``variables``."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return expr
    if not isinstance(expr, str):
        raise SuiteError(f"{where}: expected a number or an expression, got {expr!r}")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise SuiteError(f"{where}: cannot parse expression {expr!r}: {exc.msg}") from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in variables:
                raise SuiteError(f"{where}: unknown name {node.id!r} in {expr!r} "
                                 f"(known: {', '.join(sorted(variables))})")
            return variables[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
            return _CMPOPS[type(node.ops[0])](ev(node.left), ev(node.comparators[0]))
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        raise SuiteError(f"{where}: unsupported construct in expression {expr!r}")

    return ev(tree)


# ---------------------------------------------------------------------------------------- model

@dataclass(frozen=True)
class Calibration:
    """What a micro-benchmark measures (see the header of cases.yaml)."""

    quantity: str
    opcode: str
    steps: Any                  # expression over the case variables
    step: tuple[str, ...]
    step_sm90: tuple[str, ...] | None = None
    degree: Any = None

    def step_for(self, sm: int) -> tuple[str, ...]:
        """SASS opcodes of one step on compute capability ``sm`` (×10)."""
        return self.step_sm90 if (sm >= 90 and self.step_sm90) else self.step


@dataclass(frozen=True)
class Case:
    """One benchmark: a kernel, its arguments and buffer, its group."""

    name: str
    kernel: str
    source: str
    group: str
    variables: dict[str, Any]
    p0: Any = 0
    p1: Any = 0
    a: Any = 1.0
    b: Any = 0.0
    buffer: dict[str, Any] = field(default_factory=dict)
    max_warps_per_block: int = 32
    flush_l2: bool = False
    calibrates: Calibration | None = None

    def calibration_values(self) -> dict[str, Any]:
        """The calibration record with expressions evaluated (for the measured JSON)."""
        c = self.calibrates
        if c is None:
            return {}
        out: dict[str, Any] = {"quantity": c.quantity, "opcode": c.opcode,
                               "steps": evaluate(c.steps, self.variables, self.name),
                               "step": list(c.step)}
        if c.step_sm90:
            out["step_sm90"] = list(c.step_sm90)
        if c.degree is not None:
            out["degree"] = evaluate(c.degree, self.variables, self.name)
        return out


@dataclass(frozen=True)
class Launch:
    """Launch of a case at ``warps`` warps per SM on a GPU with ``num_sms`` SMs."""

    warps: int
    threads_per_block: int
    blocks_per_sm: int
    num_sms: int

    @property
    def grid(self) -> int:
        return self.blocks_per_sm * self.num_sms

    def variables(self) -> dict[str, int]:
        return {"W": self.warps, "T": self.threads_per_block, "B": self.blocks_per_sm,
                "S": self.num_sms, "G": self.grid}


@dataclass(frozen=True)
class Arguments:
    """Resolved kernel arguments of one case launch (scalars, buffer and output sizes)."""

    p0: int
    p1: int
    a: float
    b: float
    buffer_bytes: int
    out_words: int          # u64 per thread of the whole grid
    timing_words: int       # u64 per block of the whole grid


@dataclass
class Suite:
    """The loaded manifest."""

    cases: list[Case]
    warps: tuple[int, ...]
    directory: Path
    manifest: Path

    def sources(self) -> list[str]:
        """The .cu files the cases use (manifest order)."""
        return list(dict.fromkeys(c.source for c in self.cases))

    def select(self, patterns: Iterable[str] | None = None, groups: Iterable[str] | None = None) -> list[Case]:
        """Cases whose name matches one of the shell patterns and whose group is listed."""
        import fnmatch

        pats = list(patterns or [])
        grps = set(groups or [])
        unknown = grps - set(GROUPS)
        if unknown:
            raise SuiteError(f"unknown group(s) {', '.join(sorted(unknown))}; known: {', '.join(GROUPS)}")
        chosen = [c for c in self.cases
                  if (not pats or any(fnmatch.fnmatchcase(c.name, p) for p in pats))
                  and (not grps or c.group in grps)]
        if not chosen:
            raise SuiteError(f"no case matches {pats or ''} {sorted(grps) or ''}".strip())
        return chosen

    def case(self, name: str) -> Case:
        for c in self.cases:
            if c.name == name:
                return c
        raise SuiteError(f"{self.manifest}: no case named {name!r}")

    def digest(self) -> str:
        """SHA-256 over the manifest and the sources (identifies the suite version measured)."""
        h = hashlib.sha256()
        for p in [self.manifest, *sorted(self.directory.glob("*.cu*"))]:
            h.update(p.name.encode())
            h.update(p.read_bytes())
        return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------- loading

_CASE_KEYS = {"name", "kernel", "source", "group", "for", "p0", "p1", "a", "b", "buffer",
              "max_warps_per_block", "flush_l2", "calibrates"}


def _expand(entry: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """Expand ``for: {var: [values]}`` into one entry per combination, formatting strings."""
    loops = entry.get("for") or {}
    if not isinstance(loops, dict) or not all(isinstance(v, list) and v for v in loops.values()):
        raise SuiteError(f"{where}: 'for' must map names to non-empty lists")
    names = list(loops)
    out = []
    for combo in itertools.product(*(loops[n] for n in names)):
        variables = dict(zip(names, combo))
        out.append({"variables": variables,
                    "name": str(entry["name"]).format(**variables),
                    "kernel": str(entry["kernel"]).format(**variables)})
    return out


def _calibration(raw: Any, where: str) -> Calibration | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("quantity") not in QUANTITIES:
        raise SuiteError(f"{where}: calibrates.quantity must be one of {', '.join(QUANTITIES)}")
    for key in ("opcode", "steps", "step"):
        if key not in raw:
            raise SuiteError(f"{where}: calibrates needs {key!r}")
    if raw["quantity"] == "wavefront" and "degree" not in raw:
        raise SuiteError(f"{where}: a wavefront calibration needs 'degree'")
    step90 = raw.get("step_sm90")
    return Calibration(quantity=raw["quantity"], opcode=str(raw["opcode"]), steps=raw["steps"],
                       step=tuple(raw["step"]), step_sm90=tuple(step90) if step90 else None,
                       degree=raw.get("degree"))


def load(manifest: str | os.PathLike | None = None) -> Suite:
    """Load and check the manifest (default: the one shipped in the package)."""
    path = Path(manifest) if manifest else MANIFEST
    try:
        doc = load_yaml_file(path, "validation manifest")
    except TextFileError as exc:
        raise SuiteError(str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise SuiteError(f"{path}: expected a mapping with a 'cases' list")
    from teg.analysis.sweep import DEFAULT_WARPS

    warps = tuple(int(w) for w in doc.get("warps", DEFAULT_WARPS))
    cases: list[Case] = []
    seen: set[str] = set()
    for i, entry in enumerate(doc["cases"]):
        where = f"{path}: case #{i + 1}"
        if not isinstance(entry, dict):
            raise SuiteError(f"{where}: expected a mapping")
        extra = set(entry) - _CASE_KEYS
        if extra:
            raise SuiteError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        for key in ("name", "kernel", "source", "group"):
            if key not in entry:
                raise SuiteError(f"{where}: missing {key!r}")
        where = f"{path}: case {entry['name']!r}"
        if entry["group"] not in GROUPS:
            raise SuiteError(f"{where}: group {entry['group']!r} is not one of {', '.join(GROUPS)}")
        if not (path.parent / entry["source"]).is_file():
            raise SuiteError(f"{where}: source {entry['source']!r} not found next to the manifest")
        buffer = dict(entry.get("buffer") or {})
        if buffer and buffer.get("init", "zeros") not in INITS:
            raise SuiteError(f"{where}: buffer.init must be one of {', '.join(INITS)}")
        calib = _calibration(entry.get("calibrates"), where)
        for item in _expand(entry, where):
            if item["name"] in seen:
                raise SuiteError(f"{where}: duplicate case name {item['name']!r}")
            seen.add(item["name"])
            cases.append(Case(name=item["name"], kernel=item["kernel"], source=entry["source"],
                              group=entry["group"], variables=item["variables"],
                              p0=entry.get("p0", 0), p1=entry.get("p1", 0), a=entry.get("a", 1.0),
                              b=entry.get("b", 0.0), buffer=buffer,
                              max_warps_per_block=int(entry.get("max_warps_per_block", 32)),
                              flush_l2=bool(entry.get("flush_l2", False)), calibrates=calib))
    return Suite(cases=cases, warps=warps, directory=path.parent, manifest=path)


# ------------------------------------------------------------------------- launches and inputs

def launch_for(case: Case, warps: int, num_sms: int) -> Launch:
    """Blocks of min(W, max_warps_per_block) warps, W / that many per SM, on every SM."""
    if warps < 1 or num_sms < 1:
        raise SuiteError(f"{case.name}: warps per SM and SMs must be positive (got {warps}, {num_sms})")
    per_block = min(warps, case.max_warps_per_block)
    if warps % per_block:
        raise SuiteError(f"{case.name}: {warps} warps per SM is not a multiple of the block's {per_block} warps")
    return Launch(warps=warps, threads_per_block=32 * per_block, blocks_per_sm=warps // per_block,
                  num_sms=num_sms)


def arguments(case: Case, launch: Launch) -> Arguments:
    """Evaluate the case's argument expressions for one launch."""
    env = {**case.variables, **launch.variables()}
    buf = evaluate(case.buffer.get("bytes", 0), env, f"{case.name}: buffer.bytes") if case.buffer else 0
    return Arguments(p0=int(evaluate(case.p0, env, f"{case.name}: p0")),
                     p1=int(evaluate(case.p1, env, f"{case.name}: p1")),
                     a=float(evaluate(case.a, env, f"{case.name}: a")),
                     b=float(evaluate(case.b, env, f"{case.name}: b")),
                     buffer_bytes=int(buf),
                     out_words=launch.grid * launch.threads_per_block,
                     timing_words=TIMING_WORDS * launch.grid)


def buffer_contents(case: Case, launch: Launch, nbytes: int, device_address: int) -> np.ndarray:
    """Initial bytes of the case buffer placed at ``device_address`` (uint8 array of ``nbytes``).

    ``chase``: for each block g < G and step k < steps, the u64 at byte g·block_bytes + k·stride
    holds the device address of byte g·block_bytes + ((k+1) mod steps)·stride (TEG §3.2.1
    dependent loads); chains of different blocks must not share an element."""
    init = case.buffer.get("init", "zeros") if case.buffer else "zeros"
    data = np.zeros(nbytes, dtype=np.uint8)
    if init == "random_f32":
        n = nbytes // 4
        vals = np.random.default_rng(12345).random(n, dtype=np.float32)
        data[: 4 * n] = vals.view(np.uint8)
    elif init == "chase":
        env = {**case.variables, **launch.variables()}
        stride = int(evaluate(case.buffer.get("stride"), env, f"{case.name}: buffer.stride"))
        steps = int(evaluate(case.buffer.get("steps"), env, f"{case.name}: buffer.steps"))
        block = int(evaluate(case.buffer.get("block_bytes", 128), env, f"{case.name}: buffer.block_bytes"))
        if stride % 8 or stride < 8 or block % 8 or block < 8 or steps < 1:
            raise SuiteError(f"{case.name}: chase stride and block_bytes must be positive multiples of 8, steps >= 1")
        g = np.arange(launch.grid, dtype=np.uint64)[:, None] * np.uint64(block)
        k = np.arange(steps, dtype=np.uint64)[None, :]
        where = g + k * np.uint64(stride)
        target = g + ((k + np.uint64(1)) % np.uint64(steps)) * np.uint64(stride) + np.uint64(device_address)
        if int(where.max()) + 8 > nbytes:
            raise SuiteError(f"{case.name}: chase needs {int(where.max()) + 8} bytes, buffer has {nbytes}")
        words = data.view(np.uint64) if nbytes % 8 == 0 else None
        if words is None:
            raise SuiteError(f"{case.name}: a chase buffer's size must be a multiple of 8")
        slots = (where // np.uint64(8)).ravel().astype(np.int64)
        if np.unique(slots).size != slots.size:
            raise SuiteError(f"{case.name}: chase chains of different blocks overlap at {launch.grid} blocks "
                             f"(stride {stride}, block_bytes {block})")
        words[slots] = target.ravel()
    return data


# ----------------------------------------------------------------------------------- compiling

def find_nvcc(nvcc: str | None = None) -> str:
    """Path of nvcc (argument, $NVCC, PATH, $CUDA_HOME/bin)."""
    for cand in (nvcc, os.environ.get("NVCC"), shutil.which("nvcc"),
                 os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")):
        if cand and (shutil.which(cand) or os.path.isfile(cand)):
            return cand
    raise SuiteError("nvcc not found (put it on PATH or set NVCC / CUDA_HOME); it compiles the suite")


def compile_source(source: Path, arch: str, out_dir: Path, nvcc: str | None = None) -> Path:
    """``nvcc -cubin -O3 -arch=<arch> source`` into ``out_dir`` (cached on the source digest)."""
    if not arch.startswith("sm_") or not arch[3:].rstrip("a").isdigit():
        raise SuiteError(f"architecture must look like sm_90, got {arch!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(source.parent.glob("*.cu*")))).hexdigest()[:12]
    cubin = out_dir / f"{source.stem}.{arch}.{digest}.cubin"
    if cubin.is_file():
        return cubin
    cmd = [find_nvcc(nvcc), "-cubin", "-O3", f"-arch={arch}", "-o", str(cubin), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout).strip().splitlines()
        raise SuiteError(f"{source}: nvcc -arch={arch} failed: {first[0] if first else 'no output'}")
    return cubin


def compile_suite(suite: Suite, arch: str, out_dir: str | os.PathLike, nvcc: str | None = None,
                  sources: Iterable[str] | None = None) -> dict[str, Path]:
    """Compile every source of the suite (or the listed ones) to a cubin: {source: cubin path}
    (one nvcc per source, run in parallel)."""
    from concurrent.futures import ThreadPoolExecutor

    names = list(sources) if sources is not None else suite.sources()
    with ThreadPoolExecutor(max_workers=max(1, min(len(names), os.cpu_count() or 1))) as pool:
        paths = list(pool.map(lambda s: compile_source(suite.directory / s, arch, Path(out_dir), nvcc), names))
    return dict(zip(names, paths))


def default_cache_dir() -> Path:
    """Where compiled cubins are cached ($TEG_CACHE or ~/.cache/teg/validate)."""
    root = os.environ.get("TEG_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "teg")
    return Path(root) / "validate"
