"""Mutation fuzzing of every input teg reads: the corpus (the repository's own fixtures), the
mutations, and the runner that executes one ``teg`` command per case and names its outcome.

Used by ``tests/test_fuzz_*.py`` (a few hundred cases, fixed seeds) and by
``benchmarks/fuzz_campaign.py`` (thousands). A case is deterministic given ``(kind, seed, index)``.

Mechanism of the runner: the parent process imports teg and runs each command once (so numba's
compiled functions are loaded), then ``fork``s one child per case. The child writes the case's
files into a fresh folder, runs the command in-process with click's ``CliRunner`` and sends its
exit code, stderr and any escaped exception back through a pipe; the parent kills a child that
runs past the case's time limit (a hang, a ``timeout``) and names a child that dies of a signal
(``crash``). The child's address space is capped (``RLIMIT_AS``) so that an input that makes teg
allocate without bound ends as a ``MemoryError`` traceback instead of swapping the machine.

Outcomes: ``ok`` (exit 0), ``error`` (exit 2 with one ``teg: error:`` line, or click's usage
error), ``unknown`` (exit 1 with the unknown-opcode warning), ``partial`` (exit 1 from a
multi-kernel application whose report names the kernels that are missing or failed), and the
failures ``traceback`` (an exception escaped), ``bad-exit`` (any other exit or a malformed
message), ``timeout``, ``crash``.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import select
import shutil
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
BUNDLED_SASS = ROOT / "traces" / "matmul_abt.sm_90.sass"
BUNDLED_TRACE = ROOT / "traces" / "matmul_abt.sm_90.trace.npz"
ACCELSIM = ROOT / "tests" / "data" / "traces"

KINDS = ("sass", "cubin", "accelsim", "native", "machine", "cli")
FAILURES = ("traceback", "bad-exit", "timeout", "crash")
CLEAN = ("ok", "error", "unknown", "partial")
MEMORY_CAP = 6 << 30          # bytes of address space a case may map (numba and numpy need some)

# values a damaged or hostile input puts where a number belongs
EXTREMES = ("0", "-1", "-0", "1.5", "99999999999999999999", "18446744073709551616", "9223372036854775808",
            "1e999", "-1e999", "1e300", "nan", "NaN", "inf", ".inf", "-.inf", ".nan", "0x", "0xffffffffffffffffffff",
            "", "32767", "65536", "2147483648", "4294967296", "1e20", "abc", "[1, 2]", "{}", "null", "true")
JUNK = ("\x00", "\xff\xfe", "é", "{", "[[[[[[[[", "]]]", ",", ";", "*/", "/*", "#", "-", "=", "\t", "\r\n", "\n\n",
        "&a", "*a", "<<:", "!!python/object:os.system", "%", "@", "`", "\\", "'", '"')


@dataclass
class Case:
    """One command on one (possibly damaged) input: ``files`` are written into the case's folder
    (``{dir}`` in ``argv`` and in file names stands for it), ``timeout`` in seconds."""

    kind: str
    name: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    timeout: float = 20.0
    build: Callable[[Path], None] | None = None     # extra preparation inside the case folder


@dataclass
class Outcome:
    kind: str
    name: str
    outcome: str
    exit_code: int | None
    detail: str
    seconds: float


# ---- mutations ---------------------------------------------------------------------------------

def flip_bits(data: bytes, rng: random.Random, n: int = 1) -> bytes:
    b = bytearray(data)
    for _ in range(n):
        if b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def line_edit(data: bytes, rng: random.Random) -> bytes:
    """Delete, duplicate, swap or move a line."""
    lines = _lines(data)
    if len(lines) < 2:
        return data
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.choice(("delete", "duplicate", "swap", "move"))
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(j, lines[i])
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.insert(j, lines.pop(i))
    return b"\n".join(lines)


_NUMBER = re.compile(rb"(?<![A-Za-z_])(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)")
_TOKEN = re.compile(rb"[^\s,;:=()\[\]{}]+")


def replace_token(data: bytes, rng: random.Random, numbers_only: bool = False) -> bytes:
    """Replace one number (or any token) by an extreme value."""
    spans = [m.span() for m in (_NUMBER if numbers_only else _TOKEN).finditer(data)]
    if not spans:
        return data
    s, e = rng.choice(spans)
    return data[:s] + rng.choice(EXTREMES).encode() + data[e:]


def insert_junk(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    junk = rng.choice(JUNK)
    if rng.random() < 0.1:
        junk = junk * rng.choice((100, 10000))
    return data[:i] + junk.encode("utf-8", "surrogatepass") + data[i:]


def mutate_text(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One to three text mutations; returns the data and their names."""
    ops = {"flip": lambda d: flip_bits(d, rng, rng.randrange(1, 4)), "truncate": lambda d: truncate(d, rng),
           "line": lambda d: line_edit(d, rng), "number": lambda d: replace_token(d, rng, True),
           "token": lambda d: replace_token(d, rng), "junk": lambda d: insert_junk(d, rng)}
    names = []
    for _ in range(rng.randrange(1, 4)):
        name = rng.choice(sorted(ops))
        data = ops[name](data)
        names.append(name)
    return data, "+".join(names)


