"""Scenario fuzzing of everything around the engine (issue 37): concurrent runs, signals, the trace
cache, odd paths, FIFOs, devices, symlinks and memory caps — each scenario real ``teg`` processes
in a fresh folder, its parameters drawn from a seeded generator, and checks of what must never
happen afterwards.

Used by ``benchmarks/fuzz_campaign.py --scenarios N`` (N of each class) and by
``tests/test_fuzz_scenarios.py`` (a few of each class, fixed seeds). A scenario is deterministic
in its parameters given ``(class, seed, index)``; the timing of concurrent processes is not (that
is what the concurrency and signal classes probe).

Outcomes: ``ok`` (every process did what it should), ``refused`` (a clean one-line error was the
right answer: a pipe nobody reads, another sweep on the table, a run that does not fit in its
memory cap …), and the failures ``data-loss`` (a user's file or folder, or a previous output,
changed), ``stale`` (a result that does not match a fresh run's), ``traceback`` (a Python
traceback or a malformed message), ``hang`` (a process past its time limit, killed), ``leak``
(a temporary left behind after the next run, a file left in the temporary folder, a worker still
alive after its parent ended), ``crash`` (a process killed by a signal it did not get from us).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "traces"
VECTORADD = DATA / "microgpusim" / "vectoradd-100-32-trace"
MATRIXMUL = DATA / "microgpusim" / "matrixmul-32-32-trace"
TORCH = DATA / "dp-performance-accel-sim" / "simpletorch"
BUNDLED_SASS = ROOT / "traces" / "matmul_abt.sm_90.sass"
BUNDLED_TRACE = ROOT / "traces" / "matmul_abt.sm_90.trace.npz"
WALK = ROOT / "tests" / "fixtures" / "emu" / "pointer_walk.sm_90.cubin"

CLASSES = ("concurrency", "signals", "caches", "paths", "fifos", "devices", "symlinks", "memory")
CLEAN = ("ok", "refused")
FAILURES = ("data-loss", "stale", "traceback", "hang", "leak", "crash")
TEG = "from teg._entry import run; run()"
TAG = "TEG_FUZZ_TAG"             # in every child's environment: finds a worker that outlived its parent


@dataclass
class Outcome:
    cls: str
    name: str
    outcome: str
    detail: str
    seconds: float


@dataclass
class Run:
    code: int | None
    out: str
    err: str
    hung: bool = False


class Finding(Exception):
    """A failure found by a scenario's checks: ``kind`` one of :data:`FAILURES`."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind


