"""Helpers for tests that run ``teg`` in real processes and stop them at a chosen point: a child
that pauses at the n-th call of a function until the test lets it go on (interleavings of
concurrent runs made deterministic), and bounded waits. Every wait has a time limit, so a broken
interleaving fails the test instead of hanging it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# argv: MODULE:ATTR N SIGNAL_DIR TAG teg-arguments…  At the N-th call of MODULE.ATTR the child
# creates SIGNAL_DIR/TAG.at and waits (at most 120 s) for SIGNAL_DIR/TAG.go, then calls through.
PAUSER = r"""
import importlib, os, sys, time
import faulthandler, signal
faulthandler.register(signal.SIGUSR1, all_threads=True)     # finish_or_dump: every thread's stack on a hang
where, after, sig, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
mod, attr = where.split(":")
owner = importlib.import_module(mod)
path = attr.split(".")
for part in path[:-1]:
    owner = getattr(owner, part)
orig = getattr(owner, path[-1])
calls = [0]
def hook(*a, **k):
    calls[0] += 1
    if calls[0] == after:
        open(os.path.join(sig, tag + ".at"), "w").close()
        t0 = time.monotonic()
        while not os.path.exists(os.path.join(sig, tag + ".go")):
            if time.monotonic() - t0 > 120:
                os._exit(99)
            time.sleep(0.02)
    return orig(*a, **k)
setattr(owner, path[-1], hook)
from teg.cli import main
main(sys.argv[5:], prog_name="teg")
"""

TEG = "from teg.cli import main; main(prog_name='teg')"


def teg_proc(args: list, env: dict | None = None, **kw) -> subprocess.Popen:
    """``teg ARGS`` in a child process (output captured)."""
    argv = [a if isinstance(a, bytes) else os.fsencode(str(a)) for a in args]
    return subprocess.Popen([sys.executable, "-c", TEG, *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **kw)


def paused_proc(where: str, after: int, sig: Path, tag: str, args: list, env: dict | None = None) -> subprocess.Popen:
    """``teg ARGS`` in a child that pauses at the ``after``-th call of ``where`` (module docstring)."""
    return subprocess.Popen([sys.executable, "-c", PAUSER, where, str(after), str(sig), tag, *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def wait_for(path: Path, proc: subprocess.Popen | None = None, timeout: float = 120.0) -> None:
    """Wait until ``path`` exists (the child reached its pause); fail if ``proc`` ends first."""
    t0 = time.monotonic()
    while not Path(path).exists():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"child ended ({proc.returncode}) before reaching {path}: {err.decode()[-2000:]}")
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {path}")
        time.sleep(0.02)


def release(sig: Path, tag: str) -> None:
    (Path(sig) / f"{tag}.go").touch()


def finish(proc: subprocess.Popen, timeout: float = 120.0) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of a child (killed and failed if it runs past ``timeout``)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"child still running after {timeout} s: {err.decode(errors='replace')[-2000:]}")
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def finish_or_dump(proc: subprocess.Popen, timeout: float) -> tuple[int, str, str]:
    """:func:`finish` for a :data:`PAUSER` child, which dumps every thread's Python stack on SIGUSR1:
    if it runs past ``timeout``, the failure shows where each of its threads is (the stacks and the
    kernel's wait channel per thread) instead of only that it did not end."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        waits = []
        for task in sorted(Path(f"/proc/{proc.pid}/task").glob("*")):
            try:
                sig = {k: v.strip() for k, _, v in (line.partition(":") for line in (task / "status").read_text().splitlines())
                       if k in ("SigPnd", "SigBlk")}
                waits.append(f"{task.name}:{(task / 'comm').read_text().strip()}:{(task / 'wchan').read_text()}"
                             f":pending {sig.get('SigPnd')} blocked {sig.get('SigBlk')}")
            except OSError:                          # the thread ended while it was being read
                waits.append(f"{task.name}:ended")
        try:
            status = {k: v.strip() for k, _, v in (line.partition(":") for line in
                                                      Path(f"/proc/{proc.pid}/status").read_text().splitlines())
                      if k in ("ShdPnd", "SigIgn", "SigCgt")}
        except OSError:                              # it ended just now
            status = {"process": "ended"}
        proc.send_signal(signal.SIGUSR1)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        raise AssertionError(f"child still running after {timeout} s; process signals {status}; threads "
                             f"(tid:name:wchan:pending/blocked masks) {waits}; "
                             f"stderr with their stacks:\n{err.decode(errors='replace')[-6000:]}")
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def env_with(**extra) -> dict:
    env = dict(os.environ)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def dead_pid() -> int:
    """The PID of a process that has exited and been reaped (no process has it now)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# argv: MARGIN_BYTES WARMUP_JSON teg-arguments…  Runs each warm-up command line (a JSON list of
# argument lists) in-process, so that the code the run needs is loaded, then caps the address
# space (RLIMIT_AS) at what is mapped now plus MARGIN_BYTES, then runs teg: "teg under a memory cap
# that leaves MARGIN_BYTES for the work itself".
CAPPED = r"""
import json, os, resource, sys
margin, warm = int(sys.argv[1]), json.loads(sys.argv[2])
from click.testing import CliRunner
from teg.cli import main
for args in warm:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
with open("/proc/self/statm") as fh:
    mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (mapped + margin, resource.getrlimit(resource.RLIMIT_AS)[1]))