# ---- corpus per kind ---------------------------------------------------------------------------

def _read(p: Path) -> bytes:
    return p.read_bytes()


def sass_case(rng: random.Random, i: int) -> Case:
    """A mutated SASS listing: ``parse`` it, or ``estimate`` it against the bundled trace."""
    src = rng.choice([BUNDLED_SASS, FIX / "sass" / "kernels.sm_90.sass", FIX / "sass" / "kernels.sm_75.nvdisasm_hex.sass",
                      FIX / "sass" / "kernels.sm_120.nvdisasm.sass", FIX / "sass" / "teg_listing3.sass"])
    data, how = mutate_text(_read(src), rng)
    if rng.random() < 0.05:       # an instruction with thousands of operands
        data = data.replace(b"FFMA R", b"FFMA " + b"R1, " * rng.choice((100, 10000)) + b"R", 1)
    if src == BUNDLED_SASS and rng.random() < 0.5:
        argv = ["estimate", "--sass", "{dir}/k.sass", "--trace", str(BUNDLED_TRACE)]
    elif src.name == "teg_listing3.sass" and rng.random() < 0.5:
        argv = ["estimate", "--sass", "{dir}/k.sass", "--machine", "gt200"]
    else:
        argv = ["parse", "{dir}/k.sass", "--machine", "sm_90" if "sm_" in src.name else "gt200"]
    return Case("sass", f"sass#{i} {src.name} {how}", argv, {"k.sass": data})


def cubin_case(rng: random.Random, i: int) -> Case:
    """A mutated cubin (ELF): the emulator reads it (``trace run``, SASS from the sibling listing)."""
    arch = rng.choice(("sm_75", "sm_90"))
    cubin = FIX / "emu" / f"kernels.{arch}.cubin"
    data = _read(cubin)
    op = rng.choice(("flip", "flip", "truncate", "header"))
    if op == "flip":
        data = flip_bits(data, rng, rng.randrange(1, 8))
    elif op == "truncate":
        data = truncate(data, rng)
    else:                                       # the ELF header and section table fields
        b = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            k = rng.randrange(min(64, len(b)))
            b[k] = rng.randrange(256)
        data = bytes(b)
    files = {"k.cubin": data, "k.sass": _read(FIX / "emu" / f"kernels.{arch}.sass")}
    argv = ["trace", "run", "{dir}/k.cubin", "--kernel", "saxpy", "--grid", "1", "--block", "64",
            "--arg", "n=64", "--arg", "a=2.0", "--arg", "x=arange:float32:64", "--arg", "y=zeros:float32:64",
            "-o", "{dir}/out.npz", "--max-instructions", "20000"]
    return Case("cubin", f"cubin#{i} {arch} {op}", argv, files)


def _accelsim_files(folder: Path) -> dict[str, bytes]:
    return {f.name: _read(f) for f in folder.iterdir() if f.is_file() and f.name != "stats.csv"}