@dataclass
class Ctx:
    """One scenario's folder, environment and processes."""

    root: Path
    rng: random.Random
    tag: str = field(default_factory=lambda: uuid.uuid4().hex)
    refused: bool = False

    def env(self, **extra) -> dict:
        env = dict(os.environ)
        env.update({"TEG_CACHE_DIR": str(self.root / "cache"), "TMPDIR": str(self.root / "tmp"), TAG: self.tag,
                    "TEG_COMPILE_NOTICE": "0"})
        env.pop("XDG_CACHE_HOME", None)
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
        return env

    def start(self, args, env: dict | None = None, preexec=None) -> subprocess.Popen:
        argv = [a if isinstance(a, bytes) else os.fsencode(str(a)) for a in args]
        return subprocess.Popen([sys.executable, "-c", TEG, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env or self.env(), start_new_session=True, preexec_fn=preexec)

    def wait(self, p: subprocess.Popen, timeout: float = 120.0) -> Run:
        try:
            out, err = p.communicate(timeout=timeout)
            return Run(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            out, err = p.communicate()
            return Run(None, out.decode(errors="replace"), err.decode(errors="replace"), hung=True)

    def run(self, args, env: dict | None = None, timeout: float = 120.0, preexec=None) -> Run:
        return self.wait(self.start(args, env, preexec), timeout)


# ---- checks ------------------------------------------------------------------------------------------

def clean(r: Run, allowed=(0,), refusals: tuple[str, ...] = (), what: str = "") -> str:
    """``ok`` or ``refused`` for a clean run (exit in ``allowed``, or exit 2 with one ``teg: error:``
    line holding one of ``refusals``); raises :class:`Finding` otherwise."""
    label = f"{what}: " if what else ""
    if r.hung:
        raise Finding("hang", f"{label}still running at its time limit")
    if "Traceback (most recent call last)" in r.err or "Traceback (most recent call last)" in r.out:
        raise Finding("traceback", label + r.err.strip().splitlines()[-1][:300])
    if r.code is not None and r.code < 0:
        raise Finding("crash", f"{label}killed by signal {-r.code}")
    if r.code in allowed:
        return "ok"
    lines = [ln for ln in r.err.splitlines() if ln.strip() and not ln.startswith("teg: warning:")]
    if r.code == 2 and len(lines) == 1 and lines[0].startswith("teg: error:") and \
            (not refusals or any(x in lines[0] for x in refusals)):
        return "refused"
    if r.code == 2 and any(ln.startswith("Error: ") for ln in lines):      # click's usage errors
        return "refused"
    raise Finding("traceback", f"{label}exit {r.code}: {' | '.join(r.err.strip().splitlines()[-2:])[:300]}")


def digest_tree(path: Path) -> str:
    """Content and kind of ``path`` (a file, a folder's files, a link's target name, a node's type)."""
    h = hashlib.sha256()
    p = Path(path)
    if p.is_symlink():
        h.update(b"link:" + os.fsencode(os.readlink(p)))
        return h.hexdigest()
    if not p.exists():
        return "missing"
    st = os.lstat(p)
    if stat.S_ISDIR(st.st_mode):
        for f in sorted(p.rglob("*")):
            h.update(os.fsencode(f.relative_to(p).as_posix()))
            if f.is_file() and not f.is_symlink():
                h.update(f.read_bytes())
        return h.hexdigest()
    if stat.S_ISREG(st.st_mode):
        return hashlib.sha256(p.read_bytes()).hexdigest()
    return f"node:{stat.S_IFMT(st.st_mode)}:{st.st_rdev}"


def leftovers(folder: Path) -> list[str]:
    out = []
    for dirpath, dirs, files in os.walk(folder):
        for n in dirs + files:
            if ".partial-" in n or ".old-" in n or n.startswith(".teg-probe-"):
                out.append(os.path.join(dirpath, n))
    return out


def tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment carries ``tag`` (children of this scenario)."""
    pids = []
    needle = f"{TAG}={tag}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if needle in (d / "environ").read_bytes():
                state = (d / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                if state != b"Z":
                    pids.append(int(d.name))
        except OSError:
            continue
    return pids


def no_survivors(ctx: Ctx, grace: float = 10.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < grace:
        if not tagged_processes(ctx.tag):
            return
        time.sleep(0.1)
    left = tagged_processes(ctx.tag)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if left:
        raise Finding("leak", f"{len(left)} process(es) outlived the run: {left[:4]}")


def no_leftovers(ctx: Ctx, *folders: Path) -> None:
    left = [x for f in (ctx.root, *folders) for x in leftovers(f)]
    tmp = ctx.root / "tmp"
    if tmp.is_dir():
        left += [str(p) for p in tmp.iterdir()]
    if left:
        raise Finding("leak", f"left behind: {', '.join(os.path.basename(x) for x in left[:4])}")


def rows_of(path: Path) -> int | None:
    """Rows of the first kernel of the trace at ``path`` (None when unreadable)."""
    import teg.trace as tt

    try:
        return tt.load(path, cache=False).kernels[0].num_rows
    except Exception:          # noqa: BLE001 — anything unreadable
        return None


def loads(path: Path) -> bool:
    """Whether teg reads ``path`` as a trace (in this process)."""
    import teg.trace as tt

    try:
        tt.load(path, cache=False)
        return True
    except Exception:          # noqa: BLE001 — anything unreadable
        return False


def user_files(folder: Path, rng: random.Random) -> dict[Path, str]:
    """A few files of a user in ``folder`` (notes, a CSV, a numpy archive): path → digest."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_bytes(b"my notes\nno newline at the end" * rng.randrange(1, 3))
    (folder / "results.csv").write_text("a,b\n1,2\n")
    np.savez(folder / "weights.npz", w=np.arange(rng.randrange(5, 50)))
    return {p: digest_tree(p) for p in folder.iterdir()}


def intact(files: dict[Path, str], what: str = "user file") -> None:
    for p, d in files.items():
        if digest_tree(p) != d:
            raise Finding("data-loss", f"{what} {p.name} changed")


def spec(ctx: Ctx) -> Path:
    s = ctx.root / "sweep.yaml"
    s.write_text(f"traces: [{TORCH}]\nkernels: 're:reduce'\nwarps: [auto, {ctx.rng.choice([1, 2, 4])}]\n")
    return s


# ---- the classes ---------------------------------------------------------------------------------------

def concurrency(ctx: Ctx) -> str:
    """2–4 processes at once on one cache, one results table, one output: fills, --clear, sweeps,
    conversions, a --jobs 2 application run, started 0–0.4 s apart."""
    rng = ctx.rng
    sp, table, out = spec(ctx), ctx.root / "r.csv", ctx.root / "out.npz"
    mine = user_files(ctx.root / "cache", rng)             # a user's files in the shared cache folder
    kinds = [rng.choice(["fill", "fill", "clear", "sweep", "sweep", "convert", "app"]) for _ in range(rng.randrange(2, 5))]
    cmds = {"fill": lambda: ["trace", "info", rng.choice([VECTORADD, MATRIXMUL, TORCH])],
            "clear": lambda: ["trace", "cache", "--clear"],
            "sweep": lambda: ["sweep", "--spec", sp, "-o", table, "--jobs", "1"],
            "convert": lambda: ["trace", "convert", rng.choice([VECTORADD, MATRIXMUL]), out],
            "app": lambda: ["estimate", "--trace", TORCH, "--jobs", "2"]}
    procs = []
    for k in kinds:
        procs.append((k, ctx.start(cmds[k]())))
        time.sleep(rng.uniform(0, 0.4))
    result = "ok"
    for k, p in procs:
        r = ctx.wait(p, 180)
        got = clean(r, refusals=("another teg sweep is writing this table",) if k == "sweep" else (), what=k)
        result = "refused" if got == "refused" else result
    no_survivors(ctx)
    intact(mine)
    if table.exists():
        import csv

        with open(table, newline="") as fh:
            rows = list(csv.DictReader(fh))
        if len({r["key"] for r in rows}) != len(rows):
            raise Finding("data-loss", f"{table.name}: a point written twice ({len(rows)} rows)")
    if out.exists() and not loads(out):
        raise Finding("data-loss", f"{out.name}: not a readable trace after concurrent conversions")
    clean(ctx.run(["trace", "info", VECTORADD]), what="next run")
    no_leftovers(ctx)
    return "ok" if result == "ok" else "refused"


def signals(ctx: Ctx) -> str:
    """A run killed (SIGKILL, SIGTERM) or interrupted (SIGINT to its process group, as Ctrl-C) after
    0.2–3 s: a conversion over a previous output, a cache fill, a sweep, a --jobs 2 application.
    The previous output must be intact, no worker may survive, Ctrl-C must end with exit 130 and
    one line, and the next run must succeed and leave nothing behind."""
    rng = ctx.rng
    what = rng.choice(["convert", "convert-folder", "fill", "sweep", "app"])
    sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
    out = ctx.root / ("out" if what == "convert-folder" else "out.npz")
    table = ctx.root / "r.csv"
    args = {"convert": ["trace", "convert", MATRIXMUL, out], "convert-folder": ["trace", "convert", MATRIXMUL, out],
            "fill": ["trace", "info", TORCH], "sweep": ["sweep", "--spec", spec(ctx), "-o", table, "--jobs", "2"],
            "app": ["whatif", "--trace", TORCH, "--jobs", "2"]}[what]
    before = None
    if what.startswith("convert"):
        clean(ctx.run(["trace", "convert", VECTORADD, out]), what="first conversion")
        before = digest_tree(out)
    p = ctx.start(args)
    time.sleep(rng.uniform(0.2, 3.0))
    done_before = p.poll() is not None
    if not done_before:
        try:
            os.killpg(p.pid, sig) if sig == signal.SIGINT else os.kill(p.pid, sig)
        except OSError:
            pass
    r = ctx.wait(p, 120)
    if r.hung:
        raise Finding("hang", f"{what}: still running after {sig.name}")
    # (-2: the interrupt came while the interpreter itself was still starting, before any handler)
    if sig == signal.SIGINT and not done_before and r.code not in (0, 130, -signal.SIGINT):
        raise Finding("traceback", f"{what}: Ctrl-C gave exit {r.code}: {r.err.strip()[-200:]}")
    if sig == signal.SIGINT and r.code == 130:
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        if "Traceback" in r.err or lines[-1:] != ["teg: interrupted"]:
            raise Finding("traceback", f"{what}: Ctrl-C output: {' | '.join(lines[-3:])[:300]}")
    no_survivors(ctx)
    if before is not None and r.code != 0 and digest_tree(out) != before and rows_of(out) != 4416:
        # (changed is fine when the new trace was complete and in place before the signal came)
        raise Finding("data-loss", f"{out.name}: the previous output changed under a killed conversion")
    again = ctx.run(args)
    clean(again, what="the run again")
    if what.startswith("convert") and not loads(out):
        raise Finding("data-loss", f"{out.name}: unreadable after the next run")
    no_leftovers(ctx)
    return "ok"


def caches(ctx: Ctx) -> str:
    """The cache folder in odd states: a user's files in it (then --clear), unwritable, a file,
    HOME=/dev/null, a relative XDG_CACHE_HOME, a literal ~, killed conversions, a damaged entry,
    an input edited in place with its size and modification time kept."""
    rng = ctx.rng
    case = rng.choice(["user-files", "unwritable", "a-file", "home-devnull", "relative-xdg", "tilde", "killed",
                       "damaged", "edited"])
    cache = ctx.root / "cache"
    env = ctx.env()
    if case == "user-files":
        mine = user_files(cache, rng)
        clean(ctx.run(["trace", "info", MATRIXMUL], env), what="fill")
        clean(ctx.run(["trace", "cache", "--clear"], env), what="clear")
        intact(mine)
        return "ok"
    if case in ("unwritable", "a-file", "home-devnull"):
        (ctx.root / "afile").write_text("x")
        env = ctx.env(TEG_CACHE_DIR={"unwritable": "/proc/1", "a-file": ctx.root / "afile", "home-devnull": None}[case],
                      HOME="/dev/null" if case == "home-devnull" else os.environ.get("HOME"))
        for _ in range(2):
            clean(ctx.run(["trace", "info", rng.choice([MATRIXMUL, VECTORADD])], env), what=case)
        if (ctx.root / "afile").read_text() != "x":
            raise Finding("data-loss", "the file named as the cache folder changed")
        no_leftovers(ctx)
        return "ok"
    if case in ("relative-xdg", "tilde"):
        home = ctx.root / "home"
        home.mkdir()
        env = ctx.env(TEG_CACHE_DIR="~/tc" if case == "tilde" else None, HOME=home,
                      XDG_CACHE_HOME="rel/cache" if case == "relative-xdg" else None)
        r = ctx.wait(subprocess.Popen([sys.executable, "-c", TEG, "trace", "info", str(VECTORADD)], cwd=ctx.root,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env), 120)
        clean(r, what=case)
        if (ctx.root / "~").exists() or (ctx.root / "rel").exists():
            raise Finding("stale", f"{case}: the cache went to a folder named by the literal setting")
        return "ok"
    src = ctx.root / "t"
    shutil.copytree(MATRIXMUL, src)
    if case == "killed":
        p = ctx.start(["trace", "info", src], env)
        time.sleep(rng.uniform(0.3, 1.5))
        try:
            os.kill(p.pid, signal.SIGKILL)
        except OSError:
            pass
        ctx.wait(p, 60)
        clean(ctx.run(["trace", "info", src], env), what="after a killed fill")
        no_leftovers(ctx)
        return "ok"
    first = ctx.run(["estimate", "--trace", src, "--machine", "sm_61", "--json"], env)
    clean(first, what="first estimate")
    if case == "damaged":
        entry = next(p for p in cache.iterdir() if p.name.startswith("t-"))
        col = rng.choice(sorted(entry.rglob("*.npy")))
        data = col.read_bytes()
        col.write_bytes(data[:rng.randrange(0, len(data))])
    else:
        kf = src / "kernel-1.traceg"
        data = bytearray(kf.read_bytes())
        st = kf.stat()
        at = data.index(b"0x", len(data) // 3 + rng.randrange(len(data) // 3))
        data[at + 6:at + 7] = b"1" if data[at + 6:at + 7] != b"1" else b"2"
        kf.write_bytes(bytes(data))
        os.utime(kf, ns=(st.st_atime_ns, st.st_mtime_ns))
    second = ctx.run(["estimate", "--trace", src, "--machine", "sm_61", "--json"], env)
    got = clean(second, what="after " + case)
    fresh = ctx.run(["estimate", "--trace", src, "--machine", "sm_61", "--json"], ctx.env(TEG_CACHE_DIR=ctx.root / "c2"))
    clean(fresh, what="fresh cache")
    # the same answer as from a fresh cache: the same estimate, or the same refusal (an edit that
    # damaged a line is reported the same way, not estimated from the old conversion)
    if (second.code, second.err if second.code else json.loads(second.out)) != \
            (fresh.code, fresh.err if fresh.code else json.loads(fresh.out)):
        raise Finding("stale", f"{case}: the cached run's answer differs from a fresh conversion's")
    return got


_NAMES = [b"caf\xe9", b"sp ace", "n\u00e9e".encode(), b"-dash", b"x" * 240, b"y" * 251, b"semi;colon", b"quo'te",
          b"new\nline", b"tab\there"]


def paths(ctx: Ctx) -> str:
    """Inputs and outputs under odd names: not UTF-8, spaces, a leading dash, 240–251 bytes, a
    newline; conversions, timelines, sweep tables, traces read from such folders."""
    rng = ctx.rng
    name = rng.choice(_NAMES)
    base = os.fsencode(ctx.root)
    cmd = rng.choice(["convert", "convert-folder", "timeline", "sweep", "read"])
    target = base + b"/" + (name if not name.startswith(b"-") else b"./" + name)
    if cmd == "read":
        folder = base + b"/" + name[:200]
        shutil.copytree(VECTORADD, os.fsdecode(folder))
        r = ctx.run(["trace", "info", folder])
        return clean(r, what="read")
    args = {"convert": ["trace", "convert", VECTORADD, target + b".npz"],
            "convert-folder": ["trace", "convert", VECTORADD, target],
            "timeline": ["estimate", "--timeline", target + b".json"],
            "sweep": ["sweep", "--trace", TORCH, "--kernel", "87", "--warps", "1", "-o", target + b".csv", "--jobs", "1"]}[cmd]
    r = ctx.run(args)
    got = clean(r, refusals=("File name too long",), what=cmd)
    if got == "ok" and not os.path.lexists(args[-1] if cmd != "sweep" else target + b".csv"):
        raise Finding("data-loss", f"{cmd}: exit 0 but nothing written under the odd name")
    no_leftovers(ctx)
    return got


def fifos(ctx: Ctx) -> str:
    """A FIFO where teg reads or writes: read positions must be refused at once; an output with a
    reader is written, one without a reader refused — never a wait."""
    rng = ctx.rng
    fifo = ctx.root / rng.choice(["t.npz", "t.traceg", "k.sass", "m.yaml", "s.yaml", "o.json", "o.csv", "o.png", "x"])
    os.mkfifo(fifo)
    reading = {"t.npz": ["estimate", "--trace", fifo], "t.traceg": ["trace", "info", fifo],
               "k.sass": ["parse", fifo], "m.yaml": ["estimate", "--machine", fifo], "s.yaml": ["sweep", "--spec", fifo],
               "x": ["trace", "convert", fifo, ctx.root / "o2.npz"]}
    writing = {"o.json": ["estimate", "--timeline", fifo], "o.csv": ["sweep", "--trace", TORCH, "--kernel", "87",
                                                                     "--warps", "1", "-o", fifo, "--jobs", "1"],
               "o.png": ["estimate", "--plot", fifo], "t.npz": ["trace", "convert", VECTORADD, fifo]}
    if fifo.name in writing and (fifo.name not in reading or rng.random() < 0.5):
        read = rng.random() < 0.5 and fifo.name != "o.csv"
        got: list[bytes] = []
        if read:
            def reader():
                with open(fifo, "rb") as fh:
                    got.append(fh.read())
            threading.Thread(target=reader, daemon=True).start()
        r = ctx.run(writing[fifo.name], timeout=90)
        res = clean(r, refusals=("nobody reads", "is a pipe"), what="write to a FIFO")
        if read and res == "ok":
            time.sleep(0.2)
            if not got or not got[0]:
                raise Finding("data-loss", "exit 0 but nothing arrived through the pipe")
        if read and res != "ok":
            with open(fifo, "wb"):               # let the reader thread end
                pass
        return res
    r = ctx.run(reading[fifo.name], timeout=90)
    return clean(r, allowed=(), refusals=("pipe", "not a regular file"), what="read a FIFO")


def devices(ctx: Ctx) -> str:
    """Devices as inputs and outputs (/dev/null, /dev/full, /dev/zero, a copy of /dev/null's node),
    with or without --force: the node must never be replaced, a full device is one line."""
    rng = ctx.rng
    node = ctx.root / rng.choice(["null", "out.npz", "o.json", "r.csv", "p.png"])
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:                           # not root: the real /dev/null
        node = Path("/dev/null")
    dev = rng.choice([node, node, Path("/dev/full"), Path("/dev/zero")])
    force = ["--force"] if rng.random() < 0.5 else []
    before = digest_tree(dev)
    cmd = rng.choice(["convert", "convert-folder", "timeline", "sweep", "plot", "input"])
    args = {"convert": ["trace", "convert", BUNDLED_TRACE, dev, *force],
            "convert-folder": ["trace", "convert", VECTORADD, dev, *force],
            "timeline": ["estimate", "--timeline", dev, *force],
            "sweep": ["sweep", "--trace", TORCH, "--kernel", "87", "--warps", "1", "-o", dev, "--jobs", "1", *force],
            "plot": ["whatif", "--plot", dev, *force],
            "input": rng.choice([["estimate", "--trace", dev], ["parse", dev], ["estimate", "--machine", dev]])}[cmd]
    r = ctx.run(args, timeout=120)
    res = clean(r, refusals=("device", "not a folder", "No space left", "read back", "not a regular", "is a ",
                             "nobody reads", "not a machine", "not a teg trace", "kernel list", "suffix"), what=cmd)
    if digest_tree(dev) != before:
        raise Finding("data-loss", f"{dev}: the device node was replaced")
    if "(--force overwrites it)" in r.err:
        raise Finding("traceback", f"{dev}: the refusal of a device recommends --force")
    return res


def symlinks(ctx: Ctx) -> str:
    """Outputs that are links — to a user's file of the same or another format, to a folder, to
    nothing, in a loop — with or without --force: a user's folder is never touched; a user's file
    only by a forced write of its own format."""
    rng = ctx.rng
    kind = rng.choice(["same", "other", "folder", "dangling", "loop"])
    out_kind = rng.choice(["timeline", "convert-npz", "convert-folder", "sweep"])
    suffix = {"timeline": ".json", "convert-npz": ".npz", "convert-folder": "", "sweep": ".csv"}[out_kind]
    link = ctx.root / f"out{suffix}"
    mine: dict[Path, str] = {}
    if kind in ("same", "other"):
        target = ctx.root / ("mine" + (suffix if kind == "same" else ".tex"))
        target.write_text("my content\n")
        link.symlink_to(target.name)
        mine[target] = digest_tree(target)
    elif kind == "folder":
        target = ctx.root / "folder"
        target.mkdir()
        (target / "keep.txt").write_text("k")
        link.symlink_to(target.name)
        mine[target] = digest_tree(target)
    elif kind == "dangling":
        link.symlink_to("nowhere" + suffix)
    else:
        (ctx.root / "a").symlink_to(link.name)
        link.symlink_to("a")
    force = rng.random() < 0.5
    args = {"timeline": ["estimate", "--timeline", link], "convert-npz": ["trace", "convert", VECTORADD, link],
            "convert-folder": ["trace", "convert", VECTORADD, link],
            "sweep": ["sweep", "--trace", TORCH, "--kernel", "87", "--warps", "1", "-o", link, "--jobs", "1"]}[out_kind]
    r = ctx.run([*args, *(["--force"] if force else [])])
    res = clean(r, what=f"{out_kind} through a {kind} link")
    may_change = kind == "same" and force and out_kind != "convert-folder"
    if not may_change:
        intact(mine, "linked file or folder")
    no_leftovers(ctx)
    return res


_BIG: dict[str, Path] = {}


def big_trace(scratch: Path) -> Path:
    """The bundled kernel's blocks repeated 150 times (537,600 rows), made once per process."""
    if "p" not in _BIG:
        import importlib.util

        import teg.trace as tt

        spec_ = importlib.util.spec_from_file_location("teg_npz_memory", ROOT / "benchmarks" / "npz_memory.py")
        mod = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(mod)
        out = scratch / "big.npz"
        tt.save(mod.repeated_trace(150), out, compact=False)     # mapped: the capped runs load it in place
        _BIG["p"] = out
    return _BIG["p"]


_CAPPED = r"""
import os, resource, sys
from click.testing import CliRunner
from teg.cli import main
CliRunner().invoke(main, ["estimate", "--sms", "1"])
CliRunner().invoke(main, ["compare", "--trace", sys.argv[2], "--sass", sys.argv[3], "--no-engine"])
with open("/proc/self/statm") as fh:
    mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (mapped + int(sys.argv[1]), resource.getrlimit(resource.RLIMIT_AS)[1]))
main(sys.argv[4:], prog_name="teg")
"""


def memory(ctx: Ctx, scratch: Path) -> str:
    """A memory cap (RLIMIT_AS: the mapped size after a warm-up plus a random margin of 10–200 MiB
    beyond the trace file) on estimate (whole GPU or --sms k), compare, a windowed timeline, or
    trace run with an unbounded --max-instructions: the run fits, or is refused in one line."""
    rng = ctx.rng
    big = big_trace(scratch)
    margin = big.stat().st_size + rng.randrange(10, 200) * (1 << 20)
    cmd = rng.choice(["estimate", "estimate-sms", "compare", "timeline", "trace-run"])
    args = {"estimate": ["estimate", "--trace", big, "--sass", BUNDLED_SASS],
            "estimate-sms": ["estimate", "--trace", big, "--sass", BUNDLED_SASS, "--sms", str(rng.choice([1, 8, 40]))],
            "compare": ["compare", "--trace", big, "--sass", BUNDLED_SASS],
            "timeline": ["estimate", "--trace", big, "--sass", BUNDLED_SASS, "--sms", "20", "--timeline",
                         ctx.root / "t.json", "--timeline-cycles", "0:200"],
            "trace-run": ["trace", "run", WALK, "--kernel", "walk_steps", "--block", "64", "--arg", "end=arange:float32:64",
                          "--arg", "off=zeros:int64:64", "--arg", "out=zeros:float32:64", "--arg", "n=64", "--arg",
                          f"steps={rng.choice([10**5, 10**6, 4 * 10**6])}", "-o", ctx.root / "o.npz",
                          "--max-instructions", str(10**12)]}[cmd]
    p = subprocess.Popen([sys.executable, "-c", _CAPPED, str(margin), str(BUNDLED_TRACE), str(BUNDLED_SASS),
                          *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ctx.env(),
                         start_new_session=True)
    r = ctx.wait(p, 300)
    return clean(r, refusals=("of memory, more than the", "out of memory"), what=f"{cmd} under a cap")


GENERATORS = {"concurrency": concurrency, "signals": signals, "caches": caches, "paths": paths, "fifos": fifos,
              "devices": devices, "symlinks": symlinks, "memory": memory}


def run_scenario(cls: str, seed: int, index: int, scratch: Path) -> Outcome:
    """One scenario of class ``cls`` in a fresh folder below ``scratch``."""
    rng = random.Random(f"{cls}-{seed}-{index}")
    root = Path(tempfile.mkdtemp(prefix=f"{cls}-", dir=scratch))
    (root / "tmp").mkdir()
    ctx = Ctx(root, rng)
    t0 = time.monotonic()
    try:
        fn = GENERATORS[cls]
        outcome = fn(ctx, scratch) if cls == "memory" else fn(ctx)
        detail = ""
    except Finding as f:
        outcome, detail = f.kind, str(f)
    except Exception as exc:      # noqa: BLE001 — a broken scenario is reported, not hidden
        outcome, detail = "traceback", f"scenario error: {exc.__class__.__name__}: {exc}"
    finally:
        for pid in tagged_processes(ctx.tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(root, ignore_errors=True)
    return Outcome(cls, f"{cls}#{index}", outcome, detail, time.monotonic() - t0)


def run_scenarios(classes, seed: int, count: int, scratch: Path | None = None) -> list[Outcome]:
    own = scratch is None
    scratch = Path(tempfile.mkdtemp(prefix="teg-scenarios-")) if own else scratch
    try:
        return [run_scenario(c, seed, i, scratch) for c in classes for i in range(count)]
    finally:
        if own:
            shutil.rmtree(scratch, ignore_errors=True)
