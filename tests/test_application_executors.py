"""Executors (teg/analysis/executors.py): the same per-kernel results serially, on 2 local worker
processes and on a 2-worker Dask LocalCluster; workers load the numba cache instead of compiling."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from teg.analysis.application import estimate_application
from teg.analysis.kernel_task import run_kernel_task, tasks_for
from teg.trace.application import open_application
from teg.analysis.executors import WORKER_MALLOC_ENV, Executor, ExecutorError, progress_bar

TORCH = Path(__file__).parent / "data" / "traces" / "dp-performance-accel-sim" / "simpletorch"


def probe(task):
    """A kernel's row, the process that computed it, how many numba compilations the engine loop
    needed there (0 when it came from the on-disk cache), and its malloc trim threshold."""
    from teg.engine.core import simulate

    row = run_kernel_task(task)
    return row, os.getpid(), sum(simulate.stats.cache_misses.values()), os.environ.get("MALLOC_TRIM_THRESHOLD_")


@pytest.fixture(scope="module")
def serial_rows():
    return estimate_application(open_application(TORCH), executor=Executor(jobs=1)).rows


def test_two_local_workers_give_the_serial_results_and_compile_nothing(serial_rows):
    """head_s=0: every kernel but the first goes to the pool (spawned processes)."""
    before = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    out = Executor(jobs=2, head_s=0).map(probe, tasks_for(open_application(TORCH)))
    assert [r for r, *_ in out] == serial_rows
    workers = {pid for _, pid, _, _ in out[1:]}
    assert out[0][1] == os.getpid() and os.getpid() not in workers and 1 <= len(workers) <= 2
    assert all(misses == 0 for _, _, misses, _ in out[1:])      # the calling process may have compiled
    assert all(trim == (before or WORKER_MALLOC_ENV["MALLOC_TRIM_THRESHOLD_"]) for *_, trim in out[1:])
    assert os.environ.get("MALLOC_TRIM_THRESHOLD_") == before   # the calling process's environment is restored


def test_a_short_application_stays_in_this_process(serial_rows):
    out = Executor(jobs=2, head_s=60).map(probe, tasks_for(open_application(TORCH)))
    assert {pid for _, pid, _, _ in out} == {os.getpid()} and [r for r, *_ in out] == serial_rows


def test_dask_local_cluster_gives_the_serial_results(serial_rows):
    pytest.importorskip("distributed")
    ex = Executor("dask", jobs=2, processes=False, head_s=0)
    rep = estimate_application(open_application(TORCH), executor=ex)
    assert rep.rows == serial_rows


def test_results_come_back_in_item_order_whatever_the_completion_order():
    ex = Executor(jobs=1)
    assert ex.map(abs, [-3, 1, -2]) == [3, 1, 2]
    assert sorted(ex.run(abs, [-3, 1])) == [(0, 3), (1, 1)]


def test_bad_executor_settings_are_errors(monkeypatch):
    with pytest.raises(ExecutorError, match="expected one of local, dask"):
        Executor("mpi")
    with pytest.raises(ExecutorError, match="at least 1"):
        Executor(jobs=0)
    with pytest.raises(ExecutorError, match="--scheduler names a Dask scheduler"):
        Executor(scheduler="tcp://h:8786")
    monkeypatch.setitem(sys.modules, "distributed", None)        # dask.distributed not installed
    with pytest.raises(ExecutorError, match=r"pip install 'teg\[dask\]'"):
        Executor("dask", jobs=2).map(abs, [1, 2])


def test_progress_bar_is_silent_when_stderr_is_not_a_terminal(monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = progress_bar(3, "kernels")
    assert bar is not None and bar.disable
    bar.close()
    assert sys.stderr.getvalue() == ""


def die_unless_first(i):
    """Item 0 runs in the calling process; any other kills the worker that runs it."""
    if i:
        os._exit(3)
    return i


def test_a_worker_that_dies_is_one_error_not_a_traceback():
    with pytest.raises(ExecutorError, match="a worker process died"):
        Executor(jobs=2, head_s=0).map(die_unless_first, [0, 1, 2])


def test_chunks_cover_every_item_once_in_order():
    from teg.analysis.executors import MAX_CHUNK, chunks

    for start, stop, workers in [(0, 0, 2), (1, 2, 2), (1, 10, 2), (0, 600, 2), (3, 2001, 4), (0, 5, 64)]:
        spans = list(chunks(start, stop, workers))
        covered = [i for a, b in spans for i in range(a, b)]
        assert covered == list(range(start, stop))
        assert all(1 <= b - a <= MAX_CHUNK for a, b in spans)
    # enough tasks per worker to balance: 600 items on 2 workers -> at least 16 tasks
    assert len(list(chunks(0, 600, 2))) >= 16
