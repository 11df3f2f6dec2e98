"""Interrupts and killed parents (issue 37, point 7 and the Ctrl-C items of 15): killing the parent
of a ``--jobs N`` run stops its workers; Ctrl-C (SIGINT to the whole process group, as a terminal
sends it) ends the run with one line and exit status 130 — no worker traceback, no worker left.
Real processes; the parent is paused once its pool has started, so each case is deterministic,
and every wait is bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from procs import PAUSER, env_with, finish_or_dump, wait_for

TORCH = Path(__file__).parent / "data" / "traces" / "dp-performance-accel-sim" / "simpletorch"


def sweep_args(folder: Path) -> list[str]:
    """``teg sweep`` of 6 kernels x 48 warp counts x every what-if (about 6,000 points, ~30 CPU-s):
    far more than the first second the calling process runs itself (executors.HEAD_S), on any
    machine, so the pool always starts (6 x 48 baseline points alone took 1.5 s on a quiet machine,
    all inside that first second)."""
    import yaml

    from teg.engine.options import MECHANISMS

    spec = folder / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"traces": [str(TORCH)], "warps": list(range(1, 49)),
                                    "whatif": ["none", "all", *MECHANISMS]}))
    return ["sweep", "--spec", str(spec), "--jobs", "2", "--csv"]


pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def children(pid: int) -> list[int]:
    """PIDs whose parent is ``pid``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_bytes().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


def as_from_a_terminal() -> None:
    """The child's SIGINT as a terminal's shell starts a command: default disposition, unblocked.
    Both are inherited across ``exec``, and a shell without job control starts background commands
    with SIGINT ignored (POSIX), which Python then leaves ignored: a suite run as ``pytest &``
    would hand the paused sweep a SIGINT it can never see."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def start_paused(tmp_path, **popen):
    """``teg sweep`` of an application with 2 workers, paused in the parent once the pool runs
    (its first wait for results, teg.analysis.executors.completed: a pause point only the local
    pool reaches): (process, worker PIDs)."""
    sig = tmp_path / "sig"
    sig.mkdir()
    p = subprocess.Popen([sys.executable, "-c", PAUSER, "teg.analysis.executors:completed", "1", str(sig), "p",
                          *sweep_args(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env_with(TEG_CACHE_DIR=tmp_path / "cache"), preexec_fn=as_from_a_terminal, **popen)
    wait_for(sig / "p.at", p, timeout=180)
    t0 = time.monotonic()
    workers = []
    while time.monotonic() - t0 < 60:
        workers = [c for c in children(p.pid) if b"multiprocessing" in Path(f"/proc/{c}/cmdline").read_bytes()
                   and b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes()]
        if len(workers) == 2:
            break
        time.sleep(0.05)
    assert len(workers) == 2, children(p.pid)
    return p, workers, sig


def gone_within(pids: list[int], seconds: float) -> list[int]:
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        left = [q for q in pids if alive(q)]
        if not left:
            return []
        time.sleep(0.05)
    return [q for q in pids if alive(q)]


def test_killing_the_parent_stops_its_workers(tmp_path):
    p, workers, _ = start_paused(tmp_path)
    p.kill()
    p.wait(30)
    left = gone_within(workers, 10)
    for q in left:                                      # do not leak them from the test either
        os.kill(q, signal.SIGKILL)
    assert left == [], f"workers {left} outlived their parent"


def test_ctrl_c_ends_with_one_line_exit_130_and_no_worker_left(tmp_path):
    p, workers, sig = start_paused(tmp_path, start_new_session=True)
    os.killpg(p.pid, signal.SIGINT)                     # what a terminal's Ctrl-C does: the whole group
    code, out, err = finish_or_dump(p, timeout=60)
    left = gone_within(workers, 10)
    for q in left:
        os.kill(q, signal.SIGKILL)
    assert code == 130, (code, err)
    assert err.strip().splitlines()[-1] == "teg: interrupted" and "Traceback" not in err, err
    assert "Aborted!" not in err
    assert left == []