def accelsim_case(rng: random.Random, i: int) -> Case:
    """A mutated Accel-Sim trace folder: ``trace info`` or ``estimate``."""
    folder = rng.choice([ACCELSIM / "microgpusim" / "vectoradd-100-32-trace",
                         ACCELSIM / "microgpusim" / "matrixmul-32-32-trace",
                         ACCELSIM / "dp-performance-accel-sim" / "simpletorch"])
    files = _accelsim_files(folder)
    target = rng.choice(sorted(files)) if rng.random() < 0.15 else rng.choice(
        sorted(n for n in files if n.endswith(".traceg")))
    data, how = mutate_text(files[target], rng)
    files = {f"t/{n}": (data if n == target else d) for n, d in files.items()}
    machine = "sm_61" if "microgpusim" in str(folder) else "sm_70"
    argv = (["trace", "info", "{dir}/t"] if rng.random() < 0.4 else
            ["estimate", "--trace", "{dir}/t", "--machine", machine])
    if argv[0] == "estimate" and folder.name == "simpletorch":     # one kernel of the application
        argv += ["--kernel", target.split(".")[0].split("-")[-1] if target.startswith("kernel-") else "1"]
    return Case("accelsim", f"accelsim#{i} {folder.name}/{target} {how}", argv, files)


_JSON_WEIRD = (None, -1, 0, 1.5, "x", [], {}, float("nan"), 1e300, 2**70, True, -2**40, [1, 2, 3], [0, 0, 0],
               [1.5, 1, 1], [2**32, 1, 1], "../../etc", 32767)