main(sys.argv[3:], prog_name="teg")
"""


def capped_proc(margin: int, warm: list[list[str]], args: list, env: dict | None = None) -> subprocess.Popen:
    """``teg ARGS`` with only ``margin`` bytes of address space beyond what it has mapped after the
    warm-up commands (module docstring of :data:`CAPPED`)."""
    import json

    return subprocess.Popen([sys.executable, "-c", CAPPED, str(margin), json.dumps(warm), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


# argv: HOOKS_JSON SIGNAL_DIR teg-arguments…  HOOKS_JSON lists {"where": "MODULE:ATTR", "nth": N,
# "tag": T, "when": "before"|"after", "arg0": REGEX or null}: at the N-th call of MODULE.ATTR whose
# first argument's file name matches REGEX (every call when null), the child creates
# SIGNAL_DIR/T.at before or after calling through and waits (at most 120 s) for SIGNAL_DIR/T.go.
PAUSES = r"""
import importlib, json, os, re, sys, time
hooks, sig = json.loads(sys.argv[1]), sys.argv[2]

def wait(tag):
    open(os.path.join(sig, tag + ".at"), "w").close()
    t0 = time.monotonic()
    while not os.path.exists(os.path.join(sig, tag + ".go")):
        if time.monotonic() - t0 > 120:
            os._exit(99)
        time.sleep(0.02)

for h in hooks:
    mod, attr = h["where"].split(":")
    owner = importlib.import_module(mod)
    path = attr.split(".")
    for part in path[:-1]:
        owner = getattr(owner, part)
    def make(orig, h):
        calls = [0]
        pat = re.compile(h["arg0"]) if h.get("arg0") else None
        def hook(*a, **k):
            if pat is not None and not (a and pat.search(os.path.basename(os.fspath(a[0])))):
                return orig(*a, **k)
            calls[0] += 1
            if calls[0] == h["nth"] and h.get("when", "before") == "before":
                wait(h["tag"])
            out = orig(*a, **k)
            if calls[0] == h["nth"] and h.get("when") == "after":
                wait(h["tag"])
            return out
        return hook
    setattr(owner, path[-1], make(getattr(owner, path[-1]), h))
from teg.cli import main
main(sys.argv[3:], prog_name="teg")
"""


def paused_at(hooks: list[dict], sig: Path, args: list, env: dict | None = None) -> subprocess.Popen:
    """``teg ARGS`` in a child that pauses at each of ``hooks`` (:data:`PAUSES`)."""
    import json

    return subprocess.Popen([sys.executable, "-c", PAUSES, json.dumps(hooks), str(sig), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
