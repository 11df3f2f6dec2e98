"""The loop runs in slices: it pauses after a budget of steps with its state intact (RUN_PAUSED) and
Python resumes it, which is where Ctrl-C surfaces. Pausing changes nothing in the results, and a
running `teg estimate` stops within a slice (about 0.1 s) of SIGINT with one line and no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from teg.engine import Options, lower, run, with_record_order, with_replay, with_switches
from teg.engine.records import with_records
from teg.machine import load as load_machine
from teg.resources import traces_dir

ROOT = Path(__file__).resolve().parent.parent
RUN = sys.modules["teg.engine.run"]     # the module (teg.engine.run is also the function)
FIELDS = ("cycles", "instructions", "stalls", "counters", "pc_count", "pc_wait", "sm_cycles", "timeline", "order",
          "row_record", "tx_record", "pc_causes")


@pytest.fixture(scope="module")
def example():
    from teg.sass import parse_file
    from teg.trace import load

    d = traces_dir()
    return parse_file(str(d / "matmul_abt.sm_90.sass"))[0], load(d / "matmul_abt.sm_90.trace.npz").kernels[0]


def _same(a, b):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert x is not None and y is not None and x.dtype == y.dtype and np.array_equal(x, y), name
        else:
            assert x == y, name
    assert a.setup == b.setup and a.outcome == b.outcome


def _sliced(monkeypatch, issues):
    """Runs cut into a first slice of ``issues // min(SMs x schedulers, warps)`` steps and later
    ones of one step; counts the resumptions."""
    calls = []
    real = RUN._resume

    def counting(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(RUN, "FIRST_ISSUES", issues)
    monkeypatch.setattr(RUN, "SLICE_SECONDS", 0.0)
    monkeypatch.setattr(RUN, "_resume", counting)
    return calls


@pytest.mark.parametrize("options", [Options(), Options(sms=2, policy="lrr"), Options(sms=1, dependency_model="scoreboard")])
def test_a_run_resumed_after_every_few_steps_is_the_same_run(monkeypatch, example, options):
    prog, kt = example
    inp = with_records(lower(prog, kt, load_machine("sm_90"), options), timeline=True, instructions=True)
    whole = run(inp)
    calls = _sliced(monkeypatch, 1)         # one step per slice
    cut = run(inp)
    assert len(calls) == cut.counters["engine_steps"] - 1
    _same(whole, cut)


def test_a_replay_resumed_after_every_few_steps_retraces_its_order(monkeypatch, example):
    prog, kt = example
    inp = lower(prog, kt, load_machine("a100_40"), Options(sms=2))
    base = run(with_record_order(inp))
    replay = with_replay(with_switches(inp, bank_conflicts=False), base.order)
    whole = run(replay)
    calls = _sliced(monkeypatch, 2 * 4 * 5)      # five steps, then one per slice
    cut = run(replay)
    assert len(calls) == cut.counters["engine_steps"] - 5
    _same(whole, cut)


def _scatter_trace(path: Path, warps: int, rows: int) -> None:
    """A native trace of ``warps`` warps (blocks of 8) of ``rows`` LDG.E each, every lane of a row in
    a page of its own (32 transactions per row, L1, TLB and L2 misses): long to simulate, cheap to
    build and lower."""
    from teg.trace import KernelInfo, KernelTrace, Trace, save
    from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

    n = warps * rows
    k = np.arange(n, dtype=np.int64)
    w, it = k // rows, k % rows
    dst = np.full((n, MAX_TRACE_DST), -1, np.int16)
    dst[:, 0] = 4
    src = np.full((n, MAX_TRACE_SRC), -1, np.int16)
    src[:, 0] = 2
    base = (0x7F0000000000 + (w * 7919 + it * 104729) % (1 << 20) * 4096).astype(np.uint64)
    addresses = (base[:, None] + np.arange(32, dtype=np.uint64)[None, :] * np.uint64(1 << 21)).ravel()
    blocks = warps // 8
    kt = KernelTrace(
        info=KernelInfo(name="scatter", grid=(blocks, 1, 1), block=(256, 1, 1), nregs=32, binary_version=90),
        opcodes=["LDG.E"], warp=w.astype(np.int32), block=(w // 8).astype(np.int32), pc=np.zeros(n, np.int64),
        opcode=np.zeros(n, np.int32), mask=np.full(n, 0xFFFFFFFF, np.uint32), dst=dst, src=src,
        mem_width=np.full(n, 4, np.int16), imm=np.zeros(n, np.int64), addr_start=np.arange(n + 1, dtype=np.int64) * 32,
        addresses=addresses, warp_start=np.arange(warps + 1, dtype=np.int64) * rows,
        warp_block=(np.arange(warps) // 8).astype(np.int32),
        block_xyz=np.stack([np.arange(blocks), np.zeros(blocks), np.zeros(blocks)], 1).astype(np.int32))
    save(Trace(kernels=[kt], source="tests/test_engine_pause.py"), path)


# `teg estimate`, announcing on stdout the engine's first resumption (it is compiled and running) and
# writing at exit (atexit: the interrupt has stopped the engine and Python is shutting down), to
# the file $PAUSE_LOG, the time and the instructions the engine had issued. SIGINT gets Python's
# usual handler, as in a terminal: a test run started in the background (nohup, `&` in a script)
# passes SIGINT on ignored, and Python then leaves it ignored.
CHILD = """
import atexit, os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import teg.engine.run
from teg.engine.codes import C_INSTR
run = sys.modules["teg.engine.run"]
real = run._resume
seen = []
def resume(rows, grid, sc, order_in, out, *rest):
    if not seen:
        seen.append(out)
        print("engine running", flush=True)
    return real(rows, grid, sc, order_in, out, *rest)
run._resume = resume
atexit.register(lambda: open(os.environ["PAUSE_LOG"], "w").write(f"{time.time()} {int(seen[0].counters[C_INSTR])}"))
from teg.cli import main
main()
"""


def test_ctrl_c_stops_a_running_estimate(tmp_path):
    warps, rows = load_machine("sm_90").num_sms * 64, 16
    path = tmp_path / "scatter.npz"
    _scatter_trace(path, warps, rows)
    log = tmp_path / "pause.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               PAUSE_LOG=str(log))
    env.pop("TEG_COMPILE_NOTICE", None)       # (the compile notice goes to a terminal only)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, "estimate", "--trace", str(path), "--machine", "sm_90"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        line = proc.stdout.readline()         # (a cold numba cache compiles first: minutes at worst)
        assert line == "engine running\n", (line, proc.stderr.read() if proc.poll() is not None else "")
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        took = time.time() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the engine was stopped with work left, not after its last instruction (without the slices it
    # ran to its end, 19 s on an idle machine), within a slice: 0.1-0.3 s on an idle machine, the
    # bounds leave room for a loaded one (the interpreter's shutdown after that, freeing the run's
    # arrays, takes about as long again)
    stopped, issued = log.read_text().split()
    assert 0 < int(issued) < warps * rows, "the run finished before the interrupt reached it"
    assert float(stopped) - sent < 5.0, f"stopped {float(stopped) - sent:.2f} s after SIGINT"
    assert took < 30.0, f"exited {took:.2f} s after SIGINT"
    assert proc.returncode != 0 and out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