def _json_paths(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield path + (k,)
            yield from _json_paths(v, path + (k,))
    elif isinstance(node, list):
        for k, v in enumerate(node):
            yield path + (k,)
            yield from _json_paths(v, path + (k,))


def _mutate_meta(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    meta = json.loads(raw)
    paths = [p for p in _json_paths(meta) if len(p) > 0]
    p = rng.choice(paths)
    parent = meta
    for k in p[:-1]:
        parent = parent[k]
    if rng.random() < 0.15 and isinstance(parent, dict):
        del parent[p[-1]]
        how = f"meta del {'/'.join(map(str, p))}"
    else:
        parent[p[-1]] = rng.choice(_JSON_WEIRD)
        how = f"meta set {'/'.join(map(str, p))}"
    return json.dumps(meta).encode(), how


def _mutate_column(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Extreme values into a ``.npy`` column, or a damaged header, or a cut."""
    op = rng.choice(("values", "values", "header", "truncate"))
    if op == "header":
        b = bytearray(raw)
        k = rng.randrange(min(128, len(b)))
        b[k] ^= 1 << rng.randrange(8)
        return bytes(b), "npy header flip"
    if op == "truncate":
        return truncate(raw, rng), "npy cut"
    import io

    a = np.load(io.BytesIO(raw), allow_pickle=False)
    if a.size == 0:
        return raw, "npy empty"
    info = np.iinfo(a.dtype) if a.dtype.kind in "iu" else None
    choices = [0, 1, -1, 32767, 1 << 20] if info is None else [info.min, info.max, 0, -1 % (info.max + 1) if
                                                                    info.min == 0 else -1, info.max // 2]
    flat = a.reshape(-1).copy()
    for _ in range(rng.randrange(1, 4)):
        v = rng.choice(choices)
        flat[rng.randrange(flat.size)] = np.asarray(v).astype(a.dtype, casting="unsafe")
    out = io.BytesIO()
    np.save(out, flat.reshape(a.shape))
    return out.getvalue(), "npy values"


def _npz_members() -> dict[str, bytes]:
    import zipfile

    with zipfile.ZipFile(BUNDLED_TRACE) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def native_case(rng: random.Random, i: int) -> Case:
    """The bundled native trace damaged — its metadata, a column, the archive — as a ``.npz`` or
    as a folder; ``estimate`` it with the bundled SASS, or ``trace info``."""
    members = _npz_members()
    r = rng.random()
    if r < 0.3:
        members["meta.json"], how = _mutate_meta(members["meta.json"], rng)
    elif r < 0.85:
        name = rng.choice(sorted(n for n in members if n.endswith(".npy")))
        members[name], how = _mutate_column(members[name], rng)
        how += f" {name}"
    else:
        how = "archive"
    as_folder = rng.random() < 0.4
    if as_folder:
        files = {f"t/{n}": d for n, d in members.items()}
        target = "{dir}/t"
    else:
        import io
        import zipfile

        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
            for n, d in members.items():
                zf.writestr(n, d)
        data = buf.getvalue()
        if how == "archive":
            data, how = rng.choice([(truncate(data, rng), "archive cut"), (flip_bits(data, rng, 4), "archive flip"),
                                    (b"", "archive empty")])
        files = {"t.npz": data}
        target = "{dir}/t.npz"
    argv = (["trace", "info", target] if rng.random() < 0.3 else
            ["estimate", "--trace", target, "--sass", str(BUNDLED_SASS)])
    return Case("native", f"native#{i} {'folder' if as_folder else 'npz'} {how}", argv, files)


_DERIVED = """name: fuzzed
description: "a table derived from sm_90"
extends: sm_90
clock_mhz: {value: 1755, source: "test"}
num_sms: {value: 114, source: "test"}
latencies:
  fp32: {execution: 4, issue_multi: 1, issue_same: 1, source: "test"}
  shared: {execution: 29, issue_multi: 1, issue_same: 1, source: "test"}
shared:
  source: "test"
  banks: 32
  bank_bytes: 4
memory:
  source: "test"
  dram_latency: 479
  channels: 40
  l2: {size_bytes: 52428800, line_bytes: 128, sector_bytes: 32, assoc: 16, latency: 262}
limits:
  source: "test"
  max_warps: 64
"""
_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + k)}: &{chr(98 + k)} [*{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}, *{chr(97 + k)}]\n" for k in range(9))


def _mutate_yaml(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    r = rng.random()
    if r < 0.5:
        return replace_token(data, rng, numbers_only=rng.random() < 0.7), "value"
    if r < 0.6:
        lines = _lines(data)
        k = rng.randrange(len(lines))
        lines.insert(k, lines[k])
        return b"\n".join(lines), "duplicate line"
    if r < 0.65:
        return data + b"\n" + _BOMB.encode(), "alias bomb"
    if r < 0.7:
        return data + b"\nx: " + b"[" * 100000 + b"\n", "deep nesting"
    if r < 0.75:
        return data.replace(b"description:", "description: caf\xe9 ".encode("latin-1"), 1), "latin-1"
    return mutate_text(data, rng)


def machine_case(rng: random.Random, i: int) -> Case:
    """A damaged machine table: a derived one (``extends: sm_90``) or the standalone ``gt200``;
    ``machines show`` it or ``estimate`` a kernel on it."""
    if rng.random() < 0.6:
        data, how = _mutate_yaml(_DERIVED.encode(), rng)
        argv = (["machines", "show", "{dir}/m.yaml"] if rng.random() < 0.5 else
                ["estimate", "--machine", "{dir}/m.yaml"])
        name = "derived"
    else:
        data, how = _mutate_yaml(_read(ROOT / "isa_tables" / "gt200.yaml"), rng)
        argv = (["machines", "show", "{dir}/m.yaml"] if rng.random() < 0.5 else
                ["estimate", "--sass", str(FIX / "sass" / "teg_listing3.sass"), "--machine", "{dir}/m.yaml"])
        name = "gt200"
    return Case("machine", f"machine#{i} {name} {how}", argv, {"m.yaml": data})


_CLI_VALUES = EXTREMES + ("/dev/zero", "/nonexistent/x", "{dir}/afile", "{dir}/afile/sub", "{dir}", "1,2,4",
                          "1,,2", "0,1", "64", "1000", "100000", "sm_90", "gt200", "nosuch", "x=1", "bsp_lambda=2",
                          "nosuch=1", "bsp_lambda=nan", "n=1", "a=float32:2", "y=zeros:float32:10",
                          "{dir}/bad.npy", "abc,def", "saxpy", "reduce")
_CLI_COMMANDS = {
    "estimate": ["--sass", "--trace", "--kernel", "--machine", "--sms", "--blocks-per-sm", "--policy", "--deps",
                 "--unknown"],
    "whatif": ["--sms", "--machine", "--kernel"],
    "sweep": ["--warps", "--blocks-per-sm", "--sms", "--machine", "--kernel"],
    "compare": ["--trace", "--sass", "--machine", "--measured", "--param", "--model", "--kernel"],
    "parse": ["--machine", "--kernel"],
    "trace info": ["--machine", "--kernel"],
    "trace run": ["--kernel", "--grid", "--block", "--arg", "--shmem", "-o", "--max-instructions"],
    "machines show": [],
}


def cli_case(rng: random.Random, i: int) -> Case:
    """A command line with odd values (paths that are devices or files, numbers out of range …)."""
    cmd = rng.choice(sorted(_CLI_COMMANDS))
    argv = cmd.split()
    if cmd in ("parse", "machines show", "trace info"):
        argv.append(rng.choice([str(BUNDLED_SASS), "sm_90", str(BUNDLED_TRACE), rng.choice(_CLI_VALUES)]
                               if cmd != "trace info" else [str(BUNDLED_TRACE), rng.choice(_CLI_VALUES)]))
    if cmd == "trace run":
        argv += [str(FIX / "emu" / "kernels.sm_90.cubin"), "--kernel", "saxpy", "--block", "32", "-o", "{dir}/o.npz",
                 "--arg", "n=32", "--arg", "a=2.0", "--arg", "x=arange:float32:32", "--arg", "y=zeros:float32:32",
                 "--max-instructions", "5000"]
    if cmd == "compare":
        argv += ["--trace", str(BUNDLED_TRACE), "--sass", str(BUNDLED_SASS)]
    for _ in range(rng.randrange(1, 4)):
        opt = rng.choice(_CLI_COMMANDS[cmd] or ["--json"])
        argv += [opt, rng.choice(_CLI_VALUES)]
    files = {"afile": b"not a folder\n", "bad.npy": _read(BUNDLED_TRACE)[:100]}
    return Case("cli", f"cli#{i} {' '.join(argv)}", argv, files)


GENERATORS = {"sass": sass_case, "cubin": cubin_case, "accelsim": accelsim_case, "native": native_case,
              "machine": machine_case, "cli": cli_case}


def cases(kind: str, seed: int, count: int) -> list[Case]:
    """``count`` cases of ``kind``, deterministic in ``seed``."""
    return [GENERATORS[kind](random.Random(f"{kind}-{seed}-{i}"), i) for i in range(count)]


# ---- running -----------------------------------------------------------------------------------

def _classify(exit_code: int, stderr: str, exc: str, stdout: str = "") -> tuple[str, str]:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if exc:
        return "traceback", exc
    if exit_code == 0:
        return "ok", ""
    errors = [ln for ln in lines if ln.startswith("teg: error:")]
    if exit_code == 2:
        if len(errors) == 1 and all(ln.startswith(("teg: error:", "teg: warning:")) for ln in lines):
            return "error", errors[0]
        if any(ln.startswith("Error: ") for ln in lines):      # click's usage errors
            return "error", next(ln for ln in lines if ln.startswith("Error: "))
    if exit_code == 1 and not errors and any("unknown" in ln for ln in lines if ln.startswith("teg: warning:")):
        return "unknown", lines[-1]
    if exit_code == 1 and not errors and re.search(r"^(failed|missing)\b", stdout, re.M):
        return "partial", next(ln for ln in stdout.splitlines() if ln.startswith(("failed", "missing")))
    return "bad-exit", f"exit {exit_code}: " + " | ".join(lines[-3:])


def _child(case: Case, folder: Path, wfd: int) -> None:
    """Run ``case`` in this (forked) process and write a JSON record to ``wfd``."""
    from click.testing import CliRunner

    from teg.cli import main

    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    except (ValueError, OSError):
        pass
    for name, data in case.files.items():
        p = folder / name.replace("{dir}/", "")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    if case.build is not None:
        case.build(folder)
    argv = [a.replace("{dir}", str(folder)) for a in case.argv]
    os.environ["TEG_CACHE_DIR"] = str(folder / ".cache")
    os.chdir(folder)                  # relative outputs (``-o 1e999``) land in the case's folder
    rec = {"exit": None, "stderr": "", "stdout": "", "exc": ""}
    try:
        res = CliRunner().invoke(main, argv, catch_exceptions=True)
        rec["exit"] = res.exit_code
        rec["stderr"] = res.stderr[:20000]
        rec["stdout"] = res.stdout[:20000]
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            tb = traceback.extract_tb(res.exc_info[2])
            where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
            rec["exc"] = f"{type(res.exception).__name__} at {where}: {str(res.exception)[:200]}"
    except BaseException as e:       # noqa: BLE001 — anything escaping CliRunner is a finding
        rec["exc"] = f"{type(e).__name__}: {str(e)[:200]}"
    os.write(wfd, json.dumps(rec).encode())


def run_case(case: Case, scratch: Path) -> Outcome:
    """Run one case in a forked child (see the module docstring)."""
    folder = Path(tempfile.mkdtemp(prefix="case-", dir=scratch))
    rfd, wfd = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:                                       # child
        os.close(rfd)
        code = 0
        try:
            _child(case, folder, wfd)
        except BaseException:                          # noqa: BLE001
            code = 3
        finally:
            os._exit(code)
    os.close(wfd)
    chunks = []
    deadline = t0 + case.timeout
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([rfd], [], [], min(left, 1.0))
        if ready:
            data = os.read(rfd, 1 << 16)
            if not data:
                break
            chunks.append(data)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(rfd)
    secs = time.monotonic() - t0
    shutil.rmtree(folder, ignore_errors=True)
    if timed_out:
        return Outcome(case.kind, case.name, "timeout", None, f"over {case.timeout:g} s", secs)
    if os.WIFSIGNALED(status):
        return Outcome(case.kind, case.name, "crash", None, f"signal {os.WTERMSIG(status)}", secs)
    try:
        rec = json.loads(b"".join(chunks))
    except ValueError:
        return Outcome(case.kind, case.name, "crash", None, "no record from the child", secs)
    outcome, detail = _classify(rec["exit"], rec["stderr"], rec["exc"], rec["stdout"])
    return Outcome(case.kind, case.name, outcome, rec["exit"], detail, secs)


def warm_up() -> None:
    """Load every jitted function a case may call into this process (children inherit them)."""
    from click.testing import CliRunner

    from teg.cli import main

    with tempfile.TemporaryDirectory() as d:
        r = CliRunner(env={"TEG_CACHE_DIR": str(Path(d) / "cache")})
        for argv in (["estimate"], ["parse", str(BUNDLED_SASS)],
                     ["estimate", "--trace", str(ACCELSIM / "microgpusim" / "matrixmul-32-32-trace"), "--machine",
                      "sm_61", "--sms", "1"],
                     ["trace", "info", str(ACCELSIM / "dp-performance-accel-sim" / "simpletorch")],
                     ["estimate", "--sass", str(FIX / "sass" / "teg_listing3.sass"), "--machine", "gt200"],
                     ["trace", "run", str(FIX / "emu" / "kernels.sm_90.cubin"), "--kernel", "saxpy", "--block", "32",
                      "--arg", "n=32", "--arg", "a=2.0", "--arg", "x=arange:float32:32", "--arg",
                      "y=zeros:float32:32", "-o", str(Path(d) / "o.npz")]):
            r.invoke(main, argv)


def run_cases(all_cases: list[Case], scratch: Path | None = None) -> list[Outcome]:
    """Every case, in order (each in its own forked child)."""
    own = scratch is None
    scratch = Path(tempfile.mkdtemp(prefix="teg-fuzz-")) if own else scratch
    try:
        return [run_case(c, scratch) for c in all_cases]
    finally:
        if own:
            shutil.rmtree(scratch, ignore_errors=True)
