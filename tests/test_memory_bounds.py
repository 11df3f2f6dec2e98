"""Memory has a bound (issue 37, point 10): under a memory cap, a run that would not fit is refused
up front with one line naming the memory it needs, what limits it and the option that makes it
smaller — never a ``MemoryError`` traceback — and that option then makes it fit; a timeline that
would exceed its event limit is refused before the run; ``trace run`` with a large
``--max-instructions`` stops cleanly when its recording would not fit, and its endless-loop message
names the command-line option. Real processes whose address space is capped (RLIMIT_AS) right
after a warm-up, a trace of 537,600 rows (the bundled kernel's blocks repeated 150 times)."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from procs import capped_proc, finish, teg_proc

ROOT = Path(__file__).parents[1]
SASS = ROOT / "traces" / "matmul_abt.sm_90.sass"
CUBIN = ROOT / "tests" / "fixtures" / "emu" / "pointer_walk.sm_90.cubin"
WARM = [["estimate", "--sms", "1"],
        ["compare", "--trace", str(ROOT / "traces" / "matmul_abt.sm_90.trace.npz"), "--sass", str(SASS), "--no-engine"]]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="needs /proc and RLIMIT_AS")


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    spec = importlib.util.spec_from_file_location("teg_npz_memory", ROOT / "benchmarks" / "npz_memory.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import teg.trace as tt

    out = tmp_path_factory.mktemp("big") / "big.npz"
    tt.save(mod.repeated_trace(150), out, compact=False)        # every column mapped (the margin counts the file)
    return out


def one_error(code, err, *needles):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("teg: error:"), (code, err[-3000:])
    assert "Traceback" not in err and "MemoryError" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def margin_for(big: Path) -> int:
    return big.stat().st_size + (40 << 20)         # the mapped trace, and 40 MiB for the work itself


def test_estimate_under_a_cap_is_refused_up_front_and_sms_makes_it_fit(big):
    args = ["estimate", "--trace", big, "--sass", SASS]
    code, out, err = finish(capped_proc(margin_for(big), WARM, args), timeout=180)
    line = one_error(code, err, "lowering 537,600 warp instructions", "of memory, more than the",
                     "address-space limit", "--sms N")
    assert "MiB" in line
    code, out, err = finish(capped_proc(margin_for(big), WARM, [*args, "--sms", "1"]), timeout=180)
    assert code == 0 and "cycles" in out, err


def test_compare_under_a_cap_is_refused_up_front(big):
    args = ["compare", "--trace", big, "--sass", SASS]
    code, out, err = finish(capped_proc(margin_for(big), WARM, args), timeout=180)
    one_error(code, err, "compare: kernel", "537,600 warp instructions", "--no-engine")


def test_timeline_is_refused_before_the_run(big):
    t0 = time.monotonic()
    code, out, err = finish(teg_proc(["estimate", "--trace", big, "--sass", SASS, "--timeline", big.parent / "t.json"]),
                            timeout=180)
    one_error(code, err, "at least 1,075,200 events", "--timeline-cycles A:B", "before the run")
    assert not (big.parent / "t.json").exists() and time.monotonic() - t0 < 60


def test_timeline_records_that_would_not_fit_are_refused(big, monkeypatch):
    from teg.engine import load_inputs, lower
    from teg.engine.options import Options
    from teg.hostmem import TIMELINE_ROW_BYTES, TIMELINE_TX_BYTES, MemoryBudgetError
    from teg.report import timeline as tl

    f = load_inputs(sass=SASS, trace=big, machine="sm_90")
    inp = lower(f.program, f.kernel_trace, f.machine, Options(sms=8))
    need = inp.num_rows * TIMELINE_ROW_BYTES + inp.tx_addr.shape[0] * TIMELINE_TX_BYTES
    monkeypatch.setenv("TEG_MEMORY_LIMIT", str(need - 1))
    with pytest.raises(MemoryBudgetError, match=r"timeline: recording [\d,]+ warp instructions needs about .* more "
                                                r"than the .* \(TEG_MEMORY_LIMIT=\d+\); sample fewer SMs with --sms N"):
        tl.check_timeline_size(inp, tl.Window(0, 100))
    monkeypatch.setenv("TEG_MEMORY_LIMIT", str(need))
    tl.check_timeline_size(inp, tl.Window(0, 100))


def test_a_window_with_too_many_events_is_refused_before_its_events_are_built(big):
    from teg.engine import load_inputs, lower, run
    from teg.engine.options import Options
    from teg.engine.records import with_records
    from teg.report import timeline as tl

    f = load_inputs(sass=SASS, trace=big, machine="sm_90")
    inp = with_records(lower(f.program, f.kernel_trace, f.machine, Options(sms=2)), timeline=True)
    r = run(inp)
    issued = int(np.count_nonzero(r.row_record[:, 0] >= 0))
    calls = []
    orig = tl._issued_rows
    tl._issued_rows = lambda *a: calls.append(1) or orig(*a)
    try:
        with pytest.raises(tl.TimelineError, match="more than 1,000 events"):
            tl.trace_events(r, inp, tl.Window(), max_events=1000)
    finally:
        tl._issued_rows = orig
    assert calls == [] and issued > 500             # refused before the per-row arrays were built


def test_trace_run_with_a_large_max_instructions_stops_cleanly(tmp_path):
    n, steps = 64, 4_000_000
    args = ["trace", "run", CUBIN, "--kernel", "walk_steps", "--grid", "1", "--block", "64",
            "--arg", "end=arange:float32:64", "--arg", "off=zeros:int64:64", "--arg", "out=zeros:float32:64",
            "--arg", f"n={n}", "--arg", f"steps={steps}", "-o", tmp_path / "o.npz", "--max-instructions", str(10**12)]
    warm = [["trace", "run", str(CUBIN), "--kernel", "walk_steps", "--block", "32", "--arg", "end=arange:float32:32",
             "--arg", "off=zeros:int64:32", "--arg", "out=zeros:float32:32", "--arg", "n=32", "--arg", "steps=3",
             "-o", str(tmp_path / "w.npz")]]
    code, out, err = finish(capped_proc(160 << 20, warm, args), timeout=300)    # room for the first buffers only
    one_error(code, err, "recording its trace past", "lower --max-instructions (now 1,000,000,000,000)")
    code, out, err = finish(capped_proc(40 << 20, warm, args), timeout=300)     # not even for those
    one_error(code, err, "recording its trace (its row buffers)", "lower --max-instructions")
    assert not (tmp_path / "o.npz").exists()
    code, out, err = finish(teg_proc([*args[:-1], "100000"]), timeout=300)
    line = one_error(code, err, "more than 100,000 warp instructions executed", "--max-instructions")
    assert "max_rows" not in line


def test_parallel_trace_run_with_a_large_max_instructions_stops_cleanly(tmp_path):
    """Two long blocks on two threads: each thread's copies of its full row buffers are checked
    against the memory left, as the serial run's growing buffers are."""
    import os

    n, steps = 64, 4_000_000
    args = ["trace", "run", CUBIN, "--kernel", "walk_steps", "--grid", "2", "--block", "64",
            "--arg", "end=arange:float32:128", "--arg", "off=zeros:int64:128", "--arg", "out=zeros:float32:128",
            "--arg", f"n={n}", "--arg", f"steps={steps}", "-o", tmp_path / "o.npz", "--max-instructions", str(10**12)]
    warm = [["trace", "run", str(CUBIN), "--kernel", "walk_steps", "--grid", "2", "--block", "32",
             "--arg", "end=arange:float32:64", "--arg", "off=zeros:int64:64", "--arg", "out=zeros:float32:64",
             "--arg", "n=32", "--arg", "steps=3", "-o", str(tmp_path / "w.npz")]]
    env = {**os.environ, "TEG_EMU_THREADS": "2"}
    code, out, err = finish(capped_proc(160 << 20, warm, args, env=env), timeout=300)
    one_error(code, err, "recording its trace past", "lower --max-instructions (now 1,000,000,000,000)")
    code, out, err = finish(capped_proc(40 << 20, warm, args, env=env), timeout=300)
    one_error(code, err, "recording its trace (its row buffers)", "lower --max-instructions")
    assert not (tmp_path / "o.npz").exists()
